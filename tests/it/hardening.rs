//! Regression tests of the hardening review (issue #12): each test here failed on the
//! commit before its fix. The fake ncu only replays the H200 recordings of
//! `fixtures/h200/demo-stages/`.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{fixture_details, text, Workspace};

/// A harness kernel entry named `name` on the `copy` bench.
fn harness_entry(name: &str) -> String {
    format!(
        "[[package.metadata.kprof.kernels]]\nname = \"{name}\"\nbench = \"copy\"\nruntime = \"harness\"\n"
    )
}

/// The fake ncu of `ws` (in `<ws>/tools`), replaying the recorded `copy` profile.
fn replay_env(ws: &Workspace) -> Vec<(String, String)> {
    let tools = ws.root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let ncu = crate::support::fake_ncu::write(&tools);
    vec![
        ("NCU".into(), ncu.display().to_string()),
        ("KPROF_SKIP_GPU_CHECK".into(), "1".into()),
        ("FAKE_NCU_ARGV".into(), tools.join("argv.txt").display().to_string()),
        ("FAKE_NCU_REPLAY".into(), fixture_details("copy_20261129_213211").display().to_string()),
    ]
}

/// `cargo kprof ARGS` on `ws` with the fake ncu replaying the recorded `copy` profile.
fn profile_copy(ws: &Workspace, args: &[&str]) -> Output {
    let env = replay_env(ws);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    ws.kprof(args, &env)
}

fn only_profile(root: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.join("details").is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.into_iter().next().unwrap()
}

/// #12 item 8: the profiles index is derived data; failing to rewrite it (here
/// `profile/index.json` is a directory) is a warning, never the exit status of a profile
/// that finished.
#[test]
fn an_index_that_cannot_be_written_does_not_fail_a_finished_profile() {
    let ws = Workspace::new(&harness_entry("copy"));
    std::fs::create_dir_all(ws.root().join("profile/index.json")).unwrap();
    let out = profile_copy(&ws, &["--kernel", "copy"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warning:") && stderr.contains("index"), "{stderr}");
    let dir = only_profile(&ws.root().join("profile"));
    assert!(dir.join("final_report.md").is_file());
}

/// #12 item 1: with `--output-dir X/prof`, the user's own `X/index.md` and `X/index.json`
/// are theirs: the profiles index is written only under the workspace's `profile/`.
#[test]
fn the_index_is_never_written_beside_an_explicit_output_dir() {
    let ws = Workspace::new(&harness_entry("copy"));
    let mine = ws.root().join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("index.md"), "# my notes\n").unwrap();
    let out_dir = mine.join("prof");
    let out = profile_copy(&ws, &["--kernel", "copy", "--output-dir", out_dir.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(out_dir.join("final_report.md").is_file(), "{stderr}");
    assert_eq!(std::fs::read_to_string(mine.join("index.md")).unwrap(), "# my notes\n");
    assert!(!mine.join("index.json").exists(), "{stderr}");
    let mut names: Vec<String> =
        std::fs::read_dir(&mine).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["index.md", "prof"]);
    // The project's index lists the profiles under profile/; this one is not among them.
    assert!(!ws.root().join("profile/index.md").exists(), "{stderr}");
}
