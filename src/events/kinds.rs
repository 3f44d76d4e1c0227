//! The closed sets of words the messages carry (a check's verdict, a bisect's result, ...),
//! as enums that serialise to the same words their fields always had. Sets the rest of the
//! crate already names (a stage's status, a kernel's class, a worktree's action, ...) are
//! its own enums, used as they are.

use serde::{Serialize, Serializer};

/// What a check compared against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckMode {
    /// Saved baselines (`check --baseline NAME`).
    Baseline,
    /// A git revision, in interleaved rounds (`check --base REV`).
    Ab,
}

/// A check's verdict over every kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckVerdict {
    /// A kernel regressed beyond tolerance.
    Regressed,
    /// None regressed, and the check could not tell a kernel from noise.
    Ambiguous,
    /// No kernel regressed, and every one was told.
    Clean,
}

/// What one step of a bisect concluded of its revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepOutcome {
    /// Slower beyond the tolerance, or a gated counter grew.
    Regressed,
    /// Within the tolerance.
    Unchanged,
    /// Faster beyond the tolerance.
    Improved,
    /// The interval straddles the tolerance.
    Ambiguous,
    /// Not checked (a failed build, the kernel missing).
    Skipped,
}

impl StepOutcome {
    /// The word, as JSON spells it.
    pub fn name(self) -> &'static str {
        match self {
            StepOutcome::Regressed => "regressed",
            StepOutcome::Unchanged => "unchanged",
            StepOutcome::Improved => "improved",
            StepOutcome::Ambiguous => "ambiguous",
            StepOutcome::Skipped => "skipped",
        }
    }
}

impl From<&crate::compare::bisect::Outcome> for StepOutcome {
    fn from(o: &crate::compare::bisect::Outcome) -> StepOutcome {
        use crate::compare::bisect::Outcome;
        match o {
            Outcome::Regressed { .. } => StepOutcome::Regressed,
            Outcome::Unchanged => StepOutcome::Unchanged,
            Outcome::Improved => StepOutcome::Improved,
            Outcome::Ambiguous => StepOutcome::Ambiguous,
            Outcome::Skipped { .. } => StepOutcome::Skipped,
        }
    }
}

/// What a bisect concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BisectResult {
    /// The first regressed revision is found.
    FirstBad,
    /// It is one of a range that unchecked revisions leave.
    Range,
    /// `--bad` is not slower than `--good` beyond the tolerance.
    NoRegression,
    /// `--bad` could not be told from `--good`.
    Undecided,
}

/// A guide `doctor` prints after its checks. Serialised as its whole text, which is what
/// the message always carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DoctorGuide {
    /// How to let ncu run through `sudo -n` (a sudo check failed).
    Sudo,
}

impl DoctorGuide {
    /// The guide's text.
    pub fn text(self) -> &'static str {
        match self {
            DoctorGuide::Sudo => crate::ncu::privilege::SUDO_GUIDE,
        }
    }
}

impl Serialize for DoctorGuide {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.text())
    }
}
