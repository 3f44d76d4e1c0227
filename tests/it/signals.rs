//! How a run ends when it is stopped or when ncu misbehaves: SIGTERM, SIGHUP, SIGQUIT and
//! SIGINT during a stage, a timing run and a build; ncu exiting 0 without a readable page
//! or killed by a signal; kprof itself killed outright; concurrent runs in one workspace.
//!
//! Every case asserts the exit code, what `run_manifest.yaml` says, and that no child
//! process survives kprof. The tests synchronise only on files the stand-ins write: a
//! fake ncu (or program, or build script) appends its pid to a file, touches a "started"
//! file and blocks opening a fifo nobody writes to, until it is killed.

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::{fake_ncu, text, Workspace};

/// A kernel entry named `copy` on the `copy` bench, run as a harness target.
const COPY: &str =
    "[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\nruntime = \"harness\"\n";

/// The files a blocking stand-in uses: where it writes its pids, what it touches when it
/// runs, the fifo it blocks on.
struct Rendezvous {
    pids: PathBuf,
    started: PathBuf,
    fifo: PathBuf,
}

impl Rendezvous {
    fn new(dir: &Path, name: &str) -> Rendezvous {
        std::fs::create_dir_all(dir).unwrap();
        let fifo = dir.join(format!("{name}.fifo"));
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", fifo.display());
        Rendezvous {
            pids: dir.join(format!("{name}.pids")),
            started: dir.join(format!("{name}.started")),
            fifo,
        }
    }

    /// Waits (two minutes at most: a build comes first) until the stand-in has started.
    fn wait_started(&self, child: &mut Child) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !self.started.exists() {
            if let Ok(Some(status)) = child.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    use std::io::Read;
                    let _ = e.read_to_string(&mut err);
                }
                panic!("kprof ended ({status}) before {} appeared:\n{err}", self.started.display());
            }
            assert!(Instant::now() < deadline, "{} never appeared", self.started.display());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(&self.pids)
            .unwrap_or_default()
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .collect()
    }
}

/// Whether a process is alive: it exists and is not a zombie waiting to be reaped.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `pid (comm) S ...`: the state follows the last `)`.
        Ok(stat) => {
            stat.rsplit_once(')').map(|(_, rest)| !rest.trim_start().starts_with('Z')).unwrap_or(true)
        }
        Err(_) => false,
    }
}

/// Asserts that every pid is gone, allowing ten seconds for the killing and reaping.
fn assert_gone(pids: &[i32]) {
    assert!(!pids.is_empty(), "no pid was recorded");
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|&p| alive(p)) {
        if Instant::now() > deadline {
            let left: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
            for p in &left {
                // SAFETY: cleaning up what the test started.
                unsafe { libc::kill(*p, libc::SIGKILL) };
            }
            panic!("child processes survived kprof: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `cargo-kprof kprof ARGS --manifest-path <ws>` started in the background.
fn spawn(ws: &Workspace, args: &[&str], env: &[(&str, &Path)]) -> Child {
    let mut cmd = crate::support::kprof_bin();
    cmd.arg("kprof").args(args).arg("--manifest-path").arg(ws.manifest());
    cmd.env_remove("NCU").env("CARGO_TARGET_DIR", ws.root().join("target")).env("KPROF_SKIP_GPU_CHECK", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: sends a signal to the child this test spawned.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
}

/// The fake ncu of `mode` in `<ws>/tools`, and its rendezvous files.
fn misbehaving_ncu(ws: &Workspace, name: &str) -> (PathBuf, Rendezvous) {
    let tools = ws.root().join("tools");
    let ncu = fake_ncu::write_misbehaving(&tools);
    (ncu, Rendezvous::new(&tools, name))
}

fn ncu_env<'a>(ncu: &'a Path, r: &'a Rendezvous, mode: &'a Path) -> Vec<(&'static str, &'a Path)> {
    vec![
        ("NCU", ncu),
        ("FAKE_NCU_PIDS", &r.pids),
        ("FAKE_NCU_STARTED", &r.started),
        ("FAKE_NCU_FIFO", &r.fifo),
        ("FAKE_NCU_MODE", mode),
    ]
}

/// The one profile directory's `run_manifest.yaml`.
fn manifest_of(ws: &Workspace) -> serde_yaml::Value {
    let profiles = ws.profiles();
    assert_eq!(profiles.len(), 1, "{profiles:?}");
    let path = profiles[0].join("run_manifest.yaml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap()
}

fn assert_manifest(ws: &Workspace, status: &str, code: i32, message_has: &str) {
    let m = manifest_of(ws);
    assert_eq!(m["status"].as_str(), Some(status), "{m:?}");
    assert_eq!(m["exit_code"].as_i64(), Some(code as i64), "{m:?}");
    if code != 0 {
        let message = m["message"].as_str().unwrap_or_default();
        assert!(message.contains(message_has), "manifest message {message:?} lacks {message_has:?}");
    }
}

/// A signal while a stage's ncu runs: the whole group (ncu and the program it started)
/// is killed, the manifest says `interrupted` with the code, and kprof exits 128 + N.
fn stopped_during_a_stage(sig: i32, name: &str, code: i32) {
    let ws = Workspace::new(COPY);
    let (ncu, r) = misbehaving_ncu(&ws, "stage");
    let mut child = spawn(&ws, &["--kernel", "copy"], &ncu_env(&ncu, &r, Path::new("block")));
    r.wait_started(&mut child);
    let pids = r.pids();
    assert_eq!(pids.len(), 2, "ncu and its program: {pids:?}");
    signal(&child, sig);
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert!(stderr.contains(&format!("stopped by {name} during stage basic")), "{stderr}");
    assert_gone(&pids);
    assert_manifest(&ws, "interrupted", code, name);
    let stage = &manifest_of(&ws)["stages"][0];
    assert_eq!(stage["status"].as_str(), Some("interrupted"), "{stage:?}");
}

#[test]
fn sigterm_during_a_stage_kills_its_group_and_records_it() {
    stopped_during_a_stage(libc::SIGTERM, "SIGTERM", 143);
}

#[test]
fn sighup_during_a_stage_kills_its_group_and_records_it() {
    stopped_during_a_stage(libc::SIGHUP, "SIGHUP", 129);
}

#[test]
fn sigquit_during_a_stage_kills_its_group_and_records_it() {
    stopped_during_a_stage(libc::SIGQUIT, "SIGQUIT", 131);
}

#[test]
fn sigint_during_a_stage_kills_its_group_and_records_it() {
    stopped_during_a_stage(libc::SIGINT, "SIGINT", 130);
}

/// `check --timing-only` runs the program itself, without ncu: SIGTERM stops it the same
/// way, and the profile directory records it.
#[test]
fn sigterm_during_a_timing_run() {
    let ws = Workspace::with_harness(COPY);
    std::fs::write(
        ws.root().join("benches/copy.rs"),
        r#"fn main() {
    use std::io::Write;
    let var = |k: &str| std::env::var(k).unwrap();
    let mut pids = std::fs::OpenOptions::new().append(true).create(true).open(var("FAKE_PROGRAM_PIDS")).unwrap();
    writeln!(pids, "{}", std::process::id()).unwrap();
    std::fs::write(var("FAKE_PROGRAM_STARTED"), "").unwrap();
    let _ = std::fs::read(var("FAKE_PROGRAM_FIFO"));
}
"#,
    )
    .unwrap();
    let r = Rendezvous::new(&ws.root().join("tools"), "program");
    let env = [
        ("FAKE_PROGRAM_PIDS", &*r.pids),
        ("FAKE_PROGRAM_STARTED", &r.started),
        ("FAKE_PROGRAM_FIFO", &r.fifo),
    ];
    let mut child =
        spawn(&ws, &["check", "--timing-only", "--save-baseline", "main", "--kernel", "copy"], &env);
    r.wait_started(&mut child);
    let pids = r.pids();
    signal(&child, libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("stopped by SIGTERM during the timing run"), "{stderr}");
    assert_gone(&pids);
    assert_manifest(&ws, "interrupted", 143, "SIGTERM");
    assert!(!ws.root().join("profile/baselines/main").exists(), "no baseline from a stopped run");
}

/// SIGTERM during `cargo build`: cargo and the build script it runs are killed with their
/// group. No profile directory exists yet (they are made from the build's executables),
/// so there is no manifest to write, and none is left half made.
#[test]
fn sigterm_during_a_build() {
    let ws = Workspace::new(COPY);
    std::fs::write(
        ws.root().join("build.rs"),
        r#"fn main() {
    use std::io::Write;
    let Ok(pids) = std::env::var("FAKE_BUILD_PIDS") else { return };
    let mut f = std::fs::OpenOptions::new().append(true).create(true).open(pids).unwrap();
    writeln!(f, "{}", std::process::id()).unwrap();
    std::fs::write(std::env::var("FAKE_BUILD_STARTED").unwrap(), "").unwrap();
    let _ = std::fs::read(std::env::var("FAKE_BUILD_FIFO").unwrap());
}
"#,
    )
    .unwrap();
    let tools = ws.root().join("tools");
    let ncu = fake_ncu::write(&tools);
    let r = Rendezvous::new(&tools, "build");
    let env = [
        ("NCU", &*ncu),
        ("FAKE_BUILD_PIDS", &r.pids),
        ("FAKE_BUILD_STARTED", &r.started),
        ("FAKE_BUILD_FIFO", &r.fifo),
    ];
    let mut child = spawn(&ws, &["--kernel", "copy"], &env);
    r.wait_started(&mut child);
    let pids = r.pids();
    signal(&child, libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("stopped by SIGTERM during the build"), "{stderr}");
    assert_gone(&pids);
    assert!(ws.profiles().is_empty(), "{:?}", ws.profiles());
}

/// SIGTERM while a command that records nothing (`list`) waits for `cargo metadata`: the
/// child is killed and kprof exits at once with 143.
#[test]
fn sigterm_while_list_waits_for_cargo() {
    let ws = Workspace::new(COPY);
    let tools = ws.root().join("tools");
    let r = Rendezvous::new(&tools, "cargo");
    let cargo = crate::support::write_script(
        &tools.join("cargo"),
        "echo $$ >> \"$FAKE_CARGO_PIDS\"; touch \"$FAKE_CARGO_STARTED\"; read x < \"$FAKE_CARGO_FIFO\"\n",
    );
    let env = [
        ("CARGO", &*cargo),
        ("FAKE_CARGO_PIDS", &r.pids),
        ("FAKE_CARGO_STARTED", &r.started),
        ("FAKE_CARGO_FIFO", &r.fifo),
    ];
    let mut child = spawn(&ws, &["list"], &env);
    r.wait_started(&mut child);
    let pids = r.pids();
    signal(&child, libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", text(&out.stderr));
    assert_gone(&pids);
}

/// ncu exits 0 but its page is missing, empty or not a page: exit 13, the file named, and
/// the manifest says `ncu-failed` (before, exit 1 and no manifest).
fn ncu_exits_0_without_a_page(mode: &str, says: &str) {
    let ws = Workspace::new(COPY);
    let (ncu, r) = misbehaving_ncu(&ws, "stage");
    let out =
        spawn(&ws, &["--kernel", "copy"], &ncu_env(&ncu, &r, Path::new(mode))).wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(13), "{mode}: {stderr}");
    let expected = format!("ncu exited 0 but {says}");
    assert!(stderr.contains(&expected), "{mode}: {stderr}");
    assert!(!stderr.contains('\x1b'), "{mode}: escape sequences reached the terminal: {stderr:?}");
    assert_manifest(&ws, "ncu-failed", 13, &expected);
    assert_gone(&r.pids());
}

#[test]
fn ncu_exiting_0_without_a_file_names_the_file() {
    ncu_exits_0_without_a_page("no-file", "wrote no details/01_basic_raw.csv");
}

#[test]
fn ncu_exiting_0_with_an_empty_file_names_the_file() {
    ncu_exits_0_without_a_page("empty-file", "details/01_basic_raw.csv is empty");
}

#[test]
fn ncu_exiting_0_with_garbage_names_the_file() {
    ncu_exits_0_without_a_page("garbage", "details/01_basic_raw.csv is not the page it asked for");
}

/// ncu killed by a signal (the OOM killer): exit 13 and the signal named, not "failed
/// under ncu:" with nothing after it.
#[test]
fn ncu_killed_by_a_signal_names_the_signal() {
    let ws = Workspace::new(COPY);
    let (ncu, r) = misbehaving_ncu(&ws, "stage");
    let out = spawn(&ws, &["--kernel", "copy"], &ncu_env(&ncu, &r, Path::new("killed")))
        .wait_with_output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(13), "{stderr}");
    assert!(stderr.contains("ncu was killed by SIGKILL (signal 9) during stage basic"), "{stderr}");
    assert!(stderr.contains("ncu and the program printed nothing"), "{stderr}");
    assert_manifest(&ws, "ncu-failed", 13, "killed by SIGKILL");
    assert_gone(&r.pids());
}

/// kprof itself killed outright (SIGKILL, which no handler sees): its child ncu gets
/// SIGKILL from the kernel (`PR_SET_PDEATHSIG`) instead of running on as an orphan.
#[cfg(target_os = "linux")]
#[test]
fn ncu_dies_with_kprof_killed_outright() {
    let ws = Workspace::new(COPY);
    let (ncu, r) = misbehaving_ncu(&ws, "stage");
    let mut child = spawn(&ws, &["--kernel", "copy"], &ncu_env(&ncu, &r, Path::new("block-alone")));
    r.wait_started(&mut child);
    let pids = r.pids();
    assert_eq!(pids.len(), 1, "{pids:?}");
    signal(&child, libc::SIGKILL);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), None, "killed");
    assert_gone(&pids);
}

/// Two runs in one workspace at once, each in a stage: each signal stops only its own
/// run's processes, and each profile directory records its own ending.
#[test]
fn two_concurrent_runs_stop_separately() {
    let ws = Workspace::new(COPY);
    let (ncu, a) = misbehaving_ncu(&ws, "a");
    let b = Rendezvous::new(&ws.root().join("tools"), "b");
    let mut first = spawn(&ws, &["--kernel", "copy"], &ncu_env(&ncu, &a, Path::new("block")));
    a.wait_started(&mut first);
    let mut second = spawn(&ws, &["--kernel", "copy"], &ncu_env(&ncu, &b, Path::new("block")));
    b.wait_started(&mut second);
    let (a_pids, b_pids) = (a.pids(), b.pids());

    signal(&first, libc::SIGTERM);
    let out = first.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", text(&out.stderr));
    assert_gone(&a_pids);
    assert!(b_pids.iter().all(|&p| alive(p)), "the other run's processes were killed too");

    signal(&second, libc::SIGHUP);
    let out = second.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(129), "{}", text(&out.stderr));
    assert_gone(&b_pids);

    let mut codes: Vec<i64> = ws
        .profiles()
        .iter()
        .map(|p| {
            let m: serde_yaml::Value =
                serde_yaml::from_str(&std::fs::read_to_string(p.join("run_manifest.yaml")).unwrap()).unwrap();
            assert_eq!(m["status"].as_str(), Some("interrupted"), "{m:?}");
            m["exit_code"].as_i64().unwrap()
        })
        .collect();
    codes.sort();
    assert_eq!(codes, [129, 143]);
}

/// With several kernels, a signal during the first leaves the later ones' directories
/// saying that they never ran, and why.
#[test]
fn kernels_after_a_stopped_one_record_that_they_did_not_run() {
    let ws = Workspace::new(&format!("{COPY}\n[[package.metadata.kprof.kernels]]\nname = \"fma\"\nbench = \"fma\"\nruntime = \"harness\"\n"));
    let (ncu, r) = misbehaving_ncu(&ws, "stage");
    let mut child = spawn(&ws, &["--workspace"], &ncu_env(&ncu, &r, Path::new("block")));
    r.wait_started(&mut child);
    let pids = r.pids();
    signal(&child, libc::SIGTERM);
    let out: Output = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", text(&out.stderr));
    assert_gone(&pids);
    let statuses: Vec<(String, i64)> = ws
        .profiles()
        .iter()
        .map(|p| {
            let m: serde_yaml::Value =
                serde_yaml::from_str(&std::fs::read_to_string(p.join("run_manifest.yaml")).unwrap()).unwrap();
            (m["status"].as_str().unwrap().to_string(), m["exit_code"].as_i64().unwrap())
        })
        .collect();
    assert_eq!(statuses, [("interrupted".to_string(), 143), ("not-run".to_string(), 143)]);
}
