//! The timing phase of an A/B check: the paired kernels grouped by program, then each
//! group's interleaved rounds, before any kernel is judged.
//!
//! A harness bench times every case `KPROF_CASE` selects in one process, so the harness
//! pairs whose programs agree on both sides (the same program, arguments, working
//! directory and environment but for `KPROF_CASE`, on the head and on the base: see
//! [`timing_key`]) are timed together: each round starts each side's program once, with
//! `KPROF_CASE` the alternation of the group's cases, and every member reads its own case
//! out of that one result ([`crate::collect::rounds::run_rounds`]). A check of 28 kernels
//! in 5 programs starts 5 programs per side and round instead of 28. A pair that agrees
//! with no other, a kernel without a case, and every pair under `--no-batch` is a group
//! of one, run exactly as it was before grouping. Programs that are not harness benches
//! keep their ncu rounds, one kernel at a time.

use std::path::PathBuf;

use anyhow::Result;
use kprof_contract::env as contract;

use super::pair::{AbOptions, AbPair};
use crate::collect::prepare::target_command;
use crate::collect::rounds::{
    run_ncu_rounds, run_rounds, MemberSide, NcuRoundSide, RoundMember, RoundSide, SideRun,
};
use crate::compare::ab::early_stop::{decided_early, FIRST_LOOK};
use crate::compare::ab::stats::{more_rounds_could_decide, time_change};
use crate::compare::Snapshot;
use crate::events::{About, Event, TimingExtended, TimingPlanned, TimingStopped};
use crate::model::ab::Side;
use crate::model::kinds::{Privilege, Runtime};
use crate::ncu::TargetCommand;
use crate::plan::{KernelPlan, PlannedTarget};
use crate::profile::dir::ProfileDir;
use crate::shell::Shell;

/// What one pair's rounds measured.
pub struct Timed {
    /// Each side's run in each round; `None` when the pair could not be timed.
    pub runs: Option<Vec<SideRun>>,
    /// Where the times come from: `harness` or `ncu`.
    pub source: &'static str,
}

/// What a kernel's timing program must share with another's for one run to time both, or
/// `None` when it is timed alone: a harness target with a case, keyed by its program,
/// arguments, working directory and environment, less `KPROF_CASE` and the profiling
/// window (`KPROF_PROFILE`, `KPROF_LAUNCH_COUNT`, which a timing run drops). The
/// harness' own settings (`KPROF_MIN_TIME`, ...) are part of the environment, so kernels
/// that set them differently run apart.
pub fn timing_key(kernel: &KernelPlan, target: &TargetCommand) -> Option<String> {
    if kernel.runtime != Runtime::Harness || kernel.case.is_none() {
        return None;
    }
    let mut env = target.env.clone();
    for dropped in [contract::CASE, contract::PROFILE, contract::LAUNCH_COUNT] {
        env.remove(dropped);
    }
    Some(format!("{:?}|{:?}|{:?}|{:?}", target.program, target.args, target.cwd, env))
}

/// The groups of pairs timed together, as indices in selection order, each group in the
/// order of its first member. `keys` holds each pair's [`timing_key`] on the head and on
/// the base; pairs group when both agree. Without `batch` (`--no-batch`) every pair is a
/// group of its own.
pub fn groups(keys: &[Option<(String, String)>], batch: bool) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let joins = key
            .as_ref()
            .filter(|_| batch)
            .and_then(|key| groups.iter().position(|g| keys[g[0]].as_ref() == Some(key)));
        match joins {
            Some(g) => groups[g].push(i),
            None => groups.push(vec![i]),
        }
    }
    groups
}

/// Both sides' timing programs of a harness pair: (head, base).
type Targets = (TargetCommand, TargetCommand);

/// Times every pair, group by group: the rounds of each, in the order of `pairs`.
pub fn time_pairs(pairs: &[AbPair<'_>], opts: &AbOptions, shell: &Shell) -> Result<Vec<Timed>> {
    let mut targets: Vec<Option<Targets>> = Vec::new();
    for p in pairs {
        let harness = p.head_kernel.runtime == Runtime::Harness && p.base_kernel.runtime == Runtime::Harness;
        targets.push(if harness {
            Some((target_command(p.head_kernel, p.head_built)?, target_command(p.base_kernel, p.base_built)?))
        } else {
            None
        });
    }
    let keys: Vec<Option<(String, String)>> = pairs
        .iter()
        .zip(&targets)
        .map(|(p, t)| {
            let (head, base) = t.as_ref()?;
            Some((timing_key(p.head_kernel, head)?, timing_key(p.base_kernel, base)?))
        })
        .collect();
    let mut timed: Vec<Option<Timed>> = pairs.iter().map(|_| None).collect();
    for group in groups(&keys, opts.batch) {
        let first = group[0];
        let Some(group_targets) = &targets[first] else {
            timed[first] = Some(Timed { runs: ncu_rounds(&pairs[first], opts, shell)?, source: "ncu" });
            continue;
        };
        let members: Vec<&AbPair<'_>> = group.iter().map(|i| &pairs[*i]).collect();
        let runs = time_group(&members, group_targets, opts, shell)?;
        for (i, runs) in group.into_iter().zip(runs) {
            timed[i] = Some(Timed { runs: Some(runs), source: "harness" });
        }
    }
    // Every pair is in one group, so every pair was timed.
    Ok(timed.into_iter().map(|t| t.unwrap_or(Timed { runs: None, source: "harness" })).collect())
}

/// The rounds of the harness pairs `members` of one program, whose first member's
/// programs are `targets`: each member's runs, in their order. A member the rounds left
/// ambiguous, where as many rounds again could decide it
/// ([`more_rounds_could_decide`]), gets them, once, in a run of its own cases only.
fn time_group(
    members: &[&AbPair<'_>],
    targets: &Targets,
    opts: &AbOptions,
    shell: &Shell,
) -> Result<Vec<Vec<SideRun>>> {
    let program = program_name(members[0].head_kernel, &targets.0);
    shell.emit(&Event::TimingPlanned(TimingPlanned {
        kernels: members.iter().map(|m| m.head_kernel.name.clone()).collect(),
        program: Some(program.clone()),
        rounds: opts.rounds,
    }));
    // A group of one keeps its own `KPROF_CASE`; more than one select all their cases,
    // and so does a part of such a group.
    let shared = members.len() > 1;
    let mut runs = rounds_with_looks(members, targets, shared, opts, shell)?;
    let undecided: Vec<usize> = (0..members.len())
        .filter(|&i| {
            let k = members[i].head_kernel;
            let rounds = super::pair::to_rounds(k, &runs[i], "harness");
            more_rounds_could_decide(&time_change(&rounds, opts.tolerance_pct.unwrap_or(k.tolerance_pct)))
        })
        .collect();
    if undecided.is_empty() || opts.rounds == 0 {
        return Ok(runs);
    }
    shell.emit(&Event::TimingExtended(TimingExtended {
        kernels: undecided.iter().map(|&i| members[i].head_kernel.name.clone()).collect(),
        rounds: opts.rounds,
    }));
    let again: Vec<&AbPair<'_>> = undecided.iter().map(|&i| members[i]).collect();
    let more = run_group(&again, targets, shared, opts.rounds..2 * opts.rounds, opts, shell)?;
    for (i, extra) in undecided.into_iter().zip(more) {
        runs[i].extend(extra);
    }
    Ok(runs)
}

/// The planned rounds of `members`, each kernel's stopping early once its rounds put it
/// inside the tolerance ([`decided_early`]): the first [`FIRST_LOOK`] rounds together,
/// then one round at a time for the kernels still going. Each member's runs, in order.
fn rounds_with_looks(
    members: &[&AbPair<'_>],
    targets: &Targets,
    shared: bool,
    opts: &AbOptions,
    shell: &Shell,
) -> Result<Vec<Vec<SideRun>>> {
    let first = opts.rounds.min(FIRST_LOOK as u32);
    let mut runs = run_group(members, targets, shared, 0..first, opts, shell)?;
    let mut going: Vec<usize> = (0..members.len()).collect();
    for round in first..opts.rounds {
        let (stop, go): (Vec<usize>, Vec<usize>) = going.iter().partition(|&&i| {
            let k = members[i].head_kernel;
            let rounds = super::pair::to_rounds(k, &runs[i], "harness");
            decided_early(&rounds, opts.tolerance_pct.unwrap_or(k.tolerance_pct), opts.rounds as usize)
                .is_some()
        });
        if !stop.is_empty() {
            shell.emit(&Event::TimingStopped(TimingStopped {
                kernels: stop.iter().map(|&i| members[i].head_kernel.name.clone()).collect(),
                after: round,
                planned: opts.rounds,
            }));
        }
        going = go;
        if going.is_empty() {
            break;
        }
        let part: Vec<&AbPair<'_>> = going.iter().map(|&i| members[i]).collect();
        let more = run_group(&part, targets, shared, round..round + 1, opts, shell)?;
        for (&i, extra) in going.iter().zip(more) {
            runs[i].extend(extra);
        }
    }
    Ok(runs)
}

/// The rounds `rounds` of `members`, on the programs `targets`; with `shared`, the
/// programs select exactly the members' cases.
fn run_group(
    members: &[&AbPair<'_>],
    targets: &Targets,
    shared: bool,
    rounds: std::ops::Range<u32>,
    opts: &AbOptions,
    shell: &Shell,
) -> Result<Vec<Vec<SideRun>>> {
    let (mut head, mut base) = targets.clone();
    if shared {
        let head_cases = members.iter().filter_map(|p| p.head_kernel.case.as_deref());
        let base_cases = members.iter().filter_map(|p| p.base_kernel.case.as_deref());
        head.env.insert(contract::CASE.to_string(), crate::model::filter::alternation(head_cases));
        base.env.insert(contract::CASE.to_string(), crate::model::filter::alternation(base_cases));
    }
    let round_members: Vec<RoundMember<'_>> = members
        .iter()
        .map(|p| RoundMember {
            kernel: &p.head_kernel.name,
            base: MemberSide { dir: p.base_dir, case: p.base_kernel.case.as_deref() },
            head: MemberSide { dir: p.head_dir, case: p.head_kernel.case.as_deref() },
        })
        .collect();
    run_rounds(
        [RoundSide { side: Side::Base, target: &base }, RoundSide { side: Side::Head, target: &head }],
        &round_members,
        rounds,
        opts.timeout,
        shell,
    )
}

/// The program's name as the status line shows it: the cargo target's name, else the
/// command's file name.
fn program_name(kernel: &KernelPlan, target: &TargetCommand) -> String {
    match &kernel.target {
        PlannedTarget::Cargo(t) => t.name.clone(),
        PlannedTarget::Command(_) => target
            .program
            .file_name()
            .map_or_else(|| target.program.display().to_string(), |n| n.to_string_lossy().into_owned()),
    }
}

/// The rounds of a program that is not a harness bench: ncu's durations of the kernel's
/// launches in its window, each side's program under ncu in turn. Weaker evidence than
/// harness rounds (a few launches per round, each replayed by ncu with caches flushed, no
/// clock readings), and the report says so. `None` when a side was never profiled (no
/// kernel filter, or no profile to read the window and function from).
fn ncu_rounds(p: &AbPair<'_>, opts: &AbOptions, shell: &Shell) -> Result<Option<Vec<SideRun>>> {
    let k = p.head_kernel;
    shell.emit(&Event::TimingPlanned(TimingPlanned {
        kernels: vec![k.name.clone()],
        program: None,
        rounds: opts.rounds,
    }));
    let (head, base) =
        (Snapshot::load(p.head_dir.path(), "head").ok(), Snapshot::load(p.base_dir.path(), "base").ok());
    let (Some(head_filter), Some(base_filter), Some(hs), Some(bs)) =
        (k.filter.as_ref(), p.base_kernel.filter.as_ref(), head, base)
    else {
        shell.emit(&Event::note(
            About::Timing,
            format!(
                "`{}`: no kernel filter or no profile on a side: no timing rounds; the verdict rests on the \
                 counters",
                k.name
            ),
        ));
        return Ok(None);
    };
    shell.emit(&Event::note(
        About::Timing,
        format!(
            "`{}` runs as `{}`, not on the harness: its rounds are ncu's durations of the launches in its \
             window, weaker evidence than harness rounds",
            k.name,
            k.runtime.name()
        ),
    ));
    let window = |dir: &ProfileDir, plan: &KernelPlan| {
        crate::profile::run_manifest::RunManifest::read(dir)
            .ok()
            .and_then(|m| m.window)
            .map_or(plan.window, |w| w.window)
    };
    let head_target = target_command(k, p.head_built)?;
    let base_target = target_command(p.base_kernel, p.base_built)?;
    let head_ncu = ncu_of(k, p.head_dir)?;
    let base_ncu = ncu_of(p.base_kernel, p.base_dir)?;
    let sides = [
        NcuRoundSide {
            side: Side::Base,
            ncu: base_ncu.as_path(),
            target: &base_target,
            filter: base_filter,
            window: window(p.base_dir, p.base_kernel),
            clock_control: p.base_kernel.clock_control,
            privilege: p.base_kernel.privilege,
            dir: p.base_dir,
            function: Some(bs.kernel.kernel.as_str()).filter(|f| !f.is_empty()),
        },
        NcuRoundSide {
            side: Side::Head,
            ncu: head_ncu.as_path(),
            target: &head_target,
            filter: head_filter,
            window: window(p.head_dir, k),
            clock_control: k.clock_control,
            privilege: k.privilege,
            dir: p.head_dir,
            function: Some(hs.kernel.kernel.as_str()).filter(|f| !f.is_empty()),
        },
    ];
    Ok(Some(run_ncu_rounds(&k.name, sides, opts.rounds, opts.timeout, shell)?))
}

/// The ncu a side's profile ran: `profile/ncu_path` under `--sudo`, else as located.
fn ncu_of(k: &KernelPlan, dir: &ProfileDir) -> Result<PathBuf> {
    let root = dir.path().parent().unwrap_or(dir.path());
    if k.privilege == Privilege::Sudo {
        return Ok(crate::profile::root::read_ncu_path(root)?);
    }
    let file = crate::profile::root::ensure_ncu_path(root, None)?;
    crate::ncu::locate_ncu(std::env::var_os("NCU").as_deref(), std::env::var_os("PATH").as_deref(), &file)
        .map(|l| l.path)
        .map_err(|e| anyhow::anyhow!("{e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::model::kinds::LaunchWindow;
    use crate::model::stage::StageSelection;
    use crate::plan::StagePlan;

    fn kernel(name: &str, program: &str) -> KernelPlan {
        KernelPlan {
            args: vec!["--quick".into()],
            env: [("A".to_string(), "1".to_string())].into(),
            ..KernelPlan::synthetic(name, PlannedTarget::Command(vec![program.into()]), Runtime::Harness)
        }
    }

    fn key_of(k: &KernelPlan) -> Option<String> {
        timing_key(k, &target_command(k, None).unwrap())
    }

    #[test]
    fn kernels_differing_only_in_case_and_window_share_a_timing_key() {
        let naive = kernel("hgemm_naive", "/b/compute");
        let mut tiled = kernel("hgemm_tiled", "/b/compute");
        tiled.window = LaunchWindow::HarnessRange { launch_count: 3 };
        tiled.stages = StagePlan::Stages(StageSelection::All);
        assert!(key_of(&naive).is_some());
        assert_eq!(key_of(&naive), key_of(&tiled), "the case and the profiling window do not count");
        let other_program = kernel("copy", "/b/copy");
        let mut other_args = kernel("hgemm_tiled", "/b/compute");
        other_args.args.push("m=1024".into());
        let mut other_env = kernel("hgemm_tiled", "/b/compute");
        other_env.env.insert("KPROF_MIN_TIME".into(), "1s".into());
        let mut other_cwd = kernel("hgemm_tiled", "/b/compute");
        other_cwd.cwd = "/elsewhere".into();
        for apart in [&other_program, &other_args, &other_env, &other_cwd] {
            assert_ne!(key_of(&naive), key_of(apart), "{}", apart.name);
        }
        let mut no_case = kernel("hgemm_tiled", "/b/compute");
        no_case.case = None;
        let mut command = kernel("hgemm_tiled", "/b/compute");
        command.runtime = Runtime::Command;
        assert_eq!((key_of(&no_case), key_of(&command)), (None, None), "timed alone");
    }

    fn key(k: &str) -> Option<(String, String)> {
        Some((k.to_string(), k.to_string()))
    }

    #[test]
    fn pairs_of_one_program_on_both_sides_group_in_selection_order() {
        let keys = vec![
            key("compute"),
            None,
            key("copy"),
            key("compute"),
            Some(("compute".to_string(), "other".to_string())),
            None,
            key("copy"),
        ];
        assert_eq!(groups(&keys, true), [vec![0, 3], vec![1], vec![2, 6], vec![4], vec![5]]);
        assert_eq!(groups(&keys, false), (0..7).map(|i| vec![i]).collect::<Vec<_>>());
        assert!(groups(&[], true).is_empty());
    }
}
