//! The pipeline drivers: each carries out one command's work over the pipeline modules
//! and reports through typed [`crate::events`], so that a command file only reads its
//! arguments, builds the options, calls one driver and returns its exit code (cargo's
//! `ops::*` under `bin/cargo/commands/*`).
//!
//! - [`opening`]: the common opening (workspace, request, shard, plan, notes, root).
//! - [`profile`]: profile a plan, one worker per GPU; `cargo kprof`, `run --archive` and
//!   every kind of check profile through it.
//! - [`check`]: `compare` and the baseline check, and the result files of every check.
//! - [`ab`]: the A/B check against a git revision (sides, profiles, rounds, verdicts, its
//!   result files), every side of a check, an archive or a bisect made one way
//!   (`ab::side`), and `archive --base` (`ab::pack`).
//! - [`archive`]: pack a built plan, and unpack one to run.
//! - [`merge`]: shards' profile roots into one, with one verdict.
//! - [`init`], [`doctor`]: the first configuration, and what this machine lacks.
//! - [`explain`]: what a limiter, metric, section, stage or question name means.
//!
//! Drivers may use one another (the checks profile through [`profile`]), one way only:
//! [`ab`] uses [`archive`] and [`check`], [`bisect`] uses [`ab`], never the other way round
//! (`tests/it/layout.rs` checks the modules for circles); nothing below this layer imports
//! it.

pub mod ab;
pub mod archive;
pub mod bisect;
pub mod check;
pub mod doctor;
pub mod explain;
pub mod init;
pub mod merge;
pub mod opening;
pub mod profile;
