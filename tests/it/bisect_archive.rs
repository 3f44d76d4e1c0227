//! Build here, bisect there: `archive --bisect GOOD..BAD` builds every revision of the
//! generated history of `bisect.rs` and packs identical builds once; `bisect --archive`
//! searches it with no repository and no cargo, its benches replaying the H200's rounds.

use crate::bisect::{bound, history, outcomes_at, replaying, short, with_reason};
use crate::support::text;

/// c0..c10: c2-c4 (notes) and c6 (c1's bench again) have c1's build, c8-c10 (notes) c7's,
/// and c5 does not build. The archive holds 3 builds and names c5; the search names c7
/// within the bound, and a revision whose build was checked already, or is `--good`'s,
/// runs no check: the regressed build's rounds run once.
#[test]
fn an_archived_range_is_searched_without_the_repository_each_build_checked_once() {
    let Some((ws, c)) = history() else { return };
    let tar = ws.root().join("bisect.tar");
    let range = format!("{}..{}", c[0], c[10]);
    let args = ["archive", "--bisect", &range, "-k", "hgemm_tiled", "-o", tar.to_str().unwrap()];
    let out = ws.kprof(&[&args[..], &["--message-format", "json"]].concat(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> =
        text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let written = with_reason(&lines, "archive-written");
    let written = written.last().unwrap();
    assert_eq!((&written["revisions"], &written["builds"]), (&10.into(), &3.into()), "{written}");
    assert_eq!(written["not_built"][0][0], short(&c[5]), "{written}");
    assert!(written["not_built"][0][1].as_str().unwrap().starts_with("does not build: "), "{written}");
    assert_eq!(written["good"]["commit"], c[0]);
    // The same -o again: refused before anything is built, the archive as it was.
    let before = std::fs::read(&tar).unwrap();
    let again = ws.kprof(&args, &[]);
    assert_eq!(again.status.code(), Some(12), "{}", text(&again.stderr));
    let stderr = text(&again.stderr);
    assert!(stderr.contains("exists") && !stderr.contains("Building"), "{stderr}");
    assert_eq!(std::fs::read(&tar).unwrap(), before);

    // On the "GPU machine": another folder, no cargo.
    let there = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let log = there.path().join("runs.log");
    let mut cmd = crate::support::kprof_bin();
    cmd.args(["kprof", "bisect", "--timing-only", "--archive"]).arg(&tar);
    cmd.args(["--workspace-remap", "remap", "--message-format", "json"]).current_dir(there.path());
    replaying(&mut cmd, state.path(), &log);
    cmd.env("CARGO", "/nonexistent/cargo").env("PATH", "/usr/bin:/bin");
    let out = cmd.output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "{stderr}");
    let lines: Vec<serde_json::Value> =
        text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let end = with_reason(&lines, "bisect-finished");
    let end = end.last().unwrap();
    assert_eq!((&end["result"], &end["commit"]), (&"first-bad".into(), &short(&c[7]).into()), "{end}");
    assert!(end["evidence"][0].as_str().unwrap().starts_with("hgemm_tiled: regressed, +4"), "{end}");
    let steps = with_reason(&lines, "bisect-step");
    let checks = steps.iter().filter(|s| s["outcome"] != "skipped" && s["same_build_as"].is_null()).count();
    assert!(checks <= bound(10), "{checks} checks: {steps:?}");
    assert_eq!(end["checks"], checks);
    // Each build checked once at most: a later revision of the same build takes the
    // first one's outcome, naming it.
    let build = |commit: &str| match c.iter().position(|h| short(h) == commit).unwrap() {
        1..=4 | 6 => 1,
        7..=10 => 2,
        n => 10 + n,
    };
    let mut first_of_build = std::collections::HashMap::new();
    for s in &steps {
        let commit = s["commit"].as_str().unwrap();
        match first_of_build.get(&build(commit)) {
            None => {
                assert!(s["same_build_as"].is_null(), "{s}");
                first_of_build.insert(build(commit), commit.to_string());
            }
            Some(first) if s["rounds"] == 12 => assert_eq!(&s["same_build_as"], first.as_str(), "{steps:?}"),
            Some(_) => {}
        }
    }
    let runs = std::fs::read_to_string(&log).unwrap();
    assert_eq!(runs.lines().filter(|l| l.starts_with("bank ")).count(), 12, "{runs}");
    // The result and each checked revision's profiles are under --workspace-remap.
    let root = there.path().join("remap/profile");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("bisect.json")).unwrap()).unwrap();
    assert_eq!(doc["history"][doc["result"]["index"].as_u64().unwrap() as usize]["commit"], c[7]);
    assert!(root.join(format!("rev-{}", short(&c[10]))).is_dir());
    assert!(!there.path().join("remap/.kprof-bisect-archives").exists(), "the builds' archives are removed");

    // The bundle is not for `run --archive`: refused, naming the command that takes it,
    // before anything is unpacked.
    let mut cmd = crate::support::kprof_bin();
    cmd.args(["kprof", "run", "--archive"]).arg(&tar).args(["--workspace-remap", "r2"]);
    let out = cmd.current_dir(there.path()).env("KPROF_SKIP_GPU_CHECK", "1").output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("bisect --archive"), "{}", text(&out.stderr));
    assert!(!there.path().join("r2").exists());
}

/// `archive --bisect RANGE` of `ws` at `tar`, then `bisect --archive` of it in a new folder
/// with `args`: the output and the JSON lines.
fn archive_and_search(
    ws: &crate::support::Workspace,
    range: &str,
    name: &str,
    args: &[&str],
) -> (std::process::Output, Vec<serde_json::Value>) {
    let tar = ws.root().join(format!("{name}.tar"));
    let out =
        ws.kprof(&["archive", "--bisect", range, "-k", "hgemm_tiled", "-o", tar.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let there = ws.root().join(format!("{name}-there"));
    std::fs::create_dir(&there).unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut cmd = crate::support::kprof_bin();
    cmd.args(["kprof", "bisect", "--timing-only", "--archive"]).arg(&tar).args(args);
    cmd.args(["--workspace-remap", "remap", "--message-format", "json"]).current_dir(&there);
    replaying(&mut cmd, state.path(), &there.join("runs.log"));
    let out = cmd.output().unwrap();
    let lines = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (out, lines)
}

/// From archives too, the planted commit is named from other windows of the history
/// (k = 3 of 3 past the broken revision), and an ambiguous step is retried with twice
/// the rounds, then reported as a range: c6 -> a1 (notes) -> a2 (about +3 %) -> a3
/// (+428 %) at a tolerance of 3.1 %.
#[test]
fn an_archived_range_names_other_windows_and_reports_an_ambiguous_step_as_a_range() {
    let Some((ws, c)) = history() else { return };
    let (out, lines) = archive_and_search(&ws, &format!("{}..{}", c[4], c[7]), "w47", &[]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out.stderr));
    let end = with_reason(&lines, "bisect-finished");
    assert_eq!(
        (&end[0]["result"], &end[0]["commit"]),
        (&"first-bad".into(), &short(&c[7]).into()),
        "{end:?}"
    );
    assert!(end[0]["checks"].as_u64().unwrap() as usize <= bound(3), "{end:?}");

    crate::bisect::git(ws.root(), &["checkout", "-q", "-b", "slow", &c[6]]);
    use crate::bisect::Change::*;
    let a = crate::bisect::commit_all(&ws, 11, &[Notes, Bench("slow"), Bench("bank")]);
    let range = format!("{}..{}", c[6], a[2]);
    let (out, lines) = archive_and_search(&ws, &range, "slow", &["--tolerance-pct", "3.1"]);
    assert_eq!(out.status.code(), Some(10), "{}\n{lines:?}", text(&out.stderr));
    let steps = with_reason(&lines, "bisect-step");
    assert_eq!(outcomes_at(&steps, &a[1]), [("ambiguous", 12), ("ambiguous", 24)], "{steps:?}");
    let end = with_reason(&lines, "bisect-finished");
    let end = end.last().unwrap();
    assert_eq!(
        (&end["result"], &end["after"], &end["commit"]),
        (&"range".into(), &short(&a[0]).into(), &short(&a[2]).into()),
        "{end}"
    );
    assert_eq!(end["hidden"], serde_json::json!([short(&a[1])]));
}

/// #45 G10: a bundle whose build is garbage (or unsafe) was searched anyway, that build's
/// revisions skipped, and an answer given (exit 10); a history naming a commit twice, or
/// `good` inside it, was taken as it was. Every build and the history are checked before
/// the first step: exit 3, naming the bundle and what is wrong, nothing searched.
#[test]
fn a_bundle_with_a_damaged_build_or_history_is_refused_before_the_first_step() {
    use crate::support::tarball::{self, Entry};
    let Some((ws, c)) = history() else { return };
    let tar = ws.root().join("g10.tar");
    let out = ws.kprof(
        &[
            "archive",
            "--bisect",
            &format!("{}..{}", c[0], c[10]),
            "-k",
            "hgemm_tiled",
            "-o",
            tar.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let entries = tarball::read(&tar);
    let manifest: serde_json::Value = match &entries[0].kind {
        tarball::Kind::File(d) => serde_json::from_slice(d).unwrap(),
        other => panic!("{other:?}"),
    };
    let garbage: Vec<Entry> = entries
        .iter()
        .map(|e| if e.name == "build-1.tar" { Entry::file(&e.name, "not a tar at all") } else { e.clone() })
        .collect();
    let mut twice = manifest.clone();
    let first = twice["history"][0].clone();
    twice["history"].as_array_mut().unwrap().push(first);
    let mut good_inside = manifest.clone();
    good_inside["history"][1]["commit"] = manifest["good"]["commit"].clone();
    let cases: Vec<(&str, Vec<Entry>, &str)> = vec![
        ("a garbage build", garbage, "its build 1 is refused"),
        ("a commit twice", with_manifest(&entries, &twice), "twice"),
        ("good inside the history", with_manifest(&entries, &good_inside), "after itself"),
    ];
    for (case, entries, says) in cases {
        let bad = ws.root().join("bad.tar");
        tarball::write(&bad, &entries);
        let there = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let mut cmd = crate::support::kprof_bin();
        cmd.args(["kprof", "bisect", "--timing-only", "--archive"]).arg(&bad);
        cmd.args(["--workspace-remap", "remap"]).current_dir(there.path());
        replaying(&mut cmd, state.path(), &there.path().join("runs.log"));
        let out = cmd.output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{case}: {stderr}");
        assert!(stderr.contains("bad.tar") && stderr.contains(says), "{case}: {stderr}");
        assert!(!there.path().join("runs.log").exists(), "{case}: a step ran");
    }
}

/// `entries` with the bisect manifest (the first entry) replaced by `value`.
fn with_manifest(
    entries: &[crate::support::tarball::Entry],
    value: &serde_json::Value,
) -> Vec<crate::support::tarball::Entry> {
    let mut out = entries.to_vec();
    out[0] = crate::support::tarball::Entry::file(&out[0].name, serde_json::to_vec_pretty(value).unwrap());
    out
}
