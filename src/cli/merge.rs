//! `cargo kprof merge`'s arguments, beside `cli.rs` so that it stays one readable file.

use std::path::PathBuf;

use clap::Args;

use super::OutputArgs;

/// `cargo kprof merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// A shard's profile root (`profile/`, with its index.json), or the `--workspace-remap`
    /// directory of a shard's archive run (its `workspace/profile` is read)
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<PathBuf>,
    /// Where to copy every profile and write one index.md and index.json (must not exist
    /// or be empty)
    #[arg(long, value_name = "OUT", required = true)]
    pub output_dir: PathBuf,
    /// Merge even when the profiles were taken on different GPUs, ncu versions or clock
    /// controls (the index says so)
    #[arg(long)]
    pub force: bool,
    /// Output and verbosity.
    #[command(flatten)]
    pub output: OutputArgs,
}
