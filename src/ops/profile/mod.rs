//! The profiling driver that `cargo kprof`, `run --archive`, `check` and both sides of
//! `check --base` share: check the machine, build (unless an archive supplies the
//! executables), write each kernel's profile directory, then collect, analyse and report
//! each kernel, on one worker per GPU ([`workers`]), record how each run ended, and
//! rewrite the profiles index.

mod census;
pub mod tracer;
mod workers;

use std::path::PathBuf;

use anyhow::Result;

use crate::analyze::rules::BottleneckDecision;
use crate::build::BuildOutput;
use crate::collect;
use crate::collect::prepare::{prepare_in_place, prepare_kernel, prepare_picked, PreparedKernel};
use crate::error::ExitCode;
use crate::events::{
    About, BuildPurpose, BuildStarted, Event, IndexWritten, KernelVerdict, Prepared, StageCommand,
};
use crate::model::kinds::{Privilege, Runtime};
use crate::ncu::preflight::{self, CheckId};
use crate::ncu::privilege;
use crate::ncu::NcuLocation;
use crate::plan::{KernelPlan, Plan};
use crate::process;
use crate::profile::dir::ProfileDir;
use crate::profile::ptx_cache::PtxCache;
use crate::profile::root;
use crate::shell::Shell;

/// What [`profile_plan`] does beyond profiling.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extras {
    /// Also time harness targets without ncu (`details/timing.json`).
    pub timing: bool,
    /// Only time them: no ncu at all.
    pub timing_only: bool,
    /// Only write the profile directories, as a dry run does, and run nothing: an A/B
    /// check's `--timing-only`, whose timing is its rounds.
    pub dirs_only: bool,
}

impl Extras {
    /// Whether ncu runs at all.
    pub fn runs_ncu(self) -> bool {
        !self.timing_only && !self.dirs_only
    }
}

/// The ncu each kernel runs: the located one, or under `--sudo` the one
/// `profile/ncu_path` names.
struct NcuChoice {
    direct: PathBuf,
    sudo: Option<PathBuf>,
}

impl NcuChoice {
    fn for_kernel(&self, k: &KernelPlan) -> PathBuf {
        match (&self.sudo, k.privilege) {
            (Some(path), Privilege::Sudo) => path.clone(),
            _ => self.direct.clone(),
        }
    }
}

/// Profiles every kernel of `plan` and returns each kernel's profile directory; a dry run
/// (or `dirs_only`) writes the directories and runs nothing.
pub fn profile_plan<'a>(
    plan: &'a Plan,
    prebuilt: Option<BuildOutput>,
    extras: Extras,
    shell: &Shell,
) -> Result<Vec<(&'a KernelPlan, ProfileDir)>> {
    // Signals stop the running child and are answered here, between steps, so that every
    // profile directory records how its run ended.
    let _deferral = process::defer_signals();
    let ncu = choose_ncu(plan, extras)?;
    if extras.runs_ncu() && plan.kernels.iter().any(|k| k.stages.is_auto()) {
        // What `auto` collects and what it costs, said once, and only once the machine can
        // run it: a run that cannot start leads with what is missing.
        let planned = plan.batch && crate::collect::batch::planner_on();
        shell.emit(&Event::note(About::AutoStages, crate::ncu::stages::auto_choice(planned)));
    }
    let built = match (&plan.build, prebuilt) {
        (_, Some(b)) => Some(b),
        (Some(req), None) => {
            shell.emit(&Event::BuildStarted(BuildStarted {
                side: None,
                build: req.describe(),
                targets: req.targets.len(),
                purpose: BuildPurpose::LineInfo,
            }));
            Some(req.run(shell)?)
        }
        (None, None) => None,
    };
    // Made once the profile directories are (they may make the profiles root), removed
    // when this function returns.
    let ptx_cache = own_ptx_cache(plan, extras);
    let ptx_dir = ptx_cache.as_ref().map(|c| c.dirs()[0].as_path());
    let mut prepared = Vec::new();
    for kernel in &plan.kernels {
        prepared.push(prepare_kernel(plan, kernel, built.as_ref(), &ncu.for_kernel(kernel), ptx_dir)?);
    }
    if extras.runs_ncu() {
        for p in &prepared {
            shell.emit(&prepared_event(plan, p));
        }
    }
    if plan.dry_run && extras.runs_ncu() {
        for b in workers::planned_batches(plan, &prepared, &|k| ncu.for_kernel(k), extras) {
            shell.emit(&Event::DryRunBatch(b));
        }
    }
    if plan.dry_run || extras.dirs_only {
        return Ok(prepared.into_iter().map(|p| (p.kernel, p.dir)).collect());
    }
    if let Some(cache) = &ptx_cache {
        cache.create()?;
    }
    // The tracer (found, or built on first use) before any program runs.
    let census = tracer::census_way(plan, extras, shell);
    let results = workers::run_all(plan, &prepared, &|k| ncu.for_kernel(k), &census, extras, shell);
    record_endings(&prepared, results, shell)?;
    let ended = profile_picked(plan, &prepared, &ncu, extras, shell);
    if !extras.timing_only {
        write_index(plan, &prepared, shell);
    }
    ended?;
    Ok(prepared.into_iter().map(|p| (p.kernel, p.dir)).collect())
}

/// The folder of NVRTC output this run's harness kernels share when their caller gave
/// them none (an A/B check keeps one per side across its rounds): each stage and the
/// timing start the bench again, and after the first start its kernels' PTX is loaded
/// rather than compiled. `None` for a dry run, and when no such kernel runs.
fn own_ptx_cache(plan: &Plan, extras: Extras) -> Option<PtxCache> {
    let wanting = plan.kernels.iter().any(|k| k.runtime == Runtime::Harness && k.ptx_cache.is_none());
    (wanting && !plan.dry_run && !extras.dirs_only)
        .then(|| PtxCache::for_roots([plan.profile_root.as_path()]))
}

/// Profiles the kernels after the first that each program's census picked, each in a new
/// profile directory beside its census (which the caller's index then lists).
fn profile_picked(
    plan: &Plan,
    prepared: &[PreparedKernel<'_>],
    ncu: &NcuChoice,
    extras: Extras,
    shell: &Shell,
) -> Result<()> {
    let picked = census::picked_to_profile(prepared);
    if picked.is_empty() || extras.timing_only {
        return Ok(());
    }
    if let (Some(d), 1) = (&plan.output_dir, plan.kernels.len()) {
        // `--output-dir` named the one profile directory, and nothing is written beside it.
        shell.emit(&Event::warning(About::Census, census::not_beside(d, &picked)));
        return Ok(());
    }
    let mut more = Vec::new();
    for p in &picked {
        let ncu_path = ncu.for_kernel(&p.kernel);
        more.push(match p.in_place {
            true => prepare_in_place(&p.kernel, p.beside.clone(), p.target.clone(), &ncu_path)?,
            false => prepare_picked(plan, &p.kernel, &p.beside, p.target.clone(), &ncu_path)?,
        });
    }
    for p in &more {
        shell.emit(&prepared_event(plan, p));
    }
    // The picks have their functions as filters: no census.
    let none = collect::traced::CensusWay::Ncu(None);
    let results = workers::run_all(plan, &more, &|k| ncu.for_kernel(k), &none, extras, shell);
    record_endings(&more, results, shell)
}

/// Checks what the plan needs of this machine, and writes nothing: a run that cannot
/// profile stops here, before anything is built, and leaves no `profile/` behind. ncu, the
/// driver and a GPU when ncu runs; the driver and a GPU alone when only the harness times
/// (`--timing-only`, an A/B check's rounds). A dry run checks nothing. Returns the ncu
/// found, if any.
pub fn preflight(plan: &Plan, extras: Extras) -> Result<Option<NcuLocation>> {
    preflight_kernels(&plan.kernels, &plan.profile_root, plan.dry_run, extras)
}

/// [`preflight`] for `kernels` whose profiles will go under `profile_root`, before a plan
/// exists (an archive's kernels, checked before it is unpacked).
pub fn preflight_kernels(
    kernels: &[KernelPlan],
    profile_root: &std::path::Path,
    dry_run: bool,
    extras: Extras,
) -> Result<Option<NcuLocation>> {
    let inputs = preflight::ProbeInputs::from_machine(&profile_root.join(root::NCU_PATH_FILE));
    let (mut checks, found) = preflight::check_profiling_prerequisites(&inputs);
    let sudo = |k: &KernelPlan| k.privilege == Privilege::Sudo;
    if kernels.iter().all(sudo) {
        // `--sudo` runs only the ncu named in profile/ncu_path: NCU and PATH play no part.
        checks.retain(|c| c.what != CheckId::Ncu);
    }
    if !extras.runs_ncu() {
        // No ncu, but the harness still times on the GPU.
        checks.retain(|c| matches!(c.what, CheckId::Driver | CheckId::Gpu));
    }
    if !dry_run {
        preflight::require_checks(&checks)?;
    }
    Ok(found)
}

/// Checks the machine ([`preflight`]) and picks the ncu each kernel runs; only then is
/// `profile/ncu_path` written, when absent, naming the ncu found. A dry run shows the ncu
/// a real run would use, or plain `ncu`.
fn choose_ncu(plan: &Plan, extras: Extras) -> Result<NcuChoice> {
    let found = preflight(plan, extras)?;
    let sudo = |k: &KernelPlan| k.privilege == Privilege::Sudo;
    // The file names an ncu that exists: the one found, or under `--sudo` the default
    // (checked just below). A run that found none writes none.
    let ncu_path_file = match &found {
        Some(l) => root::ensure_ncu_path(&plan.profile_root, Some(&l.path))?,
        None if plan.kernels.iter().any(sudo) => root::ensure_ncu_path(&plan.profile_root, None)?,
        None => plan.profile_root.join(root::NCU_PATH_FILE),
    };
    let inputs_path = std::env::var_os("PATH");
    let direct = found.map(|l| l.path).unwrap_or_else(|| PathBuf::from("ncu"));
    let sudo = if !plan.kernels.iter().any(sudo) {
        None
    } else if plan.dry_run || extras.timing_only {
        Some(root::read_ncu_path(&plan.profile_root).unwrap_or_else(|_| PathBuf::from("ncu")))
    } else {
        Some(privilege::require_sudo(&ncu_path_file, inputs_path.as_deref())?)
    };
    Ok(NcuChoice { direct, sudo })
}

/// A prepared profile as a message: a dry run's result, or a real run's progress.
fn prepared_event(plan: &Plan, p: &PreparedKernel<'_>) -> Event {
    let prepared = Prepared {
        kernel: p.kernel.name.clone(),
        profile_dir: p.dir.path().to_path_buf(),
        program: p.target.program.clone(),
        stages: p
            .stage_commands
            .iter()
            .map(|(c, cmd)| StageCommand { stage: c.name().to_string(), command: cmd.to_string() })
            .collect(),
        follow_up: p.kernel.stages.is_auto(),
        // Only a dry run prints it.
        script: if plan.dry_run { p.script.clone() } else { String::new() },
    };
    if plan.dry_run {
        Event::DryRun(prepared)
    } else {
        Event::ProfilePrepared(prepared)
    }
}

/// Records how each kernel's run ended; on a failure, the kernels that never ran are
/// recorded as not run and the first failure in selection order is the run's.
fn record_endings(
    prepared: &[PreparedKernel<'_>],
    results: Vec<(usize, Result<()>)>,
    shell: &Shell,
) -> Result<()> {
    // Recording the ending must not hide how the run ended.
    let unrecorded = |e: anyhow::Error| {
        shell.emit(&Event::warning(About::RunManifest, format!("could not record how the run ended: {e:#}")))
    };
    let mut ended_at: Vec<bool> = vec![false; prepared.len()];
    let mut failed: Option<(usize, anyhow::Error)> = None;
    for (i, ended) in results {
        ended_at[i] = true;
        let p = &prepared[i];
        if let Err(e) = collect::record_ending(&p.dir, p.kernel, ended.as_ref().map(|_| ())) {
            match &ended {
                Ok(()) => return Err(e),
                Err(_) => unrecorded(e),
            }
        }
        if let Err(err) = ended {
            if failed.as_ref().is_none_or(|(at, _)| i < *at) {
                failed = Some((i, err));
            }
        }
    }
    let Some((_, err)) = failed else { return Ok(()) };
    let code = crate::error::exit_code_of(&err);
    for later in prepared.iter().enumerate().filter(|(i, _)| !ended_at[*i]).map(|(_, p)| p) {
        if let Err(e) = collect::record_not_run(&later.dir, later.kernel, code) {
            unrecorded(e);
        }
    }
    Err(err)
}

/// Rewrites the index of the profiles under the project's profiles root. It lives only
/// there: never beside an explicit --output-dir, where a file of that name is the user's.
fn write_index(plan: &Plan, prepared: &[PreparedKernel<'_>], shell: &Shell) {
    let root = plan.profile_root.as_path();
    if !prepared.iter().any(|p| p.dir.path().parent() == Some(root)) {
        return;
    }
    // The index is derived from the profiles: failing to rewrite it loses nothing, and
    // must not turn a finished profile into a failed run.
    match crate::report::index::write(root) {
        Ok(()) => shell.emit(&Event::IndexWritten(IndexWritten { index: root::index_md_path(root) })),
        Err(e) => shell.emit(&Event::warning(
            About::Index,
            format!(
                "the profiles index was not updated ({e:#}); the profile itself is complete, \
                 and the next run rewrites the index"
            ),
        )),
    }
}

/// The `analysed` message of a profile: each kernel's verdict and the report.
pub fn analysed(dir: &ProfileDir, decision: &BottleneckDecision) -> Event {
    let kernels = decision
        .kernels
        .iter()
        .map(|v| KernelVerdict {
            kernel: v.kernel.clone(),
            classification: v.classification,
            confidence: v.confidence,
            rule: v.rule.clone(),
            limiter: v.limiter.as_ref().map(|l| l.id.clone()),
            advice: v.limiter.as_ref().map(|l| l.advice_id.as_str().to_string()),
            predicted_saving_pct: v.limiter.as_ref().and_then(|l| l.predicted_saving_pct),
            not_priced: v.limiter.as_ref().and_then(|l| l.not_priced.clone()),
            advice_headline: v
                .limiter
                .as_ref()
                .map(|l| l.advice.split(": ").next().unwrap_or(&l.advice).to_string()),
            library: v.library.as_ref().map(|l| l.library.clone()),
            library_headline: v
                .library
                .as_ref()
                .map(|l| l.advice.split(". ").next().unwrap_or(&l.advice).to_string()),
            instruction_causes: v
                .instruction_causes
                .iter()
                .map(|c| crate::events::InstructionCauseBrief {
                    id: c.id.clone(),
                    lines: c.lines.iter().map(|l| l.line).collect(),
                    predicted_saving_pct: c.predicted_saving_pct,
                    headline: c.headline.clone(),
                })
                .collect(),
        })
        .collect();
    Event::Analysed { profile_dir: dir.path().to_path_buf(), report: dir.final_report_path(), kernels }
}

/// [`profile_plan`] as the whole command: its exit code.
pub fn profile(plan: &Plan, prebuilt: Option<BuildOutput>, shell: &Shell) -> Result<ExitCode> {
    profile_plan(plan, prebuilt, Extras::default(), shell).map(|_| ExitCode::Success)
}
