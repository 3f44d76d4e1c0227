//! `cargo-kprof kprof bisect --archive FILE`: the search on a GPU machine without cargo,
//! over the builds `cargo kprof archive --bisect` packed (`archive::bisect`).
//!
//! The bundle's builds are put under `--workspace-remap`; each is unpacked into
//! `build-<n>/` when a step first needs it, and checked entry by entry as any archive is.
//! `--good`'s build is unpacked first, with the machine check. Profiles and `bisect.json`
//! go under `<remap>/profile/`, as they go under a checkout's `profile/`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result};

use super::{CheckOptions, Context, Revisions};
use crate::archive::bisect::{self as bundle, BisectManifest};
use crate::archive::Opened;
use crate::compare::bisect::check_bound;
use crate::error::{ExitCode, Failure};
use crate::events::{BisectStarted, Event};
use crate::ops::ab::side::{Archived, Side, SideSource};
use crate::ops::ab::sides;
use crate::ops::archive::{Machine, Unpack};
use crate::ops::profile::Extras;
use crate::plan::Request;
use crate::shell::Shell;
use crate::vcs::history::Commit;
use crate::vcs::worktree::BaseRevision;

/// A bisect from an archive, resolved from the command line.
pub struct FromArchive<'a> {
    /// `--archive`.
    pub archive: &'a Path,
    /// `--workspace-remap`.
    pub remap: &'a Path,
    /// `-k` and the command line's other changes to the archived plans.
    pub request: Request,
    /// `--timeout`.
    pub timeout: Option<Duration>,
    /// How each check runs.
    pub check: CheckOptions,
}

/// The bundle's builds, unpacked as steps need them.
struct Builds<'a> {
    from: &'a FromArchive<'a>,
    /// Build `n`'s archive, extracted from the bundle.
    tars: Vec<PathBuf>,
    /// Which build each revision of the history has, or why it has none.
    history: Vec<bundle::Revision>,
    /// The builds unpacked so far.
    unpacked: HashMap<usize, Side>,
}

impl Builds<'_> {
    /// Build `n`, unpacked into `<remap>/build-<n>/` the first time; `machine` is checked
    /// before anything of it is unpacked.
    fn unpack(&mut self, n: usize, machine: Option<Machine>, shell: &Shell) -> Result<Side> {
        if let Some(s) = self.unpacked.get(&n) {
            return Ok(s.clone());
        }
        let remap = self.from.remap.join(format!("build-{n}"));
        let source = SideSource::Archive(Box::new(Archived {
            unpack: Unpack {
                archive: &self.tars[n],
                remap: &remap,
                request: self.from.request.clone(),
                timeout: self.from.timeout,
            },
            machine,
            revision: None,
            called: format!("{}: its build {n}", self.from.archive.display()),
        }));
        let (side, _) = source.plan(shell)??;
        self.unpacked.insert(n, side.clone());
        Ok(side)
    }
}

impl Revisions for Builds<'_> {
    fn side(
        &mut self,
        index: usize,
        _commit: &Commit,
        root: PathBuf,
        shell: &Shell,
    ) -> Result<Result<Side, String>> {
        let revision = &self.history[index];
        let Some(n) = revision.build else {
            return Ok(Err(revision.not_built.clone().unwrap_or_else(|| "was not built".into())));
        };
        match self.unpack(n, None, shell) {
            Ok(mut side) => {
                side.plan.profile_root = root;
                Ok(Ok(side))
            }
            Err(e) => super::skip_reason(e).map(Err),
        }
    }

    fn build_of(&self, index: usize) -> Option<usize> {
        self.history[index].build
    }
}

/// Runs the bisect an archive holds; exit codes as [`super::bisect`]'s.
pub fn bisect_archive(from: &FromArchive<'_>, shell: &Shell) -> Result<ExitCode> {
    let m = match crate::archive::open(from.archive)? {
        Opened::Bisect(m) => m?,
        Opened::Pair(m) => return Err(not_a_bundle(from.archive, m.is_ok()).into()),
        Opened::Build => return Err(not_a_bundle(from.archive, false).into()),
    };
    // Absolute: each program runs in its package's folder, and its files are named from
    // this folder.
    let remap = crate::plan::absolute(from.remap)?;
    let from = &FromArchive { remap: &remap, request: from.request.clone(), ..*from };
    crate::archive::require_new_or_empty(from.remap)?;
    std::fs::create_dir_all(from.remap)
        .with_context(|| format!("could not create --workspace-remap {}", from.remap.display()))?;
    let tars = bundle::extract_builds(from.archive, from.remap, m.builds).and_then(|tars| {
        // Every build checked (its entries and plan; nothing written) before the first step:
        // a damaged build is the bundle's fault, not a revision to skip.
        for (n, tar) in tars.iter().enumerate() {
            crate::archive::check::check(tar).map_err(|f| {
                Failure::new(
                    ExitCode::Config,
                    format!("{}: its build {n} is refused: {}", from.archive.display(), f.message),
                )
                .help("pass the file that `archive --bisect GOOD..BAD` wrote, unchanged")
            })?;
        }
        Ok(tars)
    });
    let result = tars.and_then(|tars| search(from, &m, tars, shell));
    bundle::remove_builds(from.remap, m.builds);
    result
}

/// The bisect over the extracted builds.
fn search(from: &FromArchive<'_>, m: &BisectManifest, tars: Vec<PathBuf>, shell: &Shell) -> Result<ExitCode> {
    let history: Vec<Commit> = m
        .history
        .iter()
        .map(|r| Commit { commit: r.commit.clone(), subject: r.subject.clone(), date: r.date.clone() })
        .collect();
    let last = m.history.last().expect("a validated bundle has a history");
    let good_rev = BaseRevision { asked: m.good.asked.clone(), commit: m.good.commit.clone() };
    let bad = BaseRevision { asked: m.bad_asked.clone(), commit: last.commit.clone() };
    shell.emit(&Event::BisectStarted(BisectStarted {
        good: good_rev.clone(),
        bad: bad.clone(),
        revisions: history.len(),
        builds: Some(m.builds),
        check_bound: check_bound(history.len()),
    }));
    let mut builds = Builds { from, tars, history: m.history.clone(), unpacked: HashMap::new() };
    let extras = Extras { timing: false, timing_only: false, dirs_only: from.check.timing_only };
    let machine = Machine { extras, sudo: from.request.sudo };
    let mut good = builds.unpack(m.good.build, Some(machine), shell).map_err(|e| {
        e.context(format!(
            "--good {} ({}) cannot be checked: nothing to compare with",
            good_rev.asked,
            good_rev.short()
        ))
    })?;
    sides::refuse_timing_only(from.check.timing_only, &good.plan)?;
    let root = crate::profile::root::profiles_root(from.remap);
    crate::ops::opening::create_profiles_root(&root, shell)?;
    good.plan.profile_root = crate::profile::ab::base_profiles_root(&root, good_rev.short());
    sides::share_ncu_path(&root, &good.plan.profile_root)?;
    let ctx = Context {
        o: &from.check,
        kernels: good.plan.kernels.iter().map(|k| k.name.clone()).collect(),
        root,
        good,
        good_rev,
        good_build: Some(m.good.build),
        bad,
        history,
    };
    super::run(&ctx, &mut builds, shell)
}

/// The refusal of an archive that is not a bisect archive, naming what it is for: an A/B
/// archive (`pair`, one whose manifest reads), or any other.
fn not_a_bundle(archive: &Path, pair: bool) -> Failure {
    let (what, help) = if pair {
        (
            "an A/B archive (packed with `archive --base REV`)",
            format!("check it with `cargo-kprof kprof check --archive {}`", archive.display()),
        )
    } else {
        (
            "not a bisect archive",
            format!(
                "profile a one-sided archive with `cargo-kprof kprof run --archive {}`",
                archive.display()
            ),
        )
    };
    Failure::new(
        ExitCode::Config,
        format!(
            "{} is {what}: bisect --archive needs one from `archive --bisect GOOD..BAD`",
            archive.display()
        ),
    )
    .help(format!(
        "{help}, or pack the range with `cargo kprof archive --bisect v1.2.0..HEAD -k hgemm_tiled -o bisect.tar` (your range and kernel)"
    ))
}
