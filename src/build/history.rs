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
