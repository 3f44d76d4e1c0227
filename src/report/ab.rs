//! What an A/B check writes: per kernel, `comparison/ab_rounds.json`, `comparison/ab.json`
//! and `comparison/regression_report.md` in the head's profile (led by the reviewer's
//! line, then the rounds, the counters, the decision rule, and the single-launch
//! comparison of the two profiles, also kept as `comparison/ab_profiles.json`), and
//! `report.html` again; for the run, the step summary.
//!
//! The verdict, its reviewer's line and the rule come decided from
//! `crate::compare::ab`; this module only lays them out. It takes plain values (an
//! [`AbPages`] of where the pages go and what they name), not the driver's options, so
//! that whatever runs a check may call it and it imports nothing from that runner.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::compare::ab::counters::CounterChanges;
use crate::compare::ab::rounds::Rounds;
use crate::compare::ab::stats::TimeChange;
use crate::compare::ab::verdict::{decision_rule_markdown, reviewer_line, KernelAb};
use crate::compare::{self, Snapshot};
use crate::model::ab::{AbVerdict, GateSignal};
use crate::profile::dir::ProfileDir;
use crate::profile::fs::write_atomic;
use crate::report::comparison;
use crate::units;

/// One kernel's A/B pages: where they go and what they name.
#[derive(Debug, Clone, Copy)]
pub struct AbPages<'a> {
    /// The head's profile, whose `comparison/` receives the pages.
    pub head_dir: &'a ProfileDir,
    /// The base's profile.
    pub base_dir: &'a ProfileDir,
    /// How to name the base (`3f2a1c9d0e1b (HEAD~1)`).
    pub base_label: &'a str,
    /// The kernel's tolerance, percent.
    pub tolerance_pct: f64,
}

/// `comparison/ab.json`. The fields are in alphabetical order, and `result` is a JSON
/// value (whose keys sort), because the file has always been written from a JSON map:
/// the bytes stay the same.
#[derive(Serialize)]
struct AbDocument<'a> {
    base: &'a str,
    base_profile: &'a Path,
    head_profile: &'a Path,
    line: String,
    result: serde_json::Value,
    schema_version: u32,
}

fn ab_document<'a>(pages: &AbPages<'a>, ab: &KernelAb) -> Result<AbDocument<'a>> {
    Ok(AbDocument {
        base: pages.base_label,
        base_profile: pages.base_dir.path(),
        head_profile: pages.head_dir.path(),
        line: reviewer_line(ab),
        result: serde_json::to_value(ab)?,
        schema_version: 1,
    })
}

/// Writes the kernel's A/B files into the head's `comparison/`, then its `report.html`.
pub fn write(
    pages: &AbPages<'_>,
    ab: &KernelAb,
    rounds: Option<&Rounds>,
    base: Option<&Snapshot>,
    head: Option<&Snapshot>,
) -> Result<()> {
    let dir = pages.head_dir;
    dir.ensure_dir(&dir.comparison_dir())?;
    if let Some(r) = rounds {
        write_atomic(&dir.ab_rounds_path(), &(serde_json::to_string_pretty(r)? + "\n"))?;
    }
    write_atomic(&dir.ab_result_path(), &(serde_json::to_string_pretty(&ab_document(pages, ab)?)? + "\n"))?;
    let mut md = markdown_for(pages, ab, rounds);
    if let (Some(b), Some(h)) = (base, head) {
        // The profiles' own comparison (one profiled launch per side) follows, for the
        // metrics and hot lines it lays side by side; its duration is not the gate's.
        let c = compare::compare(b, h, pages.tolerance_pct);
        md.push_str(
            "\n---\n\n# The two profiles side by side\n\nOne profiled launch per side, as ncu measured it; \
             the verdict above, from the interleaved rounds and the counters, is the gate's.\n\n",
        );
        // No regression.json: its verdict, of one launch per side, is not the gate's, and
        // `merge` reads the A/B verdict from ab.json. The same comparison goes to
        // ab_profiles.json, for report.html's side-by-side view.
        md.push_str(&comparison::render_markdown(&c));
        write_atomic(&dir.ab_profiles_path(), &(serde_json::to_string_pretty(&c)? + "\n"))?;
    }
    write_atomic(&dir.regression_report_path(), &super::md::document(&md))?;
    crate::report::html::write_profile(dir)
}

/// The A/B part of `regression_report.md`: the reviewer's line, the timing and its
/// rounds, the counters, and the decision rule.
fn markdown_for(pages: &AbPages<'_>, ab: &KernelAb, rounds: Option<&Rounds>) -> String {
    let mut md = format!(
        "# A/B check: {} against base {}\n\n",
        super::md::code(&ab.kernel),
        super::md::text(pages.base_label)
    );
    let _ = writeln!(md, "**{}**\n", reviewer_line(ab));
    let _ = writeln!(md, "- head (this tree): `{}`", pages.head_dir.path().display());
    let _ = writeln!(md, "- base: `{}`", pages.base_dir.path().display());
    let _ = writeln!(md, "- decided by: {}; gate: {}\n", ab.decided_by, ab.gate.name());
    if let Some(t) = &ab.time {
        timing_section(&mut md, t);
    }
    if let Some(r) = rounds {
        rounds_table(&mut md, r);
    }
    if let Some(c) = &ab.counters {
        counters_table(&mut md, c);
    }
    md.push_str(&decision_rule_markdown(pages.tolerance_pct, ab.gate));
    md.push('\n');
    md
}

/// `## Timing`: the estimate, its interval, the resolution, the clocks, and the rounds
/// left out.
fn timing_section(md: &mut String, t: &TimeChange) {
    let _ = writeln!(
        md,
        "## Timing\n\nHead against base: {:+.2} %, 95 % interval [{:+.2} %, {:+.2} %] (achieved confidence \
         {:.1} %), over {} kept round(s); the run resolves changes of about ±{:.2} %; tolerance {} %.",
        t.estimate_pct,
        t.lo_pct,
        t.hi_pct,
        t.confidence * 100.0,
        t.rounds,
        t.resolution_pct,
        t.tolerance_pct
    );
    match t.clock_drift_pct {
        Some(d) => {
            let _ = writeln!(md, "SM clocks of the kept rounds spread {d:.2} % around their median.");
        }
        None => {
            let _ = writeln!(md, "No SM clock readings: clock drift is not screened.");
        }
    }
    for d in &t.discarded {
        let _ = writeln!(md, "- discarded: {d}");
    }
    md.push('\n');
}

/// Every round, base and head side by side, after a caution when ncu timed them.
fn rounds_table(md: &mut String, r: &Rounds) {
    if r.source == "ncu" {
        let _ = writeln!(
            md,
            "These rounds are ncu's durations of {}'s launches in its window (the program is not a \
             harness bench): a few launches per round, each replayed by ncu with caches flushed, and no \
             clock readings. Weaker evidence than harness rounds.\n",
            super::md::code(&r.kernel)
        );
    }
    md.push_str("| round | first | base | head | head / base | base SM clock | head SM clock |\n");
    md.push_str("|---|---|---|---|---|---|---|\n");
    let mhz = |m: Option<f64>| m.map(|m| format!("{m:.0} MHz")).unwrap_or_else(|| "-".into());
    for round in &r.rounds {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} |",
            round.index + 1,
            round.first.name(),
            units::duration(round.base.median_ns),
            units::duration(round.head.median_ns),
            units::pct_signed((round.head.median_ns / round.base.median_ns - 1.0) * 100.0, 2),
            mhz(round.base.sm_clock_mhz),
            mhz(round.head.sm_clock_mhz)
        );
    }
    md.push('\n');
}

/// `## Counters`: each counter on both sides, marked when it moved or gated.
fn counters_table(md: &mut String, c: &CounterChanges) {
    md.push_str("## Counters (one profiled launch per side; they do not depend on clocks)\n\n");
    md.push_str("| counter | base | head | change | | why |\n|---|---|---|---|---|---|\n");
    for ch in &c.changes {
        let change = match ch.change_pct {
            Some(v) => units::pct_signed(v, 2),
            None if ch.head == 0.0 => "none".into(),
            None => "from 0".into(),
        };
        let mark = if ch.gated {
            "**gated**"
        } else if ch.moved {
            "moved"
        } else {
            ""
        };
        let _ = writeln!(
            md,
            "| {} (`{}`) | {} | {} | {change} | {mark} | {} |",
            ch.label,
            ch.metric,
            ch.base,
            ch.head,
            ch.why.as_deref().unwrap_or("")
        );
    }
    if !c.missing.is_empty() {
        let _ = writeln!(md, "\nMissing on a side: {}", c.missing.join(", "));
    }
    md.push_str(
        "\nA counter gates only when it grew beyond its class's run-to-run variation and its extra \
         work, at the device's peak rate for the unit that does it, takes at least the tolerance's \
         share of the base's duration.\n",
    );
    md.push('\n');
}

/// The step summary of the run against base `base_label`: one line per kernel, the rule
/// (at the first kernel's tolerance `tolerance_pct`, with gate `gate`) folded away.
pub fn step_summary(abs: &[KernelAb], base_label: &str, gate: GateSignal, tolerance_pct: f64) -> String {
    let count = |v: AbVerdict| abs.iter().filter(|a| a.verdict == v).count();
    let head = match (count(AbVerdict::Regressed), count(AbVerdict::Ambiguous)) {
        (0, 0) => "no regression".to_string(),
        (0, a) => format!("{a} kernel(s) ambiguous"),
        (r, _) => format!("{r} regression(s)"),
    };
    let mut md = format!("## cargo kprof check against base {base_label}: {head}\n\n");
    for a in abs {
        let _ = writeln!(md, "- {}", super::md::one_line(&reviewer_line(a)));
    }
    let _ = write!(
        md,
        "\n<details><summary>How this was decided</summary>\n\n{}\n</details>\n\n",
        decision_rule_markdown(tolerance_pct, gate)
    );
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::ab::verdict::combine;

    /// `ab.json` as the typed document writes it is, byte for byte, what the JSON map it
    /// replaces wrote.
    #[test]
    fn ab_json_keeps_the_bytes_of_the_map_it_replaces() {
        let (head, base) = (ProfileDir::at("profile/k_2"), ProfileDir::at("profile/k_1"));
        let pages = AbPages {
            head_dir: &head,
            base_dir: &base,
            base_label: "3f2a1c9d0e1b (HEAD~1)",
            tolerance_pct: 2.0,
        };
        let mut ab = combine("k", None, None, GateSignal::Both);
        ab.hotspot = Some("k.cu:3 (50.0 %)".into());
        let map = serde_json::json!({
            "schema_version": 1,
            "base": pages.base_label,
            "base_profile": base.path(),
            "head_profile": head.path(),
            "result": ab,
            "line": reviewer_line(&ab),
        });
        let typed = serde_json::to_string_pretty(&ab_document(&pages, &ab).unwrap()).unwrap();
        assert_eq!(typed, serde_json::to_string_pretty(&map).unwrap());
    }
}
