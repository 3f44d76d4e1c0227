//! `cargo kprof compare` (a profile against a baseline) and `cargo kprof check` (the CI
//! gate: against saved baselines, or A/B against a git revision), through `ops::check`
//! and `ops::ab`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use crate::archive::{pair::PairManifest, Opened};
use crate::cli::{CheckArgs, CompareArgs};
use crate::compare::gate::{BaselineSpec, GateOptions};
use crate::error::{ExitCode, Failure};
use crate::model::ab::BaseRev;
use crate::ops::ab::{self, sides::SidesFrom, AbCheck};
use crate::ops::archive::Unpack;
use crate::ops::check::{self, BaselineCheck, CheckFrom, CompareOptions, ResultFiles};
use crate::plan;
use crate::shell::Shell;

/// `cargo kprof compare`.
pub(crate) fn compare(c: &CompareArgs, shell: &Shell) -> Result<ExitCode> {
    let opts = CompareOptions {
        current: c.current.as_deref(),
        manifest_path: c.manifest_path.as_deref(),
        gate: GateOptions {
            baseline: BaselineSpec::parse(&c.baseline),
            tolerance_pct: c.tolerance_pct.unwrap_or(plan::defaults::TOLERANCE_PCT),
            force: c.force,
            visual: c.visual,
        },
        save_baseline: c.save_baseline.as_deref(),
        fail_on_regression: c.fail_on_regression,
    };
    check::compare(opts, shell)
}

/// `cargo kprof check`: against saved baselines, or A/B against a git revision (`--base`,
/// or an A/B archive).
pub(crate) fn check(c: &CheckArgs, shell: &Shell) -> Result<ExitCode> {
    if c.baseline.is_none() && c.save_baseline.is_none() && c.archive.is_none() && c.ab.base.is_none() {
        return Err(nothing_to_compare().into());
    }
    let results =
        ResultFiles { bmf: c.exports.bmf.clone(), github_benchmark: c.exports.github_benchmark.clone() };
    results.check()?;
    // An archive that cannot be read is refused here only when it must be an A/B archive;
    // a baseline check's unpacking says what is wrong with it, after the request.
    let opened = c.archive.as_deref().map(|a| (a, crate::archive::open(a)));
    if let Some((a, Ok(Opened::Bisect(_)))) = &opened {
        return Err(crate::archive::bisect::refused(a, "check --archive").into());
    }
    let pair = match (opened, c.baseline.is_none() && c.save_baseline.is_none()) {
        (Some((_, opened)), true) => match opened? {
            Opened::Pair(manifest) => Some(manifest?),
            _ => None,
        },
        _ => None,
    };
    if c.ab.base.is_some() || pair.is_some() {
        if c.save_baseline.is_some() {
            return Err(Failure::new(ExitCode::Config, "--save-baseline does not go with an A/B check")
                .help("an A/B check compares with the base revision; save baselines from a plain `check`")
                .into());
        }
        return check_ab(c, pair, &results, shell);
    }
    if c.baseline.is_none() && c.save_baseline.is_none() {
        return Err(Failure::new(
            ExitCode::Config,
            format!(
                "{} holds one side only: check it against --baseline NAME, or save one with --save-baseline NAME",
                c.archive.as_deref().unwrap_or(Path::new("the archive")).display()
            ),
        )
        .help("for an A/B check against a git revision, pack both sides: cargo kprof archive --base REV -o FILE")
        .into());
    }
    let from = match &c.archive {
        Some(archive) => CheckFrom::Archive(Box::new(unpack(c, archive)?)),
        None => CheckFrom::Tree {
            request: Box::new(|| c.profile.request()),
            manifest_path: c.profile.packages.manifest_path.as_deref(),
        },
    };
    let opts = BaselineCheck {
        baseline: c.baseline.as_deref(),
        save_baseline: c.save_baseline.as_deref(),
        timing_only: c.timing_only,
        tolerance_pct: c.tolerance_pct,
        force: c.force,
        results: &results,
    };
    check::check_baselines(from, &opts, shell)
}

/// `check` without anything to compare with: both ways to give it one (exit 2, as a
/// missing argument).
fn nothing_to_compare() -> Failure {
    Failure::new(
        ExitCode::Usage,
        "check needs something to compare with: --baseline NAME (a saved baseline or a profile directory) \
         or --base [REV] (this tree against a git revision, both built and timed here)",
    )
    .help("against the merge base with your upstream branch: cargo kprof check --base")
    .help("save a first baseline on the main branch: cargo kprof check --save-baseline main")
}

/// The A/B check: `--base REV` from this tree, or both sides from an A/B archive.
fn check_ab(
    c: &CheckArgs,
    pair: Option<PairManifest>,
    results: &ResultFiles,
    shell: &Shell,
) -> Result<ExitCode> {
    let sides = match &c.archive {
        Some(archive) => SidesFrom::Archive {
            archive,
            pair,
            remap: remap(c),
            request: Box::new(c.profile.archived_request()?),
            timeout: c.profile.timeout.map(Duration::from_secs),
        },
        None => SidesFrom::Tree {
            request: Box::new(|| c.profile.request()),
            manifest_path: c.profile.packages.manifest_path.as_deref(),
            asked: c.ab.base.as_ref().unwrap_or(&BaseRev::MergeBase),
        },
    };
    let opts = AbCheck {
        timing_only: c.timing_only,
        gate: c.ab.gate(),
        rounds: c.ab.rounds,
        tolerance_pct: c.tolerance_pct,
        ambiguous: c.ab.ambiguous(),
        results,
    };
    ab::check(sides, &opts, shell)
}

/// A one-sided archive to unpack under `--workspace-remap`, as the command line changes it.
fn unpack<'a>(c: &'a CheckArgs, archive: &'a Path) -> Result<Unpack<'a>> {
    Ok(Unpack {
        archive,
        remap: c.workspace_remap.as_deref().unwrap_or(Path::new(DEFAULT_REMAP)),
        request: c.profile.archived_request()?,
        timeout: c.profile.timeout.map(Duration::from_secs),
    })
}

/// Where an archive is unpacked when `--workspace-remap` is not given.
const DEFAULT_REMAP: &str = "kprof-archive";

fn remap(c: &CheckArgs) -> PathBuf {
    c.workspace_remap.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_REMAP))
}
