//! Resolving the command line and the manifests into one [`Plan`].
//!
//! Everything is decided here, before any process starts: which kernels, which
//! targets to build, each kernel's filter, launch window, stages, environment and
//! working directory. Later steps only carry the plan out, and `--dry-run` shows it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Result;
use cargo_metadata::Metadata;
use kprof_contract::env as contract;

use crate::build::{BuildRequest, BuildTarget, Features};
use crate::config::{self, CargoTargetKind, Config, KernelEntry, KernelTarget, Privilege, Runtime};
use crate::error::{ExitCode, Failure};
use crate::model::filter::KernelFilter;
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
    pub gpus: Vec<String>,
    /// Notes for the user about choices made (ignored options, defaults taken).
    pub notes: Vec<String>,
    /// The shard of the selection this plan holds, when the selection was split.
    pub partition: Option<Partition>,
}

/// What the command line asks for, already typed: the input of [`resolve`].
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `-p`: packages to select from.
    pub packages: Vec<String>,
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
    pub kernels: Vec<String>,
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
    pub gpus: Vec<String>,
    /// `--sudo`.
    pub sudo: bool,
    /// `-- BENCH_ARGS`.
    pub bench_args: Vec<String>,
    /// `--partition`, or the shard a cluster engine's array index names.
    pub partition: Option<Shard>,
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
    Custom(StageCollection),
}

impl StagePlan {
    /// Whether kprof chooses the stages: `basic`, then the follow-up its metrics call for.
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
}

impl KernelPlan {
    /// The stages to run before any metric is known: discovery when there is no filter
    /// yet, else basic for `auto`, every stage but `full` for `all`, or the list.
    pub fn initial_collections(&self) -> Vec<StageCollection> {
        if self.filter.is_none() {
            return vec![StageCollection::Discovery];
        }
        self.stage_collections()
    }

    /// The stages to run for a known kernel (after discovery, if any).
    pub fn stage_collections(&self) -> Vec<StageCollection> {
        let mut stages = self.requested_collections();
        for extra in self.extra_stages.iter().map(|s| StageCollection::Named(*s)) {
            if !stages.contains(&extra) {
                stages.push(extra);
            }
        }
        stages
    }

    fn requested_collections(&self) -> Vec<StageCollection> {
        use crate::model::stage::Stage;
        match &self.stages {
            StagePlan::Custom(c) => vec![c.clone()],
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

pub use crate::model::window::{defaults, window_for, window_origin};
mod gpus;
mod shard;
mod targets;

pub use gpus::{gpu_list, VISIBLE_DEVICES};
pub use shard::apply_shard;
use targets::target_package;

/// Resolves the profile command line against the workspace's metadata and configuration.
pub fn resolve(args: &Request, metadata: &Metadata, config: &Config, cargo: OsString) -> Result<Plan> {
    // The regex first: whatever else is wrong with the selection, this is named.
    if let Some(re) = &args.kernel_regex {
        check_kernel_regex(re)?;
    }

    let packages = &args.packages;
    let mut notes = Vec::new();
    let mut kernels = Vec::new();

    let explicit_target = args.target.as_ref().map(|(kind, name)| (*kind, name));
    // A selection that finds nothing configured also offers the targets the workspace has.
    let configured_here = config.kernels.iter().any(|k| packages.is_empty() || packages.contains(&k.package));
    let unconfigured = |f: Failure, hint: Option<&str>| match configured_here {
        true => f,
        false => crate::config::targets::offer_direct_forms(f, metadata, packages, hint),
    };

    if let Some(index) = args.index {
        kernels.push(from_entry(config.select_by_index(index, packages)?, None, args, &mut notes)?);
    } else if let Some((kind, name)) = explicit_target {
        let package = target_package(metadata, packages, kind, name)?;
        let hints: Vec<Option<&String>> =
            if args.kernels.is_empty() { vec![None] } else { args.kernels.iter().map(Some).collect() };
        for hint in hints {
            // A configured entry for this very target and hint keeps its settings.
            let configured = hint.and_then(|h| {
                config.kernels.iter().find(|k| {
                    k.package == package
                        && k.name == *h
                        && k.target == KernelTarget::Cargo { kind, name: name.clone() }
                })
            });
            match configured {
                Some(entry) => kernels.push(from_entry(entry, hint.map(String::as_str), args, &mut notes)?),
                None => kernels.push(ad_hoc(
                    metadata,
                    config,
                    &package,
                    kind,
                    name,
                    hint.map(String::as_str),
                    args,
                    &mut notes,
                )?),
            }
        }
    } else if !args.kernels.is_empty() {
        for hint in &args.kernels {
            let entry = config.select_by_hint(hint, packages).map_err(|f| unconfigured(f, Some(hint)))?;
            kernels.push(from_entry(entry, Some(hint), args, &mut notes)?);
        }
    } else {
        let listed = config.listing(packages).map_err(|f| unconfigured(f, None))?;
        if listed.is_empty() {
            return Err(unconfigured(config.nothing_configured(packages), None).into());
        }
        if listed.len() > 1 && !args.workspace && packages.is_empty() {
            let names: Vec<String> =
                listed.iter().map(|l| format!("#{} {}", l.index, l.kernel.name)).collect();
            return Err(Failure::new(ExitCode::Config, "no kernel selected")
                .help(format!("configured kernels: {}", names.join(", ")))
                .help("pick one with --kernel NAME or --index N, or profile them all with --workspace")
                .into());
        }
        for l in listed {
            kernels.push(from_entry(l.kernel, None, args, &mut notes)?);
        }
    }

    if let Some(shard) = &args.partition {
        kernels = apply_shard(shard, kernels, &mut notes);
    }
    let cargo_targets: Vec<BuildTarget> = {
        let mut t: Vec<BuildTarget> = kernels
            .iter()
            .filter_map(|k| match &k.target {
                PlannedTarget::Cargo(t) => Some(t.clone()),
                PlannedTarget::Command(_) => None,
            })
            .collect();
        t.sort();
        t.dedup();
        t
    };
    let build = if cargo_targets.is_empty() {
        None
    } else {
        let base = match &args.target_dir {
            Some(d) => absolute(d)?,
            None => metadata.target_directory.clone().into(),
        };
        Some(BuildRequest {
            cargo,
            manifest_path: config.workspace_manifest_path.clone(),
            target_dir: base.join("kprof"),
            profile: args.profile.clone(),
            features: args.features.clone(),
            targets: cargo_targets,
            user_nvcc_append_flags: std::env::var("NVCC_APPEND_FLAGS").ok(),
        })
    };
    if let Some(b) = &build {
        if let Some(flags) = &b.user_nvcc_append_flags {
            if crate::build::has_device_debug_flag(flags) {
                notes.push(format!(
                    "NVCC_APPEND_FLAGS contains -G ({flags}): device debug code is unoptimised, so the profile \
                     will not show release behaviour; remove -G (kprof adds -lineinfo for source mapping)"
                ));
            }
        }
    }
    if let Some(StagePlan::Custom(StageCollection::Custom { set: Some(set), sections })) = &args.stages {
        if !sections.is_empty() {
            notes.push(format!(
                "--set {set} and --sections {} both apply: ncu collects the set's sections and these",
                sections.join(",")
            ));
        }
    }

    // Checked now, not after minutes of compilation; absolute, because ncu and the
    // program run in the package directory, not in the caller's.
    let output_dir = args.output_dir.as_deref().map(absolute).transpose()?;
    if let Some(d) = &output_dir {
        crate::profile::output::check_output_dir(d, kernels.len() > 1)?;
    }

    let mut plan = Plan {
        workspace_root: config.workspace_root.clone(),
        profile_root: crate::profile::dir::profiles_root(&config.workspace_root),
        build,
        kernels,
        output_dir,
        dry_run: args.dry_run,
        timeout: args.timeout,
        batch: !args.no_batch,
        gpus: Vec::new(),
        notes,
        partition: args.partition.as_ref().map(|s| s.partition),
    };
    plan.assign_gpus(&args.gpus);
    Ok(plan)
}

/// Refuses a `--kernel-regex` that is not a valid regex (exit 3), naming it.
pub fn check_kernel_regex(re: &str) -> Result<(), Failure> {
    regex::Regex::new(re).map(|_| ()).map_err(|e| {
        Failure::new(ExitCode::Config, format!("--kernel-regex `{re}` is not a valid regex: {e}"))
            .help("escape metacharacters, e.g. --kernel-regex 'gemm\\(.*\\)'")
    })
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

/// A plan for a configured kernel, with command-line overrides applied.
fn from_entry(
    entry: &KernelEntry,
    hint: Option<&str>,
    args: &Request,
    notes: &mut Vec<String>,
) -> Result<KernelPlan> {
    let (target, mut program_args, package) = match &entry.target {
        KernelTarget::Cargo { kind, name } => (
            PlannedTarget::Cargo(BuildTarget {
                package: entry.package.clone(),
                kind: *kind,
                name: name.clone(),
            }),
            Vec::new(),
            Some(entry.package.clone()),
        ),
        KernelTarget::Command(words) => (PlannedTarget::Command(words.clone()), Vec::new(), None),
    };
    program_args.extend(entry.args.iter().cloned());
    program_args.extend(args.bench_args.iter().cloned());
    let filter = match (&args.kernel_regex, hint) {
        (Some(re), _) => KernelFilter::regex(re.clone()),
        (None, Some(h)) if crate::model::filter::parse_hint(h).0 != entry.name => KernelFilter::from_hint(h),
        _ => KernelFilter::regex(entry.kernel_regex.clone()),
    };
    let s = &entry.settings;
    let plan = KernelPlan {
        name: entry.name.clone(),
        configured_at: Some(format!("{} in {}", entry.location(), entry.manifest_path.display())),
        package,
        target,
        runtime: entry.runtime,
        args: program_args,
        env: merged_env(&s.env, &args.envs),
        cwd: package_dir(&entry.manifest_path),
        filter: Some(filter),
        case: (entry.runtime == Runtime::Harness).then(|| entry.case.clone()),
        window: window_for(
            entry.runtime,
            args.launch_skip.or(s.launch_skip),
            args.launch_count.or(s.launch_count),
            &entry.name,
            notes,
        ),
        window_origin: window_origin(
            args.launch_skip.or(s.launch_skip),
            args.launch_count.or(s.launch_count),
        ),
        stages: stage_plan(args, s.stages.clone()),
        clock_control: clock(args.clock_control, s.clock_control),
        tolerance_pct: s.tolerance_pct.unwrap_or(defaults::TOLERANCE_PCT),
        privilege: privilege(args.sudo, s.privilege),
        partition: None,
        extra_stages: Vec::new(),
    };
    Ok(plan)
}

/// `--sudo` wins; else the manifests' `privilege`; else none.
fn privilege(sudo_flag: bool, configured: Option<Privilege>) -> Privilege {
    if sudo_flag {
        Privilege::Sudo
    } else {
        configured.unwrap_or_default()
    }
}

/// A plan for a target named on the command line with no configured entry.
#[allow(clippy::too_many_arguments)]
fn ad_hoc(
    metadata: &Metadata,
    config: &Config,
    package: &str,
    kind: CargoTargetKind,
    target_name: &str,
    hint: Option<&str>,
    args: &Request,
    notes: &mut Vec<String>,
) -> Result<KernelPlan> {
    let pkg = metadata.packages.iter().find(|p| p.name.as_str() == package);
    let uses_harness = pkg.is_some_and(|p| p.dependencies.iter().any(|d| d.name == "kprof-harness"));
    let runtime = if uses_harness { Runtime::Harness } else { Runtime::Cuda };
    let pkg_settings = config.packages.iter().find(|p| p.package == package).map(|p| &p.settings);
    let s = match pkg_settings {
        Some(p) => config.workspace_defaults.overridden_by(p),
        None => config.workspace_defaults.clone(),
    };
    let filter = match (&args.kernel_regex, hint) {
        (Some(re), _) => Some(KernelFilter::regex(re.clone())),
        (None, Some(h)) => Some(KernelFilter::from_hint(h)),
        (None, None) => None,
    };
    let name = hint
        .map(|h| crate::model::filter::parse_hint(h).0.to_string())
        .unwrap_or_else(|| target_name.to_string());
    Ok(KernelPlan {
        configured_at: None,
        package: Some(package.to_string()),
        target: PlannedTarget::Cargo(BuildTarget {
            package: package.to_string(),
            kind,
            name: target_name.to_string(),
        }),
        runtime,
        args: args.bench_args.clone(),
        env: merged_env(&s.env, &args.envs),
        cwd: pkg
            .map(|p| package_dir(p.manifest_path.as_std_path()))
            .unwrap_or_else(|| config.workspace_root.clone()),
        filter,
        // Ad hoc: every case of the bench runs in the window; the filter picks kernels.
        case: None,
        window: window_for(
            runtime,
            args.launch_skip.or(s.launch_skip),
            args.launch_count.or(s.launch_count),
            &name,
            notes,
        ),
        window_origin: window_origin(
            args.launch_skip.or(s.launch_skip),
            args.launch_count.or(s.launch_count),
        ),
        stages: stage_plan(args, s.stages.clone()),
        clock_control: clock(args.clock_control, s.clock_control),
        tolerance_pct: s.tolerance_pct.unwrap_or(defaults::TOLERANCE_PCT),
        privilege: privilege(args.sudo, s.privilege),
        partition: None,
        extra_stages: Vec::new(),
        name,
    })
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

fn clock(cli: Option<ClockControl>, configured: Option<config::ClockControl>) -> ClockControl {
    match (cli, configured) {
        (Some(ClockControl::Base), _) | (None, Some(config::ClockControl::Base)) => ClockControl::Base,
        _ => ClockControl::None,
    }
}

fn stage_plan(args: &Request, configured: Option<StageSelection>) -> StagePlan {
    args.stages.clone().unwrap_or_else(|| StagePlan::Stages(configured.unwrap_or_default()))
}
