//! The base side of an A/B check: the revision to compare with, and a git worktree of it
//! that kprof keeps beside its line-info builds, so that a second check of the same base
//! builds nothing again.
//!
//! `check --base` with no revision compares with the merge base of `HEAD` and the branch
//! the change will merge into: `origin/$GITHUB_BASE_REF` in a GitHub Actions pull request,
//! else the upstream branch (`@{upstream}`). The merge base, not the branch's tip: commits
//! merged into the branch since the change forked are not the change's.

use std::path::{Path, PathBuf};

use crate::error::{ExitCode, Failure};
use crate::process::{self, Ending, ProcessBuilder, RunOptions};
use crate::shell::Shell;

/// The base revision, resolved (its JSON is `{"asked": ..., "commit": ...}`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BaseRevision {
    /// What the user asked for (`main`, `HEAD~1`), or how it was chosen (`merge base of
    /// HEAD and origin/main`).
    pub asked: String,
    /// The commit: 40 hex digits (64 in a SHA-256 repository).
    pub commit: String,
}

impl BaseRevision {
    /// The first 12 digits, for names and messages (the first 12 characters of any text).
    pub fn short(&self) -> &str {
        match self.commit.char_indices().nth(12) {
            Some((end, _)) => &self.commit[..end],
            None => &self.commit,
        }
    }
}

/// Runs git in `dir` and returns its trimmed stdout, or git's own words.
fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let mut cmd = ProcessBuilder::new("git");
    cmd.arg("-C").arg(dir).args(args);
    let done = process::run(&cmd, RunOptions::default(), &Shell::quiet());
    match &done.ending {
        Ending::Exited(s) if s.success() => Ok(done.stdout_text().trim().to_string()),
        Ending::Exited(_) => Err(done.stderr_text().trim().to_string()),
        Ending::NotStarted(why) => Err(format!("git could not be started: {why}")),
        other => Err(format!("git {other}")),
    }
}

/// The top of the git repository holding `dir`.
pub fn repository_root(dir: &Path) -> Result<PathBuf, Failure> {
    git(dir, &["rev-parse", "--show-toplevel"]).map(PathBuf::from).map_err(|said| {
        Failure::new(
            ExitCode::Config,
            format!("--base needs a git repository: {} is not in one ({said})", dir.display()),
        )
        .help("run in a git checkout, or compare with a saved baseline: --baseline NAME")
    })
}

/// Resolves `--base [REV]` (`auto` when given without a revision) to a commit.
/// `github_base_ref` is `$GITHUB_BASE_REF`.
pub fn resolve(repo: &Path, asked: &str, github_base_ref: Option<&str>) -> Result<BaseRevision, Failure> {
    let (rev, asked) = if asked == "auto" {
        let branch = match github_base_ref.filter(|r| !r.is_empty()) {
            Some(r) => format!("origin/{r}"),
            None => "@{upstream}".to_string(),
        };
        let base = git(repo, &["merge-base", "HEAD", &branch]).map_err(|said| {
            Failure::new(ExitCode::Config, format!("--base: no merge base of HEAD and {branch} ({said})"))
                .help(if branch == "@{upstream}" {
                    "the branch has no upstream: name the base, e.g. --base main or --base origin/main"
                        .to_string()
                } else {
                    format!(
                        "fetch it first (actions/checkout with fetch-depth: 0, or git fetch origin {})",
                        &branch[7..]
                    )
                })
        })?;
        (base, format!("merge base of HEAD and {branch}"))
    } else {
        (asked.to_string(), asked.to_string())
    };
    let commit =
        git(repo, &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")]).map_err(|said| {
            Failure::new(
                ExitCode::Config,
                format!(
                    "--base {asked}: not a commit of {}{}",
                    repo.display(),
                    if said.is_empty() { String::new() } else { format!(" ({said})") }
                ),
            )
            .help("give a branch, tag or commit that `git rev-parse` knows (fetch it first if it is remote)")
        })?;
    Ok(BaseRevision { asked, commit })
}

/// What [`checkout`] does with kprof's worktree of the base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorktreeAction {
    /// A new worktree.
    Created,
    /// The worktree already holds the base.
    Reused,
    /// The worktree is moved to the base.
    Moved,
}

impl WorktreeAction {
    /// `created`, `reused` or `moved`.
    pub fn name(self) -> &'static str {
        match self {
            WorktreeAction::Created => "created",
            WorktreeAction::Reused => "reused",
            WorktreeAction::Moved => "moved",
        }
    }
}

/// A worktree of `base` at `dir`: made on first use, moved to `base` when it holds another
/// commit. `dir` is kprof's own (under the target directory); one that holds changes
/// of someone's is refused, never cleaned. `announce` hears what is done, before it is.
pub fn checkout(
    repo: &Path,
    base: &BaseRevision,
    dir: &Path,
    announce: &dyn Fn(WorktreeAction),
) -> Result<(), Failure> {
    let failed = |what: String, said: String| {
        Failure::new(ExitCode::Config, format!("{what}: {said}"))
            .help(format!("remove {} (kprof's worktree of the base) and run again", dir.display()))
    };
    if !dir.exists() {
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                Failure::new(ExitCode::Filesystem, format!("could not create {}: {e}", parent.display()))
            })?;
        }
        announce(WorktreeAction::Created);
        let path = dir.to_string_lossy();
        return git(repo, &["worktree", "add", "--detach", "--quiet", &path, &base.commit])
            .map(|_| ())
            .map_err(|said| failed(format!("git worktree add {path}"), said));
    }
    let head = git(dir, &["rev-parse", "HEAD"])
        .map_err(|said| failed(format!("{} is not a worktree", dir.display()), said))?;
    if head == base.commit {
        announce(WorktreeAction::Reused);
        return Ok(());
    }
    let dirty = git(dir, &["status", "--porcelain", "--untracked-files=no"])
        .map_err(|said| failed("git status".into(), said))?;
    if !dirty.is_empty() {
        return Err(failed(format!("the base worktree {} has changes", dir.display()), dirty));
    }
    announce(WorktreeAction::Moved);
    git(dir, &["checkout", "--detach", "--quiet", &base.commit])
        .map(|_| ())
        .map_err(|said| failed("git checkout".into(), said))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs git in `dir` through the crate's runner, as the code under test does.
    fn run(dir: &Path, args: &[&str]) {
        let done = git(dir, args);
        assert!(done.is_ok(), "git {args:?}: {done:?}");
    }

    /// A repository of two commits, or `None` where git cannot make one.
    fn repo() -> Option<tempfile::TempDir> {
        let tmp = tempfile::tempdir().unwrap();
        git(tmp.path(), &["init", "-q"]).ok()?;
        for (k, v) in [("user.email", "t@example.com"), ("user.name", "t"), ("commit.gpgsign", "false")] {
            run(tmp.path(), &["config", k, v]);
        }
        std::fs::write(tmp.path().join("a.txt"), "one\n").unwrap();
        run(tmp.path(), &["add", "a.txt"]);
        run(tmp.path(), &["commit", "-qm", "one"]);
        std::fs::write(tmp.path().join("a.txt"), "two\n").unwrap();
        run(tmp.path(), &["commit", "-qam", "two"]);
        Some(tmp)
    }

    #[test]
    fn a_revision_resolves_and_its_worktree_is_made_then_reused_then_moved() {
        let Some(tmp) = repo() else { return };
        let root = repository_root(tmp.path()).unwrap();
        let one = resolve(&root, "HEAD~1", None).unwrap();
        let two = resolve(&root, "HEAD", None).unwrap();
        assert_ne!(one.commit, two.commit);
        assert_eq!(one.commit.len(), 40);
        let wt = tmp.path().join("target/kprof-base");
        checkout(&root, &one, &wt, &|_| {}).unwrap();
        assert_eq!(std::fs::read_to_string(wt.join("a.txt")).unwrap(), "one\n");
        checkout(&root, &one, &wt, &|_| {}).unwrap();
        checkout(&root, &two, &wt, &|_| {}).unwrap();
        assert_eq!(std::fs::read_to_string(wt.join("a.txt")).unwrap(), "two\n");
        // Someone's change in the worktree is refused, never discarded.
        std::fs::write(wt.join("a.txt"), "mine\n").unwrap();
        let err = checkout(&root, &one, &wt, &|_| {}).unwrap_err();
        assert!(err.to_string().contains("has changes"), "{err}");
        assert_eq!(std::fs::read_to_string(wt.join("a.txt")).unwrap(), "mine\n");
    }

    #[test]
    fn a_short_commit_is_cut_at_a_character() {
        let odd = BaseRevision { asked: "x".into(), commit: format!("a{}", "é".repeat(20)) };
        assert_eq!(odd.short(), format!("a{}", "é".repeat(11)));
        let empty = BaseRevision { asked: "x".into(), commit: String::new() };
        assert_eq!(empty.short(), "");
    }

    #[test]
    fn unknown_revisions_and_missing_upstreams_say_what_to_pass() {
        let Some(tmp) = repo() else { return };
        let err = resolve(tmp.path(), "nothere", None).unwrap_err();
        assert!(err.to_string().contains("--base nothere: not a commit"), "{err}");
        let err = resolve(tmp.path(), "auto", None).unwrap_err();
        assert!(err.to_string().contains("no merge base of HEAD and @{upstream}"), "{err}");
        let err = resolve(tmp.path(), "auto", Some("main")).unwrap_err();
        assert!(err.to_string().contains("origin/main"), "{err}");
    }
}
