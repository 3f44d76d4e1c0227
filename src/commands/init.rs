//! `cargo kprof init`: a first configuration for a project that has none (`ops::init`).

use anyhow::Result;

use crate::cli::InitArgs;
use crate::error::ExitCode;
use crate::ops::init::{self, InitOptions};
use crate::shell::Shell;

/// `cargo kprof init`.
pub(crate) fn init(a: &InitArgs, shell: &Shell) -> Result<ExitCode> {
    let opts =
        InitOptions { manifest_path: a.manifest_path.as_deref(), packages: &a.packages, dry_run: a.dry_run };
    init::init(opts, shell)
}
