//! The base of an A/B check holds what it claims: kprof's worktree of the base revision is
//! built only as git checked it out (edits refused, naming the files), made again after
//! `cargo clean`; an A/B archive whose manifest is not what `archive --base` writes is
//! refused naming the field; and a failed unpack leaves nothing in the way of the retry.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::ab::{bench, check, recorded_rounds, repository};
use crate::support::tarball::{self, Entry, Kind};
use crate::support::{text, Workspace};

/// `archive --base HEAD` of `ws` at `ws/ab.tar`, read back entry by entry.
fn packed(ws: &Workspace) -> (PathBuf, Vec<Entry>) {
    let tar = ws.root().join("ab.tar");
    let out = ws.kprof(&["archive", "--base", "HEAD", "-o", tar.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let entries = tarball::read(&tar);
    (tar, entries)
}

/// `check --timing-only --archive TAR --workspace-remap REMAP`, without cargo, each side
/// replaying its rounds of the recorded `bank` run.
fn check_archive(tar: &Path, remap: &Path) -> Output {
    let state = tempfile::tempdir().unwrap();
    let mut cmd = crate::support::kprof_bin();
    // Stand-in benches: no GPU needed.
    cmd.env("KPROF_SKIP_GPU_CHECK", "1");
    cmd.args(["kprof", "check", "--timing-only", "--archive"]).arg(tar).arg("--workspace-remap").arg(remap);
    cmd.env("FAKE_ROUNDS_BASE", recorded_rounds("bank", "base"))
        .env("FAKE_ROUNDS_HEAD", recorded_rounds("bank", "head"))
        .env("FAKE_STATE", state.path())
        .env("PATH", "/usr/bin:/bin")
        .env_remove("GITHUB_STEP_SUMMARY");
    cmd.output().unwrap()
}

/// The bytes of the entry `name`.
fn data<'e>(entries: &'e [Entry], name: &str) -> &'e [u8] {
    match &entries.iter().find(|e| e.name == name).unwrap().kind {
        Kind::File(d) => d,
        other => panic!("{name}: {other:?}"),
    }
}

/// `entries` with the entry `name` holding `bytes`.
fn replaced(entries: &[Entry], name: &str, bytes: Vec<u8>) -> Vec<Entry> {
    entries
        .iter()
        .map(|e| if e.name == name { Entry::file(name, bytes.clone()) } else { e.clone() })
        .collect()
}

/// A manifest field that `archive --base` never writes (a commit that is no commit, a
/// revision with control characters) is refused before anything is unpacked, naming the
/// archive and the field: never a panic, never used.
#[test]
fn an_a_b_archive_with_a_bad_manifest_field_is_refused_naming_it() {
    let Some(ws) = repository() else { return };
    let (_, entries) = packed(&ws);
    let manifest: serde_json::Value = serde_json::from_slice(data(&entries, "kprof-ab.json")).unwrap();
    let cases = [
        ("base_commit", serde_json::json!(format!("a{}", "é".repeat(39)))),
        ("base_commit", serde_json::json!("")),
        ("base_commit", serde_json::json!("../..")),
        ("base_commit", serde_json::json!("0123456789abcdef0123456789abcdef0123456")),
        ("head_commit", serde_json::json!("HEAD")),
        ("base_asked", serde_json::json!("main\u{1b}[2J")),
        ("base_asked", serde_json::json!("m".repeat(5000))),
        ("kprof_version", serde_json::json!("0.1.0\n")),
    ];
    for (n, (field, value)) in cases.into_iter().enumerate() {
        let mut bad = manifest.clone();
        bad[field] = value.clone();
        let tar = ws.root().join(format!("bad-{n}.tar"));
        tarball::write(&tar, &replaced(&entries, "kprof-ab.json", serde_json::to_vec_pretty(&bad).unwrap()));
        let remap = ws.root().join(format!("there-{n}"));
        let out = check_archive(&tar, &remap);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{field} = {value}: {stderr}");
        assert!(
            stderr.contains(&format!("bad-{n}.tar")) && stderr.contains(&format!("`{field}`")),
            "{stderr}"
        );
        assert!(!remap.exists(), "{field}: nothing unpacked");
    }
}

/// An A/B archive whose base side cannot be unpacked (a damaged file, an entry that would
/// leave `--workspace-remap`) is refused, and what the attempt unpacked is removed: the
/// retry meets the same refusal, not the remains of the first, and the right archive then
/// unpacks into the same directory.
#[test]
fn a_failed_a_b_unpack_leaves_nothing_in_the_way_of_the_retry() {
    let Some(ws) = repository() else { return };
    let (good, entries) = packed(&ws);
    let mut escaping = tarball::read_bytes(data(&entries, "base.tar"));
    escaping.push(Entry::file("../escaped.txt", "x"));
    let sides = [b"not a tar file at all".repeat(64), tarball::bytes(&escaping)];
    let remap = ws.root().join("there");
    for (n, side) in sides.into_iter().enumerate() {
        let tar = ws.root().join(format!("bad-{n}.tar"));
        tarball::write(&tar, &replaced(&entries, "base.tar", side));
        for _ in 0..2 {
            let out = check_archive(&tar, &remap);
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(3), "{stderr}");
            assert!(!remap.exists(), "what the unpack made is removed: {:?}", listing(&remap));
            assert!(
                stderr.contains(&format!("bad-{n}.tar: its base side (base.tar) cannot be unpacked")),
                "{stderr}"
            );
        }
        assert!(!ws.root().join("escaped.txt").exists());
        // A directory that was there, empty, stays, empty.
        std::fs::create_dir(&remap).unwrap();
        assert_eq!(check_archive(&tar, &remap).status.code(), Some(3));
        assert_eq!(listing(&remap), Vec::<String>::new());
        std::fs::remove_dir(&remap).unwrap();
    }
    let out = check_archive(&good, &remap);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(10), "{stdout}\n{stderr}");
    assert!(stdout.contains("hgemm_tiled: regressed, +428.1 %"), "{stdout}");
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// A file edited in kprof's worktree of the base is never built as the base: the check is
/// refused, naming the file and the way out, and the edit stays.
#[test]
fn an_edited_base_worktree_is_refused_naming_the_file() {
    let Some(ws) = repository() else { return };
    let out = check(&ws, "bank", &[]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out.stderr));
    let copy = ws.root().join("target/kprof-base/benches/copy.rs");
    std::fs::write(&copy, bench("head")).unwrap();
    let out = check(&ws, "bank", &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{}\n{stderr}", text(&out.stdout));
    assert!(stderr.contains("holds edits: benches/copy.rs"), "{stderr}");
    assert!(stderr.contains("commit or discard them"), "{stderr}");
    assert!(std::fs::read_to_string(&copy).unwrap().contains("\"head\""), "the edit stays");
    // Put back as committed, the tree is the base again and is reused.
    std::fs::write(&copy, bench("base")).unwrap();
    let out = check(&ws, "bank", &[]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("reusing"), "{}", text(&out.stderr));
}

/// `cargo clean` deletes the target directory, and the worktree's folder with it, but
/// not git's record of the worktree: the next check makes the tree again, and says so.
#[test]
fn after_cargo_clean_the_base_worktree_is_made_again() {
    let Some(ws) = repository() else { return };
    let out = check(&ws, "bank", &[]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out.stderr));
    let clean = Command::new(env!("CARGO"))
        .arg("clean")
        .arg("--manifest-path")
        .arg(ws.manifest())
        .env("CARGO_TARGET_DIR", ws.root().join("target"))
        .output()
        .unwrap();
    assert!(clean.status.success(), "{}", text(&clean.stderr));
    assert!(!ws.root().join("target").exists());
    let out = check(&ws, "bank", &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "{}\n{stderr}", text(&out.stdout));
    assert!(stderr.contains("was deleted"), "{stderr}");
    let copy = ws.root().join("target/kprof-base/benches/copy.rs");
    assert!(std::fs::read_to_string(copy).unwrap().contains("\"base\""));
}

/// An A/B archive on a machine that cannot run the check (no GPU, driver or ncu here) is
/// refused before anything is unpacked, as a check from a checkout is refused before
/// anything is built: exit 5 naming what is missing, and no `--workspace-remap` folder.
#[test]
fn an_a_b_archive_on_a_machine_without_a_gpu_unpacks_nothing() {
    let Some(ws) = repository() else { return };
    let (tar, _) = packed(&ws);
    let remap = ws.root().join("there");
    let out = crate::support::kprof_bin()
        .args(["kprof", "check", "--archive"])
        .arg(&tar)
        .arg("--workspace-remap")
        .arg(&remap)
        .env("PATH", "/usr/bin:/bin")
        .env("NCU", "/nonexistent/ncu")
        .env_remove("KPROF_SKIP_GPU_CHECK")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("/nonexistent/ncu"), "{stderr}");
    assert!(!stderr.contains("Unpacked both sides"), "{stderr}");
    assert!(!remap.exists(), "{} was made", remap.display());
}
