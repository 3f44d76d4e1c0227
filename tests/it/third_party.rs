//! Replays of the H200 runs on third-party code and Python targets
//! (fixtures/h200/third-party/, see its README): cudarc's own examples launching their
//! kernel once (the window fitted after a miss, discovery, a set window kept, a hint
//! matching nothing, NVRTC without line info), a hint matching two kernels, the exact
//! form, and a Triton and a PyTorch command target.
//!
//! Each run is replayed from its recorded `run_manifest.yaml`: the K-th ncu call that
//! writes a page of a name gets the page the K-th recorded stage of that name wrote (the
//! fake ncu's `nth-K/`), so the replay must issue the same ncu options in the same order,
//! decide the same window, stages and reasons, end with the same exit code and reach the
//! same verdict as the H200 run did. These runs were recorded before `auto` collected the
//! hot lines: the replay's source stage finds no page, says so, and the run goes on; it
//! is left out of the comparison.

use std::path::{Path, PathBuf};

use crate::support::{recordings, shell_words, text, Workspace};

fn recorded_profile(run: &str) -> PathBuf {
    crate::support::only_dir(&recordings().join("third-party").join(run).join("profile"))
}

fn yaml(path: &Path) -> serde_yaml::Value {
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap()
}

/// ncu's options of one call, up to and including the log file's name (its folder and the
/// program differ between machines).
fn ncu_options(argv: &[String]) -> Vec<String> {
    let argv = crate::support::recorded_argv::without_later_additions(argv);
    let at = argv.iter().position(|a| a == "--log-file").expect("a --log-file");
    let mut out = argv[..at].to_vec();
    out.push(Path::new(&argv[at + 1]).file_name().unwrap().to_string_lossy().into_owned());
    out
}

struct Recorded {
    manifest: serde_yaml::Value,
    /// Each stage's ncu options, in order.
    calls: Vec<Vec<String>>,
    /// A replay folder: `call-N/<page name>` holds what the N-th stage wrote.
    replay: tempfile::TempDir,
    profile: PathBuf,
}

fn recorded(run: &str) -> Recorded {
    let profile = recorded_profile(run);
    let manifest = yaml(&profile.join("run_manifest.yaml"));
    let replay = tempfile::tempdir().unwrap();
    let mut calls: Vec<Vec<String>> = Vec::new();
    for stage in manifest["stages"].as_sequence().unwrap() {
        let words = shell_words(stage["command"].as_str().unwrap());
        let at = words.iter().position(|w| w.ends_with("/ncu")).expect("an ncu word");
        let argv = words[at + 1..].to_vec();
        let options = ncu_options(&argv);
        let page = options.last().unwrap().clone();
        let nth = calls.iter().filter(|c| c.last() == Some(&page)).count() + 1;
        let dir = replay.path().join(format!("nth-{nth}"));
        std::fs::create_dir_all(&dir).unwrap();
        let written = profile.join(stage["output"].as_str().unwrap());
        std::fs::copy(&written, dir.join(options.last().unwrap()))
            .unwrap_or_else(|e| panic!("{}: {e}", written.display()));
        calls.push(options);
    }
    Recorded { manifest, calls, replay, profile }
}

const MATMUL: &str = "";
const TRITON: &str = "[[package.metadata.kprof.kernels]]\nname = \"triton_softmax\"\n\
    command = [\"python3\", \"triton_softmax.py\"]\nruntime = \"python-triton\"\nregex = \"softmax_kernel\"\n";
const TORCH: &str = "[[package.metadata.kprof.kernels]]\nname = \"torch_layernorm\"\n\
    command = [\"python3\", \"torch_layernorm.py\"]\nruntime = \"command\"\nregex = \"layer_norm|LayerNorm\"\n";

/// Replays `run` on a workspace configured with `toml` (a harness package when `harness`),
/// profiling with `args`, and checks it decides what the H200 run decided.
fn replay(run: &str, harness: bool, toml: &str, args: &[&str]) -> (std::process::Output, PathBuf) {
    replay_with(run, harness, toml, args, None)
}

/// [`replay`], expecting `verdict` (class, limiter) instead of the recorded one: for a run
/// whose verdict the rules have changed since, for the reason the caller gives.
fn replay_with(
    run: &str,
    harness: bool,
    toml: &str,
    args: &[&str],
    verdict_now: Option<(&str, &str)>,
) -> (std::process::Output, PathBuf) {
    let rec = recorded(run);
    let ws = if harness { Workspace::with_harness(toml) } else { Workspace::new(toml) };
    let tools = ws.root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let ncu = crate::support::fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let mut all = vec!["--clock-control", "none"];
    all.extend_from_slice(args);
    let out = ws.kprof_replaying(&all, &ncu, &argv, rec.replay.path());
    let stderr = text(&out.stderr);
    let want_exit = rec.manifest["exit_code"].as_i64().unwrap();
    assert_eq!(out.status.code().map(i64::from), Some(want_exit), "{run}: {stderr}");
    // A run recorded with a source stage replays it; one recorded without (the old `auto`)
    // gets the hot lines' stage now, which finds no page and is left out.
    let is_source = |o: &Vec<String>| o.last().map(String::as_str) == Some("07_source_raw.csv");
    let recorded_source = rec.calls.iter().any(is_source);
    let paged: Vec<Vec<String>> = crate::support::fake_ncu::calls(&argv)
        .into_iter()
        .filter(|a| a.iter().any(|x| x == "--log-file"))
        .collect();
    // The recordings predate the source page's import from basic's report.
    let calls: Vec<Vec<String>> = crate::support::recorded_argv::as_before_import(&paged)
        .into_iter()
        .map(|a| ncu_options(&a))
        .filter(|o| recorded_source || !is_source(o))
        .collect();
    assert_eq!(calls, rec.calls, "{run}: the ncu calls differ from the H200 run's");
    let dir = ws.profiles().into_iter().next().expect("a profile directory");
    let ours = yaml(&dir.join("run_manifest.yaml"));
    assert_eq!(ours["window"], rec.manifest["window"], "{run}");
    let stages = |m: &serde_yaml::Value| -> Vec<(String, String, String)> {
        m["stages"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|s| {
                let field = |k: &str| s[k].as_str().unwrap_or_default().to_string();
                (field("stage"), field("why"), field("status"))
            })
            .filter(|(stage, _, _)| recorded_source || stage != "source")
            .collect()
    };
    assert_eq!(stages(&ours), stages(&rec.manifest), "{run}");
    let verdict = |d: &Path| -> Option<(String, String)> {
        let text = std::fs::read_to_string(d.join("details/bottleneck_decision.json")).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let k = &v["kernels"][0];
        Some((k["classification"].to_string(), k["limiter"]["id"].to_string()))
    };
    let want = match verdict_now {
        Some((class, limiter)) => Some((format!("\"{class}\""), format!("\"{limiter}\""))),
        None => verdict(&rec.profile),
    };
    assert_eq!(verdict(&dir), want, "{run}");
    std::mem::forget(ws);
    (out, dir)
}

/// cudarc's matmul launches its kernel once: the default window (skip 5, count 3) misses,
/// one census counts 1 launch, and basic runs again on it; the window is recorded.
#[test]
fn a_default_window_is_fitted_to_a_kernel_launched_once() {
    let (out, dir) = replay("matmul", false, MATMUL, &["--bench", "copy", "--kernel", "matmul"]);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("Window: the filter matched 1 launch in all"), "{stderr}");
    let manifest = std::fs::read_to_string(dir.join("run_manifest.yaml")).unwrap();
    assert!(manifest.contains("origin: fitted") && manifest.contains("launch_skip: 0"), "{manifest}");
    // The first page is kept aside, never read as a page of the profile.
    assert!(dir.join("details/01_basic_raw.superseded-1.log").is_file());
    let script = std::fs::read_to_string(dir.join("commands.sh")).unwrap();
    assert!(
        script.contains("# Launch window: --launch-skip 5 --launch-count 3 (kprof's default"),
        "{script}"
    );
    assert!(
        script.contains("# census: count every kernel") && script.contains("again, window fitted"),
        "{script}"
    );
    assert!(text(&out.stdout).contains("launch-overhead"), "{}", text(&out.stdout));
}

/// No hint: discovery counts from the first launch and fits the chosen kernel's window
/// before basic, so nothing misses.
#[test]
fn discovery_fits_the_window_of_the_kernel_it_chose() {
    let (out, _) = replay("matmul-discover", false, MATMUL, &["--bench", "copy"]);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("Census: profiling 1 kernel, 100 % of GPU time: matmul (100 %)"), "{stderr}");
}

/// A window set by hand is kept: exit 6 with the launch count and the flags that reach it.
#[test]
fn a_set_window_is_kept_and_the_miss_explained() {
    let (out, _) = replay(
        "matmul-skip5",
        false,
        MATMUL,
        &["--bench", "copy", "--kernel", "matmul", "--launch-skip", "5"],
    );
    let stderr = text(&out.stderr);
    assert!(stderr.contains("in the window --launch-skip 5 --launch-count 3"), "{stderr}");
    assert!(stderr.contains("matmul (1 launch, "), "{stderr}");
    assert!(stderr.contains("pass --launch-skip 0 --launch-count 1"), "{stderr}");
}

/// A hint that matches nothing: every kernel ncu saw, with its launches.
#[test]
fn a_hint_that_matches_nothing_lists_every_kernel_with_its_launches() {
    let (out, _) = replay("matmul-nothere", false, MATMUL, &["--bench", "copy", "--kernel", "nothere"]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("launches ncu saw (every launch, durations only), closest first: matmul (1 launch"),
        "{stderr}"
    );
    assert!(stderr.contains("`=NAME` for exactly that function"), "{stderr}");
}

/// NVRTC without line info: the source stage runs again as SASS only, and the report
/// ranks instructions and says how to get lines.
#[test]
fn a_kernel_without_line_info_gets_sass_hotspots_and_the_switch() {
    let (out, dir) = replay(
        "matmul-source",
        false,
        MATMUL,
        &["--bench", "copy", "--kernel", "matmul", "--stages", "basic,source"],
    );
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no line info in `matmul`"), "{stderr}");
    assert!(stderr.contains("--generate-line-info"), "{stderr}");
    let hotspots = std::fs::read_to_string(dir.join("details/source_hotspots.csv")).unwrap();
    let first = hotspots.lines().nth(1).unwrap();
    assert!(first.starts_with("sass,matmul") && first.contains("FFMA"), "{hotspots}");
    let report = std::fs::read_to_string(dir.join("final_report.md")).unwrap();
    assert!(report.contains("No line info: the hottest SASS instructions instead."), "{report}");
    assert!(report.contains("compile_ptx_with_opts"), "{report}");
}

/// `--kernel gemm` matches both of the demo's hgemm kernels: the census ranks them, the
/// costliest is profiled and named, and basic runs again for it alone.
#[test]
fn a_hint_matching_several_kernels_profiles_the_costliest_and_says_so() {
    let (out, dir) = replay("gemm-several", true, "", &["--bench", "copy", "--kernel", "gemm"]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("`gemm` matches 2 kernels: hgemm_naive (1 launch(es), 30.249 ms), hgemm_tiled"),
        "{stderr}"
    );
    assert!(stderr.contains("pass --kernel =hgemm_naive"), "{stderr}");
    let candidates: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("details/kernel_candidates.json")).unwrap())
            .unwrap();
    assert_eq!(candidates["chosen"], "hgemm_naive");
}

/// `=NAME` filters exactly that function.
#[test]
fn the_exact_form_names_one_function() {
    let (_, dir) = replay("hgemm_tiled-exact", true, "", &["--bench", "copy", "--kernel", "=hgemm_tiled"]);
    let script = std::fs::read_to_string(dir.join("commands.sh")).unwrap();
    assert!(script.contains("--kernel-name 'regex:(^|[ :])hgemm_tiled($|[<(])'"), "{script}");
    assert!(dir.file_name().unwrap().to_string_lossy().starts_with("hgemm_tiled_"), "{}", dir.display());
}

/// A Triton kernel under the python-triton window, and PyTorch's layer norm as a command.
#[test]
fn python_command_targets_replay_as_on_the_h200() {
    let (out, _) = replay("triton_softmax", false, TRITON, &["--kernel", "triton_softmax"]);
    assert!(
        text(&out.stdout).contains("softmax_kernel: memory-bound, dram-bandwidth (high"),
        "{}",
        text(&out.stdout)
    );
    // Recorded as `uncoalesced-global`: its scalar weight loads waste 75 % of their
    // sectors, but they hit L1 while DRAM runs at 76 %. The rules now refute that (see
    // examples/python/EXPECTED.md, "Findings"): the same ncu output is `dram-bandwidth`.
    let (out, _) = replay_with(
        "torch_layernorm",
        false,
        TORCH,
        &["--kernel", "torch_layernorm"],
        Some(("memory-bound", "dram-bandwidth")),
    );
    let stdout = text(&out.stdout);
    assert!(stdout.contains("vectorized_layer_norm_kernel<float, float, 0>"), "{stdout}");
    assert!(stdout.contains("memory-bound, dram-bandwidth (high"), "{stdout}");
}
