//! One kernel's A/B conclusion: the timing and the counters combined as `--gate` says, the
//! line a reviewer reads, the exit code of a whole check, and the rule written out for
//! reports.

use serde::Serialize;

use super::counters::{CounterChanges, CACHE_GATE_MIN_PCT, CONTENDED_GATE_MIN_PCT, EXACT_MOVED_PCT};
use super::stats::{TimeChange, CLOCK_DROP, EXACT_UP_TO, MIN_ROUNDS};
use crate::error::ExitCode;
use crate::model::ab::{AbVerdict, AmbiguousPolicy, GateSignal};

/// [`KernelAb::decided_by`]: the timing decided.
pub const BY_TIME: &str = "time";
/// [`KernelAb::decided_by`]: the counters decided.
pub const BY_COUNTERS: &str = "counters";
/// [`KernelAb::decided_by`]: both signals agree on it.
pub const BY_BOTH: &str = "time and counters";
/// [`KernelAb::decided_by`]: the gated signal is missing.
pub const BY_NOTHING: &str = "no signal";

/// One kernel's A/B check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelAb {
    /// kprof's kernel name.
    pub kernel: String,
    /// What the interleaved timing says, if it ran.
    pub time: Option<TimeChange>,
    /// What the counters say, if they were collected.
    pub counters: Option<CounterChanges>,
    /// Which signals may fail the gate.
    pub gate: GateSignal,
    /// The conclusion.
    pub verdict: AbVerdict,
    /// [`BY_TIME`], [`BY_COUNTERS`], [`BY_BOTH`] or [`BY_NOTHING`].
    pub decided_by: String,
    /// Where the head's time goes (`hgemm.cu:48`), when known; the caller fills it in.
    pub hotspot: Option<String>,
}

/// Combines the two signals as `gate` says. `Time` (`Counters`): that signal's verdict,
/// ambiguous without it. `Both`: a timing regression or improvement decides; otherwise a
/// counter regression does (time calls it unchanged or cannot tell, but the work grew);
/// otherwise an ambiguous timing stays ambiguous; else unchanged. With only one signal
/// present, `Both` uses it.
pub fn combine(
    kernel: &str,
    time: Option<TimeChange>,
    counters: Option<CounterChanges>,
    gate: GateSignal,
) -> KernelAb {
    use AbVerdict::*;
    let t = time.as_ref().map(|t| t.verdict);
    let c = counters.as_ref().map(|c| c.verdict());
    let (verdict, by) = match (gate, t, c) {
        (GateSignal::Time, Some(t), _) => (t, BY_TIME),
        (GateSignal::Counters, _, Some(c)) => (c, BY_COUNTERS),
        (GateSignal::Both, Some(t), Some(c)) => match (t, c) {
            (Regressed, Regressed) | (Improved, Improved) => (t, BY_BOTH),
            (Regressed | Improved, _) => (t, BY_TIME),
            (_, Regressed) => (Regressed, BY_COUNTERS),
            (Ambiguous, _) | (_, Ambiguous) => (t, BY_TIME),
            _ => (Unchanged, BY_BOTH),
        },
        (GateSignal::Both, Some(t), None) => (t, BY_TIME),
        (GateSignal::Both, None, Some(c)) => (c, BY_COUNTERS),
        _ => (Ambiguous, BY_NOTHING),
    };
    KernelAb {
        kernel: kernel.to_string(),
        time,
        counters,
        gate,
        verdict,
        decided_by: by.to_string(),
        hotspot: None,
    }
}

fn signed(v: f64) -> String {
    format!("{v:+.1}")
}

fn spread(v: f64) -> String {
    if v < 0.05 {
        crate::units::pct_spread(v, 2)
    } else {
        crate::units::pct_spread(v, 1)
    }
}

/// `(95 %, 10 rounds, 1 discarded, resolution ±0.7 %)`.
fn run_facts(t: &TimeChange) -> String {
    let discarded = match t.discarded.len() {
        0 => String::new(),
        d => format!(", {d} discarded"),
    };
    format!(
        "({:.0} %, {} rounds{discarded}, resolution {})",
        t.confidence * 100.0,
        t.rounds,
        spread(t.resolution_pct)
    )
}

/// What the timing says, in the words of its verdict.
fn time_phrase(t: &TimeChange) -> String {
    let interval = format!("[{}, {}]", signed(t.lo_pct), signed(t.hi_pct));
    if t.rounds == 0 {
        format!("no timing round kept ({} discarded)", t.discarded.len())
    } else if !t.enough_rounds {
        format!(
            "{} % over only {} rounds, range {interval} ({MIN_ROUNDS} needed for a 95 % interval)",
            signed(t.estimate_pct),
            t.rounds
        )
    } else if t.verdict == AbVerdict::Ambiguous {
        let why = super::modes::phrase(&t.groups).map(|p| format!(" ({p})")).unwrap_or_default();
        format!(
            "cannot tell at ±{} %: {} %, interval {interval} {}{why}",
            t.tolerance_pct,
            signed(t.estimate_pct),
            run_facts(t)
        )
    } else {
        format!("{} % {interval} {}", signed(t.estimate_pct), run_facts(t))
    }
}

/// Why the verdict is not the timing's, when it is not.
fn note(ab: &KernelAb) -> String {
    if ab.decided_by == BY_NOTHING {
        return match ab.gate {
            GateSignal::Time => " (no timing)".into(),
            GateSignal::Counters => " (no counters)".into(),
            GateSignal::Both => " (no timing, no counters)".into(),
        };
    }
    match &ab.time {
        Some(t) if t.verdict != ab.verdict && ab.verdict == AbVerdict::Regressed => {
            format!(" (timing calls it {}, counters moved)", t.verdict.name())
        }
        Some(t) if t.verdict != ab.verdict => {
            format!(" (by counters; timing calls it {})", t.verdict.name())
        }
        _ => String::new(),
    }
}

/// One line for a reviewer: `hgemm_tiled: regressed, +3.1 % [+2.4, +3.8] (95 %, 10
/// rounds, resolution ±0.7 %); counters: +12.0 % instructions, bank conflicts 0 -> 3.1e7;
/// hotspot: hgemm.cu:48`. An ambiguous timing says what the run could resolve:
/// `cannot tell at ±2 %: +1.9 %, interval [+0.8, +3.1] (...)`.
pub fn reviewer_line(ab: &KernelAb) -> String {
    let mut head = format!("{}: {}{}", ab.kernel, ab.verdict.name(), note(ab));
    if let Some(t) = &ab.time {
        head.push_str(", ");
        head.push_str(&time_phrase(t));
    }
    let mut parts = vec![head];
    if let Some(c) = &ab.counters {
        let explained = c.explain();
        parts.push(if explained == "counters unchanged" {
            explained
        } else {
            format!("counters: {explained}")
        });
    }
    if let Some(h) = &ab.hotspot {
        parts.push(format!("hotspot: {h}"));
    }
    parts.join("; ")
}

/// The exit code of a check over `results`: [`ExitCode::Regression`] when any kernel
/// regressed; else [`ExitCode::Ambiguous`] when any is ambiguous and `policy` is
/// [`AmbiguousPolicy::Fail`]; else [`ExitCode::Success`].
pub fn exit_code(results: &[KernelAb], policy: AmbiguousPolicy) -> ExitCode {
    if results.iter().any(|r| r.verdict == AbVerdict::Regressed) {
        ExitCode::Regression
    } else if policy == AmbiguousPolicy::Fail && results.iter().any(|r| r.verdict == AbVerdict::Ambiguous) {
        ExitCode::Ambiguous
    } else {
        ExitCode::Success
    }
}

/// The decision rule, written out for reports, at tolerance `tolerance_pct` and gate `gate`.
pub fn decision_rule_markdown(tolerance_pct: f64, gate: GateSignal) -> String {
    let t = tolerance_pct;
    let gate_rule = match gate {
        GateSignal::Time => "only the timing decides; the counters are reported to explain it.".to_string(),
        GateSignal::Counters => "only the counters decide; the timing is reported.".to_string(),
        GateSignal::Both => "a timing that regressed or improved decides; otherwise a gated counter makes \
             it a regression (the work grew though the timing could not see it); otherwise an ambiguous \
             timing stays ambiguous; else unchanged."
            .to_string(),
    };
    format!(
        "## Decision rule\n\n\
         - **Rounds.** Each round times base and head back to back, alternating which runs first, \
         and keeps the log ratio `ln(head / base)` of their median times. Pairing the two runs of \
         a round cancels slow drift.\n\
         - **Clock screening.** A round in which either side's SM clock was more than {drop:.0} % \
         below the run's median clock is discarded, and named.\n\
         - **Statistic.** The change is the Hodges-Lehmann estimate (the median of all pairwise \
         averages of the rounds' log ratios) with its 95 % Wilcoxon signed-rank interval, exact up \
         to {exact} rounds. A rank method: the same rounds always give the same verdict, no \
         normality is assumed, and one disturbed round cannot make a change. At least \
         {min} kept rounds are needed for a 95 % interval; fewer are ambiguous.\n\
         - **Early looks.** From {first} rounds on, a kernel whose interval at the stricter level \
         `1 - 0.05 / L` (for the `L` looks before the last planned round) lies inside the minimum \
         effect stops there, unchanged; a kernel that looks regressed or improved always runs \
         every planned round.\n\
         - **Minimum effect: ±{t} %.** Regressed: the whole interval at or above +{t} %. \
         Improved: at or below -{t} %. Unchanged: inside (-{t} %, +{t} %). Otherwise \
         ambiguous: the run cannot tell a change of {t} % from noise.\n\
         - **Counters.** A counter gates when it grew beyond its run-to-run variation \
         (deterministic counts such as instructions and memory sectors by more than \
         {exact_gate} % or from zero; bank conflicts beyond {contended_gate} % or from zero; \
         cache traffic, DRAM bytes and L2 sectors, beyond {cache_gate} %) *and* its extra work, \
         at the device's peak rate for the unit that does it (instructions at the issue rate, \
         sectors and bytes at L1, L2 or DRAM bandwidth), takes at least {t} % of the base's \
         duration. Launch attributes and cycles never gate.\n\
         - **Gate `{gate}`:** {gate_rule}\n\
         - **Exit code.** 10 when any kernel regressed; else 14 when any is ambiguous (0 with \
         `--ambiguous pass`); else 0.\n",
        drop = CLOCK_DROP * 100.0,
        exact = EXACT_UP_TO,
        min = MIN_ROUNDS,
        first = super::early_stop::FIRST_LOOK,
        exact_gate = t.max(EXACT_MOVED_PCT),
        contended_gate = t.max(CONTENDED_GATE_MIN_PCT),
        cache_gate = t.max(CACHE_GATE_MIN_PCT),
        gate = gate.name(),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::counters::compare_counters;
    use super::*;

    fn time(verdict: AbVerdict, est: f64, lo: f64, hi: f64) -> TimeChange {
        TimeChange {
            rounds: 10,
            discarded: Vec::new(),
            estimate_pct: est,
            lo_pct: lo,
            hi_pct: hi,
            confidence: 0.951,
            resolution_pct: (hi - lo) / 2.0,
            clock_drift_pct: Some(0.4),
            tolerance_pct: 2.0,
            verdict,
            enough_rounds: true,
            groups: Vec::new(),
        }
    }

    /// A 1 ms kernel on an H200 (its device attributes as ncu records them) whose
    /// instructions go from 1e8 to `instructions`: +5e7 of them take 48 us at the issue
    /// rate, 4.8 % of the base.
    fn counters(instructions: f64) -> CounterChanges {
        let base: BTreeMap<String, f64> = [
            ("smsp__inst_executed.sum", 1e8),
            ("dram__bytes_read.sum", 1e8),
            ("gpu__time_duration.sum", 1e6),
            ("device__attribute_multiprocessor_count", 132.0),
            ("device__attribute_clock_rate", 1_980_000.0),
            ("device__attribute_num_schedulers_per_multiprocessor", 4.0),
            ("device__attribute_max_ipc_per_scheduler", 1.0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let mut head = base.clone();
        head.insert("smsp__inst_executed.sum".into(), instructions);
        compare_counters(&base, &head, 2.0)
    }

    fn verdict(t: Option<AbVerdict>, c: Option<f64>, gate: GateSignal) -> (AbVerdict, String) {
        let ab = combine("k", t.map(|v| time(v, 0.0, -1.0, 1.0)), c.map(counters), gate);
        (ab.verdict, ab.decided_by)
    }

    #[test]
    fn gate_time_takes_the_timing() {
        use AbVerdict::*;
        let g = GateSignal::Time;
        assert_eq!(verdict(Some(Unchanged), Some(1.5e8), g), (Unchanged, BY_TIME.into()));
        assert_eq!(verdict(Some(Regressed), Some(1e8), g), (Regressed, BY_TIME.into()));
        assert_eq!(verdict(None, Some(1.5e8), g), (Ambiguous, BY_NOTHING.into()));
    }

    #[test]
    fn gate_counters_takes_the_counters() {
        use AbVerdict::*;
        let g = GateSignal::Counters;
        assert_eq!(verdict(Some(Regressed), Some(1e8), g), (Unchanged, BY_COUNTERS.into()));
        assert_eq!(verdict(Some(Unchanged), Some(1.5e8), g), (Regressed, BY_COUNTERS.into()));
        assert_eq!(verdict(Some(Unchanged), Some(0.5e8), g), (Improved, BY_COUNTERS.into()));
        assert_eq!(verdict(Some(Regressed), None, g), (Ambiguous, BY_NOTHING.into()));
    }

    #[test]
    fn gate_both_lets_time_decide_and_counters_catch() {
        use AbVerdict::*;
        let g = GateSignal::Both;
        assert_eq!(verdict(Some(Regressed), Some(1e8), g), (Regressed, BY_TIME.into()));
        assert_eq!(verdict(Some(Regressed), Some(1.5e8), g), (Regressed, BY_BOTH.into()));
        assert_eq!(verdict(Some(Improved), Some(1.5e8), g), (Improved, BY_TIME.into()));
        assert_eq!(verdict(Some(Unchanged), Some(1.5e8), g), (Regressed, BY_COUNTERS.into()));
        assert_eq!(verdict(Some(Ambiguous), Some(1.5e8), g), (Regressed, BY_COUNTERS.into()));
        assert_eq!(verdict(Some(Ambiguous), Some(1e8), g), (Ambiguous, BY_TIME.into()));
        assert_eq!(verdict(Some(Unchanged), Some(1e8), g), (Unchanged, BY_BOTH.into()));
        // Fewer instructions do not turn an unchanged timing into an improvement.
        assert_eq!(verdict(Some(Unchanged), Some(0.5e8), g), (Unchanged, BY_BOTH.into()));
        assert_eq!(verdict(Some(Improved), None, g), (Improved, BY_TIME.into()));
        assert_eq!(verdict(None, Some(1.5e8), g), (Regressed, BY_COUNTERS.into()));
        assert_eq!(verdict(None, None, g), (Ambiguous, BY_NOTHING.into()));
    }

    #[test]
    fn reviewer_lines_read_as_documented() {
        let mut ab = combine(
            "hgemm_tiled",
            Some(time(AbVerdict::Regressed, 3.1, 2.4, 3.8)),
            Some(counters(1.12e8)),
            GateSignal::Both,
        );
        ab.hotspot = Some("hgemm.cu:48".into());
        assert_eq!(
            reviewer_line(&ab),
            "hgemm_tiled: regressed, +3.1 % [+2.4, +3.8] (95 %, 10 rounds, resolution ±0.7 %); \
             counters: +12.0 % instructions, same DRAM bytes; hotspot: hgemm.cu:48"
        );

        let ab = combine(
            "k",
            Some(time(AbVerdict::Ambiguous, 1.9, 0.8, 3.1)),
            Some(counters(1e8)),
            GateSignal::Both,
        );
        assert_eq!(
            reviewer_line(&ab),
            "k: ambiguous, cannot tell at ±2 %: +1.9 %, interval [+0.8, +3.1] \
             (95 %, 10 rounds, resolution ±1.1 %); counters unchanged"
        );

        let ab = combine(
            "k",
            Some(time(AbVerdict::Unchanged, 0.1, -0.3, 0.5)),
            Some(counters(1.5e8)),
            GateSignal::Both,
        );
        assert!(reviewer_line(&ab)
            .starts_with("k: regressed (timing calls it unchanged, counters moved), +0.1 %"));

        let ab = combine("k", None, Some(counters(1e8)), GateSignal::Time);
        assert_eq!(reviewer_line(&ab), "k: ambiguous (no timing); counters unchanged");

        let mut short = time(AbVerdict::Ambiguous, 3.0, 2.0, 4.0);
        (short.rounds, short.enough_rounds) = (4, false);
        short.discarded = vec!["round 1: ...".into()];
        let ab = combine("k", Some(short), None, GateSignal::Both);
        assert_eq!(
            reviewer_line(&ab),
            "k: ambiguous, +3.0 % over only 4 rounds, range [+2.0, +4.0] (6 needed for a 95 % interval)"
        );
    }

    #[test]
    fn exit_codes_follow_the_worst_kernel_and_the_policy() {
        let with = |v: AbVerdict| {
            let mut ab = combine("k", None, None, GateSignal::Both);
            ab.verdict = v;
            ab
        };
        let (fail, pass) = (AmbiguousPolicy::Fail, AmbiguousPolicy::Pass);
        let all = [with(AbVerdict::Unchanged), with(AbVerdict::Ambiguous), with(AbVerdict::Regressed)];
        assert_eq!(exit_code(&all, fail), ExitCode::Regression);
        assert_eq!(exit_code(&all, pass), ExitCode::Regression);
        assert_eq!(exit_code(&all[..2], fail), ExitCode::Ambiguous);
        assert_eq!(exit_code(&all[..2], fail).code(), 14);
        assert_eq!(exit_code(&all[..2], pass), ExitCode::Success);
        assert_eq!(
            exit_code(&[with(AbVerdict::Improved), with(AbVerdict::Unchanged)], fail),
            ExitCode::Success
        );
        assert_eq!(exit_code(&[], fail), ExitCode::Success);
    }

    #[test]
    fn the_rule_names_its_numbers() {
        let md = decision_rule_markdown(2.0, GateSignal::Both);
        for needle in
            ["±2 %", "95 %", "3 % below", "beyond 50 %", "beyond 25 %", "more than 2 %", "Gate `both`", "14"]
        {
            assert!(md.contains(needle), "{needle} in\n{md}");
        }
        assert!(decision_rule_markdown(60.0, GateSignal::Time).contains("beyond 60 %"));
        assert!(decision_rule_markdown(2.0, GateSignal::Counters).contains("only the counters decide"));
    }
}
