//! `cargo kprof explain NAME`: a metric, section, stage or verdict, from `references/`.

use anyhow::Result;

use crate::cli::ExplainArgs;
use crate::error::ExitCode;
use crate::shell::Shell;

/// Prints the topic's explanation.
pub(crate) fn explain(args: &ExplainArgs, shell: &Shell) -> Result<ExitCode> {
    shell.out(crate::references::explain(&args.topic)?);
    Ok(ExitCode::Success)
}
