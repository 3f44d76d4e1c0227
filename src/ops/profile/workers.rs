//! Running the prepared kernels: grouped into units (one kernel alone, or several harness
//! kernels of one program batched into one ncu run per stage, see `collect::batch`), the
//! units placed on lanes (one per GPU of `--gpus`, each a thread running its units in
//! order and stopping at its first failure), and each kernel's timing, environment
//! record, stages and analysis.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::Extras;
use crate::analyze::rules::Rules;
use crate::analyze::AnalyzeOptions;
use crate::collect::prepare::PreparedKernel;
use crate::collect::traced::CensusWay;
use crate::collect::{self, batch, environment, timing, KernelRun};
use crate::events::{About, BatchPlanned, Event, StageCommand};
use crate::model::stage::Stage;
use crate::ncu::StageCollection;
use crate::plan::{self, KernelPlan, Plan};
use crate::process;
use crate::report;
use crate::shell::Shell;

/// How each unit ended: the index of each kernel that ran (or was meant to), and how.
type Endings = Vec<(usize, Result<()>)>;

/// Kernels that run together: the indices of their prepared kernels, and whether they
/// run as a batch ([`collect::batch`]) or, one kernel, on the single path.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Unit {
    members: Vec<usize>,
    batched: bool,
}

/// Everything a unit's run reads.
struct Ctx<'a, 'p> {
    plan: &'a Plan,
    prepared: &'a [PreparedKernel<'p>],
    ncu_for: &'a (dyn Fn(&KernelPlan) -> PathBuf + Sync),
    census: &'a CensusWay,
    rules: Rules,
    extras: Extras,
    shell: &'a Shell,
}

/// Whether [`run_kernel`] still has to time the kernel and record the environment (a
/// kernel a batch sent back to run alone has both already).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prelude {
    Run,
    Done,
}

/// Runs every prepared kernel, one worker per GPU when `--gpus` names several.
pub(super) fn run_all(
    plan: &Plan,
    prepared: &[PreparedKernel<'_>],
    ncu_for: &(dyn Fn(&KernelPlan) -> PathBuf + Sync),
    census: &CensusWay,
    extras: Extras,
    shell: &Shell,
) -> Endings {
    let ctx = Ctx { plan, prepared, ncu_for, census, rules: Rules::builtin(), extras, shell };
    let lanes = lanes(prepared, units(plan, prepared, extras));
    if plan.gpus.len() > 1 && lanes.len() > 1 {
        std::thread::scope(|scope| {
            let handles: Vec<_> = lanes.iter().map(|lane| scope.spawn(|| ctx.run_lane(lane))).collect();
            handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
        })
    } else {
        ctx.run_lane(&lanes.into_iter().flatten().collect::<Vec<_>>())
    }
}

/// The order kernels run in: each alone, or several harness kernels of one program
/// together (see [`collect::batch`]), each unit where its first kernel was selected. A
/// batchable kernel with no partner runs as a batch of one when its `auto` plan may be
/// merged ([`lone_batch`]).
fn units(plan: &Plan, prepared: &[PreparedKernel<'_>], extras: Extras) -> Vec<Unit> {
    let mut units: Vec<(Option<String>, Vec<usize>)> = Vec::new();
    for (i, p) in prepared.iter().enumerate() {
        let key =
            (plan.batch && !extras.timing_only).then(|| batch::batch_key(p.kernel, &p.target)).flatten();
        match units.iter_mut().find(|(k, _)| key.is_some() && *k == key) {
            Some((_, members)) => members.push(i),
            None => units.push((key, vec![i])),
        }
    }
    units
        .into_iter()
        .map(|(key, members)| {
            let batched =
                key.is_some() && (members.len() > 1 || lone_batch(plan, prepared[members[0]].kernel));
            Unit { members, batched }
        })
        .collect()
}

/// Whether a batchable kernel with no partner runs as a batch of one: with `auto` stages
/// and the planner on, so its first run can collect basic with the follow-ups (one program
/// start fewer than basic then a follow-up run, see `batch::first`) and a history can plan
/// its next runs. `KPROF_PLAN=fixed` keeps it on the single path, and so does an
/// `--output-dir` that names its one profile directory: a batch writes its program's cost
/// history in the profiles root, here the folder beside that directory, where nothing is
/// written.
fn lone_batch(plan: &Plan, kernel: &KernelPlan) -> bool {
    let explicit_dir = plan.output_dir.is_some() && plan.kernels.len() == 1;
    kernel.stages.is_auto() && batch::planner_on() && !explicit_dir
}

/// What a dry run shows for each unit of several kernels: the batched commands of their
/// first stages, as a real run would start them.
pub(super) fn planned_batches(
    plan: &Plan,
    prepared: &[PreparedKernel<'_>],
    ncu_for: &dyn Fn(&KernelPlan) -> PathBuf,
    extras: Extras,
) -> Vec<BatchPlanned> {
    let mut out = Vec::new();
    for unit in units(plan, prepared, extras).into_iter().filter(|u| u.batched).map(|u| u.members) {
        let ncus: Vec<PathBuf> = unit.iter().map(|i| ncu_for(prepared[*i].kernel)).collect();
        let runs: Vec<KernelRun<'_>> =
            unit.iter().zip(&ncus).map(|(i, ncu)| kernel_run(&prepared[*i], ncu, plan)).collect();
        let group: Vec<usize> = (0..runs.len()).collect();
        let batch_dir = batch::batch_dir_of(runs[0].dir, runs.len());
        let names: Vec<&str> = runs.iter().map(|r| r.kernel.name.as_str()).collect();
        let root = runs[0].dir.path().parent().unwrap_or(runs[0].dir.path());
        let mut collections = runs[0].kernel.initial_collections();
        // The source page is split by the functions the other stages' pages named.
        collections.sort_by_key(|c| *c == StageCollection::Named(Stage::Source));
        let dry = match runs[0].kernel.stages.is_auto() {
            true => {
                let launches: Vec<u32> = runs.iter().map(|r| r.kernel.window.launch_count()).collect();
                batch::dry_plan(root, &batch::program_key(runs[0].kernel), &names, &launches, collections)
            }
            false => batch::DryPlan {
                estimates_ms: vec![None; collections.len()],
                collections,
                follow_ups_ms: None,
                note: String::new(),
            },
        };
        let from_basic = crate::ncu::command::source_from_basic(&dry.collections);
        let stages = dry
            .collections
            .iter()
            .map(|c| StageCommand {
                stage: c.label(),
                command: batch::batched_command(&runs, &group, &batch_dir, c, from_basic).1.to_string(),
            })
            .collect();
        let ms = |v: Option<f64>| v.map(|ms| ms.round() as u64);
        let total = dry.estimates_ms.iter().copied().chain([dry.follow_ups_ms]).sum::<Option<f64>>();
        out.push(BatchPlanned {
            kernels: names.iter().map(|n| n.to_string()).collect(),
            program: runs[0].target.program.clone(),
            stages,
            follow_up: runs[0].kernel.stages.is_auto(),
            estimates_ms: dry.estimates_ms.into_iter().map(ms).collect(),
            follow_ups_ms: ms(dry.follow_ups_ms),
            total_ms: ms(total),
            estimate_note: dry.note,
        });
    }
    out
}

/// The units grouped by the GPU their first kernel was placed on, in order.
fn lanes(prepared: &[PreparedKernel<'_>], units: Vec<Unit>) -> Vec<Vec<Unit>> {
    let mut lanes: Vec<(String, Vec<Unit>)> = Vec::new();
    for unit in units {
        let gpu =
            prepared[unit.members[0]].kernel.env.get(plan::VISIBLE_DEVICES).cloned().unwrap_or_default();
        match lanes.iter_mut().find(|(g, _)| *g == gpu) {
            Some((_, us)) => us.push(unit),
            None => lanes.push((gpu, vec![unit])),
        }
    }
    lanes.into_iter().map(|(_, us)| us).collect()
}

impl Ctx<'_, '_> {
    /// One worker: its units in order, stopping at the first failure.
    fn run_lane(&self, lane: &[Unit]) -> Endings {
        let mut out = Vec::new();
        for unit in lane {
            let results = self.run_unit(unit);
            let failed = results.iter().any(|(_, r)| r.is_err());
            out.extend(results);
            if failed {
                break;
            }
        }
        out
    }

    fn run_unit(&self, unit: &Unit) -> Endings {
        match unit.members.as_slice() {
            [one] if !unit.batched => {
                let p = &self.prepared[*one];
                vec![(*one, self.run_kernel(p, &(self.ncu_for)(p.kernel), Prelude::Run))]
            }
            members => self.run_batch(members),
        }
    }

    /// A batch: each member's timing and environment, the batched stages, then each
    /// member's analysis, or its own run when the batch could not serve it.
    fn run_batch(&self, unit: &[usize]) -> Endings {
        let ncus: Vec<PathBuf> = unit.iter().map(|i| (self.ncu_for)(self.prepared[*i].kernel)).collect();
        for (n, i) in unit.iter().enumerate() {
            if let Err(e) = self.prelude(&self.prepared[*i], &ncus[n]) {
                // The members before it have no stages yet: the caller records them as not run.
                return vec![(*i, Err(e))];
            }
        }
        let runs: Vec<KernelRun<'_>> =
            unit.iter().zip(&ncus).map(|(i, ncu)| self.kernel_run(&self.prepared[*i], ncu)).collect();
        let served = match batch::collect_batch(&runs, &self.rules, self.shell) {
            Ok(s) => s,
            Err(e) => {
                // The batch ended as one run: its first kernel carries the error, the others
                // record the same ending.
                let code = crate::error::exit_code_of(&e);
                for i in &unit[1..] {
                    let p = &self.prepared[*i];
                    let _ = collect::record_not_run(&p.dir, p.kernel, code);
                }
                return vec![(unit[0], Err(e))];
            }
        };
        let mut out = Vec::new();
        for ((i, s), ncu) in unit.iter().zip(served).zip(&ncus) {
            let p = &self.prepared[*i];
            let ended = match s {
                batch::Served::Done => self.analyse(p),
                batch::Served::Alone => self.run_kernel(p, ncu, Prelude::Done),
            };
            let failed = ended.is_err();
            out.push((*i, ended));
            if failed {
                break;
            }
        }
        out
    }

    fn kernel_run<'b>(&self, p: &'b PreparedKernel<'_>, ncu: &'b Path) -> KernelRun<'b> {
        kernel_run(p, ncu, self.plan)
    }

    /// What comes before a kernel's stages: the harness timing when asked, and the
    /// environment record.
    fn prelude(&self, p: &PreparedKernel<'_>, ncu_path: &Path) -> Result<()> {
        let (plan, extras) = (self.plan, self.extras);
        process::check_signal("before the run")?;
        if extras.timing || extras.timing_only {
            timing::time_kernel(p, plan.timeout, extras.timing_only, self.shell)?;
        }
        if extras.timing_only {
            return Ok(());
        }
        environment::write_environment(&p.dir, ncu_path, p.kernel.privilege, &plan.workspace_root, self.shell)
    }

    /// One kernel's run: timing, the environment record, the stages, the analysis.
    fn run_kernel(&self, p: &PreparedKernel<'_>, ncu_path: &Path, before: Prelude) -> Result<()> {
        if before == Prelude::Run {
            self.prelude(p, ncu_path)?;
        }
        if self.extras.timing_only {
            return Ok(());
        }
        let manifest = collect::collect(&self.kernel_run(p, ncu_path), self.census, &self.rules, self.shell)?;
        if manifest.census_only() {
            // Its picks, the first included, are profiled together next.
            return Ok(());
        }
        self.analyse(p)
    }

    /// A kernel's analysis once its stages ran: the reports and the verdict line.
    fn analyse(&self, p: &PreparedKernel<'_>) -> Result<()> {
        process::check_signal("after the stages, before the analysis")?;
        let opts = AnalyzeOptions {
            source_root: Some(self.plan.workspace_root.clone()),
            source_roots: self.plan.source_roots.clone(),
            source_map: self.plan.source_map.clone(),
            ..Default::default()
        };
        let analysis = report::refresh(&p.dir, &opts)?;
        for w in &analysis.warnings {
            self.shell.emit(&Event::warning(About::Analysis, w.clone()));
        }
        self.shell.emit(&super::analysed(&p.dir, &analysis.decision));
        Ok(())
    }
}

/// The run of one prepared kernel with the ncu `ncu`: what a worker collects, and what a
/// dry run builds its batched commands from.
fn kernel_run<'b>(p: &'b PreparedKernel<'_>, ncu: &'b Path, plan: &Plan) -> KernelRun<'b> {
    KernelRun {
        dir: &p.dir,
        kernel: p.kernel,
        target: &p.target,
        ncu,
        first: &p.stage_commands,
        timeout: plan.timeout,
        batch_picks: super::census::picks_batched(plan),
    }
}
