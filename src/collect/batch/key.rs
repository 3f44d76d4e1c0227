//! Which kernels batch together: the key a kernel shares with the kernels of its
//! program that can be profiled in the same ncu runs, or none when it runs on its own.

use kprof_contract::env as contract;

use super::invocations;
use crate::model::kinds::Runtime;
use crate::model::stage::Stage;
use crate::ncu::command::{StageCollection, TargetCommand};
use crate::plan::KernelPlan;

/// What makes kernels batchable together, or `None` when `kernel` runs on its own: a
/// harness target with a filter, or a kernel a census picked from a plain program, with
/// no discovery stage. Kernels with a case batch with kernels with a case (the run's
/// `KPROF_CASE` is their alternation); kernels without one, such as the kernels a census
/// picked from a bench that runs all its cases, batch with each other (the bench runs
/// every case, as for the census). A plain program's picks batch whatever their windows:
/// each keeps its own through ncu's invocation numbers ([`invocations`]). The source
/// stage batches only beside another stage: its page names no launch, so each kernel's
/// blocks are found by the functions that stage's raw page named (see
/// [`crate::collect::source_split`]).
pub fn batch_key(kernel: &KernelPlan, target: &TargetCommand) -> Option<String> {
    let picked_plain = invocations::applies(kernel);
    if !(kernel.runtime == Runtime::Harness || picked_plain) || kernel.filter.is_none() {
        return None;
    }
    // The picks' names are joined into one `--kernel-id` argument, which Linux caps at
    // 128 KiB: a pick with a very long name runs alone.
    if picked_plain
        && kernel.filter.as_ref().is_some_and(|f| f.pattern.len() > invocations::MAX_BATCHED_NAME_BYTES)
    {
        return None;
    }
    let stages = kernel.stage_collections();
    let source = StageCollection::Named(Stage::Source);
    if stages.contains(&StageCollection::Discovery) || stages.iter().all(|c| *c == source) {
        return None;
    }
    let mut env = target.env.clone();
    env.remove(contract::CASE);
    Some(format!(
        "{:?}|{:?}|{:?}|{:?}|{}|{:?}|{:?}|{:?}|{}|{:?}",
        target.program,
        target.args,
        target.cwd,
        env,
        if picked_plain { "invocations".to_string() } else { format!("{:?}", kernel.window) },
        kernel.clock_control,
        kernel.privilege,
        kernel.stages,
        kernel.case.is_some(),
        kernel.census.ncu_range_args(),
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::build::BuildTarget;
    use crate::model::kinds::CargoTargetKind;
    use crate::model::stage::StageSelection;
    use crate::plan::{PlannedTarget, StagePlan};

    /// A harness kernel of the bench `compute`, its case and filter named after it.
    fn kernel(name: &str, stages: StageSelection, extra: &[Stage]) -> KernelPlan {
        let target = PlannedTarget::Cargo(BuildTarget {
            package: "zoo".into(),
            kind: CargoTargetKind::Bench,
            name: "compute".into(),
        });
        KernelPlan {
            package: Some("zoo".into()),
            case: Some(format!("^{name}/")),
            stages: StagePlan::Stages(stages),
            extra_stages: extra.to_vec(),
            ..KernelPlan::synthetic(name, target, Runtime::Harness)
        }
    }

    fn key(k: &KernelPlan) -> Option<String> {
        let mut env: BTreeMap<String, String> = [("KPROF_PROFILE".into(), "1".into())].into();
        env.insert(contract::CASE.into(), k.case.clone().unwrap());
        let target = TargetCommand {
            program: "/ws/compute".into(),
            args: vec![],
            env,
            cwd: "/ws".into(),
            ptx_cache: None,
        };
        batch_key(k, &target)
    }

    /// An A/B check adds counters and source to every kernel: they still batch.
    #[test]
    fn kernels_with_the_source_stage_batch() {
        let ab = [Stage::Counters, Stage::Source];
        let a = key(&kernel("fp32_fma_chains", StageSelection::Auto, &ab));
        let b = key(&kernel("hmma_loop", StageSelection::Auto, &ab));
        assert!(a.is_some() && a == b, "{a:?} {b:?}");
        let listed = StageSelection::List(vec![Stage::Basic, Stage::Source]);
        let c = key(&kernel("fp32_fma_chains", listed.clone(), &[]));
        let d = key(&kernel("sfu_chains", listed, &[]));
        assert!(c.is_some() && c == d && c != a, "{c:?} {d:?}");
        let all = key(&kernel("lane_switch", StageSelection::All, &[]));
        assert!(all.is_some());
    }

    /// The source page names no launch: alone, it has no raw page to find its kernels by.
    #[test]
    fn the_source_stage_alone_or_discovery_does_not_batch() {
        let only = StageSelection::List(vec![Stage::Source]);
        assert_eq!(key(&kernel("fp32_fma_chains", only, &[])), None);
        let mut unknown = kernel("fp32_fma_chains", StageSelection::Auto, &[Stage::Source]);
        unknown.filter = None;
        assert_eq!(key(&unknown), None);
    }
}
