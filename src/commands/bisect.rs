//! `cargo kprof bisect`: the first revision where a kernel got slower, through
//! `ops::bisect`, from this checkout or from a bisect archive.

use std::time::Duration;

use anyhow::Result;

use crate::cli::BisectArgs;
use crate::error::ExitCode;
use crate::ops::bisect::{self, Bisect, CheckOptions, FromArchive};
use crate::shell::Shell;

/// `cargo kprof bisect --good REV [--bad REV] -k KERNEL`, or `bisect --archive FILE`.
pub(crate) fn bisect(b: &BisectArgs, shell: &Shell) -> Result<ExitCode> {
    let check = CheckOptions {
        timing_only: b.timing_only,
        gate: b.gate(),
        rounds: b.rounds,
        tolerance_pct: b.tolerance_pct,
    };
    if let Some(archive) = &b.archive {
        let from = FromArchive {
            archive,
            remap: b.workspace_remap.as_deref().unwrap_or(std::path::Path::new("kprof-bisect")),
            request: b.profile.archived_request()?,
            timeout: b.profile.timeout.map(Duration::from_secs),
            check,
        };
        return bisect::bisect_archive(&from, shell);
    }
    let opts = Bisect {
        manifest_path: b.profile.packages.manifest_path.as_deref(),
        good: b.good.as_deref().expect("clap requires --good without --archive"),
        bad: b.bad.as_deref().unwrap_or("HEAD"),
        check,
    };
    bisect::bisect(Box::new(|| b.profile.request()), &opts, shell)
}
