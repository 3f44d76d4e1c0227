//! The payloads of the drivers' progress messages (builds, the index, baselines, result
//! files, an A/B check's and a bisect's steps, ...), and their words for people: each
//! struct's `Display` is its line.

use std::fmt;
use std::path::PathBuf;

use serde::{Serialize, Serializer};

use crate::model::partition::Partition;
use crate::vcs::worktree::BaseRevision;

/// Why a build runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BuildPurpose {
    /// The programs to profile or to archive, with line info.
    LineInfo,
    /// `init`'s build of the harness benches, to list their cases.
    ListCases,
    /// The census tracer, built once for this cargo-kprof (see `build::tracer`).
    CensusTracer,
}

/// A `cargo build` starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BuildStarted {
    /// The side built, as the line names it (`the base`, `the head`, `revision
    /// 3f2a1c9d0e1b`, `--good 3f2a1c9d0e1b`); `null` where a run has no sides.
    pub side: Option<String>,
    /// What is built, in brief: the targets, the profile and the target directory.
    pub build: String,
    /// How many targets.
    pub targets: usize,
    /// Why it runs.
    pub purpose: BuildPurpose,
}

impl fmt::Display for BuildStarted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let build = &self.build;
        match (self.purpose, &self.side) {
            (BuildPurpose::LineInfo, None) => write!(f, "Building with line info: {build}"),
            (BuildPurpose::LineInfo, Some(side)) => write!(f, "Building {side} with line info: {build}"),
            (BuildPurpose::ListCases, _) => write!(
                f,
                "Building {build} to list {} cases (a build like a profile's, reused by it; no GPU needed)",
                if self.targets == 1 { "its" } else { "their" }
            ),
            (BuildPurpose::CensusTracer, _) => {
                write!(f, "Building the census tracer, once for this cargo-kprof: {build}")
            }
        }
    }
}

/// One side's build is done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BuildDone {
    /// The side, as its `build-started` named it.
    pub side: String,
    /// The build's wall time, ms.
    pub wall_ms: u64,
}

impl fmt::Display for BuildDone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "  built {} in {:.1} s", self.side, self.wall_ms as f64 / 1000.0)
    }
}

/// A profiles root's index is rewritten.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IndexWritten {
    /// Its `index.md`.
    pub index: PathBuf,
}

impl fmt::Display for IndexWritten {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Index: {}", self.index.display())
    }
}

/// A profile is saved as a baseline (`--save-baseline NAME`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BaselineSaved {
    /// The baseline's name.
    pub name: String,
    /// The kernel.
    pub kernel: String,
    /// Where it is saved.
    pub path: PathBuf,
}

impl fmt::Display for BaselineSaved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Baseline `{}`: {}", self.name, self.path.display())
    }
}

/// A file of results for a benchmark tracker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResultsFormat {
    /// Bencher's metric format (`--bmf`).
    Bmf,
    /// github-action-benchmark's (`--github-benchmark`).
    GithubBenchmark,
}

impl ResultsFormat {
    /// The flag that asks for it.
    pub fn flag(self) -> &'static str {
        match self {
            ResultsFormat::Bmf => "--bmf",
            ResultsFormat::GithubBenchmark => "--github-benchmark",
        }
    }
}

/// A results file is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResultsWritten {
    /// Its format.
    pub format: ResultsFormat,
    /// The file.
    pub path: PathBuf,
}

impl fmt::Display for ResultsWritten {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Results for {}: {}", self.format.flag(), self.path.display())
    }
}

/// An A/B archive's two sides are unpacked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchiveUnpacked {
    /// The archive.
    pub archive: PathBuf,
    /// The `--workspace-remap` directory they are unpacked into.
    pub into: PathBuf,
}

impl fmt::Display for ArchiveUnpacked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Unpacked both sides of {} into {}", self.archive.display(), self.into.display())
    }
}

/// An A/B check starts: this tree against the base revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AbStarted {
    /// The base revision.
    pub base: BaseRevision,
}

impl fmt::Display for AbStarted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "A/B: head (this tree) against base {} ({})", self.base.short(), self.base.asked)
    }
}

/// Both sides of an A/B check are profiled and timed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AbMeasured {
    /// The kernels checked.
    pub kernels: usize,
    /// The profiles' and the rounds' wall time together, ms (builds excluded).
    pub wall_ms: u64,
}

impl fmt::Display for AbMeasured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "A/B: both sides' profiles and the rounds of {} kernel(s) took {:.1} s (builds excluded)",
            self.kernels,
            self.wall_ms as f64 / 1000.0
        )
    }
}

/// The interleaved timing rounds of an A/B check start, for one kernel or for several
/// kernels of one program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimingPlanned {
    /// The kernels timed together.
    pub kernels: Vec<String>,
    /// Their program, when several are timed together.
    pub program: Option<String>,
    /// Rounds of base and head.
    pub rounds: u32,
}

impl fmt::Display for TimingPlanned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kernels.as_slice(), &self.program) {
            (all, Some(program)) if all.len() > 1 => {
                write!(f, "Timing {} kernels of `{program}`", all.len())?
            }
            (all, _) => write!(f, "Timing `{}`", all.join("`, `"))?,
        }
        write!(f, ": {} interleaved rounds of base and head", self.rounds)
    }
}

/// Kernels the rounds left undecided, where as many rounds again could decide them, get
/// them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimingExtended {
    /// The undecided kernels.
    pub kernels: Vec<String>,
    /// The rounds run so far, and run again.
    pub rounds: u32,
}

impl fmt::Display for TimingExtended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.kernels.iter().map(|k| format!("`{k}`")).collect();
        write!(
            f,
            "Timing {}: undecided after {} rounds, where {} more could decide; running them",
            names.join(", "),
            self.rounds,
            self.rounds
        )
    }
}

/// Kernels whose rounds already put them inside the tolerance stop before the planned
/// count ([`crate::compare::ab::early_stop`]); the others go on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimingStopped {
    /// The kernels that stop.
    pub kernels: Vec<String>,
    /// The rounds they ran.
    pub after: u32,
    /// The rounds planned.
    pub planned: u32,
}

impl fmt::Display for TimingStopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.kernels.iter().map(|k| format!("`{k}`")).collect();
        write!(
            f,
            "Timing {}: inside the tolerance after {} of {} rounds; no more rounds for {}",
            names.join(", "),
            self.after,
            self.planned,
            if self.kernels.len() == 1 { "it" } else { "them" }
        )
    }
}

/// A profile root a merge reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MergeReading {
    /// The profile root.
    pub root: PathBuf,
    /// Its shard (`count:1/2`), when it is one.
    #[serde(serialize_with = "as_text")]
    pub partition: Option<Partition>,
    /// The `--workspace-remap` directory given, when the root is one's.
    pub remapped_from: Option<PathBuf>,
}

impl fmt::Display for MergeReading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shard = self.partition.map(|p| p.label()).unwrap_or_else(|| "not a shard".into());
        write!(f, "Reading {} ({shard}): ", self.root.display())?;
        match &self.remapped_from {
            Some(given) => {
                write!(f, "the profile root of the --workspace-remap directory {}", given.display())
            }
            None => f.write_str("a profile root"),
        }
    }
}

/// `value` as its `Display` text, or `null`.
fn as_text<S: Serializer, T: fmt::Display>(value: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => s.collect_str(v),
        None => s.serialize_none(),
    }
}

/// One shape of a kernel's launches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaunchShape {
    /// `grid (..) block (..)`, as ncu printed them.
    pub shape: String,
    /// The launches of that shape.
    pub launches: usize,
}

/// The launches a batch profiled of one kernel have several shapes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaunchShapes {
    /// The kernel.
    pub kernel: String,
    /// Each shape, in the order met.
    pub shapes: Vec<LaunchShape>,
}

impl fmt::Display for LaunchShapes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let listed: Vec<String> =
            self.shapes.iter().map(|s| format!("{} ({} launch(es))", s.shape, s.launches)).collect();
        write!(
            f,
            "`{}`: the launches profiled have {} shapes: {}",
            self.kernel,
            self.shapes.len(),
            listed.join("; ")
        )
    }
}

/// `report` rewrote files of a profile directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FilesRewritten {
    /// The profile directory.
    pub dir: PathBuf,
    /// The files rewritten.
    pub files: Vec<PathBuf>,
}

impl fmt::Display for FilesRewritten {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.files.iter().map(|p| p.display().to_string()).collect();
        write!(f, "Rewrote {} file(s) in {}: {}", names.len(), self.dir.display(), names.join(", "))
    }
}

/// A report page is opened in a browser (`--open`), or its URL said where none can start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PageShown {
    /// The page's `file://` URL.
    pub url: String,
    /// Whether a browser was started.
    pub browser: bool,
}

impl fmt::Display for PageShown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.browser {
            true => write!(f, "Opening {} in a browser", self.url),
            false => {
                write!(
                    f,
                    "No browser here (no BROWSER, DISPLAY or WAYLAND_DISPLAY): the page is {}",
                    self.url
                )
            }
        }
    }
}

/// `init` is done: what to do next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InitFinished {
    /// Whether it was a dry run (nothing written).
    pub dry_run: bool,
    /// The first kernel entry, for the next command.
    pub first_kernel: String,
}

impl fmt::Display for InitFinished {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.dry_run {
            true => f.write_str("Nothing was written; run again without --dry-run to append these tables"),
            false => write!(
                f,
                "Next: narrow each `regex` to its kernel's function name, then `cargo kprof list` and \
                 `cargo kprof --kernel {}`",
                self.first_kernel
            ),
        }
    }
}
