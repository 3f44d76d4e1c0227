//! `cargo kprof explain [NAME]`: a limiter of the rules, or a metric, section, stage or
//! verdict from `references/` (found by [`crate::ops::explain`]); without a name, the list
//! of every topic.

use anyhow::Result;

use crate::cli::ExplainArgs;
use crate::error::ExitCode;
use crate::events::{About, Event};
use crate::references::TopicKind;
use crate::shell::Shell;

/// Prints the topic's explanation ([`crate::ops::explain::explain`]), with a note when the
/// name was found loosely; without a topic, lists them all by kind.
pub(crate) fn explain(args: &ExplainArgs, shell: &Shell) -> Result<ExitCode> {
    let Some(topic) = args.topic.as_deref().map(str::trim) else {
        shell.out(topics());
        return Ok(ExitCode::Success);
    };
    let found = crate::ops::explain::explain(topic)?;
    if let Some(note) = &found.note {
        shell.emit(&Event::note(About::Topic, note.clone()));
    }
    shell.out(found.text.trim_end());
    Ok(ExitCode::Success)
}

/// Every topic `explain` knows, a line per kind; metrics are many, so only counted.
fn topics() -> String {
    let rules = crate::analyze::rules::Rules::builtin();
    let mut out = format!("limiters (the causes reports name): {}\n", rules.limiter_ids().join(", "));
    let all = crate::references::topics();
    for kind in TopicKind::ALL {
        let names: Vec<&str> = all.iter().filter(|t| t.kind == kind).map(|t| t.name.as_str()).collect();
        if kind == TopicKind::Metric {
            out.push_str(&format!(
                "metrics: {} of them, e.g. {}; a name may drop its rollup (`sm__throughput`)\n",
                names.len(),
                names.iter().take(3).copied().collect::<Vec<_>>().join(", ")
            ));
        } else {
            out.push_str(&format!("{}s: {}\n", kind.name(), names.join(", ")));
        }
    }
    out.push_str("`cargo kprof explain NAME` explains one; a near miss suggests the closest names.");
    out
}
