//! What benchmark history tools read from `cargo kprof check`: Bencher Metric Format
//! (`--bmf`) and github-action-benchmark's `customSmallerIsBetter` array
//! (`--github-benchmark`). Pure: the check's results in, a [`Value`] out, built from
//! typed documents whose fields keep the files' key order.
//!
//! One benchmark per kernel, named `package::kernel` (the kernel's name alone when it has
//! no package). Its latency is the harness timing's median with its 95 % interval when the
//! kernel was timed, else ncu's duration of the profiled launch, in nanoseconds either way:
//! the value the gate compares.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::compare::{Comparison, Snapshot, Verdict};
use crate::model::timing::TimingFacts;

/// One kernel of a check run, as the result files show it.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The benchmark's name, see [`benchmark_name`].
    pub name: String,
    /// The harness timing, when the kernel was timed.
    pub timing: Option<TimingFacts>,
    /// ncu's `gpu__time_duration.sum` of the profiled launch, ns, when it was profiled.
    pub ncu_duration_ns: Option<f64>,
    /// The comparison with the baseline, when one was asked for.
    pub comparison: Option<Comparison>,
    /// An A/B check's reviewer line (`check --base`), which then is the outcome.
    pub ab_line: Option<String>,
}

/// `package::kernel`, or `kernel` without a package.
pub fn benchmark_name(package: Option<&str>, kernel: &str) -> String {
    match package {
        Some(p) if !p.is_empty() => format!("{p}::{kernel}"),
        _ => kernel.to_string(),
    }
}

impl Measured {
    /// The kernel profiled (or timed) into `current`, of `package`.
    pub fn of(package: Option<&str>, current: &Snapshot, comparison: Option<&Comparison>) -> Measured {
        Measured {
            name: benchmark_name(package, &current.identity.kernel),
            timing: current.timing.clone(),
            ncu_duration_ns: current.kernel.get("duration_ns"),
            comparison: comparison.cloned(),
            ab_line: None,
        }
    }

    /// The latency, ns, and its 95 % interval when it is a harness median.
    pub fn latency(&self) -> Option<(f64, Option<(f64, f64)>)> {
        match &self.timing {
            Some(t) => Some((t.median_ns, Some(t.interval()))),
            None => self.ncu_duration_ns.map(|d| (d, None)),
        }
    }

    /// The verdict and the change against the baseline, in a few words.
    pub fn outcome(&self) -> String {
        if let Some(line) = &self.ab_line {
            return line.clone();
        }
        let Some(c) = &self.comparison else { return "no baseline compared".into() };
        match &c.duration {
            Some(d) => format!(
                "{}: {} against {} ({})",
                d.verdict.word(),
                crate::units::pct_signed(d.delta_pct, 1),
                c.baseline.label,
                d.source
            ),
            None => {
                format!("{}: no duration on one side of {}", Verdict::NotCompared.word(), c.baseline.label)
            }
        }
    }
}

/// One kernel's measures in a BMF document. The fields are in the order a JSON map of
/// them has always been written (alphabetical), so the files stay byte-identical.
#[derive(Debug, Serialize)]
struct BmfMeasures {
    #[serde(skip_serializing_if = "Option::is_none")]
    latency: Option<BmfMeasure>,
    #[serde(rename = "ncu-duration", skip_serializing_if = "Option::is_none")]
    ncu_duration: Option<BmfMeasure>,
}

/// A BMF measure: `value`, with `lower_value` and `upper_value` when there is an interval.
#[derive(Debug, Serialize)]
struct BmfMeasure {
    #[serde(skip_serializing_if = "Option::is_none")]
    lower_value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    upper_value: Option<f64>,
    value: f64,
}

/// One entry of github-action-benchmark's input, fields in alphabetical order as above.
#[derive(Debug, Serialize)]
struct BenchmarkEntry<'a> {
    extra: String,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    range: Option<String>,
    unit: &'static str,
    value: f64,
}

/// A document as a [`Value`]. The documents hold only string keys, which always convert.
fn to_value(doc: impl Serialize) -> Value {
    serde_json::to_value(doc).unwrap_or_default()
}

/// Bencher Metric Format: `{ name: { "latency": {value, lower_value, upper_value},
/// "ncu-duration": {value} } }`. A kernel with neither measure is left out.
pub fn bmf(kernels: &[Measured]) -> Value {
    let mut out: BTreeMap<&str, BmfMeasures> = BTreeMap::new();
    for k in kernels {
        let latency = k.latency().map(|(value, interval)| BmfMeasure {
            lower_value: interval.map(|(lo, _)| lo),
            upper_value: interval.map(|(_, hi)| hi),
            value,
        });
        let ncu_duration =
            k.ncu_duration_ns.map(|d| BmfMeasure { lower_value: None, upper_value: None, value: d });
        if latency.is_some() || ncu_duration.is_some() {
            out.insert(&k.name, BmfMeasures { latency, ncu_duration });
        }
    }
    to_value(out)
}

/// github-action-benchmark's `customSmallerIsBetter` input: one entry per kernel with its
/// latency in ns, `range` the half width of the 95 % interval (harness timings only) and
/// `extra` the verdict and change against the baseline.
pub fn github_benchmark(kernels: &[Measured]) -> Value {
    let entries: Vec<BenchmarkEntry> = kernels
        .iter()
        .filter_map(|k| {
            let (value, interval) = k.latency()?;
            Some(BenchmarkEntry {
                extra: k.outcome(),
                name: &k.name,
                range: interval.map(|(lo, hi)| range((hi - lo) / 2.0)),
                unit: "ns",
                value,
            })
        })
        .collect();
    to_value(entries)
}

/// `± 7446` (ns; two decimals below 10 ns).
fn range(half: f64) -> String {
    if half.abs() >= 10.0 {
        format!("± {half:.0}")
    } else {
        format!("± {half:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn timed(median: f64) -> TimingFacts {
        TimingFacts {
            case: "k/x=1".into(),
            mode: "hot".into(),
            median_ns: median,
            samples: 100,
            rel_noise: 0.01,
        }
    }

    #[test]
    fn names_carry_the_package_when_there_is_one() {
        assert_eq!(benchmark_name(Some("demo"), "hgemm_tiled"), "demo::hgemm_tiled");
        assert_eq!(benchmark_name(None, "hgemm_tiled"), "hgemm_tiled");
    }

    #[test]
    fn the_latency_is_the_harness_median_else_ncus_duration() {
        let both = Measured {
            name: "a".into(),
            timing: Some(timed(1000.0)),
            ncu_duration_ns: Some(1200.0),
            comparison: None,
            ab_line: None,
        };
        let ncu = Measured {
            name: "b".into(),
            timing: None,
            ncu_duration_ns: Some(500.0),
            comparison: None,
            ab_line: None,
        };
        let none = Measured {
            name: "c".into(),
            timing: None,
            ncu_duration_ns: None,
            comparison: None,
            ab_line: None,
        };
        let kernels = [both, ncu, none];
        let b = bmf(&kernels);
        let (lo, hi) = timed(1000.0).interval();
        assert_eq!(
            b["a"],
            json!({"latency": {"value": 1000.0, "lower_value": lo, "upper_value": hi},
                   "ncu-duration": {"value": 1200.0}})
        );
        assert_eq!(b["b"], json!({"latency": {"value": 500.0}, "ncu-duration": {"value": 500.0}}));
        assert!(b.get("c").is_none(), "{b}");
        let g = github_benchmark(&kernels);
        assert_eq!(g.as_array().unwrap().len(), 2);
        assert_eq!(g[0]["value"], 1000.0);
        assert_eq!(g[0]["unit"], "ns");
        assert_eq!(g[0]["range"], range((hi - lo) / 2.0));
        assert_eq!(range(7445.6), "± 7446");
        assert_eq!(range(2.345), "± 2.35");
        assert_eq!(g[0]["extra"], "no baseline compared");
        assert!(g[1].get("range").is_none(), "{g}");
    }
}
