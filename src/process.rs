//! A child-process builder whose `Display` is the exact, shell-quoted command line.
//!
//! `commands.sh`, `--dry-run` and error messages all print a [`ProcessBuilder`], and
//! the same value is what gets spawned, so what we show is what we run. Errors from
//! a failed child carry its exit status and the tail of its output.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A program, its arguments, extra environment and working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessBuilder {
    program: OsString,
    args: Vec<OsString>,
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
}

impl ProcessBuilder {
    /// A builder for `program` with no arguments.
    pub fn new(program: impl Into<OsString>) -> Self {
        ProcessBuilder { program: program.into(), args: Vec::new(), env: BTreeMap::new(), cwd: None }
    }

    /// Appends one argument.
    pub fn arg(&mut self, arg: impl Into<OsString>) -> &mut Self {
        self.args.push(arg.into());
        self
    }

    /// Appends several arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the child (in addition to the inherited ones).
    pub fn env(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Sets the working directory.
    pub fn cwd(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.cwd = Some(dir.into());
        self
    }

    /// The program.
    pub fn get_program(&self) -> &OsString {
        &self.program
    }

    /// The arguments.
    pub fn get_args(&self) -> &[OsString] {
        &self.args
    }

    /// The extra environment variables, sorted by name.
    pub fn get_envs(&self) -> &BTreeMap<String, String> {
        &self.env
    }

    /// The working directory, if set.
    pub fn get_cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// A `std::process::Command` configured exactly as displayed.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args);
        cmd.envs(&self.env);
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        cmd
    }

    /// The command line without the `cd` prefix: `env K=V program args`.
    pub fn command_line(&self) -> String {
        let mut out = String::new();
        if !self.env.is_empty() {
            out.push_str("env");
            for (k, v) in &self.env {
                out.push(' ');
                out.push_str(&shell_quote(&format!("{k}={v}")));
            }
            out.push(' ');
        }
        out.push_str(&shell_quote(&self.program.to_string_lossy()));
        for a in &self.args {
            out.push(' ');
            out.push_str(&shell_quote(&a.to_string_lossy()));
        }
        out
    }
}

impl fmt::Display for ProcessBuilder {
    /// `cd DIR && env K=V program args`, every word quoted for a POSIX shell.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(dir) = &self.cwd {
            write!(f, "cd {} && ", shell_quote(&dir.to_string_lossy()))?;
        }
        f.write_str(&self.command_line())
    }
}

/// Quotes one word for a POSIX shell; words made only of safe characters stay bare.
pub fn shell_quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The last `n` lines of `text`, for error messages about failed children.
pub fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(shell_quote("regex:.*hgemm.*"), "'regex:.*hgemm.*'");
        assert_eq!(shell_quote("--launch-count"), "--launch-count");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn display_is_the_replayable_command() {
        let mut p = ProcessBuilder::new("/usr/local/cuda/bin/ncu");
        p.args(["--kernel-name", "regex:.*copy.*"]).env("KPROF_PROFILE", "1").cwd("/w s");
        assert_eq!(
            p.to_string(),
            "cd '/w s' && env KPROF_PROFILE=1 /usr/local/cuda/bin/ncu --kernel-name 'regex:.*copy.*'"
        );
        let cmd = p.command();
        assert_eq!(cmd.get_program(), "/usr/local/cuda/bin/ncu");
        assert_eq!(cmd.get_args().count(), 2);
    }

    #[test]
    fn tail_keeps_last_lines() {
        assert_eq!(tail_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail_lines("a", 5), "a");
    }
}
