//! cargo-kprof: evidence-first Nsight Compute kernel profiling for Rust GPU projects.
//!
//! The folders are the pipeline, read top-down:
//!
//! - entry: [`cli`] (clap structs only), [`commands`] (one thin file per subcommand),
//!   [`ops`] (the drivers the commands call), [`events`] (every message, typed).
//! - pipeline: [`config`] and the command line resolve into one [`plan`]; [`build`] (the
//!   only module that talks to cargo) builds with line info; [`vcs`] (the only module
//!   that talks to git) checks out a base revision or lists a bisect's commits;
//!   [`archive`] packs a plan to profile elsewhere; [`collect`] runs the ncu stages; [`analyze`] turns pages into a
//!   summary, a verdict and hotspots; [`report`] renders them; [`compare`] puts two
//!   profiles side by side and gates on regressions.
//! - ground: [`profile`] (every path of a profile directory), [`model`] (one type per
//!   concept), [`ncu`] (the only module that knows ncu's flags and CSV), [`references`],
//!   [`process`] (the one process runner), [`shell`] (all output), [`units`] (one number
//!   style), [`error`] (exit codes), [`suggest`].
#![warn(missing_docs)]
// Functions stay readable: the threshold (80 lines) is in clippy.toml.
#![warn(clippy::too_many_lines)]

// entry
pub(crate) mod cli;
pub mod commands;
pub(crate) mod events;
pub(crate) mod ops;

// pipeline
pub mod analyze;
pub(crate) mod archive;
pub(crate) mod build;
pub(crate) mod collect;
pub(crate) mod compare;
pub mod config;
pub(crate) mod plan;
pub mod report;
pub(crate) mod vcs;

// ground
pub mod error;
pub mod model;
pub mod ncu;
pub mod process;
pub mod profile;
pub mod references;
pub(crate) mod shell;
pub(crate) mod suggest;
pub mod units;

/// The checks kprof makes on inputs written elsewhere (an archive and its plan, a shard's
/// index), as the commands call them: for the fuzz targets and the tests that damage
/// those inputs.
pub mod inputs {
    pub use crate::archive::check::{check as check_archive, check_plan, CheckedArchive};
    pub use crate::ops::merge::{merge, Merged};
}
