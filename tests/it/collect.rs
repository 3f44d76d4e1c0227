//! The staged collection end to end, with a fake `ncu` that replays real H200 recordings
//! of exactly these stage commands (fixtures/h200/demo-stages/) and records its argv.

use std::path::{Path, PathBuf};

use crate::support::recorded_argv::{normalised, recorded_ncu_argv};
use crate::support::{fixture_details, text, Workspace};

/// A kernel entry named `name` on the `copy` bench, run as a harness target.
fn harness_entry(name: &str) -> String {
    format!(
        "[[package.metadata.kprof.kernels]]\nname = \"{name}\"\nbench = \"copy\"\nruntime = \"harness\"\n"
    )
}

struct Run {
    out: std::process::Output,
    invocations: Vec<Vec<String>>,
    dir: Option<PathBuf>,
}

fn profile_with(ws: &Workspace, kernel: &str, replay: &Path) -> Run {
    let tools = ws.root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let ncu = crate::support::fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let out = ws.kprof_replaying(&["--kernel", kernel], &ncu, &argv, replay);
    let text = std::fs::read_to_string(&argv).unwrap_or_default();
    let all: Vec<Vec<String>> = text
        .split("---\n")
        .filter(|s| !s.is_empty())
        .map(|s| s.lines().map(String::from).collect())
        .collect();
    // `ncu --version` is asked once for details/00_environment.txt; the rest are stages.
    if !all.is_empty() {
        assert!(all.iter().any(|a| a == &["--version"]), "{all:?}");
    }
    let paged: Vec<Vec<String>> = all.into_iter().filter(|a| a.iter().any(|x| x == "--log-file")).collect();
    // The recordings predate the source page's import from basic's report.
    let invocations = crate::support::recorded_argv::as_before_import(&paged);
    Run { out, invocations, dir: ws.profiles().into_iter().next() }
}

fn arg_after(args: &[String], flag: &str) -> Option<String> {
    args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned()
}

/// `auto` on a DRAM-bound kernel: basic, the source stage (the hot lines), then exactly the
/// memory stage, chosen by the rules from basic's metrics; then the analysis and the
/// report, with hot lines; one line per stage on stderr.
#[test]
fn auto_runs_basic_then_the_follow_up_the_rules_choose() {
    let cases = [
        ("copy", "copy_20261129_213211", "memory", "limiter `dram-bandwidth`", "memory-bound"),
        ("fma", "fma_20261129_213211", "compute", "rule `compute-bound`", "compute-bound"),
        ("tiny", "tiny_20261129_213211", "occupancy", "limiter `too-little-parallelism`", "latency-bound"),
    ];
    for (kernel, fixture, follow_up, reason, verdict) in cases {
        let ws = Workspace::new(&harness_entry(kernel));
        let run = profile_with(&ws, kernel, &fixture_details(fixture));
        let stderr = text(&run.out.stderr);
        assert_eq!(run.out.status.code(), Some(0), "{fixture}: {stderr}");
        assert_eq!(run.invocations.len(), 3, "{fixture}: {:?}", run.invocations);
        let (basic, source, second) = (&run.invocations[0], &run.invocations[1], &run.invocations[2]);
        // The exact options: those kprof gave ncu on the H200 for the same kernel (its
        // recorded commands.sh), the log file's folder and the program aside. Those
        // recordings predate the source stage in `auto`; its options are those of a
        // recorded source stage (`archive-runs/pair`), the filter aside.
        let recorded = recorded_ncu_argv(
            &crate::support::only_dir(
                &crate::support::recordings()
                    .join(format!("archive-runs/cost/auto-{kernel}/workspace/profile")),
            )
            .join("commands.sh"),
        );
        let got: Vec<Vec<String>> = [basic, second].iter().map(|a| normalised(a)).collect();
        let want: Vec<Vec<String>> = recorded.iter().map(|a| normalised(a)).collect();
        assert_eq!(got, want, "{fixture}");
        let recorded_source = recorded_ncu_argv(
            &crate::support::recordings()
                .join("archive-runs/pair/workspace/profile/hgemm_20261129_230345/commands.sh"),
        )
        .into_iter()
        .find(|a| a.iter().any(|x| x.ends_with("07_source_raw.csv")))
        .expect("a recorded source stage");
        let options = |a: &[String]| -> Vec<String> {
            let end = a.iter().position(|x| x == "--log-file").unwrap();
            a[6..end].to_vec()
        };
        assert_eq!(options(source), options(&recorded_source), "{fixture}");
        assert!(arg_after(source, "--log-file").unwrap().ends_with("details/07_source_raw.csv"));
        let filter = format!("regex:.*{kernel}.*");
        assert_eq!(
            &basic[..6],
            ["--clock-control", "none", "--profile-from-start", "off", "--kernel-name", filter.as_str()]
        );
        assert!(arg_after(basic, "--log-file").unwrap().ends_with("details/01_basic_raw.csv"));
        assert!(arg_after(second, "--log-file").unwrap().contains("details/0"), "{second:?}");
        // One line per stage, the follow-up's rule in brief; no ncu command without -v.
        assert!(stderr.contains(&format!("Profiled `{kernel}`: basic, 10 pass(es) per launch")), "{stderr}");
        assert!(stderr.contains(&format!("Profiled `{kernel}`: source, ")), "{stderr}");
        assert!(stderr.contains(&format!("(auto follow-up: {reason}")), "{fixture}: {stderr}");
        assert!(!stderr.contains("--metrics") && !stderr.contains("Follow-up:"), "{stderr}");

        let dir = run.dir.unwrap();
        let manifest = std::fs::read_to_string(dir.join("run_manifest.yaml")).unwrap();
        assert!(manifest.contains("status: ok"), "{manifest}");
        assert!(manifest.contains(&format!("stage: {follow_up}")) && manifest.contains(reason), "{manifest}");
        assert!(manifest.contains("passes:\n  - 10") || manifest.contains("passes:\n    - 10"), "{manifest}");
        let script = std::fs::read_to_string(dir.join("commands.sh")).unwrap();
        assert!(script.contains("# Stage 2: source (auto: the hot lines)"), "{script}");
        assert!(script.contains(&format!("# Stage 3: {follow_up}, chosen: {reason}")), "{script}");
        let report = std::fs::read_to_string(dir.join("final_report.md")).unwrap();
        assert!(report.contains(&format!("**{verdict}**")), "{fixture}: {report}");
        assert!(report.contains("| % samples | file:line | source | top stalls |"), "{fixture}: {report}");
        assert!(dir.join("details/00_environment.txt").is_file());
        assert!(text(&run.out.stdout).contains(verdict), "{}", text(&run.out.stdout));
    }
}

/// Quiet by default, whole under -v: without it a line per stage and no ncu command line;
/// with it each stage's start and every command as it ran, the ncu ones in full.
#[test]
fn the_ncu_commands_show_under_verbose_only() {
    let ws = Workspace::new(&harness_entry("copy"));
    let tools = ws.root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let ncu = crate::support::fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let replay = fixture_details("copy_20261129_213211");
    let env = [
        ("NCU", ncu.to_str().unwrap()),
        ("KPROF_SKIP_GPU_CHECK", "1"),
        ("FAKE_NCU_ARGV", argv.to_str().unwrap()),
        ("FAKE_NCU_REPLAY", replay.to_str().unwrap()),
    ];
    let quiet = ws.kprof(&["--kernel", "copy"], &env);
    let stderr = text(&quiet.stderr);
    assert_eq!(quiet.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches("Profiled `copy`: ").count(), 3, "{stderr}");
    assert!(!stderr.contains("--metrics") && !stderr.contains("Profiling `copy`: stage"), "{stderr}");
    let verbose = ws.kprof(&["--kernel", "copy", "-v"], &env);
    let stderr = text(&verbose.stderr);
    assert_eq!(verbose.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("Profiling `copy`: stage basic (auto: always first)"), "{stderr}");
    assert!(stderr.contains("ran ") && stderr.contains("--metrics gpu__time_duration.sum,"), "{stderr}");
    assert!(stderr.contains("Follow-up: memory (limiter `dram-bandwidth`"), "{stderr}");
}

/// ncu exits 0 when the filter matches nothing: kprof stops with exit 6, names the filter
/// and the kernels ncu saw, and records the status.
#[test]
fn a_filter_that_matches_nothing_stops_with_the_kernels_ncu_saw() {
    let ws = Workspace::new(&harness_entry("copy"));
    let replay = ws.root().join("replay");
    std::fs::create_dir_all(&replay).unwrap();
    let recorded = crate::support::recordings().join("misc/no_match.log");
    std::fs::copy(recorded, replay.join("01_basic_raw.csv")).unwrap();
    let run = profile_with(&ws, "copy", &replay);
    let stderr = text(&run.out.stderr);
    assert_eq!(run.out.status.code(), Some(6), "{stderr}");
    assert!(stderr.contains("`regex:.*copy.*` matched no kernel"), "{stderr}");
    assert!(stderr.contains("kernels ncu saw, closest first: copy_kernel"), "{stderr}");
    // Then one census (every kernel, durations only) to count the launches; with no
    // recording of it the message falls back to ncu's list. No stage runs after it.
    assert_eq!(run.invocations.len(), 2, "{:?}", run.invocations);
    assert!(!run.invocations[1].iter().any(|a| a == "--kernel-name"), "{:?}", run.invocations[1]);
    let manifest = std::fs::read_to_string(run.dir.unwrap().join("run_manifest.yaml")).unwrap();
    assert!(manifest.contains("status: no-match"), "{manifest}");
}

/// No hint, `--top 1`: one durations-only pass over every kernel (the census), the
/// costliest is profiled, and the breakdown is kept in breakdown.json.
#[test]
fn without_a_hint_discovery_picks_the_costliest_kernel() {
    let ws = Workspace::new("");
    let replay = ws.root().join("replay");
    std::fs::create_dir_all(&replay).unwrap();
    let root = crate::support::recordings();
    std::fs::copy(root.join("misc/discovery_hgemm.csv"), replay.join("00_discovery_raw.csv")).unwrap();
    for f in ["01_basic_raw.csv", "03_memory_raw.csv", "07_source_raw.csv"] {
        std::fs::copy(fixture_details("hgemm_20261129_213211").join(f), replay.join(f)).unwrap();
    }
    let tools = ws.root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let ncu = crate::support::fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let out = ws.kprof_replaying(&["--bench", "copy", "--top", "1"], &ncu, &argv, &replay);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let calls: Vec<Vec<String>> = std::fs::read_to_string(&argv)
        .unwrap()
        .split("---\n")
        .filter(|s| !s.is_empty())
        .map(|s| s.lines().map(String::from).collect::<Vec<_>>())
        .filter(|a| a.iter().any(|x| x == "--log-file"))
        .collect();
    assert_eq!(calls.len(), 4, "{calls:?}");
    // Discovery: no kernel filter, durations only.
    assert!(!calls[0].iter().any(|a| a == "--kernel-name"), "{:?}", calls[0]);
    assert_eq!(arg_after(&calls[0], "--metrics").as_deref(), Some("gpu__time_duration.sum"));
    // Then the costliest kernel, hgemm_naive (2 x 30 ms against hgemm_tiled's 2 x 15 ms).
    // Exactly that function: `hgemm_naive_v2` would not match.
    assert_eq!(arg_after(&calls[1], "--kernel-name").as_deref(), Some("regex:(^|[ :])hgemm_naive($|[<(])"));
    assert!(arg_after(&calls[2], "--log-file").unwrap().ends_with("07_source_raw.csv"));
    assert!(arg_after(&calls[3], "--log-file").unwrap().ends_with("03_memory_raw.csv"));
    assert!(
        stderr.contains("Census: profiling 1 kernel, 67 % of GPU time: hgemm_naive (67 %) (--top 1)"),
        "{stderr}"
    );
    let profiles = ws.profiles();
    assert_eq!(profiles.len(), 1, "{profiles:?}");
    let breakdown: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(profiles[0].join("breakdown.json")).unwrap()).unwrap();
    assert_eq!(breakdown["chosen"], serde_json::json!(["hgemm_naive"]));
    assert_eq!(breakdown["kernels"][1]["function"], "hgemm_tiled");
    assert_eq!(breakdown["kernels"][0]["launches"], 2);
    assert!(!profiles[0].join("details/kernel_candidates.json").exists());
}

/// A fake ncu that marks that it started, then hangs like a stuck program.
fn hanging_ncu(dir: &Path) -> PathBuf {
    let path = dir.join("ncu");
    std::fs::write(
        &path,
        "#!/bin/sh\n[ \"$1\" = --version ] && exit 0\ntouch \"$FAKE_NCU_STARTED\"\nsleep 60\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path
}

#[test]
fn timeout_stops_the_stage_and_says_so() {
    let ws = Workspace::new(&harness_entry("copy"));
    let tools = ws.root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let ncu = hanging_ncu(&tools);
    let started = tools.join("started");
    let t0 = std::time::Instant::now();
    let out = ws.kprof(
        &["--kernel", "copy", "--timeout", "1"],
        &[
            ("NCU", ncu.to_str().unwrap()),
            ("KPROF_SKIP_GPU_CHECK", "1"),
            ("FAKE_NCU_STARTED", started.to_str().unwrap()),
        ],
    );
    assert_eq!(out.status.code(), Some(9), "{}", text(&out.stderr));
    assert!(started.exists());
    // The hanging program (sleep 60) was killed with its process group, not waited for.
    assert!(t0.elapsed() < std::time::Duration::from_secs(45), "{:?}", t0.elapsed());
    assert!(text(&out.stderr).contains("ran past --timeout"), "{}", text(&out.stderr));
    let manifest = std::fs::read_to_string(ws.profiles()[0].join("run_manifest.yaml")).unwrap();
    assert!(manifest.contains("status: timeout"), "{manifest}");
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_ncu_and_keeps_what_was_written() {
    let ws = Workspace::new(&harness_entry("copy"));
    let tools = ws.root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let ncu = hanging_ncu(&tools);
    let started = tools.join("started");
    let child = crate::support::kprof_bin()
        .args(["kprof", "--kernel", "copy", "--manifest-path"])
        .arg(ws.manifest())
        .env("CARGO_TARGET_DIR", ws.root().join("target"))
        .env("NCU", &ncu)
        .env("KPROF_SKIP_GPU_CHECK", "1")
        .env("FAKE_NCU_STARTED", &started)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the stage to be running (the build comes first), then press Ctrl-C.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !started.exists() {
        assert!(std::time::Instant::now() < deadline, "ncu never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: sends SIGINT to the child we spawned.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let dir = ws.profiles().into_iter().next().unwrap();
    let manifest = std::fs::read_to_string(dir.join("run_manifest.yaml")).unwrap();
    assert!(manifest.contains("status: interrupted"), "{manifest}");
    assert!(dir.join("commands.sh").is_file() && dir.join("profile-target.yaml").is_file());
}

/// Build here, profile there: the archive carries the executable and the plan, and
/// `run --archive` profiles from it with every path remapped, without cargo.
#[test]
fn archive_then_run_profiles_without_cargo() {
    let ws = Workspace::new(&harness_entry("copy"));
    let archive = ws.root().join("copy.tar");
    let out = ws.kprof(&["archive", "--kernel", "copy", "-o", archive.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let size = std::fs::metadata(&archive).unwrap().len();
    // An existing archive is never overwritten.
    let again = ws.kprof(&["archive", "--kernel", "copy", "-o", archive.to_str().unwrap()], &[]);
    assert_eq!(again.status.code(), Some(12));
    assert!(text(&again.stderr).contains("never overwritten"), "{}", text(&again.stderr));
    assert_eq!(std::fs::metadata(&archive).unwrap().len(), size);

    let there = tempfile::tempdir().unwrap();
    let remap = there.path().join("unpacked");
    let tools = there.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let ncu = crate::support::fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let out = crate::support::kprof_bin()
        .args(["kprof", "run", "--archive"])
        .arg(&archive)
        .arg("--workspace-remap")
        .arg(&remap)
        .env("NCU", &ncu)
        .env("KPROF_SKIP_GPU_CHECK", "1")
        .env("FAKE_NCU_ARGV", &argv)
        .env("FAKE_NCU_REPLAY", fixture_details("copy_20261129_213211"))
        .env("CARGO", "/nonexistent/cargo")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let calls = std::fs::read_to_string(&argv).unwrap();
    let remapped = remap.canonicalize().unwrap();
    let exe_line = calls.lines().find(|l| l.contains("/bin/copy-")).expect("the program argument");
    assert!(Path::new(exe_line).starts_with(&remapped), "{exe_line} not under {}", remapped.display());
    let profiles =
        std::fs::read_dir(remapped.join("workspace/profile")).unwrap().filter_map(|e| e.ok()).count();
    assert!(profiles >= 2, "a profile directory and ncu_path");
    assert!(text(&out.stdout).contains("copy_kernel: memory-bound"), "{}", text(&out.stdout));
    // Unpacking never goes into a non-empty directory.
    let again = crate::support::kprof_bin()
        .args(["kprof", "run", "--archive"])
        .arg(&archive)
        .arg("--workspace-remap")
        .arg(&remap)
        .output()
        .unwrap();
    assert_ne!(again.status.code(), Some(0));
    assert!(text(&again.stderr).contains("is not empty"), "{}", text(&again.stderr));
}

/// Another profiler held the GPU's counters (a second ncu on the same GPU with its own
/// TMPDIR, recorded on an H200): exit 13, said as such, with the fix, not "the program
/// failed".
#[test]
fn counters_held_by_another_profiler_are_named() {
    let ws = Workspace::new(&harness_entry("copy"));
    let replay = ws.root().join("replay");
    std::fs::create_dir_all(&replay).unwrap();
    std::fs::write(replay.join("01_basic_raw.csv"), crate::support::recording("multi-gpu/r1.csv")).unwrap();
    let run = profile_with(&ws, "copy", &replay);
    let stderr = text(&run.out.stderr);
    assert_eq!(run.out.status.code(), Some(13), "{stderr}");
    assert!(stderr.contains("another profiling session held this GPU's counters"), "{stderr}");
    assert!(stderr.contains("pick another GPU with CUDA_VISIBLE_DEVICES"), "{stderr}");
    assert_eq!(run.invocations.len(), 1, "no census or later stage after it");
    let manifest = std::fs::read_to_string(run.dir.unwrap().join("run_manifest.yaml")).unwrap();
    assert!(manifest.contains("status: ncu-failed"), "{manifest}");
}

/// #43: the ncu runs that start a harness kernel's bench share one folder of NVRTC output
/// (`KPROF_PTX_CACHE`), so that only the first start compiles: each is given the same
/// folder, which exists while it runs; the source page's import starts no program and gets
/// none; `commands.sh` never names the folder (it replays the same work without it), and
/// the folder is gone when the run ends.
#[test]
fn the_starts_of_a_harness_bench_share_a_ptx_cache_that_commands_sh_leaves_out() {
    let ws = Workspace::new(&harness_entry("copy"));
    let run = profile_with(&ws, "copy", &fixture_details("copy_20261129_213211"));
    let stderr = text(&run.out.stderr);
    assert_eq!(run.out.status.code(), Some(0), "{stderr}");
    let tools = ws.root().join("tools");
    let argv = std::fs::read_to_string(tools.join("argv.txt")).unwrap();
    let paged: Vec<&str> = argv.split("---\n").filter(|a| a.contains("--log-file\n")).collect();
    let env = std::fs::read_to_string(tools.join("argv.txt.env")).unwrap();
    let given: Vec<&str> = env.lines().collect();
    assert_eq!(given.len(), paged.len(), "{env}");
    let mut started = Vec::new();
    for (args, line) in paged.iter().zip(&given) {
        if args.starts_with("--import\n") {
            assert_eq!(*line, "KPROF_PTX_CACHE= absent", "an import starts no program: {args}");
        } else {
            started.push(*line);
        }
    }
    assert_eq!(started.len(), 2, "basic and the memory stage start the bench: {env}");
    let folder = ws.root().join("profile").join(".ptx-cache-");
    let first = started[0].strip_prefix("KPROF_PTX_CACHE=").and_then(|l| l.strip_suffix(" dir"));
    let first = first.unwrap_or_else(|| panic!("the first start got no existing folder: {env}"));
    assert!(first.starts_with(folder.to_str().unwrap()), "{first} is not in the profiles root");
    assert!(started.iter().all(|l| *l == started[0]), "one folder for every start: {env}");
    assert!(!Path::new(first).exists(), "{first} is left behind");
    let dir = run.dir.expect("a profile directory");
    let script = std::fs::read_to_string(dir.join("commands.sh")).unwrap();
    assert!(!script.contains("PTX_CACHE") && !script.contains(".ptx-cache"), "{script}");
}
