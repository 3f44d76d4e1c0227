//! Before anything runs: each kernel's profile directory, its `profile-target.yaml` and
//! its `commands.sh`, the exact program and ncu commands the run will execute.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::build::BuildOutput;
use crate::model::kinds::{Privilege, Runtime};
use crate::model::stage::StageSelection;
use crate::ncu::command::{stage_command, StageCollection, StageRun, TargetCommand};
use crate::plan::{KernelPlan, Plan, PlannedTarget, StagePlan};
use crate::process::{shell_comment, ProcessBuilder};
use crate::profile::dir::ProfileDir;
use crate::profile::fs::write_new;
use crate::profile::names;
use crate::profile::target_spec;

/// The program a kernel runs in, once built.
pub fn target_command(kernel: &KernelPlan, built: Option<&BuildOutput>) -> Result<TargetCommand> {
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
    Ok(TargetCommand {
        program,
        args,
        env: kernel.profiling_env(),
        cwd: kernel.cwd.clone(),
        ptx_cache: kernel.ptx_cache.clone(),
    })
}

/// One kernel's profile directory and the commands written into it.
pub struct PreparedKernel<'a> {
    /// The kernel's plan.
    pub kernel: &'a KernelPlan,
    /// Its new profile directory.
    pub dir: ProfileDir,
    /// The program, with the profiling window's environment.
    pub target: TargetCommand,
    /// The stages known before any metric (basic, or the requested list), with their
    /// ncu commands as written to `commands.sh`.
    pub stage_commands: Vec<(StageCollection, ProcessBuilder)>,
    /// `commands.sh` as written: the build and the stages, each under its comment.
    pub script: String,
}

/// Creates the kernel's profile directory and writes `profile-target.yaml` and
/// `commands.sh` into it: everything a run will do, before it does it. A harness kernel
/// whose plan has no PTX cache of its own is given `ptx_cache` (its commands pass it
/// unshown).
pub fn prepare_kernel<'a>(
    plan: &Plan,
    kernel: &'a KernelPlan,
    built: Option<&BuildOutput>,
    ncu_path: &Path,
    ptx_cache: Option<&Path>,
) -> Result<PreparedKernel<'a>> {
    let id = names::profile_id(&kernel.name, std::time::SystemTime::now());
    let dir = match (&plan.output_dir, plan.kernels.len()) {
        (Some(d), 1) => ProfileDir::create_explicit(d)?,
        (Some(d), _) => {
            std::fs::create_dir_all(d).with_context(|| format!("could not create {}", d.display()))?;
            ProfileDir::create_unique(d, &id)?
        }
        (None, _) if plan.dry_run => crate::profile::output::dry_run_dir(&plan.profile_root, &kernel.name)?,
        (None, _) => ProfileDir::create_unique(&plan.profile_root, &id)?,
    };
    let mut target = target_command(kernel, built)?;
    if kernel.runtime == Runtime::Harness && target.ptx_cache.is_none() {
        target.ptx_cache = ptx_cache.map(Path::to_path_buf);
    }
    prepare_in(plan, kernel, dir, target, ncu_path)
}

/// A kernel the census of another kernel's program picked: its own new profile directory
/// beside that one (`beside`), running the same program `target`.
pub fn prepare_picked<'a>(
    plan: &Plan,
    kernel: &'a KernelPlan,
    beside: &ProfileDir,
    target: TargetCommand,
    ncu_path: &Path,
) -> Result<PreparedKernel<'a>> {
    let id = names::profile_id(&kernel.name, std::time::SystemTime::now());
    let root = beside.path().parent().unwrap_or(&plan.profile_root);
    let dir = ProfileDir::create_unique(root, &id)?;
    prepare_in(plan, kernel, dir, target, ncu_path)
}

/// The first kernel the census in `dir` picked, to be profiled in that directory after
/// the census (a plain program's picks all run in one batch): its stages' commands are
/// appended to the census' `commands.sh`; `profile-target.yaml` stays the census'.
pub fn prepare_in_place<'a>(
    kernel: &'a KernelPlan,
    dir: ProfileDir,
    target: TargetCommand,
    ncu_path: &Path,
) -> Result<PreparedKernel<'a>> {
    let stage_commands = stage_commands(kernel, &dir, &target, ncu_path);
    let mut script = format!(
        "# The census picked `{}` first: its stages, profiled here with the other picks.\n",
        shell_comment(&kernel.name)
    );
    for (c, cmd) in &stage_commands {
        script.push_str(&format!("# Stage {}\n{cmd}\n\n", shell_comment(c.name())));
    }
    crate::profile::fs::append(&dir.commands_script_path(), &script)?;
    Ok(PreparedKernel { kernel, dir, target, stage_commands, script })
}

/// Writes `profile-target.yaml` and `commands.sh` into the new directory `dir`.
fn prepare_in<'a>(
    plan: &Plan,
    kernel: &'a KernelPlan,
    dir: ProfileDir,
    target: TargetCommand,
    ncu_path: &Path,
) -> Result<PreparedKernel<'a>> {
    let stage_commands = stage_commands(kernel, &dir, &target, ncu_path);
    let spec = target_spec_for(plan, kernel, &target, kernel.filter.as_ref(), ncu_path);
    spec.write_to(&dir.target_spec_path())?;
    let script = commands_script(plan, kernel, &stage_commands);
    write_new(&dir.commands_script_path(), &script)?;
    Ok(PreparedKernel { kernel, dir, target, stage_commands, script })
}

/// The commands of the stages `kernel` starts with, their pages written into `dir`.
fn stage_commands(
    kernel: &KernelPlan,
    dir: &ProfileDir,
    target: &TargetCommand,
    ncu_path: &Path,
) -> Vec<(StageCollection, ProcessBuilder)> {
    let filter = kernel.filter.as_ref();
    let ranges = kernel.census.ncu_range_args();
    let report = kernel.source_from_basic().then(|| dir.basic_report_path());
    kernel
        .initial_collections()
        .into_iter()
        .map(|c| {
            let log = dir.stage_raw_path(&c);
            let cmd = stage_command(
                ncu_path,
                &StageRun {
                    collection: &c,
                    filter,
                    // Discovery counts every launch from the first; the stages use the window.
                    window: if c == StageCollection::Discovery {
                        super::window::census_window(kernel.window, kernel.census.launch_cap)
                    } else {
                        kernel.window
                    },
                    clock_control: kernel.clock_control,
                    log_file: &log,
                    target,
                    privilege: kernel.privilege,
                    ranges: &ranges,
                    report: report.as_deref(),
                },
            );
            (c, cmd)
        })
        .collect()
}

/// `profile-target.yaml` for a resolved kernel: the spec document's schema, filled in.
fn target_spec_for(
    plan: &Plan,
    kernel: &KernelPlan,
    target: &TargetCommand,
    filter: Option<&crate::model::filter::KernelFilter>,
    ncu_path: &Path,
) -> target_spec::TargetSpec {
    // Without a hint the filter is decided by discovery; until then it matches everything.
    let everything = crate::model::filter::KernelFilter::regex(".*");
    let filter = filter.unwrap_or(&everything);
    use target_spec::*;
    let (stages, set, sections) = match &kernel.stages {
        StagePlan::Stages(s) => (s.clone(), None, Vec::new()),
        StagePlan::Custom(c) => (StageSelection::Auto, c.set.clone(), c.sections.clone()),
    };
    let cargo_target = match &kernel.target {
        PlannedTarget::Cargo(t) => Some(CargoTarget { kind: t.kind, name: t.name.clone() }),
        PlannedTarget::Command(_) => None,
    };
    let notes = NotesSection::default();
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
            filter: filter.clone(),
            allow_discovery_fallback: true,
            case: kernel.case.clone(),
        },
        launch: kernel.window,
        privilege: PrivilegeSection { mode: kernel.privilege, ..PrivilegeSection::default() },
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
        shell_comment(&kernel.name),
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
    if let crate::model::kinds::LaunchWindow::SkipCount { .. } = kernel.window {
        let origin = match kernel.window_origin {
            crate::model::kinds::WindowOrigin::Default => format!(
                "kprof's default for runtime `{}`; if it skips every launch of the kernel, kprof\n\
                 # fits it to the last launches and records the stage again below",
                kernel.runtime
            ),
            crate::model::kinds::WindowOrigin::Set => {
                "set in the manifests or on the command line".to_string()
            }
        };
        s.push_str(&format!("# Launch window: {} ({origin}).\n\n", kernel.window.describe()));
    }
    let auto = kernel.stages.is_auto();
    for (i, (c, cmd)) in stages.iter().enumerate() {
        let about = match super::reason::Reason::first(auto, c) {
            super::reason::Reason::AutoHotLines => format!("{} (auto: the hot lines)", c.name()),
            _ => c.name().to_string(),
        };
        s.push_str(&format!("# Stage {}: {}\n{}\n\n", i + 1, shell_comment(&about), cmd));
    }
    if kernel.filter.is_none() {
        s.push_str(&census_comment(kernel));
    } else if auto {
        s.push_str(&format!(
            "# Stage {}: one follow-up (memory, compute, occupancy or speed-of-light), chosen from\n\
             # basic's metrics when the profile runs; its command is recorded here once chosen.\n",
            stages.len() + 1
        ));
    }
    s
}

/// What `commands.sh` says of a census before it runs: what it counts, how it picks, and
/// where the kernels it picks are profiled.
fn census_comment(kernel: &KernelPlan) -> String {
    let plan = &kernel.census;
    let cap = super::window::census_cap(kernel.window, plan.launch_cap)
        .map(|c| format!(", up to {c} launches"))
        .unwrap_or_default();
    let bounds = plan.describe_bounds().map(|b| format!(", {b}")).unwrap_or_default();
    format!(
        "# No kernel hint: the census profiles every launch from the first (durations only{}{}) and\n\
         # picks {}; the stages of the costliest follow, recorded here once chosen, and each\n\
         # other kernel picked gets a profile directory of its own.\n",
        shell_comment(&cap),
        shell_comment(&bounds),
        shell_comment(&plan.pick.describe())
    )
}
