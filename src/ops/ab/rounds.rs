//! One A/B check over paired kernels, in two phases: first every kernel's interleaved
//! timing rounds, the kernels of one program timed together ([`super::timing`]); then,
//! kernel by kernel in selection order, the counters of both sides, the verdict (decided
//! by `compare::ab`), its reports and its message. Last, the check's exit code.

use anyhow::Result;

use super::pair::{AbOptions, AbPair};
use super::timing::Timed;
use crate::compare::ab::counters::{compare_counters, CounterChanges};
use crate::compare::ab::hotspot::hotspot_phrase;
use crate::compare::ab::rounds::Rounds;
use crate::compare::ab::stats::time_change;
use crate::compare::ab::verdict::{self, combine, reviewer_line, KernelAb};
use crate::compare::Snapshot;
use crate::error::ExitCode;
use crate::events::{self, About, CheckMode, CheckVerdict, Event};
use crate::model::ab::AbVerdict;
use crate::model::timing::TimingFacts;
use crate::report::ab::{self as report, AbPages};
use crate::shell::Shell;

/// Rounds per side unless `--rounds` says otherwise. One disturbed round contributes `n`
/// of the `n(n+1)/2` Walsh averages; the exact 95 % interval cuts `k - 1` of them off each
/// end (k = 9 at 10 rounds, 14 at 12). From 12 rounds on, `k - 1` exceeds `n`, so one odd
/// round cannot move either bound: at 10, a single round off by +40 % turned an A/A
/// interval into [-0.25, +17.9] % (ambiguous); at 12 the same round leaves [-0.18, +0.44] %.
pub const DEFAULT_ROUNDS: u32 = 12;

/// One kernel's outcome.
#[derive(Debug, Clone)]
pub struct AbKernel {
    /// The verdict and its evidence.
    pub ab: KernelAb,
    /// The kernel's package, for result files.
    pub package: Option<String>,
    /// The head's timing over the rounds: the median of its round medians.
    pub head_timing: Option<TimingFacts>,
    /// ncu's duration of the head's profiled launch, ns.
    pub ncu_duration_ns: Option<f64>,
}

/// The check's outcome.
#[derive(Debug, Clone)]
pub struct AbOutcome {
    /// Every kernel, in selection order.
    pub kernels: Vec<AbKernel>,
    /// 0, 10 (a regression) or 14 (ambiguous, unless `--ambiguous pass`).
    pub exit_code: ExitCode,
}

/// Times every pair (group by group, see [`super::timing`]), then compares and reports
/// each, in selection order.
pub fn run(pairs: &[AbPair<'_>], opts: &AbOptions, shell: &Shell) -> Result<AbOutcome> {
    let timed = super::timing::time_pairs(pairs, opts, shell)?;
    let mut kernels = Vec::new();
    for (p, timed) in pairs.iter().zip(timed) {
        kernels.push(judge(p, timed, opts, shell)?);
    }
    let abs: Vec<KernelAb> = kernels.iter().map(|k| k.ab.clone()).collect();
    let exit_code = verdict::exit_code(&abs, opts.ambiguous);
    let t = match (opts.tolerance_pct, pairs.first()) {
        (Some(t), _) => t,
        (None, Some(p)) => p.head_kernel.tolerance_pct,
        (None, None) => crate::plan::defaults::TOLERANCE_PCT,
    };
    crate::compare::gate::write_step_summary(&report::step_summary(&abs, &opts.base_label, opts.gate, t))?;
    Ok(AbOutcome { kernels, exit_code })
}

/// One pair's verdict from its rounds (`timed`) and counters, its reports and its message.
fn judge(p: &AbPair<'_>, timed: Timed, opts: &AbOptions, shell: &Shell) -> Result<AbKernel> {
    let k = p.head_kernel;
    let t = opts.tolerance_pct.unwrap_or(k.tolerance_pct);
    let (head_snap, base_snap) =
        (Snapshot::load(p.head_dir.path(), "head").ok(), Snapshot::load(p.base_dir.path(), "base").ok());
    let rounds = timed.runs.map(|runs| {
        let rounds = super::pair::to_rounds(k, &runs, timed.source);
        if let Err(e) = rounds.check() {
            let warning = format!("`{}`: the rounds are not what the statistics expect: {e}", k.name);
            shell.emit(&Event::warning(About::Rounds, warning));
        }
        rounds
    });
    let time = rounds.as_ref().map(|r| time_change(r, t));
    let counters = read_counters(p, t)?;
    let mut ab = combine(&k.name, time, counters, opts.gate);
    ab.hotspot = match (&base_snap, &head_snap) {
        (Some(b), Some(h)) => hotspot_phrase(b, h),
        _ => None,
    };
    let pages = AbPages {
        head_dir: p.head_dir,
        base_dir: p.base_dir,
        base_label: &opts.base_label,
        tolerance_pct: t,
    };
    report::write(&pages, &ab, rounds.as_ref(), base_snap.as_ref(), head_snap.as_ref())?;
    print_kernel(&ab, p, shell);
    Ok(AbKernel {
        head_timing: rounds.as_ref().and_then(head_timing),
        ncu_duration_ns: head_snap.as_ref().and_then(|s| s.kernel.get("duration_ns")),
        package: k.package.clone(),
        ab,
    })
}

/// Both sides' counters pages compared, when both have one.
fn read_counters(p: &AbPair<'_>, t: f64) -> Result<Option<CounterChanges>> {
    let head = crate::analyze::counters::read(p.head_dir)?;
    let base = crate::analyze::counters::read(p.base_dir)?;
    Ok(match (base, head) {
        (Some(b), Some(h)) => Some(compare_counters(&b, &h, t)),
        _ => None,
    })
}

/// The head's timing over the rounds, for result files: the median of its round medians,
/// with the rounds' spread (median absolute deviation, scaled to a standard deviation) as
/// its noise and the round count as its sample count.
fn head_timing(rounds: &Rounds) -> Option<TimingFacts> {
    let mut medians: Vec<f64> = rounds.rounds.iter().map(|r| r.head.median_ns).collect();
    let (median_ns, rel_noise) = crate::analyze::summary::median_and_spread(&mut medians)?;
    Some(TimingFacts {
        case: rounds.case.clone().unwrap_or_default(),
        mode: rounds.mode.clone(),
        median_ns,
        samples: medians.len(),
        rel_noise,
    })
}

/// One kernel's verdict as its message.
fn print_kernel(ab: &KernelAb, p: &AbPair<'_>, shell: &Shell) {
    shell.emit(&Event::AbComparison(Box::new(events::AbComparison {
        schema_version: events::MESSAGES_SCHEMA_VERSION,
        kernel: ab.kernel.clone(),
        verdict: ab.verdict,
        decided_by: Some(ab.decided_by.clone()),
        time: ab.time.clone(),
        counters: ab.counters.clone(),
        hotspot: ab.hotspot.clone(),
        line: reviewer_line(ab),
        profile: p.head_dir.path().to_path_buf(),
        head_profile: p.head_dir.path().to_path_buf(),
        base_profile: Some(p.base_dir.path().to_path_buf()),
        report: Some(p.head_dir.regression_report_path()),
    })));
}

/// The last words: the check's verdict over every kernel.
pub fn finish(outcome: &AbOutcome, opts: &AbOptions, shell: &Shell) {
    let of = |v: AbVerdict| {
        outcome.kernels.iter().filter(|k| k.ab.verdict == v).map(|k| k.ab.kernel.clone()).collect::<Vec<_>>()
    };
    let (regressions, ambiguous) = (of(AbVerdict::Regressed), of(AbVerdict::Ambiguous));
    let verdict = if !regressions.is_empty() {
        CheckVerdict::Regressed
    } else if !ambiguous.is_empty() {
        CheckVerdict::Ambiguous
    } else {
        CheckVerdict::Clean
    };
    shell.emit(&Event::CheckFinished(events::CheckFinished {
        schema_version: events::MESSAGES_SCHEMA_VERSION,
        mode: CheckMode::Ab,
        base: Some(opts.base_label.clone()),
        verdict,
        exit_code: outcome.exit_code.code(),
        regressions,
        ambiguous,
        improved: of(AbVerdict::Improved),
        unchanged: of(AbVerdict::Unchanged),
        kernels: outcome.kernels.len(),
    }));
}
