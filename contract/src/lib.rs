//! The contract between `cargo kprof` and `kprof-harness`, defined once for both.
//!
//! `cargo kprof` starts a bench built on the harness with the variables in [`env`] and
//! reads back the JSON result described by [`ResultFile`]. Both crates use these names
//! and types, so renaming a variable or a field on one side cannot silently break the
//! other: it stops compiling. A change that renames or removes a result field bumps
//! [`SCHEMA_VERSION`]; adding an optional field (`#[serde(default)]`, absent in older
//! results) does not.
#![warn(missing_docs)]
// Functions stay readable: the threshold (80 lines) is in clippy.toml.
#![warn(clippy::too_many_lines)]

use serde::{Deserialize, Serialize};

/// The environment variables `cargo kprof` sets for a harness bench.
pub mod env {
    /// `1`: open the profiler window (`cuProfilerStart`/`cuProfilerStop`) around exactly
    /// [`LAUNCH_COUNT`] launches of each selected case, for `ncu --profile-from-start off`.
    pub const PROFILE: &str = "KPROF_PROFILE";
    /// Launches of each selected case inside the profiler window.
    pub const LAUNCH_COUNT: &str = "KPROF_LAUNCH_COUNT";
    /// An unanchored regex over case names: the cases to set up and run.
    pub const CASE: &str = "KPROF_CASE";
    /// Where to write the JSON result ([`crate::ResultFile`]).
    pub const RESULT: &str = "KPROF_RESULT";
    /// `1`: print no table on stdout.
    pub const QUIET: &str = "KPROF_QUIET";
    /// Set by `cargo kprof` builds (`1`): NVRTC and nvcc compile with line info.
    pub const LINEINFO: &str = "KPROF_LINEINFO";
    /// The device ordinal to open.
    pub const DEVICE: &str = "KPROF_DEVICE";
    /// `hot`, `cold` or `both`.
    pub const MODE: &str = "KPROF_MODE";
    /// Target relative noise of a measurement (a fraction, e.g. `0.005`).
    pub const MAX_NOISE: &str = "KPROF_MAX_NOISE";
    /// Minimum samples of a measurement.
    pub const MIN_SAMPLES: &str = "KPROF_MIN_SAMPLES";
    /// Minimum measured GPU time of a measurement (`0.5s`, `200ms`).
    pub const MIN_TIME: &str = "KPROF_MIN_TIME";
    /// Wall-time limit of a measurement.
    pub const TIMEOUT: &str = "KPROF_TIMEOUT";
    /// `1`: skip correctness checks.
    pub const NO_CHECK: &str = "KPROF_NO_CHECK";
    /// Seed of the random inputs.
    pub const SEED: &str = "KPROF_SEED";
    /// An existing directory where NVRTC's output is kept between runs of one check: a
    /// compile whose source, program name, options, architecture and NVRTC version match
    /// an entry loads that PTX instead of compiling again. Set only for the runs of one
    /// `cargo kprof` invocation, whose sources do not change meanwhile (the key does not
    /// cover headers the source includes). Ignored when unset or not a directory.
    pub const PTX_CACHE: &str = "KPROF_PTX_CACHE";
}

/// The environment variables `cargo kprof` sets for its census tracer (the `kprof-tracer`
/// library the CUDA driver loads through `CUDA_INJECTION64_PATH`). The tracer has no
/// dependency and spells them too; a test of cargo-kprof holds the two spellings equal.
pub mod tracer {
    /// The folder the tracer writes its trace into, one `<pid>.tsv` per process.
    pub const OUT: &str = "KPROF_TRACE_OUT";
    /// The CUPTI library the tracer opens.
    pub const CUPTI: &str = "KPROF_CUPTI";
    /// The most launches the tracer counts (`--census-launches`); unset: every launch.
    pub const LAUNCHES: &str = "KPROF_TRACE_LAUNCHES";
}

/// Version of the result JSON's shape.
pub const SCHEMA_VERSION: u32 = 1;

/// One timing mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Back-to-back launches; caches keep what the previous launch left.
    Hot,
    /// The L2 cache is flushed (overwritten) before every sample.
    Cold,
}

impl Mode {
    /// `hot` or `cold`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Hot => "hot",
            Mode::Cold => "cold",
        }
    }
}

/// One case measured in one mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// Case name, `kernel/param=value,...`.
    pub name: String,
    /// `hot` or `cold`.
    pub mode: Mode,
    /// Whether the launches replayed a CUDA graph.
    pub graph: bool,
    /// Launches per sample.
    pub batch: u32,
    /// Number of samples.
    pub samples: usize,
    /// Median time per launch, ns.
    pub median_ns: f64,
    /// Fastest sample, ns.
    pub min_ns: f64,
    /// Slowest sample, ns.
    pub max_ns: f64,
    /// Mean, ns.
    pub mean_ns: f64,
    /// Sample standard deviation, ns.
    pub stddev_ns: f64,
    /// Relative noise, robust to rare outliers.
    pub rel_noise: f64,
    /// `stddev / mean` over every sample.
    pub rel_stddev: f64,
    /// `converged` or `timeout`.
    pub stop_reason: String,
    /// `passed`, `skipped` or `none` (no check registered).
    pub check: String,
    /// Bytes moved per launch, as registered.
    pub bytes: Option<u64>,
    /// Floating-point operations per launch, as registered.
    pub flops: Option<u64>,
    /// `bytes / median`, GB/s.
    pub gbps: Option<f64>,
    /// `flops / median`, TFLOP/s.
    pub tflops: Option<f64>,
    /// GB/s as a percentage of the device's DRAM peak.
    pub pct_dram_peak: Option<f64>,
    /// TFLOP/s as a percentage of the device's FP32 peak.
    pub pct_fp32_peak: Option<f64>,
    /// The SM clock, MHz, measured by a clock64/globaltimer probe right after the last
    /// sample; absent when the probe could not run (and in results of older harnesses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<f64>,
}

/// The parts of the result JSON `cargo kprof` reads (the harness writes more: the
/// device and the settings).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ResultFile {
    /// [`SCHEMA_VERSION`] of the harness that wrote it.
    pub schema_version: u32,
    /// The harness's version.
    #[serde(default)]
    pub harness_version: String,
    /// The bench binary's name.
    #[serde(default)]
    pub bench: String,
    /// The device measured, as far as `cargo kprof` reads it.
    #[serde(default)]
    pub device: Option<ResultDevice>,
    /// One entry per case and mode.
    pub cases: Vec<CaseResult>,
}

/// The device of a result.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ResultDevice {
    /// Marketing name, e.g. `NVIDIA H200`.
    pub name: String,
}

impl ResultFile {
    /// The measurement of the case whose name starts with `case` (or, the name's kernel part
    /// equal to it; any case when `None`): the hot one when there is one, else the cold one.
    pub fn case(&self, case: Option<&str>) -> Option<&CaseResult> {
        self.case_where(|name| case.is_none_or(|k| name.split('/').next() == Some(k) || name.starts_with(k)))
    }

    /// The measurement of the first case whose name `wanted` accepts: the hot one when
    /// there is one, else the cold one.
    pub fn case_where(&self, wanted: impl Fn(&str) -> bool) -> Option<&CaseResult> {
        let pick = |mode: Mode| self.cases.iter().filter(|c| wanted(&c.name)).find(|c| c.mode == mode);
        pick(Mode::Hot).or_else(|| pick(Mode::Cold))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_the_harness_writes_and_picks_the_hot_case() {
        let json = r#"{"schema_version":1,"harness_version":"0.1.0","bench":"hgemm",
            "device":{"name":"NVIDIA H200"},"settings":{},
            "cases":[
            {"name":"a/n=1","mode":"cold","graph":false,"batch":1,"samples":5,"median_ns":10.0,"min_ns":9.0,
             "max_ns":11.0,"mean_ns":10.0,"stddev_ns":0.5,"rel_noise":0.1,"rel_stddev":0.1,
             "stop_reason":"converged","check":"passed","bytes":null,"flops":null,"gbps":null,
             "tflops":null,"pct_dram_peak":null,"pct_fp32_peak":null},
            {"name":"a/n=1","mode":"hot","graph":false,"batch":1,"samples":6,"median_ns":8.0,"min_ns":7.0,
             "max_ns":9.0,"mean_ns":8.0,"stddev_ns":0.5,"rel_noise":0.1,"rel_stddev":0.1,
             "stop_reason":"converged","check":"passed","bytes":null,"flops":null,"gbps":null,
             "tflops":null,"pct_dram_peak":null,"pct_fp32_peak":null}]}"#;
        let r: ResultFile = serde_json::from_str(json).unwrap();
        assert_eq!(r.device.as_ref().unwrap().name, "NVIDIA H200");
        assert_eq!(r.case(Some("a")).unwrap().median_ns, 8.0);
        assert_eq!(r.case(None).unwrap().mode, Mode::Hot);
        assert!(r.case(Some("b")).is_none());
        // A result without the optional clock reads as `None`.
        assert!(r.cases.iter().all(|c| c.sm_clock_mhz.is_none()));
    }

    #[test]
    fn the_sm_clock_reads_back_and_is_left_out_when_unknown() {
        let json = r#"{"name":"a/n=1","mode":"hot","graph":false,"batch":4,"samples":6,"median_ns":8.0,
            "min_ns":7.0,"max_ns":9.0,"mean_ns":8.0,"stddev_ns":0.5,"rel_noise":0.1,"rel_stddev":0.1,
            "stop_reason":"converged","check":"none","bytes":null,"flops":null,"gbps":null,
            "tflops":null,"pct_dram_peak":null,"pct_fp32_peak":null,"sm_clock_mhz":1980.0}"#;
        let mut c: CaseResult = serde_json::from_str(json).unwrap();
        assert_eq!(c.sm_clock_mhz, Some(1980.0));
        let again: CaseResult = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(again, c);
        c.sm_clock_mhz = None;
        let v = serde_json::to_value(&c).unwrap();
        assert!(v.get("sm_clock_mhz").is_none(), "{v}");
    }
}
