//! `run_manifest.yaml`: what ran, why, and how each stage ended.
//!
//! Written whatever happens: every ending of a run (done, failed, timed out, stopped by a
//! signal, or never started because an earlier kernel's run ended the whole run) leaves
//! one with its status, the exit code and the message. Read back by compare and by the
//! tests that replay recorded runs. A dry run runs nothing and writes none.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::dir::ProfileDir;
use super::fs::write_atomic;
use crate::error::ExitCode;
use crate::model::kinds::{LaunchWindow, Privilege, WindowOrigin};
use crate::model::partition::Partition;
use crate::ncu::StageCollection;

/// How a stage (and so a run) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StageStatus {
    /// It ran and profiled what it was asked to.
    Ok,
    /// The kernel filter matched no launch in the window.
    NoMatch,
    /// ncu may not read the counters, or sudo refused.
    Permission,
    /// The program (or ncu) failed, or could not be started.
    TargetFailed,
    /// It ran past `--timeout` and was stopped.
    Timeout,
    /// A signal (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT) stopped it.
    Interrupted,
    /// ncu itself failed: killed by a signal, or it exited 0 without a readable page.
    NcuFailed,
    /// Something else ended the run (the analysis, a file that could not be written);
    /// the manifest's message says what.
    Failed,
    /// It never started: an earlier kernel's run ended the whole run.
    NotRun,
}

impl StageStatus {
    /// The spelling in `run_manifest.yaml`.
    pub fn name(self) -> &'static str {
        match self {
            StageStatus::Ok => "ok",
            StageStatus::NoMatch => "no-match",
            StageStatus::Permission => "permission",
            StageStatus::TargetFailed => "target-failed",
            StageStatus::Timeout => "timeout",
            StageStatus::Interrupted => "interrupted",
            StageStatus::NcuFailed => "ncu-failed",
            StageStatus::Failed => "failed",
            StageStatus::NotRun => "not-run",
        }
    }

    /// The status of a run that ended with `code`.
    pub fn of_exit(code: ExitCode) -> StageStatus {
        match code {
            ExitCode::Success => StageStatus::Ok,
            ExitCode::NoKernelMatched => StageStatus::NoMatch,
            ExitCode::Permission => StageStatus::Permission,
            ExitCode::TargetFailed => StageStatus::TargetFailed,
            ExitCode::Timeout => StageStatus::Timeout,
            ExitCode::Interrupted(_) => StageStatus::Interrupted,
            ExitCode::NcuFailed => StageStatus::NcuFailed,
            _ => StageStatus::Failed,
        }
    }
}

impl std::fmt::Display for StageStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One stage as it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageOutcome {
    /// The stage name.
    pub stage: String,
    /// Why it ran.
    pub why: String,
    /// The exact command.
    pub command: String,
    /// ncu's exit status (`None` when it was killed by a signal or did not start).
    pub exit_code: Option<i32>,
    /// Wall time of the ncu process, milliseconds.
    pub wall_ms: u64,
    /// Replay passes per profiled launch, as ncu reported them.
    pub passes: Vec<u32>,
    /// Launches profiled.
    pub launches: usize,
    /// How it ended.
    pub status: StageStatus,
    /// The raw CSV, relative to the profile directory.
    pub output: String,
    /// The last lines of ncu's and the target's output, for a failed stage only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

/// The launch window of a run: as planned, or as kprof fitted it to the program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowRecord {
    /// The window the last stages ran with.
    pub window: LaunchWindow,
    /// `default` (kprof's default for the runtime), `set` (manifests or command line), or
    /// `fitted` (the default skipped every launch; see `why`).
    pub origin: String,
    /// Why the window was fitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl WindowRecord {
    /// The window as planned.
    pub fn planned(window: LaunchWindow, origin: WindowOrigin) -> WindowRecord {
        let origin = match (window, origin) {
            (LaunchWindow::HarnessRange { .. }, _) => "harness",
            (_, WindowOrigin::Default) => "default",
            (_, WindowOrigin::Set) => "set",
        };
        WindowRecord { window, origin: origin.into(), why: None }
    }

    /// A window kprof fitted, and why.
    pub fn fitted(window: LaunchWindow, why: String) -> WindowRecord {
        WindowRecord { window, origin: "fitted".into(), why: Some(why) }
    }
}

/// `run_manifest.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunManifest {
    /// Always 1.
    pub schema_version: u32,
    /// The cargo-kprof version that ran.
    pub kprof_version: String,
    /// The kernel (hint).
    pub kernel: String,
    /// `none`, or `sudo` when ncu ran as `sudo -n <profile/ncu_path>`.
    #[serde(default)]
    pub privilege: Privilege,
    /// `ok`, or the status of the stage that stopped the run.
    pub status: StageStatus,
    /// The exit code this kernel's run ended with (see the table in docs/reference.md); absent only in
    /// manifests written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Why the run ended, when it did not end `ok`: the signal, the missing file, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The launch window the stages ran with, and where it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowRecord>,
    /// The stages, in order.
    pub stages: Vec<StageOutcome>,
    /// Wall time of kprof's own work between ncu runs (run total minus ncu), milliseconds.
    pub kprof_overhead_ms: u64,
    /// The shard of the selection this run belonged to (`--partition`, or a cluster
    /// engine's array index); absent when the selection was not split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<Partition>,
    /// The `LD_LIBRARY_PATH` the program ran with, when its environment (`--env`, or the
    /// configured `env`) set one: the shared libraries were checked with it before ncu ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ld_library_path: Option<String>,
    /// How `auto`'s follow-ups were planned in a batch (see `collect::planner`): the
    /// choice, its estimate and what the follow-up runs took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanRecord>,
}

/// The planner's choice for a batch's follow-ups, as each member's manifest records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanRecord {
    /// The choice and the numbers behind it.
    pub choice: String,
    /// The chosen runs' predicted wall time, ms.
    pub estimate_ms: u64,
    /// The other way's predicted wall time, ms, when there was a choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternative_ms: Option<u64>,
    /// What the follow-up runs took, ms (all of the batch's, as ncu ran them).
    pub follow_up_wall_ms: u64,
}

impl RunManifest {
    /// A manifest of a run of `kernel` that has run no stage yet.
    pub fn new(kernel: &str, privilege: Privilege) -> RunManifest {
        RunManifest {
            schema_version: 1,
            kprof_version: env!("CARGO_PKG_VERSION").to_string(),
            kernel: kernel.to_string(),
            privilege,
            status: StageStatus::Ok,
            exit_code: None,
            message: None,
            window: None,
            stages: Vec::new(),
            kprof_overhead_ms: 0,
            partition: None,
            ld_library_path: None,
            plan: None,
        }
    }

    /// Writes `run_manifest.yaml` into `dir`, atomically.
    pub fn write(&self, dir: &ProfileDir) -> Result<()> {
        let text = serde_yaml::to_string(self).context("could not serialise run_manifest.yaml")?;
        write_atomic(&dir.run_manifest_path(), &text)
    }

    /// Whether the run ended `ok` after its census, with no other stage: a plain
    /// program's census that left its picks, the first included, to one batch.
    pub fn census_only(&self) -> bool {
        self.status == StageStatus::Ok
            && !self.stages.is_empty()
            && self
                .stages
                .iter()
                .all(|s| s.stage == StageCollection::Discovery.name() && s.status == StageStatus::Ok)
    }

    /// The stages an earlier run recorded in `dir` (the census of the directory's first
    /// pick), or none.
    pub fn earlier_stages(dir: &ProfileDir) -> Vec<StageOutcome> {
        RunManifest::read(dir).map(|m| m.stages).unwrap_or_default()
    }

    /// Reads `run_manifest.yaml` from `dir`.
    pub fn read(dir: &ProfileDir) -> Result<RunManifest> {
        let path = dir.run_manifest_path();
        let text =
            std::fs::read_to_string(&path).with_context(|| format!("could not read {}", path.display()))?;
        serde_yaml::from_str(&text).with_context(|| format!("invalid {}", path.display()))
    }
}
