//! The planner inside a batch ([`super`]): the costs it reads from the pages and the
//! profiles root's history, the follow-up runs it chooses ([`crate::collect::planner`]), the history
//! lines it writes back, and the pages of a merged run cut per stage.

use std::collections::BTreeMap;

use anyhow::Result;

use super::rows::{own_page, split_rows};
use super::{shown_names, Batch, BatchStage, Shared};
use crate::analyze::summary;
use crate::collect::discover::function_name;
use crate::collect::planner::{self, CostTerms, FollowUpPlan, KernelCost, RunSample};
use crate::collect::queue::Next;
use crate::collect::reason::{FollowUpWhy, Reason};
use crate::events::Event;
use crate::model::stage::Stage;
use crate::ncu::command::StageCollection;
use crate::ncu::parse::RawPage;
use crate::ncu::stages::merged::column_for_stage;
use crate::plan::{KernelPlan, PlannedTarget};
use crate::profile::history::{HistoryKernel, HistoryRun};
use crate::profile::run_manifest::PlanRecord;

/// `KPROF_PLAN=fixed` keeps today's plan (one follow-up run per chosen stage) without
/// pricing it: for measuring what the planner saves.
pub const PLAN_ENV: &str = "KPROF_PLAN";

/// Whether the planner may merge runs (anything but `KPROF_PLAN=fixed`).
pub fn planner_on() -> bool {
    std::env::var(PLAN_ENV).map(|v| v != "fixed").unwrap_or(true)
}

/// The program a kernel runs in, as the history names it.
pub fn program_key(kernel: &KernelPlan) -> String {
    match &kernel.target {
        PlannedTarget::Cargo(t) => format!("{}/{}/{}", t.package, t.kind.name(), t.name),
        PlannedTarget::Command(argv) => argv.join(" "),
    }
}

/// One member's share of a run, read off its own rows.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberCost {
    /// Launches profiled.
    pub launches: u32,
    /// Replay passes per launch (the first launch's).
    pub passes: u32,
    /// Mean duration of a launch, ms.
    pub duration_ms: f64,
}

impl MemberCost {
    /// From a member's own rows; `None` when the page has no launch.
    pub fn of(page: &RawPage) -> Option<MemberCost> {
        let launches = page.launches().count();
        if launches == 0 {
            return None;
        }
        let passes =
            page.launches().find_map(|l| l.number("profiler__replayer_passes")).unwrap_or(0.0) as u32;
        let metric = "gpu__time_duration.sum";
        let durations: Vec<f64> = page
            .launches()
            .filter_map(|l| Some(l.number(metric)? * summary::unit_scale(l.unit(metric).unwrap_or(""))))
            .collect();
        let duration_ms = if durations.is_empty() {
            0.0
        } else {
            durations.iter().sum::<f64>() / durations.len() as f64 / 1e6
        };
        Some(MemberCost { launches: launches as u32, passes, duration_ms })
    }

    /// What the planner prices it at.
    pub fn kernel_cost(&self) -> KernelCost {
        KernelCost { launches: self.launches, duration_ms: self.duration_ms }
    }
}

/// A run as a sample for the cost fit.
fn sample_of(run: &HistoryRun) -> RunSample {
    let (mut launch_passes, mut kernel_ms) = (0.0, 0.0);
    for k in &run.kernels {
        let lp = f64::from(k.passes) * f64::from(k.launches);
        launch_passes += lp;
        kernel_ms += lp * k.duration_ns / 1e6;
    }
    RunSample { wall_ms: run.wall_ms as f64, launch_passes, kernel_ms, first: run.first }
}

/// What the planner knows of a program before its follow-ups: its terms and the passes
/// measured per set of stages.
pub struct Known {
    /// The cost terms.
    pub terms: CostTerms,
    /// Replay passes per launch measured for each set of stages (`memory+compute`).
    pub passes: BTreeMap<String, u32>,
}

/// The terms of the program from its `history` (its runs read when the batch began), or
/// else from `basic` (this batch's basic run).
pub fn known(history: &[HistoryRun], basic: &HistoryRun) -> Known {
    let runs = history;
    let terms = CostTerms::fit(&runs.iter().map(sample_of).collect::<Vec<_>>())
        .unwrap_or_else(|| CostTerms::from_basic(&sample_of(basic)));
    Known { terms, passes: measured_passes(runs.iter().chain([basic])) }
}

/// Replay passes per launch measured for each set of stages (`memory+compute`), the
/// latest run's.
fn measured_passes<'a>(runs: impl Iterator<Item = &'a HistoryRun>) -> BTreeMap<String, u32> {
    let mut passes = BTreeMap::new();
    for run in runs {
        if let Some(p) = run.kernels.first().map(|k| k.passes).filter(|p| *p > 0) {
            passes.insert(run.stages.clone(), p);
        }
    }
    passes
}

/// The follow-up runs for `wants` (member -> stage): priced when the planner is on,
/// today's one run per stage otherwise.
pub fn follow_ups(
    wants: &BTreeMap<usize, Stage>,
    costs: &BTreeMap<usize, MemberCost>,
    known: &Known,
) -> FollowUpPlan {
    let costs: BTreeMap<usize, KernelCost> = costs.iter().map(|(i, c)| (*i, c.kernel_cost())).collect();
    let mut plan = planner::choose_follow_ups(wants, &costs, &known.terms, &known.passes, planner_on());
    if !planner_on() {
        plan.why = format!("{PLAN_ENV}=fixed: {}", plan.why);
    }
    plan
}

/// A history line for a run of `stages` over `members` (name, cost, follow-up).
pub fn history_run(
    program: &str,
    stages: &str,
    first: bool,
    wall_ms: u64,
    members: &[(String, MemberCost, Option<Stage>)],
) -> HistoryRun {
    HistoryRun {
        schema_version: 1,
        program: program.to_string(),
        stages: stages.to_string(),
        first,
        wall_ms,
        kernels: members
            .iter()
            .map(|(kernel, c, follow)| HistoryKernel {
                kernel: kernel.clone(),
                launches: c.launches,
                passes: c.passes,
                duration_ns: c.duration_ms * 1e6,
                follow_up: follow.map(|s| s.name().to_string()),
            })
            .collect(),
    }
}

/// `stage`'s page cut from a merged run's page over `merged` (a member's own rows):
/// its metrics' columns and the columns no stage asked for. `None` when the page cannot
/// be cut (see [`RawPage::text_with_columns`]).
pub fn stage_page(page: &RawPage, text: &str, stage: Stage, merged: &[Stage]) -> Option<(String, RawPage)> {
    let cut = page.text_with_columns(text, |c| column_for_stage(c, stage, merged))?;
    let parsed = RawPage::parse(&cut, "merged page").ok()?;
    (parsed.rows.len() == page.rows.len()).then_some((cut, parsed))
}

impl Batch<'_, '_> {
    /// The follow-up runs of `wants` (member -> stage and the rules' words), as the
    /// planner chooses them: one per stage, or one merged run. Said in one line, and kept
    /// for each member's manifest.
    pub(super) fn plan_follow_ups(
        &mut self,
        wants: &BTreeMap<usize, (Stage, FollowUpWhy)>,
        costs: &BTreeMap<usize, MemberCost>,
        known: &Known,
    ) -> Vec<BatchStage> {
        let chosen: BTreeMap<usize, Stage> = wants.iter().map(|(i, (s, _))| (*i, *s)).collect();
        let plan = follow_ups(&chosen, costs, known);
        let members: Vec<usize> = chosen.keys().copied().collect();
        self.shell.emit(&Event::FollowUpsPlanned {
            kernels: shown_names(self.members, &members),
            why: plan.why.clone(),
            estimate_ms: plan.estimate_ms().round() as u64,
            alternative_ms: plan.alternative_ms.map(|ms| ms.round() as u64),
        });
        self.plan = Some(PlanRecord {
            choice: plan.why.clone(),
            estimate_ms: plan.estimate_ms().round() as u64,
            alternative_ms: plan.alternative_ms.map(|ms| ms.round() as u64),
            follow_up_wall_ms: 0,
        });
        plan.runs
            .into_iter()
            .map(|run| {
                let reason = Reason::FollowUps(
                    run.members
                        .iter()
                        .map(|m| (self.members[*m].kernel.name.clone(), wants[m].1.clone()))
                        .collect(),
                );
                let (collection, wants) = match run.stages.as_slice() {
                    [one] => (StageCollection::Named(*one), BTreeMap::new()),
                    _ => (
                        StageCollection::Merged(run.stages.clone()),
                        run.members.iter().map(|m| (*m, vec![chosen[m]])).collect(),
                    ),
                };
                BatchStage { collection, group: run.members, reason, wants }
            })
            .collect()
    }

    /// Gives each member of a merged run the pages of its own stages, cut from its rows by
    /// column; a member whose page cannot be cut runs alone.
    pub(super) fn share_merged(
        &mut self,
        shared: &Shared<'_>,
        page: &RawPage,
        stages: &[Stage],
        wants: &BTreeMap<usize, Vec<Stage>>,
    ) -> Result<Next<BatchStage>> {
        let rows = split_rows(page, self.members, shared.group);
        let mut costs: BTreeMap<usize, MemberCost> = BTreeMap::new();
        let mut missed: BTreeMap<usize, (Stage, FollowUpWhy)> = BTreeMap::new();
        let mut chosen: BTreeMap<usize, Stage> = BTreeMap::new();
        for i in shared.group {
            let own = own_page(page, shared.text, &rows[i]);
            let pages: Option<Vec<(Stage, String, RawPage)>> = own.as_ref().and_then(|(text, own)| {
                let mine = wants.get(i)?;
                mine.iter().map(|s| stage_page(own, text, *s, stages).map(|(t, p)| (*s, t, p))).collect()
            });
            let (Some((own_text, own)), Some(pages)) = (&own, pages) else {
                self.send_alone(&[*i], "its stages could not be cut from the merged run's page");
                continue;
            };
            for (stage, text, page) in &pages {
                self.serve(*i, shared, &StageCollection::Named(*stage), text, Some(page))?;
            }
            if let Some(c) = MemberCost::of(own) {
                costs.insert(*i, c);
            }
            self.functions
                .entry(*i)
                .or_default()
                .extend(own.launches().map(|l| function_name(l.kernel_name())));
            // A planned first run: basic's columns choose the follow-up as always. One this
            // member's pages lack is cut from the same page when the run collected it
            // (another member's follow-up, or every likely one without history); else
            // (the kernel changed) it runs after.
            if let Some((_, _, basic)) = pages.into_iter().find(|(s, _, _)| *s == Stage::Basic) {
                let (stage, reason) = self.follow_up_of(*i, basic)?;
                chosen.insert(*i, stage);
                let collected = (!wants[i].contains(&stage) && stages.contains(&stage))
                    .then(|| stage_page(own, own_text, stage, stages))
                    .flatten();
                if let Some((text, page)) = collected {
                    self.serve(*i, shared, &StageCollection::Named(stage), &text, Some(&page))?;
                } else if !wants[i].contains(&stage) {
                    missed.insert(*i, (stage, reason));
                }
            }
        }
        let run = self.history_run(&shared.collection.label(), shared, &costs, &chosen);
        if missed.is_empty() {
            self.remember(&run);
            return Ok(Next::Done);
        }
        let known = known(&self.history, &run);
        self.remember(&run);
        Ok(Next::Then(self.plan_follow_ups(&missed, &costs, &known)))
    }

    /// The cost history's line for a run that served `costs` (and chose `follow_ups`).
    pub(super) fn history_run(
        &self,
        stages: &str,
        shared: &Shared<'_>,
        costs: &BTreeMap<usize, MemberCost>,
        follow_ups: &BTreeMap<usize, Stage>,
    ) -> crate::profile::history::HistoryRun {
        let members: Vec<(String, MemberCost, Option<Stage>)> = costs
            .iter()
            .map(|(i, c)| (self.members[*i].kernel.name.clone(), c.clone(), follow_ups.get(i).copied()))
            .collect();
        history_run(&self.program, stages, shared.first_run, shared.ran.outcome.wall_ms, &members)
    }

    /// Appends `run` to the profiles root's cost history: derived data, so a failure to
    /// write it is only said.
    pub(super) fn remember(&self, run: &crate::profile::history::HistoryRun) {
        if !run.kernels.is_empty() {
            if let Err(e) = crate::profile::history::append(&self.root, run) {
                let warning = format!("the cost history was not updated ({e:#}); the profile is complete");
                self.shell.emit(&Event::warning(crate::events::About::CostHistory, warning));
            }
        }
    }
}

/// What the history knows of a program: its terms, the passes measured per set of
/// stages, and each kernel's last cost and follow-up.
pub(super) struct Learned {
    pub(super) terms: CostTerms,
    pub(super) passes: BTreeMap<String, u32>,
    pub(super) last: BTreeMap<String, (Option<Stage>, KernelCost)>,
}

impl Learned {
    /// From the program's runs; `None` without any. Runs that were all first in their
    /// batch (a program profiled once) fit no terms: the H200's are used with what they
    /// say of the kernels.
    pub(super) fn of(runs: &[HistoryRun]) -> Option<Learned> {
        if runs.is_empty() {
            return None;
        }
        let terms =
            CostTerms::fit(&runs.iter().map(sample_of).collect::<Vec<_>>()).unwrap_or_else(CostTerms::h200);
        let mut last: BTreeMap<String, (Option<Stage>, KernelCost)> = BTreeMap::new();
        for run in runs {
            for k in &run.kernels {
                let cost = KernelCost { launches: k.launches, duration_ms: k.duration_ns / 1e6 };
                let follow: Option<Stage> = k.follow_up.as_deref().and_then(|f| f.parse().ok());
                let before = last.get(&k.kernel).and_then(|(f, _)| *f);
                last.insert(k.kernel.clone(), (follow.or(before), cost));
            }
        }
        let passes = measured_passes(runs.iter());
        Some(Learned { terms, passes, last })
    }

    /// Each member's last follow-up and cost, when every member has both.
    pub(super) fn follow_ups(
        &self,
        members: &[&str],
    ) -> Option<(BTreeMap<usize, Stage>, BTreeMap<usize, KernelCost>)> {
        let mut wants = BTreeMap::new();
        let mut costs = BTreeMap::new();
        for (i, name) in members.iter().enumerate() {
            let (follow, cost) = self.last.get(*name)?;
            wants.insert(i, (*follow)?);
            costs.insert(i, cost.clone());
        }
        Some((wants, costs))
    }
}
