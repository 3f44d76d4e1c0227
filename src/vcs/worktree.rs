//! The base side of an A/B check: the revision to compare with, and a git worktree of it
//! that kprof keeps beside its line-info builds, so that a second check of the same base
//! builds nothing again.
//!
//! `check --base` with no revision compares with the merge base of `HEAD` and the branch
//! the change will merge into: `origin/$GITHUB_BASE_REF` in a GitHub Actions pull request,
//! else the upstream branch (`@{upstream}`). The merge base, not the branch's tip: commits
//! merged into the branch since the change forked are not the change's.

use std::path::{Path, PathBuf};

use super::basetree::{self, Found};
use super::git::git;
use crate::error::{ExitCode, Failure};
use crate::model::ab::BaseRev;

pub use super::basetree::BUILD_DIR;

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

/// Resolves `--base [REV]` (the merge base when given without a revision) to a commit.
/// `github_base_ref` is `$GITHUB_BASE_REF`.
pub fn resolve(repo: &Path, asked: &BaseRev, github_base_ref: Option<&str>) -> Result<BaseRevision, Failure> {
    let (rev, asked) = if let BaseRev::Named(asked) = asked {
        (asked.to_string(), asked.to_string())
    } else {
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
    };
    let commit =
        git(repo, &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")]).map_err(|said| {
            Failure::new(
                ExitCode::Config,
                format!(
                    "--base {asked}: not a commit of {}{}",
                    repo.display(),
                    if said.said.is_empty() { String::new() } else { format!(" ({said})") }
                ),
            )
            .help("give a branch, tag or commit that `git rev-parse` knows (fetch it first if it is remote)")
        })?;
    Ok(BaseRevision { asked, commit })
}

/// Resolves a revision given to `flag` (`--good`, `--bad`) to a commit, naming the flag
/// when it is none.
pub fn resolve_as(repo: &Path, flag: &str, asked: &str) -> Result<BaseRevision, Failure> {
    let rev = format!("{asked}^{{commit}}");
    let commit =
        git(repo, &["rev-parse", "--verify", "--quiet", "--end-of-options", &rev]).map_err(|said| {
            let said = if said.said.is_empty() { String::new() } else { format!(" ({said})") };
            Failure::new(
                ExitCode::Config,
                format!("{flag} {asked}: not a commit of {}{said}", repo.display()),
            )
            .help("give a branch, tag or commit that `git rev-parse` knows (fetch it first if it is remote)")
        })?;
    Ok(BaseRevision { asked: asked.to_string(), commit })
}

/// What [`checkout`] does with kprof's worktree of the base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorktreeAction {
    /// A new worktree.
    Created,
    /// The worktree already holds the base.
    Reused,
    /// The worktree is moved to the base.
    Moved,
    /// The worktree kprof left unfinished (stopped while git made it or moved it) is
    /// removed and made again.
    Recreated,
    /// The worktree's folder was deleted (`cargo clean`): git's record of it is pruned
    /// and the tree made again.
    Restored,
}

/// A worktree of `base` at `dir`, exactly as git checks the commit out: made on first
/// use (under a temporary name, moved into place once complete), reused when it is at
/// `base` and unchanged, moved to `base` when it is at another commit; made again when
/// kprof left it unfinished or `cargo clean` deleted it. `dir` is kprof's own (under the
/// target directory); a tree that holds edits is refused, naming them, never cleaned, and
/// so is a folder there that is no worktree of `repo`. `announce` hears what is done,
/// before it is.
pub fn checkout(
    repo: &Path,
    base: &BaseRevision,
    dir: &Path,
    announce: &dyn Fn(WorktreeAction),
) -> Result<(), Failure> {
    let trees = basetree::registered(repo)?;
    basetree::remove_leftovers(repo, dir, &trees)?;
    match basetree::inspect(dir, &trees)? {
        Found::Nothing => {
            announce(WorktreeAction::Created);
            create(repo, base, dir)
        }
        Found::Deleted => {
            announce(WorktreeAction::Restored);
            if trees.iter().any(|t| t.locked && basetree::same_place(&t.path, dir)) {
                // Its `worktree add` was stopped: prune keeps locked records.
                basetree::remove(repo, dir)?;
            } else {
                run(repo, &["worktree", "prune"], "git worktree prune", dir)?;
            }
            create(repo, base, dir)
        }
        Found::Incomplete(_) => {
            announce(WorktreeAction::Recreated);
            basetree::remove(repo, dir)?;
            create(repo, base, dir)
        }
        Found::Foreign => Err(Failure::new(
            ExitCode::Filesystem,
            format!(
                "{} is not a git worktree of {}; kprof keeps its worktree of the base there",
                dir.display(),
                repo.display()
            ),
        )
        .help(format!("move or delete {}, and run again", dir.display()))),
        Found::Edited(paths) => Err(basetree::edited(dir, &paths)),
        Found::Ready { head, marked } if head == base.commit => {
            announce(WorktreeAction::Reused);
            if marked {
                Ok(())
            } else {
                basetree::write_state(dir, basetree::COMPLETE)
            }
        }
        Found::Ready { .. } => {
            announce(WorktreeAction::Moved);
            basetree::write_state(dir, basetree::MOVING)?;
            run(dir, &["checkout", "--detach", "--quiet", &base.commit], "git checkout", dir)?;
            basetree::write_state(dir, basetree::COMPLETE)
        }
    }
}

/// Runs git in `dir` for `what`, on kprof's worktree `tree`: a failure's help is to
/// remove that tree.
fn run(dir: &Path, args: &[&str], what: &str, tree: &Path) -> Result<(), Failure> {
    git(dir, args).map(|_| ()).map_err(|e| {
        e.failure(ExitCode::Config, what)
            .help(format!("remove {} (kprof's worktree of the base) and run again", tree.display()))
    })
}

/// Makes the tree of `base` under a temporary name beside `dir` and moves it to `dir`
/// once git's checkout is complete; what a failure leaves is removed, here or by the next
/// check.
fn create(repo: &Path, base: &BaseRevision, dir: &Path) -> Result<(), Failure> {
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| {
            Failure::new(ExitCode::Filesystem, format!("could not create {}: {e}", parent.display()))
        })?;
    }
    // An empty folder (all `inspect` lets through): `worktree move` would move into it.
    if dir.is_dir() {
        std::fs::remove_dir(dir).map_err(|e| {
            Failure::new(ExitCode::Filesystem, format!("could not remove {}: {e}", dir.display()))
        })?;
    }
    let tmp = basetree::temporary(dir);
    let (at, to) = (tmp.to_string_lossy(), dir.to_string_lossy());
    let made = run(
        repo,
        &["worktree", "add", "--detach", "--quiet", &at, &base.commit],
        &format!("git worktree add {at}"),
        dir,
    )
    .and_then(|()| basetree::write_state(&tmp, basetree::COMPLETE))
    .and_then(|()| match std::fs::symlink_metadata(dir) {
        // `worktree move` would move the tree into whatever another check put there.
        Ok(_) => Err(Failure::new(ExitCode::Filesystem, format!("{to} appeared while kprof made it"))
            .help("another check of this workspace made it meanwhile: run again when it is done")),
        Err(_) => run(repo, &["worktree", "move", &at, &to], &format!("git worktree move {at} {to}"), dir),
    });
    if made.is_err() && tmp.exists() {
        basetree::remove(repo, &tmp).ok();
    }
    made
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
        let one = resolve(&root, &BaseRev::Named("HEAD~1".into()), None).unwrap();
        let two = resolve(&root, &BaseRev::Named("HEAD".into()), None).unwrap();
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
        assert!(err.to_string().contains("holds edits: a.txt"), "{err}");
        assert_eq!(std::fs::read_to_string(wt.join("a.txt")).unwrap(), "mine\n");
    }

    /// What `checkout` announced, by name.
    fn checkout_heard(root: &Path, base: &BaseRevision, wt: &Path) -> Result<Vec<WorktreeAction>, Failure> {
        let heard = std::cell::RefCell::new(Vec::new());
        checkout(root, base, wt, &|a| heard.borrow_mut().push(a))?;
        Ok(heard.into_inner())
    }

    /// An add stopped before its checkout (Ctrl-C, a kill) leaves a registered tree at the
    /// commit with no files; it is made again, never built as the base. So is a temporary
    /// tree a stopped kprof left beside it.
    #[test]
    fn a_worktree_left_incomplete_is_made_again() {
        let Some(tmp) = repo() else { return };
        let root = repository_root(tmp.path()).unwrap();
        let one = resolve(&root, &BaseRev::Named("HEAD~1".into()), None).unwrap();
        let wt = tmp.path().join("target/kprof-base");
        run(&root, &["worktree", "add", "--no-checkout", "--detach", wt.to_str().unwrap(), &one.commit]);
        let stale = tmp.path().join("target/kprof-base.tmp-4194305");
        run(&root, &["worktree", "add", "--lock", "--detach", stale.to_str().unwrap(), &one.commit]);
        let trees = basetree::registered(&root).unwrap();
        let found = basetree::inspect(&wt, &trees).unwrap();
        assert!(matches!(&found, Found::Incomplete(why) if why.contains("no index")), "{found:?}");
        let heard = checkout_heard(&root, &one, &wt).unwrap();
        assert_eq!(heard, [WorktreeAction::Recreated]);
        assert_eq!(std::fs::read_to_string(wt.join("a.txt")).unwrap(), "one\n");
        assert!(!stale.exists(), "the stopped kprof's temporary tree is removed");
        let listed = git(&root, &["worktree", "list", "--porcelain"]).unwrap();
        assert!(!listed.contains(".tmp-"), "{listed}");
        assert_eq!(checkout_heard(&root, &one, &wt).unwrap(), [WorktreeAction::Reused]);
    }

    /// A tracked file edited in the worktree, or a new file there, is never built as the
    /// base, even at the right commit: refused, naming the files, and nothing discarded.
    /// kprof's own build folder and the lock file cargo writes are not edits.
    #[test]
    fn an_edited_worktree_is_refused_at_its_commit_too() {
        let Some(tmp) = repo() else { return };
        let root = repository_root(tmp.path()).unwrap();
        let one = resolve(&root, &BaseRev::Named("HEAD~1".into()), None).unwrap();
        let wt = tmp.path().join("target/kprof-base");
        checkout(&root, &one, &wt, &|_| {}).unwrap();
        std::fs::create_dir_all(wt.join("target/kprof/debug")).unwrap();
        std::fs::write(wt.join("target/kprof/debug/x"), "built").unwrap();
        std::fs::write(wt.join("Cargo.lock"), "# written by cargo\n").unwrap();
        assert_eq!(checkout_heard(&root, &one, &wt).unwrap(), [WorktreeAction::Reused]);
        std::fs::write(wt.join("a.txt"), "mine\n").unwrap();
        let err = checkout(&root, &one, &wt, &|_| {}).unwrap_err();
        let shown = format!("{err:#}");
        assert!(shown.contains("edits") && shown.contains("a.txt"), "{shown}");
        assert!(err.help.iter().any(|h| h.contains("commit or discard")), "{:?}", err.help);
        assert_eq!(std::fs::read_to_string(wt.join("a.txt")).unwrap(), "mine\n");
        for n in 0..7 {
            std::fs::write(wt.join(format!("new{n}.rs")), "").unwrap();
        }
        let err = checkout(&root, &one, &wt, &|_| {}).unwrap_err().to_string();
        assert!(err.contains("a.txt, new0.rs, new1.rs, new2.rs, new3.rs and 3 more"), "{err}");
        assert!(wt.join("new6.rs").is_file());
    }

    /// `cargo clean` deletes the worktree's folder, not git's record of it: the next
    /// checkout forgets the record and makes the tree again.
    #[test]
    fn a_worktree_deleted_with_the_target_directory_is_made_again() {
        let Some(tmp) = repo() else { return };
        let root = repository_root(tmp.path()).unwrap();
        let one = resolve(&root, &BaseRev::Named("HEAD~1".into()), None).unwrap();
        let wt = tmp.path().join("target/kprof-base");
        checkout(&root, &one, &wt, &|_| {}).unwrap();
        std::fs::remove_dir_all(tmp.path().join("target")).unwrap();
        let heard = checkout_heard(&root, &one, &wt).unwrap();
        assert_eq!(heard, [WorktreeAction::Restored]);
        assert_eq!(std::fs::read_to_string(wt.join("a.txt")).unwrap(), "one\n");
    }

    /// A folder at the worktree's place that is no worktree of the repository is refused:
    /// git run there would act on the repository around it.
    #[test]
    fn a_folder_that_is_no_worktree_is_refused_and_the_repository_left_alone() {
        let Some(tmp) = repo() else { return };
        let root = repository_root(tmp.path()).unwrap();
        let one = resolve(&root, &BaseRev::Named("HEAD~1".into()), None).unwrap();
        let two = resolve(&root, &BaseRev::Named("HEAD".into()), None).unwrap();
        let wt = tmp.path().join("target/kprof-base");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join("notes.txt"), "someone's").unwrap();
        let err = checkout(&root, &one, &wt, &|_| {}).unwrap_err();
        assert!(err.to_string().contains("not a git worktree"), "{err}");
        assert_eq!(git(&root, &["rev-parse", "HEAD"]).unwrap(), two.commit);
        assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "two\n");
        assert!(wt.join("notes.txt").is_file());
    }

    /// The state file of the tree at `wt`.
    fn state_file(wt: &Path) -> PathBuf {
        PathBuf::from(git(wt, &["rev-parse", "--absolute-git-dir"]).unwrap()).join("kprof-state")
    }

    /// A move to another commit that was stopped half-way leaves the tree half moved; kprof
    /// knows it was moving it, and makes it again rather than calling it edits.
    #[test]
    fn a_move_stopped_half_way_is_made_again() {
        let Some(tmp) = repo() else { return };
        let root = repository_root(tmp.path()).unwrap();
        let (one, two) = (
            resolve(&root, &BaseRev::Named("HEAD~1".into()), None).unwrap(),
            resolve(&root, &BaseRev::Named("HEAD".into()), None).unwrap(),
        );
        let wt = tmp.path().join("target/kprof-base");
        checkout(&root, &one, &wt, &|_| {}).unwrap();
        assert_eq!(std::fs::read_to_string(state_file(&wt)).unwrap(), "complete\n");
        basetree::write_state(&wt, basetree::MOVING).unwrap();
        std::fs::write(wt.join("a.txt"), "two\n").unwrap();
        assert_eq!(checkout_heard(&root, &one, &wt).unwrap(), [WorktreeAction::Recreated]);
        assert_eq!(std::fs::read_to_string(wt.join("a.txt")).unwrap(), "one\n");
        assert_eq!(checkout_heard(&root, &two, &wt).unwrap(), [WorktreeAction::Moved]);
        assert_eq!(std::fs::read_to_string(state_file(&wt)).unwrap(), "complete\n");
    }

    /// A tree made before kprof wrote its state file is taken as complete when git finds
    /// it unchanged; the temporary tree of a kprof still running is left alone.
    #[test]
    fn an_unchanged_tree_without_a_state_file_is_reused_and_others_trees_left_alone() {
        let Some(tmp) = repo() else { return };
        let root = repository_root(tmp.path()).unwrap();
        let one = resolve(&root, &BaseRev::Named("HEAD~1".into()), None).unwrap();
        let wt = tmp.path().join("target/kprof-base");
        run(&root, &["worktree", "add", "--detach", wt.to_str().unwrap(), &one.commit]);
        // Process 1 runs for as long as the machine does.
        let running = tmp.path().join("target/kprof-base.tmp-1");
        run(&root, &["worktree", "add", "--detach", running.to_str().unwrap(), &one.commit]);
        let unrecorded = tmp.path().join("target/kprof-base.tmp-4194305");
        std::fs::create_dir_all(unrecorded.join("src")).unwrap();
        assert_eq!(checkout_heard(&root, &one, &wt).unwrap(), [WorktreeAction::Reused]);
        assert_eq!(std::fs::read_to_string(state_file(&wt)).unwrap(), "complete\n");
        assert!(running.join("a.txt").is_file());
        assert!(!unrecorded.exists());
    }

    /// A tree whose `git worktree add` was stopped is locked; after `cargo clean` its
    /// record is removed all the same (prune keeps locked records) and the tree made again.
    #[test]
    fn a_locked_record_of_a_deleted_tree_is_removed() {
        let Some(tmp) = repo() else { return };
        let root = repository_root(tmp.path()).unwrap();
        let one = resolve(&root, &BaseRev::Named("HEAD~1".into()), None).unwrap();
        let wt = tmp.path().join("target/kprof-base");
        run(&root, &["worktree", "add", "--lock", "--detach", wt.to_str().unwrap(), &one.commit]);
        std::fs::remove_dir_all(tmp.path().join("target")).unwrap();
        assert_eq!(checkout_heard(&root, &one, &wt).unwrap(), [WorktreeAction::Restored]);
        assert_eq!(std::fs::read_to_string(wt.join("a.txt")).unwrap(), "one\n");
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
        let err = resolve(tmp.path(), &BaseRev::Named("nothere".into()), None).unwrap_err();
        assert!(err.to_string().contains("--base nothere: not a commit"), "{err}");
        let err = resolve(tmp.path(), &BaseRev::MergeBase, None).unwrap_err();
        assert!(err.to_string().contains("no merge base of HEAD and @{upstream}"), "{err}");
        let err = resolve(tmp.path(), &BaseRev::MergeBase, Some("main")).unwrap_err();
        assert!(err.to_string().contains("origin/main"), "{err}");
    }
}
