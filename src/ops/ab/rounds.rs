//! One A/B check over paired kernels: the interleaved timing rounds, the counters of both
//! sides, the verdict of each kernel (decided by `compare::ab`), its reports, and the
//! check's exit code.

use std::time::Duration;

use anyhow::Result;

use crate::build::BuildOutput;
use crate::collect::prepare::target_command;
use crate::collect::rounds::{run_ncu_rounds, run_rounds, NcuRoundSide, RoundSide, SideRun};
use crate::compare::ab::counters::{compare_counters, CounterChanges};
use crate::compare::ab::hotspot::hotspot_phrase;
use crate::compare::ab::rounds::{Rounds, SideSample};
use crate::compare::ab::stats::time_change;
use crate::compare::ab::verdict::{self, combine, reviewer_line, KernelAb};
use crate::compare::Snapshot;
use crate::error::ExitCode;
use crate::events::{self, Event};
use crate::model::ab::{AbVerdict, AmbiguousPolicy, GateSignal, Side};
use crate::model::kinds::Runtime;
use crate::model::timing::TimingFacts;
use crate::plan::KernelPlan;
use crate::profile::dir::ProfileDir;
use crate::report::ab::{self as report, AbPages};
use crate::shell::Shell;

/// Rounds per side unless `--rounds` says otherwise. One disturbed round contributes `n`
/// of the `n(n+1)/2` Walsh averages; the exact 95 % interval cuts `k - 1` of them off each
/// end (k = 9 at 10 rounds, 14 at 12). From 12 rounds on, `k - 1` exceeds `n`, so one odd
/// round cannot move either bound: at 10, a single round off by +40 % turned an A/A
/// interval into [-0.25, +17.9] % (ambiguous); at 12 the same round leaves [-0.18, +0.44] %.
pub const DEFAULT_ROUNDS: u32 = 12;

/// One kernel on both sides, profiled.
pub struct AbPair<'a> {
    /// The head's plan of it.
    pub head_kernel: &'a KernelPlan,
    /// The base's plan of it.
    pub base_kernel: &'a KernelPlan,
    /// The head's profile.
    pub head_dir: &'a ProfileDir,
    /// The base's profile.
    pub base_dir: &'a ProfileDir,
    /// The head's executables.
    pub head_built: Option<&'a BuildOutput>,
    /// The base's executables.
    pub base_built: Option<&'a BuildOutput>,
}

/// How to check.
#[derive(Debug, Clone)]
pub struct AbOptions {
    /// Timing rounds per side.
    pub rounds: u32,
    /// `--tolerance-pct`; else each kernel's own.
    pub tolerance_pct: Option<f64>,
    /// Which signals may fail the gate.
    pub gate: GateSignal,
    /// What an ambiguous kernel does to the exit code.
    pub ambiguous: AmbiguousPolicy,
    /// `--timeout` of each timing run.
    pub timeout: Option<Duration>,
    /// How to name the base (`3f2a1c9d0e1b (HEAD~1)`).
    pub base_label: String,
}

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

/// Times, compares and reports every pair.
pub fn run(pairs: &[AbPair<'_>], opts: &AbOptions, shell: &Shell) -> Result<AbOutcome> {
    let mut kernels = Vec::new();
    for p in pairs {
        let k = p.head_kernel;
        let t = opts.tolerance_pct.unwrap_or(k.tolerance_pct);
        let (head_snap, base_snap) =
            (Snapshot::load(p.head_dir.path(), "head").ok(), Snapshot::load(p.base_dir.path(), "base").ok());
        let harness = k.runtime == Runtime::Harness && p.base_kernel.runtime == Runtime::Harness;
        shell.status(format!("Timing `{}`: {} interleaved rounds of base and head", k.name, opts.rounds));
        let runs = if harness {
            let head = target_command(k, p.head_built)?;
            let base = target_command(p.base_kernel, p.base_built)?;
            Some(run_rounds(
                [
                    RoundSide { side: Side::Base, target: &base, dir: p.base_dir },
                    RoundSide { side: Side::Head, target: &head, dir: p.head_dir },
                ],
                k.case.as_deref(),
                opts.rounds,
                opts.timeout,
                shell,
            )?)
        } else {
            ncu_rounds(p, opts, base_snap.as_ref(), head_snap.as_ref(), shell)?
        };
        let rounds = runs.map(|runs| {
            let rounds = to_rounds(k, &runs, if harness { "harness" } else { "ncu" });
            if let Err(e) = rounds.check() {
                shell.warn(format!("`{}`: the rounds are not what the statistics expect: {e}", k.name));
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
        kernels.push(AbKernel {
            head_timing: rounds.as_ref().and_then(head_timing),
            ncu_duration_ns: head_snap.as_ref().and_then(|s| s.kernel.get("duration_ns")),
            package: k.package.clone(),
            ab,
        });
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

/// The rounds of a program that is not a harness bench: ncu's durations of the kernel's
/// launches in its window, each side's program under ncu in turn. Weaker evidence than
/// harness rounds (a few launches per round, each replayed by ncu with caches flushed, no
/// clock readings), and the report says so. `None` when a side was never profiled (no
/// kernel filter, or no profile to read the window and function from).
fn ncu_rounds(
    p: &AbPair<'_>,
    opts: &AbOptions,
    base: Option<&Snapshot>,
    head: Option<&Snapshot>,
    shell: &Shell,
) -> Result<Option<Vec<SideRun>>> {
    let k = p.head_kernel;
    let (Some(head_filter), Some(base_filter), Some(hs), Some(bs)) =
        (k.filter.as_ref(), p.base_kernel.filter.as_ref(), head, base)
    else {
        shell.note(format!(
            "`{}`: no kernel filter or no profile on a side: no timing rounds; the verdict rests on the counters",
            k.name
        ));
        return Ok(None);
    };
    shell.note(format!(
        "`{}` runs as `{}`, not on the harness: its rounds are ncu's durations of the launches in its window, \
         weaker evidence than harness rounds",
        k.name,
        k.runtime.name()
    ));
    let window = |dir: &ProfileDir, plan: &KernelPlan| {
        crate::profile::run_manifest::RunManifest::read(dir)
            .ok()
            .and_then(|m| m.window)
            .map_or(plan.window, |w| w.window)
    };
    let head_target = target_command(k, p.head_built)?;
    let base_target = target_command(p.base_kernel, p.base_built)?;
    let head_ncu = ncu_of(k, p.head_dir)?;
    let base_ncu = ncu_of(p.base_kernel, p.base_dir)?;
    let sides = [
        NcuRoundSide {
            side: Side::Base,
            ncu: base_ncu.as_path(),
            target: &base_target,
            filter: base_filter,
            window: window(p.base_dir, p.base_kernel),
            clock_control: p.base_kernel.clock_control,
            privilege: p.base_kernel.privilege,
            dir: p.base_dir,
            function: Some(bs.kernel.kernel.as_str()).filter(|f| !f.is_empty()),
        },
        NcuRoundSide {
            side: Side::Head,
            ncu: head_ncu.as_path(),
            target: &head_target,
            filter: head_filter,
            window: window(p.head_dir, k),
            clock_control: k.clock_control,
            privilege: k.privilege,
            dir: p.head_dir,
            function: Some(hs.kernel.kernel.as_str()).filter(|f| !f.is_empty()),
        },
    ];
    Ok(Some(run_ncu_rounds(sides, opts.rounds, opts.timeout, shell)?))
}

/// The ncu a side's profile ran: `profile/ncu_path` under `--sudo`, else as located.
fn ncu_of(k: &KernelPlan, dir: &ProfileDir) -> Result<std::path::PathBuf> {
    let root = dir.path().parent().unwrap_or(dir.path());
    if k.privilege == crate::model::kinds::Privilege::Sudo {
        return Ok(crate::profile::dir::read_ncu_path(root)?);
    }
    let file = crate::profile::dir::ensure_ncu_path(root)?;
    crate::ncu::locate_ncu(std::env::var_os("NCU").as_deref(), std::env::var_os("PATH").as_deref(), &file)
        .map(|l| l.path)
        .map_err(|e| anyhow::anyhow!("{e}"))
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

/// The rounds document from the runs as they happened.
fn to_rounds(k: &KernelPlan, runs: &[SideRun], source: &str) -> Rounds {
    let case = runs.first().map(|r| r.facts.case.clone()).or_else(|| k.case.clone());
    let mode = runs.first().map(|r| r.facts.mode.clone()).unwrap_or_else(|| "hot".into());
    let mut rounds = Rounds::new(&k.name, case.as_deref(), &mode, source);
    let sample = |r: &SideRun| SideSample {
        median_ns: r.facts.median_ns,
        samples: r.facts.samples,
        rel_noise: r.facts.rel_noise,
        sm_clock_mhz: r.sm_clock_mhz,
    };
    let last = runs.iter().map(|r| r.round).max();
    for index in 0..last.map_or(0, |l| l + 1) {
        let of = |side: Side| runs.iter().find(|r| r.round == index && r.side == side);
        if let (Some(b), Some(h)) = (of(Side::Base), of(Side::Head)) {
            rounds.push(sample(b), sample(h));
        }
    }
    rounds
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
        verdict: ab.verdict.name(),
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
        "regressed"
    } else if !ambiguous.is_empty() {
        "ambiguous"
    } else {
        "clean"
    };
    shell.emit(&Event::CheckFinished(events::CheckFinished {
        schema_version: events::MESSAGES_SCHEMA_VERSION,
        mode: "ab",
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
