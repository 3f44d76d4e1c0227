//! The profiling options `cargo kprof`, `check` and `run --archive` share, beside
//! `cli.rs` so that it stays one readable file.
//!
//! `--stages` and `--gpus` are parsed by clap's value parsers into typed values. A stage
//! list that names an unknown stage still parses (into [`StagesArg`], which keeps the
//! error): it is refused when the request is made, as a configuration error (exit 3) with
//! the help the manifests' `stages` gets, after the hints are checked, as before.

use std::path::PathBuf;

use clap::Args;

use crate::error::{ExitCode, Failure};
use crate::model::census::{CensusPlan, Pick};
use crate::model::partition::{Partition, Shard};
use crate::model::stage::{StageSelection, UnknownStage};
use crate::plan::{GpuList, Request, StagePlan};

/// The profiling options `cargo kprof` and `run --archive` share: which kernels, their
/// launch window, stages and environment, and where the profile goes.
#[derive(Debug, Args, Clone, Default)]
pub struct KernelOptions {
    /// Kernel name hint (repeat to profile several)
    ///
    /// Selects the kernel of that name and becomes the ncu filter regex `.*NAME.*`; `=NAME`
    /// matches the function exactly.
    #[arg(short = 'k', long = "kernel", value_name = "NAME", help_heading = "Profiling Options")]
    pub kernels: Vec<String>,
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

impl KernelOptions {
    /// These options as a [`Request`] (everything else left at its default), checked:
    /// the hints and the stage list (the regex is checked by whoever applies it).
    pub fn request(&self) -> Result<Request, Failure> {
        for k in &self.kernels {
            crate::model::names::check_kernel_hint(k)?;
        }
        let stages = match &self.stages {
            Some(StagesArg(Ok(selection))) => Some(StagePlan::Stages(selection.clone())),
            Some(StagesArg(Err(e))) => {
                return Err(Failure::new(ExitCode::Config, format!("--stages: {e}"))
                    .help("e.g. --stages auto, --stages all, --stages basic,memory"))
            }
            None => None,
        };
        Ok(Request {
            census: self.census()?,
            kernels: self.kernels.clone(),
            kernel_regex: self.kernel_regex.clone(),
            stages,
            launch_skip: self.launch_skip,
            launch_count: self.launch_count,
            envs: self.envs.clone(),
            output_dir: self.output_dir.clone(),
            dry_run: self.dry_run,
            // `KPROF_NO_BATCH=1` does the same for runs started by scripts (cluster jobs).
            no_batch: self.no_batch || std::env::var_os("KPROF_NO_BATCH").is_some_and(|v| v == "1"),
            partition: self.partition.map(Shard::from_flag),
            gpus: crate::plan::gpu_list(self.gpus.as_ref(), self.jobs),
            ..Request::default()
        })
    }
}

impl KernelOptions {
    /// The census options, checked: `--top 0`, a `--min-share` that is no percentage,
    /// `--census-launches 0` and an empty `--nvtx-include` are refused, naming the fix.
    fn census(&self) -> Result<CensusPlan, Failure> {
        let pick = match (self.top, self.min_share) {
            (Some(n), _) => Pick::top(n)?,
            (None, Some(p)) => Pick::min_share(p)?,
            (None, None) => Pick::Default,
        };
        let named = !self.kernels.is_empty() || self.kernel_regex.is_some();
        if let (true, Some(flag)) =
            (named, self.top.map(|_| "--top").or(self.min_share.map(|_| "--min-share")))
        {
            return Err(Failure::new(
                ExitCode::Usage,
                format!("{flag} picks kernels from the census, which runs only when no kernel is named"),
            )
            .help(format!("drop --kernel/--kernel-regex to census the program, or drop {flag}")));
        }
        if self.census_launches == Some(0) {
            return Err(Failure::new(ExitCode::Usage, "--census-launches 0 would count no launch")
                .help("pass 1 or more, e.g. --census-launches 200 (the default is 1000)"));
        }
        if let Some(empty) = self.nvtx_include.iter().find(|r| r.trim().is_empty()) {
            return Err(Failure::new(ExitCode::Usage, format!("--nvtx-include `{empty}` names no range"))
                .help("name the range, e.g. --nvtx-include forward/ (a push/pop range called `forward`)"));
        }
        Ok(CensusPlan {
            pick,
            launch_cap: self.census_launches,
            nvtx_include: self.nvtx_include.clone(),
            profiler_range: self.profiler_range,
            picked: false,
        })
    }
}

/// `--stages` as parsed: the selection, or the unknown stage it named (refused by
/// [`KernelOptions::request`], see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagesArg(pub Result<StageSelection, UnknownStage>);

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
