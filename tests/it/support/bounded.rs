//! Children that must neither hang the suite nor take the machine's memory.

use std::path::Path;
use std::process::{Command, Output};

/// `cmd`'s output, or `None` when it ran past `secs` seconds (it is killed): a command
/// that waits on a pipe nobody writes must not hang the suite.
pub fn output_within(mut cmd: Command, secs: u64) -> Option<Output> {
    use std::io::Read;
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    // Drained while the child runs: a child that writes more than a pipe holds must not
    // block on it.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).ok();
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().ok();
            child.wait().ok();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let status = child.wait().unwrap();
    Some(Output { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() })
}

/// `cargo-kprof kprof ARGS` in `cwd` under a 4 GiB address-space limit, at most 60 s: an
/// input without end must neither take the machine's memory nor hang the suite.
pub fn kprof_bounded(cwd: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "ulimit -v 4194304; exec \"$0\" kprof \"$@\"", env!("CARGO_BIN_EXE_cargo-kprof")]);
    cmd.args(args).current_dir(cwd).env("NO_COLOR", "1").env_remove("GITHUB_STEP_SUMMARY");
    // As [`super::kprof_bin`] runs it.
    cmd.env("KPROF_PLAN", "fixed").env("KPROF_CENSUS", "ncu");
    output_within(cmd, 60).unwrap_or_else(|| {
        let failed = Command::new("sh").args(["-c", "exit 99"]).output().unwrap();
        Output { status: failed.status, stdout: Vec::new(), stderr: b"ran past 60 s".to_vec() }
    })
}
