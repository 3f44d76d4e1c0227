//! Failure classes and the process exit codes they map to.
//!
//! Every error that should end `cargo kprof` with a specific exit code carries a
//! [`Failure`] somewhere in its `anyhow` chain; `main` looks for the first one and
//! exits with its code. Anything else exits with [`ExitCode::Failure`]. The table
//! here is the single source of the codes documented in the README.

use std::fmt;

/// A documented exit code of `cargo kprof`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ExitCode {
    /// Everything asked for was done.
    Success = 0,
    /// An unexpected failure (I/O, a bug); the message says what.
    Failure = 1,
    /// The command line could not be parsed (clap's own code).
    Usage = 2,
    /// `[package.metadata.kprof]` / `[workspace.metadata.kprof]` is invalid, or the
    /// selection matches no configured kernel.
    Config = 3,
    /// `cargo build` of the selected targets failed.
    Build = 4,
    /// A tool profiling needs is missing: ncu, the CUDA driver or a GPU.
    MissingTool = 5,
    /// The kernel filter matched no launch of the target.
    NoKernelMatched = 6,
    /// ncu may not read the GPU performance counters, `sudo -n` needs a password, or
    /// `--sudo` is not set up (no `sudo` on `PATH`, or no usable `profile/ncu_path`).
    Permission = 7,
    /// The profiled program exited with an error or crashed.
    TargetFailed = 8,
    /// The profiled program ran past `--timeout`.
    Timeout = 9,
    /// A comparison found a performance regression beyond tolerance.
    Regression = 10,
    /// The subcommand exists but is not implemented in this version.
    Unimplemented = 11,
    /// Interrupted by Ctrl-C; partial results stay on disk.
    Interrupted = 130,
}

impl ExitCode {
    /// Every exit code, in the order documented in the README.
    pub const ALL: [ExitCode; 13] = [
        ExitCode::Success,
        ExitCode::Failure,
        ExitCode::Usage,
        ExitCode::Config,
        ExitCode::Build,
        ExitCode::MissingTool,
        ExitCode::NoKernelMatched,
        ExitCode::Permission,
        ExitCode::TargetFailed,
        ExitCode::Timeout,
        ExitCode::Regression,
        ExitCode::Unimplemented,
        ExitCode::Interrupted,
    ];

    /// The numeric process exit status.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The short name used in `run_manifest.yaml` and JSON messages.
    pub fn name(self) -> &'static str {
        match self {
            ExitCode::Success => "ok",
            ExitCode::Failure => "failure",
            ExitCode::Usage => "usage",
            ExitCode::Config => "config",
            ExitCode::Build => "build-failed",
            ExitCode::MissingTool => "missing-tool",
            ExitCode::NoKernelMatched => "no-match",
            ExitCode::Permission => "permission",
            ExitCode::TargetFailed => "target-failed",
            ExitCode::Timeout => "timeout",
            ExitCode::Regression => "regression",
            ExitCode::Unimplemented => "unimplemented",
            ExitCode::Interrupted => "interrupted",
        }
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(code: ExitCode) -> Self {
        // Every documented code is in 0..=255.
        std::process::ExitCode::from(code.code() as u8)
    }
}

/// An error with a documented exit code. Wrap it in `anyhow::Error` like any other.
#[derive(Debug)]
pub struct Failure {
    /// Which documented exit code this failure ends the process with.
    pub code: ExitCode,
    /// What went wrong, naming the input.
    pub message: String,
    /// How to fix it, when we know; printed as `help: ...` lines.
    pub help: Vec<String>,
}

impl Failure {
    /// A failure with a message and no help.
    pub fn new(code: ExitCode, message: impl Into<String>) -> Self {
        Failure { code, message: message.into(), help: Vec::new() }
    }

    /// Adds a `help:` line.
    pub fn help(mut self, line: impl Into<String>) -> Self {
        self.help.push(line.into());
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        for line in &self.help {
            write!(f, "\n  help: {line}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Failure {}

/// The exit code for an error chain: the first [`Failure`] in it, else `Failure` (1).
pub fn exit_code_of(err: &anyhow::Error) -> ExitCode {
    err.chain().find_map(|e| e.downcast_ref::<Failure>().map(|f| f.code)).unwrap_or(ExitCode::Failure)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct() {
        let mut seen = std::collections::HashSet::new();
        for c in ExitCode::ALL {
            assert!(seen.insert(c.code()), "duplicate exit code {}", c.code());
        }
    }

    #[test]
    fn exit_code_found_through_context() {
        let err = anyhow::Error::new(Failure::new(ExitCode::Config, "bad key"))
            .context("while reading the manifest");
        assert_eq!(exit_code_of(&err), ExitCode::Config);
        assert_eq!(exit_code_of(&anyhow::anyhow!("plain")), ExitCode::Failure);
    }

    #[test]
    fn help_lines_are_rendered() {
        let f = Failure::new(ExitCode::MissingTool, "ncu not found").help("set NCU=/path/to/ncu");
        assert_eq!(f.to_string(), "ncu not found\n  help: set NCU=/path/to/ncu");
    }
}
