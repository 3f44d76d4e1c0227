//! The payloads of a bisect's progress and of the packing of a bisect archive, and their
//! words for people: each struct's `Display` is its line. (A step's verdict and the end
//! are `bisect-step` and `bisect-finished`, in `payloads.rs`.)

use std::fmt;

use serde::Serialize;

use crate::vcs::worktree::BaseRevision;

/// A bisect starts: the revisions between `--good` and `--bad`, and how many checks it
/// may take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BisectStarted {
    /// `--good`.
    pub good: BaseRevision,
    /// `--bad`.
    pub bad: BaseRevision,
    /// The first-parent revisions after `--good` up to `--bad`.
    pub revisions: usize,
    /// The distinct builds among them, when a bisect archive tells (`bisect --archive`).
    pub builds: Option<usize>,
    /// `ceil(log2 n) + 1` for the `n` revisions: the checks when every check decides.
    pub check_bound: usize,
}

impl fmt::Display for BisectStarted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Bisect: {} first-parent revision(s) after --good {} ({}) up to --bad {} ({})",
            self.revisions,
            self.good.short(),
            self.good.asked,
            self.bad.short(),
            self.bad.asked
        )?;
        if let Some(builds) = self.builds {
            write!(f, ", {builds} distinct build(s)")?;
        }
        write!(f, "; at most {} checks", self.check_bound)
    }
}

/// A revision is checked against `--good` (an A/B check).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BisectChecking {
    /// The revision, abbreviated.
    pub commit: String,
    /// Its subject line.
    pub subject: String,
    /// `--good`, abbreviated.
    pub good: String,
    /// Timing rounds per side.
    pub rounds: u32,
}

impl fmt::Display for BisectChecking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Bisect: checking {} {} against --good {} ({} rounds)",
            self.commit, self.subject, self.good, self.rounds
        )
    }
}

/// A revision has the build of one known already (`--good`'s, or one checked): it takes
/// that one's outcome, and no check runs. Bisects from an archive only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BisectSameBuild {
    /// The revision, abbreviated.
    pub commit: String,
    /// Its subject line.
    pub subject: String,
    /// The revision whose build it has, abbreviated.
    pub same_build_as: String,
    /// Whether that is `--good`.
    pub good: bool,
}

impl fmt::Display for BisectSameBuild {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.good {
            true => write!(f, "Bisect: {} {} has --good's build", self.commit, self.subject),
            false => write!(
                f,
                "Bisect: {} {} has the build of {}, checked already",
                self.commit, self.subject, self.same_build_as
            ),
        }
    }
}

/// A bisect archive is being packed (`archive --bisect GOOD..BAD`): every revision is
/// built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BisectArchiveStarted {
    /// `GOOD`.
    pub good: BaseRevision,
    /// `BAD`.
    pub bad: BaseRevision,
    /// The first-parent revisions after `GOOD` up to `BAD`.
    pub revisions: usize,
}

impl fmt::Display for BisectArchiveStarted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Archive for bisect: --good {} ({}) and {} first-parent revision(s) up to {} ({}), each built; \
             identical builds are packed once",
            self.good.short(),
            self.good.asked,
            self.revisions,
            self.bad.short(),
            self.bad.asked
        )
    }
}

/// A revision of a bisect archive is built and packed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RevisionPacked {
    /// The revision, abbreviated.
    pub commit: String,
    /// Its subject line.
    pub subject: String,
    /// The build it has (identical builds share one), from 0: `--good`'s.
    pub build: usize,
}

impl fmt::Display for RevisionPacked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "  {} {}: build {}", self.commit, self.subject, self.build)
    }
}

/// A revision of a bisect archive is not packed: a warning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RevisionNotPacked {
    /// The revision, abbreviated.
    pub commit: String,
    /// Its subject line.
    pub subject: String,
    /// Why (`does not build: ...`, `lacks the kernel ...`), after "it".
    pub why: String,
}

impl fmt::Display for RevisionNotPacked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} is not packed: it {}", self.commit, self.subject, self.why)
    }
}

/// The archive packed, the revisions it holds and those it could not build, and how to search it.
impl fmt::Display for super::BisectArchive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self;
        write!(
            f,
            "Archive: {} (bisect: --good {} ({}) and {} revision(s) up to {} ({}), {} distinct build(s))",
            b.archive.display(),
            b.good.short(),
            b.good.asked,
            b.revisions,
            b.bad.short(),
            b.bad.asked,
            b.builds
        )?;
        for (commit, why) in &b.not_built {
            write!(f, "\n  {commit} is not packed: it {why}")?;
        }
        write!(
            f,
            "\n  search it on the GPU machine: cargo-kprof kprof bisect --archive {} --workspace-remap DIR",
            b.archive.display()
        )
    }
}
