//! `cargo kprof check --base REV` and `check --archive` of an A/B archive: this tree
//! against a git revision, both built here and run interleaved on the same GPU.
//!
//! The base revision is checked out into kprof's own worktree beside the line-info
//! builds (`<target-dir>/kprof-base`) and built into its own target directory there, so
//! the two sides never overwrite each other's executables and a second check of the
//! same base rebuilds nothing. Both sides are profiled with the same stages (plus the
//! `counters` stage unless `--gate time`), then their harness timings run in interleaved
//! rounds, and `compare::ab` decides each kernel. `cargo kprof archive --base` packs
//! both sides for a GPU machine without cargo.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;

use super::load_workspace;
use super::profile::{execute_profiles, Extras};
use crate::archive::pair;
use crate::build::worktree::{self, BaseRevision};
use crate::build::{self, BuildOutput};
use crate::cli::CheckArgs;
use crate::compare::ab::run::{self as ab_run, AbOptions, AbPair};
use crate::error::{ExitCode, Failure};
use crate::model::ab::Side;
use crate::model::stage::Stage;
use crate::plan::{self, Plan, Request};
use crate::profile::ab::base_profiles_root;
use crate::shell::Shell;

/// One side, planned and built.
pub(crate) struct SidePlan {
    /// Its plan.
    pub plan: Plan,
    /// Its executables.
    pub built: Option<BuildOutput>,
}

/// `check --base` (from the working tree) or `check --archive` of an A/B archive.
pub(crate) fn check_ab(c: &CheckArgs, shell: &Shell) -> Result<ExitCode> {
    let (base, mut head, mut other) = match &c.archive {
        Some(archive) => from_archive(c, archive, shell)?,
        None => from_tree(c, shell)?,
    };
    let gate = c.ab.gate();
    // The evidence of an A/B check: the counters (unless only time gates) and each
    // side's hot lines, collected the same way on both sides.
    let extra: Vec<Stage> = match (c.timing_only, gate.uses_counters()) {
        (true, _) => Vec::new(),
        (false, true) => vec![Stage::Counters, Stage::Source],
        (false, false) => vec![Stage::Source],
    };
    for side in [&mut head, &mut other] {
        for k in &mut side.plan.kernels {
            k.extra_stages = extra.clone();
        }
    }
    let pairs = pair_kernels(&mut head.plan, &mut other.plan, shell);
    for note in head.plan.notes.iter().chain(&other.plan.notes) {
        shell.note(note);
    }
    if head.plan.kernels.is_empty() {
        return Err(Failure::new(
            ExitCode::Config,
            "no selected kernel exists on both sides: nothing to compare",
        )
        .help("select kernels the base revision configures too")
        .into());
    }
    if c.archive.is_none() {
        super::create_profiles_root(&head.plan.profile_root, shell)?;
        share_ncu_path(&head.plan.profile_root, &other.plan.profile_root)?;
    }
    let gpu_began = Instant::now();
    // `--timing-only`: the profile directories only; the rounds are the timing.
    let extras = Extras { timing: false, timing_only: false, dirs_only: c.timing_only };
    shell.status(format!("A/B: head (this tree) against base {} ({})", base.short(), base.asked));
    let head_dirs = execute_profiles(&head.plan, head.built.clone(), extras, shell)?;
    let base_dirs = execute_profiles(&other.plan, other.built.clone(), extras, shell)?;
    if head.plan.dry_run {
        return Ok(ExitCode::Success);
    }
    let mut ab_pairs = Vec::new();
    for name in &pairs {
        let h = head_dirs.iter().find(|(k, _)| &k.name == name);
        let b = base_dirs.iter().find(|(k, _)| &k.name == name);
        if let (Some((hk, hd)), Some((bk, bd))) = (h, b) {
            ab_pairs.push(AbPair {
                head_kernel: hk,
                base_kernel: bk,
                head_dir: hd,
                base_dir: bd,
                head_built: head.built.as_ref(),
                base_built: other.built.as_ref(),
            });
        }
    }
    let opts = AbOptions {
        rounds: c.ab.rounds.unwrap_or(ab_run::DEFAULT_ROUNDS),
        tolerance_pct: c.tolerance_pct,
        gate,
        ambiguous: c.ab.ambiguous(),
        timeout: head.plan.timeout,
        base_label: format!("{} ({})", base.short(), base.asked),
    };
    let outcome = ab_run::run(&ab_pairs, &opts, shell)?;
    shell.status(format!(
        "A/B: both sides' profiles and the rounds of {1} kernel(s) took {0:.1} s (builds excluded)",
        gpu_began.elapsed().as_secs_f64(),
        ab_pairs.len()
    ));
    super::compare_check::write_ab_exports(&c.exports, &outcome, shell)?;
    ab_run::finish(&outcome, &opts, shell);
    Ok(outcome.exit_code)
}

/// Both sides from the working tree: the head as `cargo kprof` plans it, the base from
/// kprof's worktree of the revision, each built with line info.
fn from_tree(c: &CheckArgs, shell: &Shell) -> Result<(BaseRevision, SidePlan, SidePlan)> {
    let asked = c.ab.base.as_deref().unwrap_or("auto");
    let manifest = c.profile.packages.manifest_path.as_deref();
    let (metadata, config) = load_workspace(manifest, shell)?;
    let request = super::with_engine_shard(c.profile.request()?)?;
    let head_plan = plan::resolve(&request, &metadata, &config, build::cargo_binary())?;
    refuse_timing_only(c, &head_plan)?;
    let (base, base_plan, _) = base_side(&request, &head_plan, manifest, asked, shell)?;
    let head = build_side(Side::Head, head_plan, shell)?;
    let other = build_side(Side::Base, base_plan, shell)?;
    Ok((base, head, other))
}

/// The base revision's plan: its worktree checked out, its workspace read, the same
/// request resolved there, built into the worktree's own target directory.
pub(crate) fn base_side(
    request: &Request,
    head: &Plan,
    manifest: Option<&Path>,
    asked: &str,
    shell: &Shell,
) -> Result<(BaseRevision, Plan, crate::config::Config)> {
    let repo = worktree::repository_root(&head.workspace_root)?;
    let github_base = std::env::var("GITHUB_BASE_REF").ok();
    let base = worktree::resolve(&repo, asked, github_base.as_deref())?;
    let kprof_dir = match &head.build {
        Some(b) => b.target_dir.clone(),
        None => head.workspace_root.join("target").join("kprof"),
    };
    let dir = kprof_dir.with_file_name("kprof-base");
    worktree::checkout(&repo, &base, &dir, shell)?;
    let manifest = match manifest {
        Some(m) => plan::absolute(m)?,
        None => std::env::current_dir()?.join("Cargo.toml"),
    };
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let rel = canon(&manifest)
        .strip_prefix(canon(&repo))
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| PathBuf::from("Cargo.toml"));
    let base_manifest = dir.join(&rel);
    if !base_manifest.is_file() {
        return Err(Failure::new(
            ExitCode::Config,
            format!("the base {} ({}) has no {}", base.short(), base.asked, rel.display()),
        )
        .help("compare with a revision that has this workspace")
        .into());
    }
    let (metadata, config) = load_workspace(Some(&base_manifest), shell)?;
    let mut request = request.clone();
    request.target_dir = Some(dir.join("target"));
    let mut plan = plan::resolve(&request, &metadata, &config, build::cargo_binary())
        .map_err(|e| e.context(format!("planning the base {} ({})", base.short(), base.asked)))?;
    plan.profile_root = base_profiles_root(&head.profile_root, base.short());
    plan.output_dir = None;
    Ok((base, plan, config))
}

/// Builds a side (timed: the build is the CPU machine's share, reported apart).
pub(crate) fn build_side(side: Side, plan: Plan, shell: &Shell) -> Result<SidePlan> {
    let built = match &plan.build {
        Some(req) => {
            let began = Instant::now();
            shell.status(format!("Building the {} with line info: {}", side.name(), req.command()));
            let b = req.run(shell)?;
            shell.status(format!("  built the {} in {:.1} s", side.name(), began.elapsed().as_secs_f64()));
            Some(b)
        }
        None => None,
    };
    Ok(SidePlan { plan: Plan { build: None, ..plan }, built })
}

/// Both sides from an A/B archive (`cargo kprof archive --base`), unpacked under
/// `--workspace-remap` into `head/` and `base/`.
fn from_archive(c: &CheckArgs, archive: &Path, shell: &Shell) -> Result<(BaseRevision, SidePlan, SidePlan)> {
    let Some(manifest) = pair::read_manifest(archive)? else {
        return Err(Failure::new(
            ExitCode::Config,
            format!("{} holds one side only: --base needs an A/B archive", archive.display()),
        )
        .help("make it with `cargo kprof archive --base REV -o FILE`, or compare with a saved --baseline")
        .into());
    };
    let remap = c.workspace_remap.clone().unwrap_or_else(|| PathBuf::from("kprof-archive"));
    crate::archive::require_new_or_empty(&remap)?;
    std::fs::create_dir_all(&remap)?;
    let (head_tar, base_tar) = pair::extract_sides(archive, &remap)?;
    let unpack = |tar: &Path, side: Side| -> Result<SidePlan> {
        let (plan, built) = super::compare_check::unpack_for_check(c, tar, &remap.join(side.name()))?;
        Ok(SidePlan { plan, built: Some(built) })
    };
    let head = unpack(&head_tar, Side::Head)?;
    refuse_timing_only(c, &head.plan)?;
    let other = unpack(&base_tar, Side::Base)?;
    pair::remove_sides(&remap);
    shell.status(format!("Unpacked both sides of {} into {}", archive.display(), remap.display()));
    let base = BaseRevision { asked: manifest.base_asked, commit: manifest.base_commit };
    Ok((base, head, other))
}

/// Keeps, in both plans, the kernels both sides have, in the head's order; the base's
/// kernel runs on the head's GPU. Returns the kept names.
fn pair_kernels(head: &mut Plan, base: &mut Plan, shell: &Shell) -> Vec<String> {
    let names: Vec<String> = head
        .kernels
        .iter()
        .filter(|k| base.kernels.iter().any(|b| b.name == k.name))
        .map(|k| k.name.clone())
        .collect();
    for k in head.kernels.iter().filter(|k| !names.contains(&k.name)) {
        shell.warn(format!(
            "`{}` is new in this change: the base has no such kernel, nothing to compare",
            k.name
        ));
    }
    head.kernels.retain(|k| names.contains(&k.name));
    base.kernels.retain(|k| names.contains(&k.name));
    base.kernels.sort_by_key(|k| names.iter().position(|n| *n == k.name));
    for (b, h) in base.kernels.iter_mut().zip(&head.kernels) {
        match h.env.get(plan::VISIBLE_DEVICES) {
            Some(g) => b.env.insert(plan::VISIBLE_DEVICES.to_string(), g.clone()),
            None => b.env.remove(plan::VISIBLE_DEVICES),
        };
    }
    names
}

/// `--timing-only` times harness benches only: other programs' rounds run under ncu.
fn refuse_timing_only(c: &CheckArgs, plan: &Plan) -> Result<()> {
    match plan.kernels.iter().find(|k| k.runtime != crate::model::kinds::Runtime::Harness) {
        Some(k) if c.timing_only => Err(Failure::new(
            ExitCode::Config,
            format!("--timing-only needs harness targets; `{}` runs as `{}`", k.name, k.runtime.name()),
        )
        .help("drop --timing-only (its rounds are then timed by ncu), or select harness kernels only")
        .into()),
        _ => Ok(()),
    }
}

/// The base's profiles root gets the head's `ncu_path`, so both sides run the same ncu.
fn share_ncu_path(head_root: &Path, base_root: &Path) -> Result<()> {
    std::fs::create_dir_all(base_root)?;
    let head = crate::profile::dir::ensure_ncu_path(head_root)?;
    let base = base_root.join(head.file_name().unwrap_or_default());
    if !base.exists() {
        std::fs::copy(&head, &base)?;
    }
    Ok(())
}
