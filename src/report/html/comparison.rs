//! The comparison part of `report.html`: against a baseline (`comparison/regression.json`),
//! or an A/B check against a git revision (`comparison/ab.json`, with the two profiled
//! launches compared in `comparison/ab_profiles.json`): the verdict, the A/B interval
//! drawn against the tolerance, the metric and stall deltas, and the hot lines of both
//! sides next to each other.

use crate::compare::{Comparison, MetricDelta, Verdict};
use crate::units::{approx, duration, pct_fixed, pct_signed, pct_spread};

use super::kernel::width;
use super::load::{AbDocument, AbTime, HotRow};

/// The comparison, ready for the template.
#[derive(Debug, Clone, Default)]
pub struct ComparisonView {
    /// What was compared with what.
    pub heading: String,
    /// The verdict's word (`regressed`).
    pub verdict: String,
    /// Its style.
    pub verdict_css: String,
    /// One sentence: the change and what explains it.
    pub summary: String,
    /// What became of the baseline's causes (empty when it named none).
    pub fix_loop: String,
    /// Conditions that differ between the sides.
    pub warnings: Vec<String>,
    /// The A/B interval, for an A/B check.
    pub interval: Option<Interval>,
    /// An A/B check's counters.
    pub counters: Vec<DeltaRow>,
    /// The sides, what each is and how it was measured.
    pub sides: Vec<SideRow>,
    /// The metric deltas.
    pub metrics: Vec<DeltaRow>,
    /// The stall reasons' deltas.
    pub stalls: Vec<DeltaRow>,
    /// The hot lines of both sides.
    pub hot: Vec<HotPair>,
}

/// One row of a delta table.
#[derive(Debug, Clone)]
pub struct DeltaRow {
    /// What.
    pub label: String,
    /// The baseline's value.
    pub baseline: String,
    /// The current value.
    pub current: String,
    /// The change.
    pub delta: String,
    /// The verdict's word.
    pub verdict: String,
    /// Its style.
    pub css: String,
    /// Why it does or does not matter (a count's price in time).
    pub why: String,
}

/// One fact of both sides.
#[derive(Debug, Clone)]
pub struct SideRow {
    /// What.
    pub what: String,
    /// The baseline's.
    pub baseline: String,
    /// The current side's.
    pub current: String,
}

/// A hot line on both sides.
#[derive(Debug, Clone)]
pub struct HotPair {
    /// Which line, and how it moved or changed.
    pub label: String,
    /// Its code now, when the current side's hotspots have it.
    pub code: String,
    /// The baseline's share of samples.
    pub baseline: String,
    /// Its bar width.
    pub baseline_width: String,
    /// The current share of samples.
    pub current: String,
    /// Its bar width.
    pub current_width: String,
}

/// The A/B interval against the tolerance band, on a scale from `-range` to `+range`.
#[derive(Debug, Clone)]
pub struct Interval {
    /// `+428.1 % [+427.8, +428.5]`, with confidence, rounds and resolution.
    pub text: String,
    /// The tolerance band's left edge, SVG x.
    pub band_x: String,
    /// The band's width.
    pub band_w: String,
    /// Zero, SVG x.
    pub zero_x: String,
    /// The interval's ends, SVG x.
    pub lo_x: String,
    /// The interval's upper end, SVG x.
    pub hi_x: String,
    /// The estimate, SVG x.
    pub est_x: String,
    /// The scale's ends as labels.
    pub left: String,
    /// The scale's right end.
    pub right: String,
}

/// Where the interval figure's scale runs, in its SVG units.
const SCALE: (f64, f64) = (40.0, 520.0);

impl Interval {
    /// The interval of `t`, on a scale wide enough for it and for twice the tolerance, and
    /// at most ten tolerances wide (an end beyond is drawn at the edge).
    pub fn of(t: &AbTime) -> Interval {
        let range = t
            .lo_pct
            .abs()
            .max(t.hi_pct.abs())
            .max(2.0 * t.tolerance_pct)
            .min(10.0 * t.tolerance_pct.max(0.1));
        let x = |v: f64| {
            let c = v.clamp(-range, range);
            format!("{:.1}", SCALE.0 + (c + range) / (2.0 * range) * (SCALE.1 - SCALE.0))
        };
        let w = (SCALE.1 - SCALE.0) * t.tolerance_pct / range;
        Interval {
            text: format!(
                "{} [{}, {}] ({} confidence, {} rounds, resolution {})",
                pct_signed(t.estimate_pct, 1),
                pct_signed(t.lo_pct, 1),
                pct_signed(t.hi_pct, 1),
                pct_fixed(t.confidence * 100.0, 0),
                t.rounds,
                pct_spread(t.resolution_pct, 1)
            ),
            band_x: x(-t.tolerance_pct),
            band_w: format!("{w:.1}"),
            zero_x: x(0.0),
            lo_x: x(t.lo_pct),
            hi_x: x(t.hi_pct),
            est_x: x(t.estimate_pct),
            left: pct_signed(-range, 1),
            right: pct_signed(range, 1),
        }
    }
}

fn delta_rows(rows: &[MetricDelta]) -> Vec<DeltaRow> {
    rows.iter()
        .map(|m| {
            let v = |x: Option<f64>| match x {
                Some(x) if m.unit == "ns" => duration(x),
                Some(x) => format!("{} {}", approx(x), m.unit),
                None => "not collected".into(),
            };
            let why = match &m.cost {
                Some(c) if m.delta_pct.is_some_and(|d| d != 0.0) => c.explain(),
                _ => String::new(),
            };
            DeltaRow {
                label: m.label.clone(),
                baseline: v(m.baseline),
                current: v(m.current),
                delta: m.delta_pct.map(|d| pct_signed(d, 1)).unwrap_or_else(|| "-".into()),
                verdict: m.verdict.word().to_string(),
                css: css(m.verdict.word()),
                why,
            }
        })
        .collect()
}

/// The view of a before/after comparison `c`; `hot` are the current side's hotspots, for
/// the code of each hot line.
pub fn comparison_view(c: &Comparison, hot: &[HotRow]) -> ComparisonView {
    let (verdict, summary) = match &c.duration {
        Some(d) => (
            d.verdict.word().to_string(),
            format!(
                "{}: {} -> {} ({}). {}",
                d.source,
                duration(d.baseline_ns),
                duration(d.current_ns),
                pct_signed(d.delta_pct, 2),
                c.explanation
            ),
        ),
        None => (Verdict::NotCompared.word().to_string(), c.explanation.clone()),
    };
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "not recorded".into());
    let (b, n) = (&c.baseline, &c.current);
    ComparisonView {
        heading: format!("Against {}", b.label),
        verdict_css: css(&verdict),
        verdict,
        summary,
        fix_loop: c.fix_loop.as_ref().map(|l| l.text.clone()).unwrap_or_default(),
        warnings: c.warnings.clone(),
        interval: None,
        counters: Vec::new(),
        sides: [
            ("profile", b.label.clone(), n.label.clone()),
            ("kernel", b.kernel.clone(), n.kernel.clone()),
            ("verdict", opt(&b.classification), opt(&n.classification)),
            ("GPU", opt(&b.conditions.device), opt(&n.conditions.device)),
            ("ncu", opt(&b.conditions.ncu_version), opt(&n.conditions.ncu_version)),
            ("clock control", opt(&b.conditions.clock_control), opt(&n.conditions.clock_control)),
        ]
        .into_iter()
        .map(|(what, baseline, current)| SideRow { what: what.into(), baseline, current })
        .collect(),
        metrics: delta_rows(&c.metrics),
        stalls: delta_rows(&c.stalls),
        hot: hot_pairs(&c.hotspots, hot),
    }
}

fn hot_pairs(rows: &[MetricDelta], hot: &[HotRow]) -> Vec<HotPair> {
    let max = rows.iter().flat_map(|m| [m.baseline, m.current]).flatten().fold(0.0, f64::max);
    let share = |v: Option<f64>| v.map(|v| format!("{} %", approx(v))).unwrap_or_else(|| "-".into());
    rows.iter()
        .map(|m| {
            let location = m.metric.strip_prefix("hotspot:").unwrap_or(&m.metric);
            let code = hot
                .iter()
                .filter(|h| h.is_line())
                .find(|h| format!("{}:{}", h.file.rsplit('/').next().unwrap_or(&h.file), h.line) == location)
                .map(|h| h.source.clone())
                .unwrap_or_default();
            HotPair {
                label: m.label.clone(),
                code,
                baseline: share(m.baseline),
                baseline_width: width(m.baseline.unwrap_or(0.0), max),
                current: share(m.current),
                current_width: width(m.current.unwrap_or(0.0), max),
            }
        })
        .collect()
}

/// The view of an A/B check: its verdict, interval and counters, then the two profiled
/// launches compared (`profiles`), when both sides were profiled.
pub fn ab_view(ab: &AbDocument, profiles: Option<&Comparison>, hot: &[HotRow]) -> ComparisonView {
    let mut view = profiles.map(|c| comparison_view(c, hot)).unwrap_or_default();
    view.heading = format!("A/B check against base {}", ab.base);
    view.verdict = ab.result.verdict.name().to_string();
    view.verdict_css = css(&view.verdict);
    view.summary = ab.line.clone();
    view.interval = ab.result.time.as_ref().map(Interval::of);
    view.counters = ab
        .result
        .counters
        .iter()
        .flat_map(|c| &c.changes)
        .map(|ch| {
            let mark = if ch.gated {
                "gated"
            } else if ch.moved {
                "moved"
            } else {
                "unchanged"
            };
            DeltaRow {
                label: format!("{} ({})", ch.label, ch.metric),
                baseline: approx(ch.base),
                current: approx(ch.head),
                delta: match ch.change_pct {
                    Some(v) => pct_signed(v, 2),
                    None if ch.head == 0.0 => "none".into(),
                    None => "from 0".into(),
                },
                verdict: mark.into(),
                css: mark.into(),
                why: ch.why.clone().unwrap_or_default(),
            }
        })
        .collect();
    view
}

/// A verdict's word as a style name (`not compared` -> `not-compared`).
fn css(word: &str) -> String {
    word.replace(' ', "-")
}
