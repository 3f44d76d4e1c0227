//! `cargo kprof bisect` from a checkout: `--good` lives in kprof's worktree of the base
//! (`<target-dir>/kprof-base`, the one `check --base GOOD` uses) and is built once; the
//! revisions checked take turns in a second worktree, `<target-dir>/kprof-bisect`, whose
//! target directory keeps their builds incremental.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{CheckOptions, Context, Revisions};
use crate::compare::bisect::check_bound;
use crate::error::{ExitCode, Failure};
use crate::events::{BisectStarted, Event};
use crate::ops::ab::side::{Checkout, Side, SideSource, Tree};
use crate::ops::ab::sides;
use crate::ops::opening::{self, RequestFn};
use crate::plan::{self, Plan, Request};
use crate::shell::Shell;
use crate::vcs::history::{self, Commit};
use crate::vcs::worktree;

/// A bisect from a checkout, resolved from the command line.
pub struct Bisect<'a> {
    /// `--manifest-path`.
    pub manifest_path: Option<&'a Path>,
    /// `--good`.
    pub good: &'a str,
    /// `--bad`.
    pub bad: &'a str,
    /// How each check runs.
    pub check: CheckOptions,
}

/// The revisions of the repository, checked out in turn into kprof's bisect worktree.
struct Checkouts<'a> {
    manifest_path: Option<&'a Path>,
    repo: PathBuf,
    request: Request,
    head: Plan,
}

impl Revisions for Checkouts<'_> {
    fn side(
        &mut self,
        _index: usize,
        commit: &Commit,
        root: PathBuf,
        shell: &Shell,
    ) -> Result<Result<Side, String>> {
        let rev = commit.revision();
        let name = format!("revision {}", rev.short());
        let at = Checkout {
            head: &self.head,
            repo: self.repo.clone(),
            revision: rev,
            tree: Tree::Bisect,
            request: &self.request,
            manifest: self.manifest_path,
            profile_root: root,
        };
        // A worktree kprof cannot use (edited, someone else's) ends the bisect: no revision
        // could be checked there.
        let side = SideSource::Revision(at).plan(shell)?.and_then(|(side, _)| side.build(&name, shell));
        match side {
            Ok(s) => Ok(Ok(s)),
            Err(e) => super::skip_reason(e).map(Err),
        }
    }
}

/// Runs the bisect and returns its exit code: 10 when a regressed revision is named, 0
/// when `--bad` did not regress, 14 when `--bad` could not be told from `--good`.
/// `request` is the profile request (`-k` and the rest).
pub fn bisect(request: RequestFn<'_>, o: &Bisect<'_>, shell: &Shell) -> Result<ExitCode> {
    let ws = opening::load_workspace(o.manifest_path, shell)?;
    let request = opening::with_engine_shard(request()?)?;
    refuse_request(&request)?;
    let head = plan::resolve(&request, &ws.metadata, &ws.config, crate::build::cargo_binary())?;
    sides::refuse_timing_only(o.check.timing_only, &head)?;
    let extras =
        crate::ops::profile::Extras { timing: false, timing_only: false, dirs_only: o.check.timing_only };
    crate::ops::profile::preflight(&head, extras)?;
    let repo = worktree::repository_root(&head.workspace_root)?;
    let good_rev = worktree::resolve_as(&repo, "--good", o.good)?;
    let bad_rev = worktree::resolve_as(&repo, "--bad", o.bad)?;
    let commits = history::first_parent(&repo, &good_rev, &bad_rev)?;
    shell.emit(&Event::BisectStarted(BisectStarted {
        good: good_rev.clone(),
        bad: bad_rev.clone(),
        revisions: commits.len(),
        builds: None,
        check_bound: check_bound(commits.len()),
    }));
    let good = Checkout {
        head: &head,
        repo: repo.clone(),
        revision: good_rev.clone(),
        tree: Tree::Base,
        request: &request,
        manifest: o.manifest_path,
        profile_root: crate::profile::ab::base_profiles_root(&head.profile_root, good_rev.short()),
    };
    let (good, _) = SideSource::Revision(good).plan(shell)??;
    opening::create_profiles_root(&head.profile_root, shell)?;
    sides::share_ncu_path(&head.profile_root, &good.plan.profile_root)?;
    let good = good.build(&format!("--good {}", good_rev.short()), shell).map_err(|e| {
        e.context(format!("--good {} ({}) does not build: nothing to compare with", o.good, good_rev.short()))
    })?;
    let ctx = Context {
        o: &o.check,
        root: head.profile_root.clone(),
        kernels: head.kernels.iter().map(|k| k.name.clone()).collect(),
        good,
        good_rev,
        good_build: None,
        bad: bad_rev,
        history: commits,
    };
    let mut checkouts = Checkouts { manifest_path: o.manifest_path, repo, request, head };
    super::run(&ctx, &mut checkouts, shell)
}

/// A bisect runs checks: the request may not ask for a dry run, and names its kernels.
pub(super) fn refuse_request(request: &Request) -> Result<(), Failure> {
    if request.dry_run {
        return Err(Failure::new(ExitCode::Usage, "bisect runs A/B checks: --dry-run does not go with it")
            .help("see what one check would run: cargo kprof check --base REV --dry-run"));
    }
    if request.kernels.is_empty() && request.kernel_regex.is_none() {
        return Err(Failure::new(ExitCode::Usage, "bisect needs the kernel that got slower: -k KERNEL")
            .help("e.g. cargo kprof bisect --good v1.2.0 -k hgemm_tiled (see cargo kprof list)"));
    }
    Ok(())
}
