//! `cargo kprof archive` (build here, pack the plan) and `cargo-kprof kprof run --archive`
//! (unpack and profile on a machine without cargo), through `ops::archive` (`--base`:
//! `ops::ab::pack`, `--bisect`: `ops::bisect::pack`).

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
        launchers: a.launchers.request(),
    };
    let request = Box::new(|| a.profile.request());
    match (&a.bisect, &a.base) {
        (Some(range), _) => crate::ops::bisect::pack::pack(request, &opts, range, shell),
        (None, Some(base)) => crate::ops::ab::pack::pack(request, &opts, base, shell),
        (None, None) => archive::pack(request, opts, shell),
    }
}

/// `cargo-kprof kprof run --archive FILE`.
pub(crate) fn run(r: &RunArgs, shell: &Shell) -> Result<ExitCode> {
    let request = r.kernel.archived_request(r.sudo)?;
    let unpack = Unpack {
        archive: &r.archive,
        remap: &r.workspace_remap,
        request,
        timeout: r.timeout.map(Duration::from_secs),
    };
    archive::run(unpack, shell)
}
