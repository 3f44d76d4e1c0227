//! `cargo kprof bisect`'s result files in the profiles root: `bisect.json` (the document
//! below) and `bisect.md`, its words for people. Written again by each bisect.

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use super::md::{cell, cell_code, code, text};
use crate::build::history::Commit;
use crate::build::worktree::BaseRevision;
use crate::compare::bisect::{Found, Step};
use crate::profile::bisect::{bisect_json_path, bisect_md_path};
use crate::profile::fs::write_atomic;

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
            o => o.name().to_string(),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {outcome} | {} .. {} |\n",
            n + 1,
            cell_code(s.commit.short()),
            cell(&s.commit.subject),
            s.rounds,
            name(s.step.last_good, "good"),
            name(s.step.first_bad, "?"),
        ));
    }
    let evidence: Vec<&StepRecord> = doc.steps.iter().filter(|s| !s.evidence.is_empty()).collect();
    if !evidence.is_empty() {
        out.push_str("\n## Evidence\n\n");
        for s in evidence {
            out.push_str(&format!("- {} ({}):\n", code(s.commit.short()), s.step.outcome.name()));
            for line in &s.evidence {
                out.push_str(&format!("  - {}\n", text(line)));
            }
        }
    }
    out
}
