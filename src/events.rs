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
    /// Several harness kernels of one program are profiled together, one ncu run per
    /// stage.
    BatchStarted {
        /// The program.
        program: String,
        /// The batch's kernels.
        kernels: Vec<String>,
    },
    /// A kernel the batch could not serve is profiled on its own.
    RunsAlone {
        /// The kernel.
        kernel: String,
        /// Why the batch could not serve it.
        why: String,
    },
    /// The rules chose the follow-up stage from basic's metrics.
    FollowUpChosen {
        /// The kernel.
        kernel: String,
        /// The stage chosen.
        stage: String,
        /// Why, in the rules' words.
        why: String,
        /// Whether the kernel runs in a batch (the line then names it).
        batched: bool,
    },
    /// The launch window was fitted to the launches the census counted.
    WindowFitted {
        /// The kernel.
        kernel: String,
        /// The new window, described.
        window: String,
        /// Why it was fitted.
        why: String,
    },
    /// Discovery chose the kernel to profile.
    KernelDiscovered {
        /// The kernel as planned (no hint was given).
        kernel: String,
        /// The function chosen.
        chosen: String,
        /// Why it was chosen.
        why: String,
    },
}

impl Message for Event {
    fn channel(&self) -> Channel {
        match self {
            Event::StageStarted { .. } | Event::StageDone { .. } => Channel::Progress,
            Event::BatchStarted { .. }
            | Event::RunsAlone { .. }
            | Event::FollowUpChosen { .. }
            | Event::WindowFitted { .. }
            | Event::KernelDiscovered { .. } => Channel::Progress,
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
            Event::BatchStarted { program, kernels } => write!(
                f,
                "Batching {} kernels of `{program}` into one ncu run per stage: {}",
                kernels.len(),
                kernels.join(", ")
            ),
            Event::RunsAlone { kernel, why } => write!(f, "`{kernel}` runs on its own: {why}"),
            Event::FollowUpChosen { kernel, stage, why, batched: true } => {
                write!(f, "Follow-up for `{kernel}`: {stage} ({why})")
            }
            Event::FollowUpChosen { stage, why, batched: false, .. } => {
                write!(f, "Follow-up: {stage} ({why})")
            }
            Event::WindowFitted { window, why, .. } => write!(f, "Window: {why} ({window})"),
            Event::KernelDiscovered { chosen, why, .. } => {
                write!(f, "Discovery: profiling `{chosen}` ({why})")
            }
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

    #[test]
    fn collection_progress_reads_as_before_and_is_tagged() {
        let e = Event::FollowUpChosen {
            kernel: "k".into(),
            stage: "memory".into(),
            why: "rule `r` (memory): x".into(),
            batched: true,
        };
        assert_eq!(e.to_string(), "Follow-up for `k`: memory (rule `r` (memory): x)");
        let v: serde_json::Value = serde_json::to_value(&e).unwrap();
        assert_eq!(v["reason"], "follow-up-chosen");
        assert_eq!(v["stage"], "memory");
        let e = Event::BatchStarted { program: "/b/zoo".into(), kernels: vec!["a".into(), "b".into()] };
        assert_eq!(e.to_string(), "Batching 2 kernels of `/b/zoo` into one ncu run per stage: a, b");
        assert_eq!(serde_json::to_value(&e).unwrap()["reason"], "batch-started");
        let e = Event::WindowFitted { kernel: "k".into(), window: "w".into(), why: "y".into() };
        assert_eq!(e.to_string(), "Window: y (w)");
    }
}
