//! `comparison/regression_report.md` and `comparison/regression.json`.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{Comparison, MetricDelta};
use crate::profile::fs::write_atomic;
use crate::profile::ProfileDir;
use crate::units::approx as num;

/// `comparison/regression_report.md`.
pub fn render_markdown(c: &Comparison) -> String {
    let mut md = String::new();
    md.push_str(&format!("# Comparison: {} vs {}\n\n", c.current.label, c.baseline.label));
    md.push_str(&format!("**{}**\n\n", c.explanation));
    if c.regression {
        md.push_str(&format!("**Regression** beyond the tolerance of {} %.\n\n", c.tolerance_pct));
    }
    for w in &c.warnings {
        md.push_str(&format!("> **Warning:** {w}\n\n"));
    }
    md.push_str("| | baseline | current |\n|---|---|---|\n");
    md.push_str(&format!("| profile | {} | {} |\n", c.baseline.label, c.current.label));
    md.push_str(&format!("| kernel | `{}` | `{}` |\n", c.baseline.kernel, c.current.kernel));
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "not recorded".into());
    md.push_str(&format!(
        "| verdict | {} | {} |\n",
        opt(&c.baseline.classification),
        opt(&c.current.classification)
    ));
    md.push_str(&format!(
        "| GPU | {} | {} |\n",
        opt(&c.baseline.conditions.device),
        opt(&c.current.conditions.device)
    ));
    md.push_str(&format!(
        "| ncu | {} | {} |\n",
        opt(&c.baseline.conditions.ncu_version),
        opt(&c.current.conditions.ncu_version)
    ));
    md.push_str(&format!(
        "| clock control | {} | {} |\n\n",
        opt(&c.baseline.conditions.clock_control),
        opt(&c.current.conditions.clock_control)
    ));
    if let Some(d) = &c.duration {
        md.push_str("## Duration\n\n");
        md.push_str(&format!(
            "{}: {} -> {} ({:+.2} %), **{}**.",
            d.source,
            crate::units::duration(d.baseline_ns),
            crate::units::duration(d.current_ns),
            d.delta_pct,
            d.verdict.word()
        ));
        if let (Some(b), Some(n)) = (d.baseline_interval_ns, d.current_interval_ns) {
            md.push_str(&format!(
                " 95 % intervals of the medians: [{}, {}] and [{}, {}]; a change counts only beyond the \
                 tolerance and when these do not overlap.",
                crate::units::duration(b.0),
                crate::units::duration(b.1),
                crate::units::duration(n.0),
                crate::units::duration(n.1)
            ));
        }
        md.push_str("\n\n");
    }
    let table = |md: &mut String, title: &str, rows: &[MetricDelta]| {
        if rows.is_empty() {
            return;
        }
        md.push_str(&format!(
            "## {title}\n\n| metric | baseline | current | delta | verdict |\n|---|---|---|---|---|\n"
        ));
        for m in rows {
            let v = |x: Option<f64>| match x {
                Some(x) if m.unit == "ns" => crate::units::duration(x),
                Some(x) => format!("{} {}", num(x), m.unit),
                None => "not collected".into(),
            };
            let d = m.delta_pct.map(|d| format!("{d:+.1} %")).unwrap_or_else(|| "-".into());
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                m.label,
                v(m.baseline),
                v(m.current),
                d,
                m.verdict.word()
            ));
        }
        md.push('\n');
    };
    table(&mut md, "Metrics", &c.metrics);
    table(&mut md, "Stall reasons", &c.stalls);
    table(&mut md, "Hotspot shares", &c.hotspots);
    md.push_str(
        "Throughput shares (SM, memory, DRAM, L1/TEX, L2) have no better direction on their own: \
         they say `changed`, and the duration decides.\n",
    );
    md
}

/// Writes `comparison/regression_report.md` and `comparison/regression.json` (and, with
/// `png`, `comparison/comparison.png`) under `dir`, each atomically. An existing
/// `comparison/` keeps its other files; these two are replaced.
pub fn write_reports(dir: &Path, c: &Comparison) -> Result<PathBuf> {
    let profile = ProfileDir::at(dir);
    profile.ensure_dir(&profile.comparison_dir())?;
    write_atomic(&profile.regression_json_path(), &(serde_json::to_string_pretty(c)? + "\n"))?;
    let report = profile.regression_report_path();
    write_atomic(&report, &render_markdown(c))?;
    Ok(report)
}
