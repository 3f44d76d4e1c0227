//! `check`'s result files for benchmark history tools, beside `cli.rs` so that it stays
//! one readable file.

use std::path::PathBuf;

use clap::Args;

/// Where `check` writes its results for history tools (both refused when the file exists).
#[derive(Debug, Args, Clone, Default)]
pub struct ExportArgs {
    /// Write the results in Bencher Metric Format (JSON, one benchmark per kernel) to FILE
    #[arg(long, value_name = "FILE")]
    pub bmf: Option<PathBuf>,
    /// Write the results for github-action-benchmark's `customSmallerIsBetter` tool to FILE
    #[arg(long, value_name = "FILE")]
    pub github_benchmark: Option<PathBuf>,
}
