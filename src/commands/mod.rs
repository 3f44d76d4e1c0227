//! The subcommands, one file each, and the entry point.
//!
//! Each file turns its clap arguments into typed values, runs the pipeline modules and
//! prints through the [`Shell`]: results on stdout, messages for people on stderr, as
//! cargo does. Nothing below this folder prints except [`crate::shell`].

mod archive_run;
mod check_base;
mod compare_check;
mod doctor;
mod explain;
mod import_report;
mod init;
mod list;
mod merge;
mod profile;

use std::path::Path;

use anyhow::Result;

use crate::analyze::rules::BottleneckDecision;
use crate::build;
use crate::cli::{self, Command, KprofArgs};
use crate::config::{self, Config};
use crate::error::{exit_code_of, ExitCode};
use crate::plan::{Plan, Request};
use crate::profile::ProfileDir;
use crate::shell::Shell;

/// Runs `cargo kprof` with the process arguments and returns its exit code.
pub fn main() -> std::process::ExitCode {
    let args = match cli::parse_from(std::env::args_os()) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::Usage.into() } else { ExitCode::Success.into() };
        }
    };
    crate::process::install_signal_handlers();
    let shell = args.output().map(|o| o.shell()).unwrap_or_else(|| cli::OutputArgs::default().shell());
    let code = match run(args, &shell) {
        Ok(code) => code,
        Err(err) => {
            shell.error_chain(&err);
            exit_code_of(&err)
        }
    };
    // A signal received while the run was deferring it ends the process with its code,
    // whatever the run made of the stopped child.
    match crate::process::pending_signal() {
        Some(signal) if code != ExitCode::Interrupted(signal) => {
            shell.error(format!("stopped by {signal}"));
            ExitCode::Interrupted(signal).into()
        }
        _ => code.into(),
    }
}

/// Runs the parsed command line.
pub fn run(args: KprofArgs, shell: &Shell) -> Result<ExitCode> {
    match args.command {
        None => profile::profile(&args.profile, shell),
        Some(Command::List(a)) => list::list(&a, shell),
        Some(Command::Init(a)) => init::init(&a, shell),
        Some(Command::Import(a)) => import_report::import(&a, shell),
        Some(Command::Report(a)) => import_report::report(&a, shell),
        Some(Command::Doctor(a)) => doctor::doctor(a.manifest_path.as_deref(), a.sudo, shell),
        Some(Command::Archive(a)) => archive_run::archive(&a, shell),
        Some(Command::Run(a)) => archive_run::run(&a, shell),
        Some(Command::Explain(a)) => explain::explain(&a, shell),
        Some(Command::Compare(a)) => compare_check::compare(&a, shell),
        Some(Command::Check(a)) => compare_check::check(&a, shell),
        Some(Command::Merge(a)) => merge::merge(&a, shell),
    }
}

/// Prints one line per kernel verdict, then the report's path; with JSON messages, one
/// `analysed` object with the same.
fn print_verdicts(dir: &ProfileDir, decision: &BottleneckDecision, shell: &Shell) {
    if shell.is_json() {
        let kernels: Vec<_> = decision
            .kernels
            .iter()
            .map(|v| {
                serde_json::json!({
                    "kernel": v.kernel,
                    "classification": v.classification.name(),
                    "confidence": v.confidence.name(),
                    "rule": v.rule,
                    "limiter": v.limiter.as_ref().map(|l| l.id.as_str()),
                    "advice": v.limiter.as_ref().map(|l| l.advice_id.as_str()),
                })
            })
            .collect();
        shell.json(&serde_json::json!({
            "reason": "analysed",
            "profile_dir": dir.path(),
            "report": dir.final_report_path(),
            "kernels": kernels,
        }));
        return;
    }
    for v in &decision.kernels {
        match &v.limiter {
            // The cause and what to do first: the advice's first sentence carries the numbers.
            Some(l) => shell.out(format!(
                "{}: {}, {} ({} confidence): {}",
                v.kernel,
                v.classification.name(),
                l.id,
                v.confidence.name(),
                l.advice.split(": ").next().unwrap_or(&l.advice)
            )),
            None => shell.out(format!(
                "{}: {} ({} confidence{})",
                v.kernel,
                v.classification.name(),
                v.confidence.name(),
                v.rule.as_ref().map(|r| format!(", rule {r}")).unwrap_or_default()
            )),
        }
    }
    shell.out(format!("Report: {}", dir.final_report_path().display()));
}

/// Creates the workspace's profiles root when this run is the first to need it, and then
/// (only then) says so: kprof has just added a folder to the user's source tree.
fn create_profiles_root(root: &Path, shell: &Shell) -> Result<()> {
    if crate::profile::dir::create_profiles_root(root)? {
        shell.note(crate::profile::dir::profiles_root_created_note(root));
    }
    Ok(())
}

/// `cargo metadata` and the kprof configuration of the workspace; warnings are printed.
fn load_workspace(manifest_path: Option<&Path>, shell: &Shell) -> Result<(cargo_metadata::Metadata, Config)> {
    let cargo = build::cargo_binary();
    let metadata = build::metadata(&cargo, manifest_path, shell)?;
    let config = config::load(&metadata)?;
    for w in &config.warnings {
        shell.status(format!("warning: {w}"));
    }
    Ok((metadata, config))
}

/// `request` with the shard a Slurm job array or a Kubernetes Indexed Job names, when
/// `--partition` named none.
fn with_engine_shard(mut request: Request) -> Result<Request> {
    if request.partition.is_none() {
        request.partition = crate::model::partition::from_env(|k| std::env::var(k).ok())?;
    }
    Ok(request)
}

/// A shard that holds no kernel (the note said so): nothing is built or run, and the
/// profile root's index names the shard, so that `merge` sees it was run.
fn empty_shard(plan: &Plan, shell: &Shell) -> Result<ExitCode> {
    let partition = plan.partition.map(|p| p.to_string());
    if !plan.dry_run {
        crate::profile::dir::create_profiles_root(&plan.profile_root)?;
        crate::report::index::write_for_shard(&plan.profile_root, plan.partition)?;
        shell.status(format!("Index: {}", crate::profile::dir::index_md_path(&plan.profile_root).display()));
    }
    if shell.is_json() {
        shell.json(&serde_json::json!({
            "reason": "shard-empty",
            "partition": partition,
            "profile_root": plan.profile_root,
        }));
    }
    Ok(ExitCode::Success)
}
