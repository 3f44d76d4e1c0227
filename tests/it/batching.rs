//! Batching replayed from the H200: the zoo's seven compute kernels (one bench program)
//! and the demo's two hgemm kernels, each profiled batched (fixtures/h200/batch-bench/,
//! see its README). The fake ncu replays the batched pages the H200 run wrote; the replay
//! must issue one ncu run per stage with the alternations the H200 run used, split each
//! kernel's rows exactly as the H200 run did (byte for byte), keep each `commands.sh`
//! replayable for its kernel alone, and reach the same verdicts. The seven kernels' source
//! page, recorded batched (fixtures/h200/batch-source/), is split by function.

use std::path::{Path, PathBuf};

use crate::support::{recordings, text, Workspace};

pub(crate) fn dirs(root: &Path, hidden: bool) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.file_name().unwrap().to_string_lossy().starts_with('.') == hidden)
        .collect();
    out.sort();
    out
}

pub(crate) fn yaml(path: &Path) -> serde_yaml::Value {
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The `--kernel-name` values of a commands.sh's ncu lines, in order.
pub(crate) fn filters(script: &str) -> Vec<String> {
    script
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(" --kernel-name "))
        .map(|l| {
            let rest = &l[l.find(" --kernel-name ").unwrap() + 15..];
            let word = if let Some(q) = rest.strip_prefix('\'') {
                &q[..q.find('\'').unwrap()]
            } else {
                rest.split(' ').next().unwrap()
            };
            word.to_string()
        })
        .collect()
}

pub(crate) fn verdict(profile: &Path) -> (String, String) {
    let v: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(profile.join("details/bottleneck_decision.json")).unwrap(),
    )
    .unwrap();
    let k = &v["kernels"][0];
    (k["classification"].to_string(), k["limiter"]["id"].to_string())
}

fn replay(bench: &str) {
    replay_with(bench, &[]);
}

/// A recorded batch of `bench` set up again on the test workspace's one harness program.
pub(crate) struct Setup {
    /// The recorded hidden `.batch_` folder.
    pub(crate) batch: PathBuf,
    /// The `--kernel-name` values of its ncu runs.
    pub(crate) recorded_filters: Vec<String>,
    /// The recorded profiles, in the order of the alternation.
    pub(crate) members: Vec<PathBuf>,
    /// Their kernels' names, in that order.
    pub(crate) names: Vec<String>,
    pub(crate) ws: Workspace,
    /// The fake ncu's record of its calls.
    pub(crate) argv: PathBuf,
    pub(crate) ncu: PathBuf,
}

fn setup(bench: &str) -> Setup {
    setup_at(&recordings().join("batch-bench").join(bench).join("batched"))
}

/// A recorded batch (the profiles and the hidden `.batch_` folder under `recorded`) set up
/// again on the test workspace's one harness program (the bench `copy` of package `demo`).
pub(crate) fn setup_at(recorded: &Path) -> Setup {
    let batch = dirs(recorded, true).pop().expect("the recorded .batch_ folder");
    let recorded_filters = filters(&std::fs::read_to_string(batch.join("commands.sh")).unwrap());
    // In the H200 run's order: the order of the alternation.
    let mut members = dirs(recorded, false);
    let at = |m: &PathBuf| {
        let spec = yaml(&m.join("profile-target.yaml"));
        let f = format!("(?:{})", spec["kernel"]["filter"].as_str().unwrap());
        recorded_filters[0].find(&f).unwrap_or_else(|| panic!("{f} in {}", recorded_filters[0]))
    };
    members.sort_by_key(at);
    assert!(members.len() >= 2, "{members:?}");
    // The same kernels, filters and cases, on the test workspace's one harness program.
    let mut toml = String::new();
    let mut names = Vec::new();
    for m in &members {
        let spec = yaml(&m.join("profile-target.yaml"));
        let k = &spec["kernel"];
        let (name, filter, case) =
            (k["name"].as_str().unwrap(), k["filter"].as_str().unwrap(), k["case"].as_str().unwrap());
        names.push(name.to_string());
        toml.push_str(&format!(
            "[[package.metadata.kprof.kernels]]\nname = \"{name}\"\nbench = \"copy\"\nruntime = \"harness\"\n\
             regex = '{filter}'\ncase = '{case}'\n\n"
        ));
    }
    let ws = Workspace::with_harness(&toml);
    let tools = ws.root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let ncu = crate::support::fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    Setup { batch, recorded_filters, members, names, ws, argv, ncu }
}

fn replay_with(bench: &str, extra: &[(&str, &str)]) -> Vec<Vec<String>> {
    let Setup { batch, recorded_filters, members, names, ws, argv, ncu } = setup(bench);
    let details = batch.join("details");
    let mut env = vec![
        ("NCU", ncu.to_str().unwrap()),
        ("KPROF_SKIP_GPU_CHECK", "1"),
        ("FAKE_NCU_ARGV", argv.to_str().unwrap()),
        ("FAKE_NCU_REPLAY", details.to_str().unwrap()),
    ];
    env.extend_from_slice(extra);
    let out = ws.kprof(&["--workspace", "--clock-control", "none"], &env);
    let stderr = text(&out.stderr);
    if !extra.is_empty() {
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(!stderr.contains("Batching"), "{stderr}");
        return crate::support::fake_ncu::calls(&argv)
            .into_iter()
            .filter(|a| a.iter().any(|x| x == "--log-file"))
            .collect();
    }
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains(&format!("Batching {} kernels of", members.len())), "{stderr}");

    // One ncu run per batched stage, with the H200 run's alternation of filters. `auto`
    // now adds the hot lines, one batched source run these recordings have no page for:
    // it fails, each kernel is told, and the batch goes on.
    let (source, calls): (Vec<Vec<String>>, Vec<Vec<String>>) = crate::support::fake_ncu::calls(&argv)
        .into_iter()
        .filter(|a| a.iter().any(|x| x == "--log-file"))
        .partition(|a| a.iter().any(|x| x.ends_with("07_source_raw.csv")));
    assert_eq!(source.len(), 1, "{source:?}");
    assert_eq!(stderr.matches("the source stage failed").count(), members.len(), "{stderr}");
    let got_filters: Vec<String> =
        calls.iter().map(|a| a[a.iter().position(|x| x == "--kernel-name").unwrap() + 1].clone()).collect();
    assert_eq!(got_filters, recorded_filters, "{calls:?}");

    let ours: Vec<PathBuf> = ws.profile_dirs();
    assert_eq!(ours.len(), members.len(), "{ours:?}");
    for (name, theirs) in names.iter().zip(&members) {
        let mine = ours
            .iter()
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("{name}_2")))
            .unwrap_or_else(|| panic!("{name}: {ours:?}"));
        // Each kernel's pages: its rows of the batched page, split as on the H200.
        for page in std::fs::read_dir(theirs.join("details")).unwrap() {
            let page = page.unwrap().path();
            let file = page.file_name().unwrap().to_string_lossy().into_owned();
            if file.ends_with("_raw.csv")
                && file.as_bytes()[0].is_ascii_digit()
                && file != "00_environment.txt"
            {
                assert_eq!(
                    std::fs::read_to_string(mine.join("details").join(&file)).unwrap(),
                    std::fs::read_to_string(&page).unwrap(),
                    "{name}: {file}"
                );
            }
        }
        assert_eq!(verdict(mine), verdict(theirs), "{name}");
        // commands.sh replays the kernel alone: its own filter on every stage line.
        let script = std::fs::read_to_string(mine.join("commands.sh")).unwrap();
        let own = filters(&script);
        assert!(!own.is_empty() && own.iter().all(|f| !f.contains(")|(")), "{name}: {own:?}");
        assert!(script.contains("ran batched with"), "{script}");
        let manifest = std::fs::read_to_string(mine.join("run_manifest.yaml")).unwrap();
        assert!(manifest.contains("batched with") && manifest.contains("status: ok"), "{manifest}");
    }
    // The batch folder is hidden: not a profile of the index.
    let index = std::fs::read_to_string(ws.root().join("profile/index.json")).unwrap();
    assert!(!index.contains(".batch_"), "{index}");
    calls
}

/// `KPROF_NO_BATCH=1` (as `--no-batch`) keeps one ncu run per kernel and stage, each with
/// its own filter.
#[test]
fn no_batch_runs_each_kernel_alone() {
    let calls = replay_with("hgemm", &[("KPROF_NO_BATCH", "1")]);
    let filters: Vec<&str> = calls
        .iter()
        .filter_map(|a| a.iter().position(|x| x == "--kernel-name").map(|i| a[i + 1].as_str()))
        .collect();
    assert!(filters.len() >= 2 && filters.iter().all(|f| !f.contains(")|(")), "{filters:?}");
    assert!(
        filters.contains(&"regex:.*hgemm.*") && filters.contains(&"regex:.*hgemm_tiled.*"),
        "{filters:?}"
    );
}

#[test]
fn seven_compute_kernels_of_one_program_share_each_stage() {
    let calls = replay_with("compute", &[]);
    assert_eq!(calls.len(), 2, "basic and one compute follow-up for all seven: {calls:?}");
}

/// `.*hgemm.*` also matches `hgemm_tiled`: the tiled kernel's rows go to the narrower
/// filter, as each kernel's own case would have launched them.
#[test]
fn overlapping_filters_split_to_the_narrowest() {
    replay("hgemm");
}

/// An A/B check adds the source stage to every kernel; it runs batched too: one ncu run
/// of the source page for the seven kernels (the H200's batched page, replayed), split by
/// function so that each profile's page holds its own blocks, every file of them.
#[test]
fn the_source_stage_runs_batched_and_splits_by_function() {
    let Setup { batch, recorded_filters, names, ws, argv, ncu, .. } = setup("compute");
    let replay = ws.root().join("replay");
    std::fs::create_dir_all(&replay).unwrap();
    std::fs::copy(batch.join("details/01_basic_raw.csv"), replay.join("01_basic_raw.csv")).unwrap();
    let source = recordings().join("batch-source/source_batched_compute.csv");
    std::fs::copy(&source, replay.join("07_source_raw.csv")).unwrap();
    let env = [
        ("NCU", ncu.to_str().unwrap()),
        ("KPROF_SKIP_GPU_CHECK", "1"),
        ("FAKE_NCU_ARGV", argv.to_str().unwrap()),
        ("FAKE_NCU_REPLAY", replay.to_str().unwrap()),
    ];
    let out = ws.kprof(&["--workspace", "--clock-control", "none", "--stages", "source,basic"], &env);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("Batching 7 kernels of") && !stderr.contains("runs on its own"), "{stderr}");

    // One run of the program for seven kernels: basic, writing the report the source page
    // is then imported from (after the page that names each kernel's function).
    let calls: Vec<Vec<String>> = crate::support::fake_ncu::calls(&argv)
        .into_iter()
        .filter(|a| a.iter().any(|x| x == "--log-file"))
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    let (basic_call, source_call) = (calls[0].join(" "), calls[1].join(" "));
    let alternation = &recorded_filters[0];
    for part in ["--section SourceCounters --export ", "/.batch_", "details/01_basic.ncu-rep", alternation] {
        assert!(basic_call.contains(part), "{part}: {basic_call}");
    }
    let report = &calls[0][calls[0].iter().position(|a| a == "--export").unwrap() + 1];
    assert!(source_call.starts_with(&format!("--import {report} ")), "{source_call}");
    for part in ["--page source", "--print-source cuda,sass"] {
        assert!(source_call.contains(part), "{part}: {source_call}");
    }
    let log = &calls[1][calls[1].iter().position(|a| a == "--log-file").unwrap() + 1];
    assert!(log.contains("/.batch_") && log.ends_with("details/07_source_raw.csv"), "{log}");
    let script = std::fs::read_to_string(ws.profiles()[0].join("commands.sh")).unwrap();
    assert!(script.contains("# Stage source (") && script.contains(alternation), "{script}");

    let ours: Vec<PathBuf> = ws.profile_dirs();
    assert_eq!(ours.len(), 7, "{ours:?}");
    for name in &names {
        let mine = ours
            .iter()
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("{name}_2")))
            .unwrap_or_else(|| panic!("{name}: {ours:?}"));
        let page = std::fs::read_to_string(mine.join("details/07_source_raw.csv")).unwrap();
        let functions: Vec<&str> = page.lines().filter(|l| l.starts_with("\"Function Name\"")).collect();
        let want = format!("\"Function Name\",\"{name}\"");
        assert_eq!(functions, vec![want.as_str(); if name == "hmma_loop" { 2 } else { 1 }], "{name}");
        assert!(page.starts_with("=="), "{name}: ncu's own lines first");
        let manifest = yaml(&mine.join("run_manifest.yaml"));
        let stages: Vec<(&str, &str)> = manifest["stages"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|s| (s["stage"].as_str().unwrap(), s["why"].as_str().unwrap()))
            .collect();
        assert_eq!(stages.iter().map(|s| s.0).collect::<Vec<_>>(), ["basic", "source"], "{name}");
        assert!(stages.iter().all(|s| s.1.contains("batched with 7")), "{name}: {stages:?}");
        let own = std::fs::read_to_string(mine.join("commands.sh")).unwrap();
        assert!(own.contains("# Stage source ran batched with 7 kernel(s)"), "{own}");
        // The hot lines come from its own blocks.
        let hot = std::fs::read_to_string(mine.join("details/source_hotspots.csv")).unwrap();
        assert!(hot.lines().count() > 1, "{name}: {hot}");
        assert!(hot.lines().skip(1).all(|l| l.contains(&format!(",{name},"))), "{name}: {hot}");
    }
}

/// A dry run shows what a real run starts: for the demo's two hgemm kernels of one
/// program, one batched basic command whose filter is the H200 run's alternation (and the
/// batched source page's import of its report), beside each kernel's own commands; under
/// JSON, as one `dry-run-batch` message.
#[test]
fn a_dry_run_shows_the_batched_commands_a_run_starts() {
    let Setup { recorded_filters, names, ws, ncu, .. } = setup("hgemm");
    let env = [("NCU", ncu.to_str().unwrap()), ("KPROF_SKIP_GPU_CHECK", "1")];
    let out = ws.kprof(&["--workspace", "--clock-control", "none", "--dry-run"], &env);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let batched = filters(&stdout).into_iter().filter(|f| f.contains(")|(")).collect::<Vec<_>>();
    // The stages known before the run: basic and `auto`'s hot lines, both batched: basic
    // under the alternation, writing the report the source page is imported from.
    assert_eq!(batched, [recorded_filters[0].clone()], "{stdout}");
    let import = stdout
        .lines()
        .find(|l| l.contains(" --import ") && l.contains("/.batch_"))
        .expect("the batched source page's import");
    assert!(import.contains("details/01_basic.ncu-rep --csv --page source"), "{import}");
    // No cost history yet: each estimate is unknown, and the dry run says why.
    assert!(
        stdout.contains(&format!("# Stage basic (batched: {}; cost unknown)", names.join(" + "))),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("# Stage source (batched: {}; cost unknown)", names.join(" + "))),
        "{stdout}"
    );
    assert!(
        stdout.contains("# Cost: total unknown; estimates unknown: no cost history of this program in "),
        "{stdout}"
    );
    assert!(stderr.contains("Batched: 2 kernels of"), "{stderr}");
    let out =
        ws.kprof(&["--workspace", "--clock-control", "none", "--dry-run", "--message-format", "json"], &env);
    let lines: Vec<serde_json::Value> =
        text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let batch: Vec<&serde_json::Value> = lines.iter().filter(|l| l["reason"] == "dry-run-batch").collect();
    assert_eq!(batch.len(), 1, "{lines:?}");
    assert_eq!(batch[0]["kernels"], serde_json::json!(names));
    assert_eq!(batch[0]["stages"][0]["stage"], "basic");
    assert_eq!(batch[0]["stages"][1]["stage"], "source");
    assert!(batch[0]["stages"][0]["command"].as_str().unwrap().contains(")|("), "{}", batch[0]);
    assert!(ws.profiles().iter().all(|p| !p.file_name().unwrap().to_string_lossy().starts_with(".batch")));
}
