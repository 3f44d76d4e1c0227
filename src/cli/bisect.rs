//! `bisect`'s arguments, beside `cli.rs` so that it stays one readable file.

use clap::Args;

use super::ab::GateArg;
use crate::model::ab::GateSignal;

/// `cargo kprof bisect`.
#[derive(Debug, Args)]
pub struct BisectArgs {
    /// A revision where the kernel was fast: every step is an A/B check against it
    #[arg(long, value_name = "REV", required_unless_present = "archive")]
    pub good: Option<String>,
    /// A revision where the kernel is slower (default: HEAD); the search runs on its
    /// first-parent path from --good
    #[arg(long, value_name = "REV")]
    pub bad: Option<String>,
    /// Search a bisect archive written by `cargo kprof archive --bisect GOOD..BAD`, on a
    /// machine without cargo (its range replaces --good and --bad)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["good", "bad"])]
    pub archive: Option<std::path::PathBuf>,
    /// With --archive: where to unpack its builds and write the profiles (must not exist or
    /// be empty; default: kprof-bisect)
    #[arg(long, value_name = "DIR", requires = "archive")]
    pub workspace_remap: Option<std::path::PathBuf>,
    /// Time only: no ncu, fast (harness targets only)
    #[arg(long)]
    pub timing_only: bool,
    /// Changes within this many percent count as unchanged (default: the kernel's `tolerance-pct`, else 2.0)
    // Values starting with `-` are values here, so that `-1` gets parse_tolerance's message.
    #[arg(long, value_name = "PCT", value_parser = super::parse_tolerance, allow_hyphen_values = true)]
    pub tolerance_pct: Option<f64>,
    /// Interleaved timing rounds per side of each check (at least 6; default 12); an
    /// ambiguous check runs again with twice as many
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(6..=200))]
    pub rounds: Option<u32>,
    /// What makes a revision regressed: the timing, the clock-independent counters, or both
    #[arg(long, value_name = "SIGNAL", value_enum, default_value_t = GateArg::Both)]
    pub gate: GateArg,
    /// What to profile, as for `cargo kprof` (`-k KERNEL` is required).
    #[command(flatten)]
    pub profile: super::ProfileArgs,
}

impl BisectArgs {
    /// `--gate` as the model's type.
    pub fn gate(&self) -> GateSignal {
        match self.gate {
            GateArg::Time => GateSignal::Time,
            GateArg::Counters => GateSignal::Counters,
            GateArg::Both => GateSignal::Both,
        }
    }
}
