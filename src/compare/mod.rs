//! Before/after: one profile (or saved baseline) against another, metric by metric.
//!
//! A [`Snapshot`] is what a comparison reads from a profile directory or from a baseline
//! (`profile/baselines/NAME/<kernel>/`, the same files): the metrics summary, the
//! verdict, the source hotspots, the harness timing when one was taken
//! (`details/timing.json`), and what the numbers depend on (GPU, ncu version, clock
//! control). [`compare`] is pure.
//!
//! This folder decides; it renders nothing. [`gate`] finds the baseline and refuses an
//! unfair comparison, [`baseline`] saves and finds baselines, [`exports`] turns results
//! into benchmark-history documents, and [`ab`] decides an A/B check from its rounds and
//! counters. Every page a comparison writes (`comparison/regression_report.md`,
//! `regression.json`, the A/B files, step summaries) is laid out in `crate::report`,
//! which imports this folder and never the reverse; the drivers that run a check or
//! merge shards ([`ab::run`], [`merge`]) call both.
//!
//! The duration decides whether a change is a regression. With harness timings on both
//! sides it is noise-aware: each side's median comes with an interval from its samples
//! (see [`TimingFacts::interval`]), and a change counts only when it is beyond the
//! tolerance *and* the intervals do not overlap. Without timings, ncu's
//! `gpu__time_duration.sum` of the profiled launch is compared against the tolerance.

pub mod ab;
pub mod baseline;
pub mod bisect;
pub mod cost;
mod explanation;
pub mod exports;
pub mod fix_loop;
pub mod floors;
pub mod gate;
pub mod snapshot;

use std::path::PathBuf;

use crate::units::approx as num;

use serde::{Deserialize, Serialize};

pub use snapshot::{counterpart, Conditions, HotLine, Identity, Snapshot};

/// `comparison/regression.json`'s shape version.
pub const SCHEMA_VERSION: u32 = 1;

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Better {
    Lower,
    Higher,
    /// No better direction on its own (a unit's share of peak; the duration decides).
    Neither,
}

/// The compared summary fields: (field, label, unit, better).
const COMPARED: &[(&str, &str, &str, Better)] = &[
    ("duration_ns", "duration (ncu, one launch)", "ns", Better::Lower),
    ("sm_throughput_pct", "SM throughput", "%", Better::Neither),
    ("memory_throughput_pct", "memory throughput", "%", Better::Neither),
    ("dram_throughput_pct", "DRAM throughput", "%", Better::Neither),
    ("l1tex_throughput_pct", "L1/TEX throughput", "%", Better::Neither),
    ("l2_throughput_pct", "L2 throughput", "%", Better::Neither),
    ("achieved_occupancy_pct", "achieved occupancy", "%", Better::Higher),
    ("theoretical_occupancy_pct", "theoretical occupancy", "%", Better::Higher),
    ("registers_per_thread", "registers per thread", "register", Better::Neither),
    // Neither: a change that removes instructions can halve the time and lower the IPC.
    ("ipc", "IPC", "inst/cycle", Better::Neither),
    ("dram_bytes", "DRAM bytes", "byte", Better::Lower),
    ("shared_bank_conflicts", "shared-memory bank conflicts", "conflict", Better::Lower),
    ("achieved_flops_per_s", "achieved FLOP/s", "FLOP/s", Better::Higher),
];

/// A metric's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Better beyond the tolerance.
    Improved,
    /// Worse beyond the tolerance.
    Regressed,
    /// Within the tolerance (or, for timings, within the noise).
    Unchanged,
    /// Moved beyond the tolerance, in a direction that is neither better nor worse alone.
    Changed,
    /// Not collected on one side.
    NotCompared,
}

impl Verdict {
    /// The word used in reports.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::Unchanged => "unchanged",
            Verdict::Changed => "changed",
            Verdict::NotCompared => "not compared",
        }
    }
}

/// One metric, both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricDelta {
    /// The summary field (`dram_throughput_pct`, `stall:long_scoreboard`, `hotspot:hgemm.cu:24`).
    pub metric: String,
    /// For people.
    pub label: String,
    /// Unit of both values.
    pub unit: String,
    /// Baseline value.
    pub baseline: Option<f64>,
    /// Current value.
    pub current: Option<f64>,
    /// `(current - baseline) / baseline`, percent.
    pub delta_pct: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
    /// A count's change priced in time (`cost`): it is `regressed` or `improved` only when
    /// the work it adds or removes, at the device's peak rate, is worth the tolerance's
    /// share of the baseline's duration. `None` for other metrics, or when the profiles
    /// lack the device's attributes (then the tolerance alone judged it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<cost::CountCost>,
}

/// How the duration was compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DurationDelta {
    /// `harness timing (hot, median)` or `ncu gpu__time_duration.sum`.
    pub source: String,
    /// Baseline, ns.
    pub baseline_ns: f64,
    /// Current, ns.
    pub current_ns: f64,
    /// Percent.
    pub delta_pct: f64,
    /// 95 % intervals of the medians, ns (harness timings only).
    pub baseline_interval_ns: Option<(f64, f64)>,
    /// See `baseline_interval_ns`.
    pub current_interval_ns: Option<(f64, f64)>,
    /// The verdict.
    pub verdict: Verdict,
}

/// One side, as the reports name it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    /// `baseline main`, `profile hgemm_...`.
    pub label: String,
    /// The directory read.
    pub dir: PathBuf,
    /// What was measured.
    pub identity: Identity,
    /// Under what conditions.
    pub conditions: Conditions,
    /// The kernel as ncu named it.
    pub kernel: String,
    /// Its classification, if known.
    pub classification: Option<String>,
}

/// `comparison/regression.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The noise band, percent.
    pub tolerance_pct: f64,
    /// The older side.
    pub baseline: Side,
    /// The newer side.
    pub current: Side,
    /// Conditions that differ, and other cautions.
    pub warnings: Vec<String>,
    /// The duration, which decides `regression`.
    pub duration: Option<DurationDelta>,
    /// `true` when the duration regressed.
    pub regression: bool,
    /// The summary metrics.
    pub metrics: Vec<MetricDelta>,
    /// Stall reasons (warps per issued instruction).
    pub stalls: Vec<MetricDelta>,
    /// Shares of the hottest source lines.
    pub hotspots: Vec<MetricDelta>,
    /// One sentence: the duration's change and the evidence that explains it.
    pub explanation: String,
    /// What became of the causes the baseline named: gone or still there, the saving
    /// measured against the one predicted, and what limits the kernel now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix_loop: Option<fix_loop::FixLoop>,
}

fn judge(b: Option<f64>, c: Option<f64>, better: Better, tolerance: f64) -> (Option<f64>, Verdict) {
    let (Some(b), Some(c)) = (b, c) else { return (None, Verdict::NotCompared) };
    let d = crate::units::delta_pct(b, c);
    let moved = match d {
        Some(d) => d.abs() > tolerance,
        None => c != 0.0,
    };
    let verdict = if !moved {
        Verdict::Unchanged
    } else {
        match (better, c > b) {
            (Better::Neither, _) => Verdict::Changed,
            (Better::Lower, false) | (Better::Higher, true) => Verdict::Improved,
            _ => Verdict::Regressed,
        }
    };
    (d, verdict)
}

fn side(s: &Snapshot) -> Side {
    Side {
        label: s.label.clone(),
        dir: s.dir.clone(),
        identity: s.identity.clone(),
        conditions: s.conditions.clone(),
        kernel: s.kernel.kernel.clone(),
        classification: s.verdict.as_ref().map(|v| v.classification.name().to_string()),
    }
}

/// Differences that make a comparison unfair: GPU, ncu version, clock control. `None`
/// sides (not recorded) are not counted as different.
pub fn condition_mismatches(base: &Snapshot, cur: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    let pairs = [
        ("GPU", &base.conditions.device, &cur.conditions.device),
        ("ncu version", &base.conditions.ncu_version, &cur.conditions.ncu_version),
        ("clock control", &base.conditions.clock_control, &cur.conditions.clock_control),
    ];
    for (what, b, c) in pairs {
        if let (Some(b), Some(c)) = (b, c) {
            if b != c {
                out.push(format!("{what} differs: `{b}` (baseline) vs `{c}` (current)"));
            }
        }
    }
    out
}

/// When `base` and `cur` are not the same kernel with the same case and arguments: how
/// they differ. Comparing them is refused unless forced, as for [`condition_mismatches`].
pub fn identity_mismatch(base: &Snapshot, cur: &Snapshot) -> Option<String> {
    (base.identity != cur.identity).then(|| {
        format!(
            "different kernels or arguments: `{}` (baseline) vs `{}` (current)",
            describe(&base.identity),
            describe(&cur.identity)
        )
    })
}

/// Compares `cur` against `base`. Pure.
pub fn compare(base: &Snapshot, cur: &Snapshot, tolerance_pct: f64) -> Comparison {
    let mut warnings = condition_mismatches(base, cur);
    if let Some(different) = identity_mismatch(base, cur) {
        warnings.push(format!("{different}; compared as asked"));
    }
    let duration = duration_delta(base, cur, tolerance_pct);
    let regression = duration.as_ref().is_some_and(|d| d.verdict == Verdict::Regressed);
    let mut comparison = Comparison {
        schema_version: SCHEMA_VERSION,
        tolerance_pct,
        baseline: side(base),
        current: side(cur),
        warnings,
        duration,
        regression,
        metrics: metric_deltas(base, cur, tolerance_pct),
        stalls: stall_deltas(base, cur, tolerance_pct),
        hotspots: hotspot_deltas(base, cur, tolerance_pct),
        explanation: String::new(),
        fix_loop: None,
    };
    comparison.explanation = explanation::explain(&comparison, base, cur);
    if let (Some(b), Some(c)) = (&base.verdict, &cur.verdict) {
        comparison.fix_loop = fix_loop::close(b, c, comparison.duration.as_ref().map(|d| d.delta_pct));
    }
    comparison
}

/// The summary fields that count work, and the unit that does it: their changes are
/// priced in time ([`cost`]).
const COUNTS: &[(&str, cost::Unit)] =
    &[("dram_bytes", cost::Unit::DramByte), ("shared_bank_conflicts", cost::Unit::SharedWavefront)];

/// The summary fields of [`COMPARED`], each judged in its better direction; a ratio or
/// rate must also move past its absolute floor ([`floors`]), and a count that moved beyond
/// the tolerance is judged again by its price in time.
fn metric_deltas(base: &Snapshot, cur: &Snapshot, tolerance_pct: f64) -> Vec<MetricDelta> {
    let rates = cost::PeakRates::from_summary(|f| base.kernel.get(f));
    COMPARED
        .iter()
        .map(|&(field, label, unit, better)| {
            let (b, c) = (base.kernel.get(field), cur.kernel.get(field));
            let (delta_pct, mut verdict) = judge(b, c, better, tolerance_pct);
            // A ratio or rate that moved less than its absolute floor did not change.
            if b.zip(c).is_some_and(|(b, c)| floors::below_floor(field, b, c)) {
                verdict = Verdict::Unchanged;
            }
            let priced = COUNTS.iter().find(|(f, _)| *f == field).and_then(|(_, u)| {
                cost::price(*u, b?, c?, base.kernel.get("duration_ns"), &rates, tolerance_pct)
            });
            if let Some(p) = &priced {
                if matches!(verdict, Verdict::Regressed | Verdict::Improved)
                    && !p.matters_up()
                    && !p.matters_down()
                {
                    verdict = Verdict::Unchanged;
                }
            }
            MetricDelta {
                metric: field.into(),
                label: label.into(),
                unit: unit.into(),
                baseline: b,
                current: c,
                delta_pct,
                verdict,
                cost: priced,
            }
        })
        .collect()
}

/// The eight stall reasons that weigh most on either side (a reason new in the current
/// profile counts as much as one that left), fewer warps per issue being better.
///
/// Warps per issue of all reasons add up to how long an instruction waits, so a reason's
/// change is `regressed` or `improved` only when it moves that total by the tolerance: the
/// same rule as for counts, a change judged by what it costs. `branch_resolving` going
/// from 0.027 to 0.030 is +11 % of itself and 0.01 % of a total of 25.
fn stall_deltas(base: &Snapshot, cur: &Snapshot, tolerance_pct: f64) -> Vec<MetricDelta> {
    let mut reasons: Vec<String> = Vec::new();
    for s in base.kernel.top_stalls.iter().chain(&cur.kernel.top_stalls) {
        if !reasons.contains(&s.reason) {
            reasons.push(s.reason.clone());
        }
    }
    let stall =
        |s: &Snapshot, r: &str| s.kernel.top_stalls.iter().find(|x| x.reason == r).map(|x| x.warps_per_issue);
    let weight = |r: &str| stall(base, r).unwrap_or(0.0).max(stall(cur, r).unwrap_or(0.0));
    reasons.sort_by(|a, b| weight(b).total_cmp(&weight(a)));
    let total: f64 = base.kernel.top_stalls.iter().map(|s| s.warps_per_issue).sum();
    reasons
        .iter()
        .take(8)
        .map(|r| {
            let (b, c) = (stall(base, r), stall(cur, r));
            let (delta_pct, mut verdict) = judge(b, c, Better::Lower, tolerance_pct);
            if let (Some(b), Some(c), Verdict::Regressed | Verdict::Improved) = (b, c, verdict) {
                if total > 0.0 && (c - b).abs() / total * 100.0 < tolerance_pct {
                    verdict = Verdict::Unchanged;
                }
            }
            MetricDelta {
                metric: format!("stall:{r}"),
                label: format!("stall {r}"),
                unit: "warps/issue".into(),
                baseline: b,
                current: c,
                delta_pct,
                verdict,
                cost: None,
            }
        })
        .collect()
}

/// A hot line on each side, either missing.
type HotRow<'a> = (Option<&'a HotLine>, Option<&'a HotLine>);

/// The three hottest lines of each side, each with its counterpart on the other side
/// (the same text, wherever the line moved; see `snapshot::counterpart`), each pair once.
fn hot_rows<'a>(base: &'a Snapshot, cur: &'a Snapshot) -> Vec<HotRow<'a>> {
    let mut rows: Vec<HotRow> = Vec::new();
    let seen = |rows: &[HotRow], b: Option<&HotLine>, c: Option<&HotLine>| {
        rows.iter().any(|(rb, rc)| {
            b.zip(*rb).is_some_and(|(x, y)| std::ptr::eq(x, y))
                || c.zip(*rc).is_some_and(|(x, y)| std::ptr::eq(x, y))
        })
    };
    for b in base.hotspots.iter().take(3) {
        let c = counterpart(&cur.hotspots, &base.hotspots, b);
        if !seen(&rows, Some(b), c) {
            rows.push((Some(b), c));
        }
    }
    for c in cur.hotspots.iter().take(3) {
        let b = counterpart(&base.hotspots, &cur.hotspots, c);
        if !seen(&rows, b, Some(c)) {
            rows.push((b, Some(c)));
        }
    }
    rows
}

/// The share of the samples of each [`hot_rows`] pair: changed when it moved by more
/// than the tolerance in percentage points.
fn hotspot_deltas(base: &Snapshot, cur: &Snapshot, tolerance_pct: f64) -> Vec<MetricDelta> {
    // A line absent from a side that has hot lines took none of its samples.
    let share = |s: &Snapshot, l: Option<&HotLine>| -> Option<f64> {
        (!s.hotspots.is_empty()).then(|| l.map_or(0.0, |l| l.pct))
    };
    hot_rows(base, cur)
        .iter()
        .map(|&(bl, cl)| {
            let loc = cl.or(bl).map(|l| l.location.clone()).unwrap_or_default();
            let (b, c) = (share(base, bl), share(cur, cl));
            let moved = b.zip(c).map(|(b, c)| (c - b).abs() > tolerance_pct);
            MetricDelta {
                metric: format!("hotspot:{loc}"),
                label: hot_label(bl, cl, &loc),
                unit: "%".into(),
                baseline: b,
                current: c,
                delta_pct: b.zip(c).and_then(|(b, c)| crate::units::delta_pct(b, c)),
                verdict: match moved {
                    None => Verdict::NotCompared,
                    Some(true) => Verdict::Changed,
                    Some(false) => Verdict::Unchanged,
                },
                cost: None,
            }
        })
        .collect()
}

/// `samples on hgemm.cu:48`, saying where the base had the line when it moved, or that
/// the change edited it.
fn hot_label(bl: Option<&HotLine>, cl: Option<&HotLine>, loc: &str) -> String {
    match (bl, cl) {
        (Some(b), Some(c)) if b.location != c.location => {
            format!(
                "samples on {} (base: line {})",
                c.location,
                b.line().map_or(b.location.clone(), |n| n.to_string())
            )
        }
        (Some(b), Some(c)) if b.source != c.source => format!("samples on {loc} (edited)"),
        _ => format!("samples on {loc}"),
    }
}

fn describe(id: &Identity) -> String {
    let mut s = id.kernel.clone();
    if let Some(c) = &id.case {
        s.push_str(&format!(" (case {c})"));
    }
    if !id.args.is_empty() {
        s.push_str(&format!(" args {}", id.args.join(" ")));
    }
    s
}

fn duration_delta(base: &Snapshot, cur: &Snapshot, tolerance: f64) -> Option<DurationDelta> {
    if let (Some(bt), Some(ct)) = (&base.timing, &cur.timing) {
        let (bi, ci) = (bt.interval(), ct.interval());
        let d = crate::units::delta_pct(bt.median_ns, ct.median_ns)?;
        let separated = ci.0 > bi.1 || ci.1 < bi.0;
        let verdict = if d.abs() <= tolerance || !separated {
            Verdict::Unchanged
        } else if d > 0.0 {
            Verdict::Regressed
        } else {
            Verdict::Improved
        };
        return Some(DurationDelta {
            source: format!(
                "harness timing ({}, median of {} vs {} samples)",
                ct.mode, bt.samples, ct.samples
            ),
            baseline_ns: bt.median_ns,
            current_ns: ct.median_ns,
            delta_pct: d,
            baseline_interval_ns: Some(bi),
            current_interval_ns: Some(ci),
            verdict,
        });
    }
    let (b, c) = (base.duration_ns()?, cur.duration_ns()?);
    let (d, verdict) = judge(Some(b), Some(c), Better::Lower, tolerance);
    Some(DurationDelta {
        source: "ncu gpu__time_duration.sum (one profiled launch)".into(),
        baseline_ns: b,
        current_ns: c,
        delta_pct: d?,
        baseline_interval_ns: None,
        current_interval_ns: None,
        verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judging_follows_direction_and_tolerance() {
        assert_eq!(judge(Some(100.0), Some(101.0), Better::Lower, 2.0).1, Verdict::Unchanged);
        assert_eq!(judge(Some(100.0), Some(103.0), Better::Lower, 2.0).1, Verdict::Regressed);
        assert_eq!(judge(Some(100.0), Some(97.0), Better::Lower, 2.0).1, Verdict::Improved);
        assert_eq!(judge(Some(50.0), Some(60.0), Better::Higher, 2.0).1, Verdict::Improved);
        assert_eq!(judge(Some(50.0), Some(60.0), Better::Neither, 2.0).1, Verdict::Changed);
        assert_eq!(judge(None, Some(60.0), Better::Neither, 2.0).1, Verdict::NotCompared);
        assert_eq!(judge(Some(0.0), Some(0.0), Better::Lower, 2.0).1, Verdict::Unchanged);
        assert_eq!(judge(Some(0.0), Some(5.0), Better::Lower, 2.0).1, Verdict::Regressed);
    }
}
