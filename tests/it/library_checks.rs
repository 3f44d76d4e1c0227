//! The needed-library check of an archive is linear in what the archive lists, and its
//! message bounded (issue #45, G2): an archive naming 20,000 `DT_NEEDED` libraries asked
//! for 7.8 GB and aborted.

use crate::archive_unpacking::real_archive;
use crate::support::{kprof_bounded, tarball, text};

#[test]
fn an_archive_of_twenty_thousand_needed_libraries_is_checked_in_bounded_memory() {
    let (ws, entries, mut plan, _) = real_archive();
    let names: Vec<String> =
        (0..20_000).map(|i| format!("libkprof-not-installed-anywhere-{i:05}.so")).collect();
    plan["libraries"][0]["needed"] = serde_json::json!(names);
    let archive = ws.root().join("many.tar");
    tarball::write(&archive, &tarball::with_manifest(&entries, &plan));
    // `run --archive` checks with the same function once the machine passed its preflight,
    // which this machine (no GPU) does not; `doctor --archive` checks here.
    let args = ["doctor", "--archive", "many.tar"];
    let out = kprof_bounded(ws.root(), &args);
    let stderr = text(&out.stderr);
    let stdout = text(&out.stdout);
    assert!(matches!(out.status.code(), Some(1..=13)), "{args:?}: {:?} {stderr}", out.status.code());
    assert!(!stderr.contains("memory allocation") && !stderr.contains("ran past"), "{args:?}: {stderr}");
    // Named, but not all 20,000 of them: a message stays readable.
    let all = format!("{stdout}{stderr}");
    assert!(all.contains("libkprof-not-installed-anywhere-00000.so"), "{args:?}: {all}");
    assert!(all.len() < 64 << 10, "{args:?}: {} bytes of output", all.len());
    assert!(!ws.root().join("r").exists(), "{args:?}: unpacked before the check");
}
