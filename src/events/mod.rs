//! Every message cargo-kprof prints for a program to read, and its progress, as one typed
//! vocabulary: one variant per message, whose JSON shape (`Serialize`, tagged by
//! `reason`, as cargo's `--message-format json`) and words for people (`Display`) are
//! written side by side here and nowhere else. The pipeline builds events; the
//! [`Shell`](crate::shell::Shell) decides how they are shown
//! ([`Shell::emit`](crate::shell::Shell::emit)), by each event's [`Channel`].
//!
//! Every line kprof prints for people is one of these messages (`tests/it/layout.rs` keeps
//! `shell.status` and its kin out of the drivers): progress, a [`Notice`] (a note or a
//! warning in words, with the topic it is `about`), a result or the closing verdict. Only
//! other tools' lines (cargo's, through [`Shell::relay`](crate::shell::Shell::relay)) are
//! not. The files: the vocabulary here; the payloads in `payloads.rs` (results),
//! `progress.rs` and `bisecting.rs` (the drivers' progress, with their words), `notice.rs`
//! and `kinds.rs` (the closed sets of words the fields hold); the channels in
//! `channel.rs`; the words of the rest in `render.rs` and `runs.rs`.
//!
//! Modelled on cargo's `util/machine_message.rs` (one struct per JSON message) and
//! nextest's `reporter/events.rs` (typed events, a separate displayer). The shapes are
//! written down in `contract/messages.schema.json`, and a test holds every variant to it:
//! a change of shape is a change of that file, and of [`MESSAGES_SCHEMA_VERSION`] when a
//! field is renamed or removed. The schema only grows: another test holds it to the shape
//! released (`contract/released/messages.v2.schema.json`).

mod bisecting;
mod channel;
mod kinds;
mod notice;
mod payloads;
mod progress;
mod render;
mod runs;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use serde::Serialize;

use crate::compare::DurationDelta;
use crate::model::stage::Stage;
use crate::profile::run_manifest::StageStatus;
use crate::shell::{Channel, Level, Message};
use crate::vcs::worktree::{BaseRevision, WorktreeAction};

pub use bisecting::*;
pub use kinds::*;
pub use notice::*;
pub use payloads::*;
pub use progress::*;

/// Version of the messages' shapes. 2: `ab-comparison` and `check-finished` have one shape
/// each, whichever command prints them (the union of the fields they had before).
pub const MESSAGES_SCHEMA_VERSION: u32 = 2;

/// One message of a run.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum Event {
    /// An ncu stage of one kernel (or of a batch of kernels) starts.
    StageStarted {
        /// The kernel, or the batch's kernels joined by ` + `.
        kernel: String,
        /// The stage's name (`basic`, `memory`, `source`, `discovery`, ...).
        stage: String,
        /// Why it runs.
        why: String,
    },
    /// That stage ended.
    StageDone {
        /// The kernel, or the batch's kernels joined by ` + `.
        kernel: String,
        /// The stage's name.
        stage: String,
        /// How it ended, as `run_manifest.yaml` spells it.
        status: StageStatus,
        /// ncu's replay passes per launch, when the page has a pass column.
        passes: Option<u32>,
        /// Its wall time, ms.
        wall_ms: u64,
        /// Why it ran, in brief (the manifest and `commands.sh` have the whole reason).
        why: String,
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
    FollowUpsPlanned {
        /// The kernels of the batch whose follow-ups were planned, `a + b`.
        kernels: String,
        /// The choice and the numbers behind it, one line.
        why: String,
        /// The chosen runs' predicted wall time, ms.
        estimate_ms: u64,
        /// The other way's, ms, when there was a choice.
        alternative_ms: Option<u64>,
    },
    /// `auto`'s follow-up for one kernel, chosen from its basic metrics.
    FollowUpChosen {
        /// The kernel.
        kernel: String,
        /// The stage chosen.
        stage: Stage,
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
    /// A program's census: every kernel of one durations-only pass, costliest first.
    CensusTaken {
        /// The kernel as planned (the program; no hint was given).
        kernel: String,
        /// Launches the pass profiled.
        launches: usize,
        /// Whether it stopped at its launch cap.
        capped: bool,
        /// Their serialised GPU time, ns.
        total_ns: f64,
        /// How the pass was bounded beyond its launch cap, if it was.
        bounds: Option<String>,
        /// Every kernel.
        kernels: Vec<CensusRow>,
        /// How it was taken: `ncu` (one durations-only pass) or `trace` (kprof's tracer).
        by: crate::model::census::CensusSource,
    },
    /// A program's census is taken by ncu's durations-only pass because the tracer could
    /// not be used: why, in one line.
    CensusFallback {
        /// The kernel as planned (the program).
        kernel: String,
        /// Why the tracer was not used.
        why: String,
    },
    /// The census chose the kernels to profile, each in its own profile directory.
    KernelDiscovered {
        /// The kernel as planned (no hint was given).
        kernel: String,
        /// The costliest function chosen (profiled in this profile directory).
        chosen: String,
        /// How they were picked.
        why: String,
        /// Every function chosen with its share of GPU time, costliest first.
        picked: Vec<PickedKernel>,
        /// Their share of GPU time together, percent.
        share_pct: f64,
    },
    /// A source page's kernels have no line info: the source stage runs again, SASS only.
    NoLineInfo {
        /// The kernels without line info.
        kernels: Vec<String>,
        /// How to build them with line info.
        advice: String,
    },
    /// A source page's kernels without line info are closed libraries' (cuBLAS, ...):
    /// SASS only, and nothing to rebuild.
    LibraryKernels {
        /// Each kernel and its library.
        kernels: Vec<(String, String)>,
    },
    /// `auto`'s source stage failed: the profile has no hot lines, the rest goes on.
    HotLinesMissing {
        /// The kernel.
        kernel: String,
        /// What went wrong.
        why: String,
    },
    /// A kernel hint matched several kernels: the costliest is profiled.
    HintNarrowed {
        /// The hint.
        hint: String,
        /// Every kernel it matched.
        kernels: Vec<String>,
        /// The kernel profiled.
        chosen: String,
    },
    /// A kernel has no harness, so no timing: the gate compares ncu's duration.
    NoTiming {
        /// The kernel.
        kernel: String,
    },
    /// The harness times a kernel without ncu.
    TimingStarted {
        /// The kernel.
        kernel: String,
    },
    /// The harness timed the kernel's case.
    TimingDone {
        /// The kernel.
        kernel: String,
        /// The case timed.
        case: String,
        /// `hot` or `cold`.
        mode: String,
        /// The median per launch, ns.
        median_ns: f64,
        /// Samples.
        samples: usize,
        /// The median's 95 % interval, ns.
        interval_ns: (f64, f64),
    },
    /// One interleaved A/B timing round ran both sides.
    RoundDone {
        /// kprof's name of the kernel (a round of one program times all its kernels).
        kernel: String,
        /// The round, from 1.
        round: u32,
        /// The base's median, ns.
        base_ns: f64,
        /// The head's median, ns.
        head_ns: f64,
        /// The head against the base, percent.
        change_pct: f64,
    },
    /// The base revision of an A/B check in kprof's worktree.
    BaseWorktree {
        /// The commit, abbreviated.
        commit: String,
        /// The revision as asked.
        asked: String,
        /// The worktree.
        dir: PathBuf,
        /// `created`, `reused`, `moved`, `recreated` (kprof left it unfinished) or
        /// `restored` (its folder was deleted).
        action: WorktreeAction,
    },
    /// A profile directory is written and its first commands are known (a real run).
    ProfilePrepared(Prepared),
    /// What a dry run would run for one kernel: its `commands.sh`.
    DryRun(Prepared),
    /// What a dry run's kernels of one program really start: one batched ncu run per stage.
    DryRunBatch(BatchPlanned),
    /// A kernel's analysis is written: each kernel's verdict and the report.
    Analysed {
        /// The profile directory.
        profile_dir: PathBuf,
        /// Its `final_report.md`.
        report: PathBuf,
        /// One verdict per kernel of the page.
        kernels: Vec<KernelVerdict>,
    },
    /// One step of `cargo kprof bisect`.
    BisectStep(BisectStep),
    /// The end of `cargo kprof bisect`.
    BisectFinished(Box<BisectFinished>),
    /// A shard of the selection that holds no kernel: nothing was built or run.
    ShardEmpty {
        /// The shard (`count:2/4`).
        partition: Option<String>,
        /// The profiles root whose index names the shard.
        profile_root: PathBuf,
    },
    /// One profile compared with a baseline (`compare`, `check --baseline`, `merge`).
    Comparison {
        /// The profile compared.
        profile: PathBuf,
        /// Its regression report.
        report: PathBuf,
        /// The kernel.
        kernel: String,
        /// The baseline's label.
        baseline: String,
        /// Whether it regressed beyond tolerance.
        regression: bool,
        /// How the duration compared.
        duration: Option<DurationDelta>,
        /// The explanation in one paragraph.
        explanation: String,
        /// What became of the causes the baseline named, when it named any.
        #[serde(skip_serializing_if = "Option::is_none")]
        fix_loop: Option<String>,
        /// Differences in the conditions of the two runs.
        warnings: Vec<String>,
    },
    /// One kernel's A/B verdict (`check --base`, or `merge` of A/B shards).
    AbComparison(Box<AbComparison>),
    /// The end of a `check`: its verdict over every kernel.
    CheckFinished(CheckFinished),
    /// A profile copied into a merged root.
    ProfileMerged {
        /// The profile's id.
        profile: String,
        /// Where it was.
        from: PathBuf,
        /// Where it is now.
        to: PathBuf,
        /// Its shard.
        partition: Option<String>,
    },
    /// The end of a `merge`.
    MergeFinished(MergeFinished),
    /// An archive is written (`cargo kprof archive`).
    #[serde(rename = "archive-written")]
    ArchiveWritten(ArchiveListing),
    /// An A/B archive is written (`cargo kprof archive --base`).
    #[serde(rename = "archive-written")]
    AbArchiveWritten {
        /// The archive.
        archive: PathBuf,
        /// The base revision.
        base: BaseRevision,
        /// The kernels both sides have.
        kernels: Vec<String>,
    },
    /// A bisect archive is written (`cargo kprof archive --bisect`).
    #[serde(rename = "archive-written")]
    BisectArchiveWritten(BisectArchive),
    /// `init --dry-run`: what would be appended to one manifest.
    InitDryRun(InitAddition),
    /// `init`: what was appended to one manifest.
    InitWritten(InitAddition),
    /// `init`: a package that got no entries, and why.
    InitSkipped {
        /// The package.
        package: String,
        /// Why.
        why: String,
    },
    /// One check of `doctor`.
    DoctorCheck {
        /// What was checked.
        check: String,
        /// Whether it passed (`status` is `ok`).
        ok: bool,
        /// Passed, failed, or could not be known here.
        status: CheckStatus,
        /// What was found, or the problem.
        detail: String,
        /// How to fix a failed check.
        fix: Option<String>,
    },
    /// The end of `doctor`.
    DoctorFinished {
        /// Whether profiling can work here.
        ready: bool,
        /// Whether ncu runs through `sudo -n`.
        sudo: bool,
        /// The sudo setup guide, when a sudo check failed.
        guide: Option<DoctorGuide>,
    },
    /// A note or a warning in words, on the topic it names.
    Notice(Notice),
    /// The workspace's profiles root is created: kprof has just added a folder to the
    /// user's source tree (a note).
    ProfilesRootCreated {
        /// The profiles root.
        root: PathBuf,
    },
    /// A `cargo build` starts.
    BuildStarted(BuildStarted),
    /// One side's build is done.
    BuildDone(BuildDone),
    /// A profiles root's index is rewritten.
    IndexWritten(IndexWritten),
    /// A profile is saved as a baseline.
    BaselineSaved(BaselineSaved),
    /// A results file for a benchmark tracker is written (`--bmf`, `--github-benchmark`).
    ResultsWritten(ResultsWritten),
    /// An A/B archive's two sides are unpacked.
    ArchiveUnpacked(ArchiveUnpacked),
    /// An A/B check starts.
    AbStarted(AbStarted),
    /// Both sides of an A/B check are profiled and timed.
    AbMeasured(AbMeasured),
    /// An A/B check's timing rounds start.
    TimingPlanned(TimingPlanned),
    /// Undecided kernels get as many rounds again.
    TimingExtended(TimingExtended),
    /// Kernels inside the tolerance before the planned rounds stop there.
    TimingStopped(TimingStopped),
    /// A bisect starts.
    BisectStarted(BisectStarted),
    /// A bisect checks a revision against `--good`.
    BisectChecking(BisectChecking),
    /// A revision has a build known already: no check runs.
    BisectSameBuild(BisectSameBuild),
    /// A bisect archive is being packed.
    BisectArchiveStarted(BisectArchiveStarted),
    /// A revision of a bisect archive is packed.
    RevisionPacked(RevisionPacked),
    /// A revision of a bisect archive is not packed (a warning).
    RevisionNotPacked(RevisionNotPacked),
    /// A merge reads a profile root.
    MergeReading(MergeReading),
    /// A kernel's launches that a batch profiled have several shapes.
    LaunchShapes(LaunchShapes),
    /// `report` rewrote files of a profile directory.
    FilesRewritten(FilesRewritten),
    /// A report page is opened in a browser, or its URL said.
    PageShown(PageShown),
    /// `list` found no kernel configured (for people only: `list`'s JSON is its list).
    NoKernelsConfigured,
    /// `init` is done: what to do next.
    InitFinished(InitFinished),
    /// The run failed: the error and its causes, as stderr prints them.
    Error {
        /// The error.
        message: String,
        /// Its `Caused by:` chain.
        causes: Vec<String>,
        /// The process exit code.
        exit_code: i32,
    },
}

impl Event {
    /// A [`Notice`] note about `about`, as a message.
    pub fn note(about: About, message: impl Into<String>) -> Event {
        Event::Notice(Notice::note(about, message))
    }

    /// A [`Notice`] warning about `about`, as a message.
    pub fn warning(about: About, message: impl Into<String>) -> Event {
        Event::Notice(Notice::warning(about, message))
    }
}
