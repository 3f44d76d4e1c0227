//! Running the stages: one ncu run per stage, `basic` first, then (for `auto`) the one
//! follow-up the rules choose from basic's metrics.
//!
//! Each run writes its CSV through `--log-file` into `details/`; the target's own output
//! is kept only when a stage fails, in `run_manifest.yaml`. ncu exits 0 when the filter
//! matches nothing, so every log is read for that, and for the counter-permission error,
//! before the next stage starts. Under `--sudo` the output is also read for sudo's
//! refusal (`sudo: a password is required`), which stops the run the same way, with
//! exit code 7. ncu exiting 0 without a readable page (no file, an empty one, something
//! else), or killed by a signal, stops it with exit code 13 and the file or signal named.
//! The manifest is written whatever happens ([`collect`] writes the stages as they end,
//! [`record_ending`] the exit code and message of every ending), so a failed, partial or
//! interrupted run still says what ran, why, and how it ended.
//!
//! The stage loop is a small state machine, written once: `queue` runs the front stage
//! of a queue through a unit and follows the `Next` its handler returns (done, more
//! stages, the stage again, a failure). The units are one kernel (`single`, with the
//! corrections of `adapt`) and a batch of kernels ([`batch`], its source page split by
//! `source_split`); both run a stage through `run` (one ncu run and how it ended) and
//! say why it runs with a `Reason`, whose words are the ones the manifest, `commands.sh`
//! and the progress lines show.

mod adapt;
pub mod batch;
pub mod discover;
pub mod environment;
mod failure;
mod follow_up;
pub mod planner;
pub mod prepare;
mod queue;
mod reason;
pub mod rounds;
mod run;
mod single;
mod source_split;
pub mod timing;
pub mod trace;
pub mod traced;
pub mod window;

pub use run::KernelRun;
// The timing rounds append to `commands.sh` the way the stages do.
use run::append_command;

use std::time::Instant;

use anyhow::Result;

use crate::analyze::rules::Rules;
use crate::error::{exit_code_of, ExitCode, Failure};
use crate::plan::KernelPlan;
use crate::profile::{ProfileDir, RunManifest, StageStatus};
use crate::shell::Shell;

/// Runs the stages of one kernel, reporting each step through `shell`; a program's census
/// is taken the `census` way where it can be (see [`traced`]). The manifest is written
/// when the stages end, however they end.
pub fn collect(
    run: &KernelRun<'_>,
    census: &traced::CensusWay,
    rules: &Rules,
    shell: &Shell,
) -> Result<RunManifest> {
    let started = Instant::now();
    let (mut unit, first) = single::Single::new(run, rules, shell);
    let result = unit.start_with(census, first).and_then(|first| queue::drive(&mut unit, first));
    let mut manifest = unit.manifest;
    manifest.kprof_overhead_ms = (started.elapsed().as_millis() as u64).saturating_sub(unit.ncu_ms);
    manifest.write(run.dir)?;
    result.map(|()| manifest)
}

/// Records how the run of `kernel` ended in its `run_manifest.yaml`: the exit code, the
/// message of a failure, and a status when the stages ended `ok` but the run did not
/// (the timing run, the analysis, a signal between stages). A run that never reached
/// the stages gets a manifest with none.
pub fn record_ending(dir: &ProfileDir, kernel: &KernelPlan, end: Result<(), &anyhow::Error>) -> Result<()> {
    let code = end.map_or_else(exit_code_of, |()| ExitCode::Success);
    let mut manifest =
        RunManifest::read(dir).unwrap_or_else(|_| RunManifest::new(&kernel.name, kernel.privilege));
    if manifest.status == StageStatus::Ok {
        manifest.status = StageStatus::of_exit(code);
    }
    manifest.exit_code = Some(code.code());
    manifest.partition = kernel.partition;
    manifest.message = end.err().map(|e| {
        let failure = e.chain().find_map(|c| c.downcast_ref::<Failure>());
        failure.map_or_else(|| format!("{e:#}"), |f| f.message.clone())
    });
    manifest.write(dir)
}

/// Records that `kernel` was never run: an earlier kernel's run ended the whole run with
/// `code`.
pub fn record_not_run(dir: &ProfileDir, kernel: &KernelPlan, code: ExitCode) -> Result<()> {
    let mut manifest = RunManifest::new(&kernel.name, kernel.privilege);
    manifest.status = StageStatus::NotRun;
    manifest.exit_code = Some(code.code());
    manifest.partition = kernel.partition;
    manifest.message = Some(format!("not run: an earlier kernel's run ended the run ({})", code.name()));
    manifest.write(dir)
}
