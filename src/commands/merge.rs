//! `cargo kprof merge DIR... --output-dir OUT`: the profile roots of shards into one
//! directory with one index and, when `check` shards are merged, one verdict
//! (`ops::merge`).

use anyhow::Result;

use crate::cli::MergeArgs;
use crate::error::ExitCode;
use crate::ops::merge;
use crate::shell::Shell;

/// `cargo kprof merge`.
pub(crate) fn merge(m: &MergeArgs, shell: &Shell) -> Result<ExitCode> {
    merge::run(&m.dirs, &m.output_dir, m.force, shell)
}
