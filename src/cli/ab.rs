//! `check --base`'s arguments (the A/B check against a git revision), beside `cli.rs` so
//! that it stays one readable file.

use clap::{Args, ValueEnum};

use crate::model::ab::{AmbiguousPolicy, BaseRev, GateSignal};

/// What clap is handed for `--base` given with no revision (`default_missing_value`), and
/// what `--base` may say for it: the merge base. Spelled here only; past this file it is
/// [`BaseRev::MergeBase`].
pub const MERGE_BASE: &str = "auto";

/// Parses `--base [REV]` (`check --base`, `archive --base`): no revision is the merge base.
pub fn parse_base(s: &str) -> Result<BaseRev, String> {
    Ok(match s {
        MERGE_BASE => BaseRev::MergeBase,
        rev => BaseRev::Named(rev.to_string()),
    })
}

/// How `check` compares with a git revision.
#[derive(Debug, Args, Clone, Default)]
pub struct AbArgs {
    /// Compare with git revision REV, built and timed on this machine, interleaved with this
    /// tree (no REV: the merge base with the upstream branch, or with origin/$GITHUB_BASE_REF
    /// in GitHub Actions)
    #[arg(long, value_name = "REV", num_args = 0..=1, default_missing_value = MERGE_BASE, value_parser = parse_base, conflicts_with = "baseline")]
    pub base: Option<BaseRev>,
    /// Interleaved timing rounds per side of an A/B check (at least 6; default 12)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(6..=200))]
    pub rounds: Option<u32>,
    /// What may fail an A/B check: the timing, the clock-independent counters, or both
    #[arg(long, value_name = "SIGNAL", value_enum, default_value_t = GateArg::Both)]
    pub gate: GateArg,
    /// What an ambiguous kernel does: fail (exit 14) or pass (exit 0, with a warning)
    #[arg(long, value_name = "WHAT", value_enum, default_value_t = AmbiguousArg::Fail)]
    pub ambiguous: AmbiguousArg,
}

/// `--gate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum GateArg {
    /// The interleaved timing only
    Time,
    /// The counters only
    Counters,
    /// Either
    #[default]
    Both,
}

/// `--ambiguous`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum AmbiguousArg {
    /// Exit 14
    #[default]
    Fail,
    /// Exit 0 with a warning
    Pass,
}

impl AbArgs {
    /// `--gate` as the model's type.
    pub fn gate(&self) -> GateSignal {
        match self.gate {
            GateArg::Time => GateSignal::Time,
            GateArg::Counters => GateSignal::Counters,
            GateArg::Both => GateSignal::Both,
        }
    }

    /// `--ambiguous` as the model's type.
    pub fn ambiguous(&self) -> AmbiguousPolicy {
        match self.ambiguous {
            AmbiguousArg::Fail => AmbiguousPolicy::Fail,
            AmbiguousArg::Pass => AmbiguousPolicy::Pass,
        }
    }
}
