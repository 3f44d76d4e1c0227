//! `profile/index.md` and `profile/index.json`: every profile under a profile root, one
//! row each, newest first.
//!
//! Regenerated after each run from the profile directories themselves (their
//! `bottleneck_decision.json` and `metrics_summary.json`), so it is always derived data:
//! rewriting it loses nothing, and it never touches a profile directory.

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::analyze::rules::BottleneckDecision;
use crate::analyze::summary::MetricsSummary;
use crate::model::stage::Stage;
use crate::model::verdict::{Classification, Confidence};
use crate::profile::dir::{index_json_path, index_md_path};
use crate::profile::fs::read_json;
use crate::profile::ProfileDir;
use crate::units::duration;

/// One row.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limiter: Option<String>,
    /// Median duration, ns.
    pub duration_ns: Option<f64>,
    /// The follow-up stage.
    pub follow_up_stage: Stage,
}

/// Reads every analysed profile directory under `root`, newest first (ids end in a UTC
/// timestamp, so the name order is the time order within a kernel).
pub fn rows(root: &Path) -> Vec<IndexRow> {
    let mut dirs: Vec<_> = std::fs::read_dir(root)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                // A hidden folder is an import being built (or left by a crash), not a profile.
                .filter(|p| {
                    p.is_dir() && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'))
                })
                .collect()
        })
        .unwrap_or_default();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.metadata().and_then(|m| m.modified()).ok()));
    let mut out = Vec::new();
    for d in dirs {
        let profile = ProfileDir::at(&d);
        let Some(decision) =
            read_json::<BottleneckDecision>(&profile.bottleneck_decision_path()).ok().flatten()
        else {
            continue;
        };
        let summary = read_json::<MetricsSummary>(&profile.metrics_summary_path()).ok().flatten();
        for v in decision.kernels {
            let duration_ns = summary
                .as_ref()
                .and_then(|s| s.kernels.iter().find(|k| k.kernel == v.kernel))
                .and_then(|k| k.get("duration_ns"));
            out.push(IndexRow {
                profile: d.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                kernel: v.kernel,
                classification: v.classification,
                confidence: v.confidence,
                limiter: v.limiter.map(|l| l.id),
                duration_ns,
                follow_up_stage: v.follow_up_stage,
            });
        }
    }
    out
}

/// Writes `index.json` and `index.md` under `root`.
pub fn write(root: &Path) -> Result<()> {
    let rows = rows(root);
    let json = serde_json::json!({ "schema_version": 1, "profiles": rows });
    crate::profile::fs::write_atomic(&index_json_path(root), &(serde_json::to_string_pretty(&json)? + "\n"))?;
    let mut md = String::from(
        "# Kernel profiles\n\n| profile | kernel | verdict | cause | confidence | duration | next stage |\n|---|---|---|---|---|---|---|\n",
    );
    for r in &rows {
        md.push_str(&format!(
            "| [{p}]({p}/final_report.md) | `{}` | {} | {} | {} | {} | {} |\n",
            r.kernel,
            r.classification.name(),
            r.limiter.as_deref().map(|l| format!("`{l}`")).unwrap_or_else(|| "-".into()),
            r.confidence.name(),
            r.duration_ns.map(duration).unwrap_or_else(|| "-".into()),
            r.follow_up_stage,
            p = r.profile,
        ));
    }
    crate::profile::fs::write_atomic(&index_md_path(root), &md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_folders_are_not_profiles() {
        // An import is built in a hidden folder beside its output directory; a crash can
        // leave one, analysed, behind. It is not listed.
        let tmp = tempfile::tempdir().unwrap();
        let decision = r#"{"schema_version":1,"rules":"r","kernels":[{"kernel":"k","classification":"memory-bound","confidence":"high","rule":null,"evidence":[],"follow_up_stage":"memory","hypotheses":[]}]}"#;
        for name in ["k_20261130_000000", ".k.staging-1"] {
            let dir = ProfileDir::at(tmp.path().join(name));
            std::fs::create_dir_all(dir.details_dir()).unwrap();
            std::fs::write(dir.bottleneck_decision_path(), decision).unwrap();
        }
        let listed: Vec<String> = rows(tmp.path()).into_iter().map(|r| r.profile).collect();
        assert_eq!(listed, ["k_20261130_000000"]);
    }
}
