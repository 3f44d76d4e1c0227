//! What an A/B check writes: per kernel, `comparison/ab_rounds.json`, `comparison/ab.json`
//! and `comparison/regression_report.md` in the head's profile (led by the reviewer's
//! line, then the rounds, the counters, the decision rule, and the single-launch
//! comparison of the two profiles); for the run, the step summary.

use std::fmt::Write as _;

use anyhow::Result;

use super::rounds::Rounds;
use super::run::{AbOptions, AbPair};
use super::verdict::{decision_rule_markdown, reviewer_line, KernelAb};
use crate::compare::{self, counterpart, HotLine, Snapshot};
use crate::model::ab::AbVerdict;
use crate::profile::fs::write_atomic;
use crate::report::comparison as markdown;
use crate::units;

/// Lines whose share of the samples grew by at least this many points are named as rising.
const RISING_POINTS: f64 = 5.0;

/// Where the head's time goes and what moved: the head's hottest line with its share on
/// both sides (`hgemm.cu:48 (72.2 % -> 80.4 %)`, or `moved from hgemm.cu:24 (97.6 %) to
/// hgemm.cu:48 (72.2 %)` when the base's hottest line was another), then up to two other
/// lines whose share grew by 5 points or more (`rising triton_softmax.py:39 (0.0 % ->
/// 13.6 %)`). Lines are matched by their text ([`counterpart`]), so a line that only moved
/// down the file is not taken for the one that now has its number.
pub fn hotspot_phrase(base: &Snapshot, head: &Snapshot) -> Option<String> {
    let h = head.hotspots.first()?;
    let Some(base_top) = base.hotspots.first() else {
        return Some(format!("{} ({:.1} %)", h.location, h.pct));
    };
    let mut out = match counterpart(&base.hotspots, &head.hotspots, h) {
        Some(b) if std::ptr::eq(b, base_top) => format!("{} ({})", h.location, shares(b, h)),
        _ => format!(
            "moved from {} ({:.1} %) to {} ({:.1} %)",
            base_top.location, base_top.pct, h.location, h.pct
        ),
    };
    let mut rising: Vec<(f64, String)> = head
        .hotspots
        .iter()
        .skip(1)
        .map(|l| match counterpart(&base.hotspots, &head.hotspots, l) {
            Some(b) => (l.pct - b.pct, format!("{} ({})", l.location, shares(b, l))),
            None => (l.pct, format!("{} (0.0 % -> {:.1} %)", l.location, l.pct)),
        })
        .filter(|(gain, _)| *gain >= RISING_POINTS)
        .collect();
    rising.sort_by(|a, b| b.0.total_cmp(&a.0));
    if !rising.is_empty() {
        let named: Vec<String> = rising.into_iter().take(2).map(|(_, s)| s).collect();
        out.push_str(&format!(", rising {}", named.join(" and ")));
    }
    Some(out)
}

/// `72.1 % -> 74.7 %`, with the base's line number when the line moved in the file, or
/// `edited` when the change rewrote it.
fn shares(base: &HotLine, head: &HotLine) -> String {
    let moved = match base.line() {
        Some(n) if base.location != head.location => format!("line {n} in the base, "),
        _ if base.source != head.source => "edited, ".to_string(),
        _ => String::new(),
    };
    format!("{moved}{:.1} % -> {:.1} %", base.pct, head.pct)
}

/// Writes the kernel's A/B files into the head's `comparison/`.
pub fn write(
    p: &AbPair<'_>,
    ab: &KernelAb,
    rounds: Option<&Rounds>,
    base: Option<&Snapshot>,
    head: Option<&Snapshot>,
    opts: &AbOptions,
    tolerance_pct: f64,
) -> Result<()> {
    let dir = p.head_dir;
    dir.ensure_dir(&dir.comparison_dir())?;
    if let Some(r) = rounds {
        write_atomic(&dir.ab_rounds_path(), &(serde_json::to_string_pretty(r)? + "\n"))?;
    }
    let doc = serde_json::json!({
        "schema_version": 1,
        "base": opts.base_label,
        "base_profile": p.base_dir.path(),
        "head_profile": p.head_dir.path(),
        "result": ab,
        "line": reviewer_line(ab),
    });
    write_atomic(&dir.ab_result_path(), &(serde_json::to_string_pretty(&doc)? + "\n"))?;
    let mut md = markdown_for(p, ab, rounds, opts, tolerance_pct);
    if let (Some(b), Some(h)) = (base, head) {
        // The profiles' own comparison (one profiled launch per side) follows, for the
        // metrics and hot lines it lays side by side; its duration is not the gate's.
        let c = compare::compare(b, h, tolerance_pct);
        md.push_str(
            "\n---\n\n# The two profiles side by side\n\nOne profiled launch per side, as ncu measured it; \
             the verdict above, from the interleaved rounds and the counters, is the gate's.\n\n",
        );
        // No regression.json: its verdict, of one launch per side, is not the gate's, and
        // `merge` reads the A/B verdict from ab.json.
        md.push_str(&markdown::render_markdown(&c));
    }
    write_atomic(&dir.regression_report_path(), &md)?;
    Ok(())
}

fn markdown_for(
    p: &AbPair<'_>,
    ab: &KernelAb,
    rounds: Option<&Rounds>,
    opts: &AbOptions,
    tolerance_pct: f64,
) -> String {
    let mut md = format!("# A/B check: `{}` against base {}\n\n", ab.kernel, opts.base_label);
    let _ = writeln!(md, "**{}**\n", reviewer_line(ab));
    let _ = writeln!(md, "- head (this tree): `{}`", p.head_dir.path().display());
    let _ = writeln!(md, "- base: `{}`", p.base_dir.path().display());
    let _ = writeln!(md, "- decided by: {}; gate: {}\n", ab.decided_by, ab.gate.name());
    if let Some(t) = &ab.time {
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
    if let Some(r) = rounds.filter(|r| r.source == "ncu") {
        let _ = writeln!(
            md,
            "These rounds are ncu's durations of `{}`'s launches in its window (the program is not a \
             harness bench): a few launches per round, each replayed by ncu with caches flushed, and no \
             clock readings. Weaker evidence than harness rounds.\n",
            r.kernel
        );
    }
    if let Some(r) = rounds {
        md.push_str("| round | first | base | head | head / base | base SM clock | head SM clock |\n");
        md.push_str("|---|---|---|---|---|---|---|\n");
        let mhz = |m: Option<f64>| m.map(|m| format!("{m:.0} MHz")).unwrap_or_else(|| "-".into());
        for round in &r.rounds {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {:+.2} % | {} | {} |",
                round.index + 1,
                round.first.name(),
                units::duration(round.base.median_ns),
                units::duration(round.head.median_ns),
                (round.head.median_ns / round.base.median_ns - 1.0) * 100.0,
                mhz(round.base.sm_clock_mhz),
                mhz(round.head.sm_clock_mhz)
            );
        }
        md.push('\n');
    }
    if let Some(c) = &ab.counters {
        md.push_str("## Counters (one profiled launch per side; they do not depend on clocks)\n\n");
        md.push_str("| counter | base | head | change | |\n|---|---|---|---|---|\n");
        for ch in &c.changes {
            let change = match ch.change_pct {
                Some(v) => format!("{v:+.2} %"),
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
                "| {} (`{}`) | {} | {} | {change} | {mark} |",
                ch.label, ch.metric, ch.base, ch.head
            );
        }
        if !c.missing.is_empty() {
            let _ = writeln!(md, "\nMissing on a side: {}", c.missing.join(", "));
        }
        md.push('\n');
    }
    md.push_str(&decision_rule_markdown(tolerance_pct, ab.gate));
    md.push('\n');
    md
}

/// The step summary of the run: one line per kernel, the rule (at the first kernel's
/// tolerance `tolerance_pct`) folded away.
pub fn step_summary(abs: &[KernelAb], opts: &AbOptions, tolerance_pct: f64) -> String {
    let count = |v: AbVerdict| abs.iter().filter(|a| a.verdict == v).count();
    let head = match (count(AbVerdict::Regressed), count(AbVerdict::Ambiguous)) {
        (0, 0) => "no regression".to_string(),
        (0, a) => format!("{a} kernel(s) ambiguous"),
        (r, _) => format!("{r} regression(s)"),
    };
    let mut md = format!("## cargo kprof check against base {}: {head}\n\n", opts.base_label);
    for a in abs {
        let _ = writeln!(md, "- {}", reviewer_line(a));
    }
    let t = tolerance_pct;
    let _ = write!(
        md,
        "\n<details><summary>How this was decided</summary>\n\n{}\n</details>\n\n",
        decision_rule_markdown(t, opts.gate)
    );
    md
}
