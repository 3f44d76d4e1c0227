//! The profile directory: the one owner of its layout on disk.
//!
//! [`dir`] names every path of a profile directory, [`root`] those of the profiles root
//! around it (baselines, the index, `ncu_path`), [`names`] the names made from data (the
//! one sanitiser, profile ids); [`fs`] writes into them atomically, [`target_spec`] is
//! `profile-target.yaml`, [`run_manifest`] is `run_manifest.yaml`, [`import`] makes a profile directory from ncu exports, [`output`]
//! checks and creates the places a run writes so that a failure leaves nothing behind,
//! [`readers`] reads the analysis' and the timing's files back, typed; [`html`] names the
//! HTML views' files; [`census`] names the files of a program's census; [`ptx_cache`] keeps NVRTC's output
//! between the harness runs of one invocation.

pub mod ab;
pub mod bisect;
pub mod census;
pub mod dir;
pub mod fs;
pub mod history;
pub mod html;
pub mod import;
pub mod names;
pub mod output;
pub mod ptx_cache;
pub mod readers;
pub mod root;
pub mod run_manifest;
pub mod target_spec;
pub mod timestamp;

pub use dir::ProfileDir;
pub use run_manifest::{RunManifest, StageOutcome, StageStatus};
