//! `cargo kprof bisect`: the first revision on the first-parent path from `--good` to
//! `--bad` where the kernel got slower, found by A/B checks of revisions against `--good`.
//!
//! The search is `compare::bisect`'s. Each of its steps is an A/B check run by
//! `ops::ab` with the gate's rules and tolerance: the revision is the head, `--good` the
//! base. The revisions come from a checkout ([`tree`]: worktrees, built here) or from a
//! bisect archive ([`bundle`]: built elsewhere by `archive --bisect`, whose packing is
//! [`pack`]). Each revision's profiles are kept under `profile/rev-<commit>/`, `--good`'s
//! under `profile/base-<commit>/`. A revision that fails to build or lacks the kernel is
//! skipped and named; an ambiguous check runs again with twice the rounds. Revisions an
//! archive knows to share one build are one check: the same executables cannot differ.
//! `bisect.json` and `bisect.md` in the profiles root record every step and the result.

pub mod bundle;
pub mod pack;
mod tree;

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::Result;

pub use self::bundle::{bisect_archive, FromArchive};
pub use self::tree::{bisect, Bisect};
use super::ab::rounds::{AbOutcome, DEFAULT_ROUNDS};
use super::ab::side::Side;
use super::ab::sides;
use super::ab::{compare_sides, AbCheck};
use super::check::ResultFiles;
use crate::compare::ab::verdict::reviewer_line;
use crate::compare::bisect::{check_bound, Found, Interval, Outcome, Search};
use crate::error::{exit_code_of, ExitCode};
use crate::events::{self, BisectChecking, BisectResult, BisectSameBuild, Event};
use crate::model::ab::{AbVerdict, AmbiguousPolicy, GateSignal};
use crate::report::bisect::{BisectDoc, StepRecord, BISECT_SCHEMA_VERSION};
use crate::shell::Shell;
use crate::vcs::history::Commit;
use crate::vcs::worktree::BaseRevision;

/// The most rounds a check may have (`--rounds`' upper limit).
const MAX_ROUNDS: u32 = 200;

/// How each check of a bisect runs, wherever its revisions come from.
#[derive(Debug, Clone, Copy)]
pub struct CheckOptions {
    /// `--timing-only`.
    pub timing_only: bool,
    /// `--gate`.
    pub gate: GateSignal,
    /// `--rounds`.
    pub rounds: Option<u32>,
    /// `--tolerance-pct`.
    pub tolerance_pct: Option<f64>,
}

/// Where the revisions a bisect checks come from.
trait Revisions {
    /// `commit` (`history[index]`) planned and built, to profile under `root`; `Err(why)`
    /// when it cannot be checked (it does not build, it lacks the kernel).
    fn side(
        &mut self,
        index: usize,
        commit: &Commit,
        root: PathBuf,
        shell: &Shell,
    ) -> Result<Result<Side, String>>;

    /// The build `history[index]` has, when known: revisions of one build check alike.
    fn build_of(&self, _index: usize) -> Option<usize> {
        None
    }
}

/// What every step shares.
struct Context<'a> {
    o: &'a CheckOptions,
    /// The profiles root: `bisect.json`, `rev-*/`, `base-*/`.
    root: PathBuf,
    /// The kernels checked.
    kernels: Vec<String>,
    good: Side,
    good_rev: BaseRevision,
    /// `--good`'s build, when the revisions' builds are known.
    good_build: Option<usize>,
    bad: BaseRevision,
    /// The first-parent history `good..bad`, oldest first.
    history: Vec<Commit>,
}

/// Runs the search and writes its result: the exit code.
fn run(ctx: &Context<'_>, revisions: &mut dyn Revisions, shell: &Shell) -> Result<ExitCode> {
    let (search, records) = search(ctx, revisions, shell)?;
    finish(ctx, &search, records, shell)
}

/// A check already run, for the revisions of the same build.
struct Done {
    outcome: Outcome,
    evidence: Vec<String>,
    commit: String,
}

/// Runs the search, one A/B check (or skip, or a build's earlier check) per step.
fn search(
    ctx: &Context<'_>,
    revisions: &mut dyn Revisions,
    shell: &Shell,
) -> Result<(Search, Vec<StepRecord>)> {
    let mut search = Search::new(ctx.history.len());
    let mut records = Vec::new();
    let mut done: HashMap<(usize, u32), Done> = HashMap::new();
    let usual = ctx.o.rounds.unwrap_or(DEFAULT_ROUNDS);
    while let Some(probe) = search.next() {
        let commit = &ctx.history[probe.index];
        let rounds = (usual * probe.rounds_factor).min(MAX_ROUNDS);
        let build = revisions.build_of(probe.index);
        let (outcome, evidence, same_build_as) = match build {
            Some(b) if Some(b) == ctx.good_build => {
                let good = ctx.good_rev.short().to_string();
                let line = format!("the same build as --good {good}: no check needed, nothing changed");
                shell.emit(&Event::BisectSameBuild(BisectSameBuild {
                    commit: commit.short().to_string(),
                    subject: commit.subject.clone(),
                    same_build_as: good.clone(),
                    good: true,
                }));
                (Outcome::Unchanged, vec![line], Some(good))
            }
            Some(b) if done.contains_key(&(b, rounds)) => {
                let d = &done[&(b, rounds)];
                shell.emit(&Event::BisectSameBuild(BisectSameBuild {
                    commit: commit.short().to_string(),
                    subject: commit.subject.clone(),
                    same_build_as: d.commit.clone(),
                    good: false,
                }));
                (d.outcome.clone(), d.evidence.clone(), Some(d.commit.clone()))
            }
            _ => {
                shell.emit(&Event::BisectChecking(BisectChecking {
                    commit: commit.short().to_string(),
                    subject: commit.subject.clone(),
                    good: ctx.good_rev.short().to_string(),
                    rounds,
                }));
                let (outcome, evidence) = check_revision(ctx, revisions, probe.index, rounds, shell)?;
                if let (Some(b), false) = (build, matches!(outcome, Outcome::Skipped { .. })) {
                    let d = Done {
                        outcome: outcome.clone(),
                        evidence: evidence.clone(),
                        commit: commit.short().into(),
                    };
                    done.insert((b, rounds), d);
                }
                (outcome, evidence, None)
            }
        };
        search.record(probe, outcome);
        let step = search.steps().last().cloned().expect("a step was just recorded");
        emit_step(ctx, &search, &step, rounds, &evidence, same_build_as.clone(), shell);
        records.push(StepRecord { step, commit: commit.clone(), rounds, evidence, same_build_as });
    }
    Ok((search, records))
}

/// Says one step.
fn emit_step(
    ctx: &Context<'_>,
    search: &Search,
    step: &crate::compare::bisect::Step,
    rounds: u32,
    evidence: &[String],
    same_build_as: Option<String>,
    shell: &Shell,
) {
    let commit = &ctx.history[step.index];
    let name = |i: Option<usize>| i.map(|i| ctx.history[i].short().to_string());
    shell.emit(&Event::BisectStep(events::BisectStep {
        step: search.steps().len(),
        commit: commit.short().to_string(),
        subject: commit.subject.clone(),
        outcome: events::StepOutcome::from(&step.outcome),
        why_skipped: match &step.outcome {
            Outcome::Skipped { reason } => Some(reason.clone()),
            _ => None,
        },
        rounds,
        same_build_as,
        last_good: name(step.last_good).unwrap_or_else(|| ctx.good_rev.short().to_string()),
        first_bad: name(step.first_bad),
        evidence: evidence.to_vec(),
    }));
}

/// One revision checked against `--good` with `rounds` rounds: its outcome and each
/// kernel's line. A revision that cannot be planned (no such workspace or kernel) or
/// built is skipped, with why.
fn check_revision(
    ctx: &Context<'_>,
    revisions: &mut dyn Revisions,
    index: usize,
    rounds: u32,
    shell: &Shell,
) -> Result<(Outcome, Vec<String>)> {
    let commit = &ctx.history[index];
    let root = crate::profile::bisect::revision_profiles_root(&ctx.root, commit.short());
    let side = match revisions.side(index, commit, root.clone(), shell)? {
        Ok(s) => s,
        Err(reason) => return Ok((Outcome::Skipped { reason }, Vec::new())),
    };
    sides::share_ncu_path(&ctx.root, &root)?;
    let good = ctx.good.clone();
    let results = ResultFiles::default();
    let check = AbCheck {
        timing_only: ctx.o.timing_only,
        gate: ctx.o.gate,
        rounds: Some(rounds),
        tolerance_pct: ctx.o.tolerance_pct,
        ambiguous: AmbiguousPolicy::Fail,
        results: &results,
    };
    let label = format!("{} (--good {})", ctx.good_rev.short(), ctx.good_rev.asked);
    match compare_sides(side, good, &check, label, true, shell) {
        Ok(Some((outcome, _))) => Ok(judge(&outcome)),
        Ok(None) => unreachable!("a bisect refuses --dry-run"),
        Err(e) => Ok((Outcome::Skipped { reason: skip_reason(e)? }, Vec::new())),
    }
}

/// Why a revision that failed to plan or build (a configuration or build error) is
/// skipped, in git bisect's word; any other failure (a signal, ncu, the file system) ends
/// the bisect.
fn skip_reason(e: anyhow::Error) -> Result<String> {
    match exit_code_of(&e) {
        ExitCode::Build => Ok(format!("does not build: {}", first_line(&e))),
        ExitCode::Config | ExitCode::NoKernelMatched => Ok(format!("cannot be checked: {}", first_line(&e))),
        _ => Err(e),
    }
}

/// The error and its causes on one line, without the help that follows.
fn first_line(e: &anyhow::Error) -> String {
    format!("{e:#}").lines().next().unwrap_or_default().to_string()
}

/// One check's outcome over its kernels: regressed when any regressed, else ambiguous
/// when any is, else improved when all improved, else unchanged; and each kernel's line.
fn judge(outcome: &AbOutcome) -> (Outcome, Vec<String>) {
    let lines = outcome.kernels.iter().map(|k| reviewer_line(&k.ab)).collect();
    let of = |v: AbVerdict| outcome.kernels.iter().filter(move |k| k.ab.verdict == v);
    let decided = if let Some(k) = of(AbVerdict::Regressed).next() {
        let time = k.ab.time.as_ref().filter(|t| t.estimate_pct.is_finite()).map(|t| Interval {
            estimate_pct: t.estimate_pct,
            lo_pct: t.lo_pct,
            hi_pct: t.hi_pct,
        });
        Outcome::Regressed { time }
    } else if of(AbVerdict::Ambiguous).next().is_some() {
        Outcome::Ambiguous
    } else if !outcome.kernels.is_empty() && of(AbVerdict::Improved).count() == outcome.kernels.len() {
        Outcome::Improved
    } else {
        Outcome::Unchanged
    };
    (decided, lines)
}

/// The result's kind, its revision (by index), the last good one before a range, the
/// hidden revisions of a range, a second regression and the exit code.
type Answer = (BisectResult, Option<usize>, Option<String>, Vec<String>, Option<usize>, ExitCode);

fn answer(ctx: &Context<'_>, found: &Found) -> Answer {
    let short = |i: usize| ctx.history[i].short().to_string();
    match found {
        Found::FirstBad { index, second } => {
            (BisectResult::FirstBad, Some(*index), None, vec![], *second, ExitCode::Regression)
        }
        Found::Range { after, through, hidden, second } => {
            let after = Some(after.map_or_else(|| ctx.good_rev.short().to_string(), short));
            let hidden = hidden.iter().map(|&i| short(i)).collect();
            (BisectResult::Range, Some(*through), after, hidden, *second, ExitCode::Regression)
        }
        Found::NoRegression => (BisectResult::NoRegression, None, None, vec![], None, ExitCode::Success),
        Found::Undecided => (BisectResult::Undecided, None, None, vec![], None, ExitCode::Ambiguous),
    }
}

/// Writes `bisect.json` and `bisect.md`, says the result and returns the exit code.
fn finish(ctx: &Context<'_>, search: &Search, steps: Vec<StepRecord>, shell: &Shell) -> Result<ExitCode> {
    let found = search.result();
    let (kind, at, after, hidden, second, code) = answer(ctx, &found);
    let evidence_of = |i: usize| {
        steps.iter().rev().find(|s| s.step.index == i).map(|s| s.evidence.clone()).unwrap_or_default()
    };
    let at_commit = at.map(|i| &ctx.history[i]);
    let summary = match at_commit {
        Some(c) if kind == BisectResult::FirstBad => {
            format!("First regressed revision: {} {} ({})", c.short(), c.subject, c.date)
        }
        Some(c) => format!("The first regressed revision is one of {} and {}", hidden.join(", "), c.short()),
        None if kind == BisectResult::NoRegression => {
            "--bad is not slower than --good beyond the tolerance".to_string()
        }
        None => "--bad could not be told from --good".to_string(),
    };
    let skipped: Vec<(String, String)> = steps
        .iter()
        .filter_map(|s| match &s.step.outcome {
            Outcome::Skipped { reason } => Some((s.commit.short().to_string(), reason.clone())),
            _ => None,
        })
        .collect();
    let doc = BisectDoc {
        schema_version: BISECT_SCHEMA_VERSION,
        kernels: ctx.kernels.clone(),
        good: ctx.good_rev.clone(),
        bad: ctx.bad.clone(),
        check_bound: check_bound(ctx.history.len()),
        // A/B checks run: a revision skipped, or of a build checked already, ran none.
        checks: steps
            .iter()
            .filter(|s| s.same_build_as.is_none() && !matches!(s.step.outcome, Outcome::Skipped { .. }))
            .count(),
        history: ctx.history.clone(),
        steps: steps.clone(),
        result: found.clone(),
        summary,
    };
    crate::report::bisect::write(&ctx.root, &doc)?;
    shell.emit(&Event::BisectFinished(Box::new(events::BisectFinished {
        result: kind,
        commit: at_commit.map(|c| c.short().to_string()),
        subject: at_commit.map(|c| c.subject.clone()),
        date: at_commit.map(|c| c.date.clone()),
        after,
        hidden,
        evidence: at.map(evidence_of).unwrap_or_default(),
        second: second.map(|i| ctx.history[i].short().to_string()),
        skipped,
        checks: doc.checks,
        check_bound: doc.check_bound,
        report: crate::profile::bisect::bisect_md_path(&ctx.root),
        exit_code: code.code(),
    })));
    Ok(code)
}
