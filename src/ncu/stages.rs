//! What each stage asks ncu for: metric names, in one place, with their measured cost.
//!
//! A stage is defined by the metrics the analysis reads from it, not by ncu's sections:
//! sections carry many metrics nobody reads, and replay passes are what a stage costs.
//! On an H200 (ncu 2025.3.1) the memory sections alone cost 32 passes, more than
//! `--set full` (38) minus basic (10); the memory stage below answers the same questions,
//! and those of every memory limiter in `rules/bottleneck.yaml`, in 8. Every name here is a real gh100 metric (checked against ncu's
//! `--query-metrics` output and recorded runs in `fixtures/h200/`), explained in
//! `references/nvidia/ncu-metric-map.md`; tests hold both to it.
//!
//! `auto` collects no details page (ncu's rule findings). The sections behind a follow-up's
//! rules cost, for one launch on the H200: memory 32 passes (MemoryWorkloadAnalysis and
//! its tables), compute 19 (ComputeWorkloadAnalysis, InstructionStats, WarpStateStats),
//! occupancy 9 (Occupancy, LaunchStats, WarpStateStats, SchedulerStats). Added to basic and
//! the follow-up they make 26 to 49 passes, over the 0.6 x 38 = 22.8 that `auto` may cost;
//! the limiters decide from the stage's own metrics, and ncu's rules are read, and compared
//! with the verdict, whenever a details page is there (`--set full`, `--sections`, imports).
//!
//! `passes_h200` is `profiler__replayer_passes` as ncu reported it for one launch of each
//! demo and zoo kernel on the H200 (`fixtures/h200/zoo-auto/`, `archive-runs/cost/`);
//! `None` where not measured yet. Basic and one follow-up cost 17 to 22 of the full set's
//! 38; `auto` adds the source stage's 5 for the hot lines ([`auto_collects_source`]), 22
//! to 27 in all, counted apart from that target. The metrics of the MIO causes (the ADU
//! pipe, the instruction counts, shared atomics' wavefronts) added one pass to the memory
//! and compute stages (memory 7 to 8, compute 11 to 12), measured on the H200 with ncu
//! 2025.3.1.
//!
//! Several stages collected in one ncu run, and the columns of its page each stage's page
//! is cut to, are in [`merged`].

use crate::model::stage::Stage;

pub mod merged;

/// How a stage's results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    /// `--page raw`: one row per launch, one column per metric.
    Raw,
    /// `--page source --print-source cuda,sass`: per source line and SASS instruction.
    Source,
}

/// One stage's collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageDefinition {
    /// The stage.
    pub stage: Stage,
    /// `--metrics` (comma-joined).
    pub metrics: &'static [&'static str],
    /// `--section` each.
    pub sections: &'static [&'static str],
    /// `--set`.
    pub set: Option<&'static str>,
    /// The page printed.
    pub page: Page,
    /// Replay passes per launch measured on the H200.
    pub passes_h200: Option<u32>,
}

/// Duration, speed-of-light throughputs, occupancy, IPC and the launch shape: enough to
/// pick the follow-up stage and to write a first verdict. 10 passes on the H200 (ncu's
/// own `basic` set: 10 passes for less of what we read).
pub const BASIC: &[&str] = &[
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "sm__inst_executed.avg.per_cycle_active",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__block_size",
    "launch__grid_size",
    "launch__waves_per_multiprocessor",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
];

/// Which memory level, how many bytes, hit rates, coalescing (sectors per request and
/// bytes used per sector, both directions), local memory, atomics and shared-memory bank
/// conflicts. With [`STALLS`], the memory stage: 8 passes on the H200 (the memory
/// sections: 32).
pub const MEMORY: &[&str] = &[
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_sectors.sum",
    "lts__t_sector_hit_rate.pct",
    "l1tex__t_sector_hit_rate.pct",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    // Shared-memory accesses per warp instruction (too many narrow ones fill MIO), and
    // the wavefronts of shared atomics (their same-address replays count as conflicts).
    "smsp__inst_executed.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum",
];

/// Why warps do not issue: the average number of warps stalled per issue, per reason.
pub const STALLS: &[&str] = &[
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_drain_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_misc_per_issue_active.ratio",
];

/// Issue efficiency, pipe utilisation (FMA, ALU, LSU, tensor, FP64, XU), active threads per
/// instruction and the floating-point instruction counts. With [`STALLS`], the compute
/// stage: 12 passes on the H200.
pub const PIPES_AND_FLOPS: &[&str] = &[
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    // The MIO causes: the ADU pipe, and the instructions that queue for it and for MIO.
    "sm__inst_executed_pipe_adu.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed.sum",
    "smsp__inst_executed_op_branch.sum",
    "smsp__inst_executed_op_ldc.sum",
    // The constant cache's requests: one per distinct address of each LDC, so a divergent
    // lookup shows in them where a busy ADU alone could be barriers or branches.
    "idc__requests.sum",
];

/// Warp scheduling: how many warps are resident and eligible per cycle.
pub const SCHEDULER: &[&str] = &[
    "smsp__warps_active.avg.per_cycle_active",
    "smsp__warps_eligible.avg.per_cycle_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
];

/// What latency-bound kernels wait on besides stalls: atomics (their share of global
/// requests) and local memory (its share of L1 sectors).
pub const WAITED_ON: &[&str] = &[
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
];

/// FLOP counts and the bytes at each level, for the roofline point.
pub const ROOFLINE: &[&str] = &[
    "gpu__time_duration.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors.sum",
];

/// Counts that repeat run to run whatever the clocks do: the A/B check's second signal
/// (`check --base`), read by `compare::ab::counters`. Instructions (warp and thread),
/// global, local and shared-memory traffic, bank conflicts, DRAM bytes and L2 sectors,
/// the launch's registers and shared memory, and the elapsed cycles.
pub const COUNTERS: &[&str] = &[
    "gpu__time_duration.sum",
    "smsp__inst_executed.sum",
    "smsp__thread_inst_executed.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors.sum",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "gpc__cycles_elapsed.max",
];

const MEMORY_STAGE: &[&str] = &concat_metrics::<{ MEMORY.len() + STALLS.len() }>(&[MEMORY, STALLS]);
const COMPUTE: &[&str] =
    &concat_metrics::<{ PIPES_AND_FLOPS.len() + STALLS.len() }>(&[PIPES_AND_FLOPS, STALLS]);
const OCCUPANCY: &[&str] =
    &concat_metrics::<{ SCHEDULER.len() + STALLS.len() + WAITED_ON.len() }>(&[SCHEDULER, STALLS, WAITED_ON]);

const fn concat_metrics<const N: usize>(parts: &[&[&'static str]]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut n = 0;
    let mut p = 0;
    while p < parts.len() {
        let mut i = 0;
        while i < parts[p].len() {
            out[n] = parts[p][i];
            n += 1;
            i += 1;
        }
        p += 1;
    }
    assert!(n == N, "concat_metrics: N is not the total length");
    out
}

/// Every stage's definition, in [`Stage::ALL`] order.
pub const DEFINITIONS: [StageDefinition; 9] = [
    StageDefinition {
        stage: Stage::Basic,
        metrics: BASIC,
        sections: &[],
        set: None,
        page: Page::Raw,
        passes_h200: Some(10),
    },
    StageDefinition {
        stage: Stage::SpeedOfLight,
        metrics: &[],
        sections: &["SpeedOfLight", "SpeedOfLight_RooflineChart"],
        set: None,
        page: Page::Raw,
        passes_h200: Some(11),
    },
    StageDefinition {
        stage: Stage::Memory,
        metrics: MEMORY_STAGE,
        sections: &[],
        set: None,
        page: Page::Raw,
        passes_h200: Some(8),
    },
    StageDefinition {
        stage: Stage::Compute,
        metrics: COMPUTE,
        sections: &[],
        set: None,
        page: Page::Raw,
        passes_h200: Some(12),
    },
    StageDefinition {
        stage: Stage::Occupancy,
        metrics: OCCUPANCY,
        sections: &[],
        set: None,
        page: Page::Raw,
        passes_h200: Some(7),
    },
    StageDefinition {
        stage: Stage::Roofline,
        metrics: ROOFLINE,
        sections: &[],
        set: None,
        page: Page::Raw,
        passes_h200: None,
    },
    StageDefinition {
        stage: Stage::Source,
        metrics: &[],
        sections: &["SourceCounters"],
        set: None,
        page: Page::Source,
        passes_h200: Some(5),
    },
    StageDefinition {
        stage: Stage::Counters,
        metrics: COUNTERS,
        sections: &[],
        set: None,
        page: Page::Raw,
        passes_h200: Some(4),
    },
    StageDefinition {
        stage: Stage::Full,
        metrics: &[],
        sections: &[],
        set: Some("full"),
        page: Page::Raw,
        passes_h200: Some(38),
    },
];

/// The follow-ups `auto` may choose after basic.
pub const FOLLOW_UPS: [Stage; 4] = [Stage::SpeedOfLight, Stage::Memory, Stage::Compute, Stage::Occupancy];

/// Whether `auto` collects the source stage (the hot lines) besides basic and its
/// follow-up: yes unless it would more than double the rest of the run. There is no
/// per-kernel cost estimate yet, so the rule reads the passes measured per stage: source's
/// against basic's and the cheapest follow-up's.
pub fn auto_collects_source() -> bool {
    let passes = |s: Stage| definition(s).passes_h200;
    let cheapest_follow_up = FOLLOW_UPS.iter().filter_map(|s| passes(*s)).min();
    match (passes(Stage::Source), passes(Stage::Basic), cheapest_follow_up) {
        (Some(source), Some(basic), Some(follow_up)) => source <= basic + follow_up,
        _ => false,
    }
}

/// The stages `auto` runs before its follow-up: basic, and source unless
/// [`auto_collects_source`] says no.
pub fn auto_first_stages() -> Vec<Stage> {
    let mut stages = vec![Stage::Basic];
    if auto_collects_source() {
        stages.push(Stage::Source);
    }
    stages
}

/// The one line that says what `auto` collects and what it costs against `--set full`,
/// from the passes measured on the H200; `planned`: the planner may merge the runs
/// (`KPROF_PLAN` not `fixed`, batching on), so a first run collects basic with the likely
/// follow-ups.
pub fn auto_choice(planned: bool) -> String {
    let passes = |s: Stage| definition(s).passes_h200.unwrap_or(0);
    // The source page is imported from basic's report: its section rides on basic's run.
    let first: u32 = match auto_collects_source() {
        true => BASIC_WITH_SOURCE_PASSES_H200,
        false => passes(Stage::Basic),
    };
    let follow: Vec<u32> = FOLLOW_UPS.iter().map(|s| passes(*s)).collect();
    let (lo, hi) = (first + follow.iter().min().unwrap_or(&0), first + follow.iter().max().unwrap_or(&0));
    let full = passes(Stage::Full);
    if auto_collects_source() && planned {
        let merged = MERGED_FIRST_WITH_SOURCE_PASSES_H200;
        format!(
            "stages auto: basic, source (the hot lines) and one follow-up chosen from basic's metrics, \
             planned as one ncu run where it can (basic with memory, compute and occupancy and the source \
             section: {merged} replay passes per launch on an H200, {lo}-{hi} as separate runs), where \
             --set full takes {full}; a --stages list without source leaves the hot lines out"
        )
    } else if auto_collects_source() {
        format!(
            "stages auto: basic and source (the hot lines), then one follow-up chosen from basic's metrics: \
             {lo}-{hi} replay passes per launch on an H200, where --set full takes {full}; \
             a --stages list without source leaves the hot lines out"
        )
    } else {
        format!(
            "stages auto: basic, then one follow-up chosen from its metrics ({lo}-{hi} replay passes per \
             launch on an H200, --set full {full}); the source stage would more than double that: \
             add it with --stages basic,source"
        )
    }
}

/// Replay passes per launch of basic's run with the SourceCounters section added (the run
/// the source page is imported from), measured on the H200 (ncu 2025.3.1,
/// `fixtures/h200/source-import/columns.txt.gz`): 13, where basic alone takes 10 and the
/// source stage on its own 5.
pub const BASIC_WITH_SOURCE_PASSES_H200: u32 = 13;

/// Replay passes per launch of the planner's first run without history (basic, memory,
/// compute and occupancy, with or without an A/B check's counters) with the SourceCounters
/// section, measured on the H200 (`fixtures/h200/planner/merged-first/pass-sets.md`): 19,
/// where the stages alone take 17.
pub const MERGED_FIRST_WITH_SOURCE_PASSES_H200: u32 = 19;

/// The definition of a stage.
pub fn definition(stage: Stage) -> &'static StageDefinition {
    DEFINITIONS.iter().find(|d| d.stage == stage).unwrap_or(&DEFINITIONS[0])
}

/// Every metric name any stage requests, without repeats, in definition order.
pub fn all_metric_names() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for d in &DEFINITIONS {
        for m in d.metrics {
            if !out.contains(m) {
                out.push(m);
            }
        }
    }
    out
}

impl StageDefinition {
    /// The ncu options that collect and print this stage.
    pub fn ncu_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(set) = self.set {
            out.extend(["--set".to_string(), set.to_string()]);
        }
        for s in self.sections {
            out.extend(["--section".to_string(), s.to_string()]);
        }
        if !self.metrics.is_empty() {
            out.extend(["--metrics".to_string(), self.metrics.join(",")]);
        }
        out.extend(["--csv".to_string(), "--page".to_string()]);
        match self.page {
            Page::Raw => out.push("raw".to_string()),
            Page::Source => {
                out.extend(["source".to_string(), "--print-source".to_string(), "cuda,sass".to_string()])
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_follow_stage_order_and_are_unique() {
        for (d, s) in DEFINITIONS.iter().zip(Stage::ALL) {
            assert_eq!(d.stage, s);
            let mut seen = std::collections::HashSet::new();
            for m in d.metrics {
                assert!(seen.insert(*m), "{m} twice in {s}");
                assert!(m.contains("__"), "{m} is not an ncu metric name");
            }
        }
        assert_eq!(COMPUTE.len(), PIPES_AND_FLOPS.len() + STALLS.len());
        assert_eq!(COMPUTE[PIPES_AND_FLOPS.len()], STALLS[0]);
    }

    #[test]
    fn auto_costs_well_under_the_full_set() {
        // basic plus its most expensive possible follow-up, against --set full; the
        // source stage's passes are counted apart from this target.
        let full = definition(Stage::Full).passes_h200.unwrap();
        let basic = definition(Stage::Basic).passes_h200.unwrap();
        for follow_up in [Stage::Memory, Stage::Compute, Stage::Occupancy, Stage::SpeedOfLight] {
            let total = basic + definition(follow_up).passes_h200.unwrap();
            assert!(total as f64 <= 0.6 * full as f64, "basic + {follow_up} = {total} passes vs full {full}");
        }
    }

    #[test]
    fn auto_collects_the_hot_lines_and_says_what_it_costs() {
        // Source's 5 passes against basic's 10 and the cheapest follow-up's 7.
        assert!(auto_collects_source());
        assert_eq!(auto_first_stages(), [Stage::Basic, Stage::Source]);
        let line = auto_choice(false);
        assert!(line.contains("basic and source") && line.contains("20-25 replay passes"), "{line}");
        assert!(line.contains("--set full takes 38"), "{line}");
        assert!(!line.contains('\n'), "one line: {line}");
        // Planned: the merged first run's passes, measured.
        let line = auto_choice(true);
        assert!(line.contains("19 replay passes per launch on an H200, 20-25 as separate runs"), "{line}");
        assert!(line.contains("--set full takes 38") && !line.contains('\n'), "{line}");
    }

    #[test]
    fn args_name_metrics_once_and_the_page() {
        let args = definition(Stage::Memory).ncu_args();
        assert_eq!(args[0], "--metrics");
        assert_eq!(args[1].split(',').count(), MEMORY.len() + STALLS.len());
        assert_eq!(&args[2..], ["--csv", "--page", "raw"]);
        let src = definition(Stage::Source).ncu_args();
        assert_eq!(
            src,
            ["--section", "SourceCounters", "--csv", "--page", "source", "--print-source", "cuda,sass"]
        );
    }
}
