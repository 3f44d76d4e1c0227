//! Harness timings without ncu: the measurement `cargo kprof check` gates on.
//!
//! The profiled program is run as it is for profiling, minus the profiling window
//! (`KPROF_PROFILE`, `KPROF_LAUNCH_COUNT`), with `KPROF_RESULT` pointing at
//! `details/timing.json` and `KPROF_QUIET=1`. The harness then times every selected case
//! until its noise target is met and writes its JSON result (see the harness' `report`
//! module). Only harness targets have timings; for other runtimes the gate compares ncu's
//! duration.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use kprof_contract::env as contract;

use super::prepare::PreparedKernel;
use kprof_contract::ResultFile;

use crate::error::{ExitCode, Failure};
use crate::events::Event;
use crate::model::kinds::Runtime;
use crate::ncu::TargetCommand;
use crate::process::{self, tail_lines, Ending, ProcessBuilder, RunOptions};
use crate::shell::Shell;

pub use crate::model::timing::TimingFacts;

/// The command that times `target`, writing the harness result to `result`.
pub fn timing_command(target: &TargetCommand, result: &Path) -> ProcessBuilder {
    let mut cmd = ProcessBuilder::new(&target.program);
    cmd.args(&target.args).cwd(&target.cwd);
    for (k, v) in &target.env {
        if k != contract::PROFILE && k != contract::LAUNCH_COUNT {
            cmd.env(k, v);
        }
    }
    cmd.env(contract::RESULT, result.to_string_lossy()).env(contract::QUIET, "1");
    target.pass_ptx_cache(&mut cmd);
    cmd
}

/// Runs the timing; on success the harness has written `result`. It runs like an ncu
/// stage (through [`process::run`]): in its own process group, stopped as a whole by
/// `--timeout` or a signal.
pub fn run_timing(
    target: &TargetCommand,
    result: &Path,
    timeout: Option<Duration>,
    shell: &Shell,
) -> Result<Duration> {
    let cmd = timing_command(target, result);
    let done = process::run(&cmd, RunOptions { timeout, ..Default::default() }, shell);
    let (ending, console) = (&done.ending, done.console());
    let no_result = format!(" and wrote no {}", result.display());
    let failed = |code: ExitCode, what: String| -> anyhow::Error {
        Failure::new(code, what).help(format!("the command was: {}", cmd.command_line())).into()
    };
    match ending {
        Ending::TimedOut => Err(failed(
            ExitCode::Timeout,
            format!("the timing run of {} ran past --timeout and was stopped", target.program.display()),
        )),
        Ending::Interrupted(signal) => Err(process::interrupted(*signal, "during the timing run").into()),
        Ending::NotStarted(msg) => Err(failed(ExitCode::TargetFailed, msg.clone())),
        Ending::Exited(s) if !s.success() || !result.is_file() => Err(failed(
            ExitCode::TargetFailed,
            format!(
                "the timing run failed ({}){}; {}",
                process::describe_status(s),
                if result.is_file() { "" } else { &no_result },
                match tail_lines(&console, 20) {
                    t if t.trim().is_empty() => "it printed nothing".to_string(),
                    t => format!("what it printed last:\n{t}"),
                }
            ),
        )),
        Ending::Exited(_) => Ok(done.wall),
    }
}

/// Times a harness kernel without ncu into `details/timing.json`, and adds the command to
/// `commands.sh`. Other runtimes have no timing; the gate then compares ncu's duration.
pub fn time_kernel(
    p: &PreparedKernel<'_>,
    timeout: Option<Duration>,
    timing_only: bool,
    shell: &Shell,
) -> Result<()> {
    if p.kernel.runtime != Runtime::Harness {
        shell.emit(&Event::NoTiming { kernel: p.kernel.name.clone() });
        return Ok(());
    }
    let result = p.dir.timing_path();
    let cmd = timing_command(&p.target, &result);
    let mut script = std::fs::read_to_string(p.dir.commands_script_path()).unwrap_or_default();
    if timing_only {
        script.push_str("\n# check --timing-only: only this line ran (no ncu stage above ran)\n");
    } else {
        script.push_str("\n# Timing, without ncu (the gate compares it)\n");
    }
    script.push_str(&cmd.command_line());
    script.push('\n');
    crate::profile::fs::write_atomic(&p.dir.commands_script_path(), &script)?;
    shell.emit(&Event::TimingStarted { kernel: p.kernel.name.clone() });
    run_timing(&p.target, &result, timeout, shell)?;
    let doc: Option<ResultFile> = crate::profile::fs::read_json(&result)?;
    if let Some(t) = doc.as_ref().and_then(|d| TimingFacts::of(d, p.kernel.case.as_deref())) {
        let (lo, hi) = t.interval();
        shell.emit(&Event::TimingDone {
            kernel: p.kernel.name.clone(),
            case: t.case.clone(),
            mode: t.mode.clone(),
            median_ns: t.median_ns,
            samples: t.samples,
            interval_ns: (lo, hi),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(median: f64, n: usize, noise: f64) -> TimingFacts {
        TimingFacts {
            case: "k/x=1".into(),
            mode: "hot".into(),
            median_ns: median,
            samples: n,
            rel_noise: noise,
        }
    }

    #[test]
    fn the_interval_narrows_with_samples() {
        let (lo, hi) = timing(1000.0, 100, 0.01).interval();
        assert!((hi - lo - 2.0 * 1000.0 * 1.96 * 1.2533 * 0.01 / 10.0).abs() < 1e-9);
        let (lo4, hi4) = timing(1000.0, 400, 0.01).interval();
        assert!((hi4 - lo4) * 2.0 - (hi - lo) < 1e-9);
    }

    #[test]
    fn timing_drops_the_profiling_window_and_asks_for_a_result() {
        let mut env = std::collections::BTreeMap::new();
        for (k, v) in
            [("KPROF_PROFILE", "1"), ("KPROF_LAUNCH_COUNT", "1"), ("KPROF_CASE", "hgemm_tiled"), ("A", "b")]
        {
            env.insert(k.to_string(), v.to_string());
        }
        let target = TargetCommand {
            program: "/bin/hgemm".into(),
            args: vec!["--x".into()],
            env,
            cwd: "/ws".into(),
            ptx_cache: None,
        };
        let cmd = timing_command(&target, Path::new("/p/details/timing.json"));
        let envs = cmd.get_envs();
        assert!(!envs.contains_key("KPROF_PROFILE") && !envs.contains_key("KPROF_LAUNCH_COUNT"));
        assert_eq!(envs["KPROF_CASE"], "hgemm_tiled");
        assert_eq!(envs["KPROF_RESULT"], "/p/details/timing.json");
        assert_eq!(envs["KPROF_QUIET"], "1");
        assert_eq!(cmd.get_args(), ["--x"]);
    }

    #[test]
    fn a_failing_program_is_reported_with_its_output() {
        let tmp = tempfile::tempdir().unwrap();
        let target = TargetCommand {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), "echo boom >&2; exit 3".into()],
            env: Default::default(),
            cwd: tmp.path().to_path_buf(),
            ptx_cache: None,
        };
        let err = run_timing(&target, &tmp.path().join("t.json"), None, &Shell::quiet()).unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("boom") && text.contains("exit code 3"), "{text}");
        assert_eq!(crate::error::exit_code_of(&err), ExitCode::TargetFailed);
    }
}
