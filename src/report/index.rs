//! `profile/index.md` and `profile/index.json`: every profile under a profile root, one
//! row each, newest first; `index.html` is written with them (`crate::report::html::root`).
//!
//! Regenerated after each run from the profile directories themselves (their
//! `bottleneck_decision.json` and `metrics_summary.json`), so it is always derived data:
//! rewriting it loses nothing, and it never touches a profile directory. A root whose
//! profiles one shard made (`--partition`) names the shard; a root written by
//! `cargo kprof merge` names the shards merged into it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::analyze::coverage::stage_is_here;
use crate::analyze::summary::MetricsSummary;
use crate::model::partition::Partition;
use crate::model::stage::Stage;
use crate::model::verdict::{Classification, Confidence};
use crate::profile::dir::PageKind;
use crate::profile::readers::{DurationsView, VerdictsView};
use crate::profile::root::{index_json_path, index_md_path};
use crate::profile::{ProfileDir, RunManifest};
use crate::report::html;
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
    /// What fixing the cause could save, percent of the kernel's time; absent when it
    /// is not priced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_saving_pct: Option<f64>,
    /// Median duration, ns.
    pub duration_ns: Option<f64>,
    /// The follow-up stage.
    pub follow_up_stage: Stage,
    /// Whether its metrics are already in the profile (then there is no stage to run
    /// next: act on the advice).
    pub follow_up_collected: bool,
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
        let Some(decision) = profile.read_bottleneck_decision::<VerdictsView>().ok().flatten() else {
            continue;
        };
        let summary = profile.read_metrics_summary::<DurationsView>().ok().flatten();
        let full = profile.read_metrics_summary::<MetricsSummary>().ok().flatten();
        let collected = collected_stages(&profile);
        for v in decision.kernels {
            let duration_ns = summary.as_ref().and_then(|s| s.of(&v.kernel));
            let follow_up_collected = full
                .as_ref()
                .and_then(|s| s.kernels.iter().find(|k| k.kernel == v.kernel))
                .is_some_and(|k| stage_is_here(v.follow_up_stage, &collected, k));
            out.push(IndexRow {
                profile: d.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                kernel: v.kernel,
                classification: v.classification,
                confidence: v.confidence,
                predicted_saving_pct: v.limiter.as_ref().and_then(|l| l.predicted_saving_pct),
                limiter: v.limiter.map(|l| l.id),
                duration_ns,
                follow_up_stage: v.follow_up_stage,
                follow_up_collected,
            });
        }
    }
    out
}

/// The stages whose pages a profile holds, by name (`source` for its source page).
fn collected_stages(profile: &ProfileDir) -> Vec<String> {
    let pages = profile.pages().unwrap_or_default();
    pages
        .iter()
        .filter_map(|p| match &p.kind {
            PageKind::Raw { stage: Some(s), .. } => Some(s.name().to_string()),
            PageKind::Source => Some(Stage::Source.name().to_string()),
            _ => None,
        })
        .collect()
}

/// Writes `index.json`, `index.md` and `index.html` under `root`. When every profile
/// listed was made by one shard, the index names it (`partition`).
pub fn write(root: &Path) -> Result<()> {
    write_for_shard(root, None)
}

/// [`write`], after a run of `shard`: an index with no profile still names the shard
/// (a shard that held no kernel).
pub fn write_for_shard(root: &Path, shard: Option<Partition>) -> Result<()> {
    let rows = rows(root);
    let partitions: BTreeSet<Option<Partition>> = listed(&rows)
        .map(|id| RunManifest::read(&ProfileDir::at(root.join(id))).ok().and_then(|m| m.partition))
        .collect();
    let partition = match partitions.len() {
        0 => shard,
        1 => partitions.into_iter().next().flatten(),
        _ => None,
    };
    let lines: Vec<String> = partition.map(|p| format!("Made by {}.", p.label())).into_iter().collect();
    let heading = lines.iter().map(|l| format!("{l}\n\n")).collect::<String>();
    let file = IndexFile { schema_version: INDEX_SCHEMA_VERSION, merged: None, partition, profiles: &rows };
    write_files(root, &file, &heading)?;
    write_html(root, &rows, &lines)
}

/// Where a merged index's profiles came from: one entry per shard merged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergedShard {
    /// The directory given to `merge`.
    pub source: PathBuf,
    /// The profile root read in it (itself, or its `workspace/profile`).
    pub root: PathBuf,
    /// The shard its index named, if any.
    pub partition: Option<Partition>,
    /// The profile directories copied from it.
    pub profiles: Vec<String>,
}

/// What `cargo kprof merge` records in the merged index.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergeRecord {
    /// The shards, in the order given.
    pub shards: Vec<MergedShard>,
    /// `count:I/N` shards of one partition that were not merged: their indices (at most
    /// [`crate::model::partition::MAX_SHARDS`]).
    pub missing_shards: Vec<u32>,
    /// Conditions that differ between the profiles, merged anyway with `--force`.
    pub forced: Vec<String>,
}

/// Writes a merged `index.json`, `index.md` and `index.html` under `root`, naming the
/// shards merged, the shards missing and what `--force` let through.
pub fn write_merged(root: &Path, record: &MergeRecord) -> Result<()> {
    let rows = rows(root);
    let file = IndexFile {
        schema_version: INDEX_SCHEMA_VERSION,
        merged: Some(record),
        partition: None,
        profiles: &rows,
    };
    let mut heading = String::from("Merged from:\n\n");
    let mut lines = Vec::new();
    for s in &record.shards {
        let what = s.partition.map(|p| p.label()).unwrap_or_else(|| "an unsplit run".into());
        let n = s.profiles.len();
        let profiles = if n == 1 { "1 profile".to_string() } else { format!("{n} profiles") };
        heading.push_str(&format!("- {what}: {} ({profiles})\n", s.root.display()));
        lines.push(format!("Merged from {what}: {} ({profiles}).", s.root.display()));
    }
    if !record.missing_shards.is_empty() {
        let missing = ranges(&record.missing_shards);
        heading.push_str(&format!("\n**Missing shards:** {missing}.\n"));
        lines.push(format!("Missing shards: {missing}."));
    }
    if !record.forced.is_empty() {
        let forced = record.forced.join("; ");
        heading.push_str(&format!(
            "\n**Merged with --force although the profiles were taken differently:** {forced}.\n"
        ));
        lines.push(format!("Merged with --force although the profiles were taken differently: {forced}."));
    }
    heading.push('\n');
    write_files(root, &file, &heading)?;
    write_html(root, &rows, &lines)
}

/// `index.html` (and `ab.html`) of `rows`, under the heading `lines`.
fn write_html(root: &Path, rows: &[IndexRow], lines: &[String]) -> Result<()> {
    let rows: Vec<html::root::IndexRow> = rows
        .iter()
        .map(|r| html::root::IndexRow {
            profile: r.profile.clone(),
            kernel: r.kernel.clone(),
            classification: r.classification,
            confidence: r.confidence,
            limiter: r.limiter.clone(),
            duration_ns: r.duration_ns,
        })
        .collect();
    html::root::write(root, &rows, lines)
}

/// The schema of `index.json` this cargo-kprof writes and reads.
pub const INDEX_SCHEMA_VERSION: u32 = 1;

/// Sorted shard indices as ranges: `2-4, 6, 8-9`.
pub fn ranges(indices: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < indices.len() {
        let start = indices[i];
        let mut end = start;
        while i + 1 < indices.len() && Some(indices[i + 1]) == end.checked_add(1) {
            end += 1;
            i += 1;
        }
        parts.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    parts.join(", ")
}

/// What `index.json` lists: the profile directories and the shard that made them.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Listing {
    /// The file's schema ([`INDEX_SCHEMA_VERSION`] when kprof wrote it).
    #[serde(default)]
    pub schema_version: Option<u64>,
    /// The shard, when one made every profile listed.
    #[serde(default)]
    pub partition: Option<Partition>,
    /// The rows (one per kernel of a profile).
    #[serde(default)]
    pub profiles: Vec<ListedRow>,
}

/// One row of `index.json`, as much of it as a reader needs.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ListedRow {
    /// The profile directory's name.
    pub profile: String,
}

impl Listing {
    /// The profile directories listed, each once, in the index's order.
    pub fn profile_ids(&self) -> Vec<String> {
        let mut seen = BTreeSet::new();
        self.profiles.iter().filter(|r| seen.insert(r.profile.clone())).map(|r| r.profile.clone()).collect()
    }
}

/// Reads `index.json` under `root`; `None` when there is none.
pub fn read(root: &Path) -> Result<Option<Listing>> {
    crate::profile::fs::read_json(&index_json_path(root))
}

/// The distinct profile ids of `rows`.
fn listed(rows: &[IndexRow]) -> impl Iterator<Item = &str> {
    let mut seen = BTreeSet::new();
    rows.iter().map(|r| r.profile.as_str()).filter(move |p| seen.insert(*p))
}

/// `index.json`: the rows, and the shard that made them or the shards merged into them.
#[derive(Debug, Serialize)]
struct IndexFile<'a> {
    /// Always 1.
    schema_version: u32,
    /// What `cargo kprof merge` merged (a merged index only).
    #[serde(skip_serializing_if = "Option::is_none")]
    merged: Option<&'a MergeRecord>,
    /// The shard, when one made every profile listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    partition: Option<Partition>,
    /// One row per kernel of a profile, newest first.
    profiles: &'a [IndexRow],
}

fn write_files(root: &Path, file: &IndexFile<'_>, heading: &str) -> Result<()> {
    // Written through a `Value`, whose maps sort their keys: index.json has always listed
    // every object's keys in that order, whatever order the structs declare them in.
    let json = serde_json::to_value(file)?;
    crate::profile::fs::write_atomic(&index_json_path(root), &(serde_json::to_string_pretty(&json)? + "\n"))?;
    let rows = file.profiles;
    let mut md = format!(
        "# Kernel profiles\n\n{heading}| profile | kernel | verdict | cause | predicted saving | confidence | duration | next stage |\n|---|---|---|---|---|---|---|---|\n"
    );
    for r in rows {
        md.push_str(&format!(
            "| [{p}]({p}/final_report.md) | {} | {} | {} | {} | {} | {} | {} |\n",
            super::md::cell_code(&r.kernel),
            r.classification.name(),
            r.limiter.as_deref().map(super::md::cell_code).unwrap_or_else(|| "-".into()),
            match (&r.limiter, r.predicted_saving_pct) {
                (Some(_), Some(p)) => format!("up to {} %", crate::units::value(p)),
                (Some(_), None) => "not priced".into(),
                (None, _) => "-".into(),
            },
            r.confidence.name(),
            r.duration_ns.map(duration).unwrap_or_else(|| "-".into()),
            match r.follow_up_collected {
                true => format!("none (`{}` is here)", r.follow_up_stage),
                false => format!("`{}`", r.follow_up_stage),
            },
            p = r.profile,
        ));
    }
    let mut profiles: Vec<&str> = Vec::new();
    for r in rows {
        if !profiles.contains(&r.profile.as_str()) {
            profiles.push(&r.profile);
        }
    }
    md.push_str(&super::breakdown::index_section(root, &profiles));
    crate::profile::fs::write_atomic(&index_md_path(root), &super::md::document(&md))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_shards_read_as_ranges() {
        assert_eq!(ranges(&[]), "");
        assert_eq!(ranges(&[2, 3, 4, 6, 8, 9]), "2-4, 6, 8-9");
        assert_eq!(ranges(&[1]), "1");
        assert_eq!(ranges(&[u32::MAX - 1, u32::MAX]), format!("{}-{}", u32::MAX - 1, u32::MAX));
    }

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

    #[test]
    fn index_json_lists_keys_in_sorted_order() {
        let tmp = tempfile::tempdir().unwrap();
        let row = IndexRow {
            profile: "k_1".into(),
            kernel: "k".into(),
            classification: Classification::MemoryBound,
            confidence: Confidence::High,
            limiter: Some("dram".into()),
            predicted_saving_pct: Some(12.5),
            duration_ns: Some(1500.0),
            follow_up_stage: Stage::Memory,
            follow_up_collected: true,
        };
        let partition: Partition = "count:1/2".parse().unwrap();
        let file =
            IndexFile { schema_version: 1, merged: None, partition: Some(partition), profiles: &[row] };
        write_files(tmp.path(), &file, "").unwrap();
        let written = std::fs::read_to_string(index_json_path(tmp.path())).unwrap();
        let expected = r#"{
  "partition": {
    "index": 1,
    "mode": "count",
    "total": 2
  },
  "profiles": [
    {
      "classification": "memory-bound",
      "confidence": "high",
      "duration_ns": 1500.0,
      "follow_up_collected": true,
      "follow_up_stage": "memory",
      "kernel": "k",
      "limiter": "dram",
      "predicted_saving_pct": 12.5,
      "profile": "k_1"
    }
  ],
  "schema_version": 1
}
"#;
        assert_eq!(written, expected);
        // A follow-up already collected is not the next stage.
        let md = std::fs::read_to_string(index_md_path(tmp.path())).unwrap();
        assert!(md.contains("| none (`memory` is here) |"), "{md}");
    }
}
