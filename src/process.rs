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
//! Signals (`signals.rs`, re-exported here): while a run is in progress the first one is
//! only recorded and [`run`] stops the running child's process group within 20 ms;
//! otherwise kprof stops the child's group and exits at once. How a child ended and what
//! it left (`ending.rs`) and the quoting of its words for a shell (`quote.rs`) are
//! re-exported here too; no child is started outside this file.
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
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use crate::shell::Shell;

mod ending;
mod quote;
mod signals;
pub use ending::{describe_status, signal_name, tail_lines, Ending, Finished};
pub use quote::{shell_comment, shell_quote};
use signals::RunningGroup;
pub use signals::{
    check_signal, defer_signals, install_signal_handlers, interrupted, keep_on_signal, pending_signal,
    remove_on_signal, SignalDeferral,
};

/// Opens `path` in the user's browser without waiting for it: the program `$BROWSER`
/// names when set, else the desktop's opener (`xdg-open`, `open`, `start`). The one
/// child not started by [`run`]: it is the user's, outlives kprof, and is not waited for.
pub fn open_in_browser(path: &Path) -> Result<(), String> {
    opener::open_browser(path).map_err(|e| e.to_string())
}

/// Whether a browser could start here: `$BROWSER` names one, the desktop is macOS or
/// Windows, or a display (`DISPLAY`, `WAYLAND_DISPLAY`) is there for `xdg-open` to use.
/// Without one, `xdg-open` fails after kprof has returned, so kprof says the page's URL
/// instead of claiming to have opened it.
pub fn browser_available() -> bool {
    let set = |v: &str| std::env::var_os(v).is_some_and(|x| !x.is_empty());
    set("BROWSER") || cfg!(any(target_os = "macos", windows)) || set("DISPLAY") || set("WAYLAND_DISPLAY")
}

/// A program, its arguments, extra environment and working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessBuilder {
    program: OsString,
    args: Vec<OsString>,
    env: BTreeMap<String, String>,
    /// Environment that only makes the child faster and that the command as shown leaves
    /// out: see [`ProcessBuilder::env_unshown`].
    unshown_env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
}

impl ProcessBuilder {
    /// A builder for `program` with no arguments.
    pub fn new(program: impl Into<OsString>) -> Self {
        ProcessBuilder {
            program: program.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            unshown_env: BTreeMap::new(),
            cwd: None,
        }
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

    /// Sets an environment variable for the child that the command as shown (its
    /// [`Display`](fmt::Display), `commands.sh`, a dry run) leaves out: one that changes how
    /// fast the child runs and never what it does, such as the harness's PTX cache
    /// (`KPROF_PTX_CACHE`). Replaying the shown command without it gives the same result,
    /// and a folder that only exists while `cargo kprof` runs is not written into a script
    /// kept for later.
    pub fn env_unshown(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.unshown_env.insert(key.into(), value.into());
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

    /// The environment variables the shown command leaves out, sorted by name.
    pub fn get_unshown_envs(&self) -> &BTreeMap<String, String> {
        &self.unshown_env
    }

    /// The working directory, if set.
    pub fn get_cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// A `std::process::Command` configured as displayed, plus the environment the display
    /// leaves out ([`ProcessBuilder::env_unshown`]).
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args);
        cmd.envs(&self.unshown_env);
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
    let mut child = match child_command(cmd, opts.inherit_stderr).spawn() {
        Ok(child) => child,
        Err(e) => return start_failed(cmd, &e, started, shell),
    };
    let group = RunningGroup::register(child.id() as i32);
    let RunOptions { timeout, graceful, mut stdout_lines, .. } = opts;
    let pipes = Pipes::take(&mut child, stdout_lines.is_some());
    let mut on_line = |line: &str| {
        if let Some(f) = stdout_lines.as_mut() {
            f(line);
        }
    };
    let stop = Stop { started, timeout, graceful };
    let ending = wait_for(&mut child, cmd, &pipes, &mut on_line, &stop);
    drop(group);
    let stopped = !matches!(ending, Ending::Exited(_));
    let (stdout, stderr) = pipes.finish(stopped, &mut on_line);
    let finished = Finished { ending, stdout, stderr, wall: started.elapsed(), start_error: None };
    shell.command_ran(&cmd.to_string(), finished.wall, &finished.ending.to_string());
    shell.child_output(&finished.console());
    finished
}

/// The `Command` for `cmd` as [`run`] spawns it: stdout piped, stdin `/dev/null`, stderr
/// piped unless inherited, its own process group, and (Linux) killed when kprof dies.
fn child_command(cmd: &ProcessBuilder, inherit_stderr: bool) -> Command {
    let mut c = cmd.command();
    c.stdout(Stdio::piped()).stdin(Stdio::null());
    c.stderr(if inherit_stderr { Stdio::inherit() } else { Stdio::piped() });
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
    c
}

/// What a child that could not be spawned leaves, reported to the shell.
fn start_failed(cmd: &ProcessBuilder, e: &std::io::Error, started: Instant, shell: &Shell) -> Finished {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let ending = Ending::NotStarted(format!("could not start {program}: {e}"));
    shell.command_ran(&cmd.to_string(), started.elapsed(), &ending.to_string());
    Finished {
        ending,
        stdout: Vec::new(),
        stderr: Vec::new(),
        wall: started.elapsed(),
        start_error: Some(e.to_string()),
    }
}

/// When [`wait_for`] stops a child: its start, its timeout, and whether to stop it gently.
struct Stop {
    started: Instant,
    timeout: Option<Duration>,
    graceful: bool,
}

/// A running child's output, each pipe read on its own thread.
struct Pipes {
    /// Streamed stdout, line by line.
    lines: Option<Receiver<String>>,
    /// Stdout read whole, when not streamed.
    stdout: Option<Receiver<Vec<u8>>>,
    /// Stderr read whole (empty when inherited).
    stderr: Receiver<Vec<u8>>,
}

impl Pipes {
    /// Starts the readers of `child`'s pipes; `streamed` reads stdout line by line.
    fn take(child: &mut Child, streamed: bool) -> Pipes {
        let (lines, stdout) = match child.stdout.take() {
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
        let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
        Pipes { lines, stdout, stderr }
    }

    /// Hands the streamed lines that have arrived to `on_line`.
    fn deliver(&self, on_line: &mut dyn FnMut(&str)) {
        if let Some(rx) = &self.lines {
            while let Ok(line) = rx.try_recv() {
                on_line(&line);
            }
        }
    }

    /// The rest of the output once the child ended: the last streamed lines, then stdout
    /// and stderr. A `stopped` child's descendants may hold the pipes open, so their
    /// readers get two seconds.
    fn finish(self, stopped: bool, on_line: &mut dyn FnMut(&str)) -> (Vec<u8>, Vec<u8>) {
        if let Some(rx) = &self.lines {
            // The reader ends when the pipe closes; a stopped child's descendants may hold it.
            let deadline = Instant::now() + Duration::from_secs(if stopped { 2 } else { 3600 });
            while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                on_line(&line);
            }
        }
        let read = |rx: Receiver<Vec<u8>>| {
            let bytes = if stopped { rx.recv_timeout(Duration::from_secs(2)).ok() } else { rx.recv().ok() };
            bytes.unwrap_or_default()
        };
        let stdout = self.stdout.map(read).unwrap_or_default();
        (stdout, read(self.stderr))
    }
}

/// Reads a pipe whole on a thread; the bytes arrive on the receiver.
fn drain(pipe: Option<Box<dyn Read + Send>>) -> Receiver<Vec<u8>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        let _ = tx.send(buf);
    });
    rx
}

/// Polls the child every 20 ms, passing on streamed lines, until it exits, its timeout
/// passes or kprof receives a signal (then its group is killed).
fn wait_for(
    child: &mut Child,
    cmd: &ProcessBuilder,
    pipes: &Pipes,
    on_line: &mut dyn FnMut(&str),
    stop: &Stop,
) -> Ending {
    loop {
        pipes.deliver(on_line);
        match child.try_wait() {
            Ok(Some(status)) => return Ending::Exited(status),
            Ok(None) => {}
            Err(e) => {
                return Ending::NotStarted(format!(
                    "waiting for {}: {e}",
                    cmd.get_program().to_string_lossy()
                ))
            }
        }
        let signal = pending_signal();
        if signal.is_some() || stop.timeout.is_some_and(|t| stop.started.elapsed() >= t) {
            kill_group(child, stop.graceful);
            return signal.map_or(Ending::TimedOut, Ending::Interrupted);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills the child's process group; `graceful` sends SIGTERM first and gives the group
/// five seconds to end.
fn kill_group(child: &mut Child, graceful: bool) {
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

#[cfg(test)]
mod tests {
    use super::*;

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

    /// The environment that only speeds the child up reaches it, and no shown command.
    #[test]
    fn unshown_environment_reaches_the_child_but_not_the_display() {
        let mut p = ProcessBuilder::new("/bin/b");
        p.env("KPROF_PROFILE", "1").env_unshown("KPROF_PTX_CACHE", "/p/.ptx-cache-7");
        assert_eq!(p.to_string(), "env KPROF_PROFILE=1 /bin/b");
        let cmd = p.command();
        let envs: Vec<(String, String)> = cmd
            .get_envs()
            .map(|(k, v)| (k.to_string_lossy().into_owned(), v.unwrap().to_string_lossy().into_owned()))
            .collect();
        assert!(envs.contains(&("KPROF_PTX_CACHE".into(), "/p/.ptx-cache-7".into())), "{envs:?}");
        assert!(envs.contains(&("KPROF_PROFILE".into(), "1".into())), "{envs:?}");
    }
}
