//! Where a run writes, and only there: the index beside the profiles root and never beside
//! an explicit output directory, output directories relative to the caller and checked
//! before anything is built, baselines and imports that cannot lead outside their folder.
//! Each test failed on the commit before its fix; the fake ncu only replays the H200
//! recordings of `fixtures/h200/demo-stages/`.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{fixture_details, text, Workspace};

/// A harness kernel entry named `name` on the `copy` bench.
pub(crate) fn harness_entry(name: &str) -> String {
    format!(
        "[[package.metadata.kprof.kernels]]\nname = \"{name}\"\nbench = \"copy\"\nruntime = \"harness\"\n"
    )
}

/// The fake ncu of `ws` (in `<ws>/tools`), replaying the recorded `copy` profile.
pub(crate) fn replay_env(ws: &Workspace) -> Vec<(String, String)> {
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

/// With the planner on, a kernel whose `--output-dir` is its one profile directory stays on
/// the single path: a batch would write the program's cost history in the folder beside
/// that directory. Only the directory is created there.
#[test]
fn a_planned_kernel_alone_writes_nothing_beside_its_output_dir() {
    let ws = Workspace::new(&harness_entry("copy"));
    let mine = ws.root().join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    let out_dir = mine.join("prof");
    let env = replay_env(&ws);
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    env.push(("KPROF_PLAN", "auto"));
    let out = ws.kprof(&["--kernel", "copy", "--output-dir", out_dir.to_str().unwrap()], &env);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(out_dir.join("final_report.md").is_file() && !out_dir.join(".batch").exists(), "{stderr}");
    let names: Vec<String> =
        std::fs::read_dir(&mine).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(names, ["prof"], "{stderr}");
}

/// `cargo-kprof kprof ARGS --manifest-path <ws>` run from `cwd`, with the fake ncu.
fn profile_copy_from(ws: &Workspace, cwd: &Path, args: &[&str]) -> Output {
    let mut cmd = crate::support::kprof_bin();
    cmd.arg("kprof").args(args).arg("--manifest-path").arg(ws.manifest()).current_dir(cwd);
    cmd.env_remove("NCU").env("CARGO_TARGET_DIR", ws.root().join("target"));
    for (k, v) in replay_env(ws) {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// #12 item 7: a relative `--output-dir` is the caller's, not the package's: ncu runs in
/// the package directory and was handed the relative path (the README's own
/// `--manifest-path examples/demo/Cargo.toml` form failed with exit 8).
#[test]
fn a_relative_output_dir_is_relative_to_the_caller() {
    let ws = Workspace::new(&harness_entry("copy"));
    let caller = ws.root().join("caller");
    std::fs::create_dir_all(&caller).unwrap();
    let out = profile_copy_from(&ws, &caller, &["--kernel", "copy", "--output-dir", "relprof"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let dir = caller.join("relprof");
    assert!(
        dir.join("final_report.md").is_file() && dir.join("details/01_basic_raw.csv").is_file(),
        "{stderr}"
    );
    // Every path written into the profile is absolute.
    let script = std::fs::read_to_string(dir.join("commands.sh")).unwrap();
    let log = script.lines().find(|l| l.contains("--log-file")).unwrap();
    assert!(log.contains(&format!("--log-file {}/details/01_basic_raw.csv", dir.display())), "{log}");
    assert!(!ws.root().join("relprof").exists());
}

/// #12 item 7: an unusable `--output-dir` is refused before minutes of compilation, and
/// left as it was.
#[test]
fn an_unusable_output_dir_is_refused_before_building() {
    let ws = Workspace::new(&harness_entry("copy"));
    let busy = ws.root().join("busy");
    std::fs::create_dir_all(&busy).unwrap();
    std::fs::write(busy.join("notes.txt"), "keep me").unwrap();
    let file = ws.root().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let cases = [
        (busy.clone(), "is not empty"),
        (file.clone(), "is not a directory"),
        (file.join("sub/prof"), "is not a directory"),
    ];
    for (dir, why) in cases {
        let before = crate::support::snapshot::take(ws.root());
        let out = profile_copy(&ws, &["--kernel", "copy", "--output-dir", dir.to_str().unwrap()]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(12), "{}: {stderr}", dir.display());
        assert!(stderr.contains(why) && stderr.contains(&dir.display().to_string()), "{stderr}");
        assert!(stderr.contains("help:"), "{stderr}");
        assert!(!stderr.contains("Building"), "refused only after building: {stderr}");
        let after = crate::support::snapshot::take(ws.root());
        let changed = crate::support::snapshot::changes(&before, &after, &["target", "Cargo.lock", "tools"]);
        assert!(changed.is_empty(), "{changed:?}");
        assert!(!ws.root().join("target/kprof").exists(), "{stderr}");
    }
}

/// #12 item 9: ncu is resolved once, to an absolute path, and that path is both checked
/// and run. A relative `NCU=./ncu` passed the check (against the caller's directory) and
/// then failed to start in the package directory (exit 8); a bare `NCU=name` is looked up
/// on `PATH`, as a shell would, and is refused at the check when it is not there.
#[test]
fn a_relative_ncu_is_resolved_once_for_the_check_and_the_run() {
    let ws = Workspace::new(&harness_entry("copy"));
    let tools = ws.root().join("tools");
    let run = |cwd: &Path, ncu: &str, path: &str| {
        let mut cmd = crate::support::kprof_bin();
        cmd.args(["kprof", "--kernel", "copy", "--manifest-path"]).arg(ws.manifest()).current_dir(cwd);
        cmd.env("CARGO_TARGET_DIR", ws.root().join("target"));
        for (k, v) in replay_env(&ws) {
            cmd.env(k, v);
        }
        cmd.env("NCU", ncu).env("PATH", path);
        cmd.output().unwrap()
    };
    let path = std::env::var("PATH").unwrap();
    let with_tools = crate::support::path_with(&[&tools]);
    replay_env(&ws);

    let out = run(&tools, "./ncu", &path);
    assert_eq!(out.status.code(), Some(0), "NCU=./ncu: {}", text(&out.stderr));
    let out = run(ws.root(), "ncu", &with_tools);
    assert_eq!(out.status.code(), Some(0), "NCU=ncu on PATH: {}", text(&out.stderr));

    let profiles = ws.profiles().len();
    let out = run(&tools, "ncu", &path);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "NCU=ncu not on PATH: {stderr}");
    assert!(stderr.contains("NCU=ncu") && stderr.contains("./ncu"), "{stderr}");
    assert_eq!(ws.profiles().len(), profiles, "nothing is prepared for a run that cannot start");
}

/// #12 item 10: an import that fails after its inputs were read (here the `--kernel` hint
/// matches no kernel of the file, exit 6) left a half-written output directory, which the
/// corrected command then refused as not empty. The import is built beside its place and
/// renamed there only when complete.
#[test]
fn a_failed_import_leaves_nothing_that_blocks_the_corrected_one() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = crate::support::recordings().join("demo-full/copy_full_raw.csv");
    let out_dir = tmp.path().join("imports/copy");
    let import = |hint: &str| {
        crate::support::kprof_bin()
            .args(["kprof", "import", "--raw"])
            .arg(&raw)
            .args(["--kernel", hint, "--output-dir"])
            .arg(&out_dir)
            .output()
            .unwrap()
    };
    let before = crate::support::snapshot::take(tmp.path());
    let out = import("gemm");
    assert_eq!(out.status.code(), Some(6), "{}", text(&out.stderr));
    let after = crate::support::snapshot::take(tmp.path());
    let changed = crate::support::snapshot::changes(&before, &after, &[]);
    assert!(changed.is_empty(), "a failed import left {changed:?}");

    let out = import("copy");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out_dir.join("final_report.md").is_file());
    let names: Vec<String> = std::fs::read_dir(tmp.path().join("imports"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["copy"], "no staging folder is left beside it");
}

/// #12 item 2 end to end: an imported export whose kernel name (ncu's CSV, damaged here on
/// purpose) climbs out with `../`, saved as a baseline: only `profile/baselines/main/` and
/// the profile's own `comparison/` and `report.html` (which shows the comparison) may change.
#[test]
fn a_kernel_name_from_a_csv_cannot_lead_a_baseline_outside() {
    let tmp = tempfile::tempdir().unwrap();
    let raw =
        std::fs::read_to_string(crate::support::recordings().join("demo-full/copy_full_raw.csv")).unwrap();
    let hostile = raw.replacen("\"copy_kernel\"", "\"../../../../escaped/copy_kernel\"", 1);
    let csv = tmp.path().join("hostile_raw.csv");
    std::fs::write(&csv, hostile).unwrap();
    let kprof = |args: &[&str]| {
        crate::support::kprof_bin().arg("kprof").args(args).current_dir(tmp.path()).output().unwrap()
    };
    for dir in ["ws/profile/a_20261129_230000", "ws/profile/b_20261129_230001"] {
        let out = kprof(&["import", "--raw", csv.to_str().unwrap(), "--output-dir", dir]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let before = crate::support::snapshot::take(tmp.path());
    let out = kprof(&[
        "compare",
        "ws/profile/b_20261129_230001",
        "--baseline",
        "ws/profile/a_20261129_230000",
        "--save-baseline",
        "main",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let after = crate::support::snapshot::take(tmp.path());
    let changed = crate::support::snapshot::changes(
        &before,
        &after,
        &[
            "ws/profile/baselines",
            "ws/profile/b_20261129_230001/comparison",
            "ws/profile/b_20261129_230001/report.html",
        ],
    );
    assert!(changed.is_empty(), "{changed:?}");
    let saved: Vec<String> = std::fs::read_dir(tmp.path().join("ws/profile/baselines/main"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(saved, ["escaped_copy_kernel"]);
    let baselines: Vec<String> = std::fs::read_dir(tmp.path().join("ws/profile/baselines"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(baselines, ["main"]);
}
