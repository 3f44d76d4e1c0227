//! How a child ended and what it left: its [`Ending`] (an exit status or signal, a
//! timeout, kprof's own signal, a failed start) and the output and wall time of a
//! [`Finished`] child, with the words that describe them in messages.

use std::fmt;
use std::process::ExitStatus;
use std::time::Duration;

use crate::error::Signal;

/// How a child process ended.
#[derive(Debug)]
pub enum Ending {
    /// It exited, or was killed by a signal it did not get from us.
    Exited(ExitStatus),
    /// It ran past its timeout and was stopped.
    TimedOut,
    /// kprof received this signal: the child was stopped, or not started.
    Interrupted(Signal),
    /// It could not be started (or waited for); the message says why.
    NotStarted(String),
}

impl fmt::Display for Ending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ending::Exited(s) => f.write_str(&describe_status(s)),
            Ending::TimedOut => f.write_str("stopped at its timeout"),
            Ending::Interrupted(signal) => write!(f, "stopped: kprof received {signal}"),
            Ending::NotStarted(msg) => f.write_str(msg),
        }
    }
}

/// `exit code 3`, or `killed by SIGKILL (signal 9)`.
pub fn describe_status(status: &ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(n) = status.signal() {
            return format!("killed by {}", signal_name(n));
        }
    }
    match status.code() {
        Some(code) => format!("exit code {code}"),
        None => status.to_string(),
    }
}

/// `SIGSEGV (signal 11)`; the number alone for signals without a common name.
pub fn signal_name(number: i32) -> String {
    #[cfg(unix)]
    {
        let names = [
            (libc::SIGHUP, "SIGHUP"),
            (libc::SIGINT, "SIGINT"),
            (libc::SIGQUIT, "SIGQUIT"),
            (libc::SIGILL, "SIGILL"),
            (libc::SIGABRT, "SIGABRT"),
            (libc::SIGBUS, "SIGBUS"),
            (libc::SIGFPE, "SIGFPE"),
            (libc::SIGKILL, "SIGKILL"),
            (libc::SIGSEGV, "SIGSEGV"),
            (libc::SIGPIPE, "SIGPIPE"),
            (libc::SIGALRM, "SIGALRM"),
            (libc::SIGTERM, "SIGTERM"),
        ];
        if let Some((_, name)) = names.iter().find(|(n, _)| *n == number) {
            return format!("{name} (signal {number})");
        }
    }
    format!("signal {number}")
}

/// What a finished child left: how it ended, its output and its wall time.
#[derive(Debug)]
pub struct Finished {
    /// How it ended.
    pub ending: Ending,
    /// Its standard output (empty when streamed to a callback or inherited).
    pub stdout: Vec<u8>,
    /// Its standard error (empty when inherited).
    pub stderr: Vec<u8>,
    /// Wall time from spawn to exit.
    pub wall: Duration,
    /// When it could not be started: the system's reason alone (`No such file or directory
    /// (os error 2)`); [`Ending::NotStarted`] says it with the program's name.
    pub start_error: Option<String>,
}

impl Finished {
    /// Whether it exited with status 0.
    pub fn success(&self) -> bool {
        matches!(&self.ending, Ending::Exited(s) if s.success())
    }

    /// Standard output as text (lossy).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Standard error as text (lossy).
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// Standard output, then standard error, as text.
    pub fn console(&self) -> String {
        format!("{}{}", self.stdout_text(), self.stderr_text())
    }
}

/// The last `n` lines of a child's output, for error messages and the manifest: control
/// characters (terminal escape sequences, carriage returns) other than tab are removed.
pub fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    crate::shell::printable(&lines[lines.len().saturating_sub(n)..].join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_last_lines() {
        assert_eq!(tail_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail_lines("a", 5), "a");
    }
}
