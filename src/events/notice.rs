//! Notes and warnings in words: one message, [`Notice`], whose `about` names the topic.
//!
//! Their words are built where the fact is known (a configuration key, a file that could
//! not be written, an error's chain) and are too varied to type one by one; what a program
//! reading them needs is that they happened, how loud, and what they concern. The notes
//! and warnings whose facts a program acts on have messages of their own (`no-line-info`,
//! `hint-narrowed`, `revision-not-packed`, ...).

use std::fmt;

use serde::Serialize;

/// A note or a warning in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Notice {
    /// How loud it is.
    pub level: NoticeLevel,
    /// What it concerns.
    pub about: About,
    /// Its words, as people read them after `note: ` or `warning: `.
    pub message: String,
}

/// How loud a notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NoticeLevel {
    /// `note: ...`: worth knowing, nothing is wrong.
    Note,
    /// `warning: ...`: something did not go as it should; the run goes on.
    Warning,
}

/// What a notice concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum About {
    /// The workspace's kprof configuration (an unknown key, ...).
    Config,
    /// The plan of the run: what the selection and the options imply.
    Plan,
    /// What `auto` collects and what it costs.
    AutoStages,
    /// The dependency graph `cargo metadata` reads offline.
    DependencyGraph,
    /// The analysis of a profile (a page or a file it could not read, ...).
    Analysis,
    /// The kernels a census picked.
    Census,
    /// How a run ended, as its `run_manifest.yaml` records it.
    RunManifest,
    /// The profiles index (`index.md`, `index.html`).
    Index,
    /// The profiles root's cost history, which the planner reads.
    CostHistory,
    /// The making of a comparison with a baseline.
    Comparison,
    /// Differences in the conditions of the two runs a comparison compares: said also
    /// under `-q`; under JSON the `comparison` message carries them instead.
    Conditions,
    /// The timing rounds of an A/B check.
    Rounds,
    /// A kernel the base of an A/B check does not have.
    NewKernel,
    /// How an A/B check times a kernel.
    Timing,
    /// The sources of a merge.
    Merge,
    /// What `--force` let a merge through.
    Forced,
    /// The entries `init` writes.
    Init,
    /// A topic `explain` found loosely.
    Topic,
}

impl Notice {
    /// A note about `about`.
    pub fn note(about: About, message: impl Into<String>) -> Notice {
        Notice { level: NoticeLevel::Note, about, message: message.into() }
    }

    /// A warning about `about`.
    pub fn warning(about: About, message: impl Into<String>) -> Notice {
        Notice { level: NoticeLevel::Warning, about, message: message.into() }
    }

    /// How people get it: a note, a warning, or a warning also under `-q`.
    pub(super) fn level(&self) -> crate::shell::Level {
        use crate::shell::Level;
        match (self.level, self.about) {
            (NoticeLevel::Note, _) => Level::Note,
            (NoticeLevel::Warning, About::Conditions) => Level::Alert,
            (NoticeLevel::Warning, _) => Level::Warning,
        }
    }
}

impl fmt::Display for Notice {
    /// The words alone: the shell puts `note: ` or `warning: ` before them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}
