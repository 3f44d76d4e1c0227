//! Child processes: a builder whose `Display` is the exact, shell-quoted command line,
//! and the one function that runs them ([`run`]).
//!
//! `commands.sh`, `--dry-run` and error messages all print a [`ProcessBuilder`], and
//! the same value is what gets spawned, so what we show is what we run. Every child
//! (cargo, ncu, the profiled program, git, nvidia-smi, sudo) goes through [`run`]: in
//! its own process group, stdin from `/dev/null`, output drained on threads so the child
//! never blocks, stopped as a whole group on `--timeout` or a signal, reported to the
//! [`Shell`] (`-v`: the command and its wall time, `-vv`: its output).
//!
//! Signals ([`install_signal_handlers`]): SIGINT, SIGTERM, SIGHUP and SIGQUIT are caught
//! on a thread. While a run is in progress ([`defer_signals`]: profiling, timing,
//! building), the first one is only recorded: [`run`] kills the running child's process
//! group within 20 ms, and the pipeline writes `run_manifest.yaml` and ends with 128 + the
//! signal's number. Otherwise (`list`, `report`, a second signal) kprof kills the running
//! child's group, if any, and exits at once with that code.
//!
//! Children die with kprof (Linux): each child asks the kernel for SIGKILL when its
//! parent dies (`PR_SET_PDEATHSIG`), which covers what no handler can, kprof itself being
//! killed with SIGKILL or by the OOM killer. The signal reaches only the direct child (ncu,
//! cargo, the timed program), not the processes it started in its group (the program
//! under ncu, rustc and build scripts under cargo): those lose their parent and end when
//! they next write to the closed output pipe or finish. The kernel also clears the death
//! signal when a set-user-ID program (sudo) starts. Every signal kprof can catch kills
//! the whole group instead, which reaches all of them. The death signal follows the
//! thread that started the child, so [`run`] is called from the main thread only.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::error::{ExitCode, Failure, Signal};
use crate::shell::Shell;

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

/// The number of the first signal received, 0 while none has been.
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// How many [`SignalDeferral`]s are alive: while any is, the first signal is only recorded.
static DEFERRED: AtomicUsize = AtomicUsize::new(0);
/// The process groups of the running children (one per worker when several GPUs run at
/// once).
static RUNNING_GROUPS: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// Catches SIGINT, SIGTERM, SIGHUP and SIGQUIT for the rest of the process (see the
/// module's documentation). Called once, first thing; a second call does nothing.
pub fn install_signal_handlers() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let numbers: Vec<i32> = Signal::ALL.iter().map(|s| s.number()).collect();
        // Without handlers (an unusual platform) signals keep their default action.
        let Ok(mut signals) = signal_hook::iterator::Signals::new(numbers) else { return };
        std::thread::spawn(move || {
            for number in signals.forever() {
                let first = RECEIVED.compare_exchange(0, number, Ordering::SeqCst, Ordering::SeqCst).is_ok();
                if first && DEFERRED.load(Ordering::SeqCst) > 0 {
                    // The main thread stops the child and records the ending.
                    continue;
                }
                kill_running_group();
                let code = Signal::from_number(RECEIVED.load(Ordering::SeqCst))
                    .map_or(128 + number, |s| ExitCode::Interrupted(s).code());
                std::process::exit(code);
            }
        });
    });
}

/// While the returned value lives, the first signal is only recorded (see
/// [`pending_signal`]) and the running child is stopped by [`run`]: for work that must
/// record how it ended.
pub fn defer_signals() -> SignalDeferral {
    DEFERRED.fetch_add(1, Ordering::SeqCst);
    SignalDeferral(())
}

/// See [`defer_signals`].
#[must_use = "signals are deferred only while this lives"]
pub struct SignalDeferral(());

impl Drop for SignalDeferral {
    fn drop(&mut self) {
        DEFERRED.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The signal received so far, if any.
pub fn pending_signal() -> Option<Signal> {
    Signal::from_number(RECEIVED.load(Ordering::SeqCst))
}

/// `Err` with the exit code of the signal received, if one was: for the boundaries of a
/// deferred run (between kernels, before an analysis).
pub fn check_signal(during: &str) -> Result<(), Failure> {
    match pending_signal() {
        Some(s) => Err(interrupted(s, during)),
        None => Ok(()),
    }
}

/// The failure of a run stopped by `signal` while doing `during`.
pub fn interrupted(signal: Signal, during: &str) -> Failure {
    Failure::new(
        ExitCode::Interrupted(signal),
        format!("stopped by {signal} {during}; what was written stays"),
    )
}

fn kill_running_group() {
    let groups = RUNNING_GROUPS.lock().map(|g| g.clone()).unwrap_or_default();
    for group in groups {
        #[cfg(unix)]
        if group > 0 {
            // SAFETY: killpg only sends signals. SIGTERM first for a group running as
            // another user (sudo relays it; our SIGKILL cannot reach root's processes).
            unsafe {
                libc::killpg(group, libc::SIGTERM);
                libc::killpg(group, libc::SIGKILL);
            }
        }
        #[cfg(not(unix))]
        let _ = group;
    }
}

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

/// How [`run`] treats a child.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Stop the child's process group after this long.
    pub timeout: Option<Duration>,
    /// Send SIGTERM first and wait up to five seconds before SIGKILL: for children that
    /// run as another user (sudo relays SIGTERM to them; our SIGKILL cannot reach them).
    pub graceful: bool,
    /// Hand each line of stdout to this callback as it arrives, instead of keeping it.
    pub stdout_lines: Option<&'a mut dyn FnMut(&str)>,
    /// Let the child write to our stderr directly instead of capturing it.
    pub inherit_stderr: bool,
}

/// Runs `cmd` to its end: in its own process group, stdin `/dev/null`, its output
/// drained on threads; the whole group is killed on timeout or a signal, and nothing is
/// started once a signal was received. Under `-v` the shell shows the command and its
/// wall time, under `-vv` its output too.
pub fn run(cmd: &ProcessBuilder, opts: RunOptions<'_>, shell: &Shell) -> Finished {
    let started = Instant::now();
    if let Some(signal) = pending_signal() {
        let ending = Ending::Interrupted(signal);
        shell.command_ran(&cmd.to_string(), Duration::ZERO, "not started: kprof is stopping");
        return Finished {
            ending,
            stdout: Vec::new(),
            stderr: Vec::new(),
            wall: Duration::ZERO,
            start_error: None,
        };
    }
    let mut c = cmd.command();
    c.stdout(Stdio::piped()).stdin(Stdio::null());
    c.stderr(if opts.inherit_stderr { Stdio::inherit() } else { Stdio::piped() });
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        c.process_group(0);
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: between fork and exec the closure calls only prctl and getppid, both
        // async-signal-safe, and allocates nothing.
        unsafe {
            c.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // kprof died before the request took effect: do not start orphaned.
                if libc::getppid() != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
    let mut child = match c.spawn() {
        Ok(child) => child,
        Err(e) => {
            let program = cmd.get_program().to_string_lossy().into_owned();
            let ending = Ending::NotStarted(format!("could not start {program}: {e}"));
            shell.command_ran(&cmd.to_string(), started.elapsed(), &ending.to_string());
            return Finished {
                ending,
                stdout: Vec::new(),
                stderr: Vec::new(),
                wall: started.elapsed(),
                start_error: Some(e.to_string()),
            };
        }
    };
    let group = child.id() as i32;
    if let Ok(mut g) = RUNNING_GROUPS.lock() {
        g.push(group);
    }
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            let _ = tx.send(buf);
        });
        rx
    };
    let mut stdout_lines = opts.stdout_lines;
    let streamed = stdout_lines.is_some();
    // Streamed stdout arrives line by line on a channel; otherwise it is read whole.
    let (line_rx, out_rx) = match child.stdout.take() {
        Some(pipe) if streamed => {
            let (tx, rx) = std::sync::mpsc::channel::<String>();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
            (Some(rx), None)
        }
        pipe => (None, Some(drain(pipe.map(|p| Box::new(p) as Box<dyn Read + Send>)))),
    };
    let err_rx = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let mut deliver = |rx: &std::sync::mpsc::Receiver<String>| {
        while let Ok(line) = rx.try_recv() {
            if let Some(f) = stdout_lines.as_mut() {
                f(&line);
            }
        }
    };
    let ending = loop {
        if let Some(rx) = &line_rx {
            deliver(rx);
        }
        match child.try_wait() {
            Ok(Some(status)) => break Ending::Exited(status),
            Ok(None) => {}
            Err(e) => {
                break Ending::NotStarted(format!("waiting for {}: {e}", cmd.get_program().to_string_lossy()))
            }
        }
        let signal = pending_signal();
        if signal.is_some() || opts.timeout.is_some_and(|t| started.elapsed() >= t) {
            kill_group(&mut child, opts.graceful);
            break signal.map_or(Ending::TimedOut, Ending::Interrupted);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Ok(mut g) = RUNNING_GROUPS.lock() {
        g.retain(|x| *x != group);
    }
    let stopped = !matches!(ending, Ending::Exited(_));
    if let Some(rx) = &line_rx {
        // The reader ends when the pipe closes; a stopped child's descendants may hold it.
        let deadline = Instant::now() + Duration::from_secs(if stopped { 2 } else { 3600 });
        while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            if let Some(f) = stdout_lines.as_mut() {
                f(&line);
            }
        }
    }
    let read = |rx: std::sync::mpsc::Receiver<Vec<u8>>| {
        let bytes = if stopped { rx.recv_timeout(Duration::from_secs(2)).ok() } else { rx.recv().ok() };
        bytes.unwrap_or_default()
    };
    let stdout = out_rx.map(read).unwrap_or_default();
    let stderr = read(err_rx);
    let finished = Finished { ending, stdout, stderr, wall: started.elapsed(), start_error: None };
    shell.command_ran(&cmd.to_string(), finished.wall, &finished.ending.to_string());
    shell.child_output(&finished.console());
    finished
}

/// Kills the child's process group; `graceful` sends SIGTERM first and gives the group
/// five seconds to end.
fn kill_group(child: &mut std::process::Child, graceful: bool) {
    #[cfg(unix)]
    {
        let group = child.id() as libc::pid_t;
        if graceful {
            // SAFETY: killpg only sends a signal; the group is the child's own (process_group(0)).
            unsafe {
                libc::killpg(group, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline && !matches!(child.try_wait(), Ok(Some(_))) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        // SAFETY: as above.
        unsafe {
            libc::killpg(group, libc::SIGKILL);
        }
    }
    #[cfg(not(unix))]
    let _ = graceful;
    let _ = child.kill();
    let _ = child.wait();
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

/// `text` made safe to follow `# ` in a shell script: one line whatever it holds. Control
/// characters (a newline would end the comment and start a command) are written as Rust
/// escapes (`\n`, `\u{1b}`).
pub fn shell_comment(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() })
        .collect()
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
    fn comments_stay_one_line() {
        assert_eq!(shell_comment("hgemm<float>"), "hgemm<float>");
        assert_eq!(shell_comment("a\ntouch pwned\r\u{1b}"), "a\\ntouch pwned\\r\\u{1b}");
        assert_eq!(shell_comment("é\t").lines().count(), 1);
    }

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
