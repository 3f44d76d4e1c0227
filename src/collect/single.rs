//! One kernel's stages as a [`Unit`] of the stage loop: a stage runs, and one handler per
//! situation says what comes next. A miss fits the window to the census and runs the
//! stage again, or fails with the census's explanation; a stage that did not end `ok`
//! fails the run; a source page without line info runs again as SASS only; discovery
//! chooses the kernel and queues the stages for it; a first page whose hint matched
//! several kernels narrows the filter and runs again; basic's metrics choose `auto`'s
//! follow-up. What the run learnt (filter, window, census) is [`State`], which builds
//! the commands of the stages still to come. The corrections the handlers call (the
//! census, narrowing, a page set aside) are methods written in `adapt.rs`.

use anyhow::Result;

use super::discover::{self, functions_matching, Census};
use super::failure::{no_match, stage_failure, StageEnd};
use super::follow_up::follow_up;
use super::queue::{Next, Unit};
use super::reason::Reason;
use super::run::{append_command, run_announced, KernelRun, StageRan};
use super::window;
use crate::analyze::rules::Rules;
use crate::events::Event;
use crate::model::filter::KernelFilter;
use crate::model::kinds::LaunchWindow;
use crate::model::stage::Stage;
use crate::ncu::command::{stage_command, StageCollection, StageRun};
use crate::ncu::parse::RawPage;
use crate::process::ProcessBuilder;
use crate::profile::run_manifest::WindowRecord;
use crate::profile::{RunManifest, StageStatus};
use crate::shell::Shell;

/// A stage waiting to run: its command is built when it runs, from the filter and window
/// of that moment, unless it was written to `commands.sh` before the run.
pub(super) struct Pending {
    pub collection: StageCollection,
    pub cmd: Option<ProcessBuilder>,
    pub reason: Reason,
}

impl Pending {
    /// `collection` to run for `reason`, its command built when it runs.
    fn later(collection: StageCollection, reason: Reason) -> Pending {
        Pending { collection, cmd: None, reason }
    }
}

/// What the run has learnt so far: the filter and window the next stages use, the census
/// of launches, and which one-time corrections were made.
pub(super) struct State {
    pub filter: Option<KernelFilter>,
    pub window: LaunchWindow,
    pub census: Option<Census>,
    /// The window was fitted (at most once).
    pub fitted: bool,
    /// A hint that matched several kernels was narrowed to one (at most once).
    pub narrowed: bool,
}

impl State {
    /// The command of `collection` with the filter and window of now (a discovery or
    /// census pass: every kernel, from the first launch).
    pub fn command(&self, run: &KernelRun<'_>, collection: &StageCollection) -> ProcessBuilder {
        let log = run.dir.stage_raw_path(collection);
        let discovery = *collection == StageCollection::Discovery;
        let cap = run.kernel.census.launch_cap;
        let report = run.kernel.source_from_basic().then(|| run.dir.basic_report_path());
        stage_command(
            run.ncu,
            &StageRun {
                collection,
                filter: if discovery { None } else { self.filter.as_ref() },
                window: if discovery { window::census_window(self.window, cap) } else { self.window },
                clock_control: run.kernel.clock_control,
                log_file: &log,
                target: run.target,
                privilege: run.kernel.privilege,
                ranges: &run.kernel.census.ncu_range_args(),
                report: report.as_deref(),
            },
        )
    }
}

/// One kernel's run through the stage loop.
pub(super) struct Single<'r, 'a> {
    pub run: &'r KernelRun<'a>,
    rules: &'r Rules,
    pub shell: &'r Shell,
    pub manifest: RunManifest,
    /// Time spent inside ncu, ms.
    pub ncu_ms: u64,
    pub st: State,
    /// Stage commands written to `commands.sh` so far (they are numbered).
    written: usize,
    /// Whether the first page with rows of the filter was checked for several kernels.
    first_page_checked: bool,
    /// Whether the source stage already runs as SASS only.
    sass_only: bool,
    auto: bool,
}

impl<'r, 'a> Single<'r, 'a> {
    /// The run of `run`'s plan, before any stage, and the stages it starts with.
    pub fn new(run: &'r KernelRun<'a>, rules: &'r Rules, shell: &'r Shell) -> (Self, Vec<Pending>) {
        let kernel = run.kernel;
        let mut manifest = RunManifest::new(&kernel.name, kernel.privilege);
        // The census that picked this kernel, when it ran in this directory.
        manifest.stages = RunManifest::earlier_stages(run.dir);
        manifest.window = Some(WindowRecord::planned(kernel.window, kernel.window_origin));
        manifest.ld_library_path = kernel.env.get("LD_LIBRARY_PATH").cloned();
        let auto = kernel.stages.is_auto();
        let first = run
            .first
            .iter()
            .map(|(c, p)| Pending {
                collection: c.clone(),
                cmd: Some(p.clone()),
                reason: Reason::first(auto, c),
            })
            .collect();
        let st = State {
            filter: kernel.filter.clone(),
            window: kernel.window,
            census: None,
            fitted: false,
            narrowed: false,
        };
        let unit = Single {
            run,
            rules,
            shell,
            manifest,
            ncu_ms: 0,
            st,
            written: run.first.len(),
            first_page_checked: false,
            sass_only: false,
            auto,
        };
        (unit, first)
    }

    /// The stage's command: the one written before the run, or one built now and
    /// written to `commands.sh` under the next number.
    fn command_for(&mut self, next: &mut Pending) -> Result<ProcessBuilder> {
        if let Some(cmd) = next.cmd.take() {
            return Ok(cmd);
        }
        let mut cmd = self.st.command(self.run, &next.collection);
        if next.reason == Reason::SassOnly {
            // ncu prints no page at all for `cuda,sass` without line info; `sass` it prints.
            cmd = crate::ncu::command::sass_only(&cmd);
        }
        self.written += 1;
        let about = next.reason.script_comment(next.collection.name());
        append_command(self.run.dir, &format!("# Stage {}: {about}\n{cmd}\n", self.written))?;
        Ok(cmd)
    }

    /// Uses the fitted window `w` from now on, and says so.
    pub fn fit_window(&mut self, w: LaunchWindow, why: String) {
        self.shell.emit(&Event::WindowFitted {
            kernel: self.run.kernel.name.clone(),
            window: w.describe(),
            why: why.clone(),
        });
        self.st.fitted = true;
        self.st.window = w;
        self.manifest.window = Some(WindowRecord::fitted(w, why));
    }

    /// A stage whose filter matched no launch: the window fitted to the census and the
    /// stage again, or the run ends with what the census saw.
    fn on_no_match(
        &mut self,
        collection: StageCollection,
        filter: &KernelFilter,
        log: &str,
    ) -> Result<Next<Pending>> {
        let origin = self.run.kernel.window_origin;
        let matched = self.census()?.map(|c| c.launches_matching(filter));
        let fitted = matched.filter(|_| !self.st.fitted).and_then(|n| window::fit(self.st.window, origin, n));
        if let Some((w, why)) = fitted {
            self.fit_window(w, why.clone());
            self.set_aside(&collection)?;
            return Ok(Next::Requeue(Pending::later(collection, Reason::WindowFitted(why))));
        }
        self.manifest.status = StageStatus::NoMatch;
        let failure = no_match(self.run.kernel, filter, self.st.window, self.st.census.as_ref(), log);
        Ok(Next::Fail(failure.into()))
    }

    /// A stage that did not end `ok`: the run ends, saying why and what fixes it.
    fn on_failure(
        &mut self,
        collection: &StageCollection,
        ran: StageRan,
        cmd: &ProcessBuilder,
    ) -> Next<Pending> {
        let status = ran.outcome.status;
        self.manifest.status = status;
        let everything = KernelFilter::regex(".*");
        let f = self.st.filter.as_ref().unwrap_or(&everything);
        let end = StageEnd {
            status,
            signal: ran.signal,
            problem: ran.problem,
            stage: collection.name().to_string(),
        };
        let log = ran.outcome.log.as_deref().unwrap_or("");
        Next::Fail(stage_failure(&end, self.run.kernel, f, log, cmd).into())
    }

    /// `auto`'s source stage failed: said, its page (if any) set aside, and the run goes
    /// on without hot lines.
    fn on_hot_lines_failed(&mut self, collection: &StageCollection, ran: StageRan) -> Result<Next<Pending>> {
        self.set_aside(collection)?;
        self.shell.emit(&Event::HotLinesMissing {
            kernel: self.run.kernel.name.clone(),
            why: super::failure::hot_lines_problem(&ran),
        });
        Ok(Next::Done)
    }

    /// A source page of kernels without line info: said once, and the stage again as
    /// SASS only (its first page kept aside).
    fn on_no_line_info(&mut self, collection: StageCollection, kernels: &[String]) -> Result<Next<Pending>> {
        // Each kernel once (a window of several launches lists it per launch); a closed
        // library's kernels are said apart, with no advice to rebuild them.
        let mut own: Vec<String> = Vec::new();
        let mut libraries: Vec<(String, String)> = Vec::new();
        for k in kernels {
            match crate::analyze::library::marked(k) {
                Some((lib, _)) if !libraries.iter().any(|(n, _)| n == k) => {
                    libraries.push((k.clone(), lib.name().to_string()));
                }
                Some(_) => {}
                None if !own.contains(k) => own.push(k.clone()),
                None => {}
            }
        }
        if !own.is_empty() {
            self.shell.emit(&Event::NoLineInfo {
                kernels: own,
                advice: crate::analyze::hotspots::LINE_INFO_ADVICE.to_string(),
            });
        }
        if !libraries.is_empty() {
            self.shell.emit(&Event::LibraryKernels { kernels: libraries });
        }
        self.sass_only = true;
        self.set_aside(&collection)?;
        Ok(Next::Retry(Pending::later(collection, Reason::SassOnly)))
    }

    /// The census' page: the breakdown picks the kernels, the costliest is profiled here
    /// (the window fitted to its launches, the plan's stages queued for it), the others
    /// each in its own profile directory once this one is done.
    fn on_discovery(&mut self, page: Result<RawPage, String>) -> Result<Next<Pending>> {
        let plan = &self.run.kernel.census;
        let cap = window::census_cap(self.st.window, plan.launch_cap);
        let (counted, breakdown, refused) = discover::discover(self.run.dir, page, cap, plan)?;
        self.on_census(counted, breakdown, refused)
    }

    /// A census taken (ncu's page or a trace, its breakdown written): its table said, and
    /// the kernels it picked profiled, here or in one batch next; or the pick's refusal.
    pub(super) fn on_census(
        &mut self,
        counted: Census,
        breakdown: crate::model::census::Breakdown,
        refused: Option<crate::error::Failure>,
    ) -> Result<Next<Pending>> {
        let [table, chosen] = discover::census_events(&self.run.kernel.name, &breakdown);
        self.shell.emit(&table);
        if let Some(refused) = refused {
            return Ok(Next::Fail(refused.into()));
        }
        self.shell.emit(&chosen);
        if self.run.batch_picks
            && crate::collect::batch::invocations::census_batches(self.run.kernel, &breakdown)
        {
            // Every pick, this directory's first one too, is profiled in one batch next.
            return Ok(Next::Done);
        }
        let chosen = breakdown.chosen.first().cloned().unwrap_or_default();
        let f = KernelFilter::function(&chosen);
        let launches = counted.launches_matching(&f);
        self.st.census = Some(counted);
        if let Some((w, why)) = window::fit(self.st.window, self.run.kernel.window_origin, launches) {
            self.fit_window(w, why);
        }
        self.st.filter = Some(f);
        let stages = self.run.kernel.stage_collections().into_iter();
        Ok(Next::Then(stages.map(|c| Pending::later(c, Reason::ChosenByDiscovery(chosen.clone()))).collect()))
    }

    /// The first page with rows: when the hint matched several kernels, the filter is
    /// narrowed to the costliest and the stage runs again. `None` when nothing changes.
    fn narrowed(
        &mut self,
        collection: &StageCollection,
        page: &Result<RawPage, String>,
    ) -> Result<Option<Next<Pending>>> {
        if self.first_page_checked {
            return Ok(None);
        }
        self.first_page_checked = true;
        let (Ok(p), Some(filter)) = (page, &self.st.filter) else { return Ok(None) };
        let seen = functions_matching(p, filter);
        if seen.len() <= 1 || self.st.narrowed {
            return Ok(None);
        }
        let Some(chosen) = self.narrow(&seen)? else { return Ok(None) };
        self.set_aside(collection)?;
        self.first_page_checked = false;
        Ok(Some(Next::Requeue(Pending::later(collection.clone(), Reason::NarrowedTo(chosen)))))
    }

    /// Basic's page under `auto`: the rules choose the follow-up, queued last.
    fn on_basic(&mut self, page: Result<RawPage, String>, filter: &KernelFilter) -> Result<Next<Pending>> {
        let (stage, reason) = follow_up(page, self.rules, filter)?;
        self.shell.emit(&Event::FollowUpChosen {
            kernel: self.run.kernel.name.clone(),
            stage,
            why: reason.to_string(),
            batched: false,
        });
        Ok(Next::Then(vec![Pending::later(StageCollection::Named(stage), Reason::FollowUp(reason))]))
    }

    /// Says that the stage ended `ok`, with its passes and time.
    fn stage_done(&self, collection: &StageCollection, reason: &Reason) {
        let last = self.manifest.stages.last();
        self.shell.emit(&Event::StageDone {
            kernel: self.run.kernel.name.clone(),
            stage: collection.name().to_string(),
            status: StageStatus::Ok,
            passes: last.and_then(|s| s.passes.first().copied()),
            wall_ms: last.map_or(0, |s| s.wall_ms),
            why: reason.brief(),
        });
    }
}

impl Unit for Single<'_, '_> {
    type Stage = Pending;

    fn step(&mut self, mut next: Pending) -> Result<Next<Pending>> {
        let cmd = self.command_for(&mut next)?;
        let collection = next.collection;
        let next_reason = next.reason;
        let ran = run_announced(self.run, &collection, &cmd, &next_reason, self.shell);
        self.ncu_ms += ran.outcome.wall_ms;
        let status = ran.outcome.status;
        self.manifest.stages.push(ran.outcome.clone());
        let discovery = collection == StageCollection::Discovery;
        if status == StageStatus::NoMatch && !discovery {
            if let Some(filter) = self.st.filter.clone() {
                return self.on_no_match(collection, &filter, ran.outcome.log.as_deref().unwrap_or(""));
            }
        }
        if let (StageStatus::NoMatch, true, Some(bounds)) =
            (status, discovery, self.run.kernel.census.describe_bounds())
        {
            self.manifest.status = status;
            return Ok(Next::Fail(empty_census(&bounds).into()));
        }
        if status != StageStatus::Ok {
            if super::failure::hot_lines_may_fail(self.auto, &collection, status) {
                return self.on_hot_lines_failed(&collection, ran);
            }
            return Ok(self.on_failure(&collection, ran, &cmd));
        }
        if collection == StageCollection::Named(Stage::Source)
            && !ran.no_line_info.is_empty()
            && !self.sass_only
        {
            return self.on_no_line_info(collection, &ran.no_line_info);
        }
        self.stage_done(&collection, &next_reason);
        if discovery {
            return self.on_discovery(ran.page);
        }
        let Some(filter) = self.st.filter.clone() else { return Ok(Next::Done) };
        if let Some(again) = self.narrowed(&collection, &ran.page)? {
            return Ok(again);
        }
        if self.auto && collection == StageCollection::Named(Stage::Basic) {
            return self.on_basic(ran.page, &filter);
        }
        Ok(Next::Done)
    }

    fn rebuild(stage: &mut Pending) {
        stage.cmd = None;
    }
}

/// A census bounded by a range that profiled no launch: the range was never entered.
fn empty_census(bounds: &str) -> crate::error::Failure {
    crate::error::Failure::new(
        crate::error::ExitCode::NoKernelMatched,
        format!("the census profiled no kernel launch {bounds}"),
    )
    .help(
        "check that the program enters that range with these arguments (an NVTX range needs an NVTX \
         implementation linked; cuProfilerStart needs a current context), or drop --nvtx-include/--profiler-range",
    )
}
