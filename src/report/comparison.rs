//! The pages of a before/after comparison: `comparison/regression_report.md` and
//! `comparison/regression.json` (and, when asked, `comparison/comparison.png`) in the
//! current profile, plus the step summary of a `check` run.
//!
//! The comparison itself, and whether to refuse it, is decided in `crate::compare`;
//! this module only lays the result out and writes it, so a report can be rendered again
//! from the same `Comparison` at any time. `ops::check` compares as the gate says, then
//! writes these pages.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::analyze::hotspots::{Hotspot, SourceKind};
use crate::compare::gate::GateResult;
use crate::compare::{Comparison, DurationDelta, MetricDelta, Side, Snapshot, Verdict};
use crate::profile::fs::{write_atomic, write_atomic_bytes};
use crate::profile::ProfileDir;
use crate::report::visual::{self, VisualInput};
use crate::units::{self, approx as num};

use super::md;

/// `comparison/regression_report.md`.
pub fn render_markdown(c: &Comparison) -> String {
    let mut md = String::new();
    md.push_str(&format!(
        "# Comparison: {} vs {}\n\n",
        md::text(&c.current.label),
        md::text(&c.baseline.label)
    ));
    md.push_str(&format!("**{}**\n\n", c.explanation));
    if let Some(l) = &c.fix_loop {
        md.push_str(&format!("**The fix loop**: {}\n\n", l.text));
    }
    if c.regression {
        md.push_str(&format!("**Regression** beyond the tolerance of {} %.\n\n", c.tolerance_pct));
    }
    for w in &c.warnings {
        md.push_str(&format!("> **Warning:** {w}\n\n"));
    }
    sides_table(&mut md, &c.baseline, &c.current);
    if let Some(d) = &c.duration {
        duration_section(&mut md, d);
    }
    metric_table(&mut md, "Metrics", &c.metrics);
    metric_table(&mut md, "Stall reasons", &c.stalls);
    metric_table(&mut md, "Hotspot shares", &c.hotspots);
    md.push_str(
        "Throughput shares (SM, memory, DRAM, L1/TEX, L2) have no better direction on their own: \
         they say `changed`, and the duration decides.\n",
    );
    md
}

/// What each side is and under which conditions it was measured.
fn sides_table(md: &mut String, b: &Side, c: &Side) {
    md.push_str("| | baseline | current |\n|---|---|---|\n");
    md.push_str(&format!("| profile | {} | {} |\n", md::cell(&b.label), md::cell(&c.label)));
    md.push_str(&format!("| kernel | {} | {} |\n", md::cell_code(&b.kernel), md::cell_code(&c.kernel)));
    let opt = |v: &Option<String>| md::cell(v.as_deref().unwrap_or("not recorded"));
    md.push_str(&format!("| verdict | {} | {} |\n", opt(&b.classification), opt(&c.classification)));
    md.push_str(&format!("| GPU | {} | {} |\n", opt(&b.conditions.device), opt(&c.conditions.device)));
    md.push_str(&format!(
        "| ncu | {} | {} |\n",
        opt(&b.conditions.ncu_version),
        opt(&c.conditions.ncu_version)
    ));
    md.push_str(&format!(
        "| clock control | {} | {} |\n\n",
        opt(&b.conditions.clock_control),
        opt(&c.conditions.clock_control)
    ));
}

/// `## Duration`: the deciding change, with the medians' intervals when timed.
fn duration_section(md: &mut String, d: &DurationDelta) {
    md.push_str("## Duration\n\n");
    md.push_str(&format!(
        "{}: {} -> {} ({}), **{}**.",
        d.source,
        units::duration(d.baseline_ns),
        units::duration(d.current_ns),
        units::pct_signed(d.delta_pct, 2),
        d.verdict.word()
    ));
    if let (Some(b), Some(n)) = (d.baseline_interval_ns, d.current_interval_ns) {
        md.push_str(&format!(
            " 95 % intervals of the medians: [{}, {}] and [{}, {}]; a change counts only beyond the \
             tolerance and when these do not overlap.",
            units::duration(b.0),
            units::duration(b.1),
            units::duration(n.0),
            units::duration(n.1)
        ));
    }
    md.push_str("\n\n");
}

/// One table of metric rows under `## title`; nothing when there are no rows.
fn metric_table(md: &mut String, title: &str, rows: &[MetricDelta]) {
    if rows.is_empty() {
        return;
    }
    md.push_str(&format!(
        "## {title}\n\n| metric | baseline | current | delta | verdict |\n|---|---|---|---|---|\n"
    ));
    for m in rows {
        let v = |x: Option<f64>| match x {
            Some(x) if m.unit == "ns" => units::duration(x),
            Some(x) => format!("{} {}", num(x), m.unit),
            None => "not collected".into(),
        };
        let d = m.delta_pct.map(|d| units::pct_signed(d, 1)).unwrap_or_else(|| "-".into());
        // A count's verdict with its price in time: why it does or does not matter.
        let verdict = match &m.cost {
            Some(c) if m.delta_pct.is_some_and(|d| d != 0.0) => {
                format!("{} ({})", m.verdict.word(), c.explain())
            }
            _ => m.verdict.word().to_string(),
        };
        md.push_str(&format!("| {} | {} | {} | {} | {verdict} |\n", m.label, v(m.baseline), v(m.current), d));
    }
    md.push('\n');
}

/// Writes `comparison/regression_report.md` and `comparison/regression.json` under `dir`,
/// each atomically, then `report.html` again, now with the comparison. An existing
/// `comparison/` keeps its other files; these two are replaced.
pub fn write_reports(dir: &Path, c: &Comparison) -> Result<PathBuf> {
    let profile = ProfileDir::at(dir);
    profile.ensure_dir(&profile.comparison_dir())?;
    write_atomic(&profile.regression_json_path(), &(serde_json::to_string_pretty(c)? + "\n"))?;
    let report = profile.regression_report_path();
    write_atomic(&report, &md::document(&render_markdown(c)))?;
    crate::report::html::write_profile(&profile)?;
    Ok(report)
}

/// `comparison/comparison.png`: both sides' summaries side by side.
pub fn draw(dir: &Path, base: &Snapshot, cur: &Snapshot) -> Result<()> {
    let (hb, hc) = (hot_lines(base), hot_lines(cur));
    let png = visual::comparison_png(&visual_input(base, &hb), &visual_input(cur, &hc))?;
    write_atomic_bytes(&ProfileDir::at(dir).comparison_png_path(), &png)
}

/// A snapshot's hot lines in the shape the picture draws.
fn hot_lines(s: &Snapshot) -> Vec<Hotspot> {
    s.hotspots
        .iter()
        .map(|h| Hotspot {
            kind: SourceKind::Cuda,
            function: s.kernel.kernel.clone(),
            file: h.file().to_string(),
            line: h.line().unwrap_or(0),
            address: String::new(),
            source: h.source.clone(),
            samples: 0.0,
            pct_of_kernel: h.pct,
            top_stalls: String::new(),
            instructions_executed: None,
            stalls: Vec::new(),
        })
        .collect()
}

fn visual_input<'a>(s: &'a Snapshot, hot: &'a [Hotspot]) -> VisualInput<'a> {
    VisualInput {
        title: format!("{} ({})", s.kernel.kernel, s.label),
        kernel: &s.kernel,
        verdict: s.verdict.as_ref(),
        hotspots: hot,
        // A saved profile keeps its hot lines when it had a source page.
        source_collected: !hot.is_empty(),
        device: s.conditions.device.as_deref().and_then(visual::ceilings_for),
    }
}

/// The Markdown summary of a gate run: one row per kernel.
pub fn step_summary(results: &[GateResult], tolerance_pct: f64) -> String {
    let regressions = results.iter().filter(|r| r.comparison.regression).count();
    let mut md = format!(
        "## cargo kprof check: {}\n\n| kernel | baseline | current | change | verdict |\n|---|---|---|---|---|\n",
        if regressions == 0 {
            "no regression".to_string()
        } else {
            format!("{regressions} regression(s) beyond {tolerance_pct} %")
        }
    );
    for r in results {
        let c = &r.comparison;
        let (b, n, d, v) = match &c.duration {
            Some(d) => (
                units::duration(d.baseline_ns),
                units::duration(d.current_ns),
                units::pct_signed(d.delta_pct, 1),
                d.verdict,
            ),
            None => ("-".into(), "-".into(), "-".into(), Verdict::NotCompared),
        };
        let v = if v == Verdict::Regressed { "**regressed**".to_string() } else { v.word().to_string() };
        let _ = writeln!(md, "| {} | {b} | {n} | {d} | {v} |", md::cell_code(&c.current.identity.kernel));
    }
    md.push('\n');
    for r in results.iter().filter(|r| r.comparison.regression) {
        let c = &r.comparison;
        let _ = writeln!(md, "- {}: {}", md::code(&c.current.identity.kernel), md::one_line(&c.explanation));
    }
    md
}
