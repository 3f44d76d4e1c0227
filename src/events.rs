//! Every message cargo-kprof prints for a program to read, and its progress, as one typed
//! vocabulary: one variant per message, whose JSON shape (`Serialize`, tagged by
//! `reason`, as cargo's `--message-format json`) and words for people (`Display`) are
//! written side by side here and nowhere else. The pipeline builds events; the
//! [`Shell`](crate::shell::Shell) decides how they are shown
//! ([`Shell::emit`](crate::shell::Shell::emit)).
//!
//! Modelled on cargo's `util/machine_message.rs` (one struct per JSON message) and
//! nextest's `reporter/events.rs` (typed events, a separate displayer).

use std::fmt;

use serde::Serialize;

use crate::shell::{Channel, Message};

/// One message of a run.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum Event {
    /// An ncu stage of one kernel (or of a batch of kernels) starts.
    StageStarted {
        /// The kernel, or the batch's kernels joined by `, `.
        kernel: String,
        /// The stage's name (`basic`, `memory`, `source`, `discovery`, ...).
        stage: String,
        /// Why it runs.
        why: String,
    },
    /// That stage ended.
    StageDone {
        /// The kernel, or the batch's kernels joined by `, `.
        kernel: String,
        /// The stage's name.
        stage: String,
        /// How it ended, as `run_manifest.yaml` spells it.
        status: &'static str,
        /// ncu's replay passes per launch, when the page has a pass column.
        passes: Option<u32>,
        /// Its wall time, ms.
        wall_ms: u64,
    },
}

impl Message for Event {
    fn channel(&self) -> Channel {
        match self {
            Event::StageStarted { .. } | Event::StageDone { .. } => Channel::Progress,
        }
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::StageStarted { kernel, stage, why } => {
                write!(f, "Profiling `{kernel}`: stage {stage} ({why})")
            }
            // The source page has no pass column: it only says that it finished.
            Event::StageDone { passes: Some(p), .. } => write!(f, "  done: {p} pass(es) per launch"),
            Event::StageDone { passes: None, .. } => f.write_str("  done"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_event_is_a_reason_tagged_line_and_a_sentence() {
        let e = Event::StageDone {
            kernel: "hgemm".into(),
            stage: "basic".into(),
            status: "ok",
            passes: Some(9),
            wall_ms: 1200,
        };
        let v: serde_json::Value = serde_json::to_value(&e).unwrap();
        assert_eq!(v["reason"], "stage-done");
        assert_eq!(v["passes"], 9);
        assert_eq!(e.to_string(), "  done: 9 pass(es) per launch");
        assert_eq!(e.channel(), Channel::Progress);
    }
}
