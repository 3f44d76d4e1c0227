//! The payloads of the richer messages, one struct each, serialized inside their
//! [`Event`](super::Event) variant.

use std::path::PathBuf;

use serde::Serialize;

use super::kinds::{BisectResult, CheckMode, CheckVerdict, StepOutcome};
use crate::archive::emit::Launcher;
use crate::compare::ab::counters::CounterChanges;
use crate::compare::ab::stats::TimeChange;
use crate::model::ab::AbVerdict;
use crate::model::kinds::{CargoTargetKind, Runtime};
use crate::model::verdict::{Classification, Confidence};
use crate::shell::{Channel, Message};
use crate::vcs::worktree::BaseRevision;

/// One kernel of a census, as its message shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CensusRow {
    /// Its function name.
    pub function: String,
    /// Launches.
    pub launches: usize,
    /// Their total duration, ns.
    pub total_ns: f64,
    /// Their mean duration, ns.
    pub mean_ns: f64,
    /// Share of the census' serialised GPU time, percent.
    pub share_pct: f64,
    /// Grid sizes as ncu printed them, `; `-separated when launches differ.
    pub grid: String,
    /// Block sizes, the same way.
    pub block: String,
    /// Whether every launch came early in the program (a traced census only): warm-up,
    /// autotuning or set-up. Left out when not.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub early: bool,
}

/// A kernel the census chose, and its share of GPU time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PickedKernel {
    /// Its function name.
    pub function: String,
    /// Its share of GPU time, percent.
    pub share_pct: f64,
}

/// How one check of `doctor` came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckStatus {
    /// It passed.
    Ok,
    /// It failed: profiling cannot work until it is fixed.
    Fail,
    /// It could not be checked here; the detail says why.
    Unknown,
}

impl CheckStatus {
    /// The word `doctor` starts the check's line with.
    pub fn word(self) -> &'static str {
        match self {
            CheckStatus::Ok => "ok",
            CheckStatus::Fail => "FAIL",
            CheckStatus::Unknown => "unknown",
        }
    }
}

/// A prepared profile: its directory and the ncu commands known so far.
#[derive(Debug, Clone, Serialize)]
pub struct Prepared {
    /// The kernel.
    pub kernel: String,
    /// Its profile directory.
    pub profile_dir: PathBuf,
    /// The program profiled.
    pub program: PathBuf,
    /// The stages' commands known before the run.
    pub stages: Vec<StageCommand>,
    /// Whether a follow-up stage is chosen after `basic`.
    pub follow_up: bool,
    /// `commands.sh` as written: a dry run's result.
    #[serde(skip)]
    pub script: String,
}

/// What a dry run shows for harness kernels of one program that a real run profiles
/// together: the batched ncu commands it starts (one per stage), beside each kernel's own
/// `commands.sh`, which replays that kernel alone.
#[derive(Debug, Clone, Serialize)]
pub struct BatchPlanned {
    /// The kernels the commands profile together.
    pub kernels: Vec<String>,
    /// The program.
    pub program: PathBuf,
    /// The first stages' batched commands.
    pub stages: Vec<StageCommand>,
    /// Whether follow-up stages are chosen after `basic` (and batched again per stage).
    pub follow_up: bool,
    /// Each first stage's predicted wall time, ms, from the profiles root's cost history
    /// (`null` when unknown).
    pub estimates_ms: Vec<Option<u64>>,
    /// The follow-ups' predicted wall time, ms (0 when the first run collects them).
    pub follow_ups_ms: Option<u64>,
    /// The whole batch's, ms, when every part is known.
    pub total_ms: Option<u64>,
    /// Where the estimates come from, or why there are none.
    pub estimate_note: String,
}

/// One stage and its ncu command.
#[derive(Debug, Clone, Serialize)]
pub struct StageCommand {
    /// The stage.
    pub stage: String,
    /// The command line, quoted for a POSIX shell.
    pub command: String,
}

/// One kernel's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct KernelVerdict {
    /// The kernel as the page names it.
    pub kernel: String,
    /// Its class (`memory-bound`, ...).
    pub classification: Classification,
    /// `high`, `medium` or `low`.
    pub confidence: Confidence,
    /// The rule that decided it.
    pub rule: Option<String>,
    /// The named limiter.
    pub limiter: Option<String>,
    /// The limiter's advice id.
    pub advice: Option<String>,
    /// Fixing the limiter could save up to this share of the kernel's time, percent.
    pub predicted_saving_pct: Option<f64>,
    /// Why the limiter's saving is not priced, when it is not.
    pub not_priced: Option<String>,
    /// The first sentence of the advice, which carries the numbers.
    #[serde(skip)]
    pub advice_headline: Option<String>,
    /// The closed library whose kernel this is (`cuBLAS`, ...), when it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub library: Option<String>,
    /// What the user controls instead of a library kernel's code, its first sentence.
    #[serde(skip)]
    pub library_headline: Option<String>,
    /// Causes read from the SASS of its hot lines.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub instruction_causes: Vec<InstructionCauseBrief>,
}

/// A cause read from the SASS, as the `analysed` message carries it.
#[derive(Debug, Clone, Serialize)]
pub struct InstructionCauseBrief {
    /// `double-promotion`, `int64-division`, `local-memory` or `global-atomics`.
    pub id: String,
    /// The source lines that issue its instructions, costliest first.
    pub lines: Vec<u32>,
    /// Removing it could save up to this share of the kernel's time, percent.
    pub predicted_saving_pct: Option<f64>,
    /// The cause and its fix in one clause.
    pub headline: String,
}

/// One kernel's A/B verdict.
#[derive(Debug, Clone, Serialize)]
pub struct AbComparison {
    /// Version of this shape.
    pub schema_version: u32,
    /// The kernel.
    pub kernel: String,
    /// `improved`, `unchanged`, `regressed` or `ambiguous`.
    pub verdict: AbVerdict,
    /// Which signal decided it.
    pub decided_by: Option<String>,
    /// The timing rounds' verdict.
    pub time: Option<TimeChange>,
    /// The counters' verdict.
    pub counters: Option<CounterChanges>,
    /// Where the head's time goes.
    pub hotspot: Option<String>,
    /// The reviewer's line.
    pub line: String,
    /// The head's profile.
    pub profile: PathBuf,
    /// The head's profile (the same as `profile`).
    pub head_profile: PathBuf,
    /// The base's profile, when known.
    pub base_profile: Option<PathBuf>,
    /// The A/B report, when known.
    pub report: Option<PathBuf>,
}

/// The end of a check.
#[derive(Debug, Clone, Serialize)]
pub struct CheckFinished {
    /// Version of this shape.
    pub schema_version: u32,
    /// `baseline` (against saved baselines) or `ab` (against a git revision).
    pub mode: CheckMode,
    /// The base revision's label (`ab`).
    pub base: Option<String>,
    /// `regressed`, `ambiguous` or `clean`.
    pub verdict: CheckVerdict,
    /// The process exit code.
    pub exit_code: i32,
    /// The kernels that regressed.
    pub regressions: Vec<String>,
    /// The kernels the check could not tell from noise.
    pub ambiguous: Vec<String>,
    /// The kernels that improved.
    pub improved: Vec<String>,
    /// The kernels that did not change beyond tolerance.
    pub unchanged: Vec<String>,
    /// How many kernels were compared.
    pub kernels: usize,
}

/// The end of a merge.
#[derive(Debug, Clone, Serialize)]
pub struct MergeFinished {
    /// The merged root.
    pub output_dir: PathBuf,
    /// Profiles copied.
    pub profiles: usize,
    /// Each source's shard (`-` for none), one per source root read.
    pub shards: Vec<String>,
    /// Shards of the selection that no source holds.
    pub missing_shards: Vec<u32>,
    /// What `--force` let through.
    pub forced: Vec<String>,
    /// Comparisons carried over.
    pub comparisons: usize,
    /// The kernels that regressed.
    pub regressions: Vec<String>,
    /// The kernels an A/B check could not tell from noise.
    pub ambiguous: Vec<String>,
}

/// What an archive holds.
#[derive(Debug, Clone, Serialize)]
pub struct ArchiveListing {
    /// The archive.
    pub archive: PathBuf,
    /// Each executable.
    pub executables: Vec<ArchivedExecutable>,
    /// CUDA source files packed.
    pub sources: usize,
    /// Files packed by `include` globs.
    pub included: Vec<PathBuf>,
    /// Build scripts' outputs packed.
    pub build_outputs: Vec<PathBuf>,
    /// `OUT_DIR`s not packed (outside the workspace).
    pub skipped_out_dirs: Vec<SkippedOutDir>,
    /// Dependency sources packed under `deps/`.
    pub dependency_sources: usize,
    /// Dependency sources the line info names that were not found.
    pub dependency_sources_missing: Vec<PathBuf>,
    /// Dependency sources the line info names that were not packed, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dependency_sources_refused: Vec<crate::archive::deps::RefusedSource>,
    /// The launchers written beside it.
    pub launchers: Option<LauncherFiles>,
}

/// One executable of an archive.
#[derive(Debug, Clone, Serialize)]
pub struct ArchivedExecutable {
    /// Its package.
    pub package: String,
    /// `bench`, `example` or `bin`.
    pub kind: CargoTargetKind,
    /// The target's name.
    pub name: String,
    /// Its file in the archive.
    pub file: String,
}

/// An `OUT_DIR` left out of an archive.
#[derive(Debug, Clone, Serialize)]
pub struct SkippedOutDir {
    /// The package.
    pub package: String,
    /// Its `OUT_DIR`.
    pub out_dir: PathBuf,
}

/// The launchers written beside an archive.
#[derive(Debug, Clone, Serialize)]
pub struct LauncherFiles {
    /// Shards.
    pub shards: usize,
    /// Each file and its kind.
    pub files: Vec<LauncherFile>,
}

/// One launcher file.
#[derive(Debug, Clone, Serialize)]
pub struct LauncherFile {
    /// `slurm`, `k8s` or `github`.
    pub kind: Launcher,
    /// The file.
    pub file: PathBuf,
}

/// What `init` appends to one manifest.
#[derive(Debug, Clone, Serialize)]
pub struct InitAddition {
    /// The package.
    pub package: String,
    /// Its manifest.
    pub manifest: PathBuf,
    /// The runtime its entries get.
    pub runtime: Runtime,
    /// The entries.
    pub kernels: Vec<InitEntry>,
    /// The appended text.
    pub text: String,
    /// Why the package looks like it holds GPU code (`depends on cudarc through
    /// candle-core`); absent when no package shows a sign and every one got entries.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gpu_signs: Vec<String>,
}

/// One entry `init` writes.
#[derive(Debug, Clone, Serialize)]
pub struct InitEntry {
    /// The kernel's name.
    pub name: String,
    /// `bench NAME`, `example NAME` or `bin NAME`.
    pub target: String,
    /// The harness case it selects alone, as the program's `--list` printed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
}

/// The list of configured kernels (`cargo kprof list`). Its JSON has no `reason`: it is
/// the command's whole result, one object, as it was before the messages were typed.
#[derive(Debug, Clone, Serialize)]
pub struct KernelList {
    /// One row per kernel.
    pub kernels: Vec<ListedKernel>,
}

/// One configured kernel.
#[derive(Debug, Clone, Serialize)]
pub struct ListedKernel {
    /// Its index for `--index`.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// Its package.
    pub package: String,
    /// Its target (`bench hgemm`).
    pub target: String,
    /// How it runs.
    pub runtime: Runtime,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its harness case.
    pub case: String,
    /// Its filter as ncu takes it.
    pub filter: String,
    /// Its arguments quoted for a shell, for the table.
    #[serde(skip)]
    pub quoted_args: String,
}

impl Message for KernelList {
    fn channel(&self) -> Channel {
        Channel::Result { preface: None }
    }
}

/// One step of a bisect: a revision checked against `--good`, or skipped.
#[derive(Debug, Clone, Serialize)]
pub struct BisectStep {
    /// The step, from 1.
    pub step: usize,
    /// The revision, abbreviated.
    pub commit: String,
    /// Its subject line.
    pub subject: String,
    /// `regressed`, `unchanged`, `improved`, `ambiguous` or `skipped`.
    pub outcome: StepOutcome,
    /// Why it was skipped.
    pub why_skipped: Option<String>,
    /// Timing rounds per side (twice the usual for the retry of an ambiguous check).
    pub rounds: u32,
    /// No check ran: the revision has the same build as this one (`--good`, or a revision
    /// checked already), whose outcome it takes. Bisects from an archive only.
    pub same_build_as: Option<String>,
    /// After it: the last revision known good (`--good`'s at first).
    pub last_good: String,
    /// After it: the first known regressed, when one is.
    pub first_bad: Option<String>,
    /// The A/B check's line of each kernel.
    pub evidence: Vec<String>,
}

/// A bisect archive written (`cargo kprof archive --bisect GOOD..BAD`).
#[derive(Debug, Clone, Serialize)]
pub struct BisectArchive {
    /// The archive.
    pub archive: PathBuf,
    /// `GOOD`.
    pub good: BaseRevision,
    /// `BAD`.
    pub bad: BaseRevision,
    /// The kernels packed.
    pub kernels: Vec<String>,
    /// The first-parent revisions after `GOOD` up to `BAD`.
    pub revisions: usize,
    /// The distinct builds packed (revisions with identical builds share one).
    pub builds: usize,
    /// The revisions not packed, each with why (it does not build, it lacks the kernel).
    pub not_built: Vec<(String, String)>,
}

/// The end of a bisect.
#[derive(Debug, Clone, Serialize)]
pub struct BisectFinished {
    /// `first-bad`, `range`, `no-regression` or `undecided`.
    pub result: BisectResult,
    /// The first regressed revision (`first-bad`), or the first known regressed (`range`).
    pub commit: Option<String>,
    /// Its subject line.
    pub subject: Option<String>,
    /// Its author date.
    pub date: Option<String>,
    /// `range`: the last revision known good.
    pub after: Option<String>,
    /// `range`: the revisions that could not be told, one of which or `commit` is the first
    /// regressed.
    pub hidden: Vec<String>,
    /// Its check's line of each kernel (verdict, interval, counters, hot line).
    pub evidence: Vec<String>,
    /// A later revision clearly slower still: a second regression, to bisect from `commit`.
    pub second: Option<String>,
    /// The revisions skipped, each with why.
    pub skipped: Vec<(String, String)>,
    /// Checks run.
    pub checks: usize,
    /// `ceil(log2 n) + 1` for the `n` revisions searched.
    pub check_bound: usize,
    /// `bisect.md`.
    pub report: PathBuf,
    /// The process exit code.
    pub exit_code: i32,
}
