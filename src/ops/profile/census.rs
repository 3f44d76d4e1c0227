//! The other kernels a census picked: a program profiled with no kernel named runs its
//! census in the first profile directory, which profiles the costliest kernel; each other
//! kernel the census picked (`breakdown.json`'s `chosen`) gets a plan of its own, with
//! its exact function as the filter and the window fitted to its launches, and a profile
//! directory beside the first.
//!
//! A plain program's census that picked several kernels ends with the census: every
//! pick, the first one too (in the census' own directory), is then profiled in one batch,
//! one ncu run per stage for all of them (`collect::batch::invocations`). Each run of a
//! plain program starts the whole program, so this is where batching saves the most.

use crate::collect::prepare::PreparedKernel;
use crate::collect::window;
use crate::model::filter::KernelFilter;
use crate::ncu::command::TargetCommand;
use crate::plan::KernelPlan;
use crate::plan::Plan;
use crate::profile::dir::ProfileDir;
use crate::profile::RunManifest;

/// A kernel the census picked, to profile after the first: its plan, the program it
/// runs in, and the directory of the census that picked it.
pub(super) struct Picked {
    pub kernel: KernelPlan,
    pub target: TargetCommand,
    pub beside: ProfileDir,
    /// Whether it is profiled in `beside` itself: the first pick of a census that ended
    /// with the census.
    pub in_place: bool,
}

/// Whether the census of a plain program in `plan` may leave all its picks to one batch:
/// batching is on, and the picks can be written beside the census (not when
/// `--output-dir` names the one profile directory).
pub fn picks_batched(plan: &Plan) -> bool {
    plan.batch && !(plan.output_dir.is_some() && plan.kernels.len() == 1)
}

/// The kernels the census of each prepared program picked and that are still to be
/// profiled, in order: those after the first, and the first too when the census ended
/// with the census. A profile without a readable breakdown (the census did not run or
/// failed) adds none.
pub(super) fn picked_to_profile(prepared: &[PreparedKernel<'_>]) -> Vec<Picked> {
    let mut out = Vec::new();
    for p in prepared.iter().filter(|p| p.kernel.filter.is_none()) {
        let Ok(Some(b)) = p.dir.read_breakdown() else { continue };
        let census_only = RunManifest::read(&p.dir).is_ok_and(|m| m.census_only());
        for (n, function) in b.chosen.iter().enumerate() {
            if n == 0 && !census_only {
                continue;
            }
            out.push(Picked {
                kernel: picked_plan(p.kernel, function, b.launches_of(function)),
                target: p.target.clone(),
                beside: p.dir.clone(),
                in_place: n == 0,
            });
        }
    }
    out
}

/// Why the kernels `picked` after the first are not profiled when `--output-dir` named
/// the one profile directory `dir`, and how to profile them.
pub(super) fn not_beside(dir: &std::path::Path, picked: &[Picked]) -> String {
    let names: Vec<&str> = picked.iter().filter(|p| !p.in_place).map(|p| p.kernel.name.as_str()).collect();
    format!(
        "the census also picked {}, not profiled: --output-dir {} names one profile directory and \
         nothing is written beside it; run again without --output-dir, or with --kernel ={} and \
         another --output-dir",
        names.join(", "),
        dir.display(),
        names[0]
    )
}

/// The plan of `function`, picked by the census of `program`'s plan, which counted
/// `launches` of it: the function exactly as the filter, named after it, the window fitted
/// to its launches as the first kernel's was.
fn picked_plan(program: &KernelPlan, function: &str, launches: usize) -> KernelPlan {
    let mut k = program.clone();
    k.name = function.to_string();
    k.filter = Some(KernelFilter::function(function));
    k.census.picked = true;
    if let Some((w, _)) = window::fit(k.window, k.window_origin, launches) {
        k.window = w;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::kinds::{LaunchWindow, Runtime, WindowOrigin};
    use crate::plan::PlannedTarget;

    #[test]
    fn a_picked_kernel_gets_its_function_and_a_fitted_window() {
        let plan = KernelPlan {
            filter: None,
            case: None,
            cwd: "/w".into(),
            ..KernelPlan::synthetic("app", PlannedTarget::Command(vec!["/bin/app".into()]), Runtime::Cuda)
        };
        assert_eq!(plan.window_origin, WindowOrigin::Default);
        let k = picked_plan(&plan, "hgemm_tiled", 1);
        assert_eq!(k.name, "hgemm_tiled");
        assert_eq!(k.filter, Some(KernelFilter::function("hgemm_tiled")));
        assert_eq!(k.window, LaunchWindow::SkipCount { launch_skip: 0, launch_count: 1 });
        // Enough launches for the default window: kept.
        assert_eq!(picked_plan(&plan, "f", 40).window, plan.window);
    }
}
