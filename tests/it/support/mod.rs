//! Helpers the integration tests share: a cargo workspace in a temporary directory, the
//! recordings, stand-ins for ncu and sudo, and file-system helpers.
#![allow(dead_code)]

pub mod bounded;
pub mod cdp;
pub mod fake_ncu;
pub mod fake_sudo;
pub mod fs;
pub mod lint;
pub mod recorded_argv;
pub mod snapshot;
pub mod tarball;
pub mod workspace;

pub use bounded::{kprof_bounded, output_within};
pub use fs::{
    copy_dir, fixture_details, fixtures, only_dir, recorded_summaries, recording, recording_file, recordings,
    repo, shell_words, text,
};
pub use workspace::{kprof_bin, kprof_env, path_with, write_script, Workspace};
