//! cargo-kprof: evidence-first Nsight Compute kernel profiling for Rust GPU projects.
//!
//! The pipeline is data flowing through modules with typed inputs and outputs:
//! configuration ([`config`]) and the command line ([`cli`]) resolve into one
//! [`plan`]; [`build`] (the only module that talks to cargo) builds the targets with
//! line info; [`ncu`] (the only module that knows ncu's flags) turns a plan into
//! command lines; the profile directory ([`profile_dir`], [`target_spec`]) holds
//! everything a run writes. Errors carry documented exit codes ([`error`]).
#![warn(missing_docs)]

pub mod analysis;
pub mod analyze;
pub mod archive;
pub mod baseline;
pub mod build;
pub mod cli;
pub mod collect;
pub mod compare;
pub mod config;
pub mod error;
pub mod filter;
pub mod gate;
pub mod index;
pub mod ncu;
pub mod plan;
pub mod preflight;
pub mod process;
pub mod profile_dir;
pub mod references;
pub mod report;
pub mod stage;
pub mod suggest;
pub mod target_spec;
pub mod timing;
pub mod visual;
pub mod workflow;
