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
//!
//! The source stage (an A/B check adds it to every kernel) batches too, after the other
//! stages of the plan: its page has no launch rows but one block per function and source
//! file, so it is split by the functions each kernel's raw rows named
//! ([`super::source_split`]). The kernels ncu had no line info for (a closed library's)
//! get the stage again, batched and SASS only: from basic's report, that is one import
//! and no program start. A kernel whose blocks cannot be told apart from another's runs
//! alone. Only discovery, and a plan whose one stage is `source` (no raw page to name the
//! kernels), keep a kernel out of the batch.
//!
//! The batch is a [`Unit`] of the one stage loop ([`super::queue`]): a queued stage is
//! a collection, the members it serves and why; its handler splits the page and returns
//! the follow-ups as the stages that come next, or the failure that ends the batch.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use anyhow::Result;

mod first;
pub mod invocations;
mod key;
mod plan;
mod rows;
mod run;
mod serve;

use rows::{own_page, split_rows};

pub use first::{dry_plan, DryPlan};
pub use key::batch_key;
pub use plan::{planner_on, program_key};
pub use run::batched_command;
use run::run_batched;

use super::discover::function_name;
use super::failure::{stage_failure, StageEnd};
use super::queue::{drive, Next, Unit};
use super::reason::{FollowUpWhy, Reason};
use super::run::{KernelRun, StageRan};
use super::source_split::{lacking_line_info, split_source};
use crate::analyze::rules::Rules;
use crate::events::Event;
use crate::model::filter::KernelFilter;
use crate::model::kinds::WindowOrigin;
use crate::model::stage::Stage;
use crate::ncu::command::StageCollection;
use crate::ncu::parse::RawPage;
use crate::process::ProcessBuilder;
use crate::profile::run_manifest::{PlanRecord, WindowRecord};
use crate::profile::{ProfileDir, RunManifest, StageStatus};
use crate::shell::Shell;
use plan::MemberCost;

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
    let dir = open_batch_dir(members)?;
    let manifests: Vec<RunManifest> = members
        .iter()
        .map(|m| {
            let mut manifest = RunManifest::new(&m.kernel.name, m.kernel.privilege);
            // The census that picked this kernel, when it ran in this directory.
            manifest.stages = RunManifest::earlier_stages(m.dir);
            manifest.window = Some(WindowRecord::planned(m.kernel.window, WindowOrigin::Default));
            manifest.ld_library_path = m.kernel.env.get("LD_LIBRARY_PATH").cloned();
            manifest
        })
        .collect();
    shell.emit(&Event::BatchStarted {
        program: first.target.program.display().to_string(),
        kernels: members.iter().map(|m| m.kernel.name.clone()).collect(),
    });
    let auto = first.kernel.stages.is_auto();
    let all: Vec<usize> = (0..members.len()).collect();
    let mut collections = first.kernel.stage_collections();
    // The source page is split by the functions the other stages' pages named.
    collections.sort_by_key(|c| *c == StageCollection::Named(Stage::Source));
    let mut stages: Vec<BatchStage> = collections
        .into_iter()
        .map(|collection| BatchStage {
            reason: Reason::first(auto, &collection),
            collection,
            group: all.clone(),
            wants: BTreeMap::new(),
        })
        .collect();
    let program = plan::program_key(first.kernel);
    let root = first.dir.path().parent().unwrap_or(first.dir.path()).to_path_buf();
    // Read once: the first run's plan and the follow-ups' are priced from it.
    let history = crate::profile::history::runs_of(&root, &program);
    let mut planned = None;
    if auto {
        let names: Vec<&str> = members.iter().map(|m| m.kernel.name.as_str()).collect();
        let launches: Vec<u32> = members.iter().map(|m| m.kernel.window.launch_count()).collect();
        let collections: Vec<StageCollection> = stages.iter().map(|s| s.collection.clone()).collect();
        let joining = first::joining(&collections);
        if let Some(run) = first::first_run(plan::Learned::of(&history).as_ref(), &names, &launches, &joining)
        {
            planned = Some(first::announce_first(shell, members, &run));
            let basic = StageCollection::Named(Stage::Basic);
            if let Some(s) = stages.iter_mut().find(|s| s.collection == basic) {
                s.collection = StageCollection::Merged(run.stages);
                s.wants = run.wants;
            }
            // Their pages are cut from the first run's.
            stages.retain(|s| !matches!(s.collection, StageCollection::Named(j) if joining.contains(&j)));
        }
    }
    let collections: Vec<StageCollection> = stages.iter().map(|s| s.collection.clone()).collect();
    let mut batch = Batch {
        source_from_basic: crate::ncu::command::source_from_basic(&collections),
        members,
        rules,
        shell,
        dir,
        manifests,
        alone: BTreeMap::new(),
        functions: BTreeMap::new(),
        ncu_ms: 0,
        auto,
        program,
        root,
        follow_up_ms: 0,
        first_run: true,
        plan: planned,
        history,
    };
    drive(&mut batch, stages)?;
    batch.finish(started)
}

/// Creates the batch's hidden folder ([`batch_dir_of`]), its `commands.sh` opened with
/// what it holds.
fn open_batch_dir(members: &[KernelRun<'_>]) -> Result<ProfileDir> {
    let first = &members[0];
    let planned = batch_dir_of(first.dir, members.len());
    let parent = planned.path().parent().unwrap_or(first.dir.path());
    let batch_dir = ProfileDir::create_unique(parent, planned.id())?;
    crate::profile::fs::write_new(
        &batch_dir.commands_script_path(),
        &format!(
            "#!/bin/sh\n# The batched ncu runs of {} kernel(s) of one program ({}); each profile's own\n\
             # commands.sh replays its kernel alone.\nset -e\n\n",
            members.len(),
            members.iter().map(|m| m.kernel.name.as_str()).collect::<Vec<_>>().join(", ")
        ),
    )?;
    Ok(batch_dir)
}

/// A stage waiting to run batched: for which members (indices), and why.
struct BatchStage {
    collection: StageCollection,
    group: Vec<usize>,
    reason: Reason,
    /// For a merged run: the stages each member gets, cut from its page by column.
    wants: BTreeMap<usize, Vec<Stage>>,
}

/// A batch's run through the stage loop: the members, their manifests so far, and those
/// sent to run alone.
struct Batch<'r, 'a> {
    members: &'r [KernelRun<'a>],
    rules: &'r Rules,
    shell: &'r Shell,
    /// The hidden folder the batched pages and commands go to.
    dir: ProfileDir,
    manifests: Vec<RunManifest>,
    /// The members the batch cannot serve, and why.
    alone: BTreeMap<usize, String>,
    /// The functions each member's own rows named, from the pages split so far.
    functions: BTreeMap<usize, BTreeSet<String>>,
    /// Time spent inside ncu, ms.
    ncu_ms: u64,
    auto: bool,
    /// The program, as the cost history names it.
    program: String,
    /// The profiles root: where the cost history is.
    root: std::path::PathBuf,
    /// Time the follow-up runs took, ms (the planner's estimate is checked against it).
    follow_up_ms: u64,
    /// Whether no run of the batch has ended yet.
    first_run: bool,
    /// The planner's choice for the follow-ups, once made.
    plan: Option<PlanRecord>,
    /// The program's cost history as it was when the batch began.
    history: Vec<crate::profile::history::HistoryRun>,
    /// Whether the source page is imported from the basic run's report.
    source_from_basic: bool,
}

/// A batched stage that ended `ok`: what each member's share is cut from.
struct Shared<'p> {
    collection: &'p StageCollection,
    reason: &'p Reason,
    group: &'p [usize],
    ran: &'p StageRan,
    cmd: &'p ProcessBuilder,
    text: &'p str,
    /// Whether it was the batch's first run.
    first_run: bool,
}

impl Unit for Batch<'_, '_> {
    type Stage = BatchStage;

    fn step(&mut self, stage: BatchStage) -> Result<Next<BatchStage>> {
        let BatchStage { collection, group, reason, wants } = stage;
        let group: Vec<usize> = group.into_iter().filter(|i| !self.alone.contains_key(i)).collect();
        if group.is_empty() {
            return Ok(Next::Done);
        }
        let (cmd, ran) = run_batched(
            self.members,
            &group,
            &self.dir,
            &collection,
            &reason,
            self.source_from_basic,
            self.shell,
        )?;
        self.ncu_ms += ran.outcome.wall_ms;
        if matches!(reason, Reason::FollowUp(_) | Reason::FollowUps(_)) {
            self.follow_up_ms += ran.outcome.wall_ms;
        }
        let first_run = std::mem::replace(&mut self.first_run, false);
        match ran.outcome.status {
            StageStatus::Ok => {}
            StageStatus::NoMatch => {
                self.send_alone(
                    &group,
                    &format!("the batched stage {} matched no launch", collection.name()),
                );
                return Ok(Next::Done);
            }
            status if super::failure::hot_lines_may_fail(self.auto, &collection, status) => {
                return self.on_hot_lines_failed(&group, ran);
            }
            _ => return self.on_failure(&collection, &group, ran, &cmd),
        }
        self.shell.emit(&Event::StageDone {
            kernel: shown_names(self.members, &group),
            stage: collection.label(),
            status: StageStatus::Ok,
            passes: ran.outcome.passes.first().copied(),
            wall_ms: ran.outcome.wall_ms,
            why: reason.brief(),
        });
        let text = std::fs::read_to_string(self.dir.stage_raw_path(&collection)).unwrap_or_default();
        let shared = Shared {
            collection: &collection,
            reason: &reason,
            group: &group,
            ran: &ran,
            cmd: &cmd,
            text: &text,
            first_run,
        };
        if collection == StageCollection::Named(Stage::Source) {
            return self.share_source(&shared);
        }
        let Ok(page) = &ran.page else {
            self.send_alone(&group, "the batched page could not be read");
            return Ok(Next::Done);
        };
        if let StageCollection::Merged(stages) = &collection {
            return self.share_merged(&shared, page, stages, &wants);
        }
        self.share(&shared, page)
    }
}

impl Batch<'_, '_> {
    /// A stage that failed as a whole: every member's manifest records it, and the batch
    /// ends as a single run would.
    fn on_failure(
        &mut self,
        collection: &StageCollection,
        group: &[usize],
        ran: StageRan,
        cmd: &ProcessBuilder,
    ) -> Result<Next<BatchStage>> {
        let status = ran.outcome.status;
        for i in group {
            self.manifests[*i].stages.push(ran.outcome.clone());
            self.manifests[*i].status = status;
            self.manifests[*i].write(self.members[*i].dir)?;
        }
        let end = StageEnd {
            status,
            signal: ran.signal,
            problem: ran.problem,
            stage: collection.name().to_string(),
        };
        let k = self.members[group[0]].kernel;
        let everything = KernelFilter::regex(".*");
        let log = ran.outcome.log.unwrap_or_default();
        Ok(Next::Fail(stage_failure(&end, k, k.filter.as_ref().unwrap_or(&everything), &log, cmd).into()))
    }

    /// `auto`'s batched source stage failed: each member's manifest records it, each is
    /// told it has no hot lines, and the batch goes on.
    fn on_hot_lines_failed(&mut self, group: &[usize], ran: StageRan) -> Result<Next<BatchStage>> {
        let why = super::failure::hot_lines_problem(&ran);
        for i in group {
            self.manifests[*i].stages.push(ran.outcome.clone());
            self.shell.emit(&Event::HotLinesMissing {
                kernel: self.members[*i].kernel.name.clone(),
                why: why.clone(),
            });
        }
        Ok(Next::Done)
    }

    /// Sends the members `group` to run alone, for `why`.
    fn send_alone(&mut self, group: &[usize], why: &str) {
        for i in group {
            self.alone.insert(*i, why.to_string());
        }
    }

    /// Gives each member of the stage its own rows, and (for `auto`'s basic) returns the
    /// follow-ups its rows choose, as the planner runs them ([`Batch::plan_follow_ups`]).
    fn share(&mut self, shared: &Shared<'_>, page: &RawPage) -> Result<Next<BatchStage>> {
        let rows = split_rows(page, self.members, shared.group);
        let basic = self.auto && *shared.collection == StageCollection::Named(Stage::Basic);
        let mut wants: BTreeMap<usize, (Stage, FollowUpWhy)> = BTreeMap::new();
        let mut costs: BTreeMap<usize, MemberCost> = BTreeMap::new();
        for i in shared.group {
            let Some((text, own)) = own_page(page, shared.text, &rows[i]) else {
                self.send_alone(
                    &[*i],
                    "its rows could not be told apart from the other kernels' in the batched page",
                );
                continue;
            };
            self.serve(*i, shared, shared.collection, &text, Some(&own))?;
            if let Some(shapes) = invocations::shapes(self.members[*i].kernel, &own, shared.first_run) {
                self.shell.emit(&Event::LaunchShapes(shapes));
            }
            if let Some(c) = MemberCost::of(&own) {
                costs.insert(*i, c);
            }
            let functions = self.functions.entry(*i).or_default();
            functions.extend(own.launches().map(|l| function_name(l.kernel_name())));
            if basic {
                let (stage, reason) = self.follow_up_of(*i, own)?;
                wants.insert(*i, (stage, reason));
            }
        }
        let chosen: BTreeMap<usize, Stage> = wants.iter().map(|(i, (s, _))| (*i, *s)).collect();
        let run = self.history_run(&shared.collection.label(), shared, &costs, &chosen);
        if !basic || wants.is_empty() {
            self.remember(&run);
            return Ok(Next::Then(Vec::new()));
        }
        let known = plan::known(&self.history, &run);
        self.remember(&run);
        Ok(Next::Then(self.plan_follow_ups(&wants, &costs, &known)))
    }

    /// Gives each member of the source stage its own blocks of the batched page; the
    /// members ncu had no line info for get the stage again, batched and SASS only (from
    /// basic's report, no program start); a member the page cannot serve otherwise runs
    /// alone (see [`super::source_split`]).
    fn share_source(&mut self, shared: &Shared<'_>) -> Result<Next<BatchStage>> {
        let pages = split_source(shared.text, &self.functions, shared.group, &shared.ran.no_line_info);
        let lacking = lacking_line_info(&self.functions, shared.group, &shared.ran.no_line_info);
        let mut again = Vec::new();
        for (i, own) in pages {
            match own {
                Ok(text) => self.serve(i, shared, shared.collection, &text, None)?,
                Err(_) if lacking.contains(&i) && *shared.reason != Reason::SassOnly => again.push(i),
                Err(why) => self.send_alone(&[i], &why),
            }
        }
        if again.is_empty() {
            return Ok(Next::Done);
        }
        // The page printed with the CUDA lines stays beside the SASS-only one.
        self.dir.supersede_page(shared.collection)?;
        Ok(Next::Then(vec![BatchStage {
            collection: shared.collection.clone(),
            group: again,
            reason: Reason::SassOnly,
            wants: BTreeMap::new(),
        }]))
    }

    /// Says which members run alone, writes the served members' manifests, and returns
    /// how the batch ended for each.
    fn finish(self, started: Instant) -> Result<Vec<Served>> {
        let Batch { members, shell, manifests, mut alone, ncu_ms, plan, follow_up_ms, .. } = self;
        let overhead = (started.elapsed().as_millis() as u64).saturating_sub(ncu_ms) / members.len() as u64;
        let mut served = Vec::new();
        for (i, mut manifest) in manifests.into_iter().enumerate() {
            match alone.remove(&i) {
                Some(why) => {
                    shell.emit(&Event::RunsAlone { kernel: members[i].kernel.name.clone(), why });
                    served.push(Served::Alone);
                }
                None => {
                    manifest.kprof_overhead_ms = overhead;
                    manifest.plan = plan.clone().map(|p| PlanRecord { follow_up_wall_ms: follow_up_ms, ..p });
                    manifest.write(members[i].dir)?;
                    served.push(Served::Done);
                }
            }
        }
        Ok(served)
    }
}

/// The names of the members `group`, as messages about their batched run show them.
fn shown_names(members: &[KernelRun<'_>], group: &[usize]) -> String {
    group.iter().map(|i| members[*i].kernel.name.as_str()).collect::<Vec<_>>().join(" + ")
}

/// The hidden folder a batch of `count` kernels, `first` the first, writes its pages to:
/// `.batch_<first's id>` beside the profiles, or for a kernel batched alone, `.batch`
/// inside its own profile (its profiles to come go beside it, not its batches).
/// A real run takes the next free name if that one is taken.
pub fn batch_dir_of(first: &ProfileDir, count: usize) -> ProfileDir {
    if count == 1 {
        return ProfileDir::at(first.path().join(".batch"));
    }
    let parent = first.path().parent().unwrap_or(first.path());
    ProfileDir::at(parent.join(format!(".batch_{}", first.id())))
}
