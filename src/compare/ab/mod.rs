//! The pure half of an A/B check (`cargo kprof check --base REV`): from the numbers both
//! sides produced to a verdict per kernel and an exit code.
//!
//! `check --base` builds the base revision (side A) and the working tree (side B), runs
//! interleaved timing rounds, and collects clock-independent counters for both. This
//! module only reads those numbers: [`rounds`] is the committed format of the rounds
//! (`ab_rounds.json`); [`stats`] turns them into an estimate, a 95 % interval and a timing
//! verdict, and [`early_stop`] when its rounds may stop before the planned count;
//! [`counters`] compares the counters class by class; [`verdict`] combines the
//! two as `--gate` says, writes the reviewer's line and the rule, and picks the exit code.
//! Those five do no I/O and start no process: the same numbers always give the same
//! verdict; [`hotspot`] phrases where the head's time goes. The check itself is driven by
//! `ops::ab`, which runs the rounds through `collect::rounds` and reads the counters pages,
//! and `crate::report::ab` writes what it found. `recorded` and `recorded_sweep` (tests) replay
//! the rule on every A/B check recorded on the H200.

pub mod counters;
pub mod early_stop;
pub mod hotspot;
pub mod modes;
#[cfg(test)]
mod recorded;
#[cfg(test)]
mod recorded_sweep;
pub mod rounds;
pub mod stats;
pub mod verdict;
