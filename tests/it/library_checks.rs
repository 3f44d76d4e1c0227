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

/// #45 G11: the library names an archive records are joined to the GPU machine's loader
/// folders and printed; a newline forged a line, a relative `../` looked outside those
/// folders. Each is refused before anything is unpacked, naming the library (`doctor
/// --archive` shows it as its failed library check; `run --archive` runs the same check
/// once the machine passed its preflight); a name linked by its absolute path, as a
/// `DT_NEEDED` entry may be, is not.
#[test]
fn library_names_that_are_not_file_names_are_refused() {
    let (ws, entries, plan, _) = real_archive();
    let refusal = "which is neither a file name nor an absolute path";
    for (n, (name, refused)) in [
        ("libforged.so\nerror: all checks passed", true),
        ("../../../etc/ld.so.cache", true),
        ("lib/../libcuda.so.1", true),
        ("", true),
        ("..", true),
        ("/opt/vendor/lib/libvendor.so.2", false),
        ("libcublas.so.13", false),
    ]
    .into_iter()
    .enumerate()
    {
        let mut plan = plan.clone();
        plan["libraries"][0]["needed"] = serde_json::json!([name]);
        let file = format!("lib-{n}.tar");
        tarball::write(&ws.root().join(&file), &tarball::with_manifest(&entries, &plan));
        let out = kprof_bounded(ws.root(), &["doctor", "--archive", &file]);
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert!(matches!(out.status.code(), Some(1..=13)), "{name:?}: {:?} {all}", out.status.code());
        let line = all.lines().find(|l| l.contains("shared libraries"));
        if refused {
            let line = line.unwrap_or_default();
            assert!(line.starts_with("FAIL") && line.contains(refusal), "{name:?}: {all}");
            assert!(!all.contains("\nerror: all checks passed"), "{name:?}: a forged line: {all}");
        } else {
            assert!(!all.contains(refusal), "{name:?}: {all}");
        }
    }
}
