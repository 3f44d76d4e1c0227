//! The hidden staging folders of `import` and `merge` are removed when a signal ends the
//! process, and those of processes no longer running are swept by the next run (issue
//! #45, G6).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{copy_dir, recording_file, recordings, text};

/// A process id that no process has now: a child's, after it ended.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn hidden(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

fn kprof(cwd: &Path, args: &[&str]) -> std::process::Output {
    crate::support::kprof_bin().arg("kprof").args(args).current_dir(cwd).output().unwrap()
}

#[test]
fn staging_folders_of_dead_processes_are_swept_and_live_ones_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let raw = recording_file("demo-full/copy_full_raw.csv", t);
    // What a kill -9 of an import and of a merge left, and a run in progress (this test).
    let stale_import = t.join(format!(".out.importing-{}-1", dead_pid()));
    let stale_merge = t.join(format!(".merged.merging-{}-1", dead_pid()));
    let live = t.join(format!(".out.importing-{}-1", std::process::id()));
    for d in [&stale_import, &stale_merge, &live] {
        std::fs::create_dir_all(d.join("details")).unwrap();
        std::fs::write(d.join("details/01_basic_raw.csv"), "half written").unwrap();
    }
    let out = kprof(t, &["import", "--raw", raw.to_str().unwrap(), "--output-dir", "out"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!stale_import.exists() && live.exists(), "{:?}", hidden(t));
    for run in ["rerun", "slow"] {
        copy_dir(&recordings().join("check-runs").join(run), &t.join(run));
    }
    let out = kprof(t, &["merge", "rerun", "slow", "--output-dir", "merged"]);
    // 10: the shards hold a comparison that regressed (the merged verdict).
    assert!(matches!(out.status.code(), Some(0 | 10)) && t.join("merged").is_dir(), "{}", text(&out.stderr));
    assert!(!stale_merge.exists(), "{:?}", hidden(t));
}

/// A raw page of `launches` copies of a recorded launch: an input that takes seconds to
/// import, so that a signal arrives while the staging folder is being filled.
fn big_page(dir: &Path, launches: usize) -> PathBuf {
    let page = std::fs::read_to_string(recording_file("demo-full/copy_full_raw.csv", dir)).unwrap();
    let mut lines = page.lines().filter(|l| !l.starts_with("=="));
    let header = lines.next().unwrap();
    let units = lines.next().unwrap();
    let row = lines.next().unwrap();
    let path = dir.join("big_raw.csv");
    let mut text = format!("{header}\n{units}\n");
    text.reserve(row.len() * launches);
    for _ in 0..launches {
        text.push_str(row);
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn sigint_during_import_removes_its_staging_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let raw = big_page(t, 20_000);
    let mut child = crate::support::kprof_bin()
        .args(["kprof", "import", "--raw", raw.to_str().unwrap(), "--output-dir", "out"])
        .current_dir(t)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The signal goes once the staging folder exists (polled: the condition, not a delay).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while hidden(t).is_empty() && child.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "no staging folder appeared");
        std::thread::yield_now();
    }
    assert!(child.try_wait().unwrap().is_none(), "the import ended before the signal: make its input larger");
    // SAFETY: sends SIGINT to the child, which is still running.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(hidden(t).is_empty(), "left behind: {:?}", hidden(t));
    assert!(!t.join("out").exists());
}
