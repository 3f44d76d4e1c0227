//! Carrying out a command: resolve, check, build, write the profile directory, collect.
//!
//! This is the only place that sequences the pipeline; each step lives in its own
//! module with typed inputs and outputs. Messages for people go to stderr, results
//! (paths, JSON) to stdout, as cargo does.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::json;

use crate::build::{self, BuildOutput};
use crate::cli::{Command, KprofArgs, ListArgs, OutputArgs, ProfileArgs};
use crate::config::{self, Config};
use crate::error::{ExitCode, Failure};
use crate::ncu::{self, privilege, Privilege, StageCollection, StageRun, TargetCommand};
use crate::plan::{self, KernelPlan, Plan, PlannedTarget, StagePlan};
use crate::preflight;
use crate::process::{shell_quote, ProcessBuilder};
use crate::profile_dir::{self, ProfileDir};
use crate::stage::StageSelection;
use crate::target_spec;

/// Runs the parsed command line.
pub fn run(args: KprofArgs) -> Result<ExitCode> {
    match args.command {
        None => profile(&args.profile),
        Some(Command::List(list_args)) => list(&list_args),
        Some(Command::Import(i)) => {
            let opts = analyze_options(&i.analysis, std::env::current_dir().ok());
            let dir = crate::analyze::import(
                &i.raw,
                i.source.as_deref(),
                i.details.as_deref(),
                i.kernel.as_deref(),
                &i.output_dir,
                &opts,
            )?;
            print_verdicts(&dir)?;
            Ok(ExitCode::Success)
        }
        Some(Command::Report(r)) => {
            if !r.dir.join("details").is_dir() {
                return Err(Failure::new(
                    ExitCode::Config,
                    format!("{} is not a profile directory (it has no details/)", r.dir.display()),
                )
                .into());
            }
            let dir = ProfileDir::at(&r.dir);
            let opts = analyze_options(&r.analysis, std::env::current_dir().ok());
            crate::analyze::analyze(&dir, &opts)?;
            print_verdicts(&dir)?;
            Ok(ExitCode::Success)
        }
        Some(Command::Doctor(d)) => doctor(d.manifest_path.as_deref(), d.sudo),
        Some(Command::Archive(a)) => {
            let (metadata, config) =
                load_workspace(a.profile.packages.manifest_path.as_deref(), &a.profile.output)?;
            let plan = plan::resolve(&a.profile, &metadata, &config, build::cargo_binary())?;
            let built = match &plan.build {
                Some(req) => {
                    say(&a.profile.output, format!("Building with line info: {}", req.command()));
                    Some(req.run()?)
                }
                None => None,
            };
            crate::archive::write(&plan, built.as_ref(), &a.output)?;
            println!("Archive: {}", a.output.display());
            Ok(ExitCode::Success)
        }
        Some(Command::Run(r)) => {
            let (mut plan, built) =
                crate::archive::unpack(&r.archive, &r.workspace_remap, r.timeout, r.output.clone())?;
            if r.sudo {
                plan.kernels.iter_mut().for_each(|k| k.privilege = Privilege::Sudo);
            }
            execute(&plan, Some(built))
        }
        Some(Command::Explain(e)) => {
            println!("{}", crate::references::explain(&e.topic)?);
            Ok(ExitCode::Success)
        }
        Some(Command::Compare(c)) => compare(&c),
        Some(Command::Check(c)) => check(&c),
    }
}

/// `cargo kprof compare`.
fn compare(c: &crate::cli::CompareArgs) -> Result<ExitCode> {
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
            let root = cargo_metadata::MetadataCommand::new()
                .manifest_path(root.join("Cargo.toml"))
                .no_deps()
                .exec()
                .map(|m| m.workspace_root.into_std_path_buf())
                .unwrap_or(root);
            let profiles = profile_dir::profiles_root(&root);
            crate::baseline::profiles_in(&profiles).pop().ok_or_else(|| {
                Failure::new(
                    ExitCode::Config,
                    format!("no analysed profile to compare under {}", profiles.display()),
                )
                .help("profile a kernel first (`cargo kprof --kernel NAME`), or give CURRENT_DIR")
            })?
        }
    };
    let tolerance = c.tolerance_pct.unwrap_or(plan::defaults::TOLERANCE_PCT);
    let opts = crate::gate::GateOptions {
        baseline: crate::gate::BaselineSpec::parse(&c.baseline),
        tolerance_pct: tolerance,
        force: c.force,
        visual: c.visual,
        json: plan::is_json(&c.output),
        quiet: c.output.quiet,
    };
    let profile_root = current.parent().unwrap_or(Path::new(".")).to_path_buf();
    let snapshot = crate::gate::load_current(&current)?;
    let kernel = snapshot.identity.kernel.clone();
    if let Some(name) = &c.save_baseline {
        crate::baseline::ensure_free(&profile_root, name, &kernel)?;
    }
    let result = crate::gate::compare_profile(&snapshot, &opts)?;
    crate::gate::print_result(&result, &opts)?;
    if let Some(name) = &c.save_baseline {
        let saved = crate::baseline::save(&profile_root, name, &kernel, &current)?;
        say(&c.output, format!("Baseline `{name}`: {}", saved.display()));
    }
    Ok(if c.fail_on_regression {
        crate::gate::exit_code(std::slice::from_ref(&result))
    } else {
        ExitCode::Success
    })
}

/// `cargo kprof check`: profile (or time) every selected kernel, compare each with the
/// saved baseline, and fail on a regression.
fn check(c: &crate::cli::CheckArgs) -> Result<ExitCode> {
    let output = &c.profile.output;
    let (plan, built) = match &c.archive {
        Some(archive) => {
            let remap = c.workspace_remap.clone().unwrap_or_else(|| PathBuf::from("kprof-archive"));
            let (plan, built) = crate::archive::unpack(archive, &remap, c.profile.timeout, output.clone())?;
            (plan, Some(built))
        }
        None => {
            let (metadata, config) = load_workspace(c.profile.packages.manifest_path.as_deref(), output)?;
            (plan::resolve(&c.profile, &metadata, &config, build::cargo_binary())?, None)
        }
    };
    if c.timing_only {
        if let Some(k) = plan.kernels.iter().find(|k| k.runtime != config::Runtime::Harness) {
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
            crate::baseline::ensure_free(&plan.profile_root, name, &k.name)?;
        }
        if let Some(crate::gate::BaselineSpec::Name(name)) =
            c.baseline.as_deref().map(crate::gate::BaselineSpec::parse)
        {
            crate::baseline::find(&plan.profile_root, &name, &k.name)?;
        }
    }
    let extras = Extras { timing: true, timing_only: c.timing_only };
    let profiles = execute_profiles(&plan, built, extras)?;
    if plan.dry_run {
        return Ok(ExitCode::Success);
    }
    let mut results = Vec::new();
    for (kernel, dir) in &profiles {
        if let Some(spec) = c.baseline.as_deref().map(crate::gate::BaselineSpec::parse) {
            let opts = crate::gate::GateOptions {
                baseline: spec,
                tolerance_pct: c.tolerance_pct.unwrap_or(kernel.tolerance_pct),
                force: c.force,
                visual: false,
                json: plan::is_json(output),
                quiet: output.quiet,
            };
            let r = crate::gate::compare_profile(&crate::gate::load_current(dir.path())?, &opts)?;
            crate::gate::print_result(&r, &opts)?;
            results.push(r);
        }
        if let Some(name) = &c.save_baseline {
            let saved = crate::baseline::save(&plan.profile_root, name, &kernel.name, dir.path())?;
            say(output, format!("Baseline `{name}`: {}", saved.display()));
        }
    }
    if c.baseline.is_none() {
        return Ok(ExitCode::Success);
    }
    let tolerance = c.tolerance_pct.unwrap_or(plan::defaults::TOLERANCE_PCT);
    crate::gate::write_step_summary(&crate::gate::step_summary(&results, tolerance))?;
    let code = crate::gate::exit_code(&results);
    let regressed: Vec<&str> = results
        .iter()
        .filter(|r| r.comparison.regression)
        .map(|r| r.comparison.current.identity.kernel.as_str())
        .collect();
    if plan::is_json(output) {
        let line = json!({"reason": "check-finished", "regressions": regressed, "kernels": results.len()});
        println!("{line}");
    } else if regressed.is_empty() {
        say(output, format!("check: {} kernel(s), no regression beyond tolerance", results.len()));
    } else {
        eprintln!("error: check: regression in {}", regressed.join(", "));
    }
    Ok(code)
}

fn analyze_options(
    a: &crate::cli::AnalysisArgs,
    source_root: Option<PathBuf>,
) -> crate::analyze::AnalyzeOptions {
    crate::analyze::AnalyzeOptions { rules: a.rules.clone(), template: a.template.clone(), source_root }
}

/// Prints the directory and one line per kernel verdict.
pub(crate) fn print_verdicts(dir: &ProfileDir) -> Result<()> {
    let text = std::fs::read_to_string(dir.bottleneck_decision_path())?;
    let decision: crate::analysis::rules::BottleneckDecision = serde_json::from_str(&text)?;
    let mut out = std::io::stdout().lock();
    for v in &decision.kernels {
        writeln!(
            out,
            "{}: {} ({} confidence{})",
            v.kernel,
            v.classification.name(),
            serde_json::to_value(v.confidence)?.as_str().unwrap_or_default(),
            v.rule.as_ref().map(|r| format!(", rule {r}")).unwrap_or_default()
        )?;
    }
    writeln!(out, "Report: {}", dir.final_report_path().display())?;
    Ok(())
}

fn say(output: &OutputArgs, line: impl AsRef<str>) {
    if !output.quiet {
        eprintln!("{}", line.as_ref());
    }
}

fn load_workspace(
    manifest_path: Option<&Path>,
    output: &OutputArgs,
) -> Result<(cargo_metadata::Metadata, Config)> {
    let cargo = build::cargo_binary();
    let metadata = build::metadata(&cargo, manifest_path)?;
    let config = config::load(&metadata)?;
    for w in &config.warnings {
        say(output, format!("warning: {w}"));
    }
    Ok((metadata, config))
}

/// `cargo kprof doctor`: every check, one line each, with fixes; exit 0 when profiling can
/// work, else the code of the first failure class (5 missing tool, 7 permission). With
/// sudo configured (`--sudo`, or `privilege = "sudo"` in the manifests) the ncu checked
/// is the one `sudo -n` would run, and a failure prints the setup guide.
fn doctor(manifest_path: Option<&Path>, sudo_flag: bool) -> Result<ExitCode> {
    let metadata = build::metadata(&build::cargo_binary(), manifest_path).ok();
    let profile_root = metadata
        .as_ref()
        .map(|m| PathBuf::from(m.workspace_root.as_std_path()).join("profile"))
        .unwrap_or_else(|| PathBuf::from("profile"));
    let sudo =
        sudo_flag || metadata.as_ref().and_then(|m| config::load(m).ok()).is_some_and(|c| c.uses_sudo());
    let inputs = preflight::ProbeInputs::from_machine(&profile_root.join(profile_dir::NCU_PATH_FILE));
    let (mut checks, ncu) = preflight::check_profiling_prerequisites(&inputs);
    if sudo {
        // `--sudo` runs only the ncu named in profile/ncu_path, never PATH's or NCU's.
        checks.retain(|c| c.what != "ncu");
        checks.extend(privilege::sudo_checks(
            &inputs.ncu_path_file,
            inputs.path_env.as_deref(),
            privilege::VERSION_CHECK_TIMEOUT,
        ));
    } else if let Some(loc) = &ncu {
        let version = std::process::Command::new(&loc.path)
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).lines().last().unwrap_or("").trim().to_string())
            .unwrap_or_else(|e| format!("could not run it: {e}"));
        checks.push(preflight::Check { what: "ncu version", result: Ok(version), fix: None });
    }
    let params = std::fs::read_to_string("/proc/driver/nvidia/params").ok();
    let is_root = std::env::var("USER").is_ok_and(|u| u == "root")
        || std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0"))
            })
            .unwrap_or(false);
    // Through sudo, ncu runs as root, to whom the counters are always open.
    checks.push(preflight::counter_permission(params.as_deref(), is_root || sudo));
    let ncu_path = profile_root.join(profile_dir::NCU_PATH_FILE);
    if !sudo {
        checks.push(preflight::Check {
            what: "profile/ncu_path",
            result: Ok(match std::fs::read_to_string(&ncu_path) {
                Ok(t) => format!("{} (used by --sudo)", t.trim()),
                Err(_) => format!("{} does not exist yet; created on the first profile", ncu_path.display()),
            }),
            fix: None,
        });
    }
    let mut out = std::io::stdout().lock();
    for c in &checks {
        match &c.result {
            Ok(detail) => writeln!(out, "ok    {}: {detail}", c.what)?,
            Err(problem) => {
                writeln!(out, "FAIL  {}: {problem}", c.what)?;
                if let Some(fix) = &c.fix {
                    writeln!(out, "      fix: {fix}")?;
                }
            }
        }
    }
    let failed: Vec<&preflight::Check> = checks.iter().filter(|c| c.result.is_err()).collect();
    if failed.iter().any(|c| privilege::is_sudo_check(c.what)) {
        writeln!(out, "\n{}", privilege::SUDO_GUIDE)?;
    }
    Ok(match failed.first() {
        None => {
            writeln!(out, "profiling can work here{}", if sudo { " (through sudo -n)" } else { "" })?;
            ExitCode::Success
        }
        Some(c) if c.what == "counter permission" || privilege::is_sudo_check(c.what) => ExitCode::Permission,
        Some(_) => ExitCode::MissingTool,
    })
}

/// `cargo kprof list`.
fn list(args: &ListArgs) -> Result<ExitCode> {
    let (_, config) = load_workspace(args.packages.manifest_path.as_deref(), &args.output)?;
    let mut rows = config.listing(&args.packages.packages)?;
    if let Some(i) = args.index {
        rows.retain(|r| r.index == i);
        if rows.is_empty() {
            config.select_by_index(i, &args.packages.packages)?;
        }
    }
    let mut out = std::io::stdout().lock();
    if plan::is_json(&args.output) {
        let kernels: Vec<_> = rows
            .iter()
            .map(|r| {
                json!({
                    "index": r.index,
                    "name": r.kernel.name,
                    "package": r.kernel.package,
                    "target": r.kernel.target.to_string(),
                    "runtime": r.kernel.runtime.name(),
                    "args": r.kernel.args,
                    "case": r.kernel.case,
                    "filter": format!("regex:{}", r.kernel.kernel_regex),
                })
            })
            .collect();
        writeln!(out, "{}", json!({ "kernels": kernels }))?;
        return Ok(ExitCode::Success);
    }
    if rows.is_empty() {
        say(&args.output, "no kernels are configured; see the README for [[package.metadata.kprof.kernels]]");
        return Ok(ExitCode::Success);
    }
    let table: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            [
                r.index.to_string(),
                r.kernel.package.clone(),
                r.kernel.target.to_string(),
                r.kernel.name.clone(),
                r.kernel.args.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" "),
            ]
        })
        .collect();
    let header = ["INDEX", "PACKAGE", "TARGET", "KERNEL", "ARGS"];
    let mut widths = header.map(str::len);
    for row in &table {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: &[&str]| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}  "));
            }
        }
        s.trim_end().to_string()
    };
    writeln!(out, "{}", line(&header))?;
    for row in &table {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        writeln!(out, "{}", line(&cells))?;
    }
    Ok(ExitCode::Success)
}

/// The program a kernel runs in, once built.
fn target_command(kernel: &KernelPlan, built: Option<&BuildOutput>) -> Result<TargetCommand> {
    let (program, mut args) = match &kernel.target {
        PlannedTarget::Cargo(t) => {
            let exe = built.and_then(|b| b.executable(t)).with_context(|| {
                format!(
                    "no executable was built for {} `{}` of package `{}`",
                    t.kind.name(),
                    t.name,
                    t.package
                )
            })?;
            (exe.to_path_buf(), Vec::new())
        }
        PlannedTarget::Command(words) => {
            let (first, rest) = words.split_first().context("empty command")?;
            (PathBuf::from(first), rest.to_vec())
        }
    };
    args.extend(kernel.args.iter().cloned());
    Ok(TargetCommand { program, args, env: kernel.profiling_env(), cwd: kernel.cwd.clone() })
}

/// One kernel's profile directory and the commands written into it.
struct PreparedKernel<'a> {
    kernel: &'a KernelPlan,
    dir: ProfileDir,
    target: TargetCommand,
    stage_commands: Vec<(StageCollection, ProcessBuilder)>,
}

/// The default action: profile the selected kernels.
fn profile(args: &ProfileArgs) -> Result<ExitCode> {
    let output = &args.output;
    let (metadata, config) = load_workspace(args.packages.manifest_path.as_deref(), output)?;
    let plan = plan::resolve(args, &metadata, &config, build::cargo_binary())?;
    for note in &plan.notes {
        say(output, format!("note: {note}"));
    }
    execute(&plan, None)
}

/// What [`execute_profiles`] does beyond profiling.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extras {
    /// Also time harness targets without ncu (`details/timing.json`).
    pub timing: bool,
    /// Only time them: no ncu at all.
    pub timing_only: bool,
}

/// Checks the machine, builds (unless `prebuilt` supplies the executables, as an archive
/// does), writes each kernel's profile directory, then collects, analyses and reports.
pub fn execute(plan: &Plan, prebuilt: Option<BuildOutput>) -> Result<ExitCode> {
    execute_profiles(plan, prebuilt, Extras::default()).map(|_| ExitCode::Success)
}

/// [`execute`], returning each kernel's profile directory.
pub fn execute_profiles(
    plan: &Plan,
    prebuilt: Option<BuildOutput>,
    extras: Extras,
) -> Result<Vec<(&KernelPlan, ProfileDir)>> {
    let output = &plan.output;
    let ncu_path_file = profile_dir::ensure_ncu_path(&plan.profile_root)?;
    let inputs = preflight::ProbeInputs::from_machine(&ncu_path_file);
    let (mut checks, found) = preflight::check_profiling_prerequisites(&inputs);
    let sudo = |k: &KernelPlan| k.privilege == Privilege::Sudo;
    if plan.kernels.iter().all(sudo) {
        // `--sudo` runs only the ncu named in profile/ncu_path: NCU and PATH play no part.
        checks.retain(|c| c.what != "ncu");
    }
    if extras.timing_only {
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
        Some(profile_dir::read_ncu_path(&plan.profile_root).unwrap_or_else(|_| PathBuf::from("ncu")))
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
            say(output, format!("Building with line info: {}", req.command()));
            Some(req.run()?)
        }
        (None, None) => None,
    };

    let mut prepared = Vec::new();
    for kernel in &plan.kernels {
        prepared.push(prepare_kernel(plan, kernel, built.as_ref(), &ncu_for(kernel))?);
    }
    if !extras.timing_only {
        report_prepared(plan, &prepared)?;
    }
    if plan.dry_run {
        return Ok(prepared.into_iter().map(|p| (p.kernel, p.dir)).collect());
    }
    let rules = crate::analysis::rules::Rules::builtin();
    crate::collect::install_interrupt_handler();
    let say_line = |line: &str| say(&plan.output, line);
    for p in &prepared {
        let ncu_path = ncu_for(p.kernel);
        if extras.timing || extras.timing_only {
            time_kernel(plan, p, extras.timing_only)?;
        }
        if extras.timing_only {
            continue;
        }
        crate::collect::write_environment(&p.dir, &ncu_path, p.kernel.privilege, &plan.workspace_root)?;
        let run = crate::collect::KernelRun {
            dir: &p.dir,
            kernel: p.kernel,
            target: &p.target,
            ncu: &ncu_path,
            first: &p.stage_commands,
            timeout: plan.timeout,
            progress: !plan.output.quiet && !plan::is_json(&plan.output),
        };
        crate::collect::collect(&run, &rules, &say_line)?;
        let opts = crate::analyze::AnalyzeOptions {
            source_root: Some(plan.workspace_root.clone()),
            ..Default::default()
        };
        crate::analyze::analyze(&p.dir, &opts)?;
        print_verdicts(&p.dir)?;
    }
    if let Some(root) = prepared.first().and_then(|p| p.dir.path().parent()).filter(|_| !extras.timing_only) {
        crate::index::write(root)?;
        say(&plan.output, format!("Index: {}", root.join("index.md").display()));
    }
    Ok(prepared.into_iter().map(|p| (p.kernel, p.dir)).collect())
}

/// Times a harness kernel without ncu into `details/timing.json`, and adds the command to
/// `commands.sh`. Other runtimes have no timing; the gate then compares ncu's duration.
fn time_kernel(plan: &Plan, p: &PreparedKernel, timing_only: bool) -> Result<()> {
    if p.kernel.runtime != config::Runtime::Harness {
        say(
            &plan.output,
            format!("note: `{}` has no harness: no timing; ncu's duration is compared", p.kernel.name),
        );
        return Ok(());
    }
    let result = crate::timing::timing_path(p.dir.path());
    let cmd = crate::timing::timing_command(&p.target, &result);
    let mut script = std::fs::read_to_string(p.dir.commands_script_path()).unwrap_or_default();
    if timing_only {
        script.push_str("\n# check --timing-only: only this line ran (no ncu stage above ran)\n");
    } else {
        script.push_str("\n# Timing, without ncu (the gate compares it)\n");
    }
    script.push_str(&cmd.command_line());
    script.push('\n');
    crate::analyze::write_atomic(&p.dir.commands_script_path(), &script)?;
    say(&plan.output, format!("Timing `{}` (harness, no ncu)", p.kernel.name));
    crate::timing::run_timing(&p.target, &result, plan.timeout)?;
    let text = std::fs::read_to_string(&result).unwrap_or_default();
    if let Some(t) = crate::compare::timing_of(&text, p.kernel.case.as_deref()) {
        let (lo, hi) = t.interval();
        say(
            &plan.output,
            format!(
                "  {}: {} median ({}, {} samples, 95 % interval {} .. {})",
                t.case,
                crate::compare::format_ns(t.median_ns),
                t.mode,
                t.samples,
                crate::compare::format_ns(lo),
                crate::compare::format_ns(hi)
            ),
        );
    }
    Ok(())
}

fn prepare_kernel<'a>(
    plan: &Plan,
    kernel: &'a KernelPlan,
    built: Option<&BuildOutput>,
    ncu_path: &Path,
) -> Result<PreparedKernel<'a>> {
    let id = profile_dir::profile_id(&kernel.name, std::time::SystemTime::now());
    let dir = match (&plan.output_dir, plan.kernels.len()) {
        (Some(d), 1) => ProfileDir::create_explicit(d)?,
        (Some(d), _) => {
            std::fs::create_dir_all(d).with_context(|| format!("could not create {}", d.display()))?;
            ProfileDir::create_unique(d, &id)?
        }
        (None, _) => ProfileDir::create_unique(&plan.profile_root, &id)?,
    };
    let target = target_command(kernel, built)?;
    let filter = kernel.filter.as_ref();
    let stage_commands = kernel
        .initial_collections()
        .into_iter()
        .map(|c| {
            let log = dir.details_dir().join(c.raw_file_name());
            let cmd = ncu::command::stage_command(
                ncu_path,
                &StageRun {
                    collection: &c,
                    filter,
                    window: kernel.window,
                    clock_control: kernel.clock_control,
                    log_file: &log,
                    target: &target,
                    privilege: kernel.privilege,
                },
            );
            (c, cmd)
        })
        .collect::<Vec<_>>();

    let spec = target_spec_for(plan, kernel, &target, filter, ncu_path);
    spec.write_to(&dir.target_spec_path())?;
    let script = commands_script(plan, kernel, &stage_commands);
    write_new(&dir.commands_script_path(), &script)?;
    Ok(PreparedKernel { kernel, dir, target, stage_commands })
}

/// `profile-target.yaml` for a resolved kernel: the spec document's schema, filled in.
fn target_spec_for(
    plan: &Plan,
    kernel: &KernelPlan,
    target: &TargetCommand,
    filter: Option<&crate::filter::KernelFilter>,
    ncu_path: &Path,
) -> target_spec::TargetSpec {
    // Without a hint the filter is decided by discovery; until then it matches everything.
    let everything = crate::filter::KernelFilter::regex(".*");
    let filter = filter.unwrap_or(&everything);
    use target_spec::*;
    let (launch_skip, launch_count, profile_from_start, window) = match kernel.window {
        ncu::LaunchWindow::HarnessRange { launch_count } => {
            (0, launch_count, false, LaunchWindow::HarnessRange)
        }
        ncu::LaunchWindow::SkipCount { launch_skip, launch_count } => {
            (launch_skip, launch_count, true, LaunchWindow::LaunchSkipCount)
        }
    };
    let (stages, set, sections) = match &kernel.stages {
        StagePlan::Stages(s) => (s.clone(), None, Vec::new()),
        StagePlan::Custom(StageCollection::Custom { set, sections }) => {
            (StageSelection::Auto, set.clone(), sections.clone())
        }
        StagePlan::Custom(StageCollection::Named(s)) => (StageSelection::List(vec![*s]), None, Vec::new()),
        StagePlan::Custom(StageCollection::Discovery) => (StageSelection::Auto, None, Vec::new()),
    };
    let cargo_target = match &kernel.target {
        PlannedTarget::Cargo(t) => Some(CargoTarget { kind: t.kind, name: t.name.clone() }),
        PlannedTarget::Command(_) => None,
    };
    let mut notes = NotesSection::default();
    notes.unsupported_or_deferred_requirements.extend(
        [
            "discovery after a hint that matches nothing: not implemented (the kernels ncu saw are reported instead)",
        ]
        .map(String::from),
    );
    TargetSpec {
        schema_version: SchemaVersion::CURRENT,
        kprof_version: env!("CARGO_PKG_VERSION").to_string(),
        target: TargetSection {
            runtime: kernel.runtime,
            executable: target.program.display().to_string(),
            args: target.args.clone(),
            cwd: target.cwd.clone(),
            env: target.env.clone(),
            package: kernel.package.clone(),
            build_profile: cargo_target.as_ref().and(plan.build.as_ref()).map(|b| b.profile.clone()),
            cargo_target,
        },
        kernel: KernelSection {
            name: kernel.name.clone(),
            filter_mode: filter.mode,
            filter: filter.pattern.clone(),
            allow_discovery_fallback: true,
            case: kernel.case.clone(),
        },
        launch: LaunchSection { launch_skip, launch_count, profile_from_start, window },
        privilege: PrivilegeSection {
            mode: match kernel.privilege {
                Privilege::None => PrivilegeMode::None,
                Privilege::Sudo => PrivilegeMode::FullSudo,
            },
            ..PrivilegeSection::default()
        },
        profiling: ProfilingSection {
            ncu_bin: ncu_path.display().to_string(),
            stages,
            clock_control: kernel.clock_control,
            set,
            sections,
        },
        // Every analysis writes the verdict and the picture; `comparison/` comes from compare or check.
        outputs: OutputsSection { bottleneck_decision: true, visual: true, ..OutputsSection::default() },
        notes,
    }
}

/// `commands.sh`: the build and every ncu command, exactly as run, replayable.
fn commands_script(plan: &Plan, kernel: &KernelPlan, stages: &[(StageCollection, ProcessBuilder)]) -> String {
    let mut s = String::from("#!/bin/sh\n");
    s.push_str(&format!(
        "# Commands of this profile of `{}`, written by cargo-kprof {}.\n# Each line is what kprof ran (or would run), quoted for a POSIX shell.\nset -e\n\n",
        kernel.name,
        env!("CARGO_PKG_VERSION")
    ));
    if let (Some(build), PlannedTarget::Cargo(_)) = (&plan.build, &kernel.target) {
        s.push_str(
            "# Build with line info (a separate target directory keeps the normal build cache intact)\n",
        );
        s.push_str(&format!("{}\n\n", build.command()));
    }
    if kernel.privilege == Privilege::Sudo {
        s.push_str(
            "# ncu runs through `sudo -n` (privilege sudo), which resets the environment: the\n\
             # program's variables are passed after ncu's options, by /usr/bin/env.\n\n",
        );
    }
    for (i, (c, cmd)) in stages.iter().enumerate() {
        s.push_str(&format!("# Stage {}: {}\n{}\n\n", i + 1, c.name(), cmd));
    }
    if kernel.filter.is_none() {
        s.push_str(
            "# No kernel hint: discovery profiles every kernel once (durations only); the stages\n\
             # for the costliest kernel follow, recorded here once chosen.\n",
        );
    } else if matches!(kernel.stages, StagePlan::Stages(StageSelection::Auto)) {
        s.push_str(
            "# Stage 2: one follow-up (memory, compute, occupancy or speed-of-light), chosen from\n\
             # basic's metrics when the profile runs; its command is recorded here once chosen.\n",
        );
    }
    s
}

fn write_new(path: &Path, text: &str) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("could not create {}", path.display()))?;
    f.write_all(text.as_bytes()).with_context(|| format!("could not write {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if path.extension().is_some_and(|e| e == "sh") {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    Ok(())
}

fn report_prepared(plan: &Plan, prepared: &[PreparedKernel<'_>]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    for p in prepared {
        if plan::is_json(&plan.output) {
            let stages: Vec<_> = p
                .stage_commands
                .iter()
                .map(|(c, cmd)| json!({ "stage": c.name(), "command": cmd.to_string() }))
                .collect();
            writeln!(
                out,
                "{}",
                json!({
                    "reason": if plan.dry_run { "dry-run" } else { "profile-prepared" },
                    "kernel": p.kernel.name,
                    "profile_dir": p.dir.path(),
                    "program": p.target.program,
                    "stages": stages,
                    "follow_up": matches!(p.kernel.stages, StagePlan::Stages(StageSelection::Auto)),
                })
            )?;
        } else {
            say(&plan.output, format!("Profile directory: {}", p.dir.path().display()));
            for (c, cmd) in &p.stage_commands {
                say(&plan.output, format!("ncu command ({}):", c.name()));
                writeln!(out, "{cmd}")?;
            }
            if matches!(p.kernel.stages, StagePlan::Stages(StageSelection::Auto)) {
                say(&plan.output, "then one follow-up stage chosen from basic's metrics");
            }
        }
    }
    Ok(())
}
