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
    if let Some(asked) = &a.base {
        return archive_pair(a, asked, &request, plan, &config, shell);
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

/// `cargo kprof archive --base REV -o FILE`: both sides of an A/B check, each built and
/// packed as a one-sided archive, then the two put in one file (see `archive::pair`).
fn archive_pair(
    a: &ArchiveArgs,
    asked: &str,
    request: &plan::Request,
    head: plan::Plan,
    config: &crate::config::Config,
    shell: &Shell,
) -> Result<ExitCode> {
    if !a.launchers.request().launchers.is_empty() {
        return Err(Failure::new(ExitCode::Config, "--emit does not go with --base")
            .help(
                "the launchers run one-sided archives; an A/B archive is checked with `check --archive FILE`",
            )
            .into());
    }
    let (head_tmp, base_tmp) = archive::pair::temporaries(&a.output)?;
    let manifest_path = a.profile.packages.manifest_path.as_deref();
    let (base, base_plan, base_config) =
        super::check_base::base_side(request, &head, manifest_path, asked, shell)?;
    let _deferral = crate::process::defer_signals();
    let mut written = Vec::new();
    let packed = (|| -> Result<()> {
        for (plan, config, tmp, side) in
            [(&head, config, &head_tmp, "head"), (&base_plan, &base_config, &base_tmp, "base")]
        {
            let globs = contents::applicable(plan, &config.include);
            let mut packed = contents::from_workspace(&plan.workspace_root, &globs)?;
            let built = match &plan.build {
                Some(req) => {
                    shell.status(format!("Building the {side} with line info: {}", req.command()));
                    Some(req.run(shell)?)
                }
                None => None,
            };
            crate::process::check_signal("after the build")?;
            contents::add_build_outputs(&mut packed, plan, built.as_ref());
            written.push(tmp.clone());
            archive::write(plan, built.as_ref(), &packed, tmp)?;
        }
        let repo = crate::build::worktree::repository_root(&head.workspace_root)?;
        let pair = archive::pair::PairManifest {
            schema_version: 1,
            kprof_version: env!("CARGO_PKG_VERSION").into(),
            base_asked: base.asked.clone(),
            base_commit: base.commit.clone(),
            head_commit: crate::build::worktree::resolve(&repo, "HEAD", None).ok().map(|r| r.commit),
        };
        archive::pair::write(&pair, &head_tmp, &base_tmp, &a.output)
    })();
    if let Err(e) = packed {
        for tmp in written {
            std::fs::remove_file(tmp).ok();
        }
        return Err(e);
    }
    if shell.is_json() {
        shell.json(&json!({
            "reason": "archive-written",
            "archive": a.output,
            "base": { "asked": base.asked, "commit": base.commit },
            "kernels": head.kernels.iter().map(|k| &k.name).collect::<Vec<_>>(),
        }));
    } else {
        shell.out(format!(
            "Archive: {} (A/B: this tree and base {} ({}))",
            a.output.display(),
            base.short(),
            base.asked
        ));
        shell.out(format!(
            "  check it on the GPU machine: cargo-kprof kprof check --archive {} --workspace-remap DIR",
            a.output.display()
        ));
    }
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
