//! Typed readers for the files the analysis and the harness leave in a profile
//! directory's `details/`: `metrics_summary.json`, `bottleneck_decision.json` and
//! `timing.json`.
//!
//! The directory owns the paths and what a missing file means (`Ok(None)`, never an
//! error); the reader says what it reads. `timing.json` is the harness contract's
//! [`ResultFile`]. The analysis' two files are written with its own types, which this
//! floor does not know: a reader that needs all of them (a comparison) names that type,
//! and one that needs a few fields names a view from here ([`VerdictsView`],
//! [`DurationsView`]) that reads just those and ignores the rest.

use anyhow::Result;
use kprof_contract::ResultFile;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::dir::ProfileDir;
use super::fs::read_json;
use crate::model::stage::Stage;
use crate::model::verdict::{Classification, Confidence};

impl ProfileDir {
    /// `details/metrics_summary.json` as `T` (the analysis' summary, or a
    /// [`DurationsView`]); `Ok(None)` when there is none.
    pub fn read_metrics_summary<T: DeserializeOwned>(&self) -> Result<Option<T>> {
        read_json(&self.metrics_summary_path())
    }

    /// `details/bottleneck_decision.json` as `T` (the analysis' decision, or a
    /// [`VerdictsView`]); `Ok(None)` when there is none.
    pub fn read_bottleneck_decision<T: DeserializeOwned>(&self) -> Result<Option<T>> {
        read_json(&self.bottleneck_decision_path())
    }

    /// `details/timing.json`, the harness' result; `Ok(None)` when the profile was not timed.
    pub fn read_timing(&self) -> Result<Option<ResultFile>> {
        read_json(&self.timing_path())
    }

    /// `breakdown.json`, the program's census; `Ok(None)` where no census ran.
    pub fn read_breakdown(&self) -> Result<Option<crate::model::census::Breakdown>> {
        read_json(&self.breakdown_json_path())
    }

    /// Whether the profile was timed (`details/timing.json` exists, readable or not).
    pub fn has_timing(&self) -> bool {
        self.timing_path().is_file()
    }
}

/// The verdicts of `bottleneck_decision.json`, in brief: what a listing of profiles shows.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct VerdictsView {
    /// One per kernel.
    pub kernels: Vec<VerdictBrief>,
}

/// One kernel's verdict, in brief.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct VerdictBrief {
    /// The kernel.
    pub kernel: String,
    /// The class.
    pub classification: Classification,
    /// How sure.
    pub confidence: Confidence,
    /// The cause a limiter named, if any.
    #[serde(default)]
    pub limiter: Option<LimiterId>,
    /// The stage that would tell more.
    pub follow_up_stage: Stage,
}

/// A limiter finding, by its id only.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LimiterId {
    /// The limiter (`shared-bank-conflicts`).
    pub id: String,
    /// Its predicted saving, percent of the kernel's time (absent before it was priced).
    #[serde(default)]
    pub predicted_saving_pct: Option<f64>,
}

/// The kernels' durations in `metrics_summary.json`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct DurationsView {
    /// One per kernel.
    pub kernels: Vec<KernelDuration>,
}

/// One kernel's median duration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct KernelDuration {
    /// The kernel.
    pub kernel: String,
    /// Median duration, ns, when collected.
    #[serde(default)]
    pub duration_ns: Option<f64>,
}

impl DurationsView {
    /// The duration of `kernel`, when the summary has it.
    pub fn of(&self, kernel: &str) -> Option<f64> {
        self.kernels.iter().find(|k| k.kernel == kernel).and_then(|k| k.duration_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_read_what_they_name_and_ignore_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = ProfileDir::at(tmp.path());
        assert_eq!(dir.read_bottleneck_decision::<VerdictsView>().unwrap(), None);
        assert_eq!(dir.read_metrics_summary::<DurationsView>().unwrap(), None);
        assert!(dir.read_timing().unwrap().is_none() && !dir.has_timing());
        std::fs::create_dir_all(dir.details_dir()).unwrap();
        let decision = r#"{"schema_version":1,"rules":"r","kernels":[{"kernel":"k","classification":"memory-bound",
            "confidence":"high","rule":null,"evidence":[],"follow_up_stage":"memory","hypotheses":[],
            "limiter":{"id":"dram-bound","advice":"a"}}]}"#;
        std::fs::write(dir.bottleneck_decision_path(), decision).unwrap();
        let v = dir.read_bottleneck_decision::<VerdictsView>().unwrap().unwrap();
        assert_eq!(v.kernels[0].limiter.as_ref().map(|l| l.id.as_str()), Some("dram-bound"));
        assert_eq!(v.kernels[0].follow_up_stage, Stage::Memory);
        let summary = r#"{"schema_version":1,"kernels":[{"kernel":"k","launches":3,"duration_ns":1500.0,
            "dram_throughput_pct":80.0,"top_stalls":[]},{"kernel":"j","launches":1,"duration_ns":null,"top_stalls":[]}]}"#;
        std::fs::write(dir.metrics_summary_path(), summary).unwrap();
        let d = dir.read_metrics_summary::<DurationsView>().unwrap().unwrap();
        assert_eq!((d.of("k"), d.of("j"), d.of("x")), (Some(1500.0), None, None));
        std::fs::write(dir.metrics_summary_path(), "not json").unwrap();
        assert!(dir.read_metrics_summary::<DurationsView>().is_err());
    }
}
