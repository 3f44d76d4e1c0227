//! [`resolve`]: the command line against the workspace's metadata and configuration, one
//! step per role: select the kernels (by index, by a target named on the command line,
//! by hints, or the configured listing), plan each one from its entry or ad hoc, then
//! the one build they need, the notes about the choices made, and the output directory.
//!
//! A [`Resolver`] carries what every step reads (the request, the metadata, the
//! configuration, the `--kernel-regex` filter compiled once) and the notes they add.

use std::ffi::OsString;

use anyhow::Result;
use cargo_metadata::Metadata;

use super::targets::target_package;
use super::{absolute, apply_shard, kernel_regex_filter, merged_env, package_dir};
use super::{CustomStage, KernelPlan, Plan, PlannedTarget, Request, StagePlan};
use crate::build::{BuildRequest, BuildTarget};
use crate::config::{self, CargoTargetKind, Config, KernelEntry, KernelTarget, Privilege, Runtime, Settings};
use crate::error::{ExitCode, Failure};
use crate::model::filter::{KernelFilter, KernelHint};
use crate::model::stage::StageSelection;
use crate::model::window::{defaults, window_for, window_origin};
use crate::ncu::ClockControl;

/// Resolves the profile command line against the workspace's metadata and configuration.
pub fn resolve(args: &Request, metadata: &Metadata, config: &Config, cargo: OsString) -> Result<Plan> {
    // The regex first: whatever else is wrong with the selection, this is named.
    let user_filter = args.kernel_regex.as_deref().map(kernel_regex_filter).transpose()?;
    let mut resolver = Resolver { args, metadata, config, user_filter, notes: Vec::new() };
    let mut kernels = resolver.select()?;
    let mut notes = resolver.notes;

    if let Some(shard) = &args.partition {
        kernels = apply_shard(shard, kernels, &mut notes);
    }
    let build = build_request(args, metadata, config, &kernels, cargo)?;
    notes.extend(request_notes(args, build.as_ref()));

    // Checked now, not after minutes of compilation; absolute, because ncu and the
    // program run in the package directory, not in the caller's.
    let output_dir = args.output_dir.as_deref().map(absolute).transpose()?;
    if let Some(d) = &output_dir {
        crate::profile::output::check_output_dir(d, kernels.len() > 1)?;
    }

    let mut plan = Plan {
        source_roots: Vec::new(),
        source_map: Default::default(),
        workspace_root: config.workspace_root.clone(),
        profile_root: crate::profile::root::profiles_root(&config.workspace_root),
        build,
        kernels,
        output_dir,
        dry_run: args.dry_run,
        timeout: args.timeout,
        batch: !args.no_batch,
        gpus: Vec::new(),
        notes,
        partition: args.partition.as_ref().map(|s| s.partition),
        tracer: None,
    };
    plan.assign_gpus(&args.gpus);
    Ok(plan)
}

/// The one build of every cargo target the kernels need; `None` when none do.
fn build_request(
    args: &Request,
    metadata: &Metadata,
    config: &Config,
    kernels: &[KernelPlan],
    cargo: OsString,
) -> Result<Option<BuildRequest>> {
    let mut targets: Vec<BuildTarget> = kernels
        .iter()
        .filter_map(|k| match &k.target {
            PlannedTarget::Cargo(t) => Some(t.clone()),
            PlannedTarget::Command(_) => None,
        })
        .collect();
    targets.sort();
    targets.dedup();
    if targets.is_empty() {
        return Ok(None);
    }
    let base = match &args.target_dir {
        Some(d) => absolute(d)?,
        None => metadata.target_directory.clone().into(),
    };
    Ok(Some(BuildRequest {
        cargo,
        manifest_path: config.workspace_manifest_path.clone(),
        target_dir: base.join("kprof"),
        profile: args.profile.clone(),
        features: args.features.clone(),
        targets,
        user_nvcc_append_flags: std::env::var("NVCC_APPEND_FLAGS").ok(),
    }))
}

/// Notes on what the build and the request imply: `-G` in `NVCC_APPEND_FLAGS`, and
/// `--set` with `--sections`.
fn request_notes(args: &Request, build: Option<&BuildRequest>) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(flags) = build.and_then(|b| b.user_nvcc_append_flags.as_ref()) {
        if crate::build::has_device_debug_flag(flags) {
            notes.push(format!(
                "NVCC_APPEND_FLAGS contains -G ({flags}): device debug code is unoptimised, so the profile \
                 will not show release behaviour; remove -G (kprof adds -lineinfo for source mapping)"
            ));
        }
    }
    if let Some(StagePlan::Custom(CustomStage { set: Some(set), sections })) = &args.stages {
        if !sections.is_empty() {
            notes.push(format!(
                "--set {set} and --sections {} both apply: ncu collects the set's sections and these",
                sections.join(",")
            ));
        }
    }
    notes
}

/// What selecting and planning the kernels reads, and the notes it adds.
struct Resolver<'a> {
    args: &'a Request,
    metadata: &'a Metadata,
    config: &'a Config,
    /// `--kernel-regex`, compiled once.
    user_filter: Option<KernelFilter>,
    notes: Vec<String>,
}

impl Resolver<'_> {
    /// The kernels the request selects, in selection order.
    fn select(&mut self) -> Result<Vec<KernelPlan>> {
        let (args, config) = (self.args, self.config);
        if let Some(index) = args.index {
            let entry = config.select_by_index(index, &args.packages)?;
            return Ok(vec![self.configured(entry, None)]);
        }
        if let Some((kind, name)) = &args.target {
            return self.for_target(*kind, name);
        }
        if !args.kernels.is_empty() {
            let mut kernels = Vec::new();
            for hint in &args.kernels {
                let entry = config
                    .select_by_hint(hint, &args.packages)
                    .map_err(|f| self.unconfigured(f, Some(&hint.to_string())))?;
                kernels.push(self.configured(entry, Some(hint)));
            }
            return Ok(kernels);
        }
        self.listed()
    }

    /// A selection that finds nothing configured also offers the targets the workspace has.
    fn unconfigured(&self, f: Failure, hint: Option<&str>) -> Failure {
        let packages = &self.args.packages;
        let configured_here =
            self.config.kernels.iter().any(|k| packages.is_empty() || packages.contains(&k.package));
        match configured_here {
            true => f,
            false => {
                let verb = match &self.args.pack_to {
                    Some(out) => crate::config::targets::DirectVerb::Pack(out),
                    None => crate::config::targets::DirectVerb::Profile,
                };
                crate::config::targets::offer_direct_forms(f, self.metadata, packages, hint, verb)
            }
        }
    }

    /// `--bench/--example/--bin NAME`, with each `--kernel` hint (or none).
    fn for_target(&mut self, kind: CargoTargetKind, name: &str) -> Result<Vec<KernelPlan>> {
        let (args, config) = (self.args, self.config);
        let package = target_package(self.metadata, &args.packages, kind, name)?;
        let hints: Vec<Option<&KernelHint>> =
            if args.kernels.is_empty() { vec![None] } else { args.kernels.iter().map(Some).collect() };
        let mut kernels = Vec::new();
        for hint in hints {
            // A configured entry for this very target and hint keeps its settings.
            let configured = hint.and_then(|h| {
                config.kernels.iter().find(|k| {
                    k.package == package
                        && k.name == h.to_string()
                        && k.target == KernelTarget::Cargo { kind, name: name.to_string() }
                })
            });
            kernels.push(match configured {
                Some(entry) => self.configured(entry, hint),
                None => self.ad_hoc(&package, kind, name, hint),
            });
        }
        Ok(kernels)
    }

    /// No index, target or hint: the configured kernels of the packages (or workspace),
    /// refused when there are several and nothing says to take them all.
    fn listed(&mut self) -> Result<Vec<KernelPlan>> {
        let (args, config) = (self.args, self.config);
        let packages = &args.packages;
        let listed = config.listing(packages).map_err(|f| self.unconfigured(f, None))?;
        if listed.is_empty() {
            return Err(self.unconfigured(config.nothing_configured(packages), None).into());
        }
        if listed.len() > 1 && !args.workspace && packages.is_empty() {
            let names: Vec<String> =
                listed.iter().map(|l| format!("#{} {}", l.index, l.kernel.name)).collect();
            return Err(Failure::new(ExitCode::Config, "no kernel selected")
                .help(format!("configured kernels: {}", names.join(", ")))
                .help("pick one with --kernel NAME or --index N, or profile them all with --workspace")
                .into());
        }
        Ok(listed.into_iter().map(|l| self.configured(l.kernel, None)).collect())
    }

    /// A plan for a configured kernel, with command-line overrides applied.
    fn configured(&mut self, entry: &KernelEntry, hint: Option<&KernelHint>) -> KernelPlan {
        let args = self.args;
        let (target, package) = match &entry.target {
            KernelTarget::Cargo { kind, name } => (
                PlannedTarget::Cargo(BuildTarget {
                    package: entry.package.clone(),
                    kind: *kind,
                    name: name.clone(),
                }),
                Some(entry.package.clone()),
            ),
            KernelTarget::Command(words) => (PlannedTarget::Command(words.clone()), None),
        };
        let mut program_args = entry.args.clone();
        program_args.extend(args.bench_args.iter().cloned());
        let filter = match (&self.user_filter, hint) {
            (Some(re), _) => re.clone(),
            (None, Some(h)) if h.name != entry.name => KernelFilter::from_hint(h),
            // Checked when the configuration was read.
            _ => KernelFilter::regex(entry.kernel_regex.clone()),
        };
        let mut plan = self.with_settings(&entry.name, entry.runtime, &entry.settings, target);
        plan.configured_at = Some(format!("{} in {}", entry.location(), entry.manifest_path.display()));
        plan.package = package;
        plan.args = program_args;
        plan.cwd = package_dir(&entry.manifest_path);
        plan.filter = Some(filter);
        plan.case = (entry.runtime == Runtime::Harness).then(|| entry.case.clone());
        plan
    }

    /// A plan for a target named on the command line with no configured entry.
    fn ad_hoc(
        &mut self,
        package: &str,
        kind: CargoTargetKind,
        target_name: &str,
        hint: Option<&KernelHint>,
    ) -> KernelPlan {
        let (args, config) = (self.args, self.config);
        let pkg = self.metadata.packages.iter().find(|p| p.name.as_str() == package);
        let uses_harness = pkg.is_some_and(|p| p.dependencies.iter().any(|d| d.name == "kprof-harness"));
        let runtime = if uses_harness { Runtime::Harness } else { Runtime::Cuda };
        let pkg_settings = config.packages.iter().find(|p| p.package == package).map(|p| &p.settings);
        let settings = match pkg_settings {
            Some(p) => config.workspace_defaults.overridden_by(p),
            None => config.workspace_defaults.clone(),
        };
        let filter = match (&self.user_filter, hint) {
            (Some(re), _) => Some(re.clone()),
            (None, Some(h)) => Some(KernelFilter::from_hint(h)),
            (None, None) => None,
        };
        let name = hint.map(|h| h.name.clone()).unwrap_or_else(|| target_name.to_string());
        let target = PlannedTarget::Cargo(BuildTarget {
            package: package.to_string(),
            kind,
            name: target_name.to_string(),
        });
        let mut plan = self.with_settings(&name, runtime, &settings, target);
        plan.package = Some(package.to_string());
        plan.args = args.bench_args.clone();
        plan.cwd = pkg
            .map(|p| package_dir(p.manifest_path.as_std_path()))
            .unwrap_or_else(|| config.workspace_root.clone());
        plan.filter = filter;
        // Ad hoc: every case of the bench runs in the window; the filter picks kernels.
        plan.case = None;
        plan
    }

    /// A kernel named `name` running `target`, with the settings the manifests give it and
    /// the command line's on top (window, stages, environment, clocks, tolerance,
    /// privilege); where it comes from (package, arguments, directory, filter, case) is
    /// the caller's to fill in.
    fn with_settings(
        &mut self,
        name: &str,
        runtime: Runtime,
        s: &Settings,
        target: PlannedTarget,
    ) -> KernelPlan {
        let args = self.args;
        let (skip, count) = (args.launch_skip.or(s.launch_skip), args.launch_count.or(s.launch_count));
        KernelPlan {
            name: name.to_string(),
            configured_at: None,
            package: None,
            target,
            runtime,
            args: Vec::new(),
            env: merged_env(&s.env, &args.envs),
            cwd: Default::default(),
            filter: None,
            case: None,
            window: window_for(runtime, skip, count, name, &mut self.notes),
            window_origin: window_origin(skip, count),
            stages: stage_plan(args, s.stages.clone()),
            clock_control: clock(args.clock_control, s.clock_control),
            tolerance_pct: s.tolerance_pct.unwrap_or(defaults::TOLERANCE_PCT),
            privilege: privilege(args.sudo, s.privilege),
            partition: None,
            extra_stages: Vec::new(),
            census: args.census.clone(),
            ptx_cache: None,
        }
    }
}

/// `--sudo` wins; else the manifests' `privilege`; else none.
fn privilege(sudo_flag: bool, configured: Option<Privilege>) -> Privilege {
    if sudo_flag {
        Privilege::Sudo
    } else {
        configured.unwrap_or_default()
    }
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
