//! `cargo kprof archive` (build here, pack the plan) and `cargo-kprof kprof run --archive`
//! (unpack and profile on a machine without cargo), through `ops::archive`.

use std::time::Duration;

use anyhow::Result;

use crate::cli::{ArchiveArgs, RunArgs};
use crate::error::ExitCode;
use crate::ops::archive::{self, PackOptions, Unpack};
use crate::shell::Shell;

/// `cargo kprof archive -o FILE`.
pub(crate) fn archive(a: &ArchiveArgs, shell: &Shell) -> Result<ExitCode> {
    let opts = PackOptions {
        manifest_path: a.profile.packages.manifest_path.as_deref(),
        output: &a.output,
        base: a.base.as_deref(),
        launchers: a.launchers.request(),
    };
    match &a.bisect {
        Some(range) => crate::ops::bisect::pack::pack(Box::new(|| a.profile.request()), &opts, range, shell),
        None => archive::pack(Box::new(|| a.profile.request()), opts, shell),
    }
}

/// `cargo-kprof kprof run --archive FILE`.
pub(crate) fn run(r: &RunArgs, shell: &Shell) -> Result<ExitCode> {
    let request = crate::plan::Request { sudo: r.sudo, ..r.kernel.request()? };
    let unpack = Unpack {
        archive: &r.archive,
        remap: &r.workspace_remap,
        request,
        timeout: r.timeout.map(Duration::from_secs),
    };
    archive::run(unpack, shell)
}
