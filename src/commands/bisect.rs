//! `cargo kprof bisect`: the first revision where a kernel got slower, through
//! `ops::bisect`.

use anyhow::Result;

use crate::cli::BisectArgs;
use crate::error::ExitCode;
use crate::ops::bisect::{self, Bisect};
use crate::shell::Shell;

/// `cargo kprof bisect --good REV [--bad REV] -k KERNEL`.
pub(crate) fn bisect(b: &BisectArgs, shell: &Shell) -> Result<ExitCode> {
    let opts = Bisect {
        manifest_path: b.profile.packages.manifest_path.as_deref(),
        good: &b.good,
        bad: &b.bad,
        timing_only: b.timing_only,
        gate: b.gate(),
        rounds: b.rounds,
        tolerance_pct: b.tolerance_pct,
    };
    bisect::bisect(Box::new(|| b.profile.request()), &opts, shell)
}
