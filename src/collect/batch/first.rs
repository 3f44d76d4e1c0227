//! The first run of a batch, planned before it starts: basic alone, or merged with the
//! follow-ups the history expects ([`first_run`]), and what a dry run shows of the
//! batch's runs and their cost ([`dry_plan`]).

use std::collections::BTreeMap;
use std::path::Path;

use super::plan::{planner_on, Learned};
use super::shown_names;
use crate::collect::planner::{self, KernelCost};
use crate::events::Event;
use crate::model::stage::Stage;
use crate::ncu::command::StageCollection;
use crate::profile::history::{self, HistoryRun};
use crate::profile::run_manifest::PlanRecord;

/// A first run the history plans: basic merged with each member's follow-up of last
/// time, for a batch whose every member has one and whose stages can merge, when the
/// terms price it below basic then the follow-ups. `None` keeps basic first.
pub fn first_run(history: &[HistoryRun], members: &[&str]) -> Option<FirstRun> {
    if !planner_on() {
        return None;
    }
    let learned = Learned::of(history)?;
    let (wants, costs) = learned.follow_ups(members)?;
    let mut stages: Vec<Stage> = vec![Stage::Basic];
    stages.extend(wants.values().copied().collect::<std::collections::BTreeSet<_>>());
    if !stages.iter().all(|s| crate::ncu::stages::merged::mergeable(*s)) {
        return None;
    }
    let (terms, passes) = (&learned.terms, &learned.passes);
    let all: Vec<&KernelCost> = costs.values().collect();
    let follow = planner::choose_follow_ups(&wants, &costs, terms, passes, true);
    let apart = terms.run_ms(planner::passes_of(&[Stage::Basic], passes), &all) + follow.estimate_ms();
    let merged = terms.run_ms(planner::passes_of(&stages, passes), &all);
    if merged >= apart {
        return None;
    }
    let why = format!(
        "basic and last time's follow-ups in one run ({}), {:.1} s against {:.1} s for basic then the follow-ups; {}",
        planner::label(&stages),
        merged / 1000.0,
        apart / 1000.0,
        terms.said()
    );
    let wants = wants.into_iter().map(|(i, s)| (i, vec![Stage::Basic, s])).collect();
    Some(FirstRun { stages, wants, why, estimate_ms: merged, alternative_ms: apart })
}

/// What a dry run shows of a batch: its first runs as the planner will start them, each
/// with its predicted wall time, the follow-ups' prediction, and one line on where the
/// numbers come from.
pub struct DryPlan {
    /// The first runs' collections (basic merged with the follow-ups when the history
    /// plans it so).
    pub collections: Vec<StageCollection>,
    /// Each one's predicted wall time, ms; `None` when unknown.
    pub estimates_ms: Vec<Option<f64>>,
    /// The follow-ups' predicted wall time, ms (0 when the first run collects them).
    pub follow_ups_ms: Option<f64>,
    /// Where the estimates come from, or why there are none.
    pub note: String,
}

/// The [`DryPlan`] of a batch of `members` (kernel names) of `program` whose profiles go
/// under `root`, starting with `collections`.
pub fn dry_plan(
    root: &Path,
    program: &str,
    members: &[&str],
    mut collections: Vec<StageCollection>,
) -> DryPlan {
    let history = history::runs_of(root, program);
    let Some(learned) = Learned::of(&history) else {
        let note = format!(
            "estimates unknown: no cost history of this program in {} yet (a run records one)",
            history::history_path(root).display()
        );
        let estimates_ms = vec![None; collections.len()];
        return DryPlan { collections, estimates_ms, follow_ups_ms: None, note };
    };
    let first = first_run(&history, members);
    if let Some(run) = &first {
        let basic = StageCollection::Named(Stage::Basic);
        if let Some(c) = collections.iter_mut().find(|c| **c == basic) {
            *c = StageCollection::Merged(run.stages.clone());
        }
    }
    let costs: Option<Vec<&KernelCost>> =
        members.iter().map(|m| learned.last.get(*m).map(|(_, c)| c)).collect();
    let imported = crate::ncu::command::source_from_basic(&collections);
    let estimates_ms = collections
        .iter()
        .map(|c| {
            if imported && *c == StageCollection::Named(Stage::Source) {
                // An import of basic's report: no start of the program and no replay, but
                // about as long as one start (1.2-4.2 s on the H200, against starts of
                // 1.5-2.7 s).
                return Some(learned.terms.start_ms);
            }
            let stages = match c {
                StageCollection::Named(s) => vec![*s],
                StageCollection::Merged(s) => s.clone(),
                _ => return None,
            };
            Some(learned.terms.run_ms(planner::passes_of(&stages, &learned.passes), costs.as_ref()?))
        })
        .collect();
    let follow_ups_ms = match &first {
        Some(_) => Some(0.0),
        None => learned.follow_ups(members).map(|(wants, costs)| {
            planner::choose_follow_ups(&wants, &costs, &learned.terms, &learned.passes, planner_on())
                .estimate_ms()
        }),
    };
    let note = match first {
        Some(run) => run.why,
        None => learned.terms.said(),
    };
    DryPlan { collections, estimates_ms, follow_ups_ms, note }
}

/// The first run [`first_run`] plans.
pub struct FirstRun {
    /// Basic and the follow-ups, merged.
    pub stages: Vec<Stage>,
    /// Each member's stages.
    pub wants: BTreeMap<usize, Vec<Stage>>,
    /// Why, in one line.
    pub why: String,
    /// Its predicted wall time, ms.
    pub estimate_ms: f64,
    /// Basic then the follow-ups, predicted, ms.
    pub alternative_ms: f64,
}

/// Says the planned first run and returns its record for the members' manifests.
pub fn announce_first(
    shell: &crate::shell::Shell,
    members: &[crate::collect::run::KernelRun<'_>],
    run: &FirstRun,
) -> PlanRecord {
    let all: Vec<usize> = (0..members.len()).collect();
    shell.emit(&Event::FollowUpsPlanned {
        kernels: shown_names(members, &all),
        why: run.why.clone(),
        estimate_ms: run.estimate_ms.round() as u64,
        alternative_ms: Some(run.alternative_ms.round() as u64),
    });
    PlanRecord {
        choice: run.why.clone(),
        estimate_ms: run.estimate_ms.round() as u64,
        alternative_ms: Some(run.alternative_ms.round() as u64),
        follow_up_wall_ms: 0,
    }
}
