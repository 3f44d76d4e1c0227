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

/// The measurement of a kernel's `case` in a harness result. The case is what the harness
/// selects with (`KPROF_CASE`): an unanchored regex over case names (`^stream_scale_f4/`),
/// so it is matched as one; a case that is not a valid regex is matched by its name's
/// start, as plain names (`hgemm_tiled`) always were.
pub fn case_result<'a>(result: &'a ResultFile, case: Option<&str>) -> Option<&'a kprof_contract::CaseResult> {
    match case.map(regex::Regex::new) {
        Some(Ok(re)) => result.case_where(|name| re.is_match(name)),
        _ => result.case(case),
    }
}

impl TimingFacts {
    /// The profiled case's `hot` measurement (else `cold`) from a harness result.
    pub fn of(result: &ResultFile, case: Option<&str>) -> Option<TimingFacts> {
        let c = case_result(result, case)?;
        Some(TimingFacts {
            case: c.name.clone(),
            mode: c.mode.as_str().to_string(),
            median_ns: c.median_ns,
            samples: c.samples,
            rel_noise: c.rel_noise,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(names: &[&str]) -> ResultFile {
        let cases: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                format!(
                    r#"{{"name":"{n}","mode":"hot","graph":false,"batch":1,"samples":5,"median_ns":{},
                    "min_ns":1.0,"max_ns":1.0,"mean_ns":1.0,"stddev_ns":0.0,"rel_noise":0.01,"rel_stddev":0.01,
                    "stop_reason":"converged","check":"passed","bytes":null,"flops":null,"gbps":null,
                    "tflops":null,"pct_dram_peak":null,"pct_fp32_peak":null}}"#,
                    (i + 1) * 100
                )
            })
            .collect();
        let json = format!(
            r#"{{"schema_version":1,"harness_version":"0.1.0","bench":"memory","device":{{"name":"NVIDIA H200"}},
            "settings":{{}},"cases":[{}]}}"#,
            cases.join(",")
        );
        serde_json::from_str(&json).unwrap()
    }

    /// A zoo kernel's case is a regex (`^stream_scale_f4/`), as the harness reads it; a
    /// grouped timing run's result holds every case of the group.
    #[test]
    fn a_case_is_found_by_the_regex_the_harness_selected_it_with() {
        let doc = result(&["stream_scale_f4/bytes=2147483648", "l2_reread_cg/bytes=33554432"]);
        let of = |case: &str| TimingFacts::of(&doc, Some(case)).map(|f| f.median_ns);
        assert_eq!(of("^stream_scale_f4/"), Some(100.0));
        assert_eq!(of("^l2_reread_cg/"), Some(200.0));
        assert_eq!(of("l2_reread"), Some(200.0));
        assert_eq!(of("^nothing/"), None);
        // Not a regex: the name's start, as before.
        assert_eq!(of("l2_reread_cg/bytes=("), None);
        assert_eq!(TimingFacts::of(&doc, None).map(|f| f.median_ns), Some(100.0));
    }
}
