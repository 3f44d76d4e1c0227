//! Batching: the harness kernels of one program profiled together, one ncu run per stage.
//!
//! Profiling each kernel on its own costs one ncu start-up and one run of the program's
//! set-up (NVRTC, inputs) per kernel and stage. Kernels of one harness program that share
//! everything but their case (program, arguments, environment, window, clocks, privilege,
//! stages) run instead as one ncu run per stage: the harness sets up every selected case
//! and launches each inside the one profiling range (`KPROF_CASE` is the alternation of
//! their cases), and ncu's filter is the alternation of their filters. ncu replays each
//! profiled launch on its own, flushing the caches before every pass by default, so a
//! kernel's counters do not depend on its neighbours in the batch.
//!
//! The page is written once, under a hidden `.batch_<id>` folder beside the profiles, and
//! split: each kernel's `details/` gets the page with only its rows (ncu's own lines, the
//! header and the units as written). Follow-ups are chosen per kernel from its rows and
//! run batched again, one run per chosen stage. Each profile's `commands.sh` still holds
//! the commands that replay that kernel alone; the batched command is recorded beside it
//! and in `run_manifest.yaml`. A kernel the batch cannot serve (no rows of its own, rows
//! another kernel's filter also matches, a page that cannot be split) is profiled on its
//! own afterwards, with the census, window fitting and narrowing of the single path.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::Result;
use kprof_contract::env as contract;

use super::discover::function_name;
use super::failure::{stage_failure, StageEnd};
use super::{append_command, follow_up, run_announced, KernelRun};
use crate::analyze::rules::Rules;
use crate::model::filter::KernelFilter;
use crate::model::kinds::{Runtime, WindowOrigin};
use crate::model::stage::Stage;
use crate::ncu::command::{stage_command, StageCollection, StageRun, TargetCommand};
use crate::ncu::parse::RawPage;
use crate::plan::KernelPlan;
use crate::process::shell_comment;
use crate::profile::run_manifest::WindowRecord;
use crate::profile::{ProfileDir, RunManifest, StageOutcome, StageStatus};
use crate::shell::Shell;

/// What makes kernels batchable together, or `None` when `kernel` runs on its own: a
/// harness target with a filter and a case, whose stages need no per-kernel rerun (the
/// source stage may run again as SASS only).
pub fn batch_key(kernel: &KernelPlan, target: &TargetCommand) -> Option<String> {
    if kernel.runtime != Runtime::Harness || kernel.filter.is_none() || kernel.case.is_none() {
        return None;
    }
    let stages = kernel.stage_collections();
    if stages.contains(&StageCollection::Named(Stage::Source)) || stages.contains(&StageCollection::Discovery)
    {
        return None;
    }
    let mut env = target.env.clone();
    env.remove(contract::CASE);
    Some(format!(
        "{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
        target.program,
        target.args,
        target.cwd,
        env,
        kernel.window,
        kernel.clock_control,
        kernel.privilege,
        kernel.stages
    ))
}

/// How a batch ended for each of its kernels.
pub enum Served {
    /// Its stages ran in the batch; the manifest is written.
    Done,
    /// It is to be profiled on its own (the reason was said).
    Alone,
}

/// Runs the stages of `members` (one program, the same [`batch_key`]) batched, writes
/// each served kernel's pages and manifest, and says which must run alone. A stage that
/// fails as a whole (permission, timeout, a signal, ncu failing) ends the batch with that
/// error, after every member's manifest records it.
pub fn collect_batch(members: &[KernelRun<'_>], rules: &Rules, shell: &Shell) -> Result<Vec<Served>> {
    let started = Instant::now();
    let first = &members[0];
    let parent = first.dir.path().parent().unwrap_or(first.dir.path());
    let batch_dir = ProfileDir::create_unique(parent, &format!(".batch_{}", first.dir.id()))?;
    crate::profile::fs::write_new(
        &batch_dir.commands_script_path(),
        &format!(
            "#!/bin/sh\n# The batched ncu runs of {} kernels of one program ({}); each profile's own\n\
             # commands.sh replays its kernel alone.\nset -e\n\n",
            members.len(),
            members.iter().map(|m| m.kernel.name.as_str()).collect::<Vec<_>>().join(", ")
        ),
    )?;
    let mut manifests: Vec<RunManifest> = members
        .iter()
        .map(|m| {
            let mut manifest = RunManifest::new(&m.kernel.name, m.kernel.privilege);
            manifest.window = Some(WindowRecord::planned(m.kernel.window, WindowOrigin::Default));
            manifest
        })
        .collect();
    let mut alone: BTreeMap<usize, String> = BTreeMap::new();
    let mut ncu_ms = 0u64;
    let names: Vec<&str> = members.iter().map(|m| m.kernel.name.as_str()).collect();
    shell.status(format!(
        "Batching {} kernels of `{}` into one ncu run per stage: {}",
        members.len(),
        first.target.program.display(),
        names.join(", ")
    ));
    let auto = first.kernel.stages.is_auto();
    let all: Vec<usize> = (0..members.len()).collect();
    let mut runs: Vec<(StageCollection, Vec<usize>, String)> = first
        .kernel
        .stage_collections()
        .into_iter()
        .map(|c| {
            (c, all.clone(), if auto { "auto: always first".to_string() } else { "requested".to_string() })
        })
        .collect();
    let mut next = 0;
    while next < runs.len() {
        let (collection, group, why) = runs[next].clone();
        next += 1;
        let group: Vec<usize> = group.into_iter().filter(|i| !alone.contains_key(i)).collect();
        if group.is_empty() {
            continue;
        }
        let ran = run_batched(members, &group, &batch_dir, &collection, &why, shell)?;
        ncu_ms += ran.outcome.wall_ms;
        match ran.outcome.status {
            StageStatus::Ok => {}
            StageStatus::NoMatch => {
                for i in &group {
                    alone.insert(*i, format!("the batched stage {} matched no launch", collection.name()));
                }
                continue;
            }
            status => {
                // The whole batch ends as a single run would: every member says so.
                for i in &group {
                    manifests[*i].stages.push(ran.outcome.clone());
                    manifests[*i].status = status;
                    manifests[*i].write(members[*i].dir)?;
                }
                let end = StageEnd {
                    status,
                    signal: ran.signal,
                    problem: ran.problem,
                    stage: collection.name().to_string(),
                };
                let k = members[group[0]].kernel;
                let everything = KernelFilter::regex(".*");
                let log = ran.outcome.log.clone().unwrap_or_default();
                return Err(
                    stage_failure(&end, k, k.filter.as_ref().unwrap_or(&everything), &log, &ran.cmd).into()
                );
            }
        }
        let text = std::fs::read_to_string(batch_dir.stage_raw_path(&collection)).unwrap_or_default();
        let Ok(page) = ran.page else {
            for i in &group {
                alone.insert(*i, "the batched page could not be read".into());
            }
            continue;
        };
        let rows = split_rows(&page, members, &group);
        let mut follow: BTreeMap<Stage, (Vec<usize>, Vec<String>)> = BTreeMap::new();
        for i in &group {
            let m = &members[*i];
            let mine = &rows[i];
            let Some(own) = own_page(&page, &text, mine) else {
                alone.insert(
                    *i,
                    "its rows could not be told apart from the other kernels' in the batched page".into(),
                );
                continue;
            };
            crate::profile::fs::write_atomic(&m.dir.stage_raw_path(&collection), &own.0)?;
            let mut outcome = ran.outcome.clone();
            outcome.why = format!("{why}; batched with {} kernel(s) of this program", group.len());
            outcome.passes = own
                .1
                .launches()
                .filter_map(|l| l.number("profiler__replayer_passes"))
                .map(|v| v as u32)
                .collect();
            outcome.launches = own.1.launches().count();
            manifests[*i].stages.push(outcome);
            append_command(
                m.dir,
                &format!(
                    "# Stage {} ran batched with {} kernel(s) of this program, as:\n# {}\n",
                    collection.name(),
                    group.len(),
                    shell_comment(&ran.cmd.to_string())
                ),
            )?;
            if auto && collection == StageCollection::Named(Stage::Basic) {
                let filter = m.kernel.filter.clone().unwrap_or_else(|| KernelFilter::regex(".*"));
                let (stage, reason) = follow_up(Ok(own.1), rules, &filter)?;
                shell.status(format!("Follow-up for `{}`: {stage} ({reason})", m.kernel.name));
                // What this kernel alone would run: its commands.sh stays replayable alone.
                let alone_cmd = stage_command(
                    m.ncu,
                    &StageRun {
                        collection: &StageCollection::Named(stage),
                        filter: Some(&filter),
                        window: m.kernel.window,
                        clock_control: m.kernel.clock_control,
                        log_file: &m.dir.stage_raw_path(&StageCollection::Named(stage)),
                        target: m.target,
                        privilege: m.kernel.privilege,
                    },
                );
                append_command(
                    m.dir,
                    &format!("# Stage 2: {stage}, chosen: {}\n{alone_cmd}\n", shell_comment(&reason)),
                )?;
                let entry = follow.entry(stage).or_default();
                entry.0.push(*i);
                entry.1.push(format!("`{}`: {reason}", m.kernel.name));
            }
        }
        for (stage, (group, reasons)) in follow {
            runs.push((
                StageCollection::Named(stage),
                group,
                format!("auto follow-up: {}", reasons.join("; ")),
            ));
        }
    }
    let overhead = (started.elapsed().as_millis() as u64).saturating_sub(ncu_ms) / members.len() as u64;
    let mut served = Vec::new();
    for (i, mut manifest) in manifests.into_iter().enumerate() {
        match alone.remove(&i) {
            Some(why) => {
                shell.status(format!("`{}` runs on its own: {why}", members[i].kernel.name));
                served.push(Served::Alone);
            }
            None => {
                manifest.kprof_overhead_ms = overhead;
                manifest.write(members[i].dir)?;
                served.push(Served::Done);
            }
        }
    }
    Ok(served)
}

/// One batched stage as it ran.
struct BatchRan {
    outcome: StageOutcome,
    page: Result<RawPage, String>,
    cmd: crate::process::ProcessBuilder,
    signal: Option<crate::error::Signal>,
    problem: Option<String>,
}

/// Runs `collection` once for the kernels `group` of `members`, into `batch_dir`.
fn run_batched(
    members: &[KernelRun<'_>],
    group: &[usize],
    batch_dir: &ProfileDir,
    collection: &StageCollection,
    why: &str,
    shell: &Shell,
) -> Result<BatchRan> {
    let first = &members[group[0]];
    let alternation =
        |parts: Vec<&str>| parts.iter().map(|p| format!("(?:{p})")).collect::<Vec<_>>().join("|");
    let filter = KernelFilter::regex(alternation(
        group.iter().filter_map(|i| members[*i].kernel.filter.as_ref()).map(|f| f.pattern.as_str()).collect(),
    ));
    let mut target: TargetCommand = first.target.clone();
    target.env.insert(
        contract::CASE.to_string(),
        alternation(group.iter().filter_map(|i| members[*i].kernel.case.as_deref()).collect()),
    );
    let log = batch_dir.stage_raw_path(collection);
    let cmd = stage_command(
        first.ncu,
        &StageRun {
            collection,
            filter: Some(&filter),
            window: first.kernel.window,
            clock_control: first.kernel.clock_control,
            log_file: &log,
            target: &target,
            privilege: first.kernel.privilege,
        },
    );
    crate::profile::fs::append(
        &batch_dir.commands_script_path(),
        &format!("# Stage {} ({})\n{cmd}\n\n", collection.name(), shell_comment(why)),
    )?;
    // Messages name every kernel of the run.
    let mut shown = first.kernel.clone();
    shown.name = group.iter().map(|i| members[*i].kernel.name.as_str()).collect::<Vec<_>>().join(" + ");
    let run = KernelRun {
        dir: batch_dir,
        kernel: &shown,
        target: &target,
        ncu: first.ncu,
        first: &[],
        timeout: first.timeout,
    };
    let ran = run_announced(&run, collection, &cmd, format!("{why}; batched"), shell);
    Ok(BatchRan { outcome: ran.outcome, page: ran.page, cmd, signal: ran.signal, problem: ran.problem })
}

/// For each member in `group`, the indices of the page's rows that are its own. A row's
/// function goes to the member whose filter matches it and matches the fewest functions of
/// the page (`.*hgemm.*` and `.*hgemm_tiled.*`: `hgemm_tiled` goes to the second, as each
/// kernel's own case would have launched it); a function two such members tie for
/// belongs to neither, and they run alone.
fn split_rows(page: &RawPage, members: &[KernelRun<'_>], group: &[usize]) -> BTreeMap<usize, Vec<usize>> {
    let matches = |i: usize, name: &str, function: &str| {
        members[i].kernel.filter.as_ref().is_some_and(|f| f.matches(name) || f.matches(function))
    };
    let mut functions: Vec<(String, String)> = Vec::new();
    for l in page.launches() {
        let name = l.kernel_name().to_string();
        if !functions.iter().any(|(n, _)| *n == name) {
            let function = function_name(&name);
            functions.push((name, function));
        }
    }
    let breadth: BTreeMap<usize, usize> =
        group.iter().map(|i| (*i, functions.iter().filter(|(n, f)| matches(*i, n, f)).count())).collect();
    let mut rows: BTreeMap<usize, Vec<usize>> = group.iter().map(|i| (*i, Vec::new())).collect();
    let mut tied: Vec<usize> = Vec::new();
    for l in page.launches() {
        let name = l.kernel_name();
        let function = function_name(name);
        let owners: Vec<usize> = group.iter().copied().filter(|i| matches(*i, name, &function)).collect();
        let Some(narrowest) = owners.iter().map(|i| breadth[i]).min() else { continue };
        let best: Vec<usize> = owners.into_iter().filter(|i| breadth[i] == narrowest).collect();
        match best.as_slice() {
            [one] => rows.entry(*one).or_default().push(l.index()),
            several => tied.extend_from_slice(several),
        }
    }
    for i in tied {
        rows.insert(i, Vec::new());
    }
    rows
}

/// The page with only `rows`, as text and parsed, when it has any and reads back whole.
fn own_page(page: &RawPage, text: &str, rows: &[usize]) -> Option<(String, RawPage)> {
    if rows.is_empty() {
        return None;
    }
    let own = page.text_with_rows(text, |r| rows.contains(&r))?;
    let parsed = RawPage::parse(&own, "batched page").ok()?;
    (parsed.rows.len() == rows.len() && parsed.columns == page.columns).then_some((own, parsed))
}
