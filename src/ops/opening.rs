//! The common opening of every command that profiles a workspace: `cargo metadata` and
//! the kprof configuration, the shard a cluster engine names, the plan, its notes, and
//! the profiles root. Written once here; `profile`, `check`, `check --base` (both sides)
//! and `archive` open the same way.

use std::path::Path;

use anyhow::Result;
use cargo_metadata::Metadata;

use crate::build;
use crate::config::{self, Config};
use crate::error::{ExitCode, Failure};
use crate::events::{About, Event, IndexWritten};
use crate::plan::{self, Plan, Request};
use crate::shell::Shell;

/// A workspace as `cargo metadata` and its manifests describe it.
pub struct Workspace {
    /// `cargo metadata`.
    pub metadata: Metadata,
    /// The kprof configuration.
    pub config: Config,
}

/// Reads the workspace of `manifest_path` (or the current directory's); the
/// configuration's warnings are printed.
pub fn load_workspace(manifest_path: Option<&Path>, shell: &Shell) -> Result<Workspace> {
    let cargo = build::cargo_binary();
    let metadata = build::metadata(&cargo, manifest_path, shell)?;
    let config = config::load(&metadata)?;
    for w in &config.warnings {
        shell.emit(&Event::warning(About::Config, w.to_string()));
    }
    Ok(Workspace { metadata, config })
}

/// `request` with the shard a Slurm job array or a Kubernetes Indexed Job names, when
/// `--partition` named none.
pub fn with_engine_shard(mut request: Request) -> Result<Request> {
    if request.partition.is_none() {
        request.partition = crate::model::partition::from_env(|k| std::env::var(k).ok())?;
    }
    Ok(request)
}

/// The command line's request, made (and checked) when the opening asks for it.
pub type RequestFn<'a> = Box<dyn FnOnce() -> Result<Request, Failure> + 'a>;

/// How much of the opening a command wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shard {
    /// Take the shard a cluster engine names (profiling commands).
    FromEngine,
    /// The request's shard only (`archive`, which packs the whole selection).
    AsGiven,
}

/// The opening: the workspace, then the request (checked after the workspace is read,
/// so that a broken workspace is the first error), resolved into a plan whose notes are
/// printed.
pub fn open(
    manifest_path: Option<&Path>,
    request: RequestFn<'_>,
    shard: Shard,
    shell: &Shell,
) -> Result<(Plan, Request, Workspace)> {
    let ws = load_workspace(manifest_path, shell)?;
    let request = request()?;
    let request = match shard {
        Shard::FromEngine => with_engine_shard(request)?,
        Shard::AsGiven => request,
    };
    let plan = plan::resolve(&request, &ws.metadata, &ws.config, build::cargo_binary())?;
    print_notes(&plan, shell);
    Ok((plan, request, ws))
}

/// The plan's notes, for people.
pub fn print_notes(plan: &Plan, shell: &Shell) {
    for note in &plan.notes {
        shell.emit(&Event::note(About::Plan, note.clone()));
    }
}

/// Creates the workspace's profiles root when this run is the first to need it, and then
/// (only then) says so: kprof has just added a folder to the user's source tree.
pub fn create_profiles_root(root: &Path, shell: &Shell) -> Result<()> {
    if crate::profile::root::create_profiles_root(root)? {
        shell.emit(&Event::ProfilesRootCreated { root: root.to_path_buf() });
    }
    Ok(())
}

/// A shard that holds no kernel (the note said so): nothing is built or run, and the
/// profile root's index names the shard, so that `merge` sees it was run.
pub fn empty_shard(plan: &Plan, shell: &Shell) -> Result<ExitCode> {
    if !plan.dry_run {
        crate::profile::root::create_profiles_root(&plan.profile_root)?;
        crate::report::index::write_for_shard(&plan.profile_root, plan.partition)?;
        shell.emit(&Event::IndexWritten(IndexWritten {
            index: crate::profile::root::index_md_path(&plan.profile_root),
        }));
    }
    shell.emit(&Event::ShardEmpty {
        partition: plan.partition.map(|p| p.to_string()),
        profile_root: plan.profile_root.clone(),
    });
    Ok(ExitCode::Success)
}
