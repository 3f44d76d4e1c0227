//! `cargo kprof archive` (build here, pack the plan) and `cargo-kprof kprof run --archive`
//! (unpack and profile on a machine without cargo).

use std::time::Duration;

use anyhow::Result;

use super::load_workspace;
use super::profile::execute;
use crate::archive;
use crate::build;
use crate::cli::{ArchiveArgs, RunArgs};
use crate::error::ExitCode;
use crate::model::kinds::Privilege;
use crate::plan;
use crate::shell::Shell;

/// `cargo kprof archive -o FILE`.
pub(crate) fn archive(a: &ArchiveArgs, shell: &Shell) -> Result<ExitCode> {
    let (metadata, config) = load_workspace(a.profile.packages.manifest_path.as_deref(), shell)?;
    let plan = plan::resolve(&a.profile.request()?, &metadata, &config, build::cargo_binary())?;
    for note in &plan.notes {
        shell.note(note);
    }
    // A signal stops the build and is answered when it returns, before anything is packed.
    let _deferral = crate::process::defer_signals();
    let built = match &plan.build {
        Some(req) => {
            shell.status(format!("Building with line info: {}", req.command()));
            Some(req.run(shell)?)
        }
        None => None,
    };
    crate::process::check_signal("after the build")?;
    archive::write(&plan, built.as_ref(), &a.output)?;
    if shell.is_json() {
        shell.json(&serde_json::json!({ "reason": "archive-written", "archive": a.output }));
    } else {
        shell.out(format!("Archive: {}", a.output.display()));
    }
    Ok(ExitCode::Success)
}

/// `cargo-kprof kprof run --archive FILE`.
pub(crate) fn run(r: &RunArgs, shell: &Shell) -> Result<ExitCode> {
    let (mut plan, built) =
        archive::unpack(&r.archive, &r.workspace_remap, r.timeout.map(Duration::from_secs))?;
    if r.sudo {
        plan.kernels.iter_mut().for_each(|k| k.privilege = Privilege::Sudo);
    }
    execute(&plan, Some(built), shell)
}
