//! `cargo kprof compare` (a profile against a baseline) and the baseline half of
//! `cargo kprof check` (profile or time the selection, compare each kernel with its saved
//! baseline, fail on a regression: the CI gate), with the result files for benchmark
//! history tools (`--bmf`, `--github-benchmark`) that every kind of check writes.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::archive::{unpack_for_check, Unpack};
use super::opening::{self, RequestFn, Shard};
use super::profile::{profile_plan, Extras};
use crate::build::BuildOutput;
use crate::compare::baseline;
use crate::compare::exports::{self, Measured};
use crate::compare::gate::{self, BaselineSpec, GateOptions, GateResult};
use crate::compare::Snapshot;
use crate::error::{ExitCode, Failure};
use crate::events::{self, About, BaselineSaved, Event, ResultsFormat, ResultsWritten};
use crate::model::kinds::Runtime;
use crate::plan::{self, KernelPlan, Plan};
use crate::profile::ProfileDir;
use crate::report::comparison;
use crate::shell::Shell;

/// `--bmf` and `--github-benchmark`.
#[derive(Debug, Clone, Default)]
pub struct ResultFiles {
    /// Bencher Metric Format.
    pub bmf: Option<PathBuf>,
    /// github-action-benchmark's `customSmallerIsBetter`.
    pub github_benchmark: Option<PathBuf>,
}

impl ResultFiles {
    /// The files asked for, each with its flag.
    pub fn files(&self) -> Vec<(&'static str, &PathBuf)> {
        let mut out = Vec::new();
        if let Some(p) = &self.bmf {
            out.push(("--bmf", p));
        }
        if let Some(p) = &self.github_benchmark {
            out.push(("--github-benchmark", p));
        }
        out
    }

    /// Refuses, before any work, a result file that exists or cannot be created, and one
    /// file asked for twice.
    pub fn check(&self) -> Result<(), Failure> {
        let files = self.files();
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

    /// Writes each file whole, none over an existing file.
    pub fn write(&self, measured: &[Measured], shell: &Shell) -> Result<()> {
        let docs = [
            (&self.bmf, ResultsFormat::Bmf, exports::bmf as fn(&[Measured]) -> serde_json::Value),
            (&self.github_benchmark, ResultsFormat::GithubBenchmark, exports::github_benchmark),
        ];
        for (path, format, document) in docs {
            let Some(path) = path else { continue };
            let text = serde_json::to_string_pretty(&document(measured))? + "\n";
            if !crate::profile::fs::write_atomic_new(path, text.as_bytes())? {
                return Err(taken(format.flag(), path).into());
            }
            shell.emit(&Event::ResultsWritten(ResultsWritten { format, path: path.clone() }));
        }
        Ok(())
    }
}

fn taken(flag: &str, path: &Path) -> Failure {
    Failure::new(ExitCode::Filesystem, format!("{flag} {}: the file exists", path.display()))
        .help("result files are never overwritten: pick a new name or remove the file")
}

/// Says one comparison: the warnings of its making, its conditions' warnings (for people;
/// JSON carries them), and its message.
pub fn report_comparison(r: &GateResult, shell: &Shell) {
    let c = &r.comparison;
    for w in &r.warnings {
        shell.emit(&Event::warning(About::Comparison, w.clone()));
    }
    // Under JSON the comparison's message carries them.
    if !shell.is_json() {
        for w in &c.warnings {
            shell.emit(&Event::warning(About::Conditions, w.clone()));
        }
    }
    shell.emit(&Event::Comparison {
        profile: r.profile.clone(),
        report: r.report.clone(),
        kernel: c.current.identity.kernel.clone(),
        baseline: c.baseline.label.clone(),
        regression: c.regression,
        duration: c.duration.clone(),
        explanation: c.explanation.clone(),
        fix_loop: c.fix_loop.as_ref().map(|l| l.text.clone()),
        warnings: c.warnings.clone(),
    });
}

/// Compares the profile `current` (see `gate::load_current`) with its baseline as `opts`
/// say and writes the comparison's pages; a picture that cannot be drawn is a warning.
fn compare_profile(current: &Snapshot, opts: &GateOptions) -> Result<GateResult> {
    let current_dir = current.dir.as_path();
    let (base, comparison) = gate::compare_with_baseline(current, opts)?;
    let report = comparison::write_reports(current_dir, &comparison)?;
    let mut warnings = Vec::new();
    if opts.visual {
        if let Err(e) = comparison::draw(current_dir, &base, current) {
            warnings.push(format!("no comparison picture: {e:#}"));
        }
    }
    Ok(GateResult { profile: current_dir.to_path_buf(), comparison, report, warnings })
}

/// What `cargo kprof compare` compares.
pub struct CompareOptions<'a> {
    /// The profile, or `None` for the newest under the workspace's profiles root.
    pub current: Option<&'a Path>,
    /// `--manifest-path`, to find that root.
    pub manifest_path: Option<&'a Path>,
    /// How to compare.
    pub gate: GateOptions,
    /// `--save-baseline NAME`.
    pub save_baseline: Option<&'a str>,
    /// `--fail-on-regression`.
    pub fail_on_regression: bool,
}

/// `cargo kprof compare`.
pub fn compare(o: CompareOptions<'_>, shell: &Shell) -> Result<ExitCode> {
    let current = match o.current {
        Some(d) => {
            if !d.is_dir() {
                return Err(Failure::new(
                    ExitCode::Config,
                    format!("{}: no such profile directory", d.display()),
                )
                .help("give a directory under profile/, or leave it out for the newest profile")
                .into());
            }
            d.to_path_buf()
        }
        None => newest_profile(o.manifest_path)?,
    };
    let profile_root = current.parent().unwrap_or(Path::new(".")).to_path_buf();
    let snapshot = gate::load_current(&current)?;
    let kernel = snapshot.identity.kernel.clone();
    if let Some(name) = o.save_baseline {
        baseline::ensure_free(&profile_root, name, &kernel)?;
    }
    let result = compare_profile(&snapshot, &o.gate)?;
    report_comparison(&result, shell);
    if let Some(name) = o.save_baseline {
        let saved = baseline::save(&profile_root, name, &kernel, &current)?;
        shell.emit(&saved_as(name, &kernel, saved));
    }
    Ok(if o.fail_on_regression { gate::exit_code(std::slice::from_ref(&result)) } else { ExitCode::Success })
}

/// The newest analysed profile of the workspace.
fn newest_profile(manifest_path: Option<&Path>) -> Result<PathBuf> {
    let root = match manifest_path {
        Some(m) => m.parent().map(Path::to_path_buf).unwrap_or_default(),
        None => std::env::current_dir()?,
    };
    let cargo = crate::build::cargo_binary();
    let root = crate::build::metadata(&cargo, Some(&root.join("Cargo.toml")), &Shell::quiet())
        .map(|m| m.workspace_root.into_std_path_buf())
        .unwrap_or(root);
    let profiles = crate::profile::root::profiles_root(&root);
    Ok(baseline::profiles_in(&profiles).pop().ok_or_else(|| {
        Failure::new(ExitCode::Config, format!("no analysed profile to compare under {}", profiles.display()))
            .help("profile a kernel first (`cargo kprof --kernel NAME`), or give CURRENT_DIR")
    })?)
}

/// Where a baseline check's kernels come from.
pub enum CheckFrom<'a> {
    /// This workspace, planned from the request.
    Tree {
        /// The profile request.
        request: RequestFn<'a>,
        /// `--manifest-path`.
        manifest_path: Option<&'a Path>,
    },
    /// A one-sided archive.
    Archive(Box<Unpack<'a>>),
}

/// A baseline check, resolved from the command line.
pub struct BaselineCheck<'a> {
    /// `--baseline`.
    pub baseline: Option<&'a str>,
    /// `--save-baseline`.
    pub save_baseline: Option<&'a str>,
    /// `--timing-only`.
    pub timing_only: bool,
    /// `--tolerance-pct`.
    pub tolerance_pct: Option<f64>,
    /// `--force`.
    pub force: bool,
    /// `--bmf` and `--github-benchmark`.
    pub results: &'a ResultFiles,
}

/// `cargo kprof check --baseline NAME` (or `--save-baseline NAME`): profile (or time)
/// every selected kernel, compare each with the saved baseline, fail on a regression.
pub fn check_baselines(from: CheckFrom<'_>, o: &BaselineCheck<'_>, shell: &Shell) -> Result<ExitCode> {
    let archived = matches!(from, CheckFrom::Archive(_));
    let extras = Extras { timing: true, timing_only: o.timing_only, dirs_only: false };
    let (plan, built) = plan_check(from, extras, shell)?;
    if plan.kernels.is_empty() {
        if !archived {
            opening::create_profiles_root(&plan.profile_root, shell)?;
        }
        return opening::empty_shard(&plan, shell);
    }
    refuse_before_work(o, &plan)?;
    // Without a GPU (or ncu, unless only timing), stop before building, as a profile does.
    super::profile::preflight(&plan, extras)?;
    if !archived {
        // An archive's profiles go under --workspace-remap, which kprof made itself.
        opening::create_profiles_root(&plan.profile_root, shell)?;
    }
    let profiles = profile_plan(&plan, built, extras, shell)?;
    if plan.dry_run {
        return Ok(ExitCode::Success);
    }
    let results = compare_each(o, &plan, &profiles, shell)?;
    let Some(results) = results else { return Ok(ExitCode::Success) };
    let tolerance = o.tolerance_pct.unwrap_or(plan::defaults::TOLERANCE_PCT);
    gate::write_step_summary(&comparison::step_summary(&results, tolerance))?;
    let code = gate::exit_code(&results);
    shell.emit(&Event::CheckFinished(finished(&results, code)));
    Ok(code)
}

/// The plan and executables of a baseline check.
fn plan_check(from: CheckFrom<'_>, extras: Extras, shell: &Shell) -> Result<(Plan, Option<BuildOutput>)> {
    match from {
        CheckFrom::Archive(u) => {
            let machine = super::archive::Machine { extras, sudo: u.request.sudo };
            let (plan, built) = unpack_for_check(*u, Some(machine))?;
            opening::print_notes(&plan, shell);
            Ok((plan, Some(built)))
        }
        CheckFrom::Tree { request, manifest_path } => {
            Ok((opening::open(manifest_path, request, Shard::FromEngine, shell)?.0, None))
        }
    }
}

/// Refuses before any work: `--timing-only` of a program that is no harness bench, a
/// missing baseline, or a baseline name already taken.
fn refuse_before_work(o: &BaselineCheck<'_>, plan: &Plan) -> Result<()> {
    if o.timing_only {
        if let Some(k) = plan.kernels.iter().find(|k| k.runtime != Runtime::Harness) {
            return Err(Failure::new(
                ExitCode::Config,
                format!("--timing-only needs harness targets; `{}` runs as `{}`", k.name, k.runtime.name()),
            )
            .help("drop --timing-only to gate on ncu's duration, or select harness kernels only")
            .into());
        }
    }
    for k in &plan.kernels {
        if let Some(name) = o.save_baseline {
            baseline::ensure_free(&plan.profile_root, name, &k.name)?;
        }
        if let Some(BaselineSpec::Name(name)) = o.baseline.map(BaselineSpec::parse) {
            baseline::find(&plan.profile_root, &name, &k.name)?;
        }
    }
    Ok(())
}

/// Compares each profile with its baseline, saves baselines, writes the result files;
/// `None` when no baseline was asked for.
fn compare_each(
    o: &BaselineCheck<'_>,
    plan: &Plan,
    profiles: &[(&KernelPlan, ProfileDir)],
    shell: &Shell,
) -> Result<Option<Vec<GateResult>>> {
    let mut results = Vec::new();
    let exporting = !o.results.files().is_empty();
    let mut measured = Vec::new();
    for (kernel, dir) in profiles {
        let current =
            if o.baseline.is_some() || exporting { Some(gate::load_current(dir.path())?) } else { None };
        let mut compared = None;
        if let (Some(spec), Some(current)) = (o.baseline.map(BaselineSpec::parse), &current) {
            let opts = GateOptions {
                baseline: spec,
                tolerance_pct: o.tolerance_pct.unwrap_or(kernel.tolerance_pct),
                force: o.force,
                visual: false,
            };
            let r = compare_profile(current, &opts)?;
            report_comparison(&r, shell);
            compared = Some(r.comparison.clone());
            results.push(r);
        }
        if let Some(current) = current.as_ref().filter(|_| exporting) {
            measured.push(Measured::of(kernel.package.as_deref(), current, compared.as_ref()));
        }
        if let Some(name) = o.save_baseline {
            let saved = baseline::save(&plan.profile_root, name, &kernel.name, dir.path())?;
            shell.emit(&saved_as(name, &kernel.name, saved));
        }
    }
    // Written whatever the verdict: a regressed run belongs in the history too.
    o.results.write(&measured, shell)?;
    Ok(o.baseline.is_some().then_some(results))
}

/// The message of a profile saved as the baseline `name`.
fn saved_as(name: &str, kernel: &str, path: PathBuf) -> Event {
    Event::BaselineSaved(BaselineSaved { name: name.to_string(), kernel: kernel.to_string(), path })
}

/// The closing message of a baseline check.
fn finished(results: &[GateResult], code: ExitCode) -> events::CheckFinished {
    let of = |regressed: bool| -> Vec<String> {
        results
            .iter()
            .filter(|r| r.comparison.regression == regressed)
            .map(|r| r.comparison.current.identity.kernel.clone())
            .collect()
    };
    let regressions = of(true);
    events::CheckFinished {
        schema_version: events::MESSAGES_SCHEMA_VERSION,
        mode: events::CheckMode::Baseline,
        base: None,
        verdict: if regressions.is_empty() {
            events::CheckVerdict::Clean
        } else {
            events::CheckVerdict::Regressed
        },
        exit_code: code.code(),
        regressions,
        ambiguous: Vec::new(),
        improved: Vec::new(),
        unchanged: of(false),
        kernels: results.len(),
    }
}
