//! `cargo kprof bisect`: the first revision on the first-parent path from `--good` to
//! `--bad` where the kernel got slower, found by A/B checks of revisions against `--good`.
//!
//! The search is `compare::bisect`'s. Each of its steps is an A/B check run by
//! `ops::ab` with the gate's rules and tolerance: the revision is the head, `--good` the
//! base. `--good` lives in kprof's worktree of the base (`<target-dir>/kprof-base`, the
//! one `check --base GOOD` uses) and is built once; the revisions checked take turns in
//! a second worktree, `<target-dir>/kprof-bisect`, whose target directory keeps their
//! builds incremental. Each revision's profiles are kept under `profile/rev-<commit>/`,
//! `--good`'s under `profile/base-<commit>/`. A revision that fails to build or lacks the
//! kernel is skipped and named; an ambiguous check runs again with twice the rounds.
//! `bisect.json` and `bisect.md` in the profiles root record every step and the result.

use std::path::Path;

use anyhow::Result;

use super::ab::base::{self, Checkout};
use super::ab::rounds::{AbOutcome, DEFAULT_ROUNDS};
use super::ab::sides::{self, SidePlan};
use super::ab::{compare_sides, AbCheck};
use super::check::ResultFiles;
use super::opening::{self, RequestFn};
use crate::build::history::{self, Commit};
use crate::build::worktree::{self, BaseRevision};
use crate::compare::ab::verdict::reviewer_line;
use crate::compare::bisect::{check_bound, Found, Interval, Outcome, Search};
use crate::error::{exit_code_of, ExitCode, Failure};
use crate::events::{self, Event};
use crate::model::ab::{AbVerdict, AmbiguousPolicy, GateSignal};
use crate::plan::{self, Plan, Request};
use crate::report::bisect::{BisectDoc, StepRecord, BISECT_SCHEMA_VERSION};
use crate::shell::Shell;

/// kprof's worktree of the revisions a bisect checks, beside that of the base.
const BISECT_TREE: &str = "kprof-bisect";

/// The most rounds a check may have (`--rounds`' upper limit).
const MAX_ROUNDS: u32 = 200;

/// A bisect, resolved from the command line.
pub struct Bisect<'a> {
    /// `--manifest-path`.
    pub manifest_path: Option<&'a Path>,
    /// `--good`.
    pub good: &'a str,
    /// `--bad`.
    pub bad: &'a str,
    /// `--timing-only`.
    pub timing_only: bool,
    /// `--gate`.
    pub gate: GateSignal,
    /// `--rounds`.
    pub rounds: Option<u32>,
    /// `--tolerance-pct`.
    pub tolerance_pct: Option<f64>,
}

/// What every step shares.
struct Context<'a> {
    o: &'a Bisect<'a>,
    repo: std::path::PathBuf,
    request: Request,
    head: Plan,
    good: SidePlan,
    good_rev: BaseRevision,
}

/// Runs the bisect and returns its exit code: 10 when a regressed revision is named, 0
/// when `--bad` did not regress, 14 when `--bad` could not be told from `--good`.
/// `request` is the profile request (`-k` and the rest).
pub fn bisect(request: RequestFn<'_>, o: &Bisect<'_>, shell: &Shell) -> Result<ExitCode> {
    let ws = opening::load_workspace(o.manifest_path, shell)?;
    let request = opening::with_engine_shard(request()?)?;
    refuse_request(&request)?;
    let head = plan::resolve(&request, &ws.metadata, &ws.config, crate::build::cargo_binary())?;
    sides::refuse_timing_only(o.timing_only, &head)?;
    let extras = super::profile::Extras { timing: false, timing_only: false, dirs_only: o.timing_only };
    super::profile::preflight(&head, extras)?;
    let repo = worktree::repository_root(&head.workspace_root)?;
    let good_rev = worktree::resolve_as(&repo, "--good", o.good)?;
    let bad_rev = worktree::resolve_as(&repo, "--bad", o.bad)?;
    let commits = history::first_parent(&repo, &good_rev, &bad_rev)?;
    shell.status(format!(
        "Bisect: {} first-parent revision(s) after --good {} ({}) up to --bad {} ({}); at most {} checks",
        commits.len(),
        good_rev.short(),
        good_rev.asked,
        bad_rev.short(),
        bad_rev.asked,
        check_bound(commits.len())
    ));
    let (_, good_plan, _) = base::base_side(&request, &head, o.manifest_path, o.good, shell)?;
    opening::create_profiles_root(&head.profile_root, shell)?;
    sides::share_ncu_path(&head.profile_root, &good_plan.profile_root)?;
    let good =
        sides::build_named(&format!("--good {}", good_rev.short()), good_plan, shell).map_err(|e| {
            e.context(format!(
                "--good {} ({}) does not build: nothing to compare with",
                o.good,
                good_rev.short()
            ))
        })?;
    let ctx = Context { o, repo, request, head, good, good_rev };
    let (search, records) = search(&ctx, &commits, shell)?;
    finish(&ctx, bad_rev, commits, &search, records, shell)
}

/// A bisect runs checks: the request may not ask for a dry run, and names its kernels.
fn refuse_request(request: &Request) -> Result<(), Failure> {
    if request.dry_run {
        return Err(Failure::new(ExitCode::Usage, "bisect runs A/B checks: --dry-run does not go with it")
            .help("see what one check would run: cargo kprof check --base REV --dry-run"));
    }
    if request.kernels.is_empty() && request.kernel_regex.is_none() {
        return Err(Failure::new(ExitCode::Usage, "bisect needs the kernel that got slower: -k KERNEL")
            .help("e.g. cargo kprof bisect --good v1.2.0 -k hgemm_tiled (see cargo kprof list)"));
    }
    Ok(())
}

/// Runs the search, one A/B check (or skip) per step.
fn search(ctx: &Context<'_>, commits: &[Commit], shell: &Shell) -> Result<(Search, Vec<StepRecord>)> {
    let mut search = Search::new(commits.len());
    let mut records = Vec::new();
    let usual = ctx.o.rounds.unwrap_or(DEFAULT_ROUNDS);
    while let Some(probe) = search.next() {
        let commit = &commits[probe.index];
        let rounds = (usual * probe.rounds_factor).min(MAX_ROUNDS);
        shell.status(format!(
            "Bisect: checking {} {} against --good {} ({rounds} rounds)",
            commit.short(),
            commit.subject,
            ctx.good_rev.short()
        ));
        let (outcome, evidence) = check_revision(ctx, commit, rounds, shell)?;
        search.record(probe, outcome);
        let step = search.steps().last().cloned().expect("a step was just recorded");
        let name = |i: Option<usize>| i.map(|i| commits[i].short().to_string());
        shell.emit(&Event::BisectStep(events::BisectStep {
            step: search.steps().len(),
            commit: commit.short().to_string(),
            subject: commit.subject.clone(),
            outcome: step.outcome.name(),
            why_skipped: match &step.outcome {
                Outcome::Skipped { reason } => Some(reason.clone()),
                _ => None,
            },
            rounds,
            last_good: name(step.last_good).unwrap_or_else(|| ctx.good_rev.short().to_string()),
            first_bad: name(step.first_bad),
            evidence: evidence.clone(),
        }));
        records.push(StepRecord { step, commit: commit.clone(), rounds, evidence });
    }
    Ok((search, records))
}

/// One revision checked against `--good` with `rounds` rounds: its outcome and each
/// kernel's line. A revision that cannot be planned (no such workspace or kernel) or
/// built is skipped, with why.
fn check_revision(
    ctx: &Context<'_>,
    commit: &Commit,
    rounds: u32,
    shell: &Shell,
) -> Result<(Outcome, Vec<String>)> {
    let rev = commit.revision();
    let dir = base::worktree_dir(&ctx.head, BISECT_TREE);
    // A worktree kprof cannot use (edited, someone else's) ends the bisect: no revision
    // could be checked there.
    worktree::checkout(&ctx.repo, &rev, &dir, &|_| {})?;
    let at = Checkout { repo: &ctx.repo, revision: &rev, dir: &dir, role: "revision" };
    let root = crate::profile::bisect::revision_profiles_root(&ctx.head.profile_root, rev.short());
    let side = base::revision_side(&at, &ctx.request, ctx.o.manifest_path, root.clone(), shell)
        .and_then(|(plan, _)| sides::build_named(&format!("revision {}", rev.short()), plan, shell));
    let side = match side {
        Ok(s) => s,
        Err(e) => return skipped(e),
    };
    sides::share_ncu_path(&ctx.head.profile_root, &root)?;
    let good = SidePlan { plan: ctx.good.plan.clone(), built: ctx.good.built.clone() };
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
        Err(e) => skipped(e),
    }
}

/// A revision that failed to plan or build (a configuration or build error) is skipped
/// with git bisect's word; any other failure (a signal, ncu, the file system) ends the
/// bisect.
fn skipped(e: anyhow::Error) -> Result<(Outcome, Vec<String>)> {
    match exit_code_of(&e) {
        ExitCode::Config | ExitCode::Build | ExitCode::NoKernelMatched => {
            let reason = match exit_code_of(&e) {
                ExitCode::Build => format!("does not build: {}", first_line(&e)),
                _ => format!("cannot be checked: {}", first_line(&e)),
            };
            Ok((Outcome::Skipped { reason }, Vec::new()))
        }
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

/// Writes `bisect.json` and `bisect.md`, says the result and returns the exit code.
fn finish(
    ctx: &Context<'_>,
    bad: BaseRevision,
    commits: Vec<Commit>,
    search: &Search,
    steps: Vec<StepRecord>,
    shell: &Shell,
) -> Result<ExitCode> {
    let found = search.result();
    let short = |i: usize| commits[i].short().to_string();
    let evidence_of = |i: usize| {
        steps.iter().rev().find(|s| s.step.index == i).map(|s| s.evidence.clone()).unwrap_or_default()
    };
    let (kind, at, after, hidden, second, code) = match &found {
        Found::FirstBad { index, second } => {
            ("first-bad", Some(*index), None, vec![], *second, ExitCode::Regression)
        }
        Found::Range { after, through, hidden, second } => {
            let after = Some(after.map_or_else(|| ctx.good_rev.short().to_string(), short));
            (
                "range",
                Some(*through),
                after,
                hidden.iter().map(|&i| short(i)).collect(),
                *second,
                ExitCode::Regression,
            )
        }
        Found::NoRegression => ("no-regression", None, None, vec![], None, ExitCode::Success),
        Found::Undecided => ("undecided", None, None, vec![], None, ExitCode::Ambiguous),
    };
    let at_commit = at.map(|i| &commits[i]);
    let summary = match at_commit {
        Some(c) if kind == "first-bad" => {
            format!("First regressed revision: {} {} ({})", c.short(), c.subject, c.date)
        }
        Some(c) => format!("The first regressed revision is one of {} and {}", hidden.join(", "), c.short()),
        None if kind == "no-regression" => "--bad is not slower than --good beyond the tolerance".to_string(),
        None => "--bad could not be told from --good".to_string(),
    };
    let skipped: Vec<(String, String)> = steps
        .iter()
        .filter_map(|s| match &s.step.outcome {
            Outcome::Skipped { reason } => Some((s.commit.short().to_string(), reason.clone())),
            _ => None,
        })
        .collect();
    let root = &ctx.head.profile_root;
    let doc = BisectDoc {
        schema_version: BISECT_SCHEMA_VERSION,
        kernels: ctx.head.kernels.iter().map(|k| k.name.clone()).collect(),
        good: ctx.good_rev.clone(),
        bad,
        check_bound: check_bound(commits.len()),
        checks: search.checks(),
        history: commits.clone(),
        steps: steps.clone(),
        result: found.clone(),
        summary,
    };
    crate::report::bisect::write(root, &doc)?;
    shell.emit(&Event::BisectFinished(Box::new(events::BisectFinished {
        result: kind,
        commit: at_commit.map(|c| c.short().to_string()),
        subject: at_commit.map(|c| c.subject.clone()),
        date: at_commit.map(|c| c.date.clone()),
        after,
        hidden,
        evidence: at.map(evidence_of).unwrap_or_default(),
        second: second.map(short),
        skipped,
        checks: doc.checks,
        check_bound: doc.check_bound,
        report: crate::profile::bisect::bisect_md_path(root),
        exit_code: code.code(),
    })));
    Ok(code)
}
