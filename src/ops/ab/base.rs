//! The base side of an A/B check: the revision `--base` names, resolved in the head's
//! repository, as the source of a side ([`super::side`]): checked out into kprof's own
//! worktree of the base beside the line-info builds, the head's request planned there.
//! `check --base` and `archive --base` start the base this way.

use std::path::Path;

use anyhow::Result;

use super::side::{Checkout, Tree};
use crate::model::ab::BaseRev;
use crate::plan::{Plan, Request};
use crate::profile::ab::base_profiles_root;
use crate::vcs::worktree;

/// The base `asked` names (the merge base with the upstream branch when it names none), resolved in
/// the repository of `head`, to check out as [`super::side::SideSource::Revision`]: into kprof's
/// worktree of the base, its profiles under the head's profiles root.
pub fn checkout<'a>(
    request: &'a Request,
    head: &'a Plan,
    manifest: Option<&'a Path>,
    asked: &BaseRev,
) -> Result<Checkout<'a>> {
    let repo = worktree::repository_root(&head.workspace_root)?;
    let github_base = std::env::var("GITHUB_BASE_REF").ok();
    let revision = worktree::resolve(&repo, asked, github_base.as_deref())?;
    let profile_root = base_profiles_root(&head.profile_root, revision.short());
    Ok(Checkout { head, repo, revision, tree: Tree::Base, request, manifest, profile_root })
}
