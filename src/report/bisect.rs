//! `cargo kprof bisect`'s result files in the profiles root: `bisect.json` (the document
//! below) and `bisect.md`, its words for people. Written again by each bisect.

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use super::md::{cell, cell_code, code, text};
use crate::compare::bisect::{Found, Step};
use crate::profile::bisect::{bisect_json_path, bisect_md_path};
use crate::profile::fs::write_atomic;
use crate::vcs::history::Commit;
use crate::vcs::worktree::BaseRevision;

/// `bisect.json`'s shape version.
pub const BISECT_SCHEMA_VERSION: u32 = 1;

/// One check of a bisect, with what it found.
#[derive(Debug, Clone, Serialize)]
pub struct StepRecord {
    /// The search's step.
    #[serde(flatten)]
    pub step: Step,
    /// The revision checked.
    pub commit: Commit,
    /// Timing rounds per side.
    pub rounds: u32,
    /// The A/B check's line for each kernel (verdict, interval, counters, hot line).
    pub evidence: Vec<String>,
    /// No check ran: the revision has the same build as this one (`--good`, or a revision
    /// checked already), whose outcome it takes.
    pub same_build_as: Option<String>,
}

/// A bisect's whole record.
#[derive(Debug, Clone, Serialize)]
pub struct BisectDoc {
    /// [`BISECT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The kernels asked for (`-k`).
    pub kernels: Vec<String>,
    /// `--good`.
    pub good: BaseRevision,
    /// `--bad`.
    pub bad: BaseRevision,
    /// The first-parent history `good..bad`, oldest first.
    pub history: Vec<Commit>,
    /// The checks, in order.
    pub steps: Vec<StepRecord>,
    /// Checks run (skipped revisions are none).
    pub checks: usize,
    /// `ceil(log2 n) + 1`: the most checks a history of `n` needs when every check decides.
    pub check_bound: usize,
    /// The conclusion, by index into `history`.
    pub result: Found,
    /// The conclusion in one line.
    pub summary: String,
}

/// Writes `bisect.json` and `bisect.md` into `root`.
pub fn write(root: &Path, doc: &BisectDoc) -> Result<()> {
    write_atomic(&bisect_json_path(root), &(serde_json::to_string_pretty(doc)? + "\n"))?;
    write_atomic(&bisect_md_path(root), &markdown(doc))
}

/// `bisect.md`.
pub fn markdown(doc: &BisectDoc) -> String {
    let mut out = format!(
        "# Bisect: {} between {} and {}\n\n{}\n\n",
        doc.kernels.iter().map(|k| code(k)).collect::<Vec<_>>().join(", "),
        code(&format!("{} ({})", doc.good.short(), doc.good.asked)),
        code(&format!("{} ({})", doc.bad.short(), doc.bad.asked)),
        text(&doc.summary)
    );
    out.push_str(&format!(
        "{} first-parent revisions after the good one; {} check(s) (at most {} when every check decides).\n\n",
        doc.history.len(),
        doc.checks,
        doc.check_bound
    ));
    out.push_str(
        "## Steps\n\n| # | revision | subject | rounds | outcome | last good .. first regressed |\n",
    );
    out.push_str("|---|---|---|---|---|---|\n");
    let name = |i: Option<usize>, none: &str| match i.and_then(|i| doc.history.get(i)) {
        Some(c) => cell_code(c.short()),
        None => none.to_string(),
    };
    for (n, s) in doc.steps.iter().enumerate() {
        let outcome = match &s.step.outcome {
            crate::compare::bisect::Outcome::Skipped { reason } => format!("skipped: {}", cell(reason)),
            o => match &s.same_build_as {
                Some(other) => format!("{} (the same build as {}: no check)", o.name(), cell_code(other)),
                None => o.name().to_string(),
            },
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {outcome} | {} .. {} |\n",
            n + 1,
            cell_code(s.commit.short()),
            cell(&text(&s.commit.subject)),
            s.rounds,
            name(s.step.last_good, "good"),
            name(s.step.first_bad, "?"),
        ));
    }
    let evidence: Vec<&StepRecord> = doc.steps.iter().filter(|s| !s.evidence.is_empty()).collect();
    if !evidence.is_empty() {
        out.push_str("\n## Evidence\n\n");
        for s in evidence {
            let outcome = match &s.same_build_as {
                Some(other) => format!("{}, from the check of {}", s.step.outcome.name(), code(other)),
                None => s.step.outcome.name().to_string(),
            };
            out.push_str(&format!("- {} ({outcome}):\n", code(s.commit.short())));
            for line in &s.evidence {
                out.push_str(&format!("  - {}\n", text(line)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::bisect::{Interval, Outcome};

    fn commit(n: usize, subject: &str) -> Commit {
        Commit {
            commit: n.to_string().repeat(40),
            subject: subject.into(),
            date: "2026-12-01T10:00:00+00:00".into(),
        }
    }

    /// The steps' table holds one row per step whatever a subject holds (a `|`, a
    /// backtick, a line break), and the evidence follows.
    #[test]
    fn bisect_md_keeps_one_row_per_step_and_the_evidence() {
        let history = vec![commit(1, "a | b"), commit(2, "fix `x`\nsecond line"), commit(3, "c3")];
        let step = |index, outcome, last_good, first_bad| Step {
            index,
            rounds_factor: 1,
            outcome,
            last_good,
            first_bad,
        };
        let slower =
            Outcome::Regressed { time: Some(Interval { estimate_pct: 9.0, lo_pct: 8.0, hi_pct: 10.0 }) };
        let doc = BisectDoc {
            schema_version: BISECT_SCHEMA_VERSION,
            kernels: vec!["hgemm".into()],
            good: BaseRevision { asked: "v1".into(), commit: "f".repeat(40) },
            bad: BaseRevision { asked: "HEAD".into(), commit: history[2].commit.clone() },
            steps: vec![
                StepRecord {
                    step: step(2, slower.clone(), None, Some(2)),
                    commit: history[2].clone(),
                    rounds: 12,
                    evidence: vec!["hgemm: regressed, +9.0 % [+8.0, +10.0]".into()],
                    same_build_as: None,
                },
                StepRecord {
                    step: step(1, Outcome::Skipped { reason: "does not build: a | b".into() }, None, Some(2)),
                    commit: history[1].clone(),
                    rounds: 12,
                    evidence: Vec::new(),
                    same_build_as: None,
                },
                StepRecord {
                    step: step(0, slower.clone(), None, Some(0)),
                    commit: history[0].clone(),
                    rounds: 12,
                    evidence: vec!["hgemm: regressed, +9.0 % [+8.0, +10.0]".into()],
                    same_build_as: Some("333333333333".into()),
                },
            ],
            history,
            checks: 1,
            check_bound: 3,
            result: Found::Range { after: None, through: 2, hidden: vec![0, 1], second: None },
            summary: "The first regressed revision is one of a, b and c".into(),
        };
        let md = markdown(&doc);
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| #")).collect();
        assert_eq!(rows.len(), 3, "{md}");
        for row in &rows {
            assert_eq!(row.replace("\\|", "").matches('|').count(), 7, "{row}");
        }
        assert!(rows[1].contains("skipped: does not build: a \\| b"), "{md}");
        assert!(rows[1].contains("| fix \\`x\\` second line |"), "{md}");
        // A step of a build checked already says so, in its row and its evidence.
        assert!(rows[2].contains("| regressed (the same build as `333333333333`: no check) |"), "{md}");
        assert!(md.contains("- `111111111111` (regressed, from the check of `333333333333`):"), "{md}");
        assert!(
            md.contains("- `333333333333` (regressed):\n  - hgemm: regressed, +9.0 % [+8.0, +10.0]"),
            "{md}"
        );
        assert!(md.starts_with("# Bisect: `hgemm` between `ffffffffffff (v1)` and"), "{md}");
    }
}
