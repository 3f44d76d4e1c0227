//! What `report.html` shows, read back from the profile directory's own files: the
//! summary, the verdict, the hotspots, the stages and the comparisons. Nothing else is
//! read, so rendering the same directory again gives the same page.

use anyhow::Result;
use serde::Deserialize;

use crate::analyze::inputs::{describe, Provenance};
use crate::analyze::rules::BottleneckDecision;
use crate::analyze::summary::MetricsSummary;
use crate::compare::Comparison;
use crate::model::ab::AbVerdict;
use crate::profile::dir::PageKind;
use crate::profile::fs::read_json;
use crate::profile::{ProfileDir, RunManifest};

/// Everything one profile directory holds that its page shows.
#[derive(Debug, Clone)]
pub struct ProfileData {
    /// The directory's name.
    pub id: String,
    /// What the directory says about itself (title, target, filter, clocks).
    pub provenance: Provenance,
    /// `details/metrics_summary.json`.
    pub summary: MetricsSummary,
    /// `details/bottleneck_decision.json`.
    pub decision: BottleneckDecision,
    /// `details/source_hotspots.csv`, in its order (hottest line first, its SASS after it).
    pub hotspots: Vec<HotRow>,
    /// Whether a source page was collected (the hotspots may still be empty).
    pub source_collected: bool,
    /// `run_manifest.yaml`, for a profile kprof collected.
    pub manifest: Option<RunManifest>,
    /// The ncu pages under `details/` (`details/01_basic_raw.csv`), for an import.
    pub pages: Vec<String>,
    /// `comparison/regression.json`: the comparison with a baseline.
    pub comparison: Option<Comparison>,
    /// `comparison/ab.json`: an A/B check's result.
    pub ab: Option<AbDocument>,
    /// `comparison/ab_profiles.json`: the A/B check's two profiled launches compared.
    pub ab_profiles: Option<Comparison>,
    /// The other files of the directory a reader may open, relative to it.
    pub files: Vec<String>,
}

/// One row of `source_hotspots.csv`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct HotRow {
    /// `cuda` (a source line) or `sass` (an instruction under the line before it).
    pub kind: String,
    /// The kernel (function) name.
    pub function: String,
    /// The source file.
    pub file: String,
    /// The line number (0 without line info).
    pub line: u32,
    /// The SASS address (`sass` rows).
    #[serde(default)]
    pub address: String,
    /// The source text or the instruction.
    #[serde(default)]
    pub source: String,
    /// Warp samples.
    #[serde(default)]
    pub samples: f64,
    /// Share of the kernel's samples, percent.
    #[serde(default)]
    pub pct_of_kernel: f64,
    /// The largest stall reasons, `reason=samples` joined by `; `.
    #[serde(default)]
    pub top_stalls: String,
}

impl HotRow {
    /// A source line (not an instruction).
    pub fn is_line(&self) -> bool {
        self.kind == "cuda"
    }
}

/// `comparison/ab.json`, as much of it as the pages show.
#[derive(Debug, Clone, Deserialize)]
pub struct AbDocument {
    /// How the check named the base (`3f2a1c9d0e1b (main)`).
    pub base: String,
    /// The reviewer's line.
    pub line: String,
    /// The result.
    pub result: AbResult,
}

/// The result part of `ab.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct AbResult {
    /// The kernel.
    pub kernel: String,
    /// The verdict.
    pub verdict: AbVerdict,
    /// Which signal decided it.
    #[serde(default)]
    pub decided_by: Option<String>,
    /// Where the head's time goes.
    #[serde(default)]
    pub hotspot: Option<String>,
    /// The interleaved timing.
    #[serde(default)]
    pub time: Option<AbTime>,
    /// The counters.
    #[serde(default)]
    pub counters: Option<AbCounters>,
}

/// The timing of an A/B check: the change and its interval, percent.
#[derive(Debug, Clone, Deserialize)]
pub struct AbTime {
    /// Rounds kept.
    pub rounds: usize,
    /// The estimate of the change.
    pub estimate_pct: f64,
    /// The interval's lower end.
    pub lo_pct: f64,
    /// The interval's upper end.
    pub hi_pct: f64,
    /// The interval's achieved confidence, 0 to 1.
    pub confidence: f64,
    /// The smallest change the run resolves.
    pub resolution_pct: f64,
    /// The tolerance.
    pub tolerance_pct: f64,
}

/// The counters of an A/B check.
#[derive(Debug, Clone, Deserialize)]
pub struct AbCounters {
    /// Each counter on both sides.
    pub changes: Vec<AbCounter>,
}

/// One counter of an A/B check.
#[derive(Debug, Clone, Deserialize)]
pub struct AbCounter {
    /// Its name for people.
    pub label: String,
    /// ncu's metric.
    pub metric: String,
    /// The base's count.
    pub base: f64,
    /// The head's count.
    pub head: f64,
    /// The change, percent, when the base is not 0.
    #[serde(default)]
    pub change_pct: Option<f64>,
    /// Beyond its class's variation.
    #[serde(default)]
    pub moved: bool,
    /// It fails the gate.
    #[serde(default)]
    pub gated: bool,
    /// Why it does or does not matter.
    #[serde(default)]
    pub why: Option<String>,
}

/// Reads `dir`; `Ok(None)` when it holds no analysis (no summary or no verdict).
pub fn load(dir: &ProfileDir) -> Result<Option<ProfileData>> {
    let Some(summary) = dir.read_metrics_summary::<MetricsSummary>()? else { return Ok(None) };
    let Some(decision) = dir.read_bottleneck_decision::<BottleneckDecision>()? else { return Ok(None) };
    let (provenance, _) = describe(dir)?;
    let pages: Vec<_> = dir.pages().map(|p| p.into_iter().collect()).unwrap_or_default();
    let source_collected = pages.iter().any(|p| p.kind == PageKind::Source);
    let hotspots = match std::fs::read(dir.source_hotspots_path()) {
        Ok(bytes) => csv::Reader::from_reader(bytes.as_slice()).deserialize().collect::<Result<_, _>>()?,
        Err(_) => Vec::new(),
    };
    let manifest = if dir.run_manifest_path().is_file() { RunManifest::read(dir).ok() } else { None };
    let files = [
        dir.final_report_path(),
        dir.visual_summary_path(),
        dir.regression_report_path(),
        dir.comparison_png_path(),
        dir.target_spec_path(),
        dir.run_manifest_path(),
        dir.commands_script_path(),
    ]
    .iter()
    .filter(|p| p.is_file())
    .map(|p| dir.relative(p))
    .collect();
    Ok(Some(ProfileData {
        id: dir.id().to_string(),
        provenance,
        summary,
        decision,
        hotspots,
        source_collected,
        manifest,
        pages: pages.iter().map(|p| p.origin.clone()).collect(),
        comparison: read_json(&dir.regression_json_path())?,
        ab: read_json(&dir.ab_result_path())?,
        ab_profiles: read_json(&dir.ab_profiles_path())?,
        files,
    }))
}
