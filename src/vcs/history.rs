//! The history `cargo kprof bisect` searches: the first-parent path from `--good` to
//! `--bad`, each commit with its subject and author date.

use std::path::Path;

use serde::Serialize;

use super::git::{git, output};
use super::worktree::BaseRevision;
use crate::error::{ExitCode, Failure};

/// One commit of the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Commit {
    /// The full hash.
    pub commit: String,
    /// The subject line.
    pub subject: String,
    /// The author date, ISO 8601.
    pub date: String,
}

impl Commit {
    /// The first 12 digits.
    pub fn short(&self) -> &str {
        self.commit.get(..12).unwrap_or(&self.commit)
    }

    /// This commit as a revision asked for by its hash.
    pub fn revision(&self) -> BaseRevision {
        BaseRevision { asked: self.short().to_string(), commit: self.commit.clone() }
    }
}

/// The commits after `good` up to `bad` on `bad`'s first-parent path, oldest first;
/// refused, naming both, when `good` is not on that path or is `bad` itself.
pub fn first_parent(repo: &Path, good: &BaseRevision, bad: &BaseRevision) -> Result<Vec<Commit>, Failure> {
    let range = format!("{}..{}", good.commit, bad.commit);
    let listed = output(repo, &["log", "--first-parent", "--reverse", "--format=%H%x00%s%x00%aI", &range])
        .map_err(|e| e.failure(ExitCode::Config, format!("git log {range}")))?;
    let commits: Vec<Commit> = listed
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, '\0');
            Some(Commit {
                commit: parts.next()?.to_string(),
                subject: parts.next()?.to_string(),
                date: parts.next()?.to_string(),
            })
        })
        .collect();
    let not_on_path = || {
        Failure::new(
            ExitCode::Config,
            format!(
                "--good {} ({}) is not an ancestor of --bad {} ({}) on its first-parent path",
                good.asked,
                good.short(),
                bad.asked,
                bad.short()
            ),
        )
        .help("give as --good a commit of the branch --bad is on, older than --bad (git log --first-parent)")
    };
    let Some(first) = commits.first() else { return Err(not_on_path()) };
    let parent = git(repo, &["rev-parse", &format!("{}^1", first.commit)]).map_err(|_| not_on_path())?;
    if parent != good.commit {
        return Err(not_on_path());
    }
    Ok(commits)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs git in `dir` through the crate's runner, as the code under test does.
    fn run(dir: &Path, args: &[&str]) -> String {
        let done = git(dir, args);
        assert!(done.is_ok(), "git {args:?}: {done:?}");
        done.unwrap()
    }

    fn commit(dir: &Path, subject: &str) -> BaseRevision {
        // A file of its own, so that the merge below meets no conflict.
        let file = format!("{subject}.txt");
        std::fs::write(dir.join(&file), subject).unwrap();
        run(dir, &["add", &file]);
        run(dir, &["commit", "-qm", subject]);
        BaseRevision { asked: subject.into(), commit: run(dir, &["rev-parse", "HEAD"]) }
    }

    /// main: c0 - c1 - M - c3, where M merges a side branch s1 - s2 forked at c0: the
    /// history is c1, M, c3 (the side branch's commits are the merge's, not steps of
    /// their own), oldest first, with subjects and dates; a --good off that path, or
    /// --good equal to --bad, is refused naming both.
    #[test]
    fn the_history_is_the_first_parent_path_and_a_good_off_it_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        if git(dir, &["init", "-q", "-b", "main"]).is_err() {
            return;
        }
        for (k, v) in [("user.email", "t@example.com"), ("user.name", "t"), ("commit.gpgsign", "false")] {
            run(dir, &["config", k, v]);
        }
        let c0 = commit(dir, "c0");
        run(dir, &["checkout", "-qb", "side"]);
        let _s1 = commit(dir, "s1");
        let s2 = commit(dir, "s2");
        run(dir, &["checkout", "-q", "main"]);
        let c1 = commit(dir, "c1");
        run(dir, &["merge", "-q", "--no-ff", "-m", "M", "side"]);
        let m = run(dir, &["rev-parse", "HEAD"]);
        let c3 = commit(dir, "c3");
        let history = first_parent(dir, &c0, &c3).unwrap();
        let subjects: Vec<&str> = history.iter().map(|c| c.subject.as_str()).collect();
        assert_eq!(subjects, ["c1", "M", "c3"]);
        assert_eq!(history[0].commit, c1.commit);
        assert_eq!(history[1].commit, m);
        assert!(history.iter().all(|c| c.date.len() >= 20 && c.date.contains('T')), "{history:?}");
        assert_eq!(history[2].short(), &c3.commit[..12]);
        // s2 is an ancestor of c3, but not on its first-parent path.
        let off = first_parent(dir, &s2, &c3).unwrap_err();
        assert_eq!(off.code, ExitCode::Config);
        assert!(off.to_string().contains("--good s2") && off.to_string().contains("--bad c3"), "{off}");
        assert!(first_parent(dir, &c3, &c3).is_err());
        assert!(first_parent(dir, &c3, &c0).is_err());
    }
}
