//! The zoo-wide A/A check and three known changes recorded on the H200
//! (`fixtures/h200/ab-sweep/`, see its README and `EXPECTED.md`), replayed through today's
//! decision rule. What was kept of each check is its console with `--message-format json`:
//! the rounds (`round-done`, in the order the grouped timing ran them: program by program,
//! round by round, kernel by kernel, the groups as `batch-started` names them), and each
//! kernel's verdict with both sides' counters (`ab-comparison`). The device attributes the
//! counters are priced with are the same H200's, from `fixtures/h200/unit-peaks`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use crate::compare::ab::counters::{compare_counters, CounterClass, DURATION};
use crate::compare::ab::early_stop::{decided_early, FIRST_LOOK};
use crate::compare::ab::rounds::{Rounds, SideSample};
use crate::compare::ab::stats::time_change;
use crate::compare::ab::verdict::{self, combine, KernelAb};
use crate::model::ab::{AbVerdict, GateSignal};
use crate::ncu::parse::RawPage;

fn fixture(path: &str) -> PathBuf {
    kprof_testkit::recordings().join(path)
}

/// The JSON messages of a recorded check's console.
fn messages(check: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(fixture(&format!("ab-sweep/{check}.log"))).unwrap();
    text.lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn of_reason<'a>(m: &'a [Value], reason: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    m.iter().filter(move |v| v["reason"] == reason)
}

/// The H200's device attributes, as ncu wrote them into a raw page on the same machine.
fn h200_attributes() -> BTreeMap<String, f64> {
    let path = fixture("unit-peaks/peaks_raw.csv");
    let page = RawPage::parse(&std::fs::read_to_string(&path).unwrap(), "peaks_raw.csv").unwrap();
    crate::analyze::counters::of_page(&page)
        .into_iter()
        .filter(|(k, _)| k.starts_with("device__attribute_"))
        .collect()
}

/// Each kernel's rounds, rebuilt from the `round-done` messages. The groups are the
/// programs of the head's `batch-started` messages (a check of one kernel has none).
fn rounds(m: &[Value], kernels: &[String]) -> BTreeMap<String, Rounds> {
    let sample = |r: &Value, side: &str| SideSample {
        median_ns: r[side].as_f64().unwrap(),
        samples: 1,
        rel_noise: 0.0,
        sm_clock_mhz: None,
    };
    if of_reason(m, "round-done").all(|r| r["kernel"].is_string()) {
        // Newer consoles name each round's kernel: a kernel's rounds are its messages, in
        // order, however many it had (12, or 24 when more rounds could decide it).
        let mut out: BTreeMap<String, Rounds> =
            kernels.iter().map(|k| (k.clone(), Rounds::new(k, None, "hot", "harness"))).collect();
        for r in of_reason(m, "round-done") {
            let k = r["kernel"].as_str().unwrap();
            out.get_mut(k)
                .expect("a round of a compared kernel")
                .push(sample(r, "base_ns"), sample(r, "head_ns"));
        }
        return out;
    }
    let mut groups: Vec<Vec<String>> = Vec::new();
    for b in of_reason(m, "batch-started") {
        let g: Vec<String> =
            b["kernels"].as_array().unwrap().iter().map(|k| k.as_str().unwrap().into()).collect();
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    if groups.is_empty() {
        groups = kernels.iter().map(|k| vec![k.clone()]).collect();
    }
    let mut out: BTreeMap<String, Rounds> =
        kernels.iter().map(|k| (k.clone(), Rounds::new(k, None, "hot", "harness"))).collect();
    let mut done = of_reason(m, "round-done");
    for g in &groups {
        for _ in 0..12 {
            for k in g {
                let r = done.next().expect("a round-done message per kernel and round");
                out.get_mut(k).unwrap().push(sample(r, "base_ns"), sample(r, "head_ns"));
            }
        }
    }
    assert!(done.next().is_none(), "every round-done message belongs to a kernel");
    out
}

/// One side's counters from the recorded comparison, with the base's duration and the
/// device's attributes, as the counters page gave them.
fn counters(ab: &Value, side: &str, attributes: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    let mut m = attributes.clone();
    for c in ab["counters"]["changes"].as_array().unwrap() {
        m.insert(c["metric"].as_str().unwrap().into(), c[side].as_f64().unwrap());
        if let Some(ns) = c["cost"]["base_ns"].as_f64() {
            m.insert(DURATION.into(), ns);
        }
    }
    m
}

/// One kernel of a recorded check: today's verdict, and the message the check printed.
struct Replayed {
    kernel: String,
    today: KernelAb,
    printed: Value,
}

/// Every kernel of a recorded check, replayed at the recorded tolerance (2 %).
fn replay(check: &str) -> Vec<Replayed> {
    let m = messages(check);
    let printed: Vec<&Value> = of_reason(&m, "ab-comparison").collect();
    let kernels: Vec<String> = printed.iter().map(|p| p["kernel"].as_str().unwrap().to_string()).collect();
    let rounds = rounds(&m, &kernels);
    let attributes = h200_attributes();
    printed
        .into_iter()
        .map(|p| {
            let kernel = p["kernel"].as_str().unwrap().to_string();
            let time = time_change(&rounds[&kernel], 2.0);
            let c =
                compare_counters(&counters(p, "base", &attributes), &counters(p, "head", &attributes), 2.0);
            let today = combine(&kernel, Some(time), Some(c), GateSignal::Both);
            Replayed { kernel, today, printed: p.clone() }
        })
        .collect()
}

/// The rebuilt rounds give the printed interval, and today's rule the printed verdict.
fn as_printed(r: &Replayed) {
    let (t, p) = (r.today.time.as_ref().unwrap(), &r.printed["time"]);
    for (today, printed) in [(t.estimate_pct, "estimate_pct"), (t.lo_pct, "lo_pct"), (t.hi_pct, "hi_pct")] {
        assert!((today - p[printed].as_f64().unwrap()).abs() < 1e-9, "{}: {printed}", r.kernel);
    }
    assert_eq!(r.today.verdict.name(), r.printed["verdict"], "{}", r.kernel);
}

fn verdicts(replayed: &[Replayed], v: AbVerdict) -> Vec<&str> {
    replayed.iter().filter(|r| r.today.verdict == v).map(|r| r.kernel.as_str()).collect()
}

/// The zoo against itself, 28 kernels in five programs, one check: no kernel regressed
/// or improved, no counter gated; two kernels could not resolve ±2 % (a 5 µs launch and
/// an L2-resident re-read); the other 26 are unchanged, 25 of them at ±0.5 % or better.
#[test]
fn the_zoo_against_itself_raises_no_alarm() {
    let zoo = replay("zoo-aa");
    assert_eq!(zoo.len(), 28);
    zoo.iter().for_each(as_printed);
    let gated: Vec<String> = zoo
        .iter()
        .flat_map(|r| {
            r.today.counters.iter().flat_map(|c| &c.changes).filter(|c| c.gated).map(|c| c.label.clone())
        })
        .collect();
    assert!(gated.is_empty(), "{gated:?}");
    assert!(
        verdicts(&zoo, AbVerdict::Regressed).is_empty() && verdicts(&zoo, AbVerdict::Improved).is_empty()
    );
    assert_eq!(verdicts(&zoo, AbVerdict::Ambiguous), ["l2_reread_cg", "vec_add_small"]);
    let wide: Vec<&str> = zoo
        .iter()
        .filter(|r| r.today.time.as_ref().unwrap().resolution_pct > 0.5)
        .map(|r| r.kernel.as_str())
        .collect();
    assert_eq!(wide, ["l2_reread_cg", "hmma_loop", "vec_add_small"]);
    let finished = of_reason(&messages("zoo-aa"), "check-finished").next().cloned().unwrap();
    assert_eq!((finished["exit_code"].as_i64(), finished["kernels"].as_i64()), (Some(14), Some(28)));
}

/// What the class thresholds alone (the rule before pricing) would have gated in the
/// same A/A check: a single bank conflict appearing in `reduce_single_block`. Priced, it
/// is nothing, and the DRAM traffic that appeared from or fell to zero is a few hundred
/// kilobytes, under 0.01 % of any kernel's time.
#[test]
fn what_the_class_rule_alone_would_have_failed_is_priced_away() {
    let zoo = replay("zoo-aa");
    let mut appeared = Vec::new();
    for r in &zoo {
        for c in r.today.counters.iter().flat_map(|c| &c.changes) {
            if c.class == CounterClass::Contended && c.base == 0.0 && c.head > 0.0 {
                appeared.push(r.kernel.as_str());
                assert!(!c.gated && c.cost.unwrap().share_pct < 0.01, "{c:?}");
            }
            if c.class == CounterClass::Cache && c.moved {
                assert!(c.cost.unwrap().share_pct.abs() < 0.01, "{}: {c:?}", r.kernel);
            }
        }
    }
    assert_eq!(appeared, ["reduce_single_block"]);
}

/// The known changes, run with the same build as the sweep: still caught.
#[test]
fn the_known_changes_are_still_caught() {
    let one = |check: &str| {
        let mut r = replay(check);
        assert_eq!(r.len(), 1, "{check}");
        as_printed(&r[0]);
        r.remove(0)
    };
    let bank = one("bank");
    assert_eq!(bank.today.verdict, AbVerdict::Regressed);
    let gated = |r: &Replayed| -> Vec<String> {
        r.today
            .counters
            .iter()
            .flat_map(|c| &c.changes)
            .filter(|c| c.gated)
            .map(|c| c.label.clone())
            .collect()
    };
    assert!(gated(&bank).contains(&"bank conflicts".to_string()), "{:?}", gated(&bank));
    let slow3 = one("slow3");
    assert_eq!(slow3.today.verdict, AbVerdict::Regressed);
    let t = slow3.today.time.as_ref().unwrap();
    assert!(t.lo_pct >= 2.0 && t.estimate_pct < 3.5, "{t:?}");
    let insts = one("insts");
    assert_eq!(insts.today.time.as_ref().unwrap().verdict, AbVerdict::Unchanged);
    assert_eq!(
        (insts.today.verdict, insts.today.decided_by.as_str()),
        (AbVerdict::Regressed, verdict::BY_COUNTERS)
    );
    assert_eq!(gated(&insts), ["instructions", "thread instructions"]);
}

/// The recorded A/A sweep `check` of `kernels` kernels, replayed: each printed interval
/// rebuilt from its rounds and each verdict today's, no counter gated, none regressed or
/// improved.
fn a_quiet_sweep(check: &str, kernels: usize) -> Vec<Replayed> {
    let zoo = replay(check);
    assert_eq!(zoo.len(), kernels, "{check}");
    zoo.iter().for_each(as_printed);
    assert!(zoo.iter().all(|r| r.today.counters.iter().flat_map(|c| &c.changes).all(|c| !c.gated)));
    assert!(
        verdicts(&zoo, AbVerdict::Regressed).is_empty() && verdicts(&zoo, AbVerdict::Improved).is_empty()
    );
    zoo
}

/// The second zoo-wide A/A check (each side's PTX kept for the check, more rounds where
/// they could decide): the same verdicts, in 434.9 s instead of 492.6 s. `l2_reread_cg`
/// was again ambiguous (-1.69 % [-3.12, +0.15]): more rounds could not have decided it,
/// so it got none, and its rounds fall into two groups by process on both sides, which
/// its line now says.
#[test]
fn the_second_zoo_sweep_raises_no_alarm_and_names_the_two_groups() {
    let zoo = a_quiet_sweep("zoo-aa-2", 28);
    assert_eq!(verdicts(&zoo, AbVerdict::Ambiguous), ["l2_reread_cg", "vec_add_small"]);
    for r in &zoo {
        let t = r.today.time.as_ref().unwrap();
        assert_eq!(t.rounds, 12, "{}: no kernel was worth more rounds", r.kernel);
        assert!(!crate::compare::ab::stats::more_rounds_could_decide(t), "{}", r.kernel);
    }
    let l2 = zoo.iter().find(|r| r.kernel == "l2_reread_cg").unwrap();
    let line = verdict::reviewer_line(&l2.today);
    assert!(
        line.contains("its rounds fall by process, the base's into two groups 2.7 % apart (4 fast, 8 slow)"),
        "{line}"
    );
    let wide: Vec<&str> = zoo
        .iter()
        .filter(|r| r.today.time.as_ref().unwrap().resolution_pct > 0.5)
        .map(|r| r.kernel.as_str())
        .collect();
    assert_eq!(wide, ["l2_reread_cg", "hmma_loop", "smem_byte_sum", "vec_add_small"]);
    let text = std::fs::read_to_string(fixture("ab-sweep/zoo-aa-2.log")).unwrap();
    assert!(text.contains("took 434.8 s (builds excluded)") && text.ends_with("exit 14, wall 434.9 s\n"));
}

/// The third sweep (merged first runs with the counters in them, early looks): the zoo's
/// 31 kernels, each printed interval rebuilt from its rounds and its verdict today's; no
/// kernel regressed, no counter gated, one ambiguous (`vec_add_small`, a 5 µs launch); most
/// kernels stopped at the first look. The known changes with the same build are caught as
/// before, `insts` by the counters the merged run collected.
#[test]
fn the_third_sweep_with_merged_counters_and_early_looks_keeps_the_verdicts() {
    let zoo = a_quiet_sweep("zoo-aa-3", 31);
    assert_eq!(verdicts(&zoo, AbVerdict::Ambiguous), ["vec_add_small"]);
    let at_first_look = zoo.iter().filter(|r| r.today.time.as_ref().unwrap().rounds == FIRST_LOOK).count();
    assert_eq!(at_first_look, 29);
    let text = std::fs::read_to_string(fixture("ab-sweep/zoo-aa-3.log")).unwrap();
    assert!(text.contains("took 328.7 s (builds excluded)") && text.ends_with("exit 14, wall 328.8 s\n"));
    for (check, by) in
        [("bank-3", verdict::BY_BOTH), ("slow3-3", verdict::BY_BOTH), ("insts-3", verdict::BY_COUNTERS)]
    {
        a_caught_change(check, by);
    }
}

/// The recorded check `check` of one known change, replayed: its printed interval rebuilt,
/// and `regressed` decided `by` the signal named, today as printed.
fn a_caught_change(check: &str, by: &str) -> Replayed {
    let mut r = replay(check);
    assert_eq!(r.len(), 1, "{check}");
    as_printed(&r[0]);
    assert_eq!((r[0].today.verdict, r[0].today.decided_by.as_str()), (AbVerdict::Regressed, by), "{check}");
    r.remove(0)
}

/// The demo's seven kernels against themselves, with the same build as the known changes'
/// second recordings: every one unchanged, no counter gated, exit 0.
#[test]
fn the_demo_against_itself_is_clean() {
    let demo = replay("demo-aa");
    assert_eq!(demo.len(), 7);
    demo.iter().for_each(as_printed);
    assert_eq!(verdicts(&demo, AbVerdict::Unchanged).len(), 7);
    let finished = of_reason(&messages("demo-aa"), "check-finished").next().cloned().unwrap();
    assert_eq!(finished["exit_code"].as_i64(), Some(0));
}

/// The known changes again, with the build of the second sweep, and the Triton change
/// (timed by ncu rounds): all four caught, none needing more rounds.
#[test]
fn the_known_changes_are_caught_by_the_second_sweeps_build() {
    for (check, by) in [
        ("bank-2", verdict::BY_BOTH),
        ("slow3-2", verdict::BY_BOTH),
        ("insts-2", verdict::BY_COUNTERS),
        ("py-slow", verdict::BY_BOTH),
    ] {
        let r = a_caught_change(check, by);
        assert_eq!(r.today.time.as_ref().unwrap().rounds, 12, "{check}");
    }
    let py = replay("py-slow");
    let dram =
        py[0].today.counters.iter().flat_map(|c| &c.changes).find(|c| c.label == "DRAM bytes read").unwrap();
    assert!(dram.gated && (dram.change_pct.unwrap() - 100.0).abs() < 0.5, "{dram:?}");
}

/// A reproducible stream of numbers for resampling (splitmix64): the test must give the
/// same counts on every machine.
struct Draws(u64);

impl Draws {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// The verdict of `d` (12 rounds) with early looks, and the rounds it used.
fn with_looks(d: &[f64]) -> (AbVerdict, usize) {
    for n in FIRST_LOOK..d.len() {
        if let Some(v) = decided_early(&Rounds::of_log_ratios(&d[..n]), 2.0, d.len()) {
            return (v, n);
        }
    }
    (time_change(&Rounds::of_log_ratios(d), 2.0).verdict, d.len())
}

/// What early looks do to the A/A checks, kernel by kernel: each kernel's recorded log
/// ratios, centred on zero (an A/A pair did not change, so any offset is noise), drawn 12
/// at a time with replacement 2,000 times, and judged once with looks and once with the
/// ordinary 12-round rule. Returns, per kernel, (regressed or improved with looks, the same
/// without, mean rounds used with looks).
fn resampled_false_alarms(checks: &[&str], centred: bool) -> Vec<(String, usize, usize, f64)> {
    const DRAWS: usize = 2000;
    let mut out = Vec::new();
    let mut draws = Draws(46);
    for check in checks {
        let m = messages(check);
        let kernels: Vec<String> =
            of_reason(&m, "ab-comparison").map(|p| p["kernel"].as_str().unwrap().to_string()).collect();
        for (kernel, r) in rounds(&m, &kernels) {
            let d = crate::compare::ab::stats::kept_log_ratios(&r);
            let centre = if centred { time_change(&r, 2.0).estimate_pct / 100.0 } else { 0.0 };
            let d: Vec<f64> = d.iter().map(|x| x - centre.ln_1p()).collect();
            let (mut looks, mut fixed, mut used) = (0, 0, 0);
            for _ in 0..DRAWS {
                let sample: Vec<f64> = (0..12).map(|_| d[draws.below(d.len())]).collect();
                let alarm = |v: AbVerdict| matches!(v, AbVerdict::Regressed | AbVerdict::Improved);
                let (v, n) = with_looks(&sample);
                looks += usize::from(alarm(v));
                used += n;
                fixed += usize::from(alarm(time_change(&Rounds::of_log_ratios(&sample), 2.0).verdict));
            }
            out.push((format!("{check}/{kernel}"), looks, fixed, used as f64 / DRAWS as f64));
        }
    }
    out
}

/// The early-stop rule against the recorded A/A rounds of both zoo sweeps and the demo:
/// on the same draws, looks never add a false alarm to the ordinary rule's, and every
/// kernel stays at 1 % (20 of 2,000 draws) or under where the ordinary rule does. Looks
/// stop only on `unchanged`, which no later round could have turned into an alarm on its
/// own: the rounds saved are those of kernels already inside the tolerance.
#[test]
fn early_looks_raise_no_false_alarm_on_the_recorded_a_a_rounds() {
    let checks = ["zoo-aa", "zoo-aa-2", "demo-aa"];
    for centred in [true, false] {
        let rows = resampled_false_alarms(&checks, centred);
        assert_eq!(rows.len(), 28 + 28 + 7);
        let mean: f64 = rows.iter().map(|r| r.3).sum::<f64>() / rows.len() as f64;
        eprintln!("centred {centred}: {mean:.2} rounds of 12 on average with looks");
        for (kernel, looks, fixed, used) in &rows {
            eprintln!("  {kernel}: {looks} false alarms with looks, {fixed} without; {used:.2} rounds");
        }
        for (kernel, looks, fixed, _) in &rows {
            assert!(looks <= fixed, "{kernel}: {looks} false alarms with looks, {fixed} without");
            assert!(*looks <= 20 || looks == fixed, "{kernel}: {looks} false alarms in 2000 draws");
        }
        if centred {
            assert!(mean < 10.0, "the looks save little: {mean:.2} rounds of 12");
        }
    }
}

/// The known changes with looks, their rounds in the order they ran: each timing verdict
/// is the ordinary rule's (the slowdowns run every round; the instruction change, which
/// its counters catch, may stop as unchanged).
#[test]
fn the_known_changes_keep_their_timing_verdicts_with_looks() {
    for check in ["bank", "slow3", "insts", "bank-2", "slow3-2", "insts-2", "py-slow"] {
        let m = messages(check);
        let kernels: Vec<String> =
            of_reason(&m, "ab-comparison").map(|p| p["kernel"].as_str().unwrap().to_string()).collect();
        for (kernel, r) in rounds(&m, &kernels) {
            let d = crate::compare::ab::stats::kept_log_ratios(&r);
            let (looks, used) = with_looks(&d[..12]);
            let ordinary = time_change(&Rounds::of_log_ratios(&d[..12]), 2.0).verdict;
            assert_eq!(looks, ordinary, "{check}/{kernel}");
            if ordinary == AbVerdict::Regressed {
                assert_eq!(used, 12, "{check}/{kernel}");
            }
        }
    }
}
