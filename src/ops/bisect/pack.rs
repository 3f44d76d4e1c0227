//! `cargo kprof archive --bisect GOOD..BAD -k KERNEL -o FILE`: `--good` and every
//! first-parent revision after it up to `--bad`, each checked out into kprof's bisect
//! worktree and built there with line info, packed into one bundle (`archive::bisect`)
//! for `bisect --archive` on a GPU machine without cargo.
//!
//! Revisions whose builds are identical share one packed build: the fingerprint is a
//! SHA-256 over everything a build's archive would run or show (the executables, the
//! files packed from the workspace, the kernels' plans). A commit that does not touch the
//! kernel's crate leaves all of these as they were, so it costs neither space in the
//! bundle nor a check on the GPU machine.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use crate::archive::bisect::{self as bundle, BisectManifest, GoodRevision, Revision};
use crate::archive::contents::{self, Contents};
use crate::build::BuildOutput;
use crate::error::{ExitCode, Failure};
use crate::events::{BisectArchive, BisectArchiveStarted, Event, RevisionNotPacked, RevisionPacked};
use crate::ops::ab::side::{Checkout, SideSource, Tree};
use crate::ops::archive::PackOptions;
use crate::ops::opening::RequestFn;
use crate::plan::{Plan, Request};
use crate::shell::Shell;
use crate::vcs::history::{self, Commit};
use crate::vcs::worktree::{self, BaseRevision};

/// `GOOD..BAD` (`GOOD` alone: up to `HEAD`) as (good, bad).
pub fn parse_range(range: &str) -> Result<(&str, &str), Failure> {
    let refuse = |why: &str| {
        Failure::new(ExitCode::Usage, format!("--bisect {range:?}: {why}"))
            .help("give the range as GOOD..BAD, e.g. --bisect v1.2.0..HEAD (GOOD alone means GOOD..HEAD)")
    };
    if range.contains("...") {
        return Err(refuse("a bisect follows one first-parent path: `..`, not `...`"));
    }
    let (good, bad) = range.split_once("..").unwrap_or((range, "HEAD"));
    if good.is_empty() || bad.is_empty() {
        return Err(refuse("both ends are needed"));
    }
    Ok((good, bad))
}

/// What is packed so far: the builds' temporary archives and fingerprints.
struct Builds<'a> {
    out: &'a Path,
    tmps: Vec<PathBuf>,
    fingerprints: Vec<String>,
    tracer: crate::ops::archive::PackedTracer,
}

/// `cargo kprof archive --bisect GOOD..BAD -k KERNEL -o FILE`.
pub fn pack(asked: RequestFn<'_>, o: &PackOptions<'_>, range: &str, shell: &Shell) -> Result<ExitCode> {
    let (good, bad) = parse_range(range)?;
    let (head, request, _) = crate::ops::archive::open_to_pack(asked, o, shell)?;
    pack_range(o, (good, bad), &request, &head, shell)?;
    Ok(ExitCode::Success)
}

/// Packs `GOOD..BAD` for `request` (whose kernels are named), `head` being this
/// workspace's plan.
fn pack_range(
    o: &PackOptions<'_>,
    (good, bad): (&str, &str),
    request: &Request,
    head: &Plan,
    shell: &Shell,
) -> Result<()> {
    if !o.launchers.launchers.is_empty() {
        return Err(Failure::new(ExitCode::Config, "--emit does not go with --bisect")
            .help("the launchers run one-sided archives; a bisect archive is searched with `bisect --archive FILE`")
            .into());
    }
    super::tree::refuse_request(request)?;
    // Refused before minutes of builds: an archive is never overwritten.
    bundle::temporary(o.output, 0)?;
    let range = format!("{good}..{bad}");
    let repo = worktree::repository_root(&head.workspace_root)?;
    let good_rev = worktree::resolve_as(&repo, "--bisect GOOD", good)?;
    let bad_rev = worktree::resolve_as(&repo, "--bisect BAD", bad)?;
    let commits = history::first_parent(&repo, &good_rev, &bad_rev)?;
    if commits.len() >= bundle::MAX_REVISIONS {
        return Err(Failure::new(
            ExitCode::Config,
            format!("--bisect {range}: {} revisions, more than one archive holds ({})", commits.len(), bundle::MAX_REVISIONS - 1),
        )
        .help("narrow the range: bisect a part of it first, e.g. with cargo kprof bisect on a GPU machine with cargo")
        .into());
    }
    shell.emit(&Event::BisectArchiveStarted(BisectArchiveStarted {
        good: good_rev.clone(),
        bad: bad_rev.clone(),
        revisions: commits.len(),
    }));
    let _deferral = crate::process::defer_signals();
    let mut builds =
        Builds { out: o.output, tmps: Vec::new(), fingerprints: Vec::new(), tracer: Default::default() };
    let packer = Packer { o, repo: &repo, request, head, shell };
    let packed = packer.all(&good_rev, &commits, &mut builds);
    let written = packed.and_then(|(good_build, history)| {
        let manifest = BisectManifest {
            schema_version: 1,
            kprof_version: env!("CARGO_PKG_VERSION").into(),
            kernels: head.kernels.iter().map(|k| k.name.clone()).collect(),
            good: GoodRevision {
                asked: bundle::printable(&good_rev.asked),
                commit: good_rev.commit.clone(),
                build: good_build,
            },
            bad_asked: bundle::printable(&bad_rev.asked),
            history,
            builds: builds.tmps.len(),
        };
        bundle::write(&manifest, &builds.tmps, o.output)?;
        Ok(manifest)
    });
    let manifest = written.inspect_err(|_| {
        for t in &builds.tmps {
            std::fs::remove_file(t).ok();
        }
    })?;
    shell.emit(&Event::BisectArchiveWritten(listing(o.output, &manifest, good_rev, bad_rev)));
    Ok(())
}

/// The message of a bundle written.
fn listing(out: &Path, m: &BisectManifest, good: BaseRevision, bad: BaseRevision) -> BisectArchive {
    BisectArchive {
        archive: out.to_path_buf(),
        good,
        bad,
        kernels: m.kernels.clone(),
        revisions: m.history.len(),
        builds: m.builds,
        not_built: m
            .history
            .iter()
            .filter_map(|r| Some((r.commit.get(..12).unwrap_or(&r.commit).to_string(), r.not_built.clone()?)))
            .collect(),
    }
}

/// What every revision's packing shares.
struct Packer<'a> {
    o: &'a PackOptions<'a>,
    repo: &'a Path,
    request: &'a Request,
    head: &'a Plan,
    shell: &'a Shell,
}

impl Packer<'_> {
    /// Builds and packs `--good` and each revision: `--good`'s build and the history.
    fn all(
        &self,
        good: &BaseRevision,
        commits: &[Commit],
        builds: &mut Builds<'_>,
    ) -> Result<(usize, Vec<Revision>)> {
        let good_build = self.one(good, builds)?.map_err(|why| {
            Failure::new(ExitCode::Build, format!("--bisect GOOD {} ({}) {why}", good.asked, good.short()))
                .help("start the range at a revision that builds and has the kernel")
        })?;
        let mut history = Vec::new();
        for c in commits {
            let build = self.one(&c.revision(), builds)?;
            let (commit, subject) = (c.short().to_string(), c.subject.clone());
            self.shell.emit(&match &build {
                Ok(n) => Event::RevisionPacked(RevisionPacked { commit, subject, build: *n }),
                Err(why) => Event::RevisionNotPacked(RevisionNotPacked { commit, subject, why: why.clone() }),
            });
            history.push(Revision {
                commit: c.commit.clone(),
                subject: bundle::printable(&c.subject),
                date: bundle::printable(&c.date),
                not_built: build.as_ref().err().map(|w| bundle::printable(w)),
                build: build.ok(),
            });
        }
        Ok((good_build, history))
    }

    /// One revision checked out into kprof's bisect worktree, planned, built and packed:
    /// its build, or why it has none (it does not build, it lacks the kernel).
    fn one(&self, rev: &BaseRevision, builds: &mut Builds<'_>) -> Result<Result<usize, String>> {
        let shell = self.shell;
        let at = Checkout {
            head: self.head,
            repo: self.repo.to_path_buf(),
            revision: rev.clone(),
            tree: Tree::Bisect,
            request: self.request,
            manifest: self.o.manifest_path,
            profile_root: self.head.profile_root.clone(),
        };
        let side = SideSource::Revision(at).plan(shell)?.and_then(|(side, config)| {
            let include = config.map(|c| c.include).unwrap_or_default();
            let plan = side.plan;
            let globs = contents::applicable(&plan.kernels, &include);
            let mut packed = contents::from_workspace(&plan.workspace_root, &globs)?;
            let name = format!("revision {}", rev.short());
            let built = crate::ops::archive::build(&plan, Some(&name), shell)?;
            crate::process::check_signal("after the build")?;
            contents::add_build_outputs(&mut packed, &plan, built.as_ref());
            Ok((plan, packed, built))
        });
        match side {
            Ok((plan, packed, built)) => Ok(Ok(builds.add(&plan, &packed, built.as_ref(), shell)?)),
            Err(e) => Ok(Err(super::skip_reason(e)?)),
        }
    }
}

impl Builds<'_> {
    /// The build of `plan` as built: an earlier one with the same fingerprint, or a new
    /// one packed into the next temporary archive.
    fn add(
        &mut self,
        plan: &Plan,
        packed: &Contents,
        built: Option<&BuildOutput>,
        shell: &Shell,
    ) -> Result<usize> {
        let print = fingerprint(plan, packed, built)?;
        if let Some(n) = self.fingerprints.iter().position(|f| *f == print) {
            return Ok(n);
        }
        let n = self.tmps.len();
        let tmp = bundle::temporary(self.out, n)?;
        self.tmps.push(tmp.clone());
        self.fingerprints.push(print);
        let graph = crate::ops::archive::graph(Some(&plan.workspace_root.join("Cargo.toml")), shell);
        let tracer = self.tracer.for_plan(plan, shell);
        crate::archive::write(plan, built, packed, &graph, tracer.as_deref(), &tmp)?;
        Ok(n)
    }
}

/// SHA-256 over the kernels' plans, the executables and the packed files, each with its
/// name.
fn fingerprint(plan: &Plan, packed: &Contents, built: Option<&BuildOutput>) -> Result<String> {
    let mut h = Sha256::new();
    h.update(serde_json::to_vec(&plan.kernels)?);
    let mut file = |name: &str, path: &Path| -> Result<()> {
        h.update(name.len().to_le_bytes());
        h.update(name.as_bytes());
        let mut f =
            std::fs::File::open(path).with_context(|| format!("could not read {}", path.display()))?;
        let mut buf = vec![0u8; 1 << 16];
        let mut len = 0u64;
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            len += n as u64;
            h.update(&buf[..n]);
        }
        h.update(len.to_le_bytes());
        Ok(())
    };
    for e in built.map(|b| b.executables.as_slice()).unwrap_or_default() {
        file(&format!("{:?}", e.target), &e.executable)?;
    }
    for rel in packed.files() {
        file(&rel.to_string_lossy(), &plan.workspace_root.join(rel))?;
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_is_good_dot_dot_bad_or_good_alone() {
        assert_eq!(parse_range("v1.2.0..main").unwrap(), ("v1.2.0", "main"));
        assert_eq!(parse_range("HEAD~8").unwrap(), ("HEAD~8", "HEAD"));
        for bad in ["a...b", "..b", "a..", ".."] {
            let e = parse_range(bad).unwrap_err();
            assert_eq!(e.code, ExitCode::Usage, "{bad}");
            assert!(e.help.iter().any(|h| h.contains("GOOD..BAD")), "{bad}");
        }
    }
}
