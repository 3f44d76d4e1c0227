//! `cargo kprof init`'s arguments, beside `cli.rs` so that it stays one readable file.

use std::path::PathBuf;

use clap::Args;

use super::OutputArgs;

/// `cargo kprof init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Path to Cargo.toml
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Package(s) to configure (default: every workspace member)
    #[arg(short = 'p', long = "package", value_name = "SPEC")]
    pub packages: Vec<String>,
    /// Print what would be appended to each Cargo.toml, and write nothing
    #[arg(long, visible_alias = "stdout")]
    pub dry_run: bool,
    /// Output and verbosity.
    #[command(flatten)]
    pub output: OutputArgs,
}
