//! The A/B check driver: `cargo kprof check --base REV` and `check --archive` of an A/B
//! archive, this tree against a git revision, both built here and run interleaved on the
//! same GPU.
//!
//! The base revision is checked out into kprof's own worktree beside the line-info
//! builds (`<target-dir>/kprof-base`) and built into its own target directory there, so
//! the two sides never overwrite each other's executables and a second check of the
//! same base rebuilds nothing ([`sides`]; every side, of a check, an archive or a bisect,
//! is made by [`side`]). Both sides are profiled with the same stages (plus the
//! `counters` stage unless `--gate time`) by `ops::profile`, then their timings run in
//! interleaved rounds, the harness kernels of one program together ([`timing`]), and
//! `compare::ab` decides each kernel ([`rounds`]); the result files are written here.
//! `cargo kprof archive --base` packs both sides for a GPU machine without cargo
//! ([`pack`]).
//!
//! This driver uses `ops::archive` (unpacking), `ops::check` (the result files) and
//! `ops::profile`; none of them uses it.

pub mod base;
pub mod pack;
pub mod pair;
pub mod rounds;
pub mod side;
pub mod sides;
pub mod timing;

use std::time::Instant;

use anyhow::Result;

use super::check::ResultFiles;
use super::profile::{profile_plan, Extras};
use crate::compare::exports::{self, Measured};
use crate::error::{ExitCode, Failure};
use crate::events::{AbMeasured, AbStarted, About, Event};
use crate::model::ab::{AmbiguousPolicy, GateSignal};
use crate::model::kinds::Runtime;
use crate::model::stage::Stage;
use crate::profile::ptx_cache::PtxCache;
use crate::shell::Shell;
use pair::{AbOptions, AbPair};
use side::Side;
use sides::SidesFrom;

/// An A/B check, resolved from the command line.
pub struct AbCheck<'a> {
    /// `--timing-only`: no ncu, the rounds only.
    pub timing_only: bool,
    /// `--gate`.
    pub gate: GateSignal,
    /// `--rounds`.
    pub rounds: Option<u32>,
    /// `--tolerance-pct`.
    pub tolerance_pct: Option<f64>,
    /// `--ambiguous`.
    pub ambiguous: AmbiguousPolicy,
    /// `--bmf` and `--github-benchmark`.
    pub results: &'a ResultFiles,
}

/// Runs the check and returns its exit code.
pub fn check(from: SidesFrom<'_>, o: &AbCheck<'_>, shell: &Shell) -> Result<ExitCode> {
    let from_tree = matches!(from, SidesFrom::Tree { .. });
    let (head, base) = sides::sides(from, o.timing_only, shell)?;
    let label = match &base.revision {
        Some(r) => format!("{} ({})", r.short(), r.asked),
        None => "the base".to_string(),
    };
    if let Some(revision) = &base.revision {
        shell.emit(&Event::AbStarted(AbStarted { base: revision.clone() }));
    }
    let Some((outcome, opts)) = compare_sides(head, base, o, label, from_tree, shell)? else {
        return Ok(ExitCode::Success);
    };
    write_results(o.results, &outcome, shell)?;
    rounds::finish(&outcome, &opts, shell);
    Ok(outcome.exit_code)
}

/// `--bmf` and `--github-benchmark` of an A/B check: the head's timing over the rounds
/// (else its profiled launch), with the A/B verdict.
fn write_results(files: &ResultFiles, outcome: &rounds::AbOutcome, shell: &Shell) -> Result<()> {
    let measured: Vec<Measured> = outcome
        .kernels
        .iter()
        .map(|k| Measured {
            name: exports::benchmark_name(k.package.as_deref(), &k.ab.kernel),
            timing: k.head_timing.clone(),
            ncu_duration_ns: k.ncu_duration_ns,
            comparison: None,
            ab_line: Some(crate::compare::ab::verdict::reviewer_line(&k.ab)),
        })
        .collect();
    files.write(&measured, shell)
}

/// One A/B check of two sides planned and built: the kernels both have paired, the
/// evidence stages added, both profiled, the rounds run and each kernel judged. `None` on
/// a dry run. `create_root`: the head's profiles root is made here (a check from a tree).
pub fn compare_sides(
    mut head: Side,
    mut other: Side,
    o: &AbCheck<'_>,
    label: String,
    create_root: bool,
    shell: &Shell,
) -> Result<Option<(rounds::AbOutcome, AbOptions)>> {
    // The evidence of an A/B check: the counters (unless only time gates) and each
    // side's hot lines, collected the same way on both sides.
    let extra: Vec<Stage> = match (o.timing_only, o.gate.uses_counters()) {
        (true, _) => Vec::new(),
        (false, true) => vec![Stage::Counters, Stage::Source],
        (false, false) => vec![Stage::Source],
    };
    // Each side's folder of NVRTC output: a side's bench starts for every ncu stage and
    // every timing round, and the folders live until the check ends.
    let ptx_cache =
        PtxCache::for_roots([head.plan.profile_root.as_path(), other.plan.profile_root.as_path()]);
    for (side, cache) in [&mut head, &mut other].into_iter().zip(ptx_cache.dirs()) {
        for k in &mut side.plan.kernels {
            k.extra_stages = extra.clone();
            if k.runtime == Runtime::Harness {
                k.ptx_cache = Some(cache.clone());
            }
        }
    }
    let pairs = sides::pair_kernels(&mut head.plan, &mut other.plan, shell);
    let mut notes: Vec<&String> = Vec::new();
    for note in head.plan.notes.iter().chain(&other.plan.notes) {
        // Both sides' plans say the same of their stages: once is enough.
        if !notes.contains(&note) {
            notes.push(note);
            shell.emit(&Event::note(About::Plan, note.clone()));
        }
    }
    if head.plan.kernels.is_empty() {
        return Err(Failure::new(
            ExitCode::Config,
            "no selected kernel exists on both sides: nothing to compare",
        )
        .help("select kernels the base revision configures too")
        .into());
    }
    if create_root {
        super::opening::create_profiles_root(&head.plan.profile_root, shell)?;
        sides::share_ncu_path(&head.plan.profile_root, &other.plan.profile_root)?;
    }
    if !head.plan.dry_run {
        ptx_cache.create()?;
    }
    run_sides(o, &head, &other, &pairs, label, shell)
}

/// Profiles both sides, runs the rounds, writes the result files and says the verdict.
fn run_sides(
    o: &AbCheck<'_>,
    head: &Side,
    other: &Side,
    pairs: &[String],
    base_label: String,
    shell: &Shell,
) -> Result<Option<(rounds::AbOutcome, AbOptions)>> {
    let gpu_began = Instant::now();
    // `--timing-only`: the profile directories only; the rounds are the timing.
    let extras = Extras { timing: false, timing_only: false, dirs_only: o.timing_only };
    let head_dirs = profile_plan(&head.plan, head.built.clone(), extras, shell)?;
    let base_dirs = profile_plan(&other.plan, other.built.clone(), extras, shell)?;
    if head.plan.dry_run {
        return Ok(None);
    }
    let mut ab_pairs = Vec::new();
    for name in pairs {
        let h = head_dirs.iter().find(|(k, _)| &k.name == name);
        let b = base_dirs.iter().find(|(k, _)| &k.name == name);
        if let (Some((hk, hd)), Some((bk, bd))) = (h, b) {
            ab_pairs.push(AbPair {
                head_kernel: hk,
                base_kernel: bk,
                head_dir: hd,
                base_dir: bd,
                head_built: head.built.as_ref(),
                base_built: other.built.as_ref(),
            });
        }
    }
    let opts = AbOptions {
        rounds: o.rounds.unwrap_or(rounds::DEFAULT_ROUNDS),
        tolerance_pct: o.tolerance_pct,
        gate: o.gate,
        ambiguous: o.ambiguous,
        timeout: head.plan.timeout,
        batch: head.plan.batch,
        base_label,
    };
    let outcome = rounds::run(&ab_pairs, &opts, shell)?;
    rewrite_index(head, &head_dirs, shell);
    let wall_ms = gpu_began.elapsed().as_millis() as u64;
    shell.emit(&Event::AbMeasured(AbMeasured { kernels: ab_pairs.len(), wall_ms }));
    Ok(Some((outcome, opts)))
}

/// Rewrites the head's profiles index now that its profiles carry their A/B results, so
/// that `index.html` shows each change and `ab.html` the check; only where the profiles
/// lie in the profiles root, as after profiling.
fn rewrite_index(
    head: &Side,
    dirs: &[(&crate::plan::KernelPlan, crate::profile::ProfileDir)],
    shell: &Shell,
) {
    let root = head.plan.profile_root.as_path();
    if !dirs.iter().any(|(_, d)| d.path().parent() == Some(root)) {
        return;
    }
    if let Err(e) = crate::report::index::write(root) {
        let warning = format!("the profiles index was not updated with the A/B results ({e:#})");
        shell.emit(&Event::warning(About::Index, warning));
    }
}
