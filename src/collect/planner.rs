//! What a batch's ncu runs will cost, and the cheaper of two ways to run its follow-ups.
//!
//! A run of the profiled program under ncu costs one start (ncu's own start-up, the
//! program's set-up: buffers, NVRTC compiles, module loads) plus, for every profiled launch,
//! one replay per pass: the kernel's duration and ncu's per-pass work around it (saving and
//! restoring the memory the kernel writes, reading the counters). So
//!
//! ```text
//! cost = starts x start + sum over launches of passes x (duration + per_pass)
//! ```
//!
//! Both terms matter, and which one wins depends on the kernels: a program of short
//! kernels spends most of a run starting, one of long kernels replaying them. After
//! `basic`, each kernel of a batch needs its own follow-up; today's plan runs one ncu run
//! per chosen stage, and the other way is one run that collects the union of their
//! metrics for every kernel (more passes per launch, fewer starts). The planner prices
//! both with the terms measured on this machine ([`CostTerms`]) and picks the cheaper; the
//! rules read the same metrics either way (each kernel's pages are cut from the merged
//! page by column), so the verdicts do not depend on the choice.
//!
//! The terms come from the profile root's history of runs of the same program when there
//! is one ([`CostTerms::fit`]); without history, from the basic run that just ended, with
//! the per-pass term measured on an H200 ([`DEFAULT_PER_PASS_MS`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::model::stage::Stage;
use crate::ncu::stages::definition;
use crate::ncu::stages::merged::{mergeable, MERGED_PASSES_H200};

/// ncu's work per replay pass of one launch beyond the kernel's own duration, ms, when no
/// history says better: fitted on an H200 (ncu 2025.3.1) over the 11 follow-up runs of the
/// zoo's `auto` run (`fixtures/h200/whole-programs/zoo-auto.log.gz`), wall = 1.97 s +
/// 0.021 s x launch passes.
pub const DEFAULT_PER_PASS_MS: f64 = 21.0;

/// One start of a program under ncu after its batch's first, ms, when no history says
/// better: the same fit as [`DEFAULT_PER_PASS_MS`].
pub const DEFAULT_START_MS: f64 = 1970.0;

/// The first start of a program under ncu that sets up `kernels` kernels, ms, before any
/// run of it (it also pays for the program's module loads and the driver's JIT cache):
/// 2.67 s and 0.35 s per kernel (each case's NVRTC compile and set-up), the
/// least-squares line through the mean first start of the one-, three-, six- and
/// seven-kernel programs of 18 first runs on the H200
/// (`fixtures/h200/planner/merged-first/cost_history.jsonl.gz`: 2.7-3.2 s for one kernel,
/// 3.3-3.9 s for three, 4.4-6.0 s for six or seven; through the 18 runs themselves the
/// line is 2.57 s + 0.40 s, within 0.25 s of this one up to seven kernels). Programs of
/// long kernels are left out of the fit: there the source section's instrumented passes,
/// not the start, take the time.
pub fn first_start_ms(kernels: usize) -> f64 {
    2670.0 + 350.0 * kernels as f64
}

/// The source page's import from basic's report (`ncu --import`, no program start and no
/// replay), ms: the median of 42 imports on the H200 (1.18 s; 0.87-1.43 s but for the one
/// program whose 64-way switch prints a long SASS listing, 3.4-4.4 s), where a later
/// program start costs
/// [`DEFAULT_START_MS`] and a first one 3-6 s.
pub const IMPORT_MS_H200: f64 = 1200.0;

/// One ncu run as the history keeps it: its wall time and what it replayed.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSample {
    /// Wall time of the ncu process, ms.
    pub wall_ms: f64,
    /// Replay passes summed over the profiled launches.
    pub launch_passes: f64,
    /// The kernels' own time in those passes (passes x duration, summed), ms.
    pub kernel_ms: f64,
    /// Whether it was the first run of its batch, which also pays for the program's first
    /// start on this machine (module loads, the driver's JIT cache), so it is not used to
    /// fit later runs' start.
    pub first: bool,
}

/// Where the terms came from, as the plan's line says it.
#[derive(Debug, Clone, PartialEq)]
pub enum TermsFrom {
    /// Fitted on this many earlier runs of the program (the profile root's history).
    History(usize),
    /// The basic run that just ended, with the default per-pass work.
    BasicRun,
    /// Measured on an H200: no run of the program to fit them on yet.
    H200,
}

/// The two measured terms of a program's cost.
#[derive(Debug, Clone, PartialEq)]
pub struct CostTerms {
    /// One start of the program under ncu, ms.
    pub start_ms: f64,
    /// ncu's work per replay pass of one launch beyond the kernel's duration, ms.
    pub per_pass_ms: f64,
    /// Where they came from.
    pub from: TermsFrom,
}

impl CostTerms {
    /// The terms of a program from its recorded runs: `wall - kernel time = start +
    /// per_pass x launch passes`, by least squares over the runs that were not first in
    /// their batch, or over the first runs when there is no other (a program whose first
    /// run collected everything leaves no later one; their start also holds the first
    /// start's extra, so it errs high, towards fewer starts). With fewer than two
    /// distinct pass counts (or a fit that makes either term negative) the per-pass term
    /// is the default and the start the mean remainder. `None` without a run.
    pub fn fit(samples: &[RunSample]) -> Option<CostTerms> {
        let mut later: Vec<&RunSample> = samples.iter().filter(|s| !s.first).collect();
        if later.is_empty() {
            later = samples.iter().collect();
        }
        if later.is_empty() {
            return None;
        }
        let points: Vec<(f64, f64)> =
            later.iter().map(|s| (s.launch_passes, s.wall_ms - s.kernel_ms)).collect();
        let n = points.len() as f64;
        let (sx, sy) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
        let sxx: f64 = points.iter().map(|(x, _)| x * x).sum();
        let sxy: f64 = points.iter().map(|(x, y)| x * y).sum();
        let spread = n * sxx - sx * sx;
        let fitted = (spread > 1e-9).then(|| {
            let per_pass = (n * sxy - sx * sy) / spread;
            (per_pass, (sy - per_pass * sx) / n)
        });
        let (per_pass_ms, start_ms) = match fitted {
            Some((p, s)) if p >= 0.0 && s >= 0.0 => (p, s),
            _ => (DEFAULT_PER_PASS_MS, ((sy - DEFAULT_PER_PASS_MS * sx) / n).max(0.0)),
        };
        Some(CostTerms { start_ms, per_pass_ms, from: TermsFrom::History(later.len()) })
    }

    /// The terms from the basic run that just ended: its wall time less the default
    /// per-pass work and the kernels' own time is the start. That start also holds the
    /// program's first start on this machine, so it errs high: towards fewer starts.
    pub fn from_basic(basic: &RunSample) -> CostTerms {
        let start_ms = (basic.wall_ms - basic.kernel_ms - DEFAULT_PER_PASS_MS * basic.launch_passes).max(0.0);
        CostTerms { start_ms, per_pass_ms: DEFAULT_PER_PASS_MS, from: TermsFrom::BasicRun }
    }

    /// The terms measured on an H200, for a program with no run to fit them on: a start
    /// after its batch's first ([`DEFAULT_START_MS`]).
    pub fn h200() -> CostTerms {
        CostTerms { start_ms: DEFAULT_START_MS, per_pass_ms: DEFAULT_PER_PASS_MS, from: TermsFrom::H200 }
    }

    /// The same for its batch's first start, of a program that sets up `kernels` kernels
    /// ([`first_start_ms`]).
    pub fn h200_first(kernels: usize) -> CostTerms {
        CostTerms { start_ms: first_start_ms(kernels), ..CostTerms::h200() }
    }

    /// The predicted wall time of one run of `passes` passes over `kernels`, ms.
    pub fn run_ms(&self, passes: u32, kernels: &[&KernelCost]) -> f64 {
        let replay: f64 = kernels
            .iter()
            .map(|k| f64::from(passes) * f64::from(k.launches) * (k.duration_ms + self.per_pass_ms))
            .sum();
        self.start_ms + replay
    }

    /// How the plan's line names them.
    pub fn said(&self) -> String {
        let from = match self.from {
            TermsFrom::History(n) => format!("fitted on {n} earlier run(s) of this program"),
            TermsFrom::BasicRun => "from this basic run".to_string(),
            TermsFrom::H200 => "measured on an H200; no run of this program to fit them on yet".to_string(),
        };
        format!(
            "a start costs {:.1} s and a replay pass {:.0} ms plus the kernel ({from})",
            self.start_ms / 1000.0,
            self.per_pass_ms
        )
    }
}

/// What a kernel costs per pass: its profiled launches and their mean duration.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelCost {
    /// Launches profiled per run.
    pub launches: u32,
    /// Mean duration of a launch, ms.
    pub duration_ms: f64,
}

/// Replay passes per launch of one run collecting `stages`: measured for that very set
/// when `measured` knows it (the history), else as measured on the H200 (one stage, or a
/// merged set in [`MERGED_PASSES_H200`]), else the largest set measured on the H200 that
/// it holds plus the other stages' own passes (ncu shares passes between metrics, so such
/// a sum errs high: towards today's one run per stage).
pub fn passes_of(stages: &[Stage], measured: &BTreeMap<String, u32>) -> u32 {
    if let Some(p) = measured.get(&label(stages)) {
        return *p;
    }
    if let Some((_, p)) = MERGED_PASSES_H200.iter().find(|(set, _)| *set == stages) {
        return *p;
    }
    let own = |set: &[Stage]| -> u32 { set.iter().map(|s| definition(*s).passes_h200.unwrap_or(10)).sum() };
    let held = MERGED_PASSES_H200
        .iter()
        .filter(|(set, _)| set.iter().all(|s| stages.contains(s)))
        .max_by_key(|(set, _)| set.len());
    match held {
        Some((set, p)) => {
            let rest: Vec<Stage> = stages.iter().copied().filter(|s| !set.contains(s)).collect();
            (p + own(&rest)).min(own(stages))
        }
        None => own(stages),
    }
}

/// `basic+memory`: how runs of several stages are named.
pub fn label(stages: &[Stage]) -> String {
    stages.iter().map(|s| s.name()).collect::<Vec<_>>().join("+")
}

/// One ncu run the planner chose: the stages it collects, and the members it serves.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedRun {
    /// Its stages: one, or several merged.
    pub stages: Vec<Stage>,
    /// The members (indices) it profiles.
    pub members: Vec<usize>,
    /// Its predicted wall time, ms.
    pub estimate_ms: f64,
}

/// The follow-up runs of a batch, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct FollowUpPlan {
    /// The runs, in order.
    pub runs: Vec<PlannedRun>,
    /// Whether the follow-ups were merged into one run.
    pub merged: bool,
    /// The other way's predicted wall time, ms (`None` when there was no choice).
    pub alternative_ms: Option<f64>,
    /// One line: the choice and the numbers behind it.
    pub why: String,
}

impl FollowUpPlan {
    /// The predicted wall time of the chosen runs, ms.
    pub fn estimate_ms(&self) -> f64 {
        self.runs.iter().map(|r| r.estimate_ms).sum()
    }
}

/// Chooses how to run the follow-ups `wants` (member -> its stage) of a batch whose
/// members cost `costs`: one run per chosen stage, or, when `may_merge`, at least two
/// stages were chosen and all can merge, one run of their union for every member,
/// whichever the terms price lower (today's way on a tie).
pub fn choose_follow_ups(
    wants: &BTreeMap<usize, Stage>,
    costs: &BTreeMap<usize, KernelCost>,
    terms: &CostTerms,
    measured: &BTreeMap<String, u32>,
    may_merge: bool,
) -> FollowUpPlan {
    let mut per_stage: BTreeMap<Stage, Vec<usize>> = BTreeMap::new();
    for (member, stage) in wants {
        per_stage.entry(*stage).or_default().push(*member);
    }
    let cost_of =
        |members: &[usize]| -> Vec<&KernelCost> { members.iter().filter_map(|m| costs.get(m)).collect() };
    let separate: Vec<PlannedRun> = per_stage
        .iter()
        .map(|(stage, members)| PlannedRun {
            stages: vec![*stage],
            members: members.clone(),
            estimate_ms: terms.run_ms(passes_of(&[*stage], measured), &cost_of(members)),
        })
        .collect();
    let separate_ms: f64 = separate.iter().map(|r| r.estimate_ms).sum();
    let stages: Vec<Stage> = per_stage.keys().copied().collect::<BTreeSet<_>>().into_iter().collect();
    if stages.len() < 2 || !stages.iter().all(|s| mergeable(*s)) {
        let why = if stages.len() < 2 {
            format!("one follow-up run ({}) for {} kernel(s)", label(&stages), wants.len())
        } else {
            format!("one run per follow-up stage ({}): not every one can share a run", label(&stages))
        };
        return FollowUpPlan { runs: separate, merged: false, alternative_ms: None, why };
    }
    let all: Vec<usize> = wants.keys().copied().collect();
    let union_passes = passes_of(&stages, measured);
    let merged_ms = terms.run_ms(union_passes, &cost_of(&all));
    let starts_saved = separate.len() - 1;
    let extra = f64::from(union_passes) * all.len() as f64
        - separate
            .iter()
            .map(|r| f64::from(passes_of(&r.stages, measured)) * r.members.len() as f64)
            .sum::<f64>();
    let numbers = format!(
        "{starts_saved} program start(s) fewer ({:.1} s) against {extra:.0} more launch passes ({:.1} s); {}",
        starts_saved as f64 * terms.start_ms / 1000.0,
        (merged_ms - separate_ms + starts_saved as f64 * terms.start_ms) / 1000.0,
        terms.said()
    );
    if !may_merge {
        let why = format!(
            "one run per follow-up stage ({}), as asked: one merged run would take {:.1} s against {:.1} s",
            label(&stages),
            merged_ms / 1000.0,
            separate_ms / 1000.0
        );
        return FollowUpPlan { runs: separate, merged: false, alternative_ms: Some(merged_ms), why };
    }
    if merged_ms < separate_ms {
        let run = PlannedRun { stages: stages.clone(), members: all, estimate_ms: merged_ms };
        let why = format!(
            "one follow-up run ({}) for {} kernels, {:.1} s against {:.1} s for one run per stage: {numbers}",
            label(&stages),
            wants.len(),
            merged_ms / 1000.0,
            separate_ms / 1000.0
        );
        FollowUpPlan { runs: vec![run], merged: true, alternative_ms: Some(separate_ms), why }
    } else {
        let why = format!(
            "one run per follow-up stage ({}), {:.1} s against {:.1} s for one merged run: {numbers}",
            label(&stages),
            separate_ms / 1000.0,
            merged_ms / 1000.0
        );
        FollowUpPlan { runs: separate, merged: false, alternative_ms: Some(merged_ms), why }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A set the H200 never ran is priced from the largest measured set it holds plus the
    /// rest's own passes, never above the plain sum.
    #[test]
    fn an_unmeasured_union_is_priced_from_the_largest_measured_set_it_holds() {
        let none = BTreeMap::new();
        let all4 = [Stage::Basic, Stage::Memory, Stage::Compute, Stage::Occupancy];
        assert_eq!(passes_of(&all4, &none), 17);
        let with_counters = [Stage::Basic, Stage::Memory, Stage::Compute, Stage::Occupancy, Stage::Counters];
        assert_eq!(passes_of(&with_counters, &none), 17);
        // basic+memory+compute+occupancy (17) and speed-of-light's own, below the plain sum.
        let unmeasured = [Stage::Basic, Stage::Memory, Stage::Compute, Stage::Occupancy, Stage::SpeedOfLight];
        assert!(
            passes_of(&unmeasured, &none)
                < unmeasured.iter().map(|s| definition(*s).passes_h200.unwrap()).sum()
        );
        assert_eq!(passes_of(&[Stage::Basic, Stage::Counters], &none), 14);
        let measured = BTreeMap::from([(label(&with_counters), 18)]);
        assert_eq!(passes_of(&with_counters, &measured), 18);
    }

    fn sample(wall_ms: f64, launch_passes: f64, first: bool) -> RunSample {
        RunSample { wall_ms, launch_passes, kernel_ms: 0.0, first }
    }

    /// The zoo's follow-up runs on the H200 (`zoo-auto.log`): the fit gives back the terms
    /// the default was taken from.
    #[test]
    fn the_fit_recovers_the_h200_terms_and_skips_first_runs() {
        let runs = [
            (12.0, 1890.0),
            (35.0, 2780.0),
            (21.0, 2500.0),
            (24.0, 3250.0),
            (24.0, 2100.0),
            (6.0, 1850.0),
            (8.0, 1880.0),
            (8.0, 1890.0),
            (7.0, 2260.0),
            (48.0, 4090.0),
            (84.0, 3080.0),
        ];
        let mut samples: Vec<RunSample> = runs.iter().map(|(x, y)| sample(*y, *x, false)).collect();
        samples.push(sample(60_000.0, 60.0, true));
        let t = CostTerms::fit(&samples).unwrap();
        assert!((t.per_pass_ms - 21.36).abs() < 0.05, "{t:?}");
        assert!((t.start_ms - 1968.6).abs() < 1.0, "{t:?}");
        assert_eq!(t.from, TermsFrom::History(11));
    }

    #[test]
    fn one_run_or_a_negative_slope_falls_back_to_the_default_per_pass() {
        let t = CostTerms::fit(&[sample(3000.0, 40.0, false)]).unwrap();
        assert_eq!(t.per_pass_ms, DEFAULT_PER_PASS_MS);
        assert!((t.start_ms - (3000.0 - 21.0 * 40.0)).abs() < 1e-9);
        let falling = CostTerms::fit(&[sample(3000.0, 10.0, false), sample(2000.0, 50.0, false)]).unwrap();
        assert_eq!(falling.per_pass_ms, DEFAULT_PER_PASS_MS);
        // Only first runs: fitted on them (their start holds the first start's extra);
        // a later run, when there is one, is what the fit reads.
        let first = CostTerms::fit(&[sample(3000.0, 10.0, true)]).unwrap();
        assert!((first.start_ms - (3000.0 - 21.0 * 10.0)).abs() < 1e-9);
        let both = CostTerms::fit(&[sample(9000.0, 10.0, true), sample(3000.0, 40.0, false)]).unwrap();
        assert!((both.start_ms - (3000.0 - 21.0 * 40.0)).abs() < 1e-9);
        assert!(CostTerms::fit(&[]).is_none());
        let basic = CostTerms::from_basic(&RunSample {
            wall_ms: 5590.0,
            launch_passes: 60.0,
            kernel_ms: 30.0,
            first: true,
        });
        assert!((basic.start_ms - (5590.0 - 30.0 - 1260.0)).abs() < 1e-9);
    }

    fn terms(start_ms: f64, per_pass_ms: f64) -> CostTerms {
        CostTerms { start_ms, per_pass_ms, from: TermsFrom::BasicRun }
    }

    fn kernels(durations_ms: &[f64]) -> BTreeMap<usize, KernelCost> {
        durations_ms
            .iter()
            .enumerate()
            .map(|(i, d)| (i, KernelCost { launches: 1, duration_ms: *d }))
            .collect()
    }

    /// The held-out program's follow-ups: 3 memory, 2 compute, 1 occupancy. Short kernels:
    /// one merged run (12 passes on the H200) beats three starts.
    #[test]
    fn short_kernels_merge_their_follow_ups() {
        let wants: BTreeMap<usize, Stage> = [
            (0, Stage::Memory),
            (1, Stage::Memory),
            (2, Stage::Memory),
            (3, Stage::Compute),
            (4, Stage::Compute),
            (5, Stage::Occupancy),
        ]
        .into();
        let plan =
            choose_follow_ups(&wants, &kernels(&[0.2; 6]), &terms(2000.0, 21.0), &BTreeMap::new(), true);
        assert!(plan.merged, "{}", plan.why);
        assert_eq!(plan.runs.len(), 1);
        assert_eq!(plan.runs[0].stages, vec![Stage::Memory, Stage::Compute, Stage::Occupancy]);
        // 2000 + 6 x 12 x 21.2 = 3526.4 (12 passes, as measured on the H200) against
        // 3 x 2000 + (3x8 + 2x12 + 7) x 21.2 = 7166.
        assert!((plan.estimate_ms() - 3526.4).abs() < 1e-6, "{}", plan.estimate_ms());
        assert!((plan.alternative_ms.unwrap() - 7166.0).abs() < 1e-6);
        assert!(
            plan.why.starts_with("one follow-up run (memory+compute+occupancy) for 6 kernels, 3.5 s"),
            "{}",
            plan.why
        );
    }

    /// Replay-bound kernels (100 ms each): 20 extra passes of 121 ms cost more than a start.
    #[test]
    fn long_kernels_keep_one_run_per_stage() {
        let wants: BTreeMap<usize, Stage> = [(0, Stage::Memory), (1, Stage::Compute)].into();
        let plan = choose_follow_ups(
            &wants,
            &kernels(&[100.0, 100.0]),
            &terms(2000.0, 21.0),
            &BTreeMap::new(),
            true,
        );
        assert!(!plan.merged, "{}", plan.why);
        assert_eq!(
            plan.runs.iter().map(|r| r.stages.clone()).collect::<Vec<_>>(),
            vec![vec![Stage::Memory], vec![Stage::Compute]]
        );
        assert!(plan.why.starts_with("one run per follow-up stage (memory+compute)"), "{}", plan.why);
    }

    /// A measured union's passes replace the sum; one stage or a section stage never merge.
    #[test]
    fn measured_unions_and_the_cases_without_a_choice() {
        let measured: BTreeMap<String, u32> = [("memory+compute".to_string(), 13)].into();
        assert_eq!(passes_of(&[Stage::Memory, Stage::Compute], &measured), 13);
        assert_eq!(passes_of(&[Stage::Memory, Stage::Compute], &BTreeMap::new()), 20);
        assert_eq!(passes_of(&[Stage::Compute, Stage::Occupancy], &BTreeMap::new()), 12);
        let one: BTreeMap<usize, Stage> = [(0, Stage::Memory), (1, Stage::Memory)].into();
        let plan = choose_follow_ups(&one, &kernels(&[1.0, 1.0]), &terms(2000.0, 21.0), &measured, true);
        assert!(!plan.merged && plan.alternative_ms.is_none() && plan.runs.len() == 1);
        let sol: BTreeMap<usize, Stage> = [(0, Stage::Memory), (1, Stage::SpeedOfLight)].into();
        let plan = choose_follow_ups(&sol, &kernels(&[0.1, 0.1]), &terms(9000.0, 21.0), &measured, true);
        assert!(!plan.merged && plan.runs.len() == 2, "{}", plan.why);
    }
}
