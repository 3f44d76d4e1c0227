//! git, run through the crate's process runner: what it printed, or what it said when it
//! failed, and whether kprof was stopped by a signal meanwhile.

use std::fmt;
use std::path::Path;

use crate::error::{ExitCode, Failure, Signal};
use crate::process::{self, Ending, ProcessBuilder, RunOptions};
use crate::shell::Shell;

/// A git command that failed: git's own words, and the signal that stopped it, if one did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitError {
    /// What git wrote to stderr, or why it could not run.
    pub said: String,
    /// The signal kprof received while git ran (git was stopped, or never started).
    pub signal: Option<Signal>,
}

impl fmt::Display for GitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.said)
    }
}

impl GitError {
    /// The failure of `what` (`git worktree add DIR`): exit `code` with git's words, or
    /// the exit code of the signal that stopped it.
    pub fn failure(&self, code: ExitCode, what: impl fmt::Display) -> Failure {
        match self.signal {
            Some(signal) => process::interrupted(signal, &format!("during {what}")),
            None => Failure::new(code, format!("{what}: {}", self.said)),
        }
    }
}

/// Runs git in `dir` and returns its stdout as written (`-z` output keeps its spaces).
pub fn output(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    let mut cmd = ProcessBuilder::new("git");
    cmd.arg("-C").arg(dir).args(args);
    let done = process::run(&cmd, RunOptions::default(), &Shell::quiet());
    let failed = |said: String, signal: Option<Signal>| Err(GitError { said, signal });
    match &done.ending {
        Ending::Exited(s) if s.success() => Ok(done.stdout_text()),
        Ending::Exited(_) => failed(done.stderr_text().trim().to_string(), None),
        Ending::NotStarted(why) => failed(format!("git could not be started: {why}"), None),
        Ending::Interrupted(signal) => failed(format!("git {}", done.ending), Some(*signal)),
        other => failed(format!("git {other}"), None),
    }
}

/// Runs git in `dir` and returns its stdout, trimmed.
pub fn git(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    output(dir, args).map(|out| out.trim().to_string())
}
