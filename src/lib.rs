//! cargo-kprof: evidence-first Nsight Compute kernel profiling for Rust GPU projects.
//!
//! The folders are the pipeline, read top-down:
//!
//! - entry: [`cli`] (clap structs only), [`commands`] (one file per subcommand).
//! - pipeline: [`config`] and the command line resolve into one [`plan`]; [`build`] (the
//!   only module that talks to cargo) builds with line info; [`archive`] packs a plan to
//!   profile elsewhere; [`collect`] runs the ncu stages; [`analyze`] turns pages into a
//!   summary, a verdict and hotspots; [`report`] renders them; [`compare`] puts two
//!   profiles side by side and gates on regressions.
//! - ground: [`profile`] (every path of a profile directory), [`model`] (one type per
//!   concept), [`ncu`] (the only module that knows ncu's flags and CSV), [`references`],
//!   [`process`] (the one process runner), [`shell`] (all output), [`units`] (one number
//!   style), [`error`] (exit codes), [`suggest`].
#![warn(missing_docs)]

// entry
pub mod cli;
pub mod commands;

// pipeline
pub mod analyze;
pub mod archive;
pub mod build;
pub mod collect;
pub mod compare;
pub mod config;
pub mod plan;
pub mod report;

// ground
pub mod error;
pub mod model;
pub mod ncu;
pub mod process;
pub mod profile;
pub mod references;
pub mod shell;
pub mod suggest;
pub mod units;
