//! Fields computed from other fields (shares, ratios, waste): one function, so every
//! derived number has one definition.
//!
//! [`derive`] runs one helper per family of fields, in an order where each reads only
//! fields already set: the direct ones, then what an earlier helper inserted (the FLOP
//! figures read `dram_bytes` from the traffic helper).

use std::collections::BTreeMap;

use super::StallShare;

/// A kernel's fields by name, as [`super::KernelSummary`] keeps them.
type Fields = BTreeMap<String, Option<f64>>;

/// A field's value, if collected.
fn get(f: &Fields, k: &str) -> Option<f64> {
    f.get(k).copied().flatten()
}

/// Inserts every derived field into `f`, from the direct fields and the stall shares.
pub(super) fn derive(f: &mut Fields, stalls: &[StallShare]) {
    derive_resources(f);
    derive_throughput(f);
    derive_traffic(f);
    derive_flops(f);
    derive_stall_shares(f, stalls);
    derive_ratios(f);
    derive_losses(f);
}

/// Shared memory per block (static plus dynamic) and the blocks an SM holds (the
/// tightest occupancy limit).
fn derive_resources(f: &mut Fields) {
    let smem =
        match (get(f, "static_shared_mem_per_block_bytes"), get(f, "dynamic_shared_mem_per_block_bytes")) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    f.insert("shared_mem_per_block_bytes".into(), smem);
    f.insert("shared_mem_per_block_kib".into(), smem.map(|b| b / 1024.0));
    let names = [
        "occupancy_limit_registers",
        "occupancy_limit_shared_mem",
        "occupancy_limit_warps",
        "occupancy_limit_blocks",
    ];
    let limits = names
        .iter()
        .filter_map(|k| get(f, k))
        .fold(None, |acc: Option<f64>, v| Some(acc.map_or(v, |a| a.min(v))));
    f.insert("blocks_per_sm".into(), limits);
    // Lifting the binding limit lets blocks fit up to the next one: with latency hidden by
    // warps, the time falls by the ratio of the two. When the block-slot cap binds, larger
    // blocks are the lever, and limits tied with the cap (ncu reports a block without
    // shared memory as limited to the cap) move with it.
    let mut all: Vec<f64> = names.iter().filter_map(|k| get(f, k)).collect();
    all.sort_by(f64::total_cmp);
    let cap = get(f, "occupancy_limit_blocks");
    // More warps fit an SM only where the grid has them: a grid of `waves` waves offers
    // `waves x binding` blocks per SM, which may grow to 1024 threads each. 133 blocks of
    // 1024 threads on 132 SMs gain nothing from room for two per SM (the SM with two runs
    // twice as long); 132 blocks of 128 threads gain from blocks eight times larger.
    let offered = get(f, "waves_per_sm").filter(|w| *w > 0.0);
    let growth = get(f, "block_size").filter(|b| *b > 0.0).map_or(1.0, |b| (1024.0 / b).max(1.0));
    let headroom = match all.as_slice() {
        [binding, rest @ ..] if all.len() == names.len() => {
            let next = if cap == Some(*binding) { rest.iter().find(|v| *v > binding) } else { rest.first() };
            next.filter(|n| **n > 0.0).map(|n| {
                let lifted = offered.map_or(*n, |w| n.min(w * binding * growth));
                (100.0 * (1.0 - binding / lifted)).max(0.0)
            })
        }
        _ => None,
    };
    f.insert("occupancy_headroom_pct".into(), headroom);
}

/// The busiest memory unit and the busiest unit of all.
fn derive_throughput(f: &mut Fields) {
    // Device-wide, per elapsed cycle: a unit busy only while one SM is (the active-cycle
    // L1 figure of a one-block kernel) does not make the kernel memory-bound.
    let mem =
        ["memory_throughput_pct", "dram_throughput_pct", "l1tex_throughput_elapsed_pct", "l2_throughput_pct"]
            .iter()
            .filter_map(|k| get(f, k))
            .fold(None, |acc: Option<f64>, v| Some(acc.map_or(v, |a| a.max(v))));
    f.insert("memory_max_pct".into(), mem);
    let unit = match (get(f, "sm_throughput_pct"), mem) {
        (Some(s), Some(m)) => Some(s.max(m)),
        (s, m) => s.or(m),
    };
    f.insert("unit_max_pct".into(), unit);
    let sustained = get(f, "dram_throughput_pct").map(|d| (100.0 * d / DRAM_SUSTAINED_PCT).min(100.0));
    f.insert("dram_of_sustained_pct".into(), sustained);
    // How far L2 leads DRAM: traffic L2 serves from itself (re-reads, atomics).
    let lead = match (get(f, "l2_throughput_pct"), get(f, "dram_throughput_pct")) {
        (Some(l2), Some(d)) => Some(l2 - d),
        _ => None,
    };
    f.insert("l2_lead_pct".into(), lead);
    // The units that do a kernel's data work, without those of its load/store and
    // synchronisation path (LSU, L1/shared memory, ADU): a fix that removes a barrier
    // tree removes that path's work with it.
    let work = [
        "l2_throughput_pct",
        "fma_pipe_pct",
        "alu_pipe_pct",
        "fp64_pipe_pct",
        "xu_pipe_pct",
        "tensor_pipe_pct",
    ]
    .iter()
    .filter_map(|k| get(f, k))
    .chain(sustained)
    .fold(None, |acc: Option<f64>, v| Some(acc.map_or(v, |a| a.max(v))));
    f.insert("work_unit_max_pct".into(), work);
}

/// The DRAM throughput, percent of ncu's peak, that a stream reaches on the H200 when
/// enough bytes are in flight: 81-86 % for float4 copies and axpy
/// (`fixtures/h200/fix-loop/`), 83 % for the demo's copy. Below it, more bytes in flight
/// still gain; the DRAM roof of a saving model is this, not 100 %.
pub const DRAM_SUSTAINED_PCT: f64 = 85.0;

/// Whether a global traffic (`load` or `store`) was counted and is zero: no sectors or no
/// requests. A ratio over such a traffic is absent, not 0.
fn no_traffic(f: &Fields, dir: &str) -> bool {
    [format!("global_{dir}_sectors"), format!("global_{dir}_requests")].iter().any(|k| get(f, k) == Some(0.0))
}

/// Sectors per load and store request, and the bytes DRAM moved. A direction with no
/// traffic has no ratios: ncu prints 0 bytes per sector for a kernel whose only global
/// writes are atomics, and a condition comparing that 0 must not hold.
fn derive_traffic(f: &mut Fields) {
    for dir in ["load", "store"] {
        if no_traffic(f, dir) {
            f.insert(format!("global_{dir}_bytes_per_sector"), None);
        }
    }
    let per_request = |f: &Fields, dir: &str| match (
        get(f, &format!("global_{dir}_sectors")),
        get(f, &format!("global_{dir}_requests")),
    ) {
        (Some(s), Some(r)) if s > 0.0 && r > 0.0 => Some(s / r),
        _ => None,
    };
    let spr = per_request(f, "load");
    f.insert("sectors_per_request".into(), spr);
    let sspr = per_request(f, "store");
    f.insert("store_sectors_per_request".into(), sspr);
    let dram = match (get(f, "dram_read_bytes"), get(f, "dram_write_bytes")) {
        (Some(r), Some(w)) => Some(r + w),
        _ => None,
    };
    f.insert("dram_bytes".into(), dram);
}

/// FLOPs (an FMA counts two), their rate and the arithmetic intensity against DRAM bytes.
fn derive_flops(f: &mut Fields) {
    // A --set full page counts FLOPs per elapsed cycle; the sums are those times the cycles.
    for (sum, per_cycle) in [
        ("ffma_thread_inst", "ffma_per_cycle"),
        ("fadd_thread_inst", "fadd_per_cycle"),
        ("fmul_thread_inst", "fmul_per_cycle"),
        ("hfma_thread_inst", "hfma_per_cycle"),
        ("dfma_thread_inst", "dfma_per_cycle"),
    ] {
        if get(f, sum).is_none() {
            if let (Some(rate), Some(cycles)) = (get(f, per_cycle), get(f, "smsp_cycles_elapsed")) {
                f.insert(sum.into(), Some(rate * cycles));
            }
        }
    }
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
    let ai = match (flops, get(f, "dram_bytes")) {
        (Some(fl), Some(b)) if b > 0.0 => Some(fl / b),
        _ => None,
    };
    f.insert("arithmetic_intensity".into(), ai);
}

/// The top stall's weight and the shares of the stall reasons the rules name.
fn derive_stall_shares(f: &mut Fields, stalls: &[StallShare]) {
    f.insert("top_stall_warps_per_issue".into(), stalls.first().map(|s| s.warps_per_issue));
    let total: f64 = stalls.iter().map(|s| s.warps_per_issue).sum();
    let ls = stalls.iter().find(|s| s.reason == "long_scoreboard").map(|s| s.warps_per_issue);
    f.insert("long_scoreboard_share_pct".into(), ls.filter(|_| total > 0.0).map(|v| 100.0 * v / total));
    for reason in ["barrier", "no_instruction", "lg_throttle", "mio_throttle", "branch_resolving", "drain"] {
        let v = stalls.iter().find(|s| s.reason == reason).map(|s| s.warps_per_issue);
        f.insert(format!("{reason}_share_pct"), v.filter(|_| total > 0.0).map(|v| 100.0 * v / total));
    }
    let shares = |reasons: &[&str]| -> Option<f64> {
        let found: Vec<f64> = reasons
            .iter()
            .filter_map(|r| stalls.iter().find(|s| s.reason == *r).map(|s| s.warps_per_issue))
            .collect();
        (!found.is_empty() && total > 0.0).then(|| 100.0 * found.iter().sum::<f64>() / total)
    };
    // The waiting on global memory: for loads (long_scoreboard), for room in the LSU queue
    // (lg_throttle), and at exit for writes and reductions to drain (drain). Behind
    // same-address atomics all of it is theirs: the loads queue behind the REDs.
    f.insert("global_wait_share_pct".into(), shares(&["long_scoreboard", "lg_throttle", "drain"]));
    // Around barriers warps wait at the barrier and for the shared-memory exchange the
    // barriers order (the MIO queue and its results).
    f.insert(
        "sync_wait_share_pct".into(),
        shares(&["barrier", "membar", "mio_throttle", "short_scoreboard"]),
    );
    // Waiting on MIO: for an entry in its queue, or for the result of what it ran (an LDC,
    // a shared-memory access or atomic reports short_scoreboard until its data is back).
    let mio: Vec<f64> = ["mio_throttle", "short_scoreboard"]
        .iter()
        .filter_map(|r| stalls.iter().find(|s| s.reason == *r).map(|s| s.warps_per_issue))
        .collect();
    let share = (!mio.is_empty() && total > 0.0).then(|| 100.0 * mio.iter().sum::<f64>() / total);
    f.insert("mio_wait_share_pct".into(), share);
}

/// `num` as a percentage of `den`: 0 when `den` is 0, `None` when either is missing.
fn ratio_pct(num: Option<f64>, den: Option<f64>) -> Option<f64> {
    match (num, den) {
        (Some(n), Some(d)) if d > 0.0 => Some(100.0 * n / d),
        (Some(_), Some(_)) => Some(0.0),
        _ => None,
    }
}

/// The sum of some fields, `None` when any is missing.
fn field_sum(f: &Fields, names: &[&str]) -> Option<f64> {
    names.iter().map(|n| get(f, n)).try_fold(0.0, |acc, v| v.map(|v| acc + v))
}

/// Percentages of one count in another: bank conflicts, atomic requests, local traffic.
fn derive_ratios(f: &mut Fields) {
    let conflicts = ratio_pct(get(f, "shared_bank_conflicts"), get(f, "shared_wavefronts"));
    f.insert("shared_conflict_pct".into(), conflicts);
    let atomics = ratio_pct(get(f, "shared_atom_wavefronts"), get(f, "shared_wavefronts"));
    f.insert("shared_atom_wavefront_pct".into(), atomics);
    let requests =
        ["global_load_requests", "global_store_requests", "global_red_requests", "global_atom_requests"];
    let atomics = ratio_pct(field_sum(f, &requests[2..]), field_sum(f, &requests));
    f.insert("atomic_request_pct".into(), atomics);
    let global_sectors = field_sum(f, &["global_load_sectors", "global_store_sectors"]);
    let local_sectors = field_sum(f, &["local_load_sectors", "local_store_sectors"]);
    f.insert(
        "local_traffic_pct".into(),
        ratio_pct(local_sectors, global_sectors.zip(local_sectors).map(|(g, l)| g + l)),
    );
    // Shares of the warp instructions; without instructions there is no share.
    let inst = get(f, "warp_inst").filter(|n| *n > 0.0);
    for (name, count) in [
        ("branch_inst_pct", "branch_inst"),
        ("ldc_inst_pct", "ldc_inst"),
        ("shared_atom_inst_pct", "shared_atom_inst"),
    ] {
        let share = ratio_pct(get(f, count), inst);
        f.insert(name.into(), share);
    }
    let shared = match (get(f, "shared_wavefronts"), get(f, "shared_bank_conflicts")) {
        (Some(w), Some(c)) => Some((w - c).max(0.0)),
        _ => None,
    };
    f.insert("shared_inst_share_pct".into(), ratio_pct(shared, inst));
    // Constant-cache requests per 100 warp instructions: a divergent LDC makes one per
    // distinct address. Counted where the constant cache's requests were collected (a
    // --set full page), else the LDC instructions (each at least one request).
    let constant = ratio_pct(get(f, "idc_requests"), inst).or_else(|| get(f, "ldc_inst_pct"));
    f.insert("constant_load_pct".into(), constant);
    // Local memory costs its traffic's share of the memory unit's time, or the waiting on
    // it: warps stall (long_scoreboard) on local loads in proportion to their sectors.
    let local = get(f, "local_traffic_pct").map(|l| {
        let traffic = get(f, "memory_max_pct").map_or(0.0, |m| l * m / 100.0);
        let waiting = get(f, "long_scoreboard_share_pct").map_or(0.0, |w| l * w / 100.0);
        traffic.max(waiting)
    });
    f.insert("local_cost_pct".into(), local);
}

/// What is lost to uncoalesced access, to the last partial wave and to divergence.
fn derive_losses(f: &mut Fields) {
    // Sectors fetched beyond what the bytes used need, per direction: a request needs at
    // least one sector, and the used bytes need bytes/32 of them. Counting from requests
    // keeps a broadcast (a warp reading one address: one sector, few bytes used) from
    // looking uncoalesced.
    // A direction with no traffic wastes nothing; with none in either, there is no share.
    let waste = |dir: &str| -> Option<(f64, f64)> {
        if no_traffic(f, dir) {
            return Some((0.0, 0.0));
        }
        let sectors = get(f, &format!("global_{dir}_sectors"))?;
        let requests = get(f, &format!("global_{dir}_requests"))?;
        let bytes = get(f, &format!("global_{dir}_bytes_per_sector"))?;
        let needed = requests.max(sectors * bytes / 32.0).min(sectors);
        Some((sectors - needed, sectors))
    };
    let excess = match (waste("load"), waste("store")) {
        (Some((lw, ls)), Some((sw, ss))) if ls + ss > 0.0 => Some(100.0 * (lw + sw) / (ls + ss)),
        _ => None,
    };
    f.insert("uncoalesced_excess_pct".into(), excess.map(|e| e.max(0.0)));
    let tail = get(f, "waves_per_sm").filter(|w| *w > 0.0).map(|w| {
        let waves = w.ceil();
        100.0 * (waves - w) / waves
    });
    f.insert("tail_loss_pct".into(), tail);
    let idle = get(f, "waves_per_sm").map(|w| 100.0 * (1.0 - w.clamp(0.0, 1.0)));
    f.insert("idle_sm_pct".into(), idle);
    f.insert(
        "divergence_loss_pct".into(),
        get(f, "threads_per_inst").map(|t| (100.0 * (1.0 - t / 32.0)).max(0.0)),
    );
}
