//! `metrics_summary.json`: one entry per kernel, launches aggregated by median.
//!
//! [`FIELDS`] is the one place that says which ncu metric feeds which summary field; the
//! rules refer to the field names only. A metric that was not collected stays `None` (null
//! in JSON), never zero.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ncu::parse::RawPage;

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
];

/// One kernel's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelSummary {
    /// The kernel name as ncu printed it (demangled).
    pub kernel: String,
    /// Launches aggregated (the most any one stage profiled).
    pub launches: usize,
    /// Every field, by name: direct ones from [`FIELDS`], then [`DERIVED`]; `None` = not collected.
    #[serde(flatten)]
    pub fields: BTreeMap<String, Option<f64>>,
    /// Stall reasons, largest first: (reason, warps per issue).
    pub top_stalls: Vec<StallShare>,
}

/// One stall reason's weight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StallShare {
    /// The reason (`long_scoreboard`).
    pub reason: String,
    /// Average warps stalled for it per issued instruction.
    pub warps_per_issue: f64,
}

impl KernelSummary {
    /// A field's value, if collected.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.fields.get(name).copied().flatten()
    }
}

/// `metrics_summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricsSummary {
    /// Always 1.
    pub schema_version: u32,
    /// The device the launches ran on, as ncu reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// One entry per kernel, in first-seen order.
    pub kernels: Vec<KernelSummary>,
}

/// The ncu metrics the analysis reads from a raw page: every [`FIELDS`] metric, the stall
/// reasons and the device's name. A page is read keeping only these (and the launch
/// columns), and `metrics_extracted.jsonl` lists only these.
pub fn is_read_metric(name: &str) -> bool {
    static NAMES: std::sync::OnceLock<std::collections::HashSet<String>> = std::sync::OnceLock::new();
    NAMES
        .get_or_init(|| {
            let mut names: std::collections::HashSet<String> =
                FIELDS.iter().map(|f| f.metric.to_string()).collect();
            names.extend(STALL_REASONS.iter().map(|r| stall_metric(r)));
            names.insert(DEVICE_NAME.to_string());
            names
        })
        .contains(name)
}

/// The column naming the device.
const DEVICE_NAME: &str = "device__attribute_display_name";

/// The factor that turns a value in ncu's printed `unit` into our base unit: nanoseconds
/// for time, bytes for data (`ms` -> 1e6, `Kbyte/block` -> 1e3). ncu scales units when it
/// prints a report without `--print-units base` (an `-i REPORT --csv` export does); SI
/// prefixes, as ncu uses them. Other units are kept as they are.
pub fn unit_scale(unit: &str) -> f64 {
    let head = unit.split('/').next().unwrap_or("").trim();
    match head {
        "ns" | "nsecond" => 1.0,
        "us" | "usecond" => 1e3,
        "ms" | "msecond" => 1e6,
        "s" | "second" => 1e9,
        "Kbyte" | "KB" => 1e3,
        "Mbyte" | "MB" => 1e6,
        "Gbyte" | "GB" => 1e9,
        "Tbyte" | "TB" => 1e12,
        _ => 1.0,
    }
}

/// The median of some values (mean of the middle two for an even count).
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 })
}

/// Summarises the launches of every kernel in `pages` (all stages of one profile).
/// `kernel_filter`, when given, keeps only kernels whose name it matches.
pub fn summarize<'p>(
    pages: impl IntoIterator<Item = &'p RawPage>,
    kernel_filter: Option<&regex::Regex>,
) -> MetricsSummary {
    let mut order: Vec<String> = Vec::new();
    let mut values: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    let mut launches: BTreeMap<String, usize> = BTreeMap::new();
    let mut device = None;
    let stall_metrics: Vec<(String, &str)> = STALL_REASONS.iter().map(|r| (stall_metric(r), *r)).collect();
    for page in pages {
        let mut per_page: BTreeMap<String, usize> = BTreeMap::new();
        for launch in page.launches() {
            let kernel = launch.kernel_name().to_string();
            if kernel_filter.is_some_and(|re| !re.is_match(&kernel)) {
                continue;
            }
            if !order.contains(&kernel) {
                order.push(kernel.clone());
            }
            *per_page.entry(kernel.clone()).or_default() += 1;
            if device.is_none() {
                device = launch.get(DEVICE_NAME).map(str::to_string);
            }
            for f in FIELDS {
                if let Some(v) = launch.number(f.metric) {
                    let v = v * unit_scale(launch.unit(f.metric).unwrap_or(""));
                    values.entry((kernel.clone(), f.name.to_string())).or_default().push(v);
                }
            }
            for (metric, reason) in &stall_metrics {
                if let Some(v) = launch.number(metric) {
                    values.entry((kernel.clone(), format!("stall_{reason}"))).or_default().push(v);
                }
            }
        }
        for (k, n) in per_page {
            let e = launches.entry(k).or_default();
            *e = (*e).max(n);
        }
    }
    let kernels = order
        .into_iter()
        .map(|kernel| {
            let mut fields: BTreeMap<String, Option<f64>> = BTreeMap::new();
            for f in FIELDS {
                let v = values.get_mut(&(kernel.clone(), f.name.to_string())).and_then(|v| median(v));
                fields.insert(f.name.to_string(), v);
            }
            let mut stalls: Vec<StallShare> = STALL_REASONS
                .iter()
                .filter_map(|r| {
                    let v =
                        values.get_mut(&(kernel.clone(), format!("stall_{r}"))).and_then(|v| median(v))?;
                    Some(StallShare { reason: r.to_string(), warps_per_issue: v })
                })
                .collect();
            stalls.sort_by(|a, b| b.warps_per_issue.total_cmp(&a.warps_per_issue));
            derive(&mut fields, &stalls);
            KernelSummary {
                launches: launches.get(&kernel).copied().unwrap_or(0),
                kernel,
                fields,
                top_stalls: stalls,
            }
        })
        .collect();
    MetricsSummary { schema_version: 1, device, kernels }
}

fn derive(f: &mut BTreeMap<String, Option<f64>>, stalls: &[StallShare]) {
    let get = |f: &BTreeMap<String, Option<f64>>, k: &str| f.get(k).copied().flatten();
    let smem =
        match (get(f, "static_shared_mem_per_block_bytes"), get(f, "dynamic_shared_mem_per_block_bytes")) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    f.insert("shared_mem_per_block_bytes".into(), smem);
    f.insert("shared_mem_per_block_kib".into(), smem.map(|b| b / 1024.0));
    let mem = ["memory_throughput_pct", "dram_throughput_pct", "l1tex_throughput_pct", "l2_throughput_pct"]
        .iter()
        .filter_map(|k| get(f, k))
        .fold(None, |acc: Option<f64>, v| Some(acc.map_or(v, |a| a.max(v))));
    f.insert("memory_max_pct".into(), mem);
    let unit = match (get(f, "sm_throughput_pct"), mem) {
        (Some(s), Some(m)) => Some(s.max(m)),
        (s, m) => s.or(m),
    };
    f.insert("unit_max_pct".into(), unit);
    let limits = [
        "occupancy_limit_registers",
        "occupancy_limit_shared_mem",
        "occupancy_limit_warps",
        "occupancy_limit_blocks",
    ]
    .iter()
    .filter_map(|k| get(f, k))
    .fold(None, |acc: Option<f64>, v| Some(acc.map_or(v, |a| a.min(v))));
    f.insert("blocks_per_sm".into(), limits);
    let spr = match (get(f, "global_load_sectors"), get(f, "global_load_requests")) {
        (Some(s), Some(r)) if r > 0.0 => Some(s / r),
        _ => None,
    };
    f.insert("sectors_per_request".into(), spr);
    let sspr = match (get(f, "global_store_sectors"), get(f, "global_store_requests")) {
        (Some(s), Some(r)) if r > 0.0 => Some(s / r),
        _ => None,
    };
    f.insert("store_sectors_per_request".into(), sspr);
    let dram = match (get(f, "dram_read_bytes"), get(f, "dram_write_bytes")) {
        (Some(r), Some(w)) => Some(r + w),
        _ => None,
    };
    f.insert("dram_bytes".into(), dram);
    let flops = {
        let fma = ["ffma_thread_inst", "hfma_thread_inst", "dfma_thread_inst"]
            .iter()
            .map(|k| get(f, k))
            .collect::<Vec<_>>();
        let add = ["fadd_thread_inst", "fmul_thread_inst"].iter().map(|k| get(f, k)).collect::<Vec<_>>();
        if fma.iter().chain(add.iter()).all(Option::is_none) {
            None
        } else {
            Some(2.0 * fma.iter().flatten().sum::<f64>() + add.iter().flatten().sum::<f64>())
        }
    };
    f.insert("flops".into(), flops);
    let per_s = match (flops, get(f, "duration_ns")) {
        (Some(fl), Some(d)) if d > 0.0 => Some(fl / (d * 1e-9)),
        _ => None,
    };
    f.insert("achieved_flops_per_s".into(), per_s);
    let ai = match (flops, dram) {
        (Some(fl), Some(b)) if b > 0.0 => Some(fl / b),
        _ => None,
    };
    f.insert("arithmetic_intensity".into(), ai);
    f.insert("top_stall_warps_per_issue".into(), stalls.first().map(|s| s.warps_per_issue));
    let total: f64 = stalls.iter().map(|s| s.warps_per_issue).sum();
    let ls = stalls.iter().find(|s| s.reason == "long_scoreboard").map(|s| s.warps_per_issue);
    f.insert("long_scoreboard_share_pct".into(), ls.filter(|_| total > 0.0).map(|v| 100.0 * v / total));
}

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
