//! `cargo kprof doctor`: what profiling needs on this machine, one line each, with fixes
//! (`ops::doctor`).

use anyhow::Result;

use crate::cli::DoctorArgs;
use crate::error::ExitCode;
use crate::ops::doctor;
use crate::shell::Shell;

/// `cargo kprof doctor`.
pub(crate) fn doctor(a: &DoctorArgs, shell: &Shell) -> Result<ExitCode> {
    Ok(doctor::doctor(a.manifest_path.as_deref(), a.sudo, a.archive.as_deref(), shell))
}
