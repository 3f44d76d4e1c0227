//! Clock-independent counters of an A/B check: what the kernel did, not how long it took.
//!
//! Timing needs many rounds to see a few percent; a count of executed instructions or
//! memory sectors is the same on every run of the same code and input, so one ncu pass per
//! side shows a change in work exactly, whatever the clocks did. The counters come in
//! classes ([`CounterClass`]) that differ in how much they vary by themselves, and so in
//! when they have *moved* (worth telling a reviewer) and when they are *gated* (a
//! regression signal on their own). A moved counter gates only when its extra work, at
//! the device's peak rate for the unit that does it, would take at least the tolerance's
//! share of the base's duration (`compare::cost`, the one rule for counts). The caller
//! reads the values, the device's attributes and the base's duration from ncu's raw
//! pages; this module only compares them.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::compare::cost::{self, CountCost, PeakRates, Unit};
use crate::model::ab::AbVerdict;

/// The counters page's duration of the profiled launch: the base's is what a count's
/// change is priced against.
pub const DURATION: &str = "gpu__time_duration.sum";

/// How a counter behaves from run to run, which decides its thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CounterClass {
    /// Deterministic counts of work: identical on every run of the same code and input.
    Exact,
    /// Counts that depend on how warps happen to interleave: shared-memory bank conflicts
    /// (on an H200 they varied by up to 1.4 % between identical runs).
    Contended,
    /// Traffic that depends on what L2 holds when the kernel starts.
    Cache,
    /// Launch attributes: they explain a change, they are not a cost on their own.
    Launch,
    /// Elapsed cycles: a duration in clock ticks, reported only (timing gates time).
    Cycles,
}

/// One compared counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    /// ncu's metric name.
    pub metric: &'static str,
    /// What reviewers read.
    pub label: &'static str,
    /// Its class.
    pub class: CounterClass,
    /// The unit that does the counted work: what a change is priced at. `None` for counts
    /// that are not work (launch attributes, cycles).
    pub unit: Option<Unit>,
}

const fn counter(metric: &'static str, label: &'static str, class: CounterClass, unit: Unit) -> Counter {
    Counter { metric, label, class, unit: Some(unit) }
}

const fn attribute(metric: &'static str, label: &'static str, class: CounterClass) -> Counter {
    Counter { metric, label, class, unit: None }
}

/// Every compared counter, in report order.
pub const COUNTERS: &[Counter] = &[
    counter("smsp__inst_executed.sum", "instructions", CounterClass::Exact, Unit::WarpIssue),
    counter("smsp__thread_inst_executed.sum", "thread instructions", CounterClass::Exact, Unit::ThreadIssue),
    counter(
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "global load sectors",
        CounterClass::Exact,
        Unit::L1Sector,
    ),
    counter(
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
        "global store sectors",
        CounterClass::Exact,
        Unit::L1Sector,
    ),
    counter(
        "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
        "local load sectors",
        CounterClass::Exact,
        Unit::L1Sector,
    ),
    counter(
        "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
        "local store sectors",
        CounterClass::Exact,
        Unit::L1Sector,
    ),
    counter(
        "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
        "shared wavefronts",
        CounterClass::Exact,
        Unit::SharedWavefront,
    ),
    counter(
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
        "bank conflicts",
        CounterClass::Contended,
        Unit::SharedWavefront,
    ),
    counter("dram__bytes_read.sum", "DRAM bytes read", CounterClass::Cache, Unit::DramByte),
    counter("dram__bytes_write.sum", "DRAM bytes written", CounterClass::Cache, Unit::DramByte),
    counter("lts__t_sectors.sum", "L2 sectors", CounterClass::Cache, Unit::L2Sector),
    attribute("launch__registers_per_thread", "registers", CounterClass::Launch),
    attribute("launch__shared_mem_per_block_static", "static shared memory per block", CounterClass::Launch),
    attribute(
        "launch__shared_mem_per_block_dynamic",
        "dynamic shared memory per block",
        CounterClass::Launch,
    ),
    attribute("gpc__cycles_elapsed.max", "cycles", CounterClass::Cycles),
];

/// An exact counter has moved beyond 0.1 %: the counts are deterministic, so any change
/// is the code's, but a change this small (a loop epilogue, a guard) is not worth a
/// reviewer's line.
pub const EXACT_MOVED_PCT: f64 = 0.1;

/// A contended counter has moved beyond 5 %, and gates when it grows by more than 25 % (or
/// the tolerance, if larger) or appears from 0. Twelve A/A checks of the demo's tiled hgemm
/// on an H200 (same binary against itself) moved its bank conflicts by -0.5 % to +1.4 %;
/// a real conflict (a transposed tile) multiplied them by 1400.
pub const CONTENDED_MOVED_PCT: f64 = 5.0;
/// See [`CONTENDED_MOVED_PCT`].
pub const CONTENDED_GATE_MIN_PCT: f64 = 25.0;

/// A cache counter has moved beyond 20 %, and gates only when it grows by more than 50 %
/// (or the tolerance, if larger). What L2 holds when a kernel starts varies from run to
/// run: in twelve A/A checks of the tiled hgemm on an H200 (its inputs nearly fit in L2),
/// DRAM bytes read moved by -9.5 % to +16.3 % and L2 sectors by -1.2 % to +1.6 %. A first
/// gate at 10 % failed three of ten A/A checks on DRAM bytes alone.
pub const CACHE_MOVED_PCT: f64 = 20.0;
/// See [`CACHE_MOVED_PCT`].
pub const CACHE_GATE_MIN_PCT: f64 = 50.0;

/// Elapsed cycles have moved beyond 1 %; they are never gated, since the timing is the
/// measure of time and cycles follow the clock's own variation.
pub const CYCLES_MOVED_PCT: f64 = 1.0;

impl CounterClass {
    /// The growth (percent) beyond which a counter of this class has moved; launch
    /// attributes move on any change.
    pub fn moved_pct(self) -> f64 {
        match self {
            CounterClass::Exact => EXACT_MOVED_PCT,
            CounterClass::Contended => CONTENDED_MOVED_PCT,
            CounterClass::Cache => CACHE_MOVED_PCT,
            CounterClass::Launch => 0.0,
            CounterClass::Cycles => CYCLES_MOVED_PCT,
        }
    }

    /// The growth (percent) beyond which a counter of this class is a regression signal at
    /// tolerance `t`; `None` for classes that never gate. An exact counter also gates when
    /// it appears from 0 (spills appearing as local sectors, bank conflicts appearing).
    pub fn gate_pct(self, t: f64) -> Option<f64> {
        match self {
            CounterClass::Exact => Some(t.max(EXACT_MOVED_PCT)),
            CounterClass::Contended => Some(t.max(CONTENDED_GATE_MIN_PCT)),
            CounterClass::Cache => Some(t.max(CACHE_GATE_MIN_PCT)),
            CounterClass::Launch | CounterClass::Cycles => None,
        }
    }
}

/// One counter, both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterChange {
    /// ncu's metric name.
    pub metric: String,
    /// What reviewers read.
    pub label: String,
    /// Its class.
    pub class: CounterClass,
    /// The base revision's value.
    pub base: f64,
    /// The working tree's value.
    pub head: f64,
    /// `(head - base) / base`, percent; `None` when base is 0.
    pub change_pct: Option<f64>,
    /// Beyond the class's noise: worth telling a reviewer.
    pub moved: bool,
    /// Grew beyond the class's gate, by work worth the tolerance's share of the base's
    /// duration at the unit's peak rate: a regression signal.
    pub gated: bool,
    /// The change priced in time (`compare::cost`); `None` for launch attributes and
    /// cycles, or when the device's rates or the base's duration were not recorded.
    pub cost: Option<CountCost>,
    /// Why a moved counter did or did not gate, for a reviewer.
    pub why: Option<String>,
}

impl CounterChange {
    /// Shrank by more than the class's gate at tolerance `t`, by work worth the
    /// tolerance's share of the base's duration: evidence of less work.
    fn shrank(&self, t: f64) -> bool {
        matches!((self.class.gate_pct(t), self.change_pct), (Some(g), Some(c)) if c < -g)
            && self.cost.is_some_and(|c| c.matters_down())
    }

    /// How big the change is, for ordering: a counter appearing from 0 is the biggest.
    fn size(&self) -> f64 {
        self.change_pct.map_or(f64::INFINITY, f64::abs)
    }

    /// `+12.0 % instructions`, `+1 register`, `bank conflicts 0 -> 3.1e7`.
    fn phrase(&self) -> String {
        let delta = self.head - self.base;
        if self.metric == "launch__registers_per_thread" {
            let plural = if delta.abs() == 1.0 { "" } else { "s" };
            return format!("{delta:+.0} register{plural}");
        }
        if self.metric.starts_with("launch__shared_mem") {
            return format!("{delta:+.0} B {}", self.label);
        }
        let what = match self.change_pct {
            Some(c) if self.head != 0.0 => format!("{} {}", crate::units::pct_signed(c, 1), self.label),
            _ => format!("{} {} -> {}", self.label, short(self.base), short(self.head)),
        };
        match (self.gated, self.cost) {
            (true, Some(cost)) => format!("{what} ({})", cost.short()),
            _ => what,
        }
    }
}

/// A count for a phrase: whole numbers below 100 000 as they are, else `3.1e7`.
fn short(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e5 {
        format!("{v:.0}")
    } else {
        format!("{v:.1e}")
    }
}

/// Every counter compared, and the ones a side lacks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterChanges {
    /// The counters both sides have, in [`COUNTERS`]' order.
    pub changes: Vec<CounterChange>,
    /// Metrics of [`COUNTERS`] missing (or not a number) on either side: never gated.
    pub missing: Vec<String>,
    /// The tolerance the gates were set with, percent.
    pub tolerance_pct: f64,
}

/// Compares the counters of [`COUNTERS`] between `base` and `head` (metric name -> value;
/// the base's map also carries its duration, [`DURATION`], and the device attributes of
/// `cost::ATTRIBUTES`) at a tolerance of `tolerance_pct` percent.
pub fn compare_counters(
    base: &BTreeMap<String, f64>,
    head: &BTreeMap<String, f64>,
    tolerance_pct: f64,
) -> CounterChanges {
    let t = if tolerance_pct.is_finite() { tolerance_pct.max(0.0) } else { 0.0 };
    let rates = PeakRates::from_attributes(|a| base.get(a).copied());
    let base_ns = base.get(DURATION).copied();
    let mut changes = Vec::new();
    let mut missing = Vec::new();
    for c in COUNTERS {
        let value = |m: &BTreeMap<String, f64>| m.get(c.metric).copied().filter(|v| v.is_finite());
        let (Some(b), Some(h)) = (value(base), value(head)) else {
            missing.push(c.metric.to_string());
            continue;
        };
        let cost = c.unit.and_then(|u| cost::price(u, b, h, base_ns, &rates, t));
        changes.push(change_of(c, b, h, cost, t));
    }
    CounterChanges { changes, missing, tolerance_pct: t }
}

/// One counter's change: moved by its class's noise, gated by its class's gate and the
/// price of the extra work.
fn change_of(c: &Counter, b: f64, h: f64, cost: Option<CountCost>, t: f64) -> CounterChange {
    let change_pct = (b != 0.0).then(|| (h - b) / b.abs() * 100.0);
    let moved = match change_pct {
        Some(p) if c.class == CounterClass::Launch => p != 0.0,
        Some(p) => p.abs() > c.class.moved_pct(),
        None => h != 0.0,
    };
    let beyond_class = match (c.class.gate_pct(t), change_pct) {
        (Some(g), Some(p)) => p > g,
        (Some(_), None) => matches!(c.class, CounterClass::Exact | CounterClass::Contended) && h > 0.0,
        (None, _) => false,
    };
    let gated = beyond_class && cost.is_some_and(|c| c.matters_up());
    let why = c.class.gate_pct(t).filter(|_| moved).map(|g| match (cost, beyond_class) {
        (Some(cost), _) if h < b => format!("less work: {}", cost.explain()),
        (Some(cost), false) => format!(
            "not gated: within this counter's run-to-run variation (gates beyond {g} %); {}",
            cost.explain()
        ),
        (None, false) => {
            format!("not gated: within this counter's run-to-run variation (gates beyond {g} %)")
        }
        (Some(cost), true) if gated => format!("gated: {}", cost.explain()),
        (Some(cost), true) => format!("not gated: {}", cost.explain()),
        (None, true) => {
            "not gated: not priced (the device's rates or the base's duration were not recorded)".to_string()
        }
    });
    CounterChange {
        metric: c.metric.to_string(),
        label: c.label.to_string(),
        class: c.class,
        base: b,
        head: h,
        change_pct,
        moved,
        gated,
        cost,
        why,
    }
}

impl CounterChanges {
    /// Regressed when any counter is gated; improved when an exact or cache counter shrank
    /// by more than its gate and none is gated; ambiguous when no exact or cache counter
    /// was compared at all (nothing to judge the work by); else unchanged.
    pub fn verdict(&self) -> AbVerdict {
        let judged = |c: &&CounterChange| {
            matches!(c.class, CounterClass::Exact | CounterClass::Contended | CounterClass::Cache)
        };
        if self.changes.iter().any(|c| c.gated) {
            AbVerdict::Regressed
        } else if self.changes.iter().any(|c| c.shrank(self.tolerance_pct)) {
            AbVerdict::Improved
        } else if !self.changes.iter().any(|c| judged(&c)) {
            AbVerdict::Ambiguous
        } else {
            AbVerdict::Unchanged
        }
    }

    /// The moved counters for a reviewer, gated ones first, then biggest change first:
    /// `bank conflicts 0 -> 3.1e7, +12.0 % instructions, +1 register, same DRAM bytes`.
    /// `same DRAM bytes` when the DRAM counters were compared and did not move;
    /// `counters unchanged` when nothing moved.
    pub fn explain(&self) -> String {
        if self.changes.is_empty() {
            return "no counters on both sides".to_string();
        }
        let mut moved: Vec<&CounterChange> = self.changes.iter().filter(|c| c.moved).collect();
        if moved.is_empty() {
            return "counters unchanged".to_string();
        }
        moved.sort_by(|a, b| b.gated.cmp(&a.gated).then(b.size().total_cmp(&a.size())));
        let mut parts: Vec<String> = moved.iter().map(|c| c.phrase()).collect();
        let mut dram = self.changes.iter().filter(|c| c.metric.starts_with("dram__")).peekable();
        if dram.peek().is_some() && dram.all(|c| !c.moved) {
            parts.push("same DRAM bytes".to_string());
        }
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plausible tiled GEMM's counters on an H200: 500 us, and the device attributes
    /// ncu writes into every raw page.
    fn typical() -> BTreeMap<String, f64> {
        [
            ("gpu__time_duration.sum", 500_000.0),
            ("device__attribute_multiprocessor_count", 132.0),
            ("device__attribute_clock_rate", 1_980_000.0),
            ("device__attribute_num_schedulers_per_multiprocessor", 4.0),
            ("device__attribute_max_ipc_per_scheduler", 1.0),
            ("device__attribute_warp_size", 32.0),
            ("device__attribute_memory_clock_rate", 3_201_000.0),
            ("device__attribute_global_memory_bus_width", 6016.0),
            ("device__attribute_l2s_count", 96.0),
            ("smsp__inst_executed.sum", 1.2e8),
            ("smsp__thread_inst_executed.sum", 3.8e9),
            ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 6.7e7),
            ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 4.2e6),
            ("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", 0.0),
            ("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", 0.0),
            ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", 5.1e7),
            ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", 0.0),
            ("dram__bytes_read.sum", 1.0e8),
            ("dram__bytes_write.sum", 3.4e7),
            ("lts__t_sectors.sum", 9.0e7),
            ("launch__registers_per_thread", 128.0),
            ("launch__shared_mem_per_block_static", 16384.0),
            ("launch__shared_mem_per_block_dynamic", 0.0),
            ("gpc__cycles_elapsed.max", 2.0e6),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    fn with(changes: &[(&str, f64)]) -> BTreeMap<String, f64> {
        let mut m = typical();
        for &(k, v) in changes {
            m.insert(k.to_string(), v);
        }
        m
    }

    fn change<'a>(c: &'a CounterChanges, metric: &str) -> &'a CounterChange {
        c.changes.iter().find(|c| c.metric == metric).unwrap()
    }

    #[test]
    fn the_same_counters_are_unchanged() {
        let c = compare_counters(&typical(), &typical(), 2.0);
        assert_eq!(c.changes.len(), COUNTERS.len());
        assert!(c.missing.is_empty());
        assert_eq!(c.verdict(), AbVerdict::Unchanged);
        assert_eq!(c.explain(), "counters unchanged");
    }

    #[test]
    fn twelve_percent_more_instructions_is_gated() {
        let c = compare_counters(&typical(), &with(&[("smsp__inst_executed.sum", 1.344e8)]), 2.0);
        let i = change(&c, "smsp__inst_executed.sum");
        assert!(i.moved && i.gated);
        assert!((i.change_pct.unwrap() - 12.0).abs() < 1e-9);
        assert_eq!(c.verdict(), AbVerdict::Regressed);
        assert_eq!(
            c.explain(),
            "+12.0 % instructions (2.8 % of the base's time at the issue rate), same DRAM bytes"
        );
        // Within the tolerance: moved, not gated.
        let c = compare_counters(&typical(), &with(&[("smsp__inst_executed.sum", 1.218e8)]), 2.0);
        let i = change(&c, "smsp__inst_executed.sum");
        assert!(i.moved && !i.gated);
        assert_eq!(c.verdict(), AbVerdict::Unchanged);
    }

    /// A counter that fell to 0 reads "from -> 0", not "-100 %" (the DRAM bytes written of
    /// a recorded unchanged bisect step).
    #[test]
    fn a_counter_that_fell_to_zero_reads_as_its_two_counts() {
        let c = compare_counters(&typical(), &with(&[("dram__bytes_write.sum", 0.0)]), 2.0);
        let w = change(&c, "dram__bytes_write.sum");
        assert_eq!(w.change_pct, Some(-100.0));
        assert!(w.phrase().ends_with("3.4e7 -> 0"), "{}", w.phrase());
    }

    #[test]
    fn dram_noise_is_not_gated() {
        // +16 %, as an A/A check of an L2-resident kernel showed: neither moved nor gated.
        let c = compare_counters(&typical(), &with(&[("dram__bytes_read.sum", 1.16e8)]), 2.0);
        let d = change(&c, "dram__bytes_read.sum");
        assert!(!d.moved && !d.gated, "{d:?}");
        assert_eq!(c.verdict(), AbVerdict::Unchanged);
        let c = compare_counters(&typical(), &with(&[("dram__bytes_read.sum", 1.3e8)]), 2.0);
        assert!(change(&c, "dram__bytes_read.sum").moved && !change(&c, "dram__bytes_read.sum").gated);
        assert_eq!(c.explain(), "+30.0 % DRAM bytes read");
        // Beyond 50 %: gated.
        let c = compare_counters(&typical(), &with(&[("dram__bytes_read.sum", 1.55e8)]), 2.0);
        assert_eq!(c.verdict(), AbVerdict::Regressed);
        // DRAM appearing from 0 is traffic L2 happened not to hold: moved, not gated.
        let c = compare_counters(
            &with(&[("dram__bytes_write.sum", 0.0)]),
            &with(&[("dram__bytes_write.sum", 4096.0)]),
            2.0,
        );
        assert!(!change(&c, "dram__bytes_write.sum").gated);
        assert_eq!(c.explain(), "DRAM bytes written 0 -> 4096");
    }

    /// Growth below a class's gate never gates, even when the extra work would matter:
    /// bank conflicts +20 % (gate 25 %) and DRAM bytes +40 % (gate 50 %), each worth well
    /// over the tolerance's share of the base's time. Just past the gate, both do.
    #[test]
    fn growth_within_a_class_s_gate_never_gates_however_costly() {
        let base = with(&[
            ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", 1.0e8),
            ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", 2.0e8),
            ("dram__bytes_read.sum", 1.0e9),
        ]);
        let head = |conflicts: f64, dram: f64| {
            let mut h = base.clone();
            h.insert("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum".into(), conflicts);
            h.insert("dram__bytes_read.sum".into(), dram);
            h
        };
        let c = compare_counters(&base, &head(1.2e8, 1.4e9), 2.0);
        for m in ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "dram__bytes_read.sum"] {
            let ch = change(&c, m);
            assert!(ch.moved && !ch.gated, "{ch:?}");
            assert!(ch.cost.is_some_and(|c| c.matters_up()), "the extra work matters: {ch:?}");
        }
        assert_eq!(c.verdict(), AbVerdict::Unchanged);
        let c = compare_counters(&base, &head(1.26e8, 1.51e9), 2.0);
        for m in ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "dram__bytes_read.sum"] {
            assert!(change(&c, m).gated, "{:?}", change(&c, m));
        }
    }

    #[test]
    fn bank_conflicts_and_spills_appearing_are_gated() {
        let c = compare_counters(
            &typical(),
            &with(&[
                ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", 3.1e7),
                ("smsp__inst_executed.sum", 1.344e8),
                ("launch__registers_per_thread", 129.0),
            ]),
            2.0,
        );
        let b = change(&c, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum");
        assert!(b.gated && b.change_pct.is_none());
        assert_eq!(c.verdict(), AbVerdict::Regressed);
        assert_eq!(
            c.explain(),
            "bank conflicts 0 -> 3.1e7 (23.7 % of the base's time at shared-memory bandwidth), \
             +12.0 % instructions (2.8 % of the base's time at the issue rate), +1 register, same DRAM bytes"
        );

        // Spills appearing gate when their traffic is worth the tolerance: 8e7 local
        // sectors are 19 us at L1 bandwidth, 3.8 % of the base's 500 us ...
        let c = compare_counters(
            &typical(),
            &with(&[("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", 8.0e7)]),
            2.0,
        );
        assert!(change(&c, "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum").gated);
        // ... and 2048 of them (half a nanosecond) are reported, not gated, with the reason.
        let c = compare_counters(
            &typical(),
            &with(&[("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", 2048.0)]),
            2.0,
        );
        let spill = change(&c, "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum");
        assert!(spill.moved && !spill.gated);
        assert_eq!(
            spill.why.as_deref(),
            Some(
                "not gated: 0 ns at L1 bandwidth, 0.00 % of the base's 500.00 µs (under the 2.0 % tolerance)"
            )
        );
        assert_eq!(c.verdict(), AbVerdict::Unchanged);
    }

    #[test]
    fn cache_traffic_of_a_compute_kernel_never_gates() {
        // The false alarm this rule ends: an untouched half-precision FMA kernel whose few
        // hundred DRAM bytes moved by +600 % between two runs of the same code.
        let fma = with(&[("dram__bytes_read.sum", 256.0), ("dram__bytes_write.sum", 256.0)]);
        let c = compare_counters(
            &fma,
            &with(&[("dram__bytes_read.sum", 1792.0), ("dram__bytes_write.sum", 0.0)]),
            2.0,
        );
        let d = change(&c, "dram__bytes_read.sum");
        assert!(d.moved && !d.gated, "{d:?}");
        assert!(d.why.as_deref().unwrap().starts_with("not gated: 0 ns at DRAM bandwidth"), "{d:?}");
        assert_eq!(c.verdict(), AbVerdict::Unchanged);
    }

    #[test]
    fn without_rates_or_duration_nothing_gates() {
        let mut base = typical();
        base.remove("gpu__time_duration.sum");
        let c = compare_counters(&base, &with(&[("smsp__inst_executed.sum", 2.4e8)]), 2.0);
        let i = change(&c, "smsp__inst_executed.sum");
        assert!(i.moved && !i.gated && i.cost.is_none());
        assert!(i.why.as_deref().unwrap().contains("not priced"), "{i:?}");
        assert_eq!(c.verdict(), AbVerdict::Unchanged);
    }

    #[test]
    fn launch_attributes_move_but_never_gate() {
        let c = compare_counters(&typical(), &with(&[("launch__registers_per_thread", 129.0)]), 2.0);
        let r = change(&c, "launch__registers_per_thread");
        assert!(r.moved && !r.gated);
        assert_eq!(c.verdict(), AbVerdict::Unchanged);
        assert_eq!(c.explain(), "+1 register, same DRAM bytes");

        let c = compare_counters(
            &typical(),
            &with(&[
                ("launch__registers_per_thread", 124.0),
                ("launch__shared_mem_per_block_dynamic", 8192.0),
            ]),
            2.0,
        );
        assert_eq!(c.explain(), "+8192 B dynamic shared memory per block, -4 registers, same DRAM bytes");
        // Cycles: reported, never gated.
        let c = compare_counters(&typical(), &with(&[("gpc__cycles_elapsed.max", 3.0e6)]), 2.0);
        assert!(!change(&c, "gpc__cycles_elapsed.max").gated);
        assert_eq!(c.explain(), "+50.0 % cycles, same DRAM bytes");
    }

    #[test]
    fn less_work_is_an_improvement() {
        // 1.34e8 fewer global load sectors: 32 us at L1 bandwidth, 6.4 % of the base.
        let loads = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";
        let base = with(&[(loads, 2.68e8)]);
        let c = compare_counters(&base, &with(&[(loads, 1.34e8)]), 2.0);
        assert_eq!(c.verdict(), AbVerdict::Improved);
        assert_eq!(c.explain(), "-50.0 % global load sectors, same DRAM bytes");
        // Halving a count whose work is worth 0.8 % of the time is no improvement.
        let c = compare_counters(&typical(), &with(&[(loads, 3.35e7)]), 2.0);
        assert_eq!(c.verdict(), AbVerdict::Unchanged);
        // ... and an improvement gives way to something gated.
        let c = compare_counters(
            &base,
            &with(&[(loads, 1.34e8), ("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", 8.0e7)]),
            2.0,
        );
        assert_eq!(c.verdict(), AbVerdict::Regressed);
    }

    #[test]
    fn a_missing_counter_is_listed_and_never_gated() {
        let mut head = with(&[("smsp__inst_executed.sum", 2.4e8)]);
        head.remove("smsp__inst_executed.sum");
        head.insert("dram__bytes_read.sum".into(), f64::NAN);
        let c = compare_counters(&typical(), &head, 2.0);
        assert_eq!(c.missing, vec!["smsp__inst_executed.sum", "dram__bytes_read.sum"]);
        assert_eq!(c.verdict(), AbVerdict::Unchanged);
        // Nothing to judge the work by.
        let c = compare_counters(&BTreeMap::new(), &typical(), 2.0);
        assert_eq!(c.missing.len(), COUNTERS.len());
        assert_eq!(c.verdict(), AbVerdict::Ambiguous);
        assert_eq!(c.explain(), "no counters on both sides");
    }

    #[test]
    fn counts_read_short() {
        assert_eq!(short(0.0), "0");
        assert_eq!(short(4096.0), "4096");
        // The bound: 99 999 as it is, 100 000 in the short form.
        assert_eq!(short(99_999.0), "99999");
        assert_eq!(short(1e5), "1.0e5");
        assert_eq!(short(3.1e7), "3.1e7");
        assert_eq!(short(1.234e8), "1.2e8");
    }
}
