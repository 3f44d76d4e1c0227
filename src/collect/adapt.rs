//! Corrections a run makes once it has seen the program: the census of launches, a
//! filter narrowed to one of several matching kernels, and a stage queued again with a
//! fitted window or a narrower filter (its first page kept aside).

use std::collections::VecDeque;

use anyhow::Result;

use super::discover::{self, Census};
use super::{append_command, run_announced, window, KernelRun, Pending, State};
use crate::error::Signal;
use crate::model::filter::KernelFilter;
use crate::ncu::command::StageCollection;
use crate::ncu::parse::RawPage;
use crate::process;
use crate::profile::run_manifest::WindowRecord;
use crate::profile::{ProfileDir, RunManifest, StageStatus};
use crate::shell::Shell;

/// The census of launches: the one discovery took, or a new durations-only pass over
/// every launch. `None` when that pass failed (the caller then explains without it); a
/// signal during it ends the run.
pub(super) fn census<'s>(
    run: &KernelRun<'_>,
    st: &'s mut State,
    manifest: &mut RunManifest,
    ncu_ms: &mut u64,
    shell: &Shell,
) -> Result<Option<&'s Census>> {
    if st.census.is_none() {
        let c = StageCollection::Discovery;
        let cmd = st.command(run, &c);
        let why = "census: count every kernel's launches (durations only)".to_string();
        append_command(run.dir, &format!("# {why}\n{cmd}\n"))?;
        let ran = run_announced(run, &c, &cmd, why, shell);
        *ncu_ms += ran.outcome.wall_ms;
        let status = ran.outcome.status;
        manifest.stages.push(ran.outcome);
        if status == StageStatus::Interrupted {
            let signal = ran.signal.or_else(process::pending_signal).unwrap_or(Signal::Int);
            manifest.status = status;
            return Err(process::interrupted(signal, "during the census").into());
        }
        if let (StageStatus::Ok, Ok(page)) = (status, &ran.page) {
            st.census = Some(Census::from_page(page, window::census_cap(st.window)));
        }
    }
    Ok(st.census.as_ref())
}

/// The distinct functions of a page's launches that `filter` matches, in page order.
pub(super) fn functions_matching(page: &RawPage, filter: &KernelFilter) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in page.launches() {
        let f = discover::function_name(l.kernel_name());
        if filter.matches(&f) && !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

/// A filter that matched several kernels (`seen` in the first page): the census ranks
/// them, the costliest is chosen, the filter narrowed to exactly it and the window fitted
/// to its launches. Returns the chosen function, or `None` when there is no census.
pub(super) fn narrow(
    run: &KernelRun<'_>,
    st: &mut State,
    manifest: &mut RunManifest,
    ncu_ms: &mut u64,
    shell: &Shell,
    seen: &[String],
) -> Result<Option<String>> {
    let Some(filter) = st.filter.clone() else { return Ok(None) };
    let window = st.window;
    let Some(counted) = census(run, st, manifest, ncu_ms, shell)?.cloned() else { return Ok(None) };
    let ranked = counted.matching(&filter);
    let Some(top) = ranked.first() else { return Ok(None) };
    let names: Vec<String> = ranked
        .iter()
        .map(|c| {
            format!(
                "{} ({} launch(es), {})",
                c.function,
                c.launches,
                crate::units::duration(c.total_duration_ns)
            )
        })
        .collect();
    let hint = &run.kernel.name;
    counted.write_candidates(
        run.dir,
        &top.function,
        &format!(
            "`{hint}` matched {} kernels ({}); the costliest by total duration was chosen",
            ranked.len().max(seen.len()),
            filter.to_ncu_arg()
        ),
    )?;
    shell.warn(format!(
        "`{hint}` matches {} kernels: {}; profiling `{}`, the costliest (pass --kernel ={} or another exact name to choose)",
        names.len(),
        names.join(", "),
        top.function,
        top.function
    ));
    let chosen = KernelFilter::function(&top.function);
    let launches = counted.launches_matching(&chosen);
    st.narrowed = true;
    st.filter = Some(chosen);
    if !st.fitted {
        if let Some((w, why)) = window::fit(window, run.kernel.window_origin, launches) {
            shell.status(format!("Window: {why} ({})", w.describe()));
            st.fitted = true;
            st.window = w;
            manifest.window = Some(WindowRecord::fitted(w, why));
        }
    }
    Ok(Some(top.function.clone()))
}

/// Moves the page of a stage that runs again aside, and points its manifest entry at it.
pub(super) fn set_aside(
    dir: &ProfileDir,
    collection: &StageCollection,
    manifest: &mut RunManifest,
) -> Result<()> {
    if let Some(rel) = dir.supersede_page(collection)? {
        if let Some(last) = manifest.stages.iter_mut().rev().find(|s| s.stage == collection.name()) {
            last.output = rel;
        }
    }
    Ok(())
}

/// Puts `collection` back at the front of the queue, and rebuilds the commands of the
/// stages after it (they run with the new filter or window too).
pub(super) fn requeue(queue: &mut VecDeque<Pending>, collection: StageCollection, why: &str) {
    for p in queue.iter_mut() {
        p.cmd = None;
    }
    queue.push_front(Pending { collection, cmd: None, why: why.to_string() });
}
