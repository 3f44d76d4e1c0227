//! Failure classes and the process exit codes they map to.
//!
//! Every error that should end `cargo kprof` with a specific exit code carries a
//! [`Failure`] somewhere in its `anyhow` chain; `main` looks for the first one and
//! exits with its code. An error without one is a file that could not be read or written
//! ([`ExitCode::Filesystem`]) when an I/O error, or a JSON or YAML error (a damaged file:
//! kprof reads both, and what it writes itself always serialises), is in its chain; else
//! a bug ([`ExitCode::Failure`], 1, and nothing else is 1). [`ExitCode::ALL`] is the single
//! source of the codes documented in docs/reference.md; a test compares that table
//! with it, code by code and meaning by meaning.

use std::fmt;

/// A signal kprof stops on as it stops on Ctrl-C: the running child's process group is
/// killed, `run_manifest.yaml` says `interrupted`, and kprof exits with 128 + its number,
/// as a shell reports a program the signal killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Signal {
    /// SIGHUP (1): the terminal or ssh session closed.
    Hup,
    /// SIGINT (2): Ctrl-C.
    Int,
    /// SIGQUIT (3): Ctrl-\.
    Quit,
    /// SIGTERM (15): `kill`, `timeout`, CI cancellation.
    Term,
}

impl Signal {
    /// Every signal kprof handles, by number.
    pub const ALL: [Signal; 4] = [Signal::Hup, Signal::Int, Signal::Quit, Signal::Term];

    /// The signal's number (POSIX: the same on every Unix).
    pub fn number(self) -> i32 {
        match self {
            Signal::Hup => 1,
            Signal::Int => 2,
            Signal::Quit => 3,
            Signal::Term => 15,
        }
    }

    /// `SIGTERM`.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Hup => "SIGHUP",
            Signal::Int => "SIGINT",
            Signal::Quit => "SIGQUIT",
            Signal::Term => "SIGTERM",
        }
    }

    /// The handled signal with this number.
    pub fn from_number(n: i32) -> Option<Signal> {
        Signal::ALL.into_iter().find(|s| s.number() == n)
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A documented exit code of `cargo kprof`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExitCode {
    /// Everything asked for was done.
    Success,
    /// A bug in kprof; the message says what.
    Failure,
    /// The command line could not be parsed (clap's own code).
    Usage,
    /// `[package.metadata.kprof]` / `[workspace.metadata.kprof]` is invalid, or the
    /// selection matches no configured kernel.
    Config,
    /// `cargo build` of the selected targets failed.
    Build,
    /// A tool profiling needs is missing: ncu, the CUDA driver, a GPU, or a shared library
    /// the program loads.
    MissingTool,
    /// The kernel filter matched no launch of the target.
    NoKernelMatched,
    /// ncu may not read the GPU performance counters, `sudo -n` needs a password, or
    /// `--sudo` is not set up (no `sudo` on `PATH`, or no usable `profile/ncu_path`).
    Permission,
    /// The profiled program exited with an error or crashed.
    TargetFailed,
    /// The profiled program ran past `--timeout`.
    Timeout,
    /// A comparison found a performance regression beyond tolerance.
    Regression,
    /// The subcommand exists but is not implemented in this version.
    Unimplemented,
    /// A file could not be read (missing, unreadable or damaged) or written, or an output
    /// path is taken (kprof never writes over existing files); the message names the path.
    Filesystem,
    /// ncu itself failed: it was killed by a signal, or it exited 0 without writing a
    /// readable page.
    NcuFailed,
    /// An A/B check (`check --base`) could not tell a change from noise for some kernel
    /// and found no regression elsewhere (`--ambiguous=pass` exits 0 instead).
    Ambiguous,
    /// Stopped by a signal; partial results stay on disk. The code is 128 + its number.
    Interrupted(Signal),
}

impl ExitCode {
    /// Every exit code, in the order of the table in docs/reference.md.
    pub const ALL: [ExitCode; 19] = [
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
        ExitCode::Filesystem,
        ExitCode::NcuFailed,
        ExitCode::Ambiguous,
        ExitCode::Interrupted(Signal::Hup),
        ExitCode::Interrupted(Signal::Int),
        ExitCode::Interrupted(Signal::Quit),
        ExitCode::Interrupted(Signal::Term),
    ];

    /// The numeric process exit status.
    pub fn code(self) -> i32 {
        match self {
            ExitCode::Success => 0,
            ExitCode::Failure => 1,
            ExitCode::Usage => 2,
            ExitCode::Config => 3,
            ExitCode::Build => 4,
            ExitCode::MissingTool => 5,
            ExitCode::NoKernelMatched => 6,
            ExitCode::Permission => 7,
            ExitCode::TargetFailed => 8,
            ExitCode::Timeout => 9,
            ExitCode::Regression => 10,
            ExitCode::Unimplemented => 11,
            ExitCode::Filesystem => 12,
            ExitCode::NcuFailed => 13,
            ExitCode::Ambiguous => 14,
            ExitCode::Interrupted(signal) => 128 + signal.number(),
        }
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
            ExitCode::Filesystem => "filesystem",
            ExitCode::NcuFailed => "ncu-failed",
            ExitCode::Ambiguous => "ambiguous",
            ExitCode::Interrupted(_) => "interrupted",
        }
    }

    /// The meaning, exactly as docs/reference.md's table of exit codes says it (a test keeps
    /// the two the same).
    pub fn meaning(self) -> &'static str {
        match self {
            ExitCode::Success => "success",
            ExitCode::Failure => "a bug in kprof; the message says what (please report it)",
            ExitCode::Usage => "the command line could not be parsed",
            ExitCode::Config => {
                "invalid `[package.metadata.kprof]` / `[workspace.metadata.kprof]`, an invalid value on the \
                 command line, the selection matches no configured kernel, or an input named on the command \
                 line is refused for what it is or holds (a pipe or a device where a file is read, a CSV \
                 that is not an ncu page, an archive entry that could write outside `--workspace-remap`)"
            }
            ExitCode::Build => "`cargo build` failed",
            ExitCode::MissingTool => "a tool profiling needs is missing: ncu, the CUDA driver, a GPU, or a shared library the program loads",
            ExitCode::NoKernelMatched => "the kernel filter matched no launch of the target",
            ExitCode::Permission => {
                "ncu may not read the GPU performance counters, `sudo -n` needs a password, or `--sudo` is \
                 not set up (no `sudo` on `PATH`; `profile/ncu_path` missing, not absolute, or not an \
                 executable file)"
            }
            ExitCode::TargetFailed => "the profiled program failed",
            ExitCode::Timeout => "the profiled program ran past `--timeout`",
            ExitCode::Regression => {
                "a comparison found a regression beyond tolerance (`bisect`: it named the first regressed \
                 revision, or the range that hides it)"
            }
            ExitCode::Unimplemented => "the subcommand is not implemented in this version",
            ExitCode::Filesystem => {
                "a file could not be read (missing, unreadable or damaged) or written, or an output path is \
                 taken (kprof never writes over existing files); the message names the path"
            }
            ExitCode::NcuFailed => {
                "ncu itself failed: it could not be started (its command line too long for Linux, or holding a \
                 NUL byte: the message names the longest argument's length), it was killed by a signal, or it \
                 exited 0 without writing a readable page (the message names the file)"
            }
            ExitCode::Ambiguous => {
                "`check --base` could not tell a kernel's change from noise and found no regression \
                 (`--ambiguous=pass` makes this 0); `bisect` could not tell `--bad` from `--good`"
            }
            ExitCode::Interrupted(Signal::Hup) => "SIGHUP (the terminal or ssh session closed); as 130",
            ExitCode::Interrupted(Signal::Int) => {
                "SIGINT (Ctrl-C): the running stage's process group is killed, `run_manifest.yaml` says \
                 `interrupted`, partial results stay on disk"
            }
            ExitCode::Interrupted(Signal::Quit) => "SIGQUIT; as 130",
            ExitCode::Interrupted(Signal::Term) => "SIGTERM (`kill`, `timeout`, a cancelled CI job); as 130",
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

/// The exit code for an error chain: the first [`Failure`] in it; else, when an I/O error
/// or a damaged JSON or YAML file is in it, `Filesystem` (12); else `Failure` (1: a bug).
pub fn exit_code_of(err: &anyhow::Error) -> ExitCode {
    if let Some(code) = err.chain().find_map(|e| e.downcast_ref::<Failure>().map(|f| f.code)) {
        return code;
    }
    let file = |e: &(dyn std::error::Error + 'static)| {
        e.is::<std::io::Error>() || e.is::<serde_json::Error>() || e.is::<serde_yaml::Error>()
    };
    if err.chain().any(file) {
        return ExitCode::Filesystem;
    }
    ExitCode::Failure
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
        let io = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::NotFound))
            .context("could not read x");
        assert_eq!(exit_code_of(&io), ExitCode::Filesystem);
        let damaged =
            anyhow::Error::new(serde_json::from_str::<u32>("{").unwrap_err()).context("invalid x.json");
        assert_eq!(exit_code_of(&damaged), ExitCode::Filesystem);
    }

    #[test]
    fn signals_exit_with_128_plus_their_number() {
        let codes: Vec<i32> = Signal::ALL.iter().map(|s| ExitCode::Interrupted(*s).code()).collect();
        assert_eq!(codes, [129, 130, 131, 143]);
        assert_eq!(Signal::from_number(15), Some(Signal::Term));
        assert_eq!(Signal::from_number(9), None);
        // Every handled signal is documented.
        for s in Signal::ALL {
            assert!(ExitCode::ALL.contains(&ExitCode::Interrupted(s)), "{s}");
        }
    }

    #[test]
    fn help_lines_are_rendered() {
        let f = Failure::new(ExitCode::MissingTool, "ncu not found").help("set NCU=/path/to/ncu");
        assert_eq!(f.to_string(), "ncu not found\n  help: set NCU=/path/to/ncu");
    }
}
