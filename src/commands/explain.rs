//! `cargo kprof explain NAME`: a limiter of the rules, or a metric, section, stage or verdict
//! from `references/`.

use anyhow::Result;

use crate::cli::ExplainArgs;
use crate::error::ExitCode;
use crate::shell::Shell;

/// Prints the topic's explanation: a limiter of the built-in rules (the ids reports name),
/// else an entry of the metric map.
pub(crate) fn explain(args: &ExplainArgs, shell: &Shell) -> Result<ExitCode> {
    if let Some(text) = crate::analyze::rules::Rules::builtin().describe_limiter(args.topic.trim()) {
        shell.out(text.trim_end());
        return Ok(ExitCode::Success);
    }
    shell.out(crate::references::explain(&args.topic)?);
    Ok(ExitCode::Success)
}
