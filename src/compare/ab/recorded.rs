//! The decision rule replayed on every A/B check recorded on the H200
//! (`fixtures/h200/ab-runs/`, see its README): the rounds of `comparison/ab_rounds.json`
//! and both sides' counters pages, through [`time_change`], [`compare_counters`] and
//! [`combine`], as a check computes them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::compare::ab::counters::compare_counters;
use crate::compare::ab::rounds::Rounds;
use crate::compare::ab::stats::time_change;
use crate::compare::ab::verdict::{self, combine, KernelAb};
use crate::model::ab::{AbVerdict, GateSignal};
use crate::profile::dir::ProfileDir;

fn runs() -> PathBuf {
    kprof_testkit::recordings().join("ab-runs")
}

/// The one profile directory of a side of a recorded run.
fn profile(run: &str, side: &str) -> ProfileDir {
    ProfileDir::at(kprof_testkit::ab_run_profile(run, side))
}

/// The side's counters; `None` for a check run with `--gate time` (no counters stage).
fn counters(dir: &ProfileDir) -> Option<BTreeMap<String, f64>> {
    crate::analyze::counters::read(dir).unwrap()
}

/// The run's verdict under today's rule, at the default tolerance of 2 %.
fn replay(run: &str, gate: GateSignal) -> KernelAb {
    let (head, base) = (profile(run, "head"), profile(run, "base"));
    let text = std::fs::read_to_string(head.ab_rounds_path()).unwrap();
    let rounds: Rounds = serde_json::from_str(&text).unwrap();
    rounds.check().unwrap();
    let time = time_change(&rounds, 2.0);
    let c = match (counters(&base), counters(&head)) {
        (Some(b), Some(h)) => Some(compare_counters(&b, &h, 2.0)),
        _ => None,
    };
    combine(&rounds.kernel, Some(time), c, gate)
}

/// What the check printed on the H200: its `ab.json`.
fn recorded(run: &str) -> serde_json::Value {
    let path = profile(run, "head").ab_result_path();
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn aa_runs() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(runs())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("aa-"))
        .collect();
    names.sort();
    names
}

#[test]
fn every_a_a_check_is_unchanged_and_says_what_it_could_resolve() {
    let names = aa_runs();
    assert_eq!(names.len(), 25);
    for name in &names {
        let ab = replay(name, GateSignal::Both);
        let t = ab.time.as_ref().unwrap();
        assert_eq!(ab.verdict, AbVerdict::Unchanged, "{name}: {ab:?}");
        assert_eq!(t.rounds, 12, "{name}");
        assert!(t.lo_pct > -0.5 && t.hi_pct < 0.5, "{name}: [{}, {}]", t.lo_pct, t.hi_pct);
        assert!(t.resolution_pct > 0.0 && t.resolution_pct < 0.3, "{name}: {}", t.resolution_pct);
        let drift = t.clock_drift_pct.expect("clock readings");
        assert!(drift < 1.0, "{name}: clock drift {drift} %");
    }
}

/// Three of the first twelve A/A checks failed on the H200 (exit 10) under the first
/// counter rule: DRAM bytes read grew by 13.7 to 16.3 % against a 10 % gate. Today's rule
/// (cache traffic gates beyond 50 %) reads the same pages as unchanged; the last three A/A
/// checks ran with it on the H200 and passed.
#[test]
fn the_a_a_checks_the_first_rule_failed_are_unchanged_under_todays() {
    let failed: Vec<String> =
        aa_runs().into_iter().filter(|n| recorded(n)["result"]["verdict"] == "regressed").collect();
    assert_eq!(failed, ["aa-05", "aa-08", "aa-11"]);
    for name in &failed {
        assert_eq!(recorded(name)["result"]["decided_by"], "counters", "{name}");
        let ab = replay(name, GateSignal::Both);
        assert_eq!(ab.verdict, AbVerdict::Unchanged, "{name}");
        let dram =
            ab.counters.unwrap().changes.into_iter().find(|c| c.metric == "dram__bytes_read.sum").unwrap();
        assert!(dram.change_pct.unwrap() > 13.0 && !dram.gated, "{name}: {dram:?}");
    }
    for name in ["aa-13", "aa-14", "aa-15"] {
        assert_eq!(recorded(name)["result"]["verdict"], "unchanged", "{name}");
    }
}

/// #16's criterion, on the ten A/A checks run with the finished build (`aa-16` to
/// `aa-25`, one series): at least 9 of 10 unchanged, none regressed or improved, and the
/// detectable change reported each time. All ten passed with exit 0.
#[test]
fn ten_a_a_checks_of_the_finished_build_pass() {
    let series: Vec<String> = (16..=25).map(|n| format!("aa-{n}")).collect();
    for name in &series {
        let r = recorded(name);
        assert_eq!(r["result"]["verdict"], "unchanged", "{name}");
        assert!(r["line"].as_str().unwrap().contains("resolution ±"), "{name}: {}", r["line"]);
        let log = std::fs::read_to_string(runs().join(name).join("check.log")).unwrap();
        assert!(log.trim_end().lines().last().unwrap().starts_with("exit 0,"), "{name}");
    }
}

/// The same program against itself, by ncu rounds: unchanged, with a wider interval than
/// harness rounds give, and the report says the evidence is weaker.
#[test]
fn an_ncu_timed_a_a_check_is_unchanged_and_flagged_as_weaker_evidence() {
    let ab = replay("py-aa", GateSignal::Both);
    assert_eq!(ab.verdict, AbVerdict::Unchanged, "{ab:?}");
    let t = ab.time.as_ref().unwrap();
    assert!(t.lo_pct > -1.0 && t.hi_pct < 1.0 && t.resolution_pct < 1.0, "{t:?}");
    assert_eq!(t.clock_drift_pct, None);
    let report = std::fs::read_to_string(profile("py-aa", "head").regression_report_path()).unwrap();
    assert!(report.contains("Weaker evidence than harness rounds"), "{report}");
}

/// Doubling the DRAM reads of a DRAM-bound Triton kernel: regressed by about 43 %, with
/// the DRAM bytes and load sectors doubled among the counters. The extra DRAM bytes gate:
/// at DRAM bandwidth they are worth far more than 2 % of the base's time. The extra load
/// sectors move but do not gate on their own: at L1 bandwidth they are worth 1.6 %.
#[test]
fn doubled_dram_reads_of_a_triton_kernel_regress() {
    let ab = replay("py-slow", GateSignal::Both);
    assert_eq!(ab.verdict, AbVerdict::Regressed);
    let t = ab.time.as_ref().unwrap();
    assert!(t.lo_pct > 40.0 && t.hi_pct < 45.0, "{t:?}");
    let c = ab.counters.unwrap();
    let of = |metric: &str| c.changes.iter().find(|c| c.metric == metric).unwrap();
    let dram = of("dram__bytes_read.sum");
    assert!(dram.gated && (dram.change_pct.unwrap() - 100.0).abs() < 0.1, "{dram:?}");
    let loads = of("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum");
    assert!(loads.moved && !loads.gated && (loads.change_pct.unwrap() - 100.0).abs() < 0.1, "{loads:?}");
    assert!((loads.cost.unwrap().share_pct - 1.57).abs() < 0.01, "{loads:?}");
    assert_eq!(recorded("py-slow")["result"]["verdict"], "regressed");
}

#[test]
fn bank_conflicts_regress_with_the_counters_and_the_hot_line_as_evidence() {
    let ab = replay("bank", GateSignal::Both);
    assert_eq!(ab.verdict, AbVerdict::Regressed);
    let t = ab.time.as_ref().unwrap();
    assert!(t.lo_pct > 400.0, "{t:?}");
    let gated: Vec<&str> =
        ab.counters.as_ref().unwrap().changes.iter().filter(|c| c.gated).map(|c| c.label.as_str()).collect();
    assert_eq!(gated, ["shared wavefronts", "bank conflicts"]);
    let r = recorded("bank");
    assert_eq!(r["result"]["verdict"], "regressed");
    assert_eq!(r["result"]["hotspot"], "hgemm.cu:48 (72.1 % -> 74.7 %)");
}

/// A 3 % slowdown (4 zero tiles past k: 132 tiles for 128) is regressed, by the timing and
/// by the shared-memory wavefronts of the extra tiles: the kernel is limited by shared
/// memory, and its 3.1 % more wavefronts are worth 2.74 % of the base's 15.2 ms at
/// shared-memory bandwidth. Its 3.1 % more instructions move but do not gate: at the issue
/// rate they are worth 1.35 %.
#[test]
fn a_three_percent_slowdown_is_regressed() {
    let ab = replay("slow3", GateSignal::Both);
    let t = ab.time.as_ref().unwrap();
    assert_eq!(ab.verdict, AbVerdict::Regressed);
    let gated: Vec<String> = ab
        .counters
        .as_ref()
        .unwrap()
        .changes
        .iter()
        .filter(|c| c.gated)
        .map(|c| c.why.clone().unwrap())
        .collect();
    assert_eq!(
        gated,
        ["gated: 417.37 µs at shared-memory bandwidth, 2.74 % of the base's 15.218 ms (at least the 2.0 % tolerance)"]
    );
    assert!(t.lo_pct >= 2.0 && t.hi_pct < 3.5 && (t.estimate_pct - 2.9).abs() < 0.2, "{t:?}");
    let c = ab.counters.unwrap();
    let insts = c.changes.iter().find(|c| c.metric == "smsp__inst_executed.sum").unwrap();
    assert!(insts.moved && !insts.gated && (insts.change_pct.unwrap() - 3.1).abs() < 0.2, "{insts:?}");
    assert!((insts.cost.unwrap().share_pct - 1.35).abs() < 0.01, "{insts:?}");
}

/// More instructions behind DRAM: the timing calls it unchanged, the counter gate does not.
#[test]
fn the_counter_gate_catches_what_timing_calls_unchanged() {
    for run in ["insts", "insts-2"] {
        let both = replay(run, GateSignal::Both);
        assert_eq!(both.time.as_ref().unwrap().verdict, AbVerdict::Unchanged, "{run}");
        assert_eq!(both.verdict, AbVerdict::Regressed, "{run}");
        assert_eq!(both.decided_by, verdict::BY_COUNTERS);
        assert!(both.counters.as_ref().unwrap().explain().starts_with("+45.9 % instructions"), "{run}");
        assert_eq!(replay(run, GateSignal::Time).verdict, AbVerdict::Unchanged, "{run}");
        assert_eq!(recorded(run)["result"]["verdict"], "regressed", "{run}");
    }
    assert_eq!(recorded("insts-time")["result"]["verdict"], "unchanged");
    assert_eq!(replay("insts-time", GateSignal::Time).verdict, AbVerdict::Unchanged);
}

/// The reviewer's hotspot phrase, from both sides' recorded source hotspots.
fn hotspot(run: &str) -> String {
    let load = |side: &str| crate::compare::Snapshot::load(profile(run, side).path(), side).unwrap();
    crate::compare::ab::hotspot::hotspot_phrase(&load("base"), &load("head")).unwrap()
}

/// The Triton check's hottest line is Triton's own `max` (inlined from its standard
/// library) on both sides; what changed is two lines of the kernel's file. The phrase
/// names them, biggest gain first, matched by their text: the edited line is new, and
/// the `exp` line moved from line 38 to 40 and its share tripled. Matching by number alone would have
/// compared line 40 with the base's line 40, the store.
#[test]
fn the_hotspot_phrase_names_the_lines_that_rose_matched_by_their_text() {
    assert_eq!(
        hotspot("py-slow"),
        "standard.py:170 (49.7 % -> 32.7 %), rising triton_softmax.py:39 (0.0 % -> 13.6 %) \
         and triton_softmax.py:40 (line 38 in the base, 5.6 % -> 17.8 %)"
    );
    // The bank-conflict change rewrote the hot line itself.
    assert_eq!(hotspot("bank"), "hgemm.cu:48 (edited, 72.1 % -> 74.7 %)");
    // The final build printed the same phrases on the H200 for both changes.
    for run in ["bank-2", "py-slow-2"] {
        assert_eq!(recorded(run)["result"]["hotspot"], hotspot(run), "{run}");
        assert_eq!(recorded(run)["result"]["verdict"], "regressed", "{run}");
    }
    assert!(hotspot("py-slow-2")
        .contains(", rising triton_softmax.py:39 (0.0 % -> 12.9 %) and triton_softmax.py:40"));
    assert_eq!(hotspot("bank-2"), "hgemm.cu:48 (edited, 72.3 % -> 74.8 %)");
    // Between identical builds no line rises by 5 points.
    for run in aa_runs().iter().map(String::as_str).chain(["py-aa"]) {
        let phrase = hotspot(run);
        assert!(!phrase.contains("rising") && !phrase.contains("moved"), "{run}: {phrase}");
    }
}

/// The side-by-side table of the two profiles pairs the same lines: the Triton kernel's
/// `exp` line is the base's line 38 and the head's line 40; the bank-conflict change's hot
/// line was edited where it stood.
#[test]
fn the_side_by_side_table_pairs_lines_by_their_text() {
    let compare = |run: &str| {
        let load = |side: &str| crate::compare::Snapshot::load(profile(run, side).path(), side).unwrap();
        crate::compare::compare(&load("base"), &load("head"), 2.0)
    };
    let c = compare("py-slow");
    let row = c.hotspots.iter().find(|r| r.metric == "hotspot:triton_softmax.py:40").unwrap();
    assert_eq!(row.label, "samples on triton_softmax.py:40 (base: line 38)");
    assert_eq!((row.baseline.map(|v| v.round()), row.current.map(|v| v.round())), (Some(6.0), Some(18.0)));
    let c = compare("bank");
    let row = c.hotspots.iter().find(|r| r.metric == "hotspot:hgemm.cu:48").unwrap();
    assert_eq!(row.label, "samples on hgemm.cu:48 (edited)");
}
