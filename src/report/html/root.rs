//! The pages of a profiles root: `index.html` (every profile: a sortable table of kernel,
//! verdict, cause, predicted saving, duration and change against the baseline, and a bar
//! chart of GPU time per kernel) and, when profiles carry an A/B check, `ab.html` (each
//! kernel's interval against the tolerance). Written with `index.md` and `index.json`,
//! from the same rows and each profile's own files.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use askama::Template;
use serde::Deserialize;

use crate::analyze::rules::BottleneckDecision;
use crate::compare::Comparison;
use crate::model::verdict::{Classification, Confidence};
use crate::profile::fs::{read_json, write_atomic};
use crate::profile::html::{ab_html_path, index_html_path, report_html_link};
use crate::profile::ProfileDir;
use crate::units::{duration, grouped, pct_signed, value};

use super::comparison::Interval;
use super::kernel::{width, Bar};
use super::load::AbDocument;

/// One kernel of one profile, as the index lists it (`crate::report::index` builds these
/// from its rows).
#[derive(Debug, Clone, PartialEq)]
pub struct IndexRow {
    /// The profile directory's name.
    pub profile: String,
    /// The kernel.
    pub kernel: String,
    /// The verdict.
    pub classification: Classification,
    /// Its confidence.
    pub confidence: Confidence,
    /// The cause a limiter named, if any.
    pub limiter: Option<String>,
    /// Median duration, ns.
    pub duration_ns: Option<f64>,
}

/// One row of the index page.
#[derive(Debug, Clone)]
struct Row {
    profile: String,
    link: String,
    has_report: bool,
    kernel: String,
    verdict: String,
    confidence: String,
    cause: String,
    saving: String,
    saving_key: String,
    duration: String,
    duration_key: String,
    change: String,
    change_key: String,
    change_css: String,
}

/// `index.html`.
#[derive(Template)]
#[template(path = "html/index.html")]
struct IndexPage {
    heading: Vec<String>,
    rows: Vec<Row>,
    chart_note: String,
    bars: Vec<Bar>,
    ab: bool,
}

/// One kernel of the A/B page.
#[derive(Debug, Clone)]
struct AbRow {
    kernel: String,
    link: String,
    verdict: String,
    change_key: String,
    interval: Option<Interval>,
    decided_by: String,
    gated: String,
    hotspot: String,
    line: String,
}

/// `ab.html`.
#[derive(Template)]
#[template(path = "html/ab.html")]
struct AbPage {
    bases: String,
    rows: Vec<AbRow>,
}

/// What one profile adds to its rows: the saving per kernel, its comparison, its census.
#[derive(Default)]
struct Extras {
    has_report: bool,
    savings: BTreeMap<String, f64>,
    ab: Option<AbDocument>,
    comparison: Option<Comparison>,
    census: Vec<Candidate>,
}

/// One kernel of a launch census (`breakdown.json`, or `details/kernel_candidates.json` of a
/// profile made before the breakdown).
#[derive(Debug, Clone, Deserialize)]
struct Candidate {
    kernel: String,
    launches: usize,
    total_duration_ns: f64,
}

#[derive(Deserialize)]
struct Census {
    candidates: Vec<Candidate>,
}

fn read_extras(root: &Path, profile: &str) -> Extras {
    let dir = ProfileDir::at(root.join(profile));
    let savings = dir
        .read_bottleneck_decision::<BottleneckDecision>()
        .ok()
        .flatten()
        .map(|d| {
            d.kernels.into_iter().filter_map(|v| Some((v.kernel, v.limiter?.predicted_saving_pct?))).collect()
        })
        .unwrap_or_default();
    Extras {
        has_report: dir.report_html_path().is_file(),
        savings,
        ab: read_json(&dir.ab_result_path()).ok().flatten(),
        comparison: read_json(&dir.regression_json_path()).ok().flatten(),
        census: census_of(&dir),
    }
}

/// The kernels of a profile's census: its breakdown, else (a profile made before the
/// breakdown) its `kernel_candidates.json`; none where no census ran.
fn census_of(dir: &ProfileDir) -> Vec<Candidate> {
    if let Ok(Some(b)) = dir.read_breakdown() {
        return b
            .kernels
            .into_iter()
            .map(|r| Candidate { kernel: r.kernel, launches: r.launches, total_duration_ns: r.total_ns })
            .collect();
    }
    read_json::<Census>(&dir.kernel_candidates_path())
        .ok()
        .flatten()
        .map(|c| c.candidates)
        .unwrap_or_default()
}

/// The change against the baseline: an A/B check's estimate and interval, else a
/// comparison's duration change. (text, sort key, style)
fn change(e: &Extras) -> (String, String, String) {
    if let Some(ab) = &e.ab {
        let verdict = ab.result.verdict.name();
        return match &ab.result.time {
            Some(t) => (
                format!(
                    "{} {} [{}, {}] against {}",
                    verdict,
                    pct_signed(t.estimate_pct, 1),
                    pct_signed(t.lo_pct, 1),
                    pct_signed(t.hi_pct, 1),
                    ab.base
                ),
                format!("{}", t.estimate_pct),
                verdict.into(),
            ),
            None => (format!("{verdict} against {}", ab.base), String::new(), verdict.into()),
        };
    }
    match e.comparison.as_ref().and_then(|c| c.duration.as_ref().map(|d| (c, d))) {
        Some((c, d)) => (
            format!("{} {} against {}", d.verdict.word(), pct_signed(d.delta_pct, 1), c.baseline.label),
            format!("{}", d.delta_pct),
            d.verdict.word().replace(' ', "-"),
        ),
        None => ("-".into(), String::new(), String::new()),
    }
}

/// Writes `index.html` for the rows of `root`'s index, under the heading lines of the
/// index (the shard that made it, or the shards merged into it), and `ab.html` when a
/// listed profile carries an A/B check.
pub fn write(root: &Path, rows: &[IndexRow], heading: &[String]) -> Result<()> {
    let mut extras: BTreeMap<&str, Extras> = BTreeMap::new();
    for r in rows {
        extras.entry(r.profile.as_str()).or_insert_with(|| read_extras(root, &r.profile));
    }
    let views: Vec<Row> = rows.iter().map(|r| row(r, &extras[r.profile.as_str()])).collect();
    let (chart_note, bars) = bars(rows, &extras);
    let ab_rows = ab_rows(rows, &extras);
    let page =
        IndexPage { heading: heading.to_vec(), rows: views, chart_note, bars, ab: !ab_rows.is_empty() };
    write_atomic(&index_html_path(root), &crate::shell::printable(&page.render()?))?;
    if !ab_rows.is_empty() {
        let mut bases: Vec<&str> = Vec::new();
        for e in extras.values().filter_map(|e| e.ab.as_ref()) {
            if !bases.contains(&e.base.as_str()) {
                bases.push(&e.base);
            }
        }
        let page = AbPage { bases: bases.join(", "), rows: ab_rows };
        write_atomic(&ab_html_path(root), &crate::shell::printable(&page.render()?))?;
    }
    Ok(())
}

fn row(r: &IndexRow, e: &Extras) -> Row {
    let saving = e.savings.get(&r.kernel).copied();
    let (change, change_key, change_css) = change(e);
    Row {
        profile: r.profile.clone(),
        link: report_html_link(&r.profile),
        has_report: e.has_report,
        kernel: r.kernel.clone(),
        verdict: r.classification.name().to_string(),
        confidence: r.confidence.name().to_string(),
        cause: r.limiter.clone().unwrap_or_else(|| "-".into()),
        saving: match (saving, &r.limiter) {
            (Some(s), _) => format!("{} %", value(s)),
            (None, Some(_)) => "not priced".into(),
            (None, None) => "-".into(),
        },
        saving_key: saving.map(|s| s.to_string()).unwrap_or_default(),
        duration: r.duration_ns.map(duration).unwrap_or_else(|| "-".into()),
        duration_key: r.duration_ns.map(|d| d.to_string()).unwrap_or_default(),
        change,
        change_key,
        change_css,
    }
}

/// The most bars the chart draws.
const MAX_BARS: usize = 40;

/// GPU time per kernel: from the launch censuses when a profile has one (the newest
/// profile's figure for each kernel), else each profiled kernel's median duration.
fn bars(rows: &[IndexRow], extras: &BTreeMap<&str, Extras>) -> (String, Vec<Bar>) {
    let mut seen: Vec<(String, f64, String)> = Vec::new();
    let mut from_census = false;
    for r in rows {
        for c in &extras[r.profile.as_str()].census {
            from_census = true;
            if !seen.iter().any(|(k, _, _)| *k == c.kernel) {
                let text = format!(
                    "{} over {} launch(es)",
                    duration(c.total_duration_ns),
                    grouped(c.launches as f64)
                );
                seen.push((c.kernel.clone(), c.total_duration_ns, text));
            }
        }
    }
    let note = if from_census {
        "GPU time per kernel over every launch of its program, from the launch census (durations only)."
    } else {
        for r in rows {
            if let Some(d) = r.duration_ns.filter(|_| !seen.iter().any(|(k, _, _)| *k == r.kernel)) {
                seen.push((r.kernel.clone(), d, format!("{} per launch (median)", duration(d))));
            }
        }
        "Median duration of each profiled kernel's launch; no launch census was taken."
    };
    seen.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let max = seen.first().map_or(0.0, |s| s.1);
    let bars = seen
        .into_iter()
        .take(MAX_BARS)
        .map(|(label, v, text)| Bar { label, value: text, width: width(v, max) })
        .collect();
    (note.to_string(), bars)
}

fn ab_rows(rows: &[IndexRow], extras: &BTreeMap<&str, Extras>) -> Vec<AbRow> {
    let mut out = Vec::new();
    let mut listed: Vec<&str> = Vec::new();
    for r in rows {
        let Some(ab) = extras[r.profile.as_str()].ab.as_ref() else { continue };
        if listed.contains(&r.profile.as_str()) {
            continue;
        }
        listed.push(&r.profile);
        let gated: Vec<&str> = ab
            .result
            .counters
            .iter()
            .flat_map(|c| &c.changes)
            .filter(|c| c.gated)
            .map(|c| c.label.as_str())
            .collect();
        out.push(AbRow {
            kernel: ab.result.kernel.clone(),
            link: report_html_link(&r.profile),
            verdict: ab.result.verdict.name().to_string(),
            change_key: ab.result.time.as_ref().map(|t| t.estimate_pct.to_string()).unwrap_or_default(),
            interval: ab.result.time.as_ref().map(Interval::of),
            decided_by: ab.result.decided_by.clone().unwrap_or_default(),
            gated: gated.join(", "),
            hotspot: ab.result.hotspot.clone().unwrap_or_default(),
            line: ab.line.clone(),
        });
    }
    out
}
