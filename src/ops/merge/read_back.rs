//! What `merge` reads back from the shards it merges: the verdicts `check` left in each
//! profile (an A/B check's `comparison/ab.json`, a baseline comparison's
//! `regression.json`), the conditions the profiles were taken under, and which shards of
//! a partition are there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{Planned, Source};
use crate::compare::gate::GateResult;
use crate::compare::{Comparison, Conditions, Snapshot};
use crate::model::partition::Partition;
use crate::profile::fs::read_json;
use crate::profile::ProfileDir;
use crate::report::index;

/// One kernel's A/B verdict, as `check --base` left it in `comparison/ab.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct AbRecord {
    /// The kernel.
    pub kernel: String,
    /// Its verdict.
    pub verdict: crate::model::ab::AbVerdict,
    /// Which signal decided it.
    pub decided_by: Option<String>,
    /// Where the head's time went.
    pub hotspot: Option<String>,
    /// The reviewer's line, as the check printed it.
    pub line: String,
    /// The profile (in the merged root).
    pub profile: PathBuf,
}

pub(super) fn ab_record(dir: &Path) -> Result<Option<AbRecord>> {
    #[derive(serde::Deserialize)]
    struct Doc {
        result: DocResult,
        line: String,
    }
    #[derive(serde::Deserialize)]
    struct DocResult {
        kernel: String,
        verdict: crate::model::ab::AbVerdict,
        #[serde(default)]
        decided_by: Option<String>,
        #[serde(default)]
        hotspot: Option<String>,
    }
    let Some(doc) = read_json::<Doc>(&ProfileDir::at(dir).ab_result_path())? else { return Ok(None) };
    Ok(Some(AbRecord {
        kernel: doc.result.kernel,
        verdict: doc.result.verdict,
        decided_by: doc.result.decided_by,
        hotspot: doc.result.hotspot,
        line: doc.line,
        profile: dir.into(),
    }))
}

/// The comparison `check` or `compare` left in the profile at `dir`, if any.
pub(super) fn comparison(dir: &Path) -> Result<Option<GateResult>> {
    let profile = ProfileDir::at(dir);
    if profile.ab_result_path().is_file() {
        // An A/B check's verdict is its ab.json (see `ab_record`).
        return Ok(None);
    }
    let Some(comparison) = read_json::<Comparison>(&profile.regression_json_path())? else { return Ok(None) };
    Ok(Some(GateResult {
        profile: dir.to_path_buf(),
        comparison,
        report: profile.regression_report_path(),
        warnings: Vec::new(),
    }))
}

/// Reads one condition of a profile.
type ConditionField = fn(&Conditions) -> Option<String>;

/// One line per condition (GPU, ncu version, clock control) whose value differs between
/// the profiles, naming each value and its profiles.
pub(super) fn condition_mismatches(profiles: &[Planned]) -> Vec<String> {
    let conditions: Vec<(&str, Conditions)> = profiles
        .iter()
        .map(|(id, dir, _)| {
            (id.as_str(), Snapshot::load(dir, id.clone()).map(|s| s.conditions).unwrap_or_default())
        })
        .collect();
    let fields: [(&str, ConditionField); 3] = [
        ("GPU", |c| c.device.clone()),
        ("ncu version", |c| c.ncu_version.clone()),
        ("clock control", |c| c.clock_control.clone()),
    ];
    let mut out = Vec::new();
    for (what, get) in fields {
        let mut by_value: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for (id, c) in &conditions {
            let value = get(c).map(|v| format!("`{v}`")).unwrap_or_else(|| "not recorded".into());
            by_value.entry(value).or_default().push(id);
        }
        if by_value.len() > 1 {
            let parts: Vec<String> =
                by_value.iter().map(|(v, ids)| format!("{v} ({})", ids.join(", "))).collect();
            out.push(format!("{what} differs: {}", parts.join(" vs ")));
        }
    }
    out
}

/// The shard indices missing from sources of one partition (same mode and total), and
/// warnings: missing shards, a shard given twice, shards of different partitions.
pub(super) fn coverage(sources: &[Source]) -> (Vec<u32>, Vec<String>) {
    let shards: Vec<Partition> = sources.iter().filter_map(|s| s.listing.partition).collect();
    let mut warnings = Vec::new();
    let Some(first) = shards.first() else { return (Vec::new(), warnings) };
    let kinds: BTreeSet<(&str, u32)> = shards.iter().map(|p| (p.mode.name(), p.total)).collect();
    if kinds.len() > 1 {
        let all: Vec<String> = shards.iter().map(|p| p.to_string()).collect();
        warnings.push(format!(
            "the shards are not of one partition ({}): kernels may be missing or merged twice",
            all.join(", ")
        ));
        return (Vec::new(), warnings);
    }
    let mut seen = BTreeSet::new();
    for p in &shards {
        if !seen.insert(p.index) {
            warnings.push(format!("{p} is merged more than once"));
        }
    }
    // Every total was checked against MAX_SHARDS: the list is bounded.
    let missing: Vec<u32> = (1..=first.total).filter(|i| !seen.contains(i)).collect();
    if !missing.is_empty() {
        warnings.push(format!(
            "missing shards of {}:I/{}: {} (the merged index lacks their kernels)",
            first.mode.name(),
            first.total,
            index::ranges(&missing)
        ));
    }
    (missing, warnings)
}
