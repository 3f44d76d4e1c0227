//! Everything that knows Nsight Compute's command line.
//!
//! [`locate`] finds the `ncu` binary (the `NCU` override, then `PATH`, then
//! `profile/ncu_path`); [`command`] turns one stage of a plan into the exact
//! `ncu` invocation, run directly or through `sudo -n` ([`privilege`]). No other
//! module writes an ncu flag, so `--dry-run`, `commands.sh` and the real run cannot
//! disagree.

pub mod command;
pub mod hot_lines;
pub mod locate;
pub mod parse;
pub mod preflight;
pub mod privilege;
pub mod stages;

pub use command::{ClockControl, LaunchWindow, StageCollection, StageRun, TargetCommand};
pub use locate::{locate_ncu, NcuLocation, NcuSource};
pub use privilege::Privilege;
