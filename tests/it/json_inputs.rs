//! The JSON documents a command reads from a profile root or a profile (`index.json`,
//! `comparison/*.json`, ...) are read only when they are regular files of a sane size
//! (issue #45, G5): a pipe nobody writes must not block, `/dev/zero` must not fill memory.

use std::path::Path;
use std::process::Command;

use crate::support::{copy_dir, kprof_bounded, recordings, text};

fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

fn link_to(path: &Path, target: &str) {
    let _ = std::fs::remove_file(path);
    std::os::unix::fs::symlink(target, path).unwrap();
}

/// Two shards' profile roots (`rerun`, `slow`) under `root`.
fn two_shards(root: &Path) {
    for run in ["rerun", "slow"] {
        copy_dir(&recordings().join("check-runs").join(run), &root.join(run));
    }
}

fn refused(case: &str, out: &std::process::Output, names: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{case}: {stderr}");
    assert!(stderr.contains(names) && stderr.contains("not a regular file"), "{case}: {stderr}");
    assert!(stderr.contains("help:"), "{case}: {stderr}");
}

#[test]
fn merge_refuses_an_index_that_is_a_pipe_or_a_device() {
    for (case, make) in
        [("a pipe", mkfifo as fn(&Path)), ("a link to /dev/zero", |p: &Path| link_to(p, "/dev/zero"))]
    {
        let tmp = tempfile::tempdir().unwrap();
        two_shards(tmp.path());
        let index = tmp.path().join("rerun/workspace/profile/index.json");
        make(&index);
        let out = kprof_bounded(tmp.path(), &["merge", "rerun", "slow", "--output-dir", "out"]);
        refused(case, &out, "index.json");
        assert!(!tmp.path().join("out").exists(), "{case}: an output was left");
    }
}

#[test]
fn merge_and_report_refuse_a_comparison_that_is_a_pipe_or_a_device() {
    for (case, make) in
        [("a pipe", mkfifo as fn(&Path)), ("a link to /dev/zero", |p: &Path| link_to(p, "/dev/zero"))]
    {
        let tmp = tempfile::tempdir().unwrap();
        two_shards(tmp.path());
        let profile = tmp.path().join("rerun/workspace/profile/hgemm_tiled_20261129_231734");
        std::fs::create_dir_all(profile.join("comparison")).unwrap();
        make(&profile.join("comparison/regression.json"));
        // merge reads the shards' comparisons before it copies anything.
        let out = kprof_bounded(tmp.path(), &["merge", "rerun", "slow", "--output-dir", "out"]);
        refused(case, &out, "regression.json");
        assert!(!tmp.path().join("out").exists(), "{case}: an output was left");
        // report reads it for the page's comparison section.
        let out = kprof_bounded(tmp.path(), &["report", profile.to_str().unwrap()]);
        refused(case, &out, "regression.json");
    }
}

/// #45 G8 (and G15's "invalid ... gives no reason"): a damaged `comparison/ab.json` in a
/// shard failed the merge after its output was in place, so the corrected command was
/// refused as "not empty". It is read, and refused with its reason, before anything is
/// written.
#[test]
fn merge_checks_the_shards_comparisons_before_writing_its_output() {
    let tmp = tempfile::tempdir().unwrap();
    two_shards(tmp.path());
    let comparison = tmp.path().join("rerun/workspace/profile/hgemm_tiled_20261129_231734/comparison");
    std::fs::create_dir_all(&comparison).unwrap();
    std::fs::write(comparison.join("ab.json"), "{\"result\": ").unwrap();
    let out = kprof_bounded(tmp.path(), &["merge", "rerun", "slow", "--output-dir", "out"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(12), "{stderr}");
    assert!(stderr.contains("ab.json is damaged: EOF while parsing"), "{stderr}");
    assert!(!tmp.path().join("out").exists(), "the output was left in place");
    std::fs::remove_file(comparison.join("ab.json")).unwrap();
    let out = kprof_bounded(tmp.path(), &["merge", "rerun", "slow", "--output-dir", "out"]);
    assert!(matches!(out.status.code(), Some(0 | 10)), "the corrected command: {}", text(&out.stderr));
}
