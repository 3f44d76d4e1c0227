//! Checks of the embedded reference set: the GPU specification schema and its H200 entry,
//! device lookup, the metric map's layout, and `explain` for every metric, section, stage
//! and classification our stages and rules use.

use std::collections::{BTreeMap, HashSet};

use cargo_kprof::analyze::summary::{stall_metric, STALL_REASONS};
use cargo_kprof::error::ExitCode;
use cargo_kprof::model::stage::Stage;
use cargo_kprof::ncu::StageCollection;
use cargo_kprof::references::{
    self, explain, find_topics, gpu_specs, lookup_gpu, parse_gpu_specs, topics, TopicKind, REQUIRED_FIELDS,
};
use serde_yaml::Value;

/// The source page's stall columns as ncu 2025.3.1 names them (seen on an H200).
const SOURCE_STALL_COLUMNS: &[&str] = &[
    "stall_barrier",
    "stall_branch_resolving",
    "stall_dispatch",
    "stall_drain",
    "stall_imc",
    "stall_lg",
    "stall_long_sb",
    "stall_math",
    "stall_membar",
    "stall_mio",
    "stall_misc",
    "stall_no_inst",
    "stall_not_selected",
    "stall_selected",
    "stall_short_sb",
    "stall_sleep",
    "stall_tex",
    "stall_wait",
];

const SECTIONS: &[&str] = &[
    "SpeedOfLight",
    "LaunchStats",
    "Occupancy",
    "MemoryWorkloadAnalysis",
    "MemoryWorkloadAnalysis_Tables",
    "ComputeWorkloadAnalysis",
    "InstructionStats",
    "WarpStateStats",
    "SchedulerStats",
    "SourceCounters",
    "SpeedOfLight_RooflineChart",
];

const CLASSIFICATIONS: &[&str] =
    &["memory-bound", "compute-bound", "latency-bound", "occupancy-limited", "balanced", "unknown"];

const QUESTIONS: &[&str] = &[
    "memory-or-compute",
    "memory-level",
    "coalescing",
    "bank-conflicts",
    "occupancy-limiters",
    "warp-stalls",
    "issue-efficiency",
    "pipe-utilisation",
    "arithmetic-intensity",
    "launch-configuration",
    "source-hotspots",
];

// ---------------------------------------------------------------------------------------
// gpu_specs.yaml
// ---------------------------------------------------------------------------------------

const INTEGER_FIELDS: &[&str] = &[
    "sm_count",
    "boost_clock_mhz",
    "shared_memory_per_sm_kib",
    "shared_memory_per_block_kib",
    "registers_per_sm",
    "registers_per_thread_max",
    "max_warps_per_sm",
    "max_blocks_per_sm",
    "max_threads_per_block",
    "fp32_lanes_per_sm",
];
const STRING_FIELDS: &[&str] = &["name", "chip", "architecture", "compute_capability", "form_factor"];
const RATE_FIELDS: &[&str] = &[
    "fp64",
    "fp64_tensor",
    "fp32",
    "fp16",
    "bf16",
    "tf32_tensor",
    "fp16_tensor",
    "bf16_tensor",
    "fp8_tensor",
];

fn raw_specs() -> Vec<Value> {
    let doc: Value = serde_yaml::from_str(references::GPU_SPECS.contents).expect("gpu_specs.yaml is YAML");
    assert_eq!(doc["schema_version"].as_u64(), Some(1), "schema_version");
    doc["gpus"].as_sequence().expect("`gpus` is a list").clone()
}

fn positive_number(v: &Value) -> bool {
    v.as_f64().is_some_and(|x| x.is_finite() && x > 0.0)
}

#[test]
fn gpu_specs_follow_the_schema() {
    let entries = raw_specs();
    assert!(entries.len() >= 13, "only {} entries", entries.len());
    for entry in &entries {
        let name = entry["name"].as_str().unwrap_or("<no name>");
        let ctx = |field: &str| format!("{name}: {field}");
        for f in STRING_FIELDS {
            let s = entry[f].as_str().unwrap_or_else(|| panic!("{} must be a string", ctx(f)));
            assert!(!s.trim().is_empty(), "{} is empty", ctx(f));
        }
        let cc = entry["compute_capability"].as_str().unwrap_or_default();
        let (major, minor) = cc.split_once('.').unwrap_or_else(|| panic!("{} is not `major.minor`", ctx(cc)));
        assert!(major.parse::<u32>().is_ok() && minor.parse::<u32>().is_ok(), "{}", ctx(cc));
        for f in INTEGER_FIELDS {
            assert!(entry[f].as_u64().is_some_and(|v| v > 0), "{} must be a positive integer", ctx(f));
        }
        assert!(positive_number(&entry["l2_cache_mib"]), "{}", ctx("l2_cache_mib"));
        let memory = &entry["memory"];
        assert!(positive_number(&memory["size_gb"]), "{}", ctx("memory.size_gb"));
        assert!(positive_number(&memory["bandwidth_gbps"]), "{}", ctx("memory.bandwidth_gbps"));
        assert!(memory["type"].as_str().is_some_and(|t| !t.is_empty()), "{}", ctx("memory.type"));
        let rates = entry["peak_tflops"].as_mapping().unwrap_or_else(|| panic!("{}", ctx("peak_tflops")));
        for f in RATE_FIELDS {
            let v = rates.get(*f).unwrap_or_else(|| panic!("{} is missing (write null)", ctx(f)));
            assert!(v.is_null() || positive_number(v), "{} must be positive or null", ctx(f));
        }
        assert!(!entry["peak_tflops"]["fp32"].is_null(), "{}", ctx("fp32 is never null"));
        let sources = entry["sources"].as_sequence().unwrap_or_else(|| panic!("{}", ctx("sources")));
        assert!(!sources.is_empty(), "{} is empty", ctx("sources"));
        assert!(
            sources.iter().all(|s| s.as_str().is_some_and(|s| !s.trim().is_empty())),
            "{}",
            ctx("sources")
        );
        if let Some(aliases) = entry.get("aliases") {
            let aliases = aliases.as_sequence().unwrap_or_else(|| panic!("{}", ctx("aliases")));
            assert!(aliases.iter().all(|a| a.as_str().is_some()), "{}", ctx("aliases"));
        }
    }
    // The typed parse agrees (unknown or misspelt keys fail here).
    let typed = parse_gpu_specs(references::GPU_SPECS.contents).expect("typed parse");
    assert_eq!(typed.len(), entries.len());
    assert_eq!(gpu_specs().len(), entries.len());
}

#[test]
fn gpu_names_and_aliases_are_unique() {
    let mut seen = HashSet::new();
    for spec in gpu_specs() {
        for n in std::iter::once(&spec.name).chain(&spec.aliases) {
            let key = n.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
            assert!(seen.insert(key), "`{n}` names two entries (or repeats within {})", spec.name);
        }
    }
}

#[test]
fn gpu_notes_name_real_fields() {
    let raw = raw_specs();
    for (spec, entry) in gpu_specs().iter().zip(&raw) {
        for note in &spec.notes {
            let mut v = entry;
            for part in note.field.split('.') {
                v = v
                    .get(part)
                    .unwrap_or_else(|| panic!("{}: note on unknown field `{}`", spec.name, note.field));
            }
            assert!(!note.note.trim().is_empty(), "{}: empty note on {}", spec.name, note.field);
        }
    }
}

#[test]
fn fp32_peak_matches_lanes_and_clock() {
    for spec in gpu_specs() {
        let derived =
            f64::from(spec.sm_count * spec.fp32_lanes_per_sm) * 2.0 * f64::from(spec.boost_clock_mhz) / 1e6;
        let listed = spec.peak_tflops.fp32.expect("fp32");
        let err = (derived - listed).abs() / listed;
        assert!(err < 0.03, "{}: fp32 {listed} vs derived {derived:.1}", spec.name);
        assert!(spec.max_threads_per_block <= spec.max_threads_per_sm());
        assert!(spec.shared_memory_per_block_kib <= spec.shared_memory_per_sm_kib, "{}", spec.name);
    }
}

#[test]
fn h200_agrees_with_the_real_device() {
    let h200 = lookup_gpu("NVIDIA H200", Some("9.0")).expect("H200 entry");
    assert_eq!(h200.name, "NVIDIA H200");
    assert_eq!(h200.compute_capability, "9.0");
    assert_eq!(h200.chip, "GH100");
    assert_eq!(h200.sm_count, 132);
    assert_eq!(h200.l2_cache_mib, 60.0);
    // ncu's device__attribute_l2_cache_size on the H200 test machine.
    assert_eq!(h200.l2_cache_bytes(), 62_914_560);
    assert!((4500.0..=5000.0).contains(&h200.memory.bandwidth_gbps), "{}", h200.memory.bandwidth_gbps);
    assert_eq!(h200.boost_clock_mhz, 1980);
    assert_eq!(h200.shared_memory_per_sm_kib, 228);
    assert_eq!(h200.shared_memory_per_block_kib, 227);
    assert_eq!((h200.max_warps_per_sm, h200.max_blocks_per_sm, h200.registers_per_thread_max), (64, 32, 255));
    assert!(!h200.observed.is_empty());
    let ridge = h200.ridge_point(h200.peak_tflops.fp32.unwrap());
    assert!((13.0..15.0).contains(&ridge), "{ridge}");
}

#[test]
fn lookup_is_exact_and_checks_compute_capability() {
    assert!(lookup_gpu("NVIDIA H200", Some("9.0")).is_some());
    assert!(lookup_gpu("NVIDIA H200", None).is_some());
    assert!(lookup_gpu("  nvidia   h200 ", Some("9")).is_some());
    assert_eq!(lookup_gpu("H200", None).map(|s| s.name.as_str()), Some("NVIDIA H200"));
    assert!(lookup_gpu("NVIDIA H200", Some("8.0")).is_none());
    assert!(lookup_gpu("NVIDIA H200", Some("not a cc")).is_none());
    assert!(lookup_gpu("NVIDIA H200 NVL", Some("9.0")).is_none());
    assert!(lookup_gpu("NVIDIA H20", None).is_none());
    assert!(lookup_gpu("NVIDIA Imaginary 9000", None).is_none());
    assert!(lookup_gpu("", None).is_none());
    let pcie = lookup_gpu("NVIDIA H100 PCIe", Some("9.0")).unwrap();
    let sxm = lookup_gpu("NVIDIA H100 80GB HBM3", Some("9.0")).unwrap();
    assert_ne!(pcie.sm_count, sxm.sm_count);
    for (name, cc) in [
        ("Tesla V100-SXM2-32GB", "7.0"),
        ("Tesla T4", "7.5"),
        ("NVIDIA A10", "8.6"),
        ("NVIDIA A100-SXM4-40GB", "8.0"),
        ("NVIDIA A100-SXM4-80GB", "8.0"),
        ("NVIDIA L4", "8.9"),
        ("NVIDIA L40S", "8.9"),
        ("NVIDIA GeForce RTX 3090", "8.6"),
        ("NVIDIA GeForce RTX 4090", "8.9"),
        ("NVIDIA B200", "10.0"),
    ] {
        assert!(lookup_gpu(name, Some(cc)).is_some(), "{name} {cc}");
    }
}

// ---------------------------------------------------------------------------------------
// The metric map and explain
// ---------------------------------------------------------------------------------------

#[test]
fn metric_map_layout() {
    let all = topics();
    let mut names = HashSet::new();
    for t in all {
        for f in REQUIRED_FIELDS {
            assert!(t.field(f).is_some_and(|v| !v.is_empty()), "`{}` (line {}) lacks `{f}`", t.name, t.line);
        }
        if t.kind == TopicKind::Metric {
            assert!(t.field("Section").is_some(), "metric `{}` lacks `Section`", t.name);
        }
        if t.kind == TopicKind::Question {
            assert!(t.field("Question").is_some() && t.field("Metrics").is_some(), "question `{}`", t.name);
        }
        for n in t.names() {
            assert!(names.insert(n.to_string()), "`{n}` names two topics");
        }
    }
    // "See also" points at topics that exist.
    for t in all {
        if let Some(see) = t.field("See also") {
            for target in see.split(',').map(|s| s.trim().trim_matches('`')) {
                assert!(!find_topics(target).is_empty(), "`{}` refers to unknown `{target}`", t.name);
            }
        }
    }
    let mut per_kind = BTreeMap::new();
    for t in all {
        *per_kind.entry(t.kind.name()).or_insert(0) += 1;
    }
    assert_eq!(per_kind.len(), TopicKind::ALL.len(), "{per_kind:?}");
}

fn explained(topic: &str) -> String {
    let text = explain(topic).unwrap_or_else(|e| panic!("explain({topic}) failed: {e}"));
    for f in REQUIRED_FIELDS {
        assert!(text.contains(&format!("{f}:")), "explain({topic}) lacks {f}:\n{text}");
    }
    text
}

/// Every metric our stages request and our summary reads (the lists live in the code,
/// once) has its own entry: `explain` shows the metric itself, not a close match.
#[test]
fn every_listed_metric_is_explained() {
    let summary_metrics = cargo_kprof::analyze::summary::FIELDS.iter().map(|f| f.metric);
    for m in cargo_kprof::ncu::stages::all_metric_names().into_iter().chain(summary_metrics) {
        let text = explained(m);
        assert!(text.starts_with(&format!("{m} (metric)")), "{text}");
    }
    for r in STALL_REASONS {
        explained(&stall_metric(r));
    }
}

#[test]
fn metrics_are_explained_without_their_rollup() {
    let text = explained("sm__throughput");
    assert!(text.starts_with("sm__throughput.avg.pct_of_peak_sustained_elapsed (metric)"), "{text}");
    assert!(text.contains("base name"), "{text}");
    assert!(text.contains("Collected by stages: basic, speed-of-light, full"), "{text}");
    let text = explained("sm__throughput.avg.pct_of_peak_sustained_active");
    assert!(text.starts_with("sm__throughput.avg.pct_of_peak_sustained_elapsed"), "{text}");
    assert!(text.contains("another rollup"), "{text}");
    let text = explained("lts__t_sector_hit_rate");
    assert!(text.starts_with("lts__t_sector_hit_rate.pct"), "{text}");
    // Exact names need no note.
    assert!(!explained("dram__bytes_read.sum").contains("Note:"));
    assert!(!explained("launch__block_size").contains("Note:"));
}

/// Which stage to run for a metric: the stage definitions' metric lists (ncu's raw page
/// adds the launch__* metrics to every stage, as seen on an H200 with ncu 2025.3.1).
#[test]
fn explain_names_the_stages_that_collect_a_metric() {
    let stages = |m: &str| {
        explained(m).lines().find(|l| l.starts_with("Collected by stages:")).unwrap_or_default().to_string()
    };
    assert_eq!(stages("dram__bytes_read.sum"), "Collected by stages: memory, roofline, counters, full");
    assert_eq!(
        stages("smsp__issue_active.avg.pct_of_peak_sustained_active"),
        "Collected by stages: compute, full"
    );
    assert_eq!(
        stages(&stall_metric("long_scoreboard")),
        "Collected by stages: memory, compute, occupancy, full"
    );
    assert_eq!(
        stages("launch__grid_size"),
        "Collected by stages: basic, speed-of-light, memory, compute, occupancy, roofline, counters, full"
    );
    assert_eq!(
        stages("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"),
        "Collected by stages: compute, roofline, full"
    );
}

#[test]
fn stall_reasons_are_explained_by_every_name_ncu_uses() {
    for column in SOURCE_STALL_COLUMNS {
        let text = explained(column);
        assert!(text.contains("smsp__average_warps_issue_stalled_"), "{column}: {text}");
        let text = explained(&format!("{column} (Not Issued)"));
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains("the scheduler issued nothing"), "{text}");
    }
    // ncu 2025.3.1 names this one column differently in its not-issued form.
    assert!(explained("stall_sleeping (Not Issued)").starts_with(&stall_metric("sleeping")));
    let text = explained("smsp__pcsamp_warps_issue_stalled_no_instructions_not_issued");
    assert!(text.starts_with(&stall_metric("no_instruction")), "{text}");
}

#[test]
fn every_stage_is_explained_with_its_real_ncu_options() {
    for stage in Stage::ALL {
        let text = explained(stage.name());
        assert!(text.starts_with(&format!("{} (stage)", stage.name())), "{text}");
        let collection = StageCollection::Named(stage);
        assert!(text.contains(&cargo_kprof::profile::dir::raw_page_name(&collection)), "{text}");
        assert!(text.contains("--csv"), "{text}");
    }
    assert!(explained("sol").starts_with("speed-of-light (stage)"));
    assert!(explained("speed_of_light").starts_with("speed-of-light (stage)"));
}

#[test]
fn every_section_a_stage_collects_has_an_entry() {
    for stage in Stage::ALL {
        let args = StageCollection::Named(stage).ncu_args();
        for pair in args.windows(2) {
            if pair[0] == "--section" {
                let found = find_topics(&pair[1]);
                assert!(
                    found.iter().any(|t| t.kind == TopicKind::Section && t.name == pair[1]),
                    "stage {stage} collects {} which the metric map lacks",
                    pair[1]
                );
            }
        }
    }
}

#[test]
fn sections_classifications_and_questions_are_explained() {
    for s in SECTIONS {
        assert!(explained(s).starts_with(&format!("{s} (section)")));
    }
    // Display names as they appear in the details page's "Section Name" column.
    assert!(explained("GPU Speed Of Light Throughput").starts_with("SpeedOfLight (section)"));
    assert!(
        explained("Memory Workload Analysis Tables").starts_with("MemoryWorkloadAnalysis_Tables (section)")
    );
    for c in CLASSIFICATIONS {
        assert!(explained(c).starts_with(&format!("{c} (classification)")));
    }
    for q in QUESTIONS {
        assert!(explained(q).starts_with(&format!("{q} (question)")));
    }
    // Exact case picks one; a case-insensitive match may show the section and the stage.
    assert!(explained("Occupancy").starts_with("Occupancy (section)"));
    assert!(explained("occupancy").starts_with("occupancy (stage)"));
    let both = explained("OCCUPANCY");
    assert!(both.contains("Occupancy (section)") && both.contains("occupancy (stage)"), "{both}");
}

#[test]
fn unknown_topics_suggest_close_names() {
    let err = explain("sm__throughputt").unwrap_err();
    assert_eq!(err.code, ExitCode::Usage);
    assert!(err.message.contains("sm__throughputt"), "{err}");
    assert!(err.to_string().contains("`sm__throughput.avg.pct_of_peak_sustained_elapsed`"), "{err}");

    let err = explain("memroy").unwrap_err();
    assert!(err.to_string().contains("`memory`"), "{err}");
    let err = explain("long_scoreboard").unwrap_err();
    assert!(err.to_string().contains(&stall_metric("long_scoreboard")), "{err}");
    let err = explain("Ocupancy").unwrap_err();
    assert!(err.to_string().contains("`Occupancy`"), "{err}");

    let err = explain("").unwrap_err();
    assert_eq!(err.code, ExitCode::Usage);
    assert!(explain("zzzzzzzzzzzzzzzz").is_err());
}

#[test]
fn explain_output_is_wrapped_and_cites_its_source() {
    let text = explained("memory");
    let long = |l: &&str| l.chars().count() > 100 && l.contains(' ') && !l.starts_with("ncu options:");
    assert!(!text.lines().any(|l| long(&l)), "{text}");
    assert!(!explained("sm__throughput").lines().any(|l| long(&l)));
    assert!(text.contains("Source: references/nvidia/ncu-metric-map.md"), "{text}");
    assert!(text.contains("--metrics dram__bytes_read.sum,"), "{text}");
    assert!(text.contains("Replay passes: 8 per launch"), "{text}");
    assert!(!text.contains("**"), "{text}");
}

#[test]
fn reference_files_are_embedded_and_self_contained() {
    for file in references::FILES {
        assert!(file.contents.len() > 1000, "{} looks truncated", file.path);
        assert!(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file.path).is_file(), "{}", file.path);
        // No absolute paths of any particular machine: the files travel with the crate.
        for word in file.contents.split_whitespace() {
            let word = word.trim_matches(|c: char| "`'\"(),;:".contains(c));
            let absolute = word.starts_with('/') && word[1..].contains('/');
            assert!(!absolute, "{} mentions the absolute path `{word}`", file.path);
        }
    }
}
