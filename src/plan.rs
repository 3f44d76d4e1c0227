//! Resolving the command line and the manifests into one [`Plan`].
//!
//! Everything is decided here, before any process starts: which kernels, which
//! targets to build, each kernel's filter, launch window, stages, environment and
//! working directory. Later steps only carry the plan out, and `--dry-run` shows it.
//!
//! This file holds the types: the typed [`Request`] the command line becomes, and the
//! [`Plan`] it resolves into, with domain values only (a compiled [`KernelFilter`], a
//! [`StagePlan`], [`GpuId`]s), never clap structs or raw strings. The resolution itself
//! is in `plan/resolve.rs`; spreading over GPUs, shards and finding a target's package
//! each have their own file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kprof_contract::env as contract;

use crate::build::{BuildRequest, BuildTarget, Features};
use crate::config::{CargoTargetKind, Privilege, Runtime};
use crate::error::{ExitCode, Failure};
use crate::model::filter::{KernelFilter, KernelHint};
use crate::model::kinds::WindowOrigin;
use crate::model::partition::{Partition, Shard};
use crate::model::stage::StageSelection;
use crate::ncu::{ClockControl, LaunchWindow, StageCollection};

/// What kprof will do, fully resolved.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The workspace root; `profile/` lives here.
    pub workspace_root: PathBuf,
    /// Where profile directories are created (`<workspace root>/profile`).
    pub profile_root: PathBuf,
    /// The one build of every cargo target the kernels need; `None` when none do.
    pub build: Option<BuildRequest>,
    /// Folders besides the workspace where sources ncu could not open are looked for by
    /// path suffix: an unpacked archive's `deps/`.
    pub source_roots: Vec<PathBuf>,
    /// Source files by the name line info gives them, where they are here: an unpacked
    /// archive's dependency sources.
    pub source_map: BTreeMap<String, PathBuf>,
    /// The kernels, in selection order.
    pub kernels: Vec<KernelPlan>,
    /// `--output-dir`: the profile directory (one kernel) or its parent (several).
    pub output_dir: Option<PathBuf>,
    /// `--dry-run`.
    pub dry_run: bool,
    /// `--timeout`: the longest one ncu run may take.
    pub timeout: Option<std::time::Duration>,
    /// Harness kernels of one program share one ncu run per stage (`--no-batch`: each
    /// kernel alone).
    pub batch: bool,
    /// The GPUs the kernels are spread over, one worker each (`--gpus`, `--jobs`); empty:
    /// one worker, on whatever GPU the program picks.
    pub gpus: Vec<GpuId>,
    /// Notes for the user about choices made (ignored options, defaults taken).
    pub notes: Vec<String>,
    /// The shard of the selection this plan holds, when the selection was split.
    pub partition: Option<Partition>,
    /// The tracing census's injection library an unpacked archive carries; `None`: the
    /// one built with cargo on first use (see `ops::profile::tracer`).
    pub tracer: Option<PathBuf>,
}

/// What the command line asks for, already typed: the input of [`resolve`].
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `-p`: packages to select from.
    pub packages: Vec<String>,
    /// `archive -o FILE`: a selection that finds nothing configured offers to pack a
    /// target (`cargo kprof archive --bin NAME -o FILE`) rather than to profile it.
    pub pack_to: Option<PathBuf>,
    /// `--workspace`: every configured kernel.
    pub workspace: bool,
    /// `--bench/--example/--bin NAME`.
    pub target: Option<(CargoTargetKind, String)>,
    /// Feature selection.
    pub features: Features,
    /// `--profile`.
    pub profile: String,
    /// `--target-dir`.
    pub target_dir: Option<PathBuf>,
    /// `--kernel` hints.
    pub kernels: Vec<KernelHint>,
    /// `--kernel-regex`.
    pub kernel_regex: Option<String>,
    /// `--index`.
    pub index: Option<usize>,
    /// `--stages`, or `--set`/`--sections` as one custom stage.
    pub stages: Option<StagePlan>,
    /// `--launch-skip`.
    pub launch_skip: Option<u32>,
    /// `--launch-count`.
    pub launch_count: Option<u32>,
    /// `--env` pairs.
    pub envs: Vec<(String, String)>,
    /// `--clock-control`.
    pub clock_control: Option<ClockControl>,
    /// `--output-dir`.
    pub output_dir: Option<PathBuf>,
    /// `--timeout`.
    pub timeout: Option<std::time::Duration>,
    /// `--dry-run`.
    pub dry_run: bool,
    /// `--no-batch`.
    pub no_batch: bool,
    /// `--gpus LIST` / `--jobs N`: the GPUs to spread the kernels over.
    pub gpus: Vec<GpuId>,
    /// `--sudo`.
    pub sudo: bool,
    /// `-- BENCH_ARGS`.
    pub bench_args: Vec<String>,
    /// `--partition`, or the shard a cluster engine's array index names.
    pub partition: Option<Shard>,
    /// `--top`/`--min-share`, `--census-launches`, `--nvtx-include`, `--profiler-range`.
    pub census: crate::model::census::CensusPlan,
}

/// The program a kernel is profiled in.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PlannedTarget {
    /// A cargo target, built by [`Plan::build`].
    Cargo(BuildTarget),
    /// Any program, run as given (`command = [...]`).
    Command(Vec<String>),
}

/// Which stages, or the compatibility `--set`/`--sections` request.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum StagePlan {
    /// Our stages.
    Stages(StageSelection),
    /// One stage collecting exactly what the user asked ncu for.
    Custom(CustomStage),
}

/// `--set`/`--sections`: one stage collecting exactly what the user asked ncu for. Kept
/// in a plan's JSON as the ncu collection it is (`{"Custom": {"set": .., "sections":
/// [..]}}`, as before); any other collection there is refused.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(into = "StageCollection", try_from = "StageCollection")]
pub struct CustomStage {
    /// `--set NAME`, if any.
    pub set: Option<String>,
    /// `--sections`.
    pub sections: Vec<String>,
}

impl CustomStage {
    /// The ncu collection of this stage.
    pub fn collection(&self) -> StageCollection {
        StageCollection::Custom { set: self.set.clone(), sections: self.sections.clone() }
    }
}

impl From<CustomStage> for StageCollection {
    fn from(c: CustomStage) -> Self {
        StageCollection::Custom { set: c.set, sections: c.sections }
    }
}

impl TryFrom<StageCollection> for CustomStage {
    type Error = String;
    fn try_from(c: StageCollection) -> Result<Self, String> {
        match c {
            StageCollection::Custom { set, sections } => Ok(CustomStage { set, sections }),
            other => Err(format!("a custom stage is --set/--sections, not the {} stage", other.label())),
        }
    }
}

impl StagePlan {
    /// Whether kprof chooses the stages: `basic` and `source`, then the follow-up basic's
    /// metrics call for.
    pub fn is_auto(&self) -> bool {
        matches!(self, StagePlan::Stages(StageSelection::Auto))
    }
}

/// One kernel to profile.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct KernelPlan {
    /// The kernel's name or hint; the profile directory id starts with it.
    pub name: String,
    /// Where it was configured (`[[package.metadata.kprof.kernels]] #2 (name = "x")` in
    /// a manifest), or `None` for an ad-hoc command-line selection.
    pub configured_at: Option<String>,
    /// The package, for cargo targets.
    pub package: Option<String>,
    /// The program.
    pub target: PlannedTarget,
    /// How the program launches the kernel.
    pub runtime: Runtime,
    /// Arguments for the program (configured ones, then `-- BENCH_ARGS`).
    pub args: Vec<String>,
    /// Environment for the program (configured, then `--env`), without the harness contract.
    pub env: BTreeMap<String, String>,
    /// The working directory (the package root, as `cargo bench` uses).
    pub cwd: PathBuf,
    /// The ncu kernel filter; `None` means discovery (no hint was given).
    pub filter: Option<KernelFilter>,
    /// The harness case regex (`KPROF_CASE`), for harness targets.
    pub case: Option<String>,
    /// Which launches are profiled.
    pub window: LaunchWindow,
    /// Whether the window is kprof's default (fitted to the program when it would skip
    /// every launch) or was set.
    #[serde(default)]
    pub window_origin: WindowOrigin,
    /// Which stages.
    pub stages: StagePlan,
    /// ncu clock control.
    pub clock_control: ClockControl,
    /// Tolerance for comparisons, percent.
    pub tolerance_pct: f64,
    /// How ncu is started: directly, or `sudo -n` on `profile/ncu_path`.
    #[serde(default)]
    pub privilege: Privilege,
    /// The shard it was profiled in, when the selection was split (`--partition`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<Partition>,
    /// Stages collected besides the selection, after its first stages: an A/B check adds
    /// `counters` (its second signal) and `source` (the hot line of each side).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_stages: Vec<crate::model::stage::Stage>,
    /// How a census of the program (no hint: which kernels take the time) is bounded
    /// and read; its NVTX and profiler ranges also bound the stages.
    #[serde(default, skip_serializing_if = "crate::model::census::CensusPlan::is_default")]
    pub census: crate::model::census::CensusPlan,
    /// The folder of NVRTC output this invocation's harness runs share, once the caller
    /// that owns it set one (see [`crate::profile::ptx_cache`]); never stored.
    #[serde(skip)]
    pub ptx_cache: Option<PathBuf>,
}

impl KernelPlan {
    /// The stages to run before any metric is known: discovery when there is no filter
    /// yet, else basic and source for `auto` (the follow-up comes after basic), every stage
    /// but `full` for `all`, or the list.
    pub fn initial_collections(&self) -> Vec<StageCollection> {
        if self.filter.is_none() {
            return vec![StageCollection::Discovery];
        }
        self.stage_collections()
    }

    /// A kernel plan for tests: `name` in `target`, run as `runtime`, its filter the hint
    /// `name` and its case `name`, in `/ws`, `auto` stages, the runtime's default window,
    /// nothing else set. Tests change the fields they are about.
    #[cfg(test)]
    pub fn synthetic(name: &str, target: PlannedTarget, runtime: Runtime) -> KernelPlan {
        KernelPlan {
            name: name.into(),
            configured_at: None,
            package: None,
            target,
            runtime,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: "/ws".into(),
            filter: Some(KernelFilter::containing(name)),
            case: Some(name.into()),
            window: match runtime {
                Runtime::Harness => LaunchWindow::HarnessRange { launch_count: 1 },
                _ => LaunchWindow::SkipCount { launch_skip: 5, launch_count: 3 },
            },
            window_origin: WindowOrigin::Default,
            stages: StagePlan::Stages(StageSelection::Auto),
            clock_control: ClockControl::None,
            tolerance_pct: 2.0,
            privilege: Privilege::None,
            partition: None,
            extra_stages: Vec::new(),
            census: Default::default(),
            ptx_cache: None,
        }
    }

    /// Whether this kernel's source page is imported from basic's report
    /// ([`crate::ncu::command::source_from_basic`]).
    pub fn source_from_basic(&self) -> bool {
        crate::ncu::command::source_from_basic(&self.stage_collections())
    }

    /// The stages to run for a known kernel (after discovery, if any): the selection's,
    /// the extra ones, then `auto`'s hot lines.
    pub fn stage_collections(&self) -> Vec<StageCollection> {
        let mut stages = self.requested_collections();
        let auto_extras = match self.stages.is_auto() {
            true => crate::ncu::stages::auto_first_stages(),
            false => Vec::new(),
        };
        for extra in self.extra_stages.iter().chain(&auto_extras).map(|s| StageCollection::Named(*s)) {
            if !stages.contains(&extra) {
                stages.push(extra);
            }
        }
        stages
    }

    fn requested_collections(&self) -> Vec<StageCollection> {
        use crate::model::stage::Stage;
        match &self.stages {
            StagePlan::Custom(c) => vec![c.collection()],
            // Basic; its hot lines come after the extra stages (see `stage_collections`).
            StagePlan::Stages(StageSelection::Auto) => vec![StageCollection::Named(Stage::Basic)],
            StagePlan::Stages(StageSelection::All) => Stage::ALL
                .into_iter()
                .filter(|s| !matches!(s, Stage::Full | Stage::Counters))
                .map(StageCollection::Named)
                .collect(),
            StagePlan::Stages(StageSelection::List(l)) => {
                l.iter().copied().map(StageCollection::Named).collect()
            }
        }
    }

    /// The environment the profiled program gets under ncu: its own, plus the harness
    /// contract (`KPROF_PROFILE`, `KPROF_CASE`, `KPROF_LAUNCH_COUNT`) for harness targets.
    pub fn profiling_env(&self) -> BTreeMap<String, String> {
        let mut env = self.env.clone();
        if let (Runtime::Harness, LaunchWindow::HarnessRange { launch_count }) = (self.runtime, self.window) {
            env.insert(contract::PROFILE.into(), "1".into());
            env.insert(contract::LAUNCH_COUNT.into(), launch_count.to_string());
            if let Some(case) = &self.case {
                env.insert(contract::CASE.into(), case.clone());
            }
        }
        env
    }
}

pub use crate::model::window::{defaults, window_for};
mod gpus;
mod resolve;
mod shard;
mod targets;

pub use gpus::{gpu_list, GpuId, GpuList, VISIBLE_DEVICES};
pub use resolve::resolve;
pub use shard::apply_shard;

/// The `--kernel-regex` filter, compiled once; a regex that is not one is refused (exit 3),
/// naming it.
pub fn kernel_regex_filter(re: &str) -> Result<KernelFilter, Failure> {
    KernelFilter::try_regex(re).map_err(|e| {
        Failure::new(ExitCode::Config, format!("--kernel-regex `{re}` is not a valid regex: {}", e.error))
            .help("escape metacharacters, e.g. --kernel-regex 'gemm\\(.*\\)'")
    })
}

/// Refuses a `--kernel-regex` that is not a valid regex (exit 3), naming it.
pub fn check_kernel_regex(re: &str) -> Result<(), Failure> {
    kernel_regex_filter(re).map(|_| ())
}

/// `path` made absolute against the current directory, once, here: every later step may
/// run in another directory.
pub fn absolute(path: &Path) -> Result<PathBuf, Failure> {
    std::path::absolute(path).map_err(|e| {
        Failure::new(ExitCode::Config, format!("cannot make {} an absolute path: {e}", path.display()))
            .help("pass an absolute path")
    })
}

fn package_dir(manifest_path: &Path) -> PathBuf {
    manifest_path.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The configured environment with the `--env` pairs on top.
pub fn merged_env(
    configured: &BTreeMap<String, String>,
    cli: &[(String, String)],
) -> BTreeMap<String, String> {
    let mut env = configured.clone();
    env.extend(cli.iter().cloned());
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--set`/`--sections` in an archived plan's JSON read as they always have, and a
    /// plan whose custom stage is any other collection (never written) is refused.
    #[test]
    fn a_custom_stage_keeps_its_json_and_holds_only_set_and_sections() {
        let custom = CustomStage { set: Some("full".into()), sections: vec!["SourceCounters".into()] };
        let as_before = serde_json::json!({
            "Custom": serde_json::to_value(StageCollection::Custom {
                set: Some("full".into()),
                sections: vec!["SourceCounters".into()],
            })
            .unwrap()
        });
        assert_eq!(serde_json::to_value(StagePlan::Custom(custom.clone())).unwrap(), as_before);
        assert_eq!(serde_json::from_value::<StagePlan>(as_before).unwrap(), StagePlan::Custom(custom));
        let other =
            serde_json::json!({ "Custom": serde_json::to_value(StageCollection::Discovery).unwrap() });
        let err = serde_json::from_value::<StagePlan>(other).unwrap_err().to_string();
        assert!(err.contains("a custom stage is --set/--sections, not the discovery stage"), "{err}");
    }
}
