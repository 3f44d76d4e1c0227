//! Corrections a single run makes once it has seen the program: the census of launches,
//! a filter narrowed to one of several matching kernels, and the first page of a stage
//! that runs again kept aside. The handlers of [`super::single`] call them and decide
//! what runs next.

use anyhow::Result;

use super::discover::{self, Census};
use super::reason::Reason;
use super::run::run_announced;
use super::single::Single;
use super::{append_command, window};
use crate::error::Signal;
use crate::model::filter::KernelFilter;
use crate::ncu::command::StageCollection;
use crate::ncu::parse::RawPage;
use crate::process;
use crate::profile::{ProfileDir, RunManifest, StageStatus};

/// The census of launches: the one discovery took, or a new durations-only pass over
/// every launch. `None` when that pass failed (the caller then explains without it); a
/// signal during it ends the run.
pub(super) fn census<'s>(single: &'s mut Single<'_, '_>) -> Result<Option<&'s Census>> {
    if single.st.census.is_none() {
        let c = StageCollection::Discovery;
        let cmd = single.st.command(single.run, &c);
        append_command(single.run.dir, &format!("# {}\n{cmd}\n", Reason::Census))?;
        let ran = run_announced(single.run, &c, &cmd, &Reason::Census, single.shell);
        single.ncu_ms += ran.outcome.wall_ms;
        let status = ran.outcome.status;
        single.manifest.stages.push(ran.outcome);
        if status == StageStatus::Interrupted {
            let signal = ran.signal.or_else(process::pending_signal).unwrap_or(Signal::Int);
            single.manifest.status = status;
            return Err(process::interrupted(signal, "during the census").into());
        }
        if let (StageStatus::Ok, Ok(page)) = (status, &ran.page) {
            single.st.census = Some(Census::from_page(page, window::census_cap(single.st.window)));
        }
    }
    Ok(single.st.census.as_ref())
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
pub(super) fn narrow(single: &mut Single<'_, '_>, seen: &[String]) -> Result<Option<String>> {
    let Some(filter) = single.st.filter.clone() else { return Ok(None) };
    let window = single.st.window;
    let Some(counted) = census(single)?.cloned() else { return Ok(None) };
    let run = single.run;
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
    single.shell.warn(format!(
        "`{hint}` matches {} kernels: {}; profiling `{}`, the costliest (pass --kernel ={} or another exact name to choose)",
        names.len(),
        names.join(", "),
        top.function,
        top.function
    ));
    let chosen = KernelFilter::function(&top.function);
    let launches = counted.launches_matching(&chosen);
    single.st.narrowed = true;
    single.st.filter = Some(chosen);
    if !single.st.fitted {
        if let Some((w, why)) = window::fit(window, run.kernel.window_origin, launches) {
            single.fit_window(w, why);
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
