//! The base side of an A/B check: the revision resolved, checked out into kprof's own
//! worktree beside the line-info builds, its workspace read and the head's request
//! planned there. Both `check --base` and `archive --base` start the base this way.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::build;
use crate::build::worktree::{self, BaseRevision};
use crate::config::Config;
use crate::error::{ExitCode, Failure};
use crate::ops::opening;
use crate::plan::{self, Plan, Request};
use crate::profile::ab::base_profiles_root;
use crate::shell::Shell;

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
    let kprof_dir = match &head.build {
        Some(b) => b.target_dir.clone(),
        None => head.workspace_root.join("target").join("kprof"),
    };
    let dir = kprof_dir.with_file_name("kprof-base");
    let announce = |action: worktree::WorktreeAction| {
        shell.emit(&crate::events::Event::BaseWorktree {
            commit: base.short().to_string(),
            asked: base.asked.clone(),
            dir: dir.clone(),
            action: action.name(),
        })
    };
    worktree::checkout(&repo, &base, &dir, &announce)?;
    let manifest = match manifest {
        Some(m) => plan::absolute(m)?,
        None => std::env::current_dir()?.join("Cargo.toml"),
    };
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let rel = canon(&manifest)
        .strip_prefix(canon(&repo))
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| PathBuf::from("Cargo.toml"));
    let base_manifest = dir.join(&rel);
    if !base_manifest.is_file() {
        return Err(Failure::new(
            ExitCode::Config,
            format!("the base {} ({}) has no {}", base.short(), base.asked, rel.display()),
        )
        .help("compare with a revision that has this workspace")
        .into());
    }
    let ws = opening::load_workspace(Some(&base_manifest), shell)?;
    let mut request = request.clone();
    // Inside the tree, where its status check knows to leave it out.
    request.target_dir = Some(dir.join(worktree::BUILD_DIR));
    let mut plan = plan::resolve(&request, &ws.metadata, &ws.config, build::cargo_binary())
        .map_err(|e| e.context(format!("planning the base {} ({})", base.short(), base.asked)))?;
    plan.profile_root = base_profiles_root(&head.profile_root, base.short());
    plan.output_dir = None;
    Ok((base, plan, ws.config))
}
