//! The profiling options `cargo kprof`, `check` and `run --archive` share, beside
//! `cli.rs` so that it stays one readable file.
//!
//! `--stages` and `--gpus` are parsed by clap's value parsers into typed values. A stage
//! list that names an unknown stage still parses (into [`StagesArg`], which keeps the
//! error): it is refused when the request is made, as a configuration error (exit 3) with
//! the help the manifests' `stages` gets, after the hints are checked, as before.

use std::path::PathBuf;

use clap::Args;

use crate::model::filter::KernelHint;
use crate::model::partition::Partition;
use crate::model::stage::{StageSelection, UnknownStage};
use crate::plan::GpuList;

/// The profiling options `cargo kprof` and `run --archive` share: which kernels, their
/// launch window, stages and environment, and where the profile goes.
#[derive(Debug, Args, Clone, Default)]
pub struct KernelOptions {
    /// Kernel name hint (repeat to profile several)
    ///
    /// Selects the kernel of that name and becomes the ncu filter regex `.*NAME.*`; `=NAME`
    /// matches the function exactly.
    #[arg(short = 'k', long = "kernel", value_name = "NAME", value_parser = parse_kernel_hint, help_heading = "Profiling Options")]
    pub kernels: Vec<KernelHint>,
    /// Kernel filter as a regex, used as given (instead of `.*NAME.*`)
    #[arg(hide_short_help = true, long, value_name = "RE", help_heading = "Profiling Options")]
    pub kernel_regex: Option<String>,
    /// Stages: `auto` (default), `all`, or a list
    ///
    /// `auto`: basic and source (the hot lines), then one follow-up chosen from basic's
    /// metrics. `all`: every stage but `full`. A list (`basic,memory`) runs exactly those.
    #[arg(long, value_name = "auto|all|LIST", value_parser = parse_stages, help_heading = "Profiling Options")]
    pub stages: Option<StagesArg>,
    /// Matching launches to skip before profiling (programs without the kprof harness); unset, kprof's default is fitted to the program when it would skip every launch
    #[arg(hide_short_help = true, long, value_name = "N", help_heading = "Profiling Options")]
    pub launch_skip: Option<u32>,
    /// Matching launches to profile
    #[arg(hide_short_help = true, long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = "Profiling Options")]
    pub launch_count: Option<u32>,
    /// Environment variable for the profiled program, e.g. NO_GRAPH=1 (repeatable)
    #[arg(hide_short_help = true, long = "env", value_name = "KEY=VAL", value_parser = parse_env_pair, help_heading = "Profiling Options")]
    pub envs: Vec<(String, String)>,
    /// The profile directory to create
    ///
    /// It must not exist or be empty; default `profile/<kernel>_<time>`.
    #[arg(long, value_name = "DIR", help_heading = "Profiling Options")]
    pub output_dir: Option<PathBuf>,
    /// Build and write the exact ncu commands, run nothing under ncu
    #[arg(long, help_heading = "Profiling Options")]
    pub dry_run: bool,
    /// Spread the kernels over these GPUs (indices or UUIDs, comma-separated), one worker and one ncu per GPU; each program's kernels stay on one GPU
    #[arg(hide_short_help = true, long, value_name = "LIST", value_parser = parse_gpus, conflicts_with = "jobs", help_heading = "Profiling Options")]
    pub gpus: Option<GpuList>,
    /// Spread the kernels over GPUs 0 to N-1 (as --gpus 0,1,...)
    #[arg(hide_short_help = true, short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = "Profiling Options")]
    pub jobs: Option<u32>,
    /// Profile each kernel with its own ncu runs, and time it with its own runs in `check --base` (default: harness kernels of one program share one run per stage, and one run per side and round); also `KPROF_NO_BATCH=1`
    #[arg(hide_short_help = true, long, help_heading = "Profiling Options")]
    pub no_batch: bool,
    /// Profile only one shard of the selected kernels: `count:I/N` (by position) or
    /// `hash:I/N` (by a stable hash of each kernel); default: the shard a Slurm job array
    /// or Kubernetes Indexed Job names, else every kernel
    #[arg(hide_short_help = true, long, value_name = "SPEC", value_parser = parse_partition, help_heading = "Profiling Options")]
    pub partition: Option<Partition>,
    /// With no kernel named: profile the N costliest kernels of the census
    ///
    /// Default: those making up 80 % of GPU time, at most 5.
    #[arg(long, value_name = "N", conflicts_with = "min_share", help_heading = "Census Options")]
    pub top: Option<u32>,
    /// With no kernel named: profile every kernel with at least P % of the census' GPU time
    #[arg(hide_short_help = true, long, value_name = "P", help_heading = "Census Options")]
    pub min_share: Option<f64>,
    /// The most launches the census profiles (default 1000)
    #[arg(hide_short_help = true, long, value_name = "N", help_heading = "Census Options")]
    pub census_launches: Option<u32>,
    /// Only launches inside this NVTX range (ncu `--nvtx --nvtx-include`; `NAME/` for a push/pop range), for the census and the stages; repeat to OR several
    #[arg(hide_short_help = true, long, value_name = "EXPR", help_heading = "Census Options")]
    pub nvtx_include: Vec<String>,
    /// Only launches between the program's cuProfilerStart and cuProfilerStop (ncu `--profile-from-start off`), for the census and the stages
    #[arg(hide_short_help = true, long, help_heading = "Census Options")]
    pub profiler_range: bool,
}

/// `--stages` as parsed: the selection, or the unknown stage it named (refused by
/// [`KernelOptions::request`], see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagesArg(pub Result<StageSelection, UnknownStage>);

/// Parses `--kernel`: `NAME` (part of a name) or `=NAME` (exactly that function). A hint
/// is read here, once, and carried typed; it is checked when the request is made.
pub fn parse_kernel_hint(s: &str) -> Result<KernelHint, String> {
    Ok(KernelHint::parse(s))
}

/// Parses `--stages`: `auto`, `all` or a comma-separated list of stage names.
pub fn parse_stages(s: &str) -> Result<StagesArg, String> {
    Ok(StagesArg(StageSelection::parse_str(s)))
}

/// Parses `--gpus`: indices or UUIDs, comma-separated.
pub fn parse_gpus(s: &str) -> Result<GpuList, String> {
    s.parse().map_err(|e: std::convert::Infallible| match e {})
}

/// Parses `KEY=VAL` for `--env`.
pub fn parse_env_pair(s: &str) -> Result<(String, String), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| {
        format!("`{s}` is not KEY=VAL\n\n  help: write the variable and its value, e.g. --env NO_GRAPH=1")
    })?;
    if !crate::model::names::is_env_key(k) {
        return Err(format!(
            "`{k}` is not a valid environment variable name\n\n  help: {}",
            crate::model::names::ENV_KEY_HELP
        ));
    }
    Ok((k.to_string(), v.to_string()))
}

/// Parses `--partition`: `count:I/N` or `hash:I/N`, naming the value and both forms
/// when it is neither.
pub fn parse_partition(s: &str) -> Result<Partition, String> {
    s.parse()
}
