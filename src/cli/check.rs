//! `cargo kprof check`'s arguments: a baseline, or `--base REV` (the A/B check), with the
//! tolerance every gate reads.

use std::path::PathBuf;

use clap::Args;

use super::{AbArgs, ExportArgs, ProfileArgs};

/// `cargo kprof check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// What to compare against: a saved baseline's name (profile/baselines/NAME/) or directory, or a profile directory
    /// (or `--base REV`: this tree against a git revision)
    // Not required by clap: `check` alone names both ways to give it something to compare.
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// Run only the harness timings: no ncu, fast (harness targets only)
    #[arg(long)]
    pub timing_only: bool,
    /// Duration changes within this many percent pass (default: the kernel's `tolerance-pct`, else 2.0)
    // Values starting with `-` are values here, so that `-1` gets parse_tolerance's message.
    #[arg(long, value_name = "PCT", value_parser = parse_tolerance, allow_hyphen_values = true)]
    pub tolerance_pct: Option<f64>,
    /// Save this run's summaries as baseline NAME (refused when NAME already holds a kernel)
    #[arg(long, value_name = "NAME")]
    pub save_baseline: Option<String>,
    /// Compare even when the kernel or its arguments, the GPU, the ncu version or the clock
    /// control differ (the report warns)
    #[arg(long)]
    pub force: bool,
    /// Check from an archive written by `cargo kprof archive`, on a machine without cargo
    #[arg(long, value_name = "FILE")]
    pub archive: Option<PathBuf>,
    /// With --archive: where to unpack it and write the profiles (must not exist or be empty)
    #[arg(long, value_name = "DIR", requires = "archive")]
    pub workspace_remap: Option<PathBuf>,
    /// Result files for benchmark history tools.
    #[command(flatten)]
    pub exports: ExportArgs,
    /// The A/B check against a git revision.
    #[command(flatten)]
    pub ab: AbArgs,
    /// What to profile, as for `cargo kprof`.
    #[command(flatten)]
    pub profile: ProfileArgs,
}

/// Parses a tolerance in percent: a finite number >= 0 (`nan`, `inf` and negative
/// values are refused, naming the value).
pub fn parse_tolerance(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a tolerance: give a finite percentage >= 0, such as 2 or 0.5")),
    }
}
