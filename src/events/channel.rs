//! Where each message goes ([`Channel`]): progress, a notice, a result, the closing
//! summary or only its JSON line; and the one message coloured for people.

use super::*;

impl Message for Event {
    fn colored(&self) -> Option<String> {
        use crate::shell::{paint, Tone};
        let Event::DoctorCheck { status, .. } = self else { return None };
        let tone = match status {
            CheckStatus::Ok => Tone::Good,
            CheckStatus::Fail => Tone::Bad,
            CheckStatus::Unknown => Tone::Unsure,
        };
        // The status word coloured, its padding kept outside the colour. The rest carries
        // no control characters from elsewhere: the line is written as it is, so that the
        // colour's own escapes survive.
        let plain = self.to_string();
        let word = status.word();
        Some(format!("{}{}", paint(tone, word), crate::shell::printable(&plain[word.len()..])))
    }

    fn channel(&self) -> Channel {
        use Event::*;
        match self {
            // One line per stage when it ends; its start and the follow-up's whole reason
            // under -v (a terminal shows the running stage on a spinner).
            StageStarted { .. } | FollowUpChosen { .. } => Channel::Detail,
            FollowUpsPlanned { .. } => Channel::Progress,
            StageDone { .. } | ProfilePrepared(_) | ProfileMerged { .. } => Channel::Progress,
            BatchStarted { .. } | RunsAlone { .. } | WindowFitted { .. } => Channel::Progress,
            CensusTaken { .. }
            | KernelDiscovered { .. }
            | TimingStarted { .. }
            | TimingDone { .. }
            | RoundDone { .. } => Channel::Progress,
            BaseWorktree { .. } => Channel::Progress,
            NoLineInfo { .. } | HintNarrowed { .. } | HotLinesMissing { .. } => {
                Channel::Notice(Level::Warning)
            }
            LibraryKernels { .. } | CensusFallback { .. } => Channel::Notice(Level::Note),
            NoTiming { .. } => Channel::Notice(Level::Note),
            Notice(n) => Channel::Notice(n.level()),
            ProfilesRootCreated { .. } => Channel::Notice(Level::Note),
            RevisionNotPacked(_) => Channel::Notice(Level::Warning),
            BuildStarted(_) | BuildDone(_) | IndexWritten(_) | BaselineSaved(_) | ResultsWritten(_) => {
                Channel::Progress
            }
            ArchiveUnpacked(_) | AbStarted(_) | AbMeasured(_) | TimingPlanned(_) | TimingExtended(_)
            | TimingStopped(_) => Channel::Progress,
            BisectStarted(_) | BisectChecking(_) | BisectSameBuild(_) => Channel::Progress,
            BisectArchiveStarted(_) | RevisionPacked(_) | MergeReading(_) | LaunchShapes(_) => {
                Channel::Progress
            }
            FilesRewritten(_) | PageShown(_) | NoKernelsConfigured => Channel::Progress,
            InitWritten(_) | InitSkipped { .. } | InitFinished(_) => Channel::Progress,
            DryRun(_) | DryRunBatch(_) | InitDryRun(_) => Channel::Result { preface: self.preface() },
            Analysed { .. }
            | Comparison { .. }
            | AbComparison(_)
            | ArchiveWritten(_)
            | AbArchiveWritten { .. }
            | BisectArchiveWritten(_) => Channel::Result { preface: None },
            DoctorCheck { .. } | DoctorFinished { .. } => Channel::Result { preface: None },
            ShardEmpty { .. } | Error { .. } => Channel::Machine,
            CheckFinished(c) => Channel::Summary(c.level()),
            BisectStep(_) => Channel::Result { preface: None },
            BisectFinished(b) => Channel::Summary(match b.result {
                BisectResult::FirstBad | BisectResult::Range => Level::Error,
                BisectResult::Undecided => Level::Warning,
                BisectResult::NoRegression => Level::Status,
            }),
            MergeFinished(m) => Channel::Summary(m.level()),
        }
    }
}

impl Event {
    /// The line for people on stderr before a result's text: where a dry run's files are,
    /// what its batched commands stand for, what `init --dry-run` would append.
    fn preface(&self) -> Option<String> {
        match self {
            Event::DryRun(p) => {
                // Without --output-dir a kernel's dry runs share one folder (`<kernel>_dry-run`).
                let reused = p
                    .profile_dir
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with("_dry-run"));
                let note = if reused { " (the kernel's next dry run reuses it)" } else { "" };
                Some(format!("Profile directory: {}{note}", p.profile_dir.display()))
            }
            Event::DryRunBatch(b) if b.kernels.len() == 1 => Some(format!(
                "Planned: `{}` of `{}` runs as the planner merges its stages (below); its commands.sh above \
                 replays it stage by stage",
                b.kernels[0],
                b.program.display(),
            )),
            Event::DryRunBatch(b) => Some(format!(
                "Batched: {} kernels of `{}` run as one ncu run per stage ({}); each profile's commands.sh \
                 above replays its kernel alone",
                b.kernels.len(),
                b.program.display(),
                b.kernels.join(", ")
            )),
            Event::InitDryRun(a) => Some(a.line("Would append")),
            _ => None,
        }
    }
}

impl CheckFinished {
    fn level(&self) -> Level {
        match self.verdict {
            CheckVerdict::Regressed => Level::Error,
            CheckVerdict::Ambiguous => Level::Warning,
            CheckVerdict::Clean => Level::Status,
        }
    }
}

impl MergeFinished {
    fn level(&self) -> Level {
        if !self.regressions.is_empty() {
            Level::Error
        } else if !self.ambiguous.is_empty() {
            Level::Warning
        } else {
            Level::Status
        }
    }
}
