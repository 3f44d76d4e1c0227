//! The base side of an A/B check: the revision resolved, checked out into kprof's own
//! worktree beside the line-info builds, its workspace read and the head's request
//! planned there. Both `check --base` and `archive --base` start the base this way.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::build;
use crate::config::Config;
use crate::error::{ExitCode, Failure};
use crate::ops::opening;
use crate::plan::{self, Plan, Request};
use crate::profile::ab::base_profiles_root;
use crate::shell::Shell;
use crate::vcs::worktree::{self, BaseRevision};

/// The base revision's plan: its worktree checked out, its workspace read, the same
/// request resolved there, built into the worktree's own target directory.
pub fn base_side(
    request: &Request,
    head: &Plan,
    manifest: Option<&Path>,
    asked: &str,
    shell: &Shell,
) -> Result<(BaseRevision, Plan, Config)> {
    let repo = worktree::repository_root(&head.workspace_root)?;
    let github_base = std::env::var("GITHUB_BASE_REF").ok();
    let base = worktree::resolve(&repo, asked, github_base.as_deref())?;
    let dir = worktree_dir(head, BASE_TREE);
    let announce = |action: worktree::WorktreeAction| {
        shell.emit(&crate::events::Event::BaseWorktree {
            commit: base.short().to_string(),
            asked: base.asked.clone(),
            dir: dir.clone(),
            action,
        })
    };
    let at = Checkout { repo: &repo, revision: &base, dir: &dir, role: "base" };
    worktree::checkout(&repo, &base, &dir, &announce)?;
    let profile_root = base_profiles_root(&head.profile_root, base.short());
    let (plan, config) = revision_side(&at, request, manifest, profile_root, shell)?;
    Ok((base, plan, config))
}

/// kprof's worktree of the base, beside the line-info builds.
pub const BASE_TREE: &str = "kprof-base";

/// kprof's worktree `name` beside the line-info builds of `head`
/// (`<target-dir>/kprof-base`).
pub fn worktree_dir(head: &Plan, name: &str) -> PathBuf {
    let kprof_dir = match &head.build {
        Some(b) => b.target_dir.clone(),
        None => head.workspace_root.join("target").join("kprof"),
    };
    kprof_dir.with_file_name(name)
}

/// A revision checked out into one of kprof's worktrees.
pub struct Checkout<'a> {
    /// The repository.
    pub repo: &'a Path,
    /// The revision.
    pub revision: &'a BaseRevision,
    /// kprof's worktree.
    pub dir: &'a Path,
    /// What to call it in messages: `base`, `revision`.
    pub role: &'a str,
}

/// A revision's plan, once [`worktree::checkout`] has put it into `at.dir`: its workspace
/// read, `request` resolved there, to build into the worktree's own target directory and
/// profile under `profile_root`.
pub fn revision_side(
    at: &Checkout<'_>,
    request: &Request,
    manifest: Option<&Path>,
    profile_root: PathBuf,
    shell: &Shell,
) -> Result<(Plan, Config)> {
    let (repo, base, dir) = (at.repo, at.revision, at.dir);
    let manifest = match manifest {
        Some(m) => plan::absolute(m)?,
        None => std::env::current_dir()?.join("Cargo.toml"),
    };
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let rel = canon(&manifest)
        .strip_prefix(canon(repo))
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| PathBuf::from("Cargo.toml"));
    let base_manifest = dir.join(&rel);
    if !base_manifest.is_file() {
        return Err(Failure::new(
            ExitCode::Config,
            format!("the {} {} ({}) has no {}", at.role, base.short(), base.asked, rel.display()),
        )
        .help("compare with a revision that has this workspace")
        .into());
    }
    let ws = opening::load_workspace(Some(&base_manifest), shell)?;
    let mut request = request.clone();
    // Inside the tree, where its status check knows to leave it out.
    request.target_dir = Some(dir.join(worktree::BUILD_DIR));
    let mut plan = plan::resolve(&request, &ws.metadata, &ws.config, build::cargo_binary())
        .map_err(|e| e.context(format!("planning the {} {} ({})", at.role, base.short(), base.asked)))?;
    plan.profile_root = profile_root;
    plan.output_dir = None;
    Ok((plan, ws.config))
}
