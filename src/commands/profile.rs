//! `cargo kprof` without a subcommand: profile the selected kernels; and the pipeline
//! driver that `run --archive` and `check` share: preflight, build, prepare each
//! kernel's directory, collect, analyse, report, index.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::json;

use super::{create_profiles_root, load_workspace, print_verdicts};
use crate::analyze::rules::Rules;
use crate::analyze::AnalyzeOptions;
use crate::build::{self, BuildOutput};
use crate::cli::ProfileArgs;
use crate::collect::prepare::{prepare_kernel, PreparedKernel};
use crate::collect::{self, batch, environment, timing, KernelRun};
use crate::error::ExitCode;
use crate::model::kinds::Privilege;
use crate::ncu::preflight::{self, CheckId};
use crate::ncu::privilege;
use crate::plan::{self, KernelPlan, Plan};
use crate::process;
use crate::profile::dir::{self, ProfileDir};
use crate::report;
use crate::shell::Shell;

/// The default action: profile the selected kernels.
pub(crate) fn profile(args: &ProfileArgs, shell: &Shell) -> Result<ExitCode> {
    let (metadata, config) = load_workspace(args.packages.manifest_path.as_deref(), shell)?;
    let request = super::with_engine_shard(args.request()?)?;
    let plan = plan::resolve(&request, &metadata, &config, build::cargo_binary())?;
    for note in &plan.notes {
        shell.note(note);
    }
    create_profiles_root(&plan.profile_root, shell)?;
    if plan.kernels.is_empty() {
        return super::empty_shard(&plan, shell);
    }
    execute(&plan, None, shell)
}

/// What [`execute_profiles`] does beyond profiling.
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

/// Checks the machine, builds (unless `prebuilt` supplies the executables, as an archive
/// does), writes each kernel's profile directory, then collects, analyses and reports.
pub(crate) fn execute(plan: &Plan, prebuilt: Option<BuildOutput>, shell: &Shell) -> Result<ExitCode> {
    execute_profiles(plan, prebuilt, Extras::default(), shell).map(|_| ExitCode::Success)
}

/// [`execute`], returning each kernel's profile directory.
pub(crate) fn execute_profiles<'a>(
    plan: &'a Plan,
    prebuilt: Option<BuildOutput>,
    extras: Extras,
    shell: &Shell,
) -> Result<Vec<(&'a KernelPlan, ProfileDir)>> {
    // Signals stop the running child and are answered here, between steps, so that every
    // profile directory records how its run ended.
    let _deferral = process::defer_signals();
    let ncu_path_file = dir::ensure_ncu_path(&plan.profile_root)?;
    let inputs = preflight::ProbeInputs::from_machine(&ncu_path_file);
    let (mut checks, found) = preflight::check_profiling_prerequisites(&inputs);
    let sudo = |k: &KernelPlan| k.privilege == Privilege::Sudo;
    if plan.kernels.iter().all(sudo) {
        // `--sudo` runs only the ncu named in profile/ncu_path: NCU and PATH play no part.
        checks.retain(|c| c.what != CheckId::Ncu);
    }
    if extras.timing_only || extras.dirs_only {
        // No ncu: the harness itself says when there is no GPU or driver.
        checks.clear();
    }
    if !plan.dry_run {
        preflight::require_checks(&checks)?;
    }
    // A dry run shows the ncu a real run would use, or plain `ncu`.
    let direct_ncu = found.map(|l| l.path).unwrap_or_else(|| PathBuf::from("ncu"));
    let sudo_ncu = if !plan.kernels.iter().any(sudo) {
        None
    } else if plan.dry_run || extras.timing_only {
        Some(dir::read_ncu_path(&plan.profile_root).unwrap_or_else(|_| PathBuf::from("ncu")))
    } else {
        Some(privilege::require_sudo(&ncu_path_file, inputs.path_env.as_deref())?)
    };
    let ncu_for = |k: &KernelPlan| match (&sudo_ncu, k.privilege) {
        (Some(path), Privilege::Sudo) => path.clone(),
        _ => direct_ncu.clone(),
    };

    let built = match (&plan.build, prebuilt) {
        (_, Some(b)) => Some(b),
        (Some(req), None) => {
            shell.status(format!("Building with line info: {}", req.command()));
            Some(req.run(shell)?)
        }
        (None, None) => None,
    };

    let mut prepared = Vec::new();
    for kernel in &plan.kernels {
        prepared.push(prepare_kernel(plan, kernel, built.as_ref(), &ncu_for(kernel))?);
    }
    if !extras.timing_only && !extras.dirs_only {
        report_prepared(plan, &prepared, shell);
    }
    if plan.dry_run || extras.dirs_only {
        return Ok(prepared.into_iter().map(|p| (p.kernel, p.dir)).collect());
    }
    let rules = Rules::builtin();
    let run_unit = |unit: &[usize]| -> Vec<(usize, Result<()>)> {
        if unit.len() == 1 {
            let p = &prepared[unit[0]];
            vec![(unit[0], run_kernel(plan, p, &ncu_for(p.kernel), &rules, extras, Prelude::Run, shell))]
        } else {
            run_batch(plan, &prepared, unit, &ncu_for, &rules, extras, shell)
        }
    };
    let units = units(plan, &prepared, extras);
    // One worker per GPU (`--gpus`): each runs the units placed on its GPU, in order, and
    // stops at its first failure; without, one worker runs them all.
    let mut lanes: Vec<(String, Vec<Vec<usize>>)> = Vec::new();
    for unit in units {
        let gpu = prepared[unit[0]].kernel.env.get(plan::VISIBLE_DEVICES).cloned().unwrap_or_default();
        match lanes.iter_mut().find(|(g, _)| *g == gpu) {
            Some((_, us)) => us.push(unit),
            None => lanes.push((gpu, vec![unit])),
        }
    }
    let work = |lane: &[Vec<usize>]| -> Vec<(usize, Result<()>)> {
        let mut out = Vec::new();
        for unit in lane {
            let results = run_unit(unit);
            let failed = results.iter().any(|(_, r)| r.is_err());
            out.extend(results);
            if failed {
                break;
            }
        }
        out
    };
    let results: Vec<(usize, Result<()>)> = if plan.gpus.len() > 1 && lanes.len() > 1 {
        std::thread::scope(|scope| {
            let handles: Vec<_> = lanes.iter().map(|(_, lane)| scope.spawn(|| work(lane))).collect();
            handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
        })
    } else {
        work(&lanes.into_iter().flat_map(|(_, us)| us).collect::<Vec<_>>())
    };
    // Recording the ending must not hide how the run ended.
    let unrecorded = |e: anyhow::Error| shell.warn(format!("could not record how the run ended: {e:#}"));
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
            // The first failure in selection order is the run's.
            if failed.as_ref().is_none_or(|(at, _)| i < *at) {
                failed = Some((i, err));
            }
        }
    }
    if let Some((_, err)) = failed {
        let code = crate::error::exit_code_of(&err);
        for later in prepared.iter().enumerate().filter(|(i, _)| !ended_at[*i]).map(|(_, p)| p) {
            if let Err(e) = collect::record_not_run(&later.dir, later.kernel, code) {
                unrecorded(e);
            }
        }
        return Err(err);
    }
    // The index lists the profiles under the project's profiles root, and lives only
    // there: never beside an explicit --output-dir, where a file of that name is the user's.
    let root = plan.profile_root.as_path();
    let indexed = prepared.iter().any(|p| p.dir.path().parent() == Some(root));
    if indexed && !extras.timing_only {
        // The index is derived from the profiles: failing to rewrite it loses nothing, and
        // must not turn a finished profile into a failed run.
        match crate::report::index::write(root) {
            Ok(()) => shell.status(format!("Index: {}", dir::index_md_path(root).display())),
            Err(e) => shell.warn(format!(
                "the profiles index was not updated ({e:#}); the profile itself is complete, \
                 and the next run rewrites the index"
            )),
        }
    }
    Ok(prepared.into_iter().map(|p| (p.kernel, p.dir)).collect())
}

/// Whether [`run_kernel`] still has to time the kernel and record the environment (a
/// kernel a batch sent back to run alone has both already).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prelude {
    Run,
    Done,
}

/// The order kernels run in: each alone, or several harness kernels of one program
/// together (see [`collect::batch`]), each unit where its first kernel was selected.
fn units(plan: &Plan, prepared: &[PreparedKernel<'_>], extras: Extras) -> Vec<Vec<usize>> {
    let mut units: Vec<(Option<String>, Vec<usize>)> = Vec::new();
    for (i, p) in prepared.iter().enumerate() {
        let key =
            (plan.batch && !extras.timing_only).then(|| batch::batch_key(p.kernel, &p.target)).flatten();
        match units.iter_mut().find(|(k, _)| key.is_some() && *k == key) {
            Some((_, members)) => members.push(i),
            None => units.push((key, vec![i])),
        }
    }
    units.into_iter().map(|(_, members)| members).collect()
}

/// A batch: each member's timing and environment, the batched stages, then each
/// member's analysis, or its own run when the batch could not serve it.
fn run_batch(
    plan: &Plan,
    prepared: &[PreparedKernel<'_>],
    unit: &[usize],
    ncu_for: &dyn Fn(&KernelPlan) -> PathBuf,
    rules: &Rules,
    extras: Extras,
    shell: &Shell,
) -> Vec<(usize, Result<()>)> {
    let ncus: Vec<PathBuf> = unit.iter().map(|i| ncu_for(prepared[*i].kernel)).collect();
    for (n, i) in unit.iter().enumerate() {
        if let Err(e) = prelude(plan, &prepared[*i], &ncus[n], extras, shell) {
            // The members before it have no stages yet: the caller records them as not run.
            return vec![(*i, Err(e))];
        }
    }
    let runs: Vec<KernelRun<'_>> = unit
        .iter()
        .zip(&ncus)
        .map(|(i, ncu)| {
            let p = &prepared[*i];
            KernelRun {
                dir: &p.dir,
                kernel: p.kernel,
                target: &p.target,
                ncu,
                first: &p.stage_commands,
                timeout: plan.timeout,
            }
        })
        .collect();
    let served = match batch::collect_batch(&runs, rules, shell) {
        Ok(s) => s,
        Err(e) => {
            // The batch ended as one run: its first kernel carries the error, the others
            // record the same ending.
            let code = crate::error::exit_code_of(&e);
            for i in &unit[1..] {
                let _ = collect::record_not_run(&prepared[*i].dir, prepared[*i].kernel, code);
            }
            return vec![(unit[0], Err(e))];
        }
    };
    let mut out = Vec::new();
    for ((i, s), ncu) in unit.iter().zip(served).zip(&ncus) {
        let p = &prepared[*i];
        let ended = match s {
            batch::Served::Done => analyse(plan, p, shell),
            batch::Served::Alone => run_kernel(plan, p, ncu, rules, extras, Prelude::Done, shell),
        };
        let failed = ended.is_err();
        out.push((*i, ended));
        if failed {
            break;
        }
    }
    out
}

/// What comes before a kernel's stages: the harness timing when asked, and the
/// environment record.
fn prelude(
    plan: &Plan,
    p: &PreparedKernel<'_>,
    ncu_path: &Path,
    extras: Extras,
    shell: &Shell,
) -> Result<()> {
    process::check_signal("before the run")?;
    if extras.timing || extras.timing_only {
        timing::time_kernel(p, plan.timeout, extras.timing_only, shell)?;
    }
    if extras.timing_only {
        return Ok(());
    }
    environment::write_environment(&p.dir, ncu_path, p.kernel.privilege, &plan.workspace_root, shell)
}

/// One kernel's run: timing, the environment record, the stages, the analysis.
fn run_kernel(
    plan: &Plan,
    p: &PreparedKernel<'_>,
    ncu_path: &Path,
    rules: &Rules,
    extras: Extras,
    before: Prelude,
    shell: &Shell,
) -> Result<()> {
    if before == Prelude::Run {
        prelude(plan, p, ncu_path, extras, shell)?;
    }
    if extras.timing_only {
        return Ok(());
    }
    let run = KernelRun {
        dir: &p.dir,
        kernel: p.kernel,
        target: &p.target,
        ncu: ncu_path,
        first: &p.stage_commands,
        timeout: plan.timeout,
    };
    collect::collect(&run, rules, shell)?;
    analyse(plan, p, shell)
}

/// A kernel's analysis once its stages ran: the reports and the verdict line.
fn analyse(plan: &Plan, p: &PreparedKernel<'_>, shell: &Shell) -> Result<()> {
    process::check_signal("after the stages, before the analysis")?;
    let opts = AnalyzeOptions { source_root: Some(plan.workspace_root.clone()), ..Default::default() };
    let analysis = report::refresh(&p.dir, &opts)?;
    for w in &analysis.warnings {
        shell.warn(w);
    }
    print_verdicts(&p.dir, &analysis.decision, shell);
    Ok(())
}

/// Shows each prepared profile: its directory and the ncu commands known so far (for a
/// dry run, everything it would run).
fn report_prepared(plan: &Plan, prepared: &[PreparedKernel<'_>], shell: &Shell) {
    for p in prepared {
        if shell.is_json() {
            let stages: Vec<_> = p
                .stage_commands
                .iter()
                .map(|(c, cmd)| json!({ "stage": c.name(), "command": cmd.to_string() }))
                .collect();
            shell.json(&json!({
                    "reason": if plan.dry_run { "dry-run" } else { "profile-prepared" },
                    "kernel": p.kernel.name,
                    "profile_dir": p.dir.path(),
                    "program": p.target.program,
                    "stages": stages,
                "follow_up": p.kernel.stages.is_auto(),
            }));
        } else if plan.dry_run {
            // The dry run's result is its commands: `commands.sh` as written, each command
            // under its `# Stage N` comment, so that stdout alone is the replayable script.
            shell.status(format!("Profile directory: {}", p.dir.path().display()));
            shell.out(p.script.trim_end());
        } else {
            // Progress of a real run: each label on the line of its command.
            shell.status(format!("Profile directory: {}", p.dir.path().display()));
            for (c, cmd) in &p.stage_commands {
                shell.status(format!("ncu command ({}): {cmd}", c.name()));
            }
            if p.kernel.stages.is_auto() {
                shell.status("then one follow-up stage chosen from basic's metrics");
            }
        }
    }
}
