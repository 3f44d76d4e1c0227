//! The table of summary fields: which ncu metric feeds each direct field, the stall
//! reasons, and what each derived field means. The rules name fields only; this is where
//! a field meets its metric.

/// One summary field and the ncu metric it is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The summary (and rules) name.
    pub name: &'static str,
    /// The ncu metric.
    pub metric: &'static str,
    /// The unit in the summary.
    pub unit: &'static str,
}

/// Summary fields read directly from one ncu metric each.
pub const FIELDS: &[Field] = &[
    Field { name: "duration_ns", metric: "gpu__time_duration.sum", unit: "ns" },
    Field {
        name: "sm_throughput_pct",
        metric: "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        unit: "%",
    },
    Field {
        name: "memory_throughput_pct",
        metric: "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        unit: "%",
    },
    Field {
        name: "dram_throughput_pct",
        metric: "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        unit: "%",
    },
    Field {
        name: "l1tex_throughput_pct",
        metric: "l1tex__throughput.avg.pct_of_peak_sustained_active",
        unit: "%",
    },
    Field {
        name: "l2_throughput_pct",
        metric: "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        unit: "%",
    },
    Field {
        name: "achieved_occupancy_pct",
        metric: "sm__warps_active.avg.pct_of_peak_sustained_active",
        unit: "%",
    },
    Field { name: "theoretical_occupancy_pct", metric: "sm__maximum_warps_per_active_cycle_pct", unit: "%" },
    Field { name: "registers_per_thread", metric: "launch__registers_per_thread", unit: "register/thread" },
    Field {
        name: "static_shared_mem_per_block_bytes",
        metric: "launch__shared_mem_per_block_static",
        unit: "byte",
    },
    Field {
        name: "dynamic_shared_mem_per_block_bytes",
        metric: "launch__shared_mem_per_block_dynamic",
        unit: "byte",
    },
    Field { name: "block_size", metric: "launch__block_size", unit: "thread" },
    Field { name: "grid_size", metric: "launch__grid_size", unit: "block" },
    Field { name: "waves_per_sm", metric: "launch__waves_per_multiprocessor", unit: "wave" },
    Field { name: "occupancy_limit_registers", metric: "launch__occupancy_limit_registers", unit: "block" },
    Field { name: "occupancy_limit_shared_mem", metric: "launch__occupancy_limit_shared_mem", unit: "block" },
    Field { name: "occupancy_limit_warps", metric: "launch__occupancy_limit_warps", unit: "block" },
    Field { name: "occupancy_limit_blocks", metric: "launch__occupancy_limit_blocks", unit: "block" },
    Field { name: "ipc", metric: "sm__inst_executed.avg.per_cycle_active", unit: "inst/cycle" },
    Field {
        name: "issue_active_pct",
        metric: "smsp__issue_active.avg.pct_of_peak_sustained_active",
        unit: "%",
    },
    Field {
        name: "fma_pipe_pct",
        metric: "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
        unit: "%",
    },
    Field {
        name: "alu_pipe_pct",
        metric: "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
        unit: "%",
    },
    Field {
        name: "lsu_pipe_pct",
        metric: "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
        unit: "%",
    },
    Field {
        name: "tensor_pipe_pct",
        metric: "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        unit: "%",
    },
    Field { name: "l1_hit_rate_pct", metric: "l1tex__t_sector_hit_rate.pct", unit: "%" },
    Field { name: "l2_hit_rate_pct", metric: "lts__t_sector_hit_rate.pct", unit: "%" },
    Field { name: "dram_read_bytes", metric: "dram__bytes_read.sum", unit: "byte" },
    Field { name: "dram_write_bytes", metric: "dram__bytes_write.sum", unit: "byte" },
    Field {
        name: "global_load_sectors",
        metric: "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        unit: "sector",
    },
    Field {
        name: "global_load_requests",
        metric: "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
        unit: "request",
    },
    Field {
        name: "global_store_sectors",
        metric: "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
        unit: "sector",
    },
    Field {
        name: "global_store_requests",
        metric: "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
        unit: "request",
    },
    Field {
        name: "shared_bank_conflicts",
        metric: "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
        unit: "conflict",
    },
    Field {
        name: "shared_wavefronts",
        metric: "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
        unit: "wavefront",
    },
    Field {
        name: "ffma_thread_inst",
        metric: "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
        unit: "inst",
    },
    Field {
        name: "fadd_thread_inst",
        metric: "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
        unit: "inst",
    },
    Field {
        name: "fmul_thread_inst",
        metric: "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
        unit: "inst",
    },
    Field {
        name: "hfma_thread_inst",
        metric: "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
        unit: "inst",
    },
    Field {
        name: "dfma_thread_inst",
        metric: "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
        unit: "inst",
    },
    Field { name: "sm_count", metric: "device__attribute_multiprocessor_count", unit: "SM" },
    // The device's shape and clocks: the peak rates a count's change is priced at when two
    // profiles are compared (`compare::cost`).
    Field { name: "sm_clock_khz", metric: "device__attribute_clock_rate", unit: "kHz" },
    Field {
        name: "schedulers_per_sm",
        metric: "device__attribute_num_schedulers_per_multiprocessor",
        unit: "",
    },
    Field {
        name: "ipc_per_scheduler",
        metric: "device__attribute_max_ipc_per_scheduler",
        unit: "inst/cycle",
    },
    Field { name: "warp_size", metric: "device__attribute_warp_size", unit: "thread" },
    Field { name: "memory_clock_khz", metric: "device__attribute_memory_clock_rate", unit: "kHz" },
    Field { name: "memory_bus_width_bits", metric: "device__attribute_global_memory_bus_width", unit: "bit" },
    Field { name: "l2_slices", metric: "device__attribute_l2s_count", unit: "" },
    Field {
        name: "l1tex_throughput_elapsed_pct",
        metric: "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
        unit: "%",
    },
    Field {
        name: "fp64_pipe_pct",
        metric: "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
        unit: "%",
    },
    Field {
        name: "xu_pipe_pct",
        metric: "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
        unit: "%",
    },
    Field {
        name: "threads_per_inst",
        metric: "smsp__thread_inst_executed_per_inst_executed.ratio",
        unit: "thread/inst",
    },
    Field {
        name: "global_load_bytes_per_sector",
        metric: "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
        unit: "byte/sector",
    },
    Field {
        name: "global_store_bytes_per_sector",
        metric: "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio",
        unit: "byte/sector",
    },
    Field {
        name: "local_load_sectors",
        metric: "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
        unit: "sector",
    },
    Field {
        name: "local_store_sectors",
        metric: "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
        unit: "sector",
    },
    Field {
        name: "global_red_requests",
        metric: "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
        unit: "request",
    },
    Field {
        name: "global_atom_requests",
        metric: "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
        unit: "request",
    },
    Field { name: "smsp_cycles_elapsed", metric: "smsp__cycles_elapsed.avg", unit: "cycle" },
    // The MIO causes: the ADU pipe (constant loads, dynamic branches, barriers) and the
    // warp instructions that queue in MIO.
    Field {
        name: "adu_pipe_pct",
        metric: "sm__inst_executed_pipe_adu.avg.pct_of_peak_sustained_active",
        unit: "%",
    },
    Field { name: "warp_inst", metric: "smsp__inst_executed.sum", unit: "inst" },
    Field { name: "branch_inst", metric: "smsp__inst_executed_op_branch.sum", unit: "inst" },
    Field { name: "ldc_inst", metric: "smsp__inst_executed_op_ldc.sum", unit: "inst" },
    Field { name: "idc_requests", metric: "idc__requests.sum", unit: "request" },
    Field { name: "shared_atom_inst", metric: "smsp__inst_executed_op_shared_atom.sum", unit: "inst" },
    Field {
        name: "shared_atom_wavefronts",
        metric: "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum",
        unit: "wavefront",
    },
    Field {
        name: "ffma_per_cycle",
        metric: "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed",
        unit: "inst/cycle",
    },
    Field {
        name: "fadd_per_cycle",
        metric: "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed",
        unit: "inst/cycle",
    },
    Field {
        name: "fmul_per_cycle",
        metric: "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed",
        unit: "inst/cycle",
    },
    Field {
        name: "hfma_per_cycle",
        metric: "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum.per_cycle_elapsed",
        unit: "inst/cycle",
    },
    Field {
        name: "dfma_per_cycle",
        metric: "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum.per_cycle_elapsed",
        unit: "inst/cycle",
    },
];

/// The warp stall reasons read from `smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio`.
pub const STALL_REASONS: &[&str] = &[
    "long_scoreboard",
    "short_scoreboard",
    "math_pipe_throttle",
    "wait",
    "barrier",
    "mio_throttle",
    "lg_throttle",
    "not_selected",
    "selected",
    "no_instruction",
    "dispatch_stall",
    "membar",
    "drain",
    "branch_resolving",
    "tex_throttle",
    "imc_miss",
    "sleeping",
    "misc",
];

/// Stall reasons whose source-page column (`stall_<name>`) is spelled differently from the
/// metric (`smsp__average_warps_issue_stalled_<reason>_...`), as ncu 2025.3 prints them.
const STALL_SOURCE_NAMES: &[(&str, &str)] = &[
    ("long_scoreboard", "long_sb"),
    ("short_scoreboard", "short_sb"),
    ("math_pipe_throttle", "math"),
    ("mio_throttle", "mio"),
    ("lg_throttle", "lg"),
    ("no_instruction", "no_inst"),
    ("dispatch_stall", "dispatch"),
    ("imc_miss", "imc"),
    ("tex_throttle", "tex"),
    ("sleeping", "sleep"),
];

/// The source page's name for a stall reason (`long_scoreboard` -> `long_sb`).
pub fn stall_source_name(reason: &str) -> &str {
    STALL_SOURCE_NAMES.iter().find(|(r, _)| *r == reason).map(|(_, s)| *s).unwrap_or(reason)
}

/// The ncu metric of a stall reason.
pub fn stall_metric(reason: &str) -> String {
    format!("smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio")
}

/// Fields derived from others; the rules can use them like any field.
pub const DERIVED: &[(&str, &str)] = &[
    ("shared_mem_per_block_bytes", "static + dynamic shared memory per block"),
    ("shared_mem_per_block_kib", "shared memory per block, KiB"),
    ("memory_max_pct", "the busiest of memory, DRAM, L1/TEX and L2 throughput"),
    ("unit_max_pct", "the busiest of SM and memory_max_pct"),
    (
        "dram_of_sustained_pct",
        "DRAM throughput as a percentage of what a stream sustains (85 % of ncu's peak on an H200)",
    ),
    ("l2_lead_pct", "L2 throughput minus DRAM throughput, percentage points: traffic L2 serves from itself"),
    (
        "work_unit_max_pct",
        "the busiest unit doing data work: dram_of_sustained_pct, L2 and the FMA, ALU, FP64, XU and tensor pipes (not the LSU, L1/shared memory or the ADU)",
    ),
    ("blocks_per_sm", "the smallest occupancy limit: blocks that fit on one SM"),
    ("sectors_per_request", "global load sectors per request (4 means 32-bit loads are fully coalesced)"),
    (
        "store_sectors_per_request",
        "global store sectors per request (4 means 32-bit stores are fully coalesced)",
    ),
    ("dram_bytes", "DRAM bytes read plus written"),
    ("flops", "floating-point operations (FMA counts twice)"),
    ("achieved_flops_per_s", "flops / duration"),
    ("arithmetic_intensity", "flops per DRAM byte"),
    ("top_stall_warps_per_issue", "the largest stall reason, warps per issue"),
    ("long_scoreboard_share_pct", "long-scoreboard stalls as a share of all stalls"),
    ("barrier_share_pct", "barrier stalls as a share of all stalls"),
    ("no_instruction_share_pct", "no-instruction (instruction fetch) stalls as a share of all stalls"),
    ("lg_throttle_share_pct", "LSU queue (lg_throttle) stalls as a share of all stalls"),
    ("drain_share_pct", "stalls waiting at exit for memory writes and reductions to drain, as a share of all stalls"),
    (
        "global_wait_share_pct",
        "the waiting on global memory: long_scoreboard, lg_throttle and drain stalls, as a share of all stalls (behind atomics, all of it is theirs)",
    ),
    (
        "sync_wait_share_pct",
        "the waiting around barriers: barrier, membar, mio_throttle and short_scoreboard stalls, as a share of all stalls",
    ),
    ("mio_throttle_share_pct", "MIO queue (mio_throttle) stalls as a share of all stalls"),
    ("branch_resolving_share_pct", "branch-target (branch_resolving) stalls as a share of all stalls"),
    (
        "mio_wait_share_pct",
        "stalls waiting on MIO, for a queue entry (mio_throttle) or a result (short_scoreboard), as a share of all stalls",
    ),
    (
        "shared_atom_wavefront_pct",
        "shared-memory wavefronts of atomics (ATOMS, their same-address replays included), percent of all shared wavefronts",
    ),
    ("branch_inst_pct", "branch instructions, percent of warp instructions"),
    ("ldc_inst_pct", "indexed constant loads (LDC), percent of warp instructions"),
    (
        "constant_load_pct",
        "constant-cache requests per 100 warp instructions (from idc_requests where collected, else ldc_inst_pct)",
    ),
    ("shared_atom_inst_pct", "shared-memory atomics (ATOMS), percent of warp instructions"),
    (
        "shared_inst_share_pct",
        "shared-memory wavefronts less bank-conflict replays, percent of warp instructions (a 32-bit access is one wavefront)",
    ),
    ("shared_conflict_pct", "shared-memory wavefronts caused by bank conflicts, percent of all"),
    (
        "uncoalesced_excess_pct",
        "global sectors fetched beyond what the bytes used need (loads and stores; a broadcast is not waste), percent",
    ),
    ("local_traffic_pct", "local-memory sectors, percent of local plus global sectors"),
    (
        "local_cost_pct",
        "what local memory costs: its share of the busiest memory unit's time, or of the long-scoreboard waiting, whichever is larger",
    ),
    ("atomic_request_pct", "atomic and reduction requests, percent of global requests"),
    ("tail_loss_pct", "block slots left empty by the last, partial wave, percent"),
    ("divergence_loss_pct", "thread lanes idle per executed instruction, percent"),
    ("idle_sm_pct", "the share of a full wave the grid leaves empty, percent (0 from one wave on)"),
    (
        "occupancy_headroom_pct",
        "the share of the resident blocks' latency-bound time that lifting the binding occupancy limit to the next one would remove, as far as the grid offers the warps (its blocks per SM, grown to 1024 threads), percent",
    ),
];

/// The unit of a summary field, for reports.
pub fn unit_of(name: &str) -> &'static str {
    if let Some(f) = FIELDS.iter().find(|f| f.name == name) {
        return f.unit;
    }
    match name {
        n if n.ends_with("_pct") => "%",
        "shared_mem_per_block_bytes" | "dram_bytes" => "byte",
        "shared_mem_per_block_kib" => "KiB",
        "blocks_per_sm" => "block",
        "sectors_per_request" | "store_sectors_per_request" => "sector/request",
        "flops" => "FLOP",
        "achieved_flops_per_s" => "FLOP/s",
        "arithmetic_intensity" => "FLOP/byte",
        "top_stall_warps_per_issue" => "warps/issue",
        _ => "",
    }
}

/// The ncu metric behind a field, or how it is derived.
pub fn source_of(name: &str) -> String {
    if let Some(f) = FIELDS.iter().find(|f| f.name == name) {
        return f.metric.to_string();
    }
    DERIVED.iter().find(|(n, _)| *n == name).map(|(_, d)| format!("derived: {d}")).unwrap_or_default()
}

/// Every field name the rules may use.
pub fn field_names() -> Vec<&'static str> {
    FIELDS.iter().map(|f| f.name).chain(DERIVED.iter().map(|(n, _)| *n)).collect()
}
