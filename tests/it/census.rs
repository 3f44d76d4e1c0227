//! The census of a plain program profiled with no kernel named: one durations-only ncu
//! pass (the recorded `fixtures/h200/misc/discovery_hgemm.csv`: two launches each of
//! `hgemm_naive` and `hgemm_tiled`), its breakdown (`breakdown.json`, `breakdown.md`, the
//! console table, the index), the kernels picked from it (the default 80 % / at most 5,
//! `--top`, `--min-share`), each profiled in its own directory from the recorded demo
//! pages of that kernel, and the bounds passed to ncu (`--census-launches`,
//! `--nvtx-include`, `--profiler-range`).

use std::path::{Path, PathBuf};

use crate::support::fake_ncu::{calls, filter_key};
use crate::support::{fixture_details, recordings, text, Workspace};

/// The recorded durations of the census page, ns: `hgemm_naive`'s two launches, then
/// `hgemm_tiled`'s.
pub(crate) const NAIVE: [f64; 2] = [30_266_336.0, 30_223_168.0];
pub(crate) const TILED: [f64; 2] = [15_240_480.0, 15_178_912.0];
/// `hgemm_tiled`'s exact filter, as kprof writes it.
pub(crate) const TILED_FILTER: &str = "regex:(^|[ :])hgemm_tiled($|[<(])";

pub(crate) struct Census {
    pub ws: Workspace,
    pub out: std::process::Output,
    /// The ncu calls that wrote a page, in order.
    pub calls: Vec<Vec<String>>,
}

impl Census {
    pub fn stderr(&self) -> String {
        text(&self.out.stderr)
    }

    /// The profile directories, the census's (named after the program, `copy`) first.
    pub fn profiles(&self) -> Vec<PathBuf> {
        let mut dirs = self.ws.profiles();
        dirs.sort_by_key(|d| !d.file_name().unwrap().to_string_lossy().starts_with("copy_"));
        dirs
    }

    pub fn breakdown(&self) -> serde_json::Value {
        let path = self.profiles()[0].join("breakdown.json");
        serde_json::from_str(
            &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        )
        .unwrap()
    }
}

/// `cargo kprof --bench copy ARGS` on a plain program (no harness: kprof's default window
/// for CUDA programs) with the fake ncu replaying the census page, `hgemm_naive`'s
/// recorded stages for any other filter, and `hgemm_tiled`'s for its exact filter.
fn census(args: &[&str]) -> Census {
    census_replaying("misc/discovery_hgemm.csv", args)
}

/// [`census`] with the recording `page` (under `fixtures/h200/`) as the census page.
fn census_replaying(page: &str, args: &[&str]) -> Census {
    census_in(Workspace::new(""), page, args, &[])
}

/// [`census_replaying`] in the workspace `ws`, with `env` added to kprof's environment.
pub(crate) fn census_in(ws: Workspace, page: &str, args: &[&str], env: &[(&str, &str)]) -> Census {
    let mut all = vec!["--bench", "copy"];
    all.extend_from_slice(args);
    census_of(ws, page, env, |ws, vars| ws.kprof(&all, vars))
}

/// [`census_in`] with the command `run` starts (given the workspace and the variables):
/// `run --archive ...`, which takes no `--manifest-path`.
pub(crate) fn census_of(
    ws: Workspace,
    page: &str,
    env: &[(&str, &str)],
    run: impl FnOnce(&Workspace, &[(&str, &str)]) -> std::process::Output,
) -> Census {
    let replay = ws.root().join("replay");
    let tiled = replay.join("by-filter").join(filter_key(TILED_FILTER));
    std::fs::create_dir_all(&tiled).unwrap();
    std::fs::copy(recordings().join(page), replay.join("00_discovery_raw.csv")).unwrap();
    for (from, to) in [("hgemm_20261129_213211", &replay), ("hgemm_tiled_20261129_213211", &tiled)] {
        for e in std::fs::read_dir(fixture_details(from)).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
    let tools = ws.root().join("tools");
    let ncu = crate::support::fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let mut vars = vec![
        ("NCU", ncu.to_str().unwrap()),
        ("KPROF_SKIP_GPU_CHECK", "1"),
        ("FAKE_NCU_ARGV", argv.to_str().unwrap()),
        ("FAKE_NCU_REPLAY", replay.to_str().unwrap()),
    ];
    vars.extend_from_slice(env);
    let out = run(&ws, &vars);
    let paged: Vec<Vec<String>> =
        calls(&argv).into_iter().filter(|a| a.iter().any(|x| x == "--log-file")).collect();
    // Each source page is imported from its basic run's report: the launches of that run,
    // under its filter, window and ranges, which the mapping writes onto the import.
    let calls = crate::support::recorded_argv::as_before_import(&paged);
    Census { ws, out, calls }
}

/// The function of a demangled kernel name, as ncu's function base names it:
/// `void cutlass::Kernel2<cfg>(T1::Params)` is `Kernel2`, a plain C name itself.
fn function_of(kernel: &str) -> String {
    let mut depth = 0;
    let mut end = kernel.len();
    for (i, c) in kernel.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth == 0 => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let head = &kernel[..end];
    let head = head.find('<').map_or(head, |t| &head[..t]);
    let head = head.rsplit(' ').next().unwrap_or(head);
    head.rsplit("::").next().unwrap_or(head).to_string()
}

pub(crate) fn arg_after(args: &[String], flag: &str) -> Option<String> {
    args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned()
}

fn near(a: &serde_json::Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() <= 1e-9 * b.abs().max(1.0))
}

/// The default: `hgemm_naive` has 66.5 % of the time, short of 80 %, so both kernels are
/// profiled, each in its own directory; the breakdown's numbers are the recording's.
/// `--no-batch`: each kernel's stages run on their own, as the recordings replayed here
/// were made (the batched picks of a plain program: `a_plain_program_s_picks_...`).
#[test]
fn the_default_profiles_the_kernels_of_80_percent_each_in_its_own_directory() {
    let run = census(&["--no-batch"]);
    let stderr = run.stderr();
    assert_eq!(run.out.status.code(), Some(0), "{stderr}");

    // The breakdown, from the recorded durations and shapes.
    let b = run.breakdown();
    let (naive, tiled) = (NAIVE[0] + NAIVE[1], TILED[0] + TILED[1]);
    let total = naive + tiled;
    assert_eq!(b["launches"], 4);
    assert_eq!(b["capped"], false);
    assert!(near(&b["total_ns"], total), "{b}");
    let rows = b["kernels"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for (row, (function, sum, grid, block)) in rows.iter().zip([
        ("hgemm_naive", naive, "(256, 256, 1)", "(16, 16, 1)"),
        ("hgemm_tiled", tiled, "(128, 128, 1)", "(32, 32, 1)"),
    ]) {
        assert_eq!(row["function"], function);
        assert_eq!(row["kernel"], function);
        assert_eq!(row["launches"], 2);
        assert!(near(&row["total_ns"], sum), "{row}");
        assert!(near(&row["mean_ns"], sum / 2.0), "{row}");
        assert!(near(&row["share_pct"], 100.0 * sum / total), "{row}");
        assert_eq!(row["grid"], serde_json::json!([grid]));
        assert_eq!(row["block"], serde_json::json!([block]));
    }
    assert_eq!(b["chosen"], serde_json::json!(["hgemm_naive", "hgemm_tiled"]));
    assert_eq!(b["pick"], "the kernels making up 80 % of GPU time, at most 5");

    // The console: the table, then one line naming what was chosen and why.
    assert!(
        stderr.contains("Census of `copy`: 4 launches of 2 kernels, 90.909 ms of serialised GPU time"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "   66.5 %    60.490 ms    30.245 ms         2  (256, 256, 1)    (16, 16, 1)    hgemm_naive"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "Census: profiling 2 kernels, 100 % of GPU time: hgemm_naive (67 %), hgemm_tiled (33 %) \
             (the kernels making up 80 % of GPU time, at most 5)"
        ),
        "{stderr}"
    );

    // ncu: the census over every launch from the first, durations only; then each kernel
    // exactly, its window fitted to its 2 launches.
    let census = &run.calls[0];
    assert!(!census.iter().any(|a| a == "--kernel-name"), "{census:?}");
    assert_eq!(arg_after(census, "--metrics").as_deref(), Some("gpu__time_duration.sum"));
    assert_eq!(arg_after(census, "--launch-skip").as_deref(), Some("0"));
    assert_eq!(arg_after(census, "--launch-count").as_deref(), Some("1000"));
    assert!(!census.iter().any(|a| a == "--nvtx" || a == "--profile-from-start"), "{census:?}");
    let filters: Vec<Option<String>> = run.calls[1..].iter().map(|c| arg_after(c, "--kernel-name")).collect();
    let naive_filter = Some("regex:(^|[ :])hgemm_naive($|[<(])".to_string());
    let tiled_at =
        filters.iter().position(|f| f.as_deref() == Some(TILED_FILTER)).expect("hgemm_tiled profiled");
    assert!(filters[..tiled_at].iter().all(|f| *f == naive_filter), "{filters:?}");
    assert!(filters[tiled_at..].iter().all(|f| f.as_deref() == Some(TILED_FILTER)), "{filters:?}");
    for c in &run.calls[1..] {
        assert_eq!(arg_after(c, "--launch-skip").as_deref(), Some("0"), "{c:?}");
        assert_eq!(arg_after(c, "--launch-count").as_deref(), Some("2"), "{c:?}");
    }

    // The files: the census's directory has the breakdown, the other kernel its own.
    let profiles = run.profiles();
    assert_eq!(profiles.len(), 2, "{profiles:?}");
    assert!(profiles[1].file_name().unwrap().to_string_lossy().starts_with("hgemm_tiled_"), "{profiles:?}");
    assert!(!profiles[1].join("breakdown.json").exists());
    for p in &profiles {
        assert!(p.join("final_report.md").is_file(), "{}", p.display());
    }
    let md = std::fs::read_to_string(profiles[0].join("breakdown.md")).unwrap();
    assert!(
        md.contains(
            "| 1 | `hgemm_naive` | 2 | 60.490 ms | 30.245 ms | 66.5 % | (256, 256, 1) | (16, 16, 1) |"
        ),
        "{md}"
    );
    assert!(
        md.contains(
            "| 2 | `hgemm_tiled` | 2 | 30.419 ms | 15.210 ms | 33.5 % | (128, 128, 1) | (32, 32, 1) |"
        ),
        "{md}"
    );
    let png = std::fs::read(profiles[0].join("visual/census.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "visual/census.png is not a PNG");
    assert!(!profiles[1].join("visual/census.png").exists());
    let tiled_decision =
        std::fs::read_to_string(profiles[1].join("details/bottleneck_decision.json")).unwrap();
    assert!(tiled_decision.contains("\"hgemm_tiled\""), "{tiled_decision}");
    let index = std::fs::read_to_string(run.ws.root().join("profile/index.md")).unwrap();
    let name = profiles[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(index.contains("## Census"), "{index}");
    assert!(
        index.contains(&format!("- [{name}]({name}/breakdown.md): 2 kernels in 4 launches, 90.909 ms; profiled `hgemm_naive` (66.5 %), `hgemm_tiled` (33.5 %)")),
        "{index}"
    );
}

/// `--top 1`: only the costliest; `--min-share 50`: the same by share.
#[test]
fn top_and_min_share_pick_from_the_breakdown() {
    for (args, why) in [(&["--top", "1"][..], "--top 1"), (&["--min-share", "50"][..], "--min-share 50")] {
        let run = census(args);
        let stderr = run.stderr();
        assert_eq!(run.out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "Census: profiling 1 kernel, 67 % of GPU time: hgemm_naive (67 %) ({why})"
            )),
            "{stderr}"
        );
        assert_eq!(run.profiles().len(), 1, "{args:?}");
        assert_eq!(run.breakdown()["chosen"], serde_json::json!(["hgemm_naive"]));
        assert!(!run.calls.iter().any(|c| arg_after(c, "--kernel-name").as_deref() == Some(TILED_FILTER)));
    }
    // `--top 2` is both (each on its own, as the recordings were made).
    let run = census(&["--top", "2", "--no-batch"]);
    assert_eq!(run.out.status.code(), Some(0), "{}", run.stderr());
    assert_eq!(run.profiles().len(), 2);
}

/// A `--min-share` above every kernel's share: exit 6 naming the largest, the breakdown
/// written all the same, and no stage run.
#[test]
fn a_min_share_that_no_kernel_reaches_says_the_largest() {
    let run = census(&["--min-share", "70"]);
    let stderr = run.stderr();
    assert_eq!(run.out.status.code(), Some(6), "{stderr}");
    assert!(
        stderr.contains(
            "--min-share 70: no kernel has that share of GPU time; the largest is `hgemm_naive` with 66.5 %"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("lower --min-share"), "{stderr}");
    assert_eq!(run.calls.len(), 1, "{:?}", run.calls);
    assert_eq!(run.breakdown()["chosen"], serde_json::json!([]));
}

/// The bounds: the launch cap and the profiler and NVTX ranges reach the census, and the
/// ranges the stages of the kernels it picked; the breakdown says how it was bounded.
#[test]
fn the_launch_cap_and_ranges_reach_ncu() {
    let run = census(&[
        "--top",
        "1",
        "--census-launches",
        "200",
        "--profiler-range",
        "--nvtx-include",
        "forward/",
        "--nvtx-include",
        "decode@step/",
    ]);
    let stderr = run.stderr();
    assert_eq!(run.out.status.code(), Some(0), "{stderr}");
    let ranges: Vec<String> = [
        "--profile-from-start",
        "off",
        "--nvtx",
        "--nvtx-include",
        "forward/",
        "--nvtx-include",
        "decode@step/",
    ]
    .map(String::from)
    .to_vec();
    let census = &run.calls[0];
    assert_eq!(arg_after(census, "--launch-count").as_deref(), Some("200"));
    for c in &run.calls {
        assert!(c.windows(ranges.len()).any(|w| w == ranges.as_slice()), "{c:?}");
    }
    let bounds = "between cuProfilerStart and cuProfilerStop, inside NVTX range forward/ or decode@step/";
    assert_eq!(run.breakdown()["bounds"], bounds);
    assert!(stderr.contains(&format!("90.909 ms of serialised GPU time, {bounds}")), "{stderr}");
    let script = std::fs::read_to_string(run.profiles()[0].join("commands.sh")).unwrap();
    assert!(script.contains("--profile-from-start off --nvtx --nvtx-include forward/"), "{script}");
    assert!(
        script.contains(&format!(
            "# No kernel hint: the census profiles every launch from the first (durations only, up to 200 \
             launches, {bounds}) and\n# picks --top 1;"
        )),
        "{script}"
    );
}

/// Bad census options are refused before anything is built, each naming itself and the fix.
#[test]
fn bad_census_options_name_the_fix() {
    let ws = Workspace::new("");
    for (args, says, fix) in [
        (&["--top", "0"][..], "--top 0 picks no kernel", "pass --top 1 or more"),
        (&["--min-share", "0"][..], "--min-share 0 is not a share of the time", "above 0 and at most 100"),
        (
            &["--min-share", "150"][..],
            "--min-share 150 is not a share of the time",
            "above 0 and at most 100",
        ),
        (&["--census-launches", "0"][..], "--census-launches 0 would count no launch", "pass 1 or more"),
        (&["--nvtx-include", ""][..], "--nvtx-include `` names no range", "--nvtx-include forward/"),
        (
            &["--kernel", "copy", "--top", "2"][..],
            "--top picks kernels from the census, which runs only when no kernel is named",
            "drop --kernel",
        ),
    ] {
        let mut all = vec!["--bench", "copy", "--dry-run"];
        all.extend_from_slice(args);
        let out = ws.kprof(&all, &[]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says) && stderr.contains(fix), "{args:?}: {stderr}");
    }
    assert!(!Path::new(&ws.root().join("profile")).join("index.md").exists());
}

/// A bounded census that profiles nothing (ncu's recorded answer when no launch was
/// profiled, `misc/no_match.log`): exit 6 naming the range, and no stage after it.
#[test]
fn a_range_the_program_never_enters_is_named() {
    let run = census_replaying("misc/no_match.log", &["--nvtx-include", "forward/"]);
    let stderr = run.stderr();
    assert_eq!(run.out.status.code(), Some(6), "{stderr}");
    assert!(stderr.contains("the census profiled no kernel launch inside NVTX range forward/"), "{stderr}");
    assert!(stderr.contains("drop --nvtx-include/--profiler-range"), "{stderr}");
    assert_eq!(run.calls.len(), 1, "{:?}", run.calls);
}

/// Under `--message-format json` the census comes as two messages: `census-taken` (every
/// kernel with its numbers) and `kernel-discovered` (what was picked, and why).
#[test]
fn the_census_messages_in_json() {
    let run = census(&["--top", "1", "--message-format", "json"]);
    assert_eq!(run.out.status.code(), Some(0), "{}", run.stderr());
    let messages: Vec<serde_json::Value> =
        text(&run.out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let of = |reason: &str| {
        messages.iter().find(|m| m["reason"] == reason).unwrap_or_else(|| panic!("no {reason}"))
    };
    let taken = of("census-taken");
    assert_eq!(taken["kernel"], "copy");
    assert_eq!(taken["launches"], 4);
    assert_eq!(taken["bounds"], serde_json::Value::Null);
    assert_eq!(taken["kernels"][1]["function"], "hgemm_tiled");
    assert_eq!(taken["kernels"][1]["grid"], "(128, 128, 1)");
    assert!(near(&taken["kernels"][1]["total_ns"], TILED[0] + TILED[1]), "{taken}");
    let picked = of("kernel-discovered");
    assert_eq!(picked["chosen"], "hgemm_naive");
    assert_eq!(picked["why"], "--top 1");
    assert_eq!(picked["picked"][0]["function"], "hgemm_naive");
    let naive = NAIVE[0] + NAIVE[1];
    assert!(near(&picked["share_pct"], 100.0 * naive / (naive + TILED[0] + TILED[1])), "{picked}");
}

/// `--output-dir` names one profile directory and nothing is written beside it: the census
/// profiles its costliest kernel there and names the others in a warning.
#[test]
fn an_output_dir_keeps_the_census_to_its_one_directory() {
    let ws_out = tempfile::tempdir().unwrap();
    let dir = ws_out.path().join("mine");
    let run = census(&["--output-dir", dir.to_str().unwrap()]);
    let stderr = run.stderr();
    assert_eq!(run.out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("the census also picked hgemm_tiled, not profiled: --output-dir")
            && stderr.contains("--kernel =hgemm_tiled and another --output-dir"),
        "{stderr}"
    );
    assert!(dir.join("breakdown.json").is_file());
    let beside: Vec<_> = std::fs::read_dir(ws_out.path()).unwrap().collect();
    assert_eq!(beside.len(), 1, "{beside:?}");
    assert!(!run.calls.iter().any(|c| arg_after(c, "--kernel-name").as_deref() == Some(TILED_FILTER)));
}

/// The H200's census pages (fixtures/h200/census): the breakdown and the pick computed
/// again from each page are the ones the H200 run wrote.
#[test]
fn the_h200_census_pages_give_the_breakdowns_the_h200_run_wrote() {
    use cargo_kprof::model::census::Pick;
    for (run, pick, chosen) in [
        ("latency", Pick::Default, 5),
        ("heldout", Pick::Default, 5),
        ("top2", Pick::Top(2), 2),
        ("candle-block/census", Pick::Top(5), 5),
        ("burn-mlp/census", Pick::Top(5), 5),
        ("bounds/nvtx", Pick::Top(1), 1),
        ("bounds/range", Pick::Top(1), 1),
    ] {
        let dir = recordings().join("census").join(run);
        let text = crate::support::recording(&format!("census/{run}/00_discovery_raw.csv"));
        let page = cargo_kprof::ncu::parse::RawPage::parse(&text, run).unwrap();
        // As the census reads a page: each launch's kernel, its function, duration, grid
        // and block.
        let metric = "gpu__time_duration.sum";
        let launches = page.launches().map(|l| {
            let scale = match l.unit(metric).unwrap_or("") {
                "usecond" | "us" => 1e3,
                "msecond" | "ms" => 1e6,
                _ => 1.0,
            };
            cargo_kprof::model::census::CensusLaunch {
                kernel: l.kernel_name(),
                function: function_of(l.kernel_name()),
                duration_ns: l.number(metric).unwrap() * scale,
                grid: l.get("Grid Size"),
                block: l.get("Block Size"),
            }
        });
        let mut ours = cargo_kprof::model::census::Breakdown::from_launches(launches, false);
        ours.pick(pick).unwrap();
        let theirs: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("breakdown.json")).unwrap()).unwrap();
        let ours = serde_json::to_value(&ours).unwrap();
        assert_eq!(ours["launches"], theirs["launches"], "{run}");
        assert_eq!(ours["chosen"], theirs["chosen"], "{run}");
        assert_eq!(ours["chosen"].as_array().unwrap().len(), chosen, "{run}");
        let (a, b) = (ours["kernels"].as_array().unwrap(), theirs["kernels"].as_array().unwrap());
        assert_eq!(a.len(), b.len(), "{run}");
        for (x, y) in a.iter().zip(b) {
            for field in ["kernel", "function", "launches", "total_ns", "grid", "block"] {
                assert_eq!(x[field], y[field], "{run}: {field} of {x}");
            }
            assert!(near(&x["share_pct"], y["share_pct"].as_f64().unwrap()), "{run}: {x}");
        }
        assert!(near(&ours["total_ns"], theirs["total_ns"].as_f64().unwrap()), "{run}");
    }
    // The candle block's 12 steps: 525 launches; the NVTX range `step` and the profiler
    // range each hold the 10 steps after the warm-up, and the same launches.
    let launches = |run: &str| -> serde_json::Value {
        let b = crate::support::recording(&format!("census/{run}/breakdown.json"));
        serde_json::from_str::<serde_json::Value>(&b).unwrap()["launches"].clone()
    };
    assert_eq!(launches("candle-block/census"), 525);
    assert_eq!((launches("bounds/nvtx"), launches("bounds/range")), (420.into(), 420.into()));
}

/// The H200 census of the zoo's `latency` bench with no kernel named
/// (`fixtures/h200/census/batched/`), replayed with `--stages basic`: the first of the 5
/// picks is profiled in the census's folder, and the other 4, kernels of the same bench
/// without a case, share one basic run (the alternation of their exact functions, no
/// `KPROF_CASE`: the bench runs every case, as for the census). Three starts of the
/// program, where picks alone take five; each pick's profile holds its own row.
#[test]
fn a_harness_bench_s_picks_after_the_first_share_one_run_per_stage() {
    let ws = Workspace::with_harness("");
    let at = recordings().join("census/batched");
    let replay = ws.root().join("replay");
    for (n, from) in [(1, "census"), (2, "batch")] {
        std::fs::create_dir_all(replay.join(format!("nth-{n}"))).unwrap();
        std::fs::copy(
            at.join(from).join("01_basic_raw.csv"),
            replay.join(format!("nth-{n}/01_basic_raw.csv")),
        )
        .unwrap();
    }
    std::fs::copy(at.join("census/00_discovery_raw.csv"), replay.join("00_discovery_raw.csv")).unwrap();
    let tools = ws.root().join("tools");
    let ncu = crate::support::fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let out = ws.kprof_replaying(
        &["--bench", "copy", "--stages", "basic", "--clock-control", "none"],
        &ncu,
        &argv,
        &replay,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("Census: profiling 5 kernels, 83 % of GPU time: code_switch_64 (25 %)"),
        "{stderr}"
    );
    let picks = ["leader_warp_steps", "logistic_map", "fixed_blocks_fma", "fixed_blocks_fma__fix2"];
    assert!(stderr.contains("Batching 4 kernels of ") && stderr.contains(&picks.join(", ")), "{stderr}");
    let runs: Vec<Vec<String>> =
        calls(&argv).into_iter().filter(|a| a.iter().any(|x| x == "--log-file")).collect();
    assert_eq!(runs.len(), 3, "the census, the first pick, the other four together: {runs:?}");
    let filter = arg_after(&runs[2], "--kernel-name").unwrap();
    let recorded = std::fs::read_to_string(at.join("batch/commands.sh")).unwrap();
    assert!(recorded.contains(&format!("--kernel-name '{filter}'")), "the H200 run's filter: {filter}");
    let batch_script = std::fs::read_dir(ws.root().join("profile"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(".batch_"))
        .map(|p| std::fs::read_to_string(p.join("commands.sh")).unwrap())
        .expect("the batch's folder");
    assert!(!batch_script.contains("KPROF_CASE"), "every case runs, as for the census: {batch_script}");
    for pick in picks {
        let dir = ws
            .profiles()
            .into_iter()
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("{}_2", pick.replace("__", "_")))
            })
            .unwrap_or_else(|| panic!("{pick}: {:?}", ws.profiles()));
        let page = std::fs::read_to_string(dir.join("details/01_basic_raw.csv")).unwrap();
        let rows: Vec<&str> = page.lines().filter(|l| l.starts_with("\"") && l.contains(pick)).collect();
        assert_eq!(rows.len(), 1, "{pick}: its own row only\n{page}");
        assert!(
            !picks
                .iter()
                .filter(|p| **p != pick && !p.starts_with(pick))
                .any(|p| page.contains(&format!("\"{p}\""))),
            "{pick}: {page}"
        );
    }
}

/// The pages the fake ncu replays for the H200 run of a burn program's census
/// (`fixtures/h200/census/burn-mlp/`), written under `ws`: the census page changed by
/// `edit`, the batched basic and source pages as recorded. Returns the folder.
pub(crate) fn burn_mlp_replay(ws: &Workspace, edit: impl Fn(String) -> String) -> PathBuf {
    let replay = ws.root().join("replay");
    std::fs::create_dir_all(&replay).unwrap();
    for (from, page) in
        [("census", "00_discovery_raw.csv"), ("batch", "01_basic_raw.csv"), ("batch", "07_source_raw.csv")]
    {
        let text = crate::support::recording(&format!("census/burn-mlp/{from}/{page}"));
        let text = if from == "census" { edit(text) } else { text };
        std::fs::write(replay.join(page), text).unwrap();
    }
    replay
}

/// The H200 run of a burn program with no kernel named (`fixtures/h200/census/burn-mlp/`),
/// replayed with `--stages basic,source`: the census (355 launches of 12 CubeCL kernels)
/// picks 5, and the census' own folder profiles none of them at once: all 5 share one
/// basic run, whose `--kernel-id` is the H200 run's, and one import of its report for
/// the hot lines. Two program starts; each pick's page holds its own 3 launches, and its
/// hot lines are the H200 run's, each line once with the launches summed.
#[test]
fn a_plain_program_s_picks_all_share_one_run_per_stage() {
    let ws = Workspace::new("");
    let at = "census/burn-mlp";
    let replay = burn_mlp_replay(&ws, |page| page);
    let tools = ws.root().join("tools");
    let ncu = crate::support::fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let out = ws.kprof_replaying(
        &["--bench", "copy", "--top", "5", "--stages", "basic,source", "--clock-control", "none"],
        &ncu,
        &argv,
        &replay,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("Census of `copy`: 355 launches of 12 kernels"), "{stderr}");
    assert!(!stderr.contains("runs on its own"), "{stderr}");
    let picks = [
        "matmul_entry_lhs_f32_lhs_size_4_rhs_f32_rhs_size_4_acc_f32_acc_size_4",
        "reduce_kernel_in_f32_in_size_4_out_f32_out_size_1_acc_f32",
        "reduce_kernel_in_f32_in_size_1_out_f32_out_size_1_acc_f32",
        "kernel_binop_c_f32_n_4",
        "kernel_binop_c_f32_n_1",
    ];
    assert!(stderr.contains("Batching 5 kernels of ") && stderr.contains(&picks.join(", ")), "{stderr}");
    let runs: Vec<Vec<String>> =
        calls(&argv).into_iter().filter(|a| a.iter().any(|x| x == "--log-file")).collect();
    let starts = runs.iter().filter(|r| !r.iter().any(|a| a == "--import")).count();
    assert_eq!((runs.len(), starts), (3, 2), "the census, basic, the import: {runs:?}");
    // The batched run names the picks and their launches as the H200 run did, literally.
    let id = arg_after(&runs[1], "--kernel-id").expect("a kernel id");
    assert!(!runs[1].iter().any(|a| a == "--kernel-name"), "{:?}", runs[1]);
    assert_eq!(arg_after(&runs[1], "--launch-count").as_deref(), Some("15"));
    // The H200 run listed the invocations (`:6|7|8`); they are a range now, which profiles
    // the same launches (`fixtures/h200/kernel-id/`).
    let recorded = crate::support::recording(&format!("{at}/batch/commands.sh"));
    let listed = format!("{}:6|7|8", id.strip_suffix(":^([6-8])$").expect("the window as a range"));
    assert!(recorded.contains(&format!("--kernel-id '{listed}'")), "not the H200 run's kernel id: {id}");
    assert!(!listed["::regex:".len()..listed.len() - 6].contains(':'), "{id}");
    let profiles: Vec<PathBuf> = ws.profile_dirs();
    assert_eq!(profiles.len(), 5, "{profiles:?}");
    for pick in picks {
        let dir = profiles
            .iter()
            .find(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                name.starts_with(&format!("{pick}_2")) || (pick == picks[0] && name.starts_with("copy_"))
            })
            .unwrap_or_else(|| panic!("{pick}: {profiles:?}"));
        let page = std::fs::read_to_string(dir.join("details/01_basic_raw.csv")).unwrap();
        let rows = page.lines().filter(|l| l.starts_with("\"") && l.contains(&format!("\"{pick}\""))).count();
        let others = page.lines().filter(|l| l.starts_with("\"") && l.as_bytes()[1].is_ascii_digit()).count();
        assert_eq!((rows, others), (3, 3), "{pick}: its own 3 launches only");
        let ours = std::fs::read_to_string(dir.join("details/source_hotspots.csv")).unwrap();
        // The first pick was profiled in the census' folder, named after the program.
        let recorded = if pick == picks[0] { "burn-mlp" } else { pick };
        let theirs = crate::support::recording(&format!("{at}/picks/{recorded}.source_hotspots.csv"));
        let first = |t: &str| t.lines().take(6).map(str::to_string).collect::<Vec<_>>();
        assert_eq!(first(&ours), first(&theirs), "{pick}: the H200 run's hot lines");
    }
    // The census' folder holds the census and its first pick's stages.
    let census_dir = profiles.iter().find(|p| p.join("breakdown.json").is_file()).expect("the census");
    let manifest = std::fs::read_to_string(census_dir.join("run_manifest.yaml")).unwrap();
    for stage in ["stage: discovery", "stage: basic", "stage: source"] {
        assert!(manifest.contains(stage), "{stage}: {manifest}");
    }
    // CubeCL's kernels are compiled by NVRTC with no file name: the report says why those
    // lines have no text, and how to see the generated source.
    let report = std::fs::read_to_string(census_dir.join("final_report.md")).unwrap();
    assert!(report.contains("default_program:") && report.contains("CUBECL_DEBUG_LOG"), "{report}");
}
