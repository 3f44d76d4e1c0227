//! Whether a stage's metrics are already in a profile: collected as that stage, or by
//! `--set full`, or (an import, a `--set`/`--sections` run) found in the pages by the
//! summary fields the stage alone provides. The report's next actions and the profiles
//! index suggest a stage only when it is not.

use crate::analyze::summary::KernelSummary;
use crate::model::stage::Stage;

/// The summary fields a stage's metrics give and basic's do not: when all are there (and,
/// for stages that collect them, the stall reasons), the stage has nothing to add.
fn signature(stage: Stage) -> Option<(&'static [&'static str], bool)> {
    match stage {
        Stage::Memory => Some((&["dram_read_bytes", "global_load_sectors", "l2_hit_rate_pct"], true)),
        Stage::Compute => Some((&["issue_active_pct", "fma_pipe_pct"], true)),
        Stage::Occupancy => Some((&["local_load_sectors", "global_atom_requests"], true)),
        Stage::Roofline => Some((&["ffma_thread_inst", "dram_read_bytes"], false)),
        Stage::Basic => Some((&["duration_ns", "sm_throughput_pct"], false)),
        Stage::SpeedOfLight | Stage::Source | Stage::Counters | Stage::Full => None,
    }
}

/// Whether `stage`'s metrics are in the profile of `kernel`, whose pages were collected
/// as the stages named `collected` (`basic`, `memory`, `full`, ...).
pub fn stage_is_here(stage: Stage, collected: &[String], kernel: &KernelSummary) -> bool {
    let named = |s: &str| collected.iter().any(|c| c == s);
    if named(stage.name()) {
        return true;
    }
    if named(Stage::Full.name()) && !matches!(stage, Stage::Source | Stage::Counters) {
        return true;
    }
    match signature(stage) {
        Some((fields, stalls)) => {
            fields.iter().all(|f| kernel.get(f).is_some()) && (!stalls || !kernel.top_stalls.is_empty())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::summary::StallShare;

    fn kernel(fields: &[&str], stalls: bool) -> KernelSummary {
        KernelSummary {
            kernel: "k".into(),
            launches: 1,
            fields: fields.iter().map(|f| (f.to_string(), Some(1.0))).collect(),
            top_stalls: if stalls {
                vec![StallShare { reason: "long_scoreboard".into(), warps_per_issue: 1.0 }]
            } else {
                Vec::new()
            },
        }
    }

    #[test]
    fn a_stage_is_here_by_name_by_the_full_set_or_by_its_fields() {
        let basic_only = kernel(&["duration_ns", "sm_throughput_pct"], false);
        assert!(!stage_is_here(Stage::Memory, &["basic".into()], &basic_only));
        assert!(stage_is_here(Stage::Memory, &["basic".into(), "memory".into()], &basic_only));
        assert!(stage_is_here(Stage::Compute, &["full".into()], &basic_only));
        assert!(!stage_is_here(Stage::Source, &["full".into()], &basic_only));
        // An import of `--set full` pages: no stage names, the memory fields are there.
        let imported = kernel(&["dram_read_bytes", "global_load_sectors", "l2_hit_rate_pct"], true);
        assert!(stage_is_here(Stage::Memory, &[], &imported));
        assert!(!stage_is_here(Stage::Compute, &[], &imported));
    }
}
