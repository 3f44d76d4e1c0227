//! The planner replayed from the H200 (fixtures/h200/planner/, see its README): the zoo's
//! six `latency` kernels, whose follow-ups are compute (one kernel) and occupancy (five).
//! The H200 ran them three ways: one run per follow-up stage (`fixed`), the follow-ups
//! merged into one run (`fresh`), and basic merged with last time's follow-ups (`again`).
//! The fake ncu replays the merged pages; each kernel's pages must be cut from them with
//! the columns its stages' own runs printed, and reach the `fixed` run's verdicts.
//!
//! The planner prices its choices from the profiles root's cost history. These tests give
//! it the H200 run's own history lines of the latency program (its `cost_history.jsonl`),
//! with the program renamed to the test workspace's (`demo/bench/copy`).

use std::path::{Path, PathBuf};

use crate::batching::{dirs, filters, setup_at, verdict, Setup};
use crate::support::{fake_ncu, recordings, text};

fn recorded(way: &str) -> PathBuf {
    recordings().join("planner").join(way)
}

/// The H200's history lines of the latency program that `keep` accepts, as the test
/// workspace's program.
fn history(to: &Path, keep: impl Fn(&serde_json::Value) -> bool) -> PathBuf {
    history_edited(to, keep, |_| {})
}

/// [`history`], each kept line passed through `edit` (a test's changed past).
fn history_edited(
    to: &Path,
    keep: impl Fn(&serde_json::Value) -> bool,
    edit: impl Fn(&mut serde_json::Value),
) -> PathBuf {
    let text = std::fs::read_to_string(recordings().join("planner/cost_history.jsonl")).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut run: serde_json::Value = serde_json::from_str(line).unwrap();
        if run["program"] == "kprof-zoo/bench/latency" && keep(&run) {
            edit(&mut run);
            run["program"] = "demo/bench/copy".into();
            out.push_str(&format!("{run}\n"));
        }
    }
    assert!(!out.is_empty());
    let path = to.join("cost_history.jsonl");
    std::fs::write(&path, out).unwrap();
    path
}

/// The pages of the recorded batch `way` to replay (its source page is not kept: that
/// run finds no page, says so, and the batch goes on without hot lines).
fn replay(
    way: &str,
    history_lines: impl Fn(&serde_json::Value) -> bool,
) -> (Setup, std::process::Output, PathBuf) {
    replay_edited(way, history_lines, |_| {})
}

/// [`replay`] with the history lines passed through `edit`.
fn replay_edited(
    way: &str,
    history_lines: impl Fn(&serde_json::Value) -> bool,
    edit: impl Fn(&mut serde_json::Value),
) -> (Setup, std::process::Output, PathBuf) {
    let setup = setup_at(&recorded(way));
    let tools = setup.ws.root().join("tools");
    let hist = history_edited(&tools, history_lines, edit);
    let details = setup.batch.join("details");
    let env = [
        ("NCU", setup.ncu.to_str().unwrap()),
        ("KPROF_SKIP_GPU_CHECK", "1"),
        ("FAKE_NCU_ARGV", setup.argv.to_str().unwrap()),
        ("FAKE_NCU_REPLAY", details.to_str().unwrap()),
        ("KPROF_PLAN", "auto"),
        ("KPROF_COST_HISTORY", hist.to_str().unwrap()),
    ];
    let out = setup.ws.kprof(&["--workspace", "--clock-control", "none"], &env);
    (setup, out, hist)
}

/// The columns of a raw page's header.
fn columns(page: &Path) -> std::collections::BTreeSet<String> {
    let text = std::fs::read_to_string(page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    let header = text.lines().find(|l| l.starts_with("\"ID\",")).unwrap();
    header.trim_matches('"').split("\",\"").map(String::from).collect()
}

/// Each replayed kernel's stage pages have the columns of the `fixed` run's own pages,
/// and its verdict is the `fixed` run's.
fn same_pages_and_verdicts(setup: &Setup, stages: &[&str]) {
    let fixed = dirs(&recorded("fixed"), false);
    for name in &setup.names {
        let ours = setup.ws.profiles().into_iter().find(|p| {
            let f = p.file_name().unwrap().to_string_lossy().into_owned();
            f.starts_with(&format!("{name}_2"))
        });
        let ours = ours.unwrap_or_else(|| panic!("{name}: no profile"));
        let theirs =
            fixed.iter().find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("{name}_2")));
        let theirs = theirs.unwrap();
        let mut compared = 0;
        for page in std::fs::read_dir(theirs.join("details")).unwrap() {
            let page = page.unwrap().path();
            let file = page.file_name().unwrap().to_string_lossy().into_owned();
            if file.ends_with("_raw.csv") && stages.iter().any(|s| file.contains(s)) {
                assert_eq!(columns(&ours.join("details").join(&file)), columns(&page), "{name}: {file}");
                compared += 1;
            }
        }
        assert!(compared >= 1, "{name}: no page compared");
        assert_eq!(verdict(&ours), verdict(theirs), "{name}");
    }
}

/// The ncu runs the fake was asked for (those that write a page), by page name.
fn pages_asked(argv: &Path) -> Vec<String> {
    fake_ncu::calls(argv)
        .into_iter()
        .filter_map(|a| {
            let at = a.iter().position(|x| x == "--log-file")?;
            Some(Path::new(&a[at + 1]).file_name().unwrap().to_string_lossy().into_owned())
        })
        .collect()
}

/// Asserts that the replay ended well after the merged first run and the source page
/// only (no follow-up run after them); its stderr.
fn only_the_merged_first_run_and_the_source_page(setup: &Setup, out: &std::process::Output) -> String {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        pages_asked(&setup.argv),
        ["10_merged_basic+compute+occupancy_raw.csv", "07_source_raw.csv"],
        "{stderr}"
    );
    stderr
}

/// Without a history of the kernels' follow-ups, basic runs first; its metrics choose
/// compute for one kernel and occupancy for five, and with the start the history measured
/// (1.8 s) one merged run of 12 passes beats two runs: one follow-up run, as on the H200.
#[test]
fn follow_ups_of_several_stages_share_one_run_when_it_costs_less() {
    let (setup, out, _) =
        replay("fresh", |run| run["first"] == false && run["stages"] == "compute+occupancy");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        pages_asked(&setup.argv),
        ["01_basic_raw.csv", "07_source_raw.csv", "10_merged_compute+occupancy_raw.csv"],
        "{stderr}"
    );
    assert!(
        stderr.contains("one follow-up run (compute+occupancy) for 6 kernels,")
            && stderr.contains("for one run per stage: 1 program start(s) fewer"),
        "{stderr}"
    );
    // The merged command is the H200's: the same union of metrics, the same filter.
    let recorded_script = std::fs::read_to_string(setup.batch.join("commands.sh")).unwrap();
    let calls = fake_ncu::calls(&setup.argv);
    let merged =
        calls.iter().find(|a| a.iter().any(|x| x.ends_with("10_merged_compute+occupancy_raw.csv"))).unwrap();
    let metrics = &merged[merged.iter().position(|x| x == "--metrics").unwrap() + 1];
    let added = fake_ncu::ADDED_SINCE_THE_PLANNER_RECORDINGS;
    let metrics = metrics.split(',').filter(|m| !added.contains(m)).collect::<Vec<_>>().join(",");
    assert!(recorded_script.contains(&format!("--metrics {metrics} ")), "{metrics}");
    assert_eq!(
        filters(&recorded_script)[2],
        merged[merged.iter().position(|x| x == "--kernel-name").unwrap() + 1]
    );
    same_pages_and_verdicts(&setup, &["04_compute", "05_occupancy"]);
    let manifest = std::fs::read_to_string(
        setup
            .ws
            .profiles()
            .iter()
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("leader_warp_steps_2"))
            .unwrap()
            .join("run_manifest.yaml"),
    )
    .unwrap();
    assert!(
        manifest.contains("plan:\n  choice: 'one follow-up run (compute+occupancy) for 6 kernels"),
        "{manifest}"
    );
    assert!(
        manifest.contains("one merged run (compute+occupancy), this page cut from it by column"),
        "{manifest}"
    );
}

/// With the history of the H200's first run (each kernel's follow-up, and the start it
/// measured), basic and both follow-ups share the first run: two ncu runs in all, and
/// each kernel gets its basic and follow-up pages cut from it.
#[test]
fn with_history_basic_and_last_time_s_follow_ups_share_the_first_run() {
    let (setup, out, hist) =
        replay("again", |run| run["stages"] == "basic" || run["stages"] == "compute+occupancy");
    let stderr = only_the_merged_first_run_and_the_source_page(&setup, &out);
    assert!(
        stderr.contains("basic and last time's follow-ups in one run (basic+compute+occupancy)"),
        "{stderr}"
    );
    // #43: the merged first run also collects the source section and exports its report,
    // and the source page is imported from it: no program start of its own.
    let calls = fake_ncu::calls(&setup.argv);
    let after =
        |call: &[String], flag: &str| call.iter().position(|x| x == flag).map(|i| call[i + 1].clone());
    let merged =
        calls.iter().find(|a| a.iter().any(|x| x.ends_with("10_merged_basic+compute+occupancy_raw.csv")));
    let merged = merged.unwrap();
    assert!(merged.windows(2).any(|w| w[0] == "--section" && w[1] == "SourceCounters"), "{merged:?}");
    let report = after(merged, "--export").expect("the merged run exports its report");
    assert!(report.ends_with("01_basic.ncu-rep"), "{report}");
    let source = calls.iter().find(|a| a.iter().any(|x| x.ends_with("07_source_raw.csv"))).unwrap();
    assert_eq!(after(source, "--import").as_deref(), Some(report.as_str()), "{source:?}");
    same_pages_and_verdicts(&setup, &["01_basic", "04_compute", "05_occupancy"]);
    // The run is remembered: one more line, the merged first run with each follow-up.
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&hist).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let last = lines.last().unwrap();
    assert_eq!(last["stages"], "basic+compute+occupancy", "{last}");
    assert_eq!(last["first"], true);
    assert_eq!(last["kernels"].as_array().unwrap().len(), 6);
    assert_eq!(last["kernels"][0]["passes"], 17, "{last}");
}

/// #43: a kernel whose follow-up is not last time's, where the merged first run collected
/// it for another kernel, gets that page cut from the same run: no run after it. The
/// history says `atomic_bins` chose compute and `leader_warp_steps` occupancy (the other
/// way round from the H200's run), so the first run is the same basic+compute+occupancy,
/// and each kernel's metrics choose the other's stage.
#[test]
fn a_changed_follow_up_the_merged_run_collected_is_cut_from_it() {
    let swap = |run: &mut serde_json::Value| {
        for k in run["kernels"].as_array_mut().unwrap() {
            let swapped = match (k["kernel"].as_str(), k["follow_up"].as_str()) {
                (Some("atomic_bins"), Some(_)) => "compute",
                (Some("leader_warp_steps"), Some(_)) => "occupancy",
                _ => continue,
            };
            k["follow_up"] = swapped.into();
        }
    };
    let (setup, out, _) =
        replay_edited("again", |run| run["stages"] == "basic" || run["stages"] == "compute+occupancy", swap);
    only_the_merged_first_run_and_the_source_page(&setup, &out);
    same_pages_and_verdicts(&setup, &["01_basic", "04_compute", "05_occupancy"]);
    for (name, page) in [("atomic_bins", "05_occupancy"), ("leader_warp_steps", "04_compute")] {
        let dir = setup
            .ws
            .profiles()
            .into_iter()
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("{name}_2")));
        let manifest = std::fs::read_to_string(dir.unwrap().join("run_manifest.yaml")).unwrap();
        assert!(manifest.contains(&format!("details/{page}")), "{name}: {manifest}");
    }
}

/// The dry run with that history shows the merged first run with its estimate, and the
/// total; without history it says the estimates are unknown and why.
#[test]
fn the_dry_run_shows_the_planned_runs_and_their_cost() {
    let setup = setup_at(&recorded("again"));
    let tools = setup.ws.root().join("tools");
    let hist = history(&tools, |run| run["stages"] == "basic" || run["stages"] == "compute+occupancy");
    let run_as = |hist: &str, plan: &str| {
        let env = [("NCU", setup.ncu.to_str().unwrap()), ("KPROF_PLAN", plan), ("KPROF_COST_HISTORY", hist)];
        setup.ws.kprof(&["--workspace", "--clock-control", "none", "--dry-run"], &env)
    };
    let run = |hist: &str| run_as(hist, "auto");
    let out = run(hist.to_str().unwrap());
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stage = stdout.lines().find(|l| l.starts_with("# Stage basic+compute+occupancy (batched: ")).unwrap();
    assert!(stage.ends_with(" s)") && stage.contains("; about "), "{stage}");
    let next = stdout.lines().find(|l| l.starts_with("# then only a follow-up")).unwrap();
    assert!(next.contains("this run did not collect"), "{next}");
    let cost = stdout.lines().find(|l| l.starts_with("# Cost: about ")).unwrap();
    assert!(cost.contains("basic and last time's follow-ups in one run"), "{cost}");
    assert!(stdout.contains("--metrics gpu__time_duration.sum,"), "{stdout}");
    // #43: without history, basic and every likely follow-up share the first run, priced
    // with the H200's terms; the source page is imported from its report.
    let none = tools.join("absent.jsonl");
    let out = run(none.to_str().unwrap());
    let stdout = text(&out.stdout);
    let stage =
        stdout.lines().find(|l| l.starts_with("# Stage basic+memory+compute+occupancy (batched: ")).unwrap();
    assert!(stage.ends_with(" s)") && stage.contains("; about "), "{stage}");
    let cost = stdout.lines().find(|l| l.starts_with("# Cost: about ")).unwrap();
    assert!(
        cost.contains(
            "basic and every likely follow-up in one run (basic+memory+compute+occupancy, 17 passes)"
        ) && cost.contains("measured on an H200; no run of this program to fit them on yet"),
        "{cost}"
    );
    assert!(
        stdout.contains("--section SourceCounters --export ") && stdout.contains("--import "),
        "{stdout}"
    );
    // KPROF_PLAN=fixed: basic alone, and nothing to price it with.
    let out = run_as(none.to_str().unwrap(), "fixed");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("# Stage basic (batched: ") && stdout.contains("; cost unknown)"), "{stdout}");
    assert!(
        stdout.contains("# Cost: total unknown; estimates unknown: no cost history of this program"),
        "{stdout}"
    );
}

/// A dry run of `setup`'s workspace with `args`, `--clock-control none`, no cost history
/// and `extra` in its environment, which must succeed: (stdout, stderr).
fn dry_run_without_history(setup: &Setup, args: &[&str], extra: &[(&str, &str)]) -> (String, String) {
    let none = setup.ws.root().join("tools/absent.jsonl");
    let mut env = vec![("NCU", setup.ncu.to_str().unwrap()), ("KPROF_COST_HISTORY", none.to_str().unwrap())];
    env.extend_from_slice(extra);
    let mut all = args.to_vec();
    all.extend(["--clock-control", "none", "--dry-run"]);
    let out = setup.ws.kprof(&all, &env);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    (text(&out.stdout), text(&out.stderr))
}

/// `KPROF_HOT_LINES=sampling` reaches the planned commands: the merged first run asks for
/// the PC sampling groups and `inst_executed` in its one metric list and exports the
/// report without the SourceCounters section; the source page is still imported from it.
#[test]
fn the_sampling_switch_changes_only_how_the_first_run_collects_the_hot_lines() {
    let setup = setup_at(&recorded("again"));
    let dry = |hot_lines: &str| {
        let env = [("KPROF_PLAN", "auto"), ("KPROF_HOT_LINES", hot_lines)];
        dry_run_without_history(&setup, &["--workspace"], &env).0
    };
    let section = dry("section");
    let sampling = dry("sampling");
    let first = |stdout: &str| {
        let at = stdout.find("# Stage basic+memory+compute+occupancy (batched: ").unwrap();
        stdout[at..].lines().find(|l| l.contains("--export ")).unwrap().to_string()
    };
    let (with_section, with_sampling) = (first(&section), first(&sampling));
    assert!(with_section.contains("--section SourceCounters --export ") && !with_section.contains("pcsamp"));
    assert!(!with_sampling.contains("SourceCounters"), "{with_sampling}");
    assert!(
        with_sampling.contains(
            ",group:smsp__pcsamp_warp_stall_reasons,group:smsp__pcsamp_warp_stall_reasons_not_issued,inst_executed --csv --page raw"
        ),
        "{with_sampling}"
    );
    assert_eq!(with_sampling.matches("--metrics").count(), 1, "{with_sampling}");
    assert!(sampling.contains("--import "), "{sampling}");
    // Nothing else changes: the same lines once the hot lines' options are taken out.
    let plain = |line: &str| {
        line.replace("--section SourceCounters ", "").replace(
            ",group:smsp__pcsamp_warp_stall_reasons,group:smsp__pcsamp_warp_stall_reasons_not_issued,inst_executed",
            "",
        )
    };
    assert_eq!(plain(&with_section), plain(&with_sampling));
}

/// A kernel profiled on its own plans its runs as a batch's do: without history, basic
/// and every likely follow-up share its first run, whose report stays in its own profile
/// for the source page's import, and the batch's folder is inside that profile (nothing
/// beside it). `KPROF_PLAN=fixed` keeps it on the single path: basic, then the follow-up.
#[test]
fn a_kernel_profiled_alone_gets_the_merged_first_run() {
    let setup = setup_at(&recorded("again"));
    let run_as =
        |plan: &str| dry_run_without_history(&setup, &["--kernel", "atomic_bins"], &[("KPROF_PLAN", plan)]);
    let (stdout, stderr) = run_as("auto");
    assert!(stderr.contains("Planned: `atomic_bins` of `"), "{stderr}");
    let stage = stdout
        .lines()
        .position(|l| l.starts_with("# Stage basic+memory+compute+occupancy (batched: atomic_bins; about "))
        .unwrap_or_else(|| panic!("{stdout}"));
    let lines: Vec<&str> = stdout.lines().collect();
    let merged = lines[stage + 1];
    let dir = setup
        .ws
        .profiles()
        .into_iter()
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("atomic_bins_dry-run"));
    let dir = dir.unwrap_or_else(|| panic!("no dry-run profile: {stdout}"));
    let own_report = dir.join("details/01_basic.ncu-rep");
    assert!(merged.contains(&format!("--export {}", own_report.display())), "{merged}");
    assert!(merged.contains(&format!("{}/.batch/details/", dir.display())), "{merged}");
    let source = lines[stage + 3];
    assert!(source.contains(&format!("--import {}", own_report.display())), "{source}");
    // One merged run and the import, against basic and a follow-up run.
    let cost = stdout.lines().find(|l| l.starts_with("# Cost: about ")).unwrap();
    assert!(cost.contains("17 passes"), "{cost}");

    let (stdout, stderr) = run_as("fixed");
    assert!(!stderr.contains("Planned: ") && !stdout.contains("# Stage basic+"), "{stdout}");
    assert!(stdout.contains("# Stage 1: basic\n"), "{stdout}");
}

/// The H200's run of the demo's `copy` profiled alone (`planner/merged-first/lone-copy`),
/// replayed: one merged first run (basic with every likely follow-up and the source
/// section, its report in the profile's own `details/`), the source page imported from
/// that report, nothing else; the batch's pages in the profile's hidden `.batch/`, the
/// pages cut from them in `details/`, and the H200's verdict.
#[test]
fn a_kernel_alone_replays_the_h200_s_merged_first_run_and_verdict() {
    let recorded = recordings().join("planner/merged-first/lone-copy/copy_20261205_042542");
    let ws = crate::support::Workspace::new(&crate::output_places::harness_entry("copy"));
    let tools = ws.root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let ncu = fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let history = tools.join("absent.jsonl");
    let details = recorded.join(".batch/details");
    let env = [
        ("NCU", ncu.to_str().unwrap()),
        ("KPROF_SKIP_GPU_CHECK", "1"),
        ("FAKE_NCU_ARGV", argv.to_str().unwrap()),
        ("FAKE_NCU_REPLAY", details.to_str().unwrap()),
        ("KPROF_PLAN", "auto"),
        ("KPROF_COST_HISTORY", history.to_str().unwrap()),
    ];
    let out = ws.kprof(&["--kernel", "copy", "--clock-control", "none"], &env);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("Planning the ncu runs of `copy`"), "{stderr}");
    assert_eq!(
        pages_asked(&argv),
        ["10_merged_basic+memory+compute+occupancy_raw.csv", "07_source_raw.csv"],
        "{stderr}"
    );
    let profile = ws.profiles().into_iter().next().expect("the profile");
    let calls = fake_ncu::calls(&argv);
    let after =
        |call: &[String], flag: &str| call.iter().position(|x| x == flag).map(|i| call[i + 1].clone());
    let own_report = profile.join("details/01_basic.ncu-rep").display().to_string();
    assert_eq!(after(&calls[calls.len() - 2], "--export").as_deref(), Some(own_report.as_str()));
    assert_eq!(after(&calls[calls.len() - 1], "--import").as_deref(), Some(own_report.as_str()));
    for page in ["01_basic_raw.csv", "03_memory_raw.csv", "07_source_raw.csv"] {
        assert!(profile.join("details").join(page).is_file(), "{page}");
    }
    assert!(profile.join(".batch/commands.sh").is_file());
    assert_eq!(crate::batching::verdict(&profile), crate::batching::verdict(&recorded));
}
