//! Corrections a single run makes once it has seen the program: the census of launches,
//! a filter narrowed to one of several matching kernels, and the first page of a stage
//! that runs again kept aside. They are methods of [`Single`] written apart from its
//! handlers, which call them and decide what runs next; this file imports `single`,
//! never the other way.

use anyhow::Result;

use super::discover::Census;
use super::reason::Reason;
use super::run::{append_command, run_announced};
use super::single::Single;
use super::window;
use crate::error::Signal;
use crate::events::Event;
use crate::model::filter::KernelFilter;
use crate::ncu::command::StageCollection;
use crate::process;
use crate::profile::StageStatus;

impl Single<'_, '_> {
    /// The census of launches: the one discovery took, or a new durations-only pass over
    /// every launch. `None` when that pass failed (the caller then explains without it); a
    /// signal during it ends the run.
    pub(super) fn census(&mut self) -> Result<Option<&Census>> {
        if self.st.census.is_none() {
            let c = StageCollection::Discovery;
            let cmd = self.st.command(self.run, &c);
            append_command(self.run.dir, &format!("# {}\n{cmd}\n", Reason::Census))?;
            let ran = run_announced(self.run, &c, &cmd, &Reason::Census, self.shell);
            self.ncu_ms += ran.outcome.wall_ms;
            let status = ran.outcome.status;
            self.manifest.stages.push(ran.outcome);
            if status == StageStatus::Interrupted {
                let signal = ran.signal.or_else(process::pending_signal).unwrap_or(Signal::Int);
                self.manifest.status = status;
                return Err(process::interrupted(signal, "during the census").into());
            }
            if let (StageStatus::Ok, Ok(page)) = (status, &ran.page) {
                self.st.census = Some(Census::from_page(
                    page,
                    window::census_cap(self.st.window, self.run.kernel.census.launch_cap),
                ));
            }
        }
        Ok(self.st.census.as_ref())
    }

    /// A filter that matched several kernels (`seen` in the first page): the census ranks
    /// them, the costliest is chosen, the filter narrowed to exactly it and the window fitted
    /// to its launches. Returns the chosen function, or `None` when there is no census.
    pub(super) fn narrow(&mut self, seen: &[String]) -> Result<Option<String>> {
        let Some(filter) = self.st.filter.clone() else { return Ok(None) };
        let window = self.st.window;
        let Some(counted) = self.census()?.cloned() else { return Ok(None) };
        let run = self.run;
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
        self.shell.emit(&Event::HintNarrowed {
            hint: hint.to_string(),
            kernels: names.iter().map(|n| n.to_string()).collect(),
            chosen: top.function.clone(),
        });
        let chosen = KernelFilter::function(&top.function);
        let launches = counted.launches_matching(&chosen);
        self.st.narrowed = true;
        self.st.filter = Some(chosen);
        if !self.st.fitted {
            if let Some((w, why)) = window::fit(window, run.kernel.window_origin, launches) {
                self.fit_window(w, why);
            }
        }
        Ok(Some(top.function.clone()))
    }

    /// Moves the page of a stage that runs again aside, and points its manifest entry at it.
    pub(super) fn set_aside(&mut self, collection: &StageCollection) -> Result<()> {
        if let Some(rel) = self.run.dir.supersede_page(collection)? {
            if let Some(last) = self.manifest.stages.iter_mut().rev().find(|s| s.stage == collection.name()) {
                last.output = rel;
            }
        }
        Ok(())
    }
}
