//! The result of a run: a schema-versioned JSON document and a table for people.
//!
//! The JSON is the contract with `cargo kprof` (and any script), so its field names are
//! fixed by a test; a change that renames or removes a field bumps [`SCHEMA_VERSION`].
//! Times are nanoseconds per launch; fields that cannot be known (no bytes given, a peak
//! of an unknown architecture) are `null`, never guessed. The one exception is
//! `sm_clock_mhz`, the SM clock measured right after the last sample
//! ([`crate::timing::Measurement::sm_clock_mhz`]): it is left out when the probe could not
//! run, so that results of older harnesses and newer ones read alike.
//!
//! ```json
//! {
//!   "schema_version": 1,
//!   "harness_version": "0.1.0",
//!   "bench": "hgemm",
//!   "device": { "ordinal": 0, "name": "NVIDIA H200", "compute_capability": "9.0",
//!               "sm_count": 132, "l2_bytes": 62914560, "memory_bytes": 150754820096,
//!               "sm_clock_khz": 1980000, "memory_clock_khz": 3201000,
//!               "memory_bus_width_bits": 6144, "max_shared_memory_per_block_optin": 232448,
//!               "driver_version": "13.0", "dram_peak_gbps": 4916.7, "fp32_peak_tflops": 66.9 },
//!   "settings": { "max_noise": 0.005, "min_samples": 10, "min_time_s": 0.5,
//!                 "timeout_s": 10.0, "graphs": true, "seed": 7741 },
//!   "cases": [ { "name": "hgemm_tiled/m=4096,n=4096,k=4096", "mode": "cold",
//!                "graph": false, "batch": 1, "samples": 31, "median_ns": 9.1e6,
//!                "min_ns": 9.0e6, "max_ns": 9.3e6, "mean_ns": 9.1e6, "stddev_ns": 2.1e4,
//!                "rel_noise": 0.0023, "rel_stddev": 0.0025, "stop_reason": "converged", "check": "passed",
//!                "bytes": 134217728, "flops": 137438953472, "gbps": 14.7,
//!                "tflops": 15.1, "pct_dram_peak": 0.3, "pct_fp32_peak": 22.6,
//!                "sm_clock_mhz": 1980.0 } ]
//! }
//! ```

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::config::Options;
use crate::device::DeviceInfo;
use crate::timing::Measurement;

/// A whole run's result.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Version of this crate.
    pub harness_version: String,
    /// The bench binary's name (without cargo's hash suffix).
    pub bench: String,
    /// The device measured.
    pub device: DeviceInfo,
    /// Settings the measurements ran with.
    pub settings: Settings,
    /// One entry per case and mode.
    pub cases: Vec<CaseResult>,
}

/// Settings recorded in the result.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    /// Target relative noise (fraction).
    pub max_noise: f64,
    /// Minimum samples.
    pub min_samples: usize,
    /// Minimum measured GPU time, seconds.
    pub min_time_s: f64,
    /// Wall-time limit per measurement, seconds.
    pub timeout_s: f64,
    /// Whether graph cases ran through graphs.
    pub graphs: bool,
    /// Seed of the random inputs.
    pub seed: u64,
}

impl Settings {
    /// The settings part of `options`.
    pub fn of(options: &Options) -> Settings {
        Settings {
            max_noise: options.rule.max_noise,
            min_samples: options.rule.min_samples,
            min_time_s: options.rule.min_time.as_secs_f64(),
            timeout_s: options.rule.timeout.as_secs_f64(),
            graphs: options.graphs,
            seed: options.seed,
        }
    }
}

pub use kprof_contract::{CaseResult, SCHEMA_VERSION};

/// Builds a [`CaseResult`]: a measurement with what the case registered and the device's peaks.
pub fn case_result(
    name: &str,
    m: &Measurement,
    graph: bool,
    check: &str,
    bytes: Option<u64>,
    flops: Option<u64>,
    device: &DeviceInfo,
) -> CaseResult {
    let s = &m.summary;
    let gbps = bytes.map(|b| b as f64 / s.median);
    let tflops = flops.map(|f| f as f64 / s.median / 1e3);
    CaseResult {
        name: name.to_string(),
        mode: m.mode,
        graph,
        batch: m.batch,
        samples: s.samples,
        median_ns: s.median,
        min_ns: s.min,
        max_ns: s.max,
        mean_ns: s.mean,
        stddev_ns: s.stddev,
        rel_noise: s.rel_noise,
        rel_stddev: s.rel_stddev,
        stop_reason: m.stop.as_str().to_string(),
        check: check.to_string(),
        bytes,
        flops,
        gbps,
        tflops,
        pct_dram_peak: gbps.zip(device.dram_peak_gbps).map(|(g, p)| 100.0 * g / p),
        pct_fp32_peak: tflops.zip(device.fp32_peak_tflops).map(|(t, p)| 100.0 * t / p),
        sm_clock_mhz: m.sm_clock_mhz,
    }
}

impl Report {
    /// The JSON text.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self).context("cannot serialise the result")
    }

    /// Writes the JSON to `path`, creating parent directories.
    pub fn write_json(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {} for KPROF_RESULT", dir.display()))?;
        }
        let mut json = self.to_json()?;
        json.push('\n');
        std::fs::write(path, json).with_context(|| format!("cannot write the result to {}", path.display()))
    }

    /// The table for people.
    pub fn table(&self) -> String {
        let d = &self.device;
        let peak = |v: Option<f64>, unit: &str| match v {
            Some(v) => format!("{v:.1} {unit}"),
            None => "unknown".to_string(),
        };
        let mut out = format!(
            "{} (sm_{}{}, {} SMs, L2 {} MiB, DRAM peak {}, FP32 peak {})\n",
            d.name,
            d.cc_major,
            d.cc_minor,
            d.sm_count,
            d.l2_bytes >> 20,
            peak(d.dram_peak_gbps, "GB/s"),
            peak(d.fp32_peak_tflops, "TFLOP/s"),
        );
        let width = self.cases.iter().map(|c| c.name.len()).max().unwrap_or(4).max(4);
        out.push_str(&format!(
            "{:<width$}  {:<4}  {:>7}  {:>10}  {:>10}  {:>10}  {:>6}  {:>8}  {:>6}  {:>8}  {:>6}\n",
            "case", "mode", "samples", "median", "min", "max", "noise", "GB/s", "%DRAM", "TFLOP/s", "%FP32",
        ));
        for c in &self.cases {
            let opt = |v: Option<f64>, digits: usize| match v {
                Some(v) => format!("{v:.digits$}"),
                None => "-".to_string(),
            };
            let mut mode = c.mode.as_str().to_string();
            if c.graph {
                mode.push('*');
            }
            out.push_str(&format!(
                "{:<width$}  {:<4}  {:>7}  {:>10}  {:>10}  {:>10}  {:>5.2}%  {:>8}  {:>6}  {:>8}  {:>6}{}\n",
                c.name,
                mode,
                c.samples,
                format_ns(c.median_ns),
                format_ns(c.min_ns),
                format_ns(c.max_ns),
                100.0 * c.rel_noise,
                opt(c.gbps, 1),
                opt(c.pct_dram_peak, 1),
                opt(c.tflops, 2),
                opt(c.pct_fp32_peak, 1),
                if c.stop_reason == "timeout" { "  (timeout: noisier than asked)" } else { "" },
            ));
        }
        if self.cases.iter().any(|c| c.graph) {
            out.push_str("* launched through a CUDA graph\n");
        }
        out
    }

    /// Prints the table to stdout.
    pub fn print_table(&self) -> Result<()> {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(self.table().as_bytes())
            .and_then(|_| stdout.flush())
            .context("cannot write the table to stdout")
    }
}

/// A duration in ns shown with a unit that keeps 3-4 significant digits.
pub fn format_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} us", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Mode;
    use crate::stats::{StopReason, Summary};

    fn device() -> DeviceInfo {
        crate::device::tests::h200_like().with_peaks()
    }

    fn report() -> Report {
        let samples = vec![1_000_000.0, 1_010_000.0, 990_000.0];
        let m = Measurement {
            mode: Mode::Cold,
            batch: 1,
            summary: Summary::of(&samples).unwrap(),
            samples,
            stop: StopReason::Converged,
            sm_clock_mhz: Some(1980.0),
        };
        let dev = device();
        let with =
            case_result("copy/n=1", &m, false, "passed", Some(2_000_000_000), Some(1_000_000_000), &dev);
        let m = Measurement { sm_clock_mhz: None, ..m };
        let without = case_result("tiny/n=1", &m, true, "none", None, None, &dev);
        Report {
            schema_version: SCHEMA_VERSION,
            harness_version: "0.1.0".into(),
            bench: "copy".into(),
            device: dev,
            settings: Settings::of(&Options::default()),
            cases: vec![with, without],
        }
    }

    #[test]
    fn json_shape_is_stable() {
        let v: serde_json::Value = serde_json::from_str(&report().to_json().unwrap()).unwrap();
        assert_eq!(v["schema_version"], 1);
        let keys = |o: &serde_json::Value| -> Vec<String> {
            let mut k: Vec<String> = o.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        assert_eq!(keys(&v), ["bench", "cases", "device", "harness_version", "schema_version", "settings"]);
        assert_eq!(
            keys(&v["device"]),
            [
                "compute_capability",
                "dram_peak_gbps",
                "driver_version",
                "fp32_peak_tflops",
                "l2_bytes",
                "max_shared_memory_per_block_optin",
                "memory_bus_width_bits",
                "memory_bytes",
                "memory_clock_khz",
                "name",
                "ordinal",
                "sm_clock_khz",
                "sm_count",
            ]
        );
        assert_eq!(
            keys(&v["settings"]),
            ["graphs", "max_noise", "min_samples", "min_time_s", "seed", "timeout_s"]
        );
        assert_eq!(
            keys(&v["cases"][0]),
            [
                "batch",
                "bytes",
                "check",
                "flops",
                "gbps",
                "graph",
                "max_ns",
                "mean_ns",
                "median_ns",
                "min_ns",
                "mode",
                "name",
                "pct_dram_peak",
                "pct_fp32_peak",
                "rel_noise",
                "rel_stddev",
                "samples",
                "sm_clock_mhz",
                "stddev_ns",
                "stop_reason",
                "tflops",
            ]
        );
        let c = &v["cases"][0];
        assert_eq!(c["mode"], "cold");
        assert_eq!(c["stop_reason"], "converged");
        assert_eq!(c["median_ns"], 1_000_000.0);
        assert_eq!(c["samples"], 3);
        assert_eq!(c["gbps"], 2000.0);
        assert_eq!(c["tflops"], 1.0);
        assert_eq!(c["sm_clock_mhz"], 1980.0);
        assert_eq!(v["device"]["compute_capability"], "9.0");
    }

    #[test]
    fn unknown_values_are_null() {
        let v: serde_json::Value = serde_json::from_str(&report().to_json().unwrap()).unwrap();
        let c = &v["cases"][1];
        for k in ["bytes", "flops", "gbps", "tflops", "pct_dram_peak", "pct_fp32_peak"] {
            assert!(c[k].is_null(), "{k} = {}", c[k]);
        }
        // An unmeasured SM clock is left out rather than null.
        assert!(c.get("sm_clock_mhz").is_none(), "{c}");
    }

    #[test]
    fn percent_of_peak() {
        let r = report();
        let c = &r.cases[0];
        // 2000 GB/s of 4916.7 GB/s; 1 TFLOP/s of 66.9 TFLOP/s.
        assert!((c.pct_dram_peak.unwrap() - 40.677).abs() < 0.01);
        assert!((c.pct_fp32_peak.unwrap() - 1.4946).abs() < 0.001);
    }

    #[test]
    fn table_has_one_row_per_case_and_the_device() {
        let t = report().table();
        assert!(t.starts_with("NVIDIA H200 (sm_90, 132 SMs, L2 60 MiB"));
        assert!(t.contains("copy/n=1"));
        assert!(t.contains("1.000 ms"));
        assert!(t.contains("cold*"), "{t}");
        assert_eq!(t.lines().count(), 1 + 1 + 2 + 1);
    }

    #[test]
    fn write_json_creates_directories() {
        let dir = std::env::temp_dir().join(format!("kprof-report-{}", std::process::id()));
        let path = dir.join("a/b/result.json");
        report().write_json(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"schema_version\": 1"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ns_formatting() {
        assert_eq!(format_ns(512.0), "512 ns");
        assert_eq!(format_ns(12_345.0), "12.35 us");
        assert_eq!(format_ns(1_500_000.0), "1.500 ms");
        assert_eq!(format_ns(2.5e9), "2.500 s");
    }
}
