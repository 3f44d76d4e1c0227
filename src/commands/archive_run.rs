//! `cargo kprof archive` (build here, pack the plan) and `cargo-kprof kprof run --archive`
//! (unpack and profile on a machine without cargo).

use std::time::Duration;

use anyhow::Result;
use serde_json::json;

use super::load_workspace;
use super::profile::execute;
use crate::archive::emit::{self, Launchers};
use crate::archive::{self, contents, ArchiveManifest, Contents};
use crate::build;
use crate::cli::{ArchiveArgs, RunArgs};
use crate::error::{ExitCode, Failure};
use crate::model::kinds::Privilege;
use crate::plan;
use crate::shell::Shell;

/// How many included files the listing names before it counts the rest.
const LISTED_FILES: usize = 8;

/// `cargo kprof archive -o FILE`.
pub(crate) fn archive(a: &ArchiveArgs, shell: &Shell) -> Result<ExitCode> {
    let (metadata, config) = load_workspace(a.profile.packages.manifest_path.as_deref(), shell)?;
    let request = a.profile.request()?;
    if let Some(shard) = &request.partition {
        return Err(Failure::new(
            ExitCode::Config,
            format!("--partition {}: an archive holds the whole selection", shard.partition),
        )
        .help(format!(
            "pack it without --partition, and take the shard where it runs: \
             cargo-kprof kprof run --archive FILE --partition {}",
            shard.partition
        ))
        .into());
    }
    let plan = plan::resolve(&request, &metadata, &config, build::cargo_binary())?;
    for note in &plan.notes {
        shell.note(note);
    }
    // The launchers' paths and --shards are checked before minutes of compilation, too.
    let launchers = emit::prepare(&a.output, plan.kernels.len(), &a.launchers.request())?;
    // The globs are checked before minutes of compilation.
    let globs = contents::applicable(&plan, &config.include);
    let mut packed = contents::from_workspace(&plan.workspace_root, &globs)?;
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
    contents::add_build_outputs(&mut packed, &plan, built.as_ref());
    let manifest = archive::write(&plan, built.as_ref(), &packed, &a.output)?;
    if let Some(l) = &launchers {
        l.write()?;
    }
    print_listing(&a.output, &manifest, &packed, launchers.as_ref(), shell);
    Ok(ExitCode::Success)
}

/// What the archive holds: on stdout for people, or one `archive-written` JSON line.
fn print_listing(
    out: &std::path::Path,
    m: &ArchiveManifest,
    packed: &Contents,
    launchers: Option<&Launchers>,
    shell: &Shell,
) {
    let skipped: Vec<_> =
        packed.skipped_out_dirs.iter().map(|(p, d)| json!({ "package": p, "out_dir": d })).collect();
    if shell.is_json() {
        let executables: Vec<_> = m
            .executables
            .iter()
            .map(|(t, file)| json!({ "package": t.package, "kind": t.kind.name(), "name": t.name, "file": file }))
            .collect();
        shell.json(&json!({
            "reason": "archive-written",
            "archive": out,
            "executables": executables,
            "sources": m.sources.len(),
            "included": m.included,
            "build_outputs": m.build_outputs,
            "skipped_out_dirs": skipped,
            "launchers": launchers.map(|l| json!({
                "shards": l.shards(),
                "files": l.files().iter().map(|(k, p)| json!({ "kind": k.name(), "file": p })).collect::<Vec<_>>(),
            })),
        }));
        return;
    }
    shell.out(format!("Archive: {}", out.display()));
    for (t, file) in &m.executables {
        shell.out(format!("  executable     {file} ({} {} of {})", t.kind.name(), t.name, t.package));
    }
    shell.out(format!("  sources        {} CUDA source file(s)", m.sources.len()));
    for p in m.included.iter().take(LISTED_FILES) {
        shell.out(format!("  included       {}", p.display()));
    }
    if m.included.len() > LISTED_FILES {
        shell.out(format!(
            "  included       ... and {} more ({} in all; the list is in kprof-archive.json)",
            m.included.len() - LISTED_FILES,
            m.included.len()
        ));
    }
    for p in &m.build_outputs {
        shell.out(format!("  build output   {}", p.display()));
    }
    for (package, dir) in &packed.skipped_out_dirs {
        shell.out(format!(
            "  not packed     OUT_DIR of {package}: {} lies outside the workspace",
            dir.display()
        ));
    }
    if let Some(l) = launchers {
        for (kind, path) in l.files() {
            shell.out(format!(
                "  launcher       {} ({}, {} shard(s))",
                path.display(),
                kind.name(),
                l.shards()
            ));
        }
    }
}

/// `cargo-kprof kprof run --archive FILE`.
pub(crate) fn run(r: &RunArgs, shell: &Shell) -> Result<ExitCode> {
    let request = super::with_engine_shard(r.kernel.request()?)?;
    // Made absolute here, as for `cargo kprof`: the program runs in its package directory.
    let output_dir = request.output_dir.as_deref().map(plan::absolute).transpose()?;
    let mut notes = Vec::new();
    let adjust = |kernels| -> Result<_> {
        let kernels = archive::adjust::adjust(kernels, &request, &mut notes)?;
        // Checked before anything is unpacked.
        if let Some(d) = &output_dir {
            crate::profile::output::check_output_dir(d, kernels.len() > 1)?;
        }
        Ok(kernels)
    };
    let (mut plan, built) =
        archive::unpack_adjusted(&r.archive, &r.workspace_remap, r.timeout.map(Duration::from_secs), adjust)?;
    if r.sudo {
        plan.kernels.iter_mut().for_each(|k| k.privilege = Privilege::Sudo);
    }
    plan.output_dir = output_dir;
    plan.dry_run = request.dry_run;
    plan.batch = !request.no_batch;
    plan.partition = request.partition.as_ref().map(|s| s.partition);
    plan.assign_gpus(&request.gpus);
    notes.append(&mut plan.notes);
    for note in &notes {
        shell.note(note);
    }
    if plan.kernels.is_empty() {
        return super::empty_shard(&plan, shell);
    }
    execute(&plan, Some(built), shell)
}
