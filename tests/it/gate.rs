//! `cargo kprof compare` and `cargo kprof check` on recordings from the H200
//! (fixtures/h200/check-runs/ and archive-runs/, see their READMEs).
//!
//! `compare` runs on copies of the recorded profile directories. `check --timing-only`
//! runs a stand-in bench that writes a recorded harness result (the real `hgemm` bench's
//! JSON from the H200) where the harness would: the gate's decisions, exit codes, reports
//! and the step summary are then those of the real runs.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{copy_dir, recordings, text, Workspace};

/// The one profile directory of `<run>/workspace/profile` whose name starts with `prefix_2`.
fn recorded(run: &str, kernel: &str) -> PathBuf {
    let root = recordings().join(run).join("workspace/profile");
    std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.strip_prefix(kernel).is_some_and(|rest| rest.starts_with("_2"))
        })
        .unwrap_or_else(|| panic!("no {kernel} profile in {}", root.display()))
}

fn kprof(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = crate::support::kprof_bin();
    cmd.arg("kprof").args(args).env_remove("GITHUB_STEP_SUMMARY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Naive then tiled hgemm (profiled on the H200 in one run): the improvement and the
/// evidence that explains it.
#[test]
fn naive_to_tiled_is_an_improvement_explained_by_the_hot_line_and_throughputs() {
    let tmp = tempfile::tempdir().unwrap();
    let (naive, tiled) = (tmp.path().join("profile/naive"), tmp.path().join("profile/tiled"));
    copy_dir(&recorded("check-runs/pair", "hgemm"), &naive);
    copy_dir(&recorded("check-runs/pair", "hgemm_tiled"), &tiled);
    std::fs::remove_dir_all(tiled.join("comparison")).unwrap();
    let out = kprof(
        &[
            "compare",
            tiled.to_str().unwrap(),
            "--baseline",
            naive.to_str().unwrap(),
            "--fail-on-regression",
            "--visual",
            // Two kernels: compared only when asked to.
            "--force",
        ],
        &[],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains(
            "hgemm_tiled: duration -50.0 % (improved): the hottest line moved from hgemm.cu:24 (97.6 %"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("to hgemm.cu:48 (72.2 %, `acc += As[ty][i] * Bs[i][tx];`)"), "{stdout}");
    assert!(stdout.contains("L1/TEX throughput 81.8 % -> 89.2 %"), "{stdout}");
    assert!(stderr.contains("warning: different kernels or arguments"), "{stderr}");
    let c = json(&tiled.join("comparison/regression.json"));
    assert_eq!(c["regression"], false);
    assert_eq!(c["duration"]["verdict"], "improved");
    assert_eq!(c["duration"]["source"], "ncu gpu__time_duration.sum (one profiled launch)");
    let report = std::fs::read_to_string(tiled.join("comparison/regression_report.md")).unwrap();
    assert!(report.contains("| samples on hgemm.cu:24 | 97.6 % | 0.0 % |"), "{report}");
    // The picture: written whole, a PNG, twice the summary's width.
    let png = std::fs::read(tiled.join("comparison/comparison.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(
        u32::from_be_bytes(png[16..20].try_into().unwrap()),
        2 * cargo_kprof::report::visual::SUMMARY_WIDTH
    );
}

/// A profile compared with `--baseline auto`: the newest earlier profile of the same
/// kernel, arguments and GPU; the slowed variant regresses and `--fail-on-regression`
/// exits 10 after writing the reports.
#[test]
fn auto_baseline_finds_the_earlier_profile_and_a_regression_exits_10() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("profile");
    let (base, slow) =
        (recorded("check-runs/rerun", "hgemm_tiled"), recorded("check-runs/slow", "hgemm_tiled"));
    copy_dir(&recorded("check-runs/pair", "hgemm"), &root.join("hgemm_20261129_231810"));
    copy_dir(&base, &root.join(base.file_name().unwrap()));
    let current = root.join(slow.file_name().unwrap());
    copy_dir(&slow, &current);
    std::fs::remove_dir_all(current.join("comparison")).unwrap();

    let out = kprof(&["compare", current.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "without --fail-on-regression: {}", text(&out.stderr));
    let c = json(&current.join("comparison/regression.json"));
    assert_eq!(c["baseline"]["label"], format!("profile {}", base.file_name().unwrap().to_string_lossy()));
    assert_eq!(c["regression"], true);
    // Both sides were timed: the noise-aware rule decided, on the harness medians.
    assert_eq!(c["duration"]["source"], "harness timing (hot, median of 34 vs 10 samples)");
    assert!(
        c["duration"]["current_interval_ns"][0].as_f64().unwrap()
            > c["duration"]["baseline_interval_ns"][1].as_f64().unwrap()
    );

    let out = kprof(&["compare", current.to_str().unwrap(), "--fail-on-regression"], &[]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("duration +428.7 % (regressed)"), "{stdout}");
    assert!(stdout.contains("shared-memory bank conflicts 1.206e7 -> 1.712e10"), "{stdout}");
}

/// A different GPU, ncu version or clock control: refused unless forced, then warned.
#[test]
fn different_conditions_are_refused_unless_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("profile/a_20261129_000000"), tmp.path().join("profile/b_20261129_000001"));
    copy_dir(&recorded("check-runs/base", "hgemm_tiled"), &a);
    copy_dir(&recorded("check-runs/rerun", "hgemm_tiled"), &b);
    std::fs::remove_dir_all(b.join("comparison")).unwrap();
    // The scenario: the same profile, as if taken with locked clocks.
    let spec = b.join("profile-target.yaml");
    let text_spec =
        std::fs::read_to_string(&spec).unwrap().replace("clock_control: none", "clock_control: base");
    std::fs::write(&spec, text_spec).unwrap();
    let out = kprof(&["compare", b.to_str().unwrap(), "--baseline", a.to_str().unwrap()], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("help: clock control differs: `none` (baseline) vs `base` (current)"),
        "{stderr}"
    );
    assert!(stderr.contains("pass --force"), "{stderr}");
    assert!(!b.join("comparison").exists(), "a refused comparison writes nothing");
    let out = kprof(&["compare", b.to_str().unwrap(), "--baseline", a.to_str().unwrap(), "--force"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = std::fs::read_to_string(b.join("comparison/regression_report.md")).unwrap();
    assert!(report.contains("> **Warning:** clock control differs"), "{report}");
}

/// A saved baseline is plain files, and is never overwritten.
#[test]
fn save_baseline_keeps_summaries_and_refuses_to_overwrite() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("profile");
    let (a, b) = (root.join("hgemm_tiled_20261129_231718"), root.join("hgemm_tiled_20261129_231734"));
    copy_dir(&recorded("check-runs/base", "hgemm_tiled"), &a);
    copy_dir(&recorded("check-runs/rerun", "hgemm_tiled"), &b);
    let out = kprof(&["compare", b.to_str().unwrap(), "--save-baseline", "main"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let saved = root.join("baselines/main/hgemm_tiled");
    for f in [
        "profile-target.yaml",
        "details/metrics_summary.json",
        "details/timing.json",
        "details/source_hotspots.csv",
    ] {
        assert!(saved.join(f).is_file(), "{f}");
    }
    assert!(!saved.join("details/01_basic_raw.csv").exists());
    let before = std::fs::read(saved.join("details/metrics_summary.json")).unwrap();
    let out = kprof(&["compare", a.to_str().unwrap(), "--baseline", "auto", "--save-baseline", "main"], &[]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).contains("baselines are never overwritten"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(saved.join("details/metrics_summary.json")).unwrap(), before);
}

/// A bench standing in for the harness: writes the recorded result `$FAKE_TIMING` to
/// `$KPROF_RESULT`, as the harness does, and fails when asked to profile.
const STAND_IN_BENCH: &str = r#"fn main() {
    assert!(std::env::var_os("KPROF_PROFILE").is_none(), "a timing run has no profiling window");
    let result = std::env::var("KPROF_RESULT").expect("KPROF_RESULT");
    let recorded = std::env::var("FAKE_TIMING").expect("FAKE_TIMING");
    std::fs::copy(recorded, result).unwrap();
}
"#;

fn timing_workspace() -> Workspace {
    let ws = Workspace::with_harness(
        "[[package.metadata.kprof.kernels]]\nname = \"hgemm_tiled\"\nbench = \"copy\"\ncase = \"hgemm_tiled\"\n",
    );
    std::fs::write(ws.root().join("benches/copy.rs"), STAND_IN_BENCH).unwrap();
    ws
}

fn timing(name: &str) -> PathBuf {
    recordings().join("archive-runs/timing").join(name)
}

/// `check --timing-only ARGS` in `ws`, the stand-in bench writing the recorded `recorded`.
fn check_timing_only(ws: &Workspace, args: &[&str], recorded: &str, summary: &Path) -> Output {
    let mut cmd = crate::support::kprof_bin();
    cmd.args(["kprof", "check", "--timing-only"]).args(args).arg("--manifest-path").arg(ws.manifest());
    cmd.env("CARGO_TARGET_DIR", ws.root().join("target"))
        .env("FAKE_TIMING", timing(recorded))
        .env("GITHUB_STEP_SUMMARY", summary);
    cmd.env_remove("NCU").env("PATH", "/usr/bin:/bin:".to_string() + &std::env::var("PATH").unwrap());
    // The stand-in bench needs no GPU; the machine check is for real ones.
    cmd.env("KPROF_SKIP_GPU_CHECK", "1");
    cmd.output().unwrap()
}

/// `check` on a machine without a GPU stops before building, with exit 5 and what is
/// missing, as the profile command does: `--timing-only` needs no ncu, but the harness
/// times on the GPU.
#[test]
fn check_without_a_gpu_stops_before_building() {
    if cargo_kprof::ncu::preflight::probe_cuda_driver().is_ok() && Path::new("/dev/nvidiactl").exists() {
        eprintln!("skipped: check without a GPU: this machine has one");
        return;
    }
    let ws = timing_workspace();
    for args in [&["--timing-only", "--save-baseline", "main"][..], &["--save-baseline", "main"][..]] {
        let out = crate::support::kprof_bin()
            .args(["kprof", "check"])
            .args(args)
            .arg("--manifest-path")
            .arg(ws.manifest())
            .env("CARGO_TARGET_DIR", ws.root().join("target"))
            .env_remove("KPROF_SKIP_GPU_CHECK")
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{args:?}: {stderr}");
        assert!(stderr.contains("cannot profile on this machine") && stderr.contains("GPU"), "{stderr}");
        if args.contains(&"--timing-only") {
            assert!(!stderr.contains("  - ncu:"), "timing needs no ncu: {stderr}");
        }
        assert!(!ws.root().join("target/kprof").exists(), "{args:?} built before stopping");
        assert!(!ws.root().join("profile").exists(), "{args:?} wrote profile/");
    }
}

/// The gate on timings alone: an unchanged re-run passes, the slowed kernel fails with
/// exit 10 and is named, in text, in JSON and in the step summary.
#[test]
fn check_timing_only_passes_noise_and_fails_the_slowed_kernel() {
    let ws = timing_workspace();
    let summary = ws.root().join("step_summary.md");
    let run = |args: &[&str], recorded: &str| check_timing_only(&ws, args, recorded, &summary);
    // No baseline yet: refused before anything runs, with the way to save one.
    let out = run(&["--baseline", "main"], "hgemm_tiled_run1.json");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("save one first: `cargo kprof check --save-baseline main`"),
        "{}",
        text(&out.stderr)
    );
    assert!(ws.profiles().is_empty(), "nothing ran");

    let out = run(&["--save-baseline", "main"], "hgemm_tiled_run1.json");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(ws.root().join("profile/baselines/main/hgemm_tiled/details/timing.json").is_file());

    let out = run(&["--baseline", "main"], "hgemm_tiled_run2.json");
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout
            .contains("hgemm_tiled: duration -0.1 % (unchanged): within the tolerance of 2 % and the noise"),
        "{stdout}"
    );

    let out = run(&["--baseline", "main", "--message-format", "json"], "hgemm_tiled_slow.json");
    assert_eq!(out.status.code(), Some(10), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> =
        text(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("JSON lines only")).collect();
    assert_eq!(lines.last().unwrap()["regressions"], serde_json::json!(["hgemm_tiled"]));
    let comparison = lines.iter().find(|l| l["reason"] == "comparison").unwrap();
    assert_eq!(comparison["regression"], true);
    assert!(comparison["duration"]["delta_pct"].as_f64().unwrap() > 400.0);

    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.contains("## cargo kprof check: no regression"), "{md}");
    assert!(md.contains("## cargo kprof check: 1 regression(s) beyond 2 %"), "{md}");
    assert!(md.contains("| `hgemm_tiled` | 15.130 ms | 79.971 ms | +428.6 % | **regressed** |"), "{md}");
    // Every run kept its own profile directory; none was overwritten.
    let runs = ws
        .profiles()
        .iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("hgemm_tiled_"))
        .count();
    assert_eq!(runs, 3);
}

/// The hot median of the recorded harness result `recorded` (what `details/timing.json` holds).
fn recorded_hot_median(recorded: &str) -> f64 {
    let doc = json(&timing(recorded));
    let hot = doc["cases"].as_array().unwrap().iter().find(|c| c["mode"] == "hot").unwrap();
    hot["median_ns"].as_f64().unwrap()
}

/// `--bmf` and `--github-benchmark`: one benchmark per kernel with the median the gate
/// compared and its 95 % interval, written when the gate passes and when it fails (exit 10
/// kept); an existing file is refused before anything runs and left as it was.
#[test]
fn check_writes_bencher_and_github_benchmark_results_also_on_a_regression() {
    let ws = timing_workspace();
    let summary = ws.root().join("step_summary.md");
    let run = |args: &[&str], recorded: &str| check_timing_only(&ws, args, recorded, &summary);
    let out = run(&["--save-baseline", "main"], "hgemm_tiled_run1.json");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let (bmf, gh) = (ws.root().join("bmf.json"), ws.root().join("github-benchmark.json"));
    let with_files = |bmf: &Path, gh: &Path| -> Vec<String> {
        ["--baseline", "main", "--message-format", "json", "--bmf", bmf.to_str().unwrap()]
            .iter()
            .map(|s| s.to_string())
            .chain(["--github-benchmark".to_string(), gh.to_str().unwrap().to_string()])
            .collect()
    };
    let args = with_files(&bmf, &gh);
    let out = run(&args.iter().map(String::as_str).collect::<Vec<_>>(), "hgemm_tiled_run2.json");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let printed: serde_json::Value = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .find(|l: &serde_json::Value| l["reason"] == "comparison")
        .unwrap();
    let duration = &printed["duration"];
    let median = duration["current_ns"].as_f64().unwrap();
    assert_eq!(median, recorded_hot_median("hgemm_tiled_run2.json"));
    let b = json(&bmf);
    let names: Vec<&String> = b.as_object().unwrap().keys().collect();
    assert_eq!(names, ["demo::hgemm_tiled"], "{b}");
    let latency = &b["demo::hgemm_tiled"]["latency"];
    assert_eq!(latency["value"].as_f64().unwrap(), median);
    assert_eq!(latency["lower_value"], duration["current_interval_ns"][0]);
    assert_eq!(latency["upper_value"], duration["current_interval_ns"][1]);
    assert!(b["demo::hgemm_tiled"].get("ncu-duration").is_none(), "timing only: no profile, {b}");
    let g = json(&gh);
    let entries = g.as_array().unwrap();
    assert_eq!(entries.len(), 1, "{g}");
    assert_eq!(entries[0]["name"], "demo::hgemm_tiled");
    assert_eq!(entries[0]["unit"], "ns");
    assert_eq!(entries[0]["value"].as_f64().unwrap(), median);
    let (lo, hi) = (latency["lower_value"].as_f64().unwrap(), latency["upper_value"].as_f64().unwrap());
    assert_eq!(entries[0]["range"], format!("± {:.0}", (hi - lo) / 2.0));
    let extra = entries[0]["extra"].as_str().unwrap();
    assert!(extra.starts_with("unchanged: -0.1 % against baseline main"), "{extra}");

    // Taken files: refused before anything runs, and kept as they were.
    let runs_before = ws.profiles().len();
    let before = std::fs::read(&bmf).unwrap();
    let fresh = ws.root().join("fresh.json");
    let args = with_files(&bmf, &fresh);
    let out = run(&args.iter().map(String::as_str).collect::<Vec<_>>(), "hgemm_tiled_slow.json");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(12), "{stderr}");
    assert!(stderr.contains(&format!("--bmf {}: the file exists", bmf.display())), "{stderr}");
    assert!(stderr.contains("pick a new name or remove the file"), "{stderr}");
    assert_eq!(std::fs::read(&bmf).unwrap(), before);
    assert!(!fresh.exists());
    assert_eq!(ws.profiles().len(), runs_before, "nothing ran");

    // The slowed kernel: exit 10, and both files written.
    let (bmf, gh) = (ws.root().join("slow-bmf.json"), ws.root().join("slow-gh.json"));
    let args = with_files(&bmf, &gh);
    let out = run(&args.iter().map(String::as_str).collect::<Vec<_>>(), "hgemm_tiled_slow.json");
    assert_eq!(out.status.code(), Some(10), "{}", text(&out.stderr));
    let slow = recorded_hot_median("hgemm_tiled_slow.json");
    assert_eq!(json(&bmf)["demo::hgemm_tiled"]["latency"]["value"].as_f64().unwrap(), slow);
    let g = json(&gh);
    assert_eq!(g[0]["value"].as_f64().unwrap(), slow);
    let extra = g[0]["extra"].as_str().unwrap();
    assert!(extra.starts_with("regressed: +428.6 % against baseline main"), "{extra}");
}

/// A profile directory whose stored kernel filter is no regex (`profile-target.yaml`
/// edited by hand, or damaged) is refused where it is read back, naming the file and the
/// fix: the analysis never quietly takes every kernel, or none, in its place.
#[test]
fn a_damaged_stored_filter_is_refused_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("profile/hgemm_tiled_20261129_231718");
    copy_dir(&recorded("check-runs/base", "hgemm_tiled"), &dir);
    let spec = dir.join("profile-target.yaml");
    let text_spec = std::fs::read_to_string(&spec).unwrap();
    assert!(text_spec.contains("  filter: .*hgemm_tiled.*\n"), "{text_spec}");
    std::fs::write(&spec, text_spec.replace("  filter: .*hgemm_tiled.*\n", "  filter: hgemm_tiled(\n"))
        .unwrap();
    for args in [
        vec!["report", dir.to_str().unwrap()],
        vec!["compare", dir.to_str().unwrap(), "--baseline", dir.to_str().unwrap()],
    ] {
        let out = kprof(&args, &[]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {stderr}");
        assert!(stderr.contains(&spec.display().to_string()), "{args:?}: {stderr}");
        assert!(stderr.contains("`hgemm_tiled(` is not a valid regex"), "{args:?}: {stderr}");
        assert!(
            stderr.contains("help: write a valid regex as `filter` under `kernel` in profile-target.yaml"),
            "{args:?}: {stderr}"
        );
    }
}
