//! The batched ncu runs: the command that runs one stage for a group of a batch's
//! kernels (what a run starts and a dry run shows), and its run into the batch's folder.

use anyhow::Result;
use kprof_contract::env as contract;

use super::shown_names;
use crate::collect::reason::Reason;
use crate::collect::run::{run_announced, KernelRun, StageRan};
use crate::model::filter::{alternation, KernelFilter};
use crate::ncu::command::{stage_command, StageCollection, StageRun, TargetCommand};
use crate::plan::KernelPlan;
use crate::process::{shell_comment, ProcessBuilder};
use crate::profile::ProfileDir;
use crate::shell::Shell;

/// The program and the ncu command that run `collection` once for the kernels `group` of
/// `members`, the page written into `batch_dir`: the first member's program with
/// `KPROF_CASE` and ncu's filter the alternations of their cases and filters (a plain
/// program's census picks: one kernel id with their invocations, see
/// [`super::invocations`]); with
/// `source_from_basic`, basic writes its report (in the batch's folder, or a kernel batched
/// alone's own profile) and the source stage imports it. What a run starts, and what a dry
/// run shows.
pub fn batched_command(
    members: &[KernelRun<'_>],
    group: &[usize],
    batch_dir: &ProfileDir,
    collection: &StageCollection,
    source_from_basic: bool,
) -> (TargetCommand, ProcessBuilder) {
    let first = &members[group[0]];
    let (filter, window) = if super::invocations::applies(first.kernel) {
        let kernels: Vec<&KernelPlan> = group.iter().map(|i| members[*i].kernel).collect();
        super::invocations::batched(&kernels)
    } else {
        let filters = group.iter().filter_map(|i| members[*i].kernel.filter.as_ref());
        (KernelFilter::regex(alternation(filters.map(|f| f.pattern.as_str()))), first.kernel.window)
    };
    let mut target: TargetCommand = first.target.clone();
    let cases: Vec<&str> = group.iter().filter_map(|i| members[*i].kernel.case.as_deref()).collect();
    if !cases.is_empty() {
        target.env.insert(contract::CASE.to_string(), alternation(cases));
    }
    let log = batch_dir.stage_raw_path(collection);
    // A kernel batched alone keeps basic's report in its own profile, where its run on the
    // single path writes it.
    let report_dir = if members.len() == 1 { members[0].dir } else { batch_dir };
    let report = source_from_basic.then(|| report_dir.basic_report_path());
    let cmd = stage_command(
        first.ncu,
        &StageRun {
            collection,
            filter: Some(&filter),
            window,
            clock_control: first.kernel.clock_control,
            log_file: &log,
            target: &target,
            privilege: first.kernel.privilege,
            ranges: &first.kernel.census.ncu_range_args(),
            report: report.as_deref(),
        },
    );
    (target, cmd)
}

/// Runs `collection` once for the kernels `group` of `members`, into `batch_dir`: the
/// command it ran, and how it ended.
pub(super) fn run_batched(
    members: &[KernelRun<'_>],
    group: &[usize],
    batch_dir: &ProfileDir,
    collection: &StageCollection,
    reason: &Reason,
    source_from_basic: bool,
    shell: &Shell,
) -> Result<(ProcessBuilder, StageRan)> {
    let first = &members[group[0]];
    let (target, mut cmd) = batched_command(members, group, batch_dir, collection, source_from_basic);
    if *reason == Reason::SassOnly {
        // ncu prints no page for `cuda,sass` without line info; `sass` it prints.
        cmd = crate::ncu::command::sass_only(&cmd);
    }
    crate::profile::fs::append(
        &batch_dir.commands_script_path(),
        &format!("# Stage {} ({})\n{cmd}\n\n", collection.label(), shell_comment(&reason.to_string())),
    )?;
    // Messages name every kernel of the run.
    let mut shown = first.kernel.clone();
    shown.name = shown_names(members, group);
    let run = KernelRun {
        dir: batch_dir,
        kernel: &shown,
        target: &target,
        ncu: first.ncu,
        first: &[],
        timeout: first.timeout,
        batch_picks: false,
    };
    let ran = run_announced(&run, collection, &cmd, &Reason::Batched(Box::new(reason.clone())), shell);
    Ok((cmd, ran))
}
