//! Build here, profile there: `cargo kprof archive` packs a built plan (both sides of an
//! A/B check are `ops::ab::pack`'s, every revision of a range for a bisect is
//! `ops::bisect::pack`'s), and `cargo-kprof kprof run --archive` unpacks one and profiles
//! it on a machine without cargo. `check --archive` unpacks through [`unpack_adjusted`]
//! too, so the command line changes an archived plan the same way everywhere.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use super::opening::{self, RequestFn, Shard};
use crate::archive::emit::{self, LauncherRequest, Launchers};
use crate::archive::{self, contents, ArchiveManifest, Contents};
use crate::build::BuildOutput;
use crate::error::{ExitCode, Failure};
use crate::events::{
    About, ArchiveListing, ArchivedExecutable, BuildPurpose, BuildStarted, Event, LauncherFile,
    LauncherFiles, SkippedOutDir,
};
use crate::model::kinds::Privilege;
use crate::plan::{self, Plan, Request};
use crate::shell::Shell;

/// What `cargo kprof archive` packs.
pub struct PackOptions<'a> {
    /// `--manifest-path`.
    pub manifest_path: Option<&'a Path>,
    /// `-o FILE`.
    pub output: &'a Path,
    /// `--emit` and `--shards`.
    pub launchers: LauncherRequest,
}

/// An archive with nothing selected (no kernel hint, regex, index or target) packs every
/// configured kernel of the selected packages, or of the workspace: an archive is what a
/// GPU machine chooses from later (`run --archive --kernel NAME`), so refusing to pick
/// one, as profiling does, would only make a one-package project add `--workspace`.
fn every_configured_unless_selected(mut request: Request) -> Request {
    let selected = !request.kernels.is_empty()
        || request.kernel_regex.is_some()
        || request.index.is_some()
        || request.target.is_some();
    if !selected {
        request.workspace = true;
    }
    request
}

/// The workspace and plan `archive` packs: the whole selection (`--partition` is taken
/// where the archive runs), every configured kernel when nothing is selected.
pub fn open_to_pack(
    asked: RequestFn<'_>,
    o: &PackOptions<'_>,
    shell: &Shell,
) -> Result<(Plan, Request, opening::Workspace)> {
    let whole = Box::new(|| {
        let request = asked()?;
        match &request.partition {
            Some(shard) => Err(Failure::new(
                ExitCode::Config,
                format!("--partition {}: an archive holds the whole selection", shard.partition),
            )
            .help(format!(
                "pack it without --partition, and take the shard where it runs: \
                 cargo-kprof kprof run --archive FILE --partition {}",
                shard.partition
            ))),
            None => {
                let mut request = every_configured_unless_selected(request);
                request.pack_to = Some(o.output.to_path_buf());
                Ok(request)
            }
        }
    });
    opening::open(o.manifest_path, whole, Shard::AsGiven, shell)
}

/// `cargo kprof archive -o FILE` (`--base REV` is `ops::ab::pack`'s, `--bisect`
/// `ops::bisect::pack`'s).
pub fn pack(asked: RequestFn<'_>, o: PackOptions<'_>, shell: &Shell) -> Result<ExitCode> {
    let (plan, _, ws) = open_to_pack(asked, &o, shell)?;
    // The launchers' paths and --shards are checked before minutes of compilation, too.
    let launchers = emit::prepare(o.output, plan.kernels.len(), &o.launchers)?;
    // The globs are checked before minutes of compilation.
    let globs = contents::applicable(&plan.kernels, &ws.config.include);
    let mut packed = contents::from_workspace(&plan.workspace_root, &globs)?;
    // A signal stops the build and is answered when it returns, before anything is packed.
    let _deferral = crate::process::defer_signals();
    let built = build(&plan, None, shell)?;
    crate::process::check_signal("after the build")?;
    contents::add_build_outputs(&mut packed, &plan, built.as_ref());
    let graph = graph(o.manifest_path, shell);
    let tracer = tracer_to_pack(&plan, shell);
    let manifest = archive::write(&plan, built.as_ref(), &packed, &graph, tracer.as_deref(), o.output)?;
    if let Some(l) = &launchers {
        l.write()?;
    }
    shell.emit(&Event::ArchiveWritten(listing(o.output, &manifest, &packed, launchers.as_ref())));
    Ok(ExitCode::Success)
}

/// The census tracer library to pack with `plan`: built (or found built) with the plan's
/// cargo when a program's census may be traced; `None` when none may be. When it cannot be
/// built, a warning says why and what the GPU machine does instead: the archive is still
/// written, and its census takes ncu's pass there.
fn tracer_to_pack(plan: &Plan, shell: &Shell) -> Option<std::path::PathBuf> {
    let build = plan.build.as_ref()?;
    if !plan.kernels.iter().any(crate::archive::libs::traces_census) {
        return None;
    }
    match crate::ops::profile::tracer::built_tracer(&build.cargo, &build.target_dir, shell) {
        Ok(library) => Some(library),
        Err(why) => {
            shell.emit(&Event::warning(
                About::Census,
                format!(
                    "the census tracer is not packed: {why}; where the archive runs, a census takes ncu's \
                     pass, one per launch, unless {} names a built libkprof_tracer.so there",
                    crate::ops::profile::tracer::LIBRARY_VAR
                ),
            ));
            None
        }
    }
}

/// The census tracer for the archives of one pack (an A/B pair's two sides, a bisect's
/// revisions): built, or found unbuildable and said so, once, then packed into each
/// archive whose plan may trace a census.
#[derive(Default)]
pub(crate) struct PackedTracer(Option<Option<std::path::PathBuf>>);

impl PackedTracer {
    /// The tracer to pack with `plan` ([`tracer_to_pack`], the first time one is needed).
    pub(crate) fn for_plan(&mut self, plan: &Plan, shell: &Shell) -> Option<std::path::PathBuf> {
        if plan.build.is_none() || !plan.kernels.iter().any(crate::archive::libs::traces_census) {
            return None;
        }
        self.0.get_or_insert_with(|| tracer_to_pack(plan, shell)).clone()
    }
}

/// The libraries cudarc opens itself (from the features `cargo metadata`'s resolve
/// enabled for it) and the packages' folders, read offline: the build has just
/// downloaded what it needs.
pub(crate) fn graph(manifest_path: Option<&Path>, shell: &Shell) -> archive::Graph {
    match crate::build::metadata_with_graph(&crate::build::cargo_binary(), manifest_path, &Shell::quiet()) {
        Ok(m) => archive::Graph::of(&m),
        Err(e) => {
            let fetch = match manifest_path {
                Some(m) => format!(
                    "cargo fetch --manifest-path {}",
                    crate::process::shell_quote(&m.to_string_lossy())
                ),
                None => "cargo fetch".to_string(),
            };
            shell.emit(&Event::warning(
                About::DependencyGraph,
                format!(
                    "could not read the dependency graph ({e}): the libraries cudarc opens itself are not recorded, \
                 and relative file names in dependencies' line info are not followed; `{fetch}` downloads \
                 what is missing, then archive again"
                ),
            ));
            archive::Graph::default()
        }
    }
}

/// Builds a plan's programs with line info; `side` names the side of an A/B archive.
pub(crate) fn build(plan: &Plan, side: Option<&str>, shell: &Shell) -> Result<Option<BuildOutput>> {
    let Some(req) = &plan.build else { return Ok(None) };
    shell.emit(&Event::BuildStarted(BuildStarted {
        side: side.map(|side| format!("the {side}")),
        build: req.describe(),
        targets: req.targets.len(),
        purpose: BuildPurpose::LineInfo,
    }));
    Ok(Some(req.run(shell)?))
}

/// What the archive holds, as a message.
fn listing(
    out: &Path,
    m: &ArchiveManifest,
    packed: &Contents,
    launchers: Option<&Launchers>,
) -> ArchiveListing {
    ArchiveListing {
        archive: out.to_path_buf(),
        executables: m
            .executables
            .iter()
            .map(|(t, file)| ArchivedExecutable {
                package: t.package.clone(),
                kind: t.kind,
                name: t.name.clone(),
                file: file.clone(),
            })
            .collect(),
        sources: m.sources.len(),
        included: m.included.clone(),
        build_outputs: m.build_outputs.clone(),
        dependency_sources: m.dependency_sources.len(),
        dependency_sources_missing: m.dependency_sources_missing.clone(),
        dependency_sources_refused: m.dependency_sources_refused.clone(),
        skipped_out_dirs: packed
            .skipped_out_dirs
            .iter()
            .map(|(p, d)| SkippedOutDir { package: p.clone(), out_dir: d.clone() })
            .collect(),
        launchers: launchers.map(|l| LauncherFiles {
            shards: l.shards(),
            files: l.files().iter().map(|(k, p)| LauncherFile { kind: *k, file: p.clone() }).collect(),
        }),
    }
}

/// What `run --archive` (and `check --archive`) unpacks, and how the command line changes
/// the archived plan.
pub struct Unpack<'a> {
    /// The archive.
    pub archive: &'a Path,
    /// `--workspace-remap`.
    pub remap: &'a Path,
    /// `--kernel`, `--stages`, the window, `--env`, `--dry-run`, `--no-batch`, the shard,
    /// `--gpus`, `--sudo`.
    pub request: Request,
    /// `--timeout`.
    pub timeout: Option<Duration>,
}

/// Unpacks an archive into `remap`: `--kernel`, `--stages`, the window and `--env` change
/// the archived plan, and the run's own options (`--dry-run`, `--no-batch`, the shard,
/// `--gpus`) apply. An `output_dir` is checked before anything is unpacked. Returns the
/// notes of the adjustment apart from the plan's own.
pub fn unpack_adjusted(
    u: Unpack<'_>,
    output_dir: Option<&Path>,
    machine: Option<Machine>,
) -> Result<(Plan, BuildOutput, Vec<String>)> {
    let request = opening::with_engine_shard(u.request)?;
    let mut notes = Vec::new();
    let profile_root = crate::profile::root::profiles_root(&u.remap.join(archive::WORKSPACE));
    let bin_root = u.remap.to_path_buf();
    let adjust = |manifest: &archive::ArchiveManifest, kernels: Vec<crate::plan::KernelPlan>| -> Result<_> {
        let kernels = archive::adjust::adjust(kernels, &request, &mut notes)?;
        // Checked before anything is unpacked: a machine that cannot profile gets no
        // --workspace-remap folder in the way of the next try.
        if let Some(d) = output_dir {
            crate::profile::output::check_output_dir(d, kernels.len() > 1)?;
        }
        if let Some(m) = machine {
            // As `privilege_here` will set it: sudo only when --sudo is given here.
            let mut checked = kernels.clone();
            let privilege = if m.sudo { Privilege::Sudo } else { Privilege::None };
            checked.iter_mut().for_each(|k| k.privilege = privilege);
            super::profile::preflight_kernels(&checked, &profile_root, request.dry_run, m.extras)?;
            if !request.dry_run {
                let shell = Shell::quiet();
                notes.extend(archive::loader::check_archived(manifest, &kernels, &bin_root, &shell)?);
            }
        }
        Ok(kernels)
    };
    let (mut plan, built) = archive::unpack_adjusted(u.archive, u.remap, u.timeout, adjust)?;
    privilege_here(&mut plan.kernels, request.sudo, &mut notes);
    plan.dry_run = request.dry_run;
    plan.batch = !request.no_batch;
    plan.partition = request.partition.as_ref().map(|s| s.partition);
    plan.assign_gpus(&request.gpus);
    Ok((plan, built, notes))
}

/// How ncu is started on this machine: with `sudo` only when `--sudo` is given here. The
/// archived `privilege` was chosen on the machine that packed it, from its manifests; an
/// archive, which anyone may hand over, never decides to run anything as root. A note
/// says when the archive asked for sudo.
fn privilege_here(kernels: &mut [crate::plan::KernelPlan], sudo: bool, notes: &mut Vec<String>) {
    let asked: Vec<&str> =
        kernels.iter().filter(|k| k.privilege == Privilege::Sudo).map(|k| k.name.as_str()).collect();
    if !sudo && !asked.is_empty() {
        notes.push(format!(
            "the archive was packed with `privilege = \"sudo\"` for {}; here ncu runs without sudo \
             unless --sudo is given",
            asked.join(", ")
        ));
    }
    let privilege = if sudo { Privilege::Sudo } else { Privilege::None };
    kernels.iter_mut().for_each(|k| k.privilege = privilege);
}

/// `cargo-kprof kprof run --archive FILE`; an A/B archive is refused, pointing to
/// `check --archive`, which compares its two sides.
pub fn run(u: Unpack<'_>, shell: &Shell) -> Result<ExitCode> {
    match archive::open(u.archive)? {
        archive::Opened::Build => {}
        archive::Opened::Bisect(_) => return Err(archive::bisect::refused(u.archive, "run --archive").into()),
        archive::Opened::Pair(manifest) => {
            manifest?;
            return Err(an_ab_archive(u.archive).into());
        }
    }
    // Made absolute here, as for `cargo kprof`: the program runs in its package directory.
    let output_dir = u.request.output_dir.as_deref().map(plan::absolute).transpose()?;
    let machine = Machine { extras: super::profile::Extras::default(), sudo: u.request.sudo };
    let (mut plan, built, mut notes) = unpack_adjusted(u, output_dir.as_deref(), Some(machine))?;
    plan.output_dir = output_dir;
    notes.append(&mut plan.notes);
    plan.notes = notes;
    opening::print_notes(&plan, shell);
    if plan.kernels.is_empty() {
        return opening::empty_shard(&plan, shell);
    }
    super::profile::profile(&plan, Some(built), shell)
}

/// The refusal of an A/B archive given to `run --archive`, naming `check --archive`.
fn an_ab_archive(archive: &Path) -> Failure {
    Failure::new(
        ExitCode::Config,
        format!(
            "{} is an A/B archive (packed with `archive --base REV`): it holds two sides to compare",
            archive.display()
        ),
    )
    .help(format!("check it with `cargo-kprof kprof check --archive {}`", archive.display()))
}

/// What an archive's kernels need of the machine, checked before it is unpacked.
#[derive(Debug, Clone, Copy)]
pub struct Machine {
    /// What runs: ncu, or only the harness' timing.
    pub extras: super::profile::Extras,
    /// `--sudo`: ncu only from `profile/ncu_path`.
    pub sudo: bool,
}

/// An archive unpacked for `check`: the plan's notes first, then the adjustment's; with
/// `machine`, the machine is checked before anything is unpacked.
pub fn unpack_for_check(u: Unpack<'_>, machine: Option<Machine>) -> Result<(Plan, BuildOutput)> {
    let (mut plan, built, notes) = unpack_adjusted(u, None, machine)?;
    plan.notes.extend(notes);
    Ok((plan, built))
}
