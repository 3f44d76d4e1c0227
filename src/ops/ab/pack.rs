//! `cargo kprof archive --base REV -o FILE`: both sides of an A/B check, each built and
//! packed as a one-sided archive, then the two put in one file (`archive::pair`), for
//! `check --archive` on a GPU machine without cargo. The base is made as `check --base`
//! makes it ([`super::base`]), and packed instead of run.

use anyhow::Result;

use super::side::SideSource;
use crate::archive::{self, contents};
use crate::config::IncludeGlob;
use crate::error::{ExitCode, Failure};
use crate::events::Event;
use crate::model::ab::BaseRev;
use crate::ops::archive::{build, graph, open_to_pack, PackOptions};
use crate::ops::opening::RequestFn;
use crate::plan::{Plan, Request};
use crate::shell::Shell;

/// `cargo kprof archive --base [REV] -o FILE`.
pub fn pack(asked: RequestFn<'_>, o: &PackOptions<'_>, base: &BaseRev, shell: &Shell) -> Result<ExitCode> {
    let (plan, request, ws) = open_to_pack(asked, o, shell)?;
    pack_pair(o, base, &request, plan, &ws.config.include, shell)
}

/// Both sides built and packed, each as a one-sided archive, then the two put in one file.
fn pack_pair(
    o: &PackOptions<'_>,
    asked: &BaseRev,
    request: &Request,
    head: Plan,
    include: &[IncludeGlob],
    shell: &Shell,
) -> Result<ExitCode> {
    if !o.launchers.launchers.is_empty() {
        return Err(Failure::new(ExitCode::Config, "--emit does not go with --base")
            .help(
                "the launchers run one-sided archives; an A/B archive is checked with `check --archive FILE`",
            )
            .into());
    }
    let (head_tmp, base_tmp) = archive::pair::temporaries(o.output)?;
    let checkout = super::base::checkout(request, &head, o.manifest_path, asked)?;
    let revision = checkout.revision.clone();
    let (base, base_config) = SideSource::Revision(checkout).plan(shell)??;
    let base_include = base_config.map(|c| c.include).unwrap_or_default();
    let _deferral = crate::process::defer_signals();
    let mut written = Vec::new();
    let mut tracer = crate::ops::archive::PackedTracer::default();
    let sides = [(&head, include, &head_tmp, "head"), (&base.plan, &base_include[..], &base_tmp, "base")];
    let packed = (|| -> Result<()> {
        for (plan, include, tmp, side) in sides {
            let globs = contents::applicable(&plan.kernels, include);
            let mut packed = contents::from_workspace(&plan.workspace_root, &globs)?;
            let built = build(plan, Some(side), shell)?;
            crate::process::check_signal("after the build")?;
            contents::add_build_outputs(&mut packed, plan, built.as_ref());
            written.push(tmp.clone());
            let graph = graph(o.manifest_path, shell);
            let tracer = tracer.for_plan(plan, shell);
            archive::write(plan, built.as_ref(), &packed, &graph, tracer.as_deref(), tmp)?;
        }
        let repo = crate::vcs::worktree::repository_root(&head.workspace_root)?;
        let pair = archive::pair::PairManifest {
            schema_version: 1,
            kprof_version: env!("CARGO_PKG_VERSION").into(),
            base_asked: revision.asked.clone(),
            base_commit: revision.commit.clone(),
            head_commit: crate::vcs::worktree::resolve(&repo, &BaseRev::Named("HEAD".into()), None)
                .ok()
                .map(|r| r.commit),
        };
        archive::pair::write(&pair, &head_tmp, &base_tmp, o.output)
    })();
    if let Err(e) = packed {
        for tmp in written {
            std::fs::remove_file(tmp).ok();
        }
        return Err(e);
    }
    shell.emit(&Event::AbArchiveWritten {
        archive: o.output.to_path_buf(),
        base: revision,
        kernels: head.kernels.iter().map(|k| k.name.clone()).collect(),
    });
    Ok(ExitCode::Success)
}
