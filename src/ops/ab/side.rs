//! One side of an A/B check or of a bisect step, wherever it comes from ([`SideSource`]):
//! a revision of the repository, checked out into one of kprof's worktrees beside the
//! head's line-info builds and planned there, then built here ([`Side::build`]); or one
//! build of an archive, unpacked under `--workspace-remap`. `check --base`, `check
//! --archive`, `archive --base`, `bisect` and `archive --bisect` all make their sides
//! through [`SideSource::plan`].

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result};

use crate::build::{self, BuildOutput};
use crate::config::Config;
use crate::error::{ExitCode, Failure};
use crate::events::{BuildDone, BuildPurpose, BuildStarted, Event};
use crate::ops::archive::{unpack_for_check, Machine, Unpack};
use crate::ops::opening;
use crate::plan::{self, Plan, Request};
use crate::shell::Shell;
use crate::vcs::worktree::{self, BaseRevision};

/// One side: its plan, the revision it is of, its executables.
#[derive(Debug, Clone)]
pub struct Side {
    /// Its plan (`build` is `None` once the side is built).
    pub plan: Plan,
    /// The revision it is of; `None` for the working tree, and for the head an A/B
    /// archive packed from one.
    pub revision: Option<BaseRevision>,
    /// Its executables, once built or unpacked.
    pub built: Option<BuildOutput>,
}

/// Where a side comes from.
pub enum SideSource<'a> {
    /// A revision of the repository, checked out, planned and built here.
    Revision(Checkout<'a>),
    /// One build of an archive, unpacked.
    Archive(Box<Archived<'a>>),
}

/// Which of kprof's worktrees, beside the head's line-info builds, a revision is checked
/// out into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tree {
    /// The base's (`<target-dir>/kprof-base`): `check --base`, `archive --base` and a
    /// bisect's `--good`; what is done to it is said.
    Base,
    /// The bisect's (`<target-dir>/kprof-bisect`): the revisions a bisect checks or packs,
    /// in turn, incrementally.
    Bisect,
}

impl Tree {
    /// The worktree's folder name.
    pub fn folder(self) -> &'static str {
        match self {
            Tree::Base => "kprof-base",
            Tree::Bisect => "kprof-bisect",
        }
    }

    /// What its revision is called in messages: `base`, `revision`.
    fn role(self) -> &'static str {
        match self {
            Tree::Base => "base",
            Tree::Bisect => "revision",
        }
    }

    /// The worktree's folder beside the line-info builds of `head`
    /// (`<target-dir>/kprof-base`).
    pub fn dir(self, head: &Plan) -> PathBuf {
        let kprof_dir = match &head.build {
            Some(b) => b.target_dir.clone(),
            None => head.workspace_root.join("target").join("kprof"),
        };
        kprof_dir.with_file_name(self.folder())
    }
}

/// A revision to check out and plan: the head's request resolved in its workspace.
pub struct Checkout<'a> {
    /// The head's plan: the worktree lies beside its line-info builds.
    pub head: &'a Plan,
    /// The repository.
    pub repo: PathBuf,
    /// The revision.
    pub revision: BaseRevision,
    /// kprof's worktree it is checked out into.
    pub tree: Tree,
    /// The head's request.
    pub request: &'a Request,
    /// `--manifest-path`: the same workspace is planned in the revision.
    pub manifest: Option<&'a Path>,
    /// Where its profiles go.
    pub profile_root: PathBuf,
}

/// One build of an archive to unpack.
pub struct Archived<'a> {
    /// The build's archive, where to unpack it, and the command line's changes to it.
    pub unpack: Unpack<'a>,
    /// The machine check made before anything is unpacked, when it is the first side.
    pub machine: Option<Machine>,
    /// The revision it is of, when the archive says.
    pub revision: Option<BaseRevision>,
    /// What it is called when it cannot be unpacked (`a.tar: its base side (base.tar)`).
    pub called: String,
}

/// What [`SideSource::plan`] gives: the side, and a revision's workspace configuration
/// (`archive` reads its `include` globs before the build); `Err` when this side cannot be
/// had (it does not plan, or does not unpack).
pub type Planned = Result<(Side, Option<Config>)>;

impl SideSource<'_> {
    /// The side this source holds: a revision checked out into its worktree and planned
    /// there, not built yet ([`Side::build`]; `archive` lists what to pack first), or an
    /// archive's build unpacked. The outer `Err` ends the caller's work: kprof's worktree
    /// cannot be used (edited, someone else's), or a signal came; the inner one is this
    /// side's (a bisect skips such a revision).
    pub fn plan(self, shell: &Shell) -> Result<Planned> {
        match self {
            SideSource::Revision(c) => {
                let dir = c.tree.dir(c.head);
                check_out(&c, &dir, shell)?;
                Ok(plan_in(&c, &dir, shell).map(|(plan, config)| {
                    (Side { plan, revision: Some(c.revision), built: None }, Some(config))
                }))
            }
            SideSource::Archive(a) => {
                let Archived { unpack, machine, revision, called } = *a;
                Ok(unpack_for_check(unpack, machine)
                    .with_context(|| format!("{called} cannot be unpacked"))
                    .map(|(plan, built)| (Side { plan, revision, built: Some(built) }, None)))
            }
        }
    }
}

/// Checks `c`'s revision out into kprof's worktree `dir` (made, reused or moved; what is
/// done to the base's is said).
fn check_out(c: &Checkout<'_>, dir: &Path, shell: &Shell) -> Result<()> {
    let revision = &c.revision;
    let announce = |action: worktree::WorktreeAction| {
        if c.tree == Tree::Base {
            shell.emit(&crate::events::Event::BaseWorktree {
                commit: revision.short().to_string(),
                asked: revision.asked.clone(),
                dir: dir.to_path_buf(),
                action,
            })
        }
    };
    worktree::checkout(&c.repo, revision, dir, &announce)?;
    // A signal deferred while a range is packed ends it here, before the next build.
    crate::process::check_signal("after the checkout")?;
    Ok(())
}

/// The revision's plan, once [`worktree::checkout`] has put it into `dir`: its workspace
/// read, the request resolved there, to build into the worktree's own target directory
/// and profile under `c.profile_root`.
fn plan_in(c: &Checkout<'_>, dir: &Path, shell: &Shell) -> Result<(Plan, Config)> {
    let (base, role) = (&c.revision, c.tree.role());
    let manifest = match c.manifest {
        Some(m) => plan::absolute(m)?,
        None => std::env::current_dir()?.join("Cargo.toml"),
    };
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let rel = canon(&manifest)
        .strip_prefix(canon(&c.repo))
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| PathBuf::from("Cargo.toml"));
    let base_manifest = dir.join(&rel);
    if !base_manifest.is_file() {
        return Err(Failure::new(
            ExitCode::Config,
            format!("the {role} {} ({}) has no {}", base.short(), base.asked, rel.display()),
        )
        .help("compare with a revision that has this workspace")
        .into());
    }
    let ws = opening::load_workspace(Some(&base_manifest), shell)?;
    let mut request = c.request.clone();
    // Inside the tree, where its status check knows to leave it out.
    request.target_dir = Some(dir.join(worktree::BUILD_DIR));
    let mut plan = plan::resolve(&request, &ws.metadata, &ws.config, build::cargo_binary())
        .map_err(|e| e.context(format!("planning the {role} {} ({})", base.short(), base.asked)))?;
    plan.profile_root = c.profile_root.clone();
    plan.output_dir = None;
    Ok((plan, ws.config))
}

impl Side {
    /// The working tree's side, as `cargo kprof` plans it (not built yet).
    pub fn working_tree(plan: Plan) -> Side {
        Side { plan, revision: None, built: None }
    }

    /// Builds the side, called `name` in messages (`the base`, `revision 3f2a1c9d0e1b`),
    /// timed: the build is the CPU machine's share, reported apart.
    pub fn build(self, name: &str, shell: &Shell) -> Result<Side> {
        let built = match &self.plan.build {
            Some(req) => {
                let began = Instant::now();
                shell.emit(&Event::BuildStarted(BuildStarted {
                    side: Some(name.to_string()),
                    build: req.describe(),
                    targets: req.targets.len(),
                    purpose: BuildPurpose::LineInfo,
                }));
                let b = req.run(shell)?;
                let wall_ms = began.elapsed().as_millis() as u64;
                shell.emit(&Event::BuildDone(BuildDone { side: name.to_string(), wall_ms }));
                Some(b)
            }
            None => None,
        };
        Ok(Side { plan: Plan { build: None, ..self.plan }, built, ..self })
    }
}
