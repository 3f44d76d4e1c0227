//! The words of an A/B check (`cargo kprof check --base REV`): the base it compares
//! with, the two sides, what a
//! kernel's comparison concludes, which signals may fail the gate, and what an ambiguous
//! conclusion does to the exit code.

use serde::{Deserialize, Serialize};

/// The base revision an A/B check or an A/B archive compares with, as `--base` asks for
/// it (read from the command line in `cli`, resolved to a commit in `vcs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseRev {
    /// `--base` with no revision: the merge base of `HEAD` and the branch the change will
    /// merge into.
    MergeBase,
    /// `--base REV`: a branch, tag or commit.
    Named(String),
}

/// One side of an A/B check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The base revision (`--base REV`): A.
    Base,
    /// The working tree being checked: B.
    Head,
}

impl Side {
    /// `base` or `head`.
    pub fn name(self) -> &'static str {
        match self {
            Side::Base => "base",
            Side::Head => "head",
        }
    }

    /// The side that runs first in round `index` of an A/B check: base in even rounds,
    /// head in odd ones, so that a drift of the GPU over the rounds lands on both alike.
    pub fn first_in_round(index: u32) -> Side {
        if index % 2 == 0 {
            Side::Base
        } else {
            Side::Head
        }
    }

    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::Base => Side::Head,
            Side::Head => Side::Base,
        }
    }
}

/// What one kernel's A/B comparison concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AbVerdict {
    /// Faster beyond the tolerance, with the whole interval below `-tolerance`.
    Improved,
    /// The whole interval lies within the tolerance.
    Unchanged,
    /// Slower beyond the tolerance (time), or a gated counter grew beyond its threshold.
    Regressed,
    /// The interval straddles the tolerance: the run cannot tell.
    Ambiguous,
}

impl AbVerdict {
    /// The spelling in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            AbVerdict::Improved => "improved",
            AbVerdict::Unchanged => "unchanged",
            AbVerdict::Regressed => "regressed",
            AbVerdict::Ambiguous => "ambiguous",
        }
    }
}

/// Which signals may fail the gate (`--gate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GateSignal {
    /// Only the interleaved timing.
    Time,
    /// Only the clock-independent counters.
    Counters,
    /// Either: time decides when it can; counters catch what time calls unchanged.
    #[default]
    Both,
}

impl GateSignal {
    /// `time`, `counters` or `both`.
    pub fn name(self) -> &'static str {
        match self {
            GateSignal::Time => "time",
            GateSignal::Counters => "counters",
            GateSignal::Both => "both",
        }
    }

    /// Whether the counters pass runs.
    pub fn uses_counters(self) -> bool {
        self != GateSignal::Time
    }
}

/// What an [`AbVerdict::Ambiguous`] does to the exit code (`--ambiguous`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AmbiguousPolicy {
    /// Exit 14 (`ExitCode::Ambiguous`).
    #[default]
    Fail,
    /// Exit 0, with a warning.
    Pass,
}
