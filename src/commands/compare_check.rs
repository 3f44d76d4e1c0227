//! `cargo kprof compare` (a profile against a baseline) and `cargo kprof check` (profile
//! or time the selection, compare each kernel, fail on a regression: the CI gate).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use serde_json::json;

use super::load_workspace;
use super::profile::{execute_profiles, Extras};
use crate::archive;
use crate::build;
use crate::cli::{CheckArgs, CompareArgs, ExportArgs};
use crate::compare::baseline;
use crate::compare::exports::{self, Measured};
use crate::compare::gate::{self, BaselineSpec, GateOptions, GateResult};
use crate::error::{ExitCode, Failure};
use crate::model::kinds::Runtime;
use crate::plan;
use crate::profile::dir;
use crate::report::comparison;
use crate::shell::Shell;

/// `cargo kprof compare`.
pub(crate) fn compare(c: &CompareArgs, shell: &Shell) -> Result<ExitCode> {
    let current = match &c.current {
        Some(d) => {
            if !d.is_dir() {
                return Err(Failure::new(
                    ExitCode::Config,
                    format!("{}: no such profile directory", d.display()),
                )
                .help("give a directory under profile/, or leave it out for the newest profile")
                .into());
            }
            d.clone()
        }
        None => {
            let root = match &c.manifest_path {
                Some(m) => m.parent().map(Path::to_path_buf).unwrap_or_default(),
                None => std::env::current_dir()?,
            };
            let root =
                build::metadata(&build::cargo_binary(), Some(&root.join("Cargo.toml")), &Shell::quiet())
                    .map(|m| m.workspace_root.into_std_path_buf())
                    .unwrap_or(root);
            let profiles = dir::profiles_root(&root);
            baseline::profiles_in(&profiles).pop().ok_or_else(|| {
                Failure::new(
                    ExitCode::Config,
                    format!("no analysed profile to compare under {}", profiles.display()),
                )
                .help("profile a kernel first (`cargo kprof --kernel NAME`), or give CURRENT_DIR")
            })?
        }
    };
    let tolerance = c.tolerance_pct.unwrap_or(plan::defaults::TOLERANCE_PCT);
    let opts = GateOptions {
        baseline: BaselineSpec::parse(&c.baseline),
        tolerance_pct: tolerance,
        force: c.force,
        visual: c.visual,
    };
    let profile_root = current.parent().unwrap_or(Path::new(".")).to_path_buf();
    let snapshot = gate::load_current(&current)?;
    let kernel = snapshot.identity.kernel.clone();
    if let Some(name) = &c.save_baseline {
        baseline::ensure_free(&profile_root, name, &kernel)?;
    }
    let result = comparison::compare_profile(&snapshot, &opts)?;
    print_result(&result, shell);
    if let Some(name) = &c.save_baseline {
        let saved = baseline::save(&profile_root, name, &kernel, &current)?;
        shell.status(format!("Baseline `{name}`: {}", saved.display()));
    }
    Ok(if c.fail_on_regression { gate::exit_code(std::slice::from_ref(&result)) } else { ExitCode::Success })
}

/// `cargo kprof check`: profile (or time) every selected kernel, compare each with the
/// saved baseline, and fail on a regression.
pub(crate) fn check(c: &CheckArgs, shell: &Shell) -> Result<ExitCode> {
    check_export_files(&c.exports)?;
    let ab_archive = match (&c.archive, c.baseline.is_none() && c.save_baseline.is_none()) {
        (Some(a), true) => crate::archive::pair::read_manifest(a)?.is_some(),
        _ => false,
    };
    if c.ab.base.is_some() || ab_archive {
        if c.save_baseline.is_some() {
            return Err(Failure::new(ExitCode::Config, "--save-baseline does not go with an A/B check")
                .help("an A/B check compares with the base revision; save baselines from a plain `check`")
                .into());
        }
        return super::check_base::check_ab(c, shell);
    }
    if c.baseline.is_none() && c.save_baseline.is_none() {
        return Err(Failure::new(
            ExitCode::Config,
            format!(
                "{} holds one side only: check it against --baseline NAME, or save one with --save-baseline NAME",
                c.archive.as_deref().unwrap_or(Path::new("the archive")).display()
            ),
        )
        .help("for an A/B check against a git revision, pack both sides: cargo kprof archive --base REV -o FILE")
        .into());
    }
    let (plan, built) = match &c.archive {
        Some(archive) => {
            let remap = c.workspace_remap.clone().unwrap_or_else(|| PathBuf::from("kprof-archive"));
            let (plan, built) = unpack_for_check(c, archive, &remap)?;
            (plan, Some(built))
        }
        None => {
            let (metadata, config) = load_workspace(c.profile.packages.manifest_path.as_deref(), shell)?;
            let request = super::with_engine_shard(c.profile.request()?)?;
            (plan::resolve(&request, &metadata, &config, build::cargo_binary())?, None)
        }
    };
    for note in &plan.notes {
        shell.note(note);
    }
    if plan.kernels.is_empty() {
        if c.archive.is_none() {
            super::create_profiles_root(&plan.profile_root, shell)?;
        }
        return super::empty_shard(&plan, shell);
    }
    if c.timing_only {
        if let Some(k) = plan.kernels.iter().find(|k| k.runtime != Runtime::Harness) {
            return Err(Failure::new(
                ExitCode::Config,
                format!("--timing-only needs harness targets; `{}` runs as `{}`", k.name, k.runtime.name()),
            )
            .help("drop --timing-only to gate on ncu's duration, or select harness kernels only")
            .into());
        }
    }
    // Refuse before any work: a missing baseline, or a baseline name already taken.
    for k in &plan.kernels {
        if let Some(name) = &c.save_baseline {
            baseline::ensure_free(&plan.profile_root, name, &k.name)?;
        }
        if let Some(crate::compare::gate::BaselineSpec::Name(name)) =
            c.baseline.as_deref().map(crate::compare::gate::BaselineSpec::parse)
        {
            crate::compare::baseline::find(&plan.profile_root, &name, &k.name)?;
        }
    }
    if c.archive.is_none() {
        // An archive's profiles go under --workspace-remap, which kprof made itself.
        super::create_profiles_root(&plan.profile_root, shell)?;
    }
    let extras = Extras { timing: true, timing_only: c.timing_only, dirs_only: false };
    let profiles = execute_profiles(&plan, built, extras, shell)?;
    if plan.dry_run {
        return Ok(ExitCode::Success);
    }
    let mut results = Vec::new();
    let exporting = !c.exports.files().is_empty();
    let mut measured = Vec::new();
    for (kernel, dir) in &profiles {
        let current =
            if c.baseline.is_some() || exporting { Some(gate::load_current(dir.path())?) } else { None };
        let mut compared = None;
        if let (Some(spec), Some(current)) = (c.baseline.as_deref().map(BaselineSpec::parse), &current) {
            let opts = GateOptions {
                baseline: spec,
                tolerance_pct: c.tolerance_pct.unwrap_or(kernel.tolerance_pct),
                force: c.force,
                visual: false,
            };
            let r = comparison::compare_profile(current, &opts)?;
            print_result(&r, shell);
            compared = Some(r.comparison.clone());
            results.push(r);
        }
        if let Some(current) = current.as_ref().filter(|_| exporting) {
            measured.push(Measured::of(kernel.package.as_deref(), current, compared.as_ref()));
        }
        if let Some(name) = &c.save_baseline {
            let saved = baseline::save(&plan.profile_root, name, &kernel.name, dir.path())?;
            shell.status(format!("Baseline `{name}`: {}", saved.display()));
        }
    }
    // Written whatever the verdict: a regressed run belongs in the history too.
    write_export_files(&c.exports, &measured, shell)?;
    if c.baseline.is_none() {
        return Ok(ExitCode::Success);
    }
    let tolerance = c.tolerance_pct.unwrap_or(plan::defaults::TOLERANCE_PCT);
    gate::write_step_summary(&comparison::step_summary(&results, tolerance))?;
    let code = gate::exit_code(&results);
    let regressed: Vec<&str> = results
        .iter()
        .filter(|r| r.comparison.regression)
        .map(|r| r.comparison.current.identity.kernel.as_str())
        .collect();
    if shell.is_json() {
        shell.json(&json!({"reason": "check-finished", "regressions": regressed, "kernels": results.len()}));
    } else if regressed.is_empty() {
        shell.status(format!("check: {} kernel(s), no regression beyond tolerance", results.len()));
    } else {
        shell.error(format!("check: regression in {}", regressed.join(", ")));
    }
    Ok(code)
}

/// Unpacks an archive for `check` into `remap`: `--kernel`, `--stages`, the window and
/// `--env` change the archived plan as they do for `run --archive`, and the run's own
/// options (`--dry-run`, `--no-batch`, the shard, `--gpus`) apply.
pub(super) fn unpack_for_check(
    c: &CheckArgs,
    archive: &Path,
    remap: &Path,
) -> Result<(crate::plan::Plan, crate::build::BuildOutput)> {
    let request = super::with_engine_shard(c.profile.kernel.request()?)?;
    let mut notes = Vec::new();
    let (mut plan, built) =
        archive::unpack_adjusted(archive, remap, c.profile.timeout.map(Duration::from_secs), |k| {
            Ok(archive::adjust::adjust(k, &request, &mut notes)?)
        })?;
    plan.notes.extend(notes);
    plan.dry_run = request.dry_run;
    plan.batch = !request.no_batch;
    plan.partition = request.partition.as_ref().map(|s| s.partition);
    plan.assign_gpus(&request.gpus);
    Ok((plan, built))
}

/// Refuses, before any work, a result file that exists or cannot be created, and one file
/// asked for twice.
fn check_export_files(exports: &ExportArgs) -> Result<(), Failure> {
    let files = exports.files();
    if let [(_, a), (_, b)] = files.as_slice() {
        if a == b {
            return Err(Failure::new(
                ExitCode::Config,
                format!("--bmf and --github-benchmark both name {}", a.display()),
            )
            .help("give each its own file"));
        }
    }
    for (flag, path) in files {
        if path.symlink_metadata().is_ok() {
            return Err(taken(flag, path));
        }
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !parent.is_dir() {
            return Err(Failure::new(
                ExitCode::Filesystem,
                format!("{flag} {}: no directory {}", path.display(), parent.display()),
            )
            .help("create the directory first, or pick a file in an existing one"));
        }
    }
    Ok(())
}

fn taken(flag: &str, path: &Path) -> Failure {
    Failure::new(ExitCode::Filesystem, format!("{flag} {}: the file exists", path.display()))
        .help("result files are never overwritten: pick a new name or remove the file")
}

/// `--bmf` and `--github-benchmark` of an A/B check: the head's timing over the rounds
/// (else its profiled launch), with the A/B verdict.
pub(super) fn write_ab_exports(
    exports: &ExportArgs,
    outcome: &crate::compare::ab::run::AbOutcome,
    shell: &Shell,
) -> Result<()> {
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
    write_export_files(exports, &measured, shell)
}

/// Writes `--bmf` and `--github-benchmark`, each whole and none over an existing file.
fn write_export_files(exports: &ExportArgs, measured: &[Measured], shell: &Shell) -> Result<()> {
    let docs = [
        (&exports.bmf, "--bmf", exports::bmf as fn(&[Measured]) -> serde_json::Value),
        (&exports.github_benchmark, "--github-benchmark", exports::github_benchmark),
    ];
    for (path, flag, format) in docs {
        let Some(path) = path else { continue };
        let doc = format(measured);
        let text = serde_json::to_string_pretty(&doc)? + "\n";
        if !crate::profile::fs::write_atomic_new(path, text.as_bytes())? {
            return Err(taken(flag, path).into());
        }
        shell.status(format!("Results for {flag}: {}", path.display()));
    }
    Ok(())
}

/// Prints one comparison: for people (the explanation on stdout, warnings on stderr) or
/// for machines (one JSON line on stdout).
pub(super) fn print_result(r: &GateResult, shell: &Shell) {
    let c = &r.comparison;
    for w in &r.warnings {
        shell.warn(w);
    }
    if shell.is_json() {
        shell.json(&json!({
            "reason": "comparison",
            "profile": r.profile,
            "report": r.report,
            "kernel": c.current.identity.kernel,
            "baseline": c.baseline.label,
            "regression": c.regression,
            "duration": c.duration,
            "explanation": c.explanation,
            "warnings": c.warnings,
        }));
    } else {
        for w in &c.warnings {
            shell.warn_always(w);
        }
        shell.out(format!("{}: {}", c.current.identity.kernel, c.explanation));
        shell.out(format!("Comparison: {}", r.report.display()));
    }
}
