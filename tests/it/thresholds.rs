//! The limiters' thresholds, pinned. Each limiter of `rules/bottleneck.yaml` is tried on
//! synthetic summaries (built here in code, never ncu output, and never stored as such)
//! with one field at its threshold and one small step past it: a `requires` condition
//! must decide whether the limiter names the cause, a `refuted_by` one whether it is ruled
//! out, a `high_when` one whether the confidence is high.
//!
//! The thresholds below are written out by hand on purpose: moving one in the rules (say
//! `shared_conflict_pct >= 25` to `>= 60`) must fail a test here, whatever the recordings'
//! kernels happen to measure.

use std::collections::BTreeMap;

use cargo_kprof::analyze::rules::{Confidence, KernelVerdict, Rules};
use cargo_kprof::analyze::summary::{field_names, KernelSummary};

/// The step past a threshold.
const STEP: f64 = 0.01;

/// One limiter's synthetic kernel and the conditions tried on it.
struct Case {
    /// The limiter.
    id: &'static str,
    /// Fields over the quiet summary that make the limiter name the cause, with high
    /// confidence.
    synthetic: &'static [(&'static str, f64)],
    requires: &'static [&'static str],
    /// Each entry one `refuted_by` group; `a and b` is tried part by part, the others held.
    refuted_by: &'static [&'static str],
    high_when: &'static [&'static str],
    /// Conditions `field op other [+|- n]` tried by moving `other` rather than `field`
    /// (moving `field` would cross another of its thresholds first).
    move_other: &'static [&'static str],
}

/// A synthetic summary where every field is collected and no limiter holds.
fn quiet() -> BTreeMap<String, f64> {
    let mut fields: BTreeMap<String, f64> = field_names().into_iter().map(|f| (f.to_string(), 0.0)).collect();
    for (f, v) in [
        ("duration_ns", 1_000_000.0),
        ("waves_per_sm", 10.0),
        ("threads_per_inst", 32.0),
        ("theoretical_occupancy_pct", 100.0),
        ("achieved_occupancy_pct", 90.0),
        ("block_size", 256.0),
        ("occupancy_limit_registers", 8.0),
        ("occupancy_limit_shared_mem", 8.0),
        ("occupancy_limit_warps", 8.0),
        ("occupancy_limit_blocks", 8.0),
    ] {
        fields.insert(f.to_string(), v);
    }
    fields
}

fn synthetic(fields: &BTreeMap<String, f64>) -> KernelSummary {
    KernelSummary {
        kernel: "synthetic_kernel".into(),
        launches: 1,
        fields: fields.iter().map(|(k, v)| (k.clone(), Some(*v))).collect(),
        top_stalls: Vec::new(),
    }
}

/// The built-in rules, parsed once.
static RULES: std::sync::LazyLock<Rules> = std::sync::LazyLock::new(Rules::builtin);

fn decide(fields: &BTreeMap<String, f64>) -> KernelVerdict {
    RULES.decide(&synthetic(fields))
}

fn limiter(v: &KernelVerdict) -> Option<&str> {
    v.limiter.as_ref().map(|l| l.id.as_str())
}

/// A condition as this test reads it: `field op number` or `field op other [+|- n]`.
struct Cond {
    field: String,
    op: String,
    other: Option<String>,
    number: f64,
}

fn parse(text: &str) -> Cond {
    let w: Vec<&str> = text.split_whitespace().collect();
    let (field, op) = (w[0].to_string(), w[1].to_string());
    match w[2..] {
        [n] => match n.parse() {
            Ok(number) => Cond { field, op, other: None, number },
            Err(_) => Cond { field, op, other: Some(n.to_string()), number: 0.0 },
        },
        [other, sign, n] => {
            let n: f64 = n.parse().unwrap();
            Cond { field, op, other: Some(other.to_string()), number: if sign == "-" { -n } else { n } }
        }
        _ => panic!("{text}"),
    }
}

/// `fields` with the condition just holding (`holds`) or just failing, by moving one field.
fn at_edge(
    fields: &BTreeMap<String, f64>,
    text: &str,
    move_other: bool,
    holds: bool,
) -> BTreeMap<String, f64> {
    let c = parse(text);
    let mut out = fields.clone();
    let step = if holds { 0.0 } else { STEP };
    if move_other {
        // field op other + n: move other around field - n.
        let other = c.other.clone().unwrap();
        let edge = fields[&c.field] - c.number;
        let value = match c.op.as_str() {
            ">=" => edge + step,
            "<=" => edge - step,
            ">" => edge - STEP + step,
            "<" => edge + STEP - step,
            op => panic!("{op}"),
        };
        out.insert(other, value);
    } else {
        let edge = c.other.as_ref().map_or(0.0, |o| fields[o]) + c.number;
        let value = match c.op.as_str() {
            ">=" => edge - step,
            "<=" => edge + step,
            ">" => edge + STEP - step,
            "<" => edge - STEP + step,
            op => panic!("{op}"),
        };
        out.insert(c.field, value);
    }
    out
}

fn check(case: &Case) {
    let mut base = quiet();
    for (f, v) in case.synthetic {
        assert!(base.contains_key(*f), "{}: no field {f}", case.id);
        base.insert(f.to_string(), *v);
    }
    let v = decide(&base);
    assert_eq!(limiter(&v), Some(case.id), "{}: the synthetic kernel: {v:#?}", case.id);
    assert!(v.unchecked.is_empty(), "{}: {:?}", case.id, v.unchecked);
    let want_high = if case.high_when.is_empty() { Confidence::Medium } else { Confidence::High };
    assert_eq!(v.confidence, want_high, "{}", case.id);
    let other = |c: &str| case.move_other.contains(&c);
    for c in case.requires {
        let v = decide(&at_edge(&base, c, other(c), true));
        assert_eq!(limiter(&v), Some(case.id), "{}: `{c}` at its threshold must hold", case.id);
        let v = decide(&at_edge(&base, c, other(c), false));
        assert_ne!(limiter(&v), Some(case.id), "{}: `{c}` a step past its threshold must fail", case.id);
    }
    for group in case.refuted_by {
        let parts: Vec<&str> = group.split(" and ").collect();
        for (i, c) in parts.iter().enumerate() {
            let mut held = base.clone();
            for (j, p) in parts.iter().enumerate() {
                if j != i {
                    held = at_edge(&held, p, other(p), true);
                }
            }
            let v = decide(&at_edge(&held, c, other(c), true));
            assert_ne!(limiter(&v), Some(case.id), "{}: refuted by `{group}` at `{c}`'s threshold", case.id);
            let v = decide(&at_edge(&held, c, other(c), false));
            assert_eq!(limiter(&v), Some(case.id), "{}: `{c}` a step short of refuting it", case.id);
        }
    }
    for c in case.high_when {
        let v = decide(&at_edge(&base, c, other(c), true));
        assert_eq!(
            (limiter(&v), v.confidence),
            (Some(case.id), Confidence::High),
            "{}: `{c}` holds",
            case.id
        );
        if case.requires.contains(c) {
            // Past it the limiter does not hold at all: the `requires` loop tried that.
            continue;
        }
        let v = decide(&at_edge(&base, c, other(c), false));
        assert_eq!(
            (limiter(&v), v.confidence),
            (Some(case.id), Confidence::Medium),
            "{}: `{c}` fails",
            case.id
        );
    }
}

/// A pipe limiter's case: the SM and the pipe busy, memory quiet.
macro_rules! pipe {
    ($id:literal, $field:literal) => {
        Case {
            id: $id,
            synthetic: &[
                ("sm_throughput_pct", 90.0),
                ($field, 90.0),
                ("memory_max_pct", 30.0),
                ("unit_max_pct", 90.0),
            ],
            requires: &["sm_throughput_pct >= 60", concat!($field, " >= 60")],
            refuted_by: &["memory_max_pct >= sm_throughput_pct + 10"],
            high_when: &[concat!($field, " >= 80")],
            move_other: &[],
        }
    };
}

/// Every limiter, in the rules' order. Where two limiters meet at equality (the
/// occupancy limiters' `occupancy_limit_*` comparisons), the earlier one wins the tie and
/// the later one's comparison is tried from its other side only.
const CASES: &[Case] = &[
    Case {
        id: "launch-overhead",
        synthetic: &[("duration_ns", 4000.0), ("unit_max_pct", 10.0)],
        requires: &["duration_ns <= 10000"],
        refuted_by: &["unit_max_pct >= 50"],
        high_when: &["duration_ns <= 5000"],
        move_other: &[],
    },
    Case {
        id: "too-little-parallelism",
        synthetic: &[("waves_per_sm", 0.2), ("unit_max_pct", 10.0), ("idle_sm_pct", 80.0)],
        requires: &["waves_per_sm < 0.5", "unit_max_pct < 20"],
        refuted_by: &[],
        high_when: &["waves_per_sm < 0.25"],
        move_other: &[],
    },
    Case {
        id: "tail-effect",
        synthetic: &[("waves_per_sm", 1.5), ("tail_loss_pct", 35.0), ("unit_max_pct", 30.0)],
        requires: &["waves_per_sm >= 0.5", "tail_loss_pct >= 20", "unit_max_pct < 60"],
        refuted_by: &[],
        high_when: &["tail_loss_pct >= 30"],
        move_other: &[],
    },
    Case {
        id: "instruction-cache",
        synthetic: &[("no_instruction_share_pct", 70.0), ("unit_max_pct", 30.0)],
        requires: &["no_instruction_share_pct >= 40"],
        refuted_by: &["unit_max_pct >= 80"],
        high_when: &["no_instruction_share_pct >= 60"],
        move_other: &[],
    },
    Case {
        id: "atomics-contention",
        synthetic: &[
            ("atomic_request_pct", 30.0),
            ("unit_max_pct", 20.0),
            ("long_scoreboard_share_pct", 40.0),
            ("global_wait_share_pct", 90.0),
        ],
        requires: &["atomic_request_pct >= 10", "unit_max_pct < 40"],
        refuted_by: &[],
        high_when: &["atomic_request_pct >= 25"],
        move_other: &[],
    },
    Case {
        id: "barrier-stalls",
        synthetic: &[("barrier_share_pct", 60.0), ("sync_wait_share_pct", 80.0), ("unit_max_pct", 30.0)],
        requires: &["barrier_share_pct >= 30"],
        refuted_by: &["unit_max_pct >= 80"],
        high_when: &["barrier_share_pct >= 50"],
        move_other: &[],
    },
    Case {
        id: "local-memory-spills",
        synthetic: &[
            ("local_traffic_pct", 50.0),
            ("local_cost_pct", 25.0),
            ("memory_max_pct", 50.0),
            ("sm_throughput_pct", 10.0),
            ("unit_max_pct", 50.0),
        ],
        requires: &["local_traffic_pct >= 10"],
        refuted_by: &["sm_throughput_pct >= memory_max_pct + 20"],
        high_when: &["local_traffic_pct >= 40", "memory_max_pct >= 40"],
        move_other: &[],
    },
    Case {
        id: "uncoalesced-global",
        synthetic: &[
            ("uncoalesced_excess_pct", 70.0),
            ("memory_max_pct", 70.0),
            ("dram_throughput_pct", 70.0),
            ("l1_hit_rate_pct", 20.0),
            ("unit_max_pct", 70.0),
        ],
        requires: &["uncoalesced_excess_pct >= 40", "memory_max_pct >= 40"],
        refuted_by: &["dram_throughput_pct >= 60 and l1_hit_rate_pct >= 50"],
        high_when: &["uncoalesced_excess_pct >= 60", "memory_max_pct >= 60"],
        move_other: &[],
    },
    Case {
        id: "shared-bank-conflicts",
        synthetic: &[
            ("shared_conflict_pct", 90.0),
            ("l1tex_throughput_elapsed_pct", 70.0),
            ("memory_max_pct", 70.0),
            ("unit_max_pct", 70.0),
        ],
        requires: &["shared_conflict_pct >= 25", "l1tex_throughput_elapsed_pct >= 40"],
        refuted_by: &["shared_atom_wavefront_pct >= 50"],
        high_when: &["shared_conflict_pct >= 50"],
        move_other: &[],
    },
    Case {
        id: "warp-divergence",
        synthetic: &[
            ("threads_per_inst", 8.0),
            ("divergence_loss_pct", 75.0),
            ("sm_throughput_pct", 70.0),
            ("memory_max_pct", 30.0),
            ("unit_max_pct", 70.0),
        ],
        requires: &["threads_per_inst <= 20", "sm_throughput_pct >= 50"],
        refuted_by: &["memory_max_pct >= sm_throughput_pct + 10"],
        high_when: &["threads_per_inst <= 12"],
        move_other: &[],
    },
    pipe!("pipe-tensor", "tensor_pipe_pct"),
    pipe!("pipe-fp64", "fp64_pipe_pct"),
    pipe!("pipe-xu", "xu_pipe_pct"),
    Case {
        id: "pipe-lsu",
        synthetic: &[
            ("sm_throughput_pct", 90.0),
            ("lsu_pipe_pct", 90.0),
            ("l1tex_throughput_elapsed_pct", 50.0),
            ("memory_max_pct", 30.0),
            ("unit_max_pct", 90.0),
        ],
        requires: &[
            "sm_throughput_pct >= 60",
            "lsu_pipe_pct >= 60",
            "lsu_pipe_pct >= l1tex_throughput_elapsed_pct - 5",
        ],
        refuted_by: &["memory_max_pct >= sm_throughput_pct + 10"],
        high_when: &["lsu_pipe_pct >= 80"],
        move_other: &["lsu_pipe_pct >= l1tex_throughput_elapsed_pct - 5"],
    },
    pipe!("pipe-alu", "alu_pipe_pct"),
    pipe!("pipe-fma", "fma_pipe_pct"),
    Case {
        id: "dram-bandwidth",
        synthetic: &[
            ("dram_throughput_pct", 80.0),
            ("dram_of_sustained_pct", 94.1),
            ("sectors_per_request", 16.0),
            ("l2_throughput_pct", 70.0),
            ("memory_max_pct", 80.0),
            ("unit_max_pct", 80.0),
        ],
        requires: &["dram_throughput_pct >= 60", "dram_throughput_pct >= l2_throughput_pct - 15"],
        refuted_by: &[
            "dram_of_sustained_pct < 90 and long_scoreboard_share_pct >= 50 and sectors_per_request < 12",
        ],
        high_when: &["dram_throughput_pct >= 75"],
        move_other: &["dram_throughput_pct >= l2_throughput_pct - 15"],
    },
    Case {
        id: "l2-bandwidth",
        synthetic: &[
            ("l2_throughput_pct", 80.0),
            ("dram_throughput_pct", 40.0),
            ("memory_max_pct", 80.0),
            ("unit_max_pct", 80.0),
        ],
        requires: &["l2_throughput_pct >= 60", "l2_throughput_pct >= dram_throughput_pct + 20"],
        refuted_by: &[],
        high_when: &["l2_throughput_pct >= 75"],
        move_other: &["l2_throughput_pct >= dram_throughput_pct + 20"],
    },
    // L1 busier than L2, DRAM and the SM by 10 points: tried at 65 %, where L2 and DRAM at
    // their edges (55 %) stay below their own limiters.
    Case {
        id: "l1-shared-bandwidth",
        synthetic: &[
            ("l1tex_throughput_elapsed_pct", 65.0),
            ("l2_throughput_pct", 40.0),
            ("dram_throughput_pct", 40.0),
            ("sm_throughput_pct", 40.0),
            ("memory_max_pct", 65.0),
            ("unit_max_pct", 65.0),
        ],
        requires: &[
            "l1tex_throughput_elapsed_pct >= l2_throughput_pct + 10",
            "l1tex_throughput_elapsed_pct >= dram_throughput_pct + 10",
            "l1tex_throughput_elapsed_pct >= sm_throughput_pct + 10",
        ],
        refuted_by: &[],
        high_when: &[],
        move_other: &[
            "l1tex_throughput_elapsed_pct >= l2_throughput_pct + 10",
            "l1tex_throughput_elapsed_pct >= dram_throughput_pct + 10",
            "l1tex_throughput_elapsed_pct >= sm_throughput_pct + 10",
        ],
    },
    // Its own threshold, the refutation and the high confidence, at 80 %.
    Case {
        id: "l1-shared-bandwidth",
        synthetic: &[
            ("l1tex_throughput_elapsed_pct", 80.0),
            ("l2_throughput_pct", 40.0),
            ("dram_throughput_pct", 40.0),
            ("sm_throughput_pct", 40.0),
            ("memory_max_pct", 80.0),
            ("unit_max_pct", 80.0),
        ],
        requires: &["l1tex_throughput_elapsed_pct >= 60"],
        refuted_by: &["shared_conflict_pct >= 25"],
        high_when: &["l1tex_throughput_elapsed_pct >= 75"],
        move_other: &[],
    },
    Case {
        id: "divergent-constant-loads",
        synthetic: &[
            ("adu_pipe_pct", 66.0),
            ("mio_wait_share_pct", 90.0),
            ("constant_load_pct", 15.0),
            ("memory_max_pct", 5.0),
        ],
        requires: &["adu_pipe_pct >= 30", "mio_wait_share_pct >= 30", "constant_load_pct >= 5"],
        refuted_by: &["barrier_share_pct >= 30", "branch_resolving_share_pct >= mio_wait_share_pct"],
        high_when: &["adu_pipe_pct >= 50", "mio_wait_share_pct >= 50"],
        move_other: &[],
    },
    Case {
        id: "dynamic-branches",
        synthetic: &[
            ("adu_pipe_pct", 66.0),
            ("branch_resolving_share_pct", 80.0),
            ("mio_wait_share_pct", 10.0),
        ],
        requires: &["adu_pipe_pct >= 30", "branch_resolving_share_pct >= 30"],
        refuted_by: &["barrier_share_pct >= 30"],
        high_when: &["branch_resolving_share_pct >= 50"],
        move_other: &[],
    },
    Case {
        id: "shared-atomics-contention",
        synthetic: &[
            ("shared_atom_wavefront_pct", 90.0),
            ("mio_wait_share_pct", 80.0),
            ("mio_throttle_share_pct", 60.0),
        ],
        requires: &["shared_atom_wavefront_pct >= 25", "mio_wait_share_pct >= 25"],
        refuted_by: &["barrier_share_pct >= 50"],
        high_when: &["shared_atom_wavefront_pct >= 50", "mio_wait_share_pct >= 50"],
        move_other: &[],
    },
    Case {
        id: "shared-instructions",
        synthetic: &[("mio_wait_share_pct", 80.0), ("shared_inst_share_pct", 50.0)],
        requires: &["mio_wait_share_pct >= 40", "shared_inst_share_pct >= 20"],
        refuted_by: &[
            "shared_conflict_pct >= 25",
            "lsu_pipe_pct >= 60",
            "l1tex_throughput_elapsed_pct >= 60",
            "shared_atom_wavefront_pct >= 25",
        ],
        high_when: &["mio_wait_share_pct >= 60"],
        move_other: &[],
    },
    Case {
        id: "memory-latency",
        synthetic: &[
            ("long_scoreboard_share_pct", 80.0),
            ("global_wait_share_pct", 80.0),
            ("dram_throughput_pct", 75.0),
            ("dram_of_sustained_pct", 88.2),
            ("l2_throughput_pct", 76.0),
            ("l2_lead_pct", 1.0),
            ("sectors_per_request", 4.0),
            ("memory_max_pct", 76.0),
            ("unit_max_pct", 76.0),
        ],
        requires: &[
            "global_wait_share_pct >= 50",
            "theoretical_occupancy_pct > 50",
            "dram_of_sustained_pct < 90",
            "l2_throughput_pct < 90",
        ],
        refuted_by: &[
            "local_traffic_pct >= 50",
            "atomic_request_pct >= 10",
            "l2_throughput_pct >= 60 and l2_lead_pct >= 20",
            "dram_throughput_pct >= 60 and sectors_per_request >= 12",
        ],
        high_when: &["long_scoreboard_share_pct >= 70"],
        move_other: &[],
    },
    Case {
        id: "occupancy-registers",
        synthetic: &[
            ("theoretical_occupancy_pct", 20.0),
            ("achieved_occupancy_pct", 30.0),
            ("unit_max_pct", 30.0),
            ("occupancy_headroom_pct", 50.0),
            ("occupancy_limit_registers", 2.0),
            ("occupancy_limit_shared_mem", 4.0),
            ("occupancy_limit_warps", 4.0),
        ],
        requires: &[
            "theoretical_occupancy_pct <= 50",
            "achieved_occupancy_pct <= 55",
            "unit_max_pct < 60",
            "occupancy_limit_registers <= occupancy_limit_shared_mem",
            "occupancy_limit_registers <= occupancy_limit_warps",
            "occupancy_limit_registers < occupancy_limit_blocks",
        ],
        refuted_by: &[],
        high_when: &["theoretical_occupancy_pct <= 25"],
        move_other: &[
            "occupancy_limit_registers <= occupancy_limit_shared_mem",
            "occupancy_limit_registers <= occupancy_limit_warps",
            "occupancy_limit_registers < occupancy_limit_blocks",
        ],
    },
    Case {
        id: "occupancy-shared-memory",
        synthetic: &[
            ("theoretical_occupancy_pct", 20.0),
            ("achieved_occupancy_pct", 30.0),
            ("unit_max_pct", 30.0),
            ("occupancy_headroom_pct", 50.0),
            ("occupancy_limit_shared_mem", 2.0),
            ("occupancy_limit_registers", 4.0),
            ("occupancy_limit_warps", 4.0),
        ],
        // `shared <= registers` meets occupancy-registers at equality, which that one wins.
        requires: &[
            "theoretical_occupancy_pct <= 50",
            "achieved_occupancy_pct <= 55",
            "unit_max_pct < 60",
            "occupancy_limit_shared_mem <= occupancy_limit_warps",
            "occupancy_limit_shared_mem < occupancy_limit_blocks",
        ],
        refuted_by: &[],
        high_when: &["theoretical_occupancy_pct <= 25"],
        move_other: &[
            "occupancy_limit_shared_mem <= occupancy_limit_warps",
            "occupancy_limit_shared_mem < occupancy_limit_blocks",
        ],
    },
    Case {
        id: "occupancy-block-size",
        synthetic: &[
            ("theoretical_occupancy_pct", 40.0),
            ("achieved_occupancy_pct", 30.0),
            ("unit_max_pct", 30.0),
            ("occupancy_headroom_pct", 50.0),
            ("block_size", 32.0),
            ("occupancy_limit_blocks", 2.0),
            ("occupancy_limit_warps", 4.0),
            ("occupancy_limit_registers", 4.0),
            ("occupancy_limit_shared_mem", 4.0),
        ],
        // Its `high_when` is its first `requires`: past it the limiter does not hold at all.
        requires: &[
            "theoretical_occupancy_pct <= 50",
            "achieved_occupancy_pct <= 55",
            "unit_max_pct < 60",
            "block_size < 64",
            "occupancy_limit_blocks < occupancy_limit_warps",
            "occupancy_limit_blocks <= occupancy_limit_registers",
            "occupancy_limit_blocks <= occupancy_limit_shared_mem",
        ],
        refuted_by: &[],
        high_when: &["theoretical_occupancy_pct <= 50"],
        move_other: &[
            "occupancy_limit_blocks <= occupancy_limit_registers",
            "occupancy_limit_blocks <= occupancy_limit_shared_mem",
        ],
    },
    Case {
        id: "integer-overhead",
        synthetic: &[
            ("alu_pipe_pct", 60.0),
            ("fma_pipe_pct", 30.0),
            ("dram_of_sustained_pct", 30.0),
            ("l2_throughput_pct", 30.0),
            ("sm_throughput_pct", 58.0),
            ("unit_max_pct", 58.0),
        ],
        requires: &[
            "alu_pipe_pct >= 40",
            "alu_pipe_pct < 80",
            "alu_pipe_pct >= fma_pipe_pct + 10",
            "dram_of_sustained_pct < 60",
            "l2_throughput_pct < 60",
        ],
        refuted_by: &[],
        high_when: &[],
        move_other: &["alu_pipe_pct >= fma_pipe_pct + 10"],
    },
];

#[test]
fn every_limiter_is_tried() {
    let rules = Rules::builtin();
    let mut tried: Vec<&str> = CASES.iter().map(|c| c.id).collect();
    tried.dedup();
    assert_eq!(tried, rules.limiter_ids(), "a limiter without pinned thresholds, or out of order");
}

#[test]
fn each_threshold_decides_at_its_value_and_not_a_step_past_it() {
    for case in CASES {
        check(case);
    }
}

/// A cause predicted to save under 10 % of the kernel's time is at most `medium`
/// (`ranking: high_needs_saving_pct` in the rules): high confidence is earned by the time
/// a fix would win, not by the conditions alone.
#[test]
fn a_cause_that_would_save_little_is_not_high_confidence() {
    let mut fields = quiet();
    for (f, v) in [("uncoalesced_excess_pct", 80.0), ("memory_max_pct", 90.0), ("unit_max_pct", 90.0)] {
        fields.insert(f.to_string(), v);
    }
    // Saving min(80 x 90 / 100, 100 - sm_throughput_pct): 10 % at the SM's 90 %.
    for (sm, saving, confidence) in [(90.0, 10.0, Confidence::High), (90.0 + STEP, 9.99, Confidence::Medium)]
    {
        fields.insert("sm_throughput_pct".into(), sm);
        let v = decide(&fields);
        assert_eq!(limiter(&v), Some("uncoalesced-global"));
        let l = v.limiter.as_ref().unwrap();
        assert_eq!((l.predicted_saving_pct, v.confidence), (Some(saving), confidence), "SM at {sm} %");
    }
}
