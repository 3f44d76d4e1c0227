//! The two sides of an A/B check: the head as `cargo kprof` plans it and the base from
//! kprof's worktree of the revision, each built with line info; or both unpacked from an
//! A/B archive (each a [`super::side::SideSource`]). Then the kernels both sides have,
//! paired, each base kernel on its head's GPU.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::side::{Archived, Side, SideSource};
use crate::archive::pair;
use crate::error::{ExitCode, Failure};
use crate::events::{About, ArchiveUnpacked, Event};
use crate::model::ab::{BaseRev, Side as Role};
use crate::ops::archive::{Machine, Unpack};
use crate::ops::opening::{self, RequestFn};
use crate::ops::profile::Extras;
use crate::plan::{self, Plan, Request};
use crate::shell::Shell;

/// Where the two sides come from.
pub enum SidesFrom<'a> {
    /// The working tree (the head) and a revision of its repository (the base).
    Tree {
        /// The profile request.
        request: RequestFn<'a>,
        /// `--manifest-path`.
        manifest_path: Option<&'a Path>,
        /// The base revision as asked.
        asked: &'a BaseRev,
    },
    /// An A/B archive (`cargo kprof archive --base`).
    Archive {
        /// The archive.
        archive: &'a Path,
        /// Its manifest, as [`crate::archive::open`] read it; `None` for an archive of one
        /// build, which is refused.
        pair: Option<pair::PairManifest>,
        /// `--workspace-remap`.
        remap: PathBuf,
        /// The command line's changes to the archived plans.
        request: Box<Request>,
        /// `--timeout`.
        timeout: Option<std::time::Duration>,
    },
}

/// Both sides, planned and built (or unpacked): the head, then the base, whose
/// `revision` is set.
pub fn sides(from: SidesFrom<'_>, timing_only: bool, shell: &Shell) -> Result<(Side, Side)> {
    match from {
        SidesFrom::Tree { request, manifest_path, asked } => {
            from_tree(timing_only, request, manifest_path, asked, shell)
        }
        SidesFrom::Archive { archive, pair, remap, request, timeout } => {
            let Some(manifest) = pair else {
                return Err(Failure::new(
                    ExitCode::Config,
                    format!("{} holds one side only: --base needs an A/B archive", archive.display()),
                )
                .help("make it with `cargo kprof archive --base REV -o FILE`, or compare with a saved --baseline")
                .into());
            };
            let unpack = Unpack { archive, remap: &remap, request: *request, timeout };
            from_archive(timing_only, manifest, unpack, shell)
        }
    }
}

/// Both sides from the working tree: the head as `cargo kprof` plans it, the base from
/// kprof's worktree of the revision, each built with line info.
fn from_tree(
    timing_only: bool,
    request: RequestFn<'_>,
    manifest: Option<&Path>,
    asked: &BaseRev,
    shell: &Shell,
) -> Result<(Side, Side)> {
    let ws = opening::load_workspace(manifest, shell)?;
    let request = opening::with_engine_shard(request()?)?;
    let head_plan = plan::resolve(&request, &ws.metadata, &ws.config, crate::build::cargo_binary())?;
    refuse_timing_only(timing_only, &head_plan)?;
    // Nothing is checked out or built on a machine that cannot run the check: its rounds
    // need the GPU, and its profiles ncu too.
    let extras = Extras { timing: false, timing_only: false, dirs_only: timing_only };
    crate::ops::profile::preflight(&head_plan, extras)?;
    let base = super::base::checkout(&request, &head_plan, manifest, asked)?;
    let (base, _) = SideSource::Revision(base).plan(shell)??;
    let head = Side::working_tree(head_plan).build("the head", shell)?;
    let base = base.build("the base", shell)?;
    Ok((head, base))
}

/// Both sides from an A/B archive (`cargo kprof archive --base`), unpacked under
/// `--workspace-remap` into `head/` and `base/`. A failed unpack removes what it made, so
/// that the retry finds `--workspace-remap` as it was.
fn from_archive(
    timing_only: bool,
    manifest: pair::PairManifest,
    u: Unpack<'_>,
    shell: &Shell,
) -> Result<(Side, Side)> {
    let (archive, remap) = (u.archive, u.remap);
    crate::archive::require_new_or_empty(remap)?;
    // The directories made here, deepest first: removed again if the unpack fails.
    let made: Vec<PathBuf> = remap
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && std::fs::symlink_metadata(d).is_err())
        .map(Path::to_path_buf)
        .collect();
    std::fs::create_dir_all(remap)?;
    let base_revision =
        crate::vcs::worktree::BaseRevision { asked: manifest.base_asked, commit: manifest.base_commit };
    let unpacked = (|| -> Result<(Side, Side)> {
        let (head_tar, base_tar) = pair::extract_sides(archive, remap)?;
        let unpack = |tar: &Path, side: Role| -> Result<Side> {
            let dir = remap.join(side.name());
            let source = SideSource::Archive(Box::new(Archived {
                unpack: Unpack { archive: tar, remap: &dir, request: u.request.clone(), ..u },
                // The machine is checked once, before the head's files are unpacked, as a
                // check from a checkout is checked before anything is built: its rounds
                // need the GPU, and its profiles ncu too.
                machine: (side == Role::Head).then_some(Machine {
                    extras: Extras { timing: false, timing_only: false, dirs_only: timing_only },
                    sudo: u.request.sudo,
                }),
                revision: (side == Role::Base).then(|| base_revision.clone()),
                called: format!("{}: its {1} side ({1}.tar)", archive.display(), side.name()),
            }));
            // Both sides unpack into a folder that is removed again if anything fails.
            source.plan(shell)?.map(|(side, _)| side)
        };
        let head = unpack(&head_tar, Role::Head)?;
        refuse_timing_only(timing_only, &head.plan)?;
        let base = unpack(&base_tar, Role::Base)?;
        Ok((head, base))
    })();
    pair::remove_sides(remap);
    let (head, base) = unpacked.inspect_err(|_| {
        for side in [Role::Head, Role::Base] {
            std::fs::remove_dir_all(remap.join(side.name())).ok();
        }
        for dir in &made {
            std::fs::remove_dir(dir).ok();
        }
    })?;
    shell.emit(&Event::ArchiveUnpacked(ArchiveUnpacked {
        archive: archive.to_path_buf(),
        into: remap.to_path_buf(),
    }));
    Ok((head, base))
}

/// Keeps, in both plans, the kernels both sides have, in the head's order; the base's
/// kernel runs on the head's GPU. Returns the kept names.
pub fn pair_kernels(head: &mut Plan, base: &mut Plan, shell: &Shell) -> Vec<String> {
    let names: Vec<String> = head
        .kernels
        .iter()
        .filter(|k| base.kernels.iter().any(|b| b.name == k.name))
        .map(|k| k.name.clone())
        .collect();
    for k in head.kernels.iter().filter(|k| !names.contains(&k.name)) {
        shell.emit(&Event::warning(
            About::NewKernel,
            format!("`{}` is new in this change: the base has no such kernel, nothing to compare", k.name),
        ));
    }
    head.kernels.retain(|k| names.contains(&k.name));
    base.kernels.retain(|k| names.contains(&k.name));
    base.kernels.sort_by_key(|k| names.iter().position(|n| *n == k.name));
    for (b, h) in base.kernels.iter_mut().zip(&head.kernels) {
        match h.env.get(plan::VISIBLE_DEVICES) {
            Some(g) => b.env.insert(plan::VISIBLE_DEVICES.to_string(), g.clone()),
            None => b.env.remove(plan::VISIBLE_DEVICES),
        };
    }
    names
}

/// `--timing-only` times harness benches only: other programs' rounds run under ncu.
pub fn refuse_timing_only(timing_only: bool, plan: &Plan) -> Result<()> {
    match plan.kernels.iter().find(|k| k.runtime != crate::model::kinds::Runtime::Harness) {
        Some(k) if timing_only => Err(Failure::new(
            ExitCode::Config,
            format!("--timing-only needs harness targets; `{}` runs as `{}`", k.name, k.runtime.name()),
        )
        .help("drop --timing-only (its rounds are then timed by ncu), or select harness kernels only")
        .into()),
        _ => Ok(()),
    }
}

/// The base's profiles root gets the head's `ncu_path`, so both sides run the same ncu.
pub fn share_ncu_path(head_root: &Path, base_root: &Path) -> Result<()> {
    std::fs::create_dir_all(base_root)?;
    let head = crate::profile::root::ensure_ncu_path(head_root, None)?;
    let base = base_root.join(head.file_name().unwrap_or_default());
    if !base.exists() {
        std::fs::copy(&head, &base)?;
    }
    Ok(())
}
