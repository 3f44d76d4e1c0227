//! `cargo kprof` without a subcommand: profile the selected kernels (`ops::profile`).

use anyhow::Result;

use crate::cli::ProfileArgs;
use crate::error::ExitCode;
use crate::ops::opening::{self, Shard};
use crate::ops::profile;
use crate::shell::Shell;

/// The default action: profile the selected kernels.
pub(crate) fn profile(args: &ProfileArgs, shell: &Shell) -> Result<ExitCode> {
    let manifest = args.packages.manifest_path.as_deref();
    let (plan, _, _) = opening::open(manifest, Box::new(|| args.request()), Shard::FromEngine, shell)?;
    if !plan.kernels.is_empty() {
        // A machine that cannot profile is told so before anything is written or built.
        profile::preflight(&plan, profile::Extras::default())?;
    }
    opening::create_profiles_root(&plan.profile_root, shell)?;
    if plan.kernels.is_empty() {
        return opening::empty_shard(&plan, shell);
    }
    profile::profile(&plan, None, shell)
}
