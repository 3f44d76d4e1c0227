//! The harness timing of one case: what `details/timing.json` holds, what a baseline
//! check compares, and what an A/B check's rounds are made of.

use kprof_contract::ResultFile;
use serde::{Deserialize, Serialize};

/// The harness timing of the profiled case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimingFacts {
    /// The case (`hgemm_tiled/m=4096,n=4096,k=4096`).
    pub case: String,
    /// `hot` or `cold`.
    pub mode: String,
    /// Median time per launch, ns.
    pub median_ns: f64,
    /// Number of samples.
    pub samples: usize,
    /// Relative noise (robust stddev / mean).
    pub rel_noise: f64,
}

impl TimingFacts {
    /// A 95 % interval for the median: `median * (1 +- 1.96 * 1.2533 * noise / sqrt(n))`.
    /// The median's standard error is about 1.2533 times the mean's for a normal sample;
    /// `rel_noise` is the harness' outlier-robust spread.
    pub fn interval(&self) -> (f64, f64) {
        let n = self.samples.max(1) as f64;
        let half = self.median_ns * 1.96 * 1.2533 * self.rel_noise / n.sqrt();
        (self.median_ns - half, self.median_ns + half)
    }
}

impl TimingFacts {
    /// The profiled case's `hot` measurement (else `cold`) from a harness result.
    pub fn of(result: &ResultFile, case: Option<&str>) -> Option<TimingFacts> {
        let c = result.case(case)?;
        Some(TimingFacts {
            case: c.name.clone(),
            mode: c.mode.as_str().to_string(),
            median_ns: c.median_ns,
            samples: c.samples,
            rel_noise: c.rel_noise,
        })
    }
}
