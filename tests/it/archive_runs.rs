//! `cargo kprof archive` here, `cargo-kprof kprof run --archive` there: replays of the real
//! runs of that flow on an H200 (fixtures/h200/archive-runs/, see its README) through a
//! fake ncu that copies each recorded CSV into place and records its argv.
//!
//! The recorded profile directories hold what kprof decided on the GPU machine (the
//! commands in commands.sh, the stages and their reasons in run_manifest.yaml); each test
//! checks that the replay decides exactly the same from the same ncu output.

use std::path::{Path, PathBuf};

use crate::support::recorded_argv::{normalised, recorded_ncu_argv};
use crate::support::Workspace;

fn recordings() -> PathBuf {
    crate::support::recordings().join("archive-runs")
}

/// The one profile directory of a recorded run (`cost/auto-copy`, `nomatch`, ...).
fn recorded_profile(run: &str) -> PathBuf {
    crate::support::only_dir(&recordings().join(run).join("workspace/profile"))
}

/// The calls that wrote a source page (`auto`'s hot lines, which these recordings, made
/// before `auto` collected them, do not have), and the others.
fn split_source_calls(calls: &[Vec<String>]) -> (usize, Vec<Vec<String>>) {
    let source = |a: &Vec<String>| a.iter().any(|x| x.ends_with("07_source_raw.csv"));
    (calls.iter().filter(|a| source(a)).count(), calls.iter().filter(|a| !source(a)).cloned().collect())
}

fn stages_of(manifest: &Path) -> Vec<(String, String)> {
    let doc: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
    doc["stages"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|s| (s["stage"].as_str().unwrap().to_string(), s["why"].as_str().unwrap().to_string()))
        .collect()
}

struct Replay {
    out: std::process::Output,
    calls: Vec<Vec<String>>,
    profile: Option<PathBuf>,
}

/// Archives `kernel` of a workspace configured with `entry`, then runs the archive in a
/// fresh directory with ncu replaying `replay` (a recorded `details/`).
fn archive_and_run(entry: &str, selection: &[&str], replay: &Path, console: Option<&Path>) -> Replay {
    let ws = Workspace::with_harness(entry);
    let archive = ws.root().join("k.tar");
    let mut args = vec!["archive"];
    args.extend_from_slice(selection);
    args.extend(["-o", archive.to_str().unwrap()]);
    let out = ws.kprof(&args, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));

    let there = tempfile::tempdir().unwrap();
    let remap = there.path().join("unpacked");
    let tools = there.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let ncu = crate::support::fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let mut cmd = crate::support::kprof_bin();
    cmd.args(["kprof", "run", "--archive"])
        .arg(&archive)
        .arg("--workspace-remap")
        .arg(&remap)
        .env("NCU", &ncu)
        .env("KPROF_SKIP_GPU_CHECK", "1")
        .env("FAKE_NCU_ARGV", &argv)
        .env("FAKE_NCU_REPLAY", replay)
        .env("CARGO", "/nonexistent/cargo");
    if let Some(console) = console {
        cmd.env("FAKE_NCU_CONSOLE", console);
    }
    let out = cmd.output().unwrap();
    let calls: Vec<Vec<String>> = std::fs::read_to_string(&argv)
        .unwrap_or_default()
        .split("---\n")
        .filter(|s| !s.is_empty())
        .map(|s| s.lines().map(String::from).collect::<Vec<_>>())
        .filter(|a| a.iter().any(|x| x == "--log-file"))
        .collect();
    // The recordings predate the source page's import from basic's report.
    let calls = crate::support::recorded_argv::as_before_import(&calls);
    let root = remap.join("workspace/profile");
    let profile =
        std::fs::read_dir(&root).ok().and_then(|rd| rd.map(|e| e.unwrap().path()).find(|p| p.is_dir()));
    // Keep the unpacked tree alive until the caller is done with the profile.
    std::mem::forget(there);
    Replay { out, calls, profile }
}

fn entry(name: &str, case: Option<&str>) -> String {
    let case = case.map(|c| format!("case = \"{c}\"\n")).unwrap_or_default();
    format!("[[package.metadata.kprof.kernels]]\nname = \"{name}\"\nbench = \"copy\"\n{case}")
}

/// Every demo kernel: the replay runs the same ncu commands as the H200 run, picks the same
/// follow-up for the same recorded reason, and reaches the same verdict.
#[test]
fn replays_choose_the_follow_ups_the_h200_runs_chose() {
    // (kernel, case, follow-up, what chose it, verdict)
    let kernels = [
        ("copy", None, "memory", "limiter `dram-bandwidth`", "memory-bound"),
        ("fma", None, "compute", "rule `compute-bound`", "compute-bound"),
        ("tiny", None, "occupancy", "limiter `too-little-parallelism`", "latency-bound"),
        ("hgemm", Some("hgemm_naive"), "memory", "limiter `l1-shared-bandwidth`", "memory-bound"),
        ("hgemm_tiled", Some("hgemm_tiled"), "memory", "limiter `l1-shared-bandwidth`", "memory-bound"),
        ("occupancy", None, "occupancy", "limiter `occupancy-shared-memory`", "occupancy-limited"),
        ("reduce", None, "memory", "rule `memory-bound`", "memory-bound"),
    ];
    for (kernel, case, follow_up, chooser, verdict) in kernels {
        let recorded = recorded_profile(&format!("cost/auto-{kernel}"));
        let run =
            archive_and_run(&entry(kernel, case), &["--kernel", kernel], &recorded.join("details"), None);
        let stderr = String::from_utf8_lossy(&run.out.stderr);
        assert_eq!(run.out.status.code(), Some(0), "{kernel}: {stderr}");

        // The exact ncu command lines, stage by stage.
        let expected: Vec<Vec<String>> =
            recorded_ncu_argv(&recorded.join("commands.sh")).iter().map(|a| normalised(a)).collect();
        // `auto` now asks for the hot lines too; these recordings have no source page, so
        // that stage fails, is said, and the run goes on.
        let (sources, calls) = split_source_calls(&run.calls);
        assert_eq!(sources, 1, "{kernel}: {:?}", run.calls);
        assert!(stderr.contains(&format!("warning: `{kernel}`: the source stage failed")), "{stderr}");
        let got: Vec<Vec<String>> = calls.iter().map(|a| normalised(a)).collect();
        assert_eq!(got, expected, "{kernel}");
        assert_eq!(got.len(), 2, "{kernel}: basic and one follow-up");

        // The same stages for the same reasons.
        let profile = run.profile.expect("a profile directory");
        let stages: Vec<(String, String)> = stages_of(&profile.join("run_manifest.yaml"))
            .into_iter()
            .filter(|(s, _)| s != "source")
            .collect();
        assert_eq!(stages, stages_of(&recorded.join("run_manifest.yaml")), "{kernel}");
        assert_eq!(stages[1].0, follow_up, "{kernel}");
        assert!(stderr.contains(&format!("(auto follow-up: {chooser}")), "{kernel}: {stderr}");
        let stdout = String::from_utf8_lossy(&run.out.stdout);
        assert!(
            stdout.contains(&format!(": {verdict}, ")) || stdout.contains(&format!(": {verdict} (")),
            "{kernel}: {stdout}"
        );
    }
}

/// A hint that matches nothing: exit 6, the filter named, and exactly the kernels ncu
/// listed; the program's own output (recorded with the run) is not taken for a kernel.
#[test]
fn a_hint_that_matches_nothing_lists_only_the_kernels_ncu_listed() {
    let recorded = recorded_profile("nomatch");
    let doc: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(recorded.join("run_manifest.yaml")).unwrap()).unwrap();
    // The console of the recorded stage, after ncu's list: the harness' own line.
    let log = doc["stages"][0]["log"].as_str().unwrap();
    let program_output: String =
        log.lines().filter(|l| l.starts_with("kprof: ")).collect::<Vec<_>>().join("\n");
    assert!(!program_output.is_empty(), "{log}");
    let console = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(console.path(), format!("{program_output}\n")).unwrap();

    let run = archive_and_run(
        &entry("copy", None),
        &["--bench", "copy", "--kernel", "nonexistent_kernel"],
        &recorded.join("details"),
        Some(console.path()),
    );
    let stderr = String::from_utf8_lossy(&run.out.stderr);
    assert_eq!(run.out.status.code(), Some(6), "{stderr}");
    assert!(stderr.contains("`regex:.*nonexistent_kernel.*` matched no kernel"), "{stderr}");
    let listed = stderr.lines().find(|l| l.contains("kernels ncu saw")).expect(&stderr);
    assert!(listed.ends_with("kernels ncu saw, closest first: copy_kernel"), "{listed}");
    assert!(stderr.contains("the launch window was the harness profiling range"), "{stderr}");
    // Then one census, to count the launches; this recording has none, so the message
    // falls back to ncu's list. No stage runs after it.
    assert_eq!(run.calls.len(), 2, "{:?}", run.calls);
    assert!(run.calls[1].iter().any(|a| a.ends_with("00_discovery_raw.csv")), "{:?}", run.calls[1]);
    assert!(!run.calls[1].iter().any(|a| a == "--kernel-name"), "a census counts every kernel");
    let manifest = std::fs::read_to_string(run.profile.unwrap().join("run_manifest.yaml")).unwrap();
    assert!(manifest.contains("status: no-match"), "{manifest}");
}

/// No hint, `--top 1`: the census, then the costliest kernel, ranked as on the H200
/// (whose run wrote the ranking as `kernel_candidates.json`, before the breakdown).
#[test]
fn without_a_hint_discovery_ranks_as_the_h200_run_did() {
    let recorded = recorded_profile("discover");
    let run = archive_and_run(
        "[[package.metadata.kprof.kernels]]\nname = \"other\"\nbench = \"fma\"\n",
        &["--bench", "copy", "--top", "1"],
        &recorded.join("details"),
        None,
    );
    let stderr = String::from_utf8_lossy(&run.out.stderr);
    assert_eq!(run.out.status.code(), Some(0), "{stderr}");
    // The recording filtered the chosen kernel by substring (`.*hgemm_naive.*`); kprof now
    // names it exactly, so `hgemm_naive_v2` could not be profiled in its place. Otherwise
    // the commands are the recorded ones.
    let exact = |argv: Vec<String>| -> Vec<String> {
        argv.into_iter()
            .map(
                |a| if a == "regex:.*hgemm_naive.*" { "regex:(^|[ :])hgemm_naive($|[<(])".into() } else { a },
            )
            .collect()
    };
    let expected: Vec<Vec<String>> =
        recorded_ncu_argv(&recorded.join("commands.sh")).iter().map(|a| exact(normalised(a))).collect();
    let (sources, calls) = split_source_calls(&run.calls);
    assert_eq!(sources, 1, "the hot lines, which the recording has not");
    let got: Vec<Vec<String>> = calls.iter().map(|a| normalised(a)).collect();
    assert_eq!(got, expected);
    let read = |p: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let profile = run.profile.unwrap();
    let (ours, theirs) =
        (read(&profile.join("breakdown.json")), read(&recorded.join("details/kernel_candidates.json")));
    assert_eq!(ours["chosen"], serde_json::json!(["hgemm_naive"]));
    assert_eq!(ours["chosen"][0], theirs["chosen"]);
    for (i, k) in theirs["candidates"].as_array().unwrap().iter().enumerate() {
        for (mine, recorded) in
            [("function", "function"), ("launches", "launches"), ("total_ns", "total_duration_ns")]
        {
            assert_eq!(ours["kernels"][i][mine], k[recorded], "{i} {mine}");
        }
    }
    assert!(
        stderr.contains("Census: profiling 1 kernel, 67 % of GPU time: hgemm_naive (67 %) (--top 1)"),
        "{stderr}"
    );
}

/// An archive run on a machine that cannot profile stops before unpacking (exit 5, what is
/// missing): the --workspace-remap folder is not made, so the same command works once the
/// machine is set up.
#[test]
fn an_archive_run_without_a_gpu_leaves_no_folder_in_the_way() {
    if cargo_kprof::ncu::preflight::probe_cuda_driver().is_ok() && Path::new("/dev/nvidiactl").exists() {
        eprintln!("skipped: an archive run without a GPU: this machine has one");
        return;
    }
    let ws = Workspace::with_harness(&entry("copy", None));
    let archive = ws.root().join("k.tar");
    let out = ws.kprof(&["archive", "--kernel", "copy", "-o", archive.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let remap = ws.root().join("there");
    let out = crate::support::kprof_bin()
        .args(["kprof", "run", "--archive"])
        .arg(&archive)
        .arg("--workspace-remap")
        .arg(&remap)
        .env_remove("NCU")
        .env_remove("KPROF_SKIP_GPU_CHECK")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("cannot profile on this machine"), "{stderr}");
    assert!(!remap.exists(), "{} was made", remap.display());
}
