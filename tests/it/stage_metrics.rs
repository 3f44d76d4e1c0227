//! Every metric a stage requests is real and explained: its base name is in ncu's
//! `--query-metrics --chip gh100` recorded on an H200 (or, for launch and derived metrics
//! ncu does not list there, a column of a raw page recorded from our own basic stage), and
//! `references/nvidia/ncu-metric-map.md` explains it.

use std::collections::HashSet;

use cargo_kprof::ncu::stages::all_metric_names;

fn fixtures() -> std::path::PathBuf {
    crate::support::recordings()
}

fn queried_base_names() -> HashSet<String> {
    let text = std::fs::read_to_string(fixtures().join("query-metrics/query_metrics_gh100.txt")).unwrap();
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.contains("__"))
        .map(String::from)
        .collect()
}

/// Column names of the basic stage's raw pages recorded from `cargo kprof`'s own commands.
fn recorded_basic_columns() -> HashSet<String> {
    let mut cols = HashSet::new();
    let dir = fixtures().join("demo-stages");
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let csv = entry.unwrap().path().join("details/01_basic_raw.csv");
        let Ok(text) = std::fs::read_to_string(&csv) else { continue };
        let header = text.lines().find(|l| l.starts_with("\"ID\"")).expect("a CSV header");
        cols.extend(header.split("\",\"").map(|c| c.trim_matches('"').to_string()));
    }
    assert!(!cols.is_empty(), "no recorded basic stage under {}", dir.display());
    cols
}

#[test]
fn every_stage_metric_is_a_real_gh100_metric() {
    let queried = queried_base_names();
    assert!(queried.len() > 1000, "the recording lists {} metrics", queried.len());
    let columns = recorded_basic_columns();
    let mut unknown = Vec::new();
    for metric in all_metric_names() {
        let base = metric.split('.').next().unwrap();
        if !queried.contains(base) && !columns.contains(metric) {
            unknown.push(metric);
        }
    }
    assert!(unknown.is_empty(), "not gh100 metrics: {unknown:?}");
}

#[test]
fn every_stage_metric_is_explained() {
    let missing: Vec<&str> =
        all_metric_names().into_iter().filter(|m| cargo_kprof::references::explain(m).is_err()).collect();
    assert!(missing.is_empty(), "not in references/nvidia/ncu-metric-map.md: {missing:?}");
}

/// The summary fields the rules read are real metrics too, and explained.
#[test]
fn every_summary_metric_is_real_and_explained() {
    let queried = queried_base_names();
    let mut columns = recorded_basic_columns();
    let full = fixtures().join("demo-full/copy_full_raw.csv");
    let text = std::fs::read_to_string(&full).unwrap();
    let header = text.lines().find(|l| l.starts_with("\"ID\"")).unwrap();
    columns.extend(header.split("\",\"").map(|c| c.trim_matches('"').to_string()));
    let mut problems = Vec::new();
    for f in cargo_kprof::analyze::summary::FIELDS {
        let base = f.metric.split('.').next().unwrap();
        if !queried.contains(base) && !columns.contains(f.metric) {
            problems.push(format!("{} is not a gh100 metric", f.metric));
        }
        if cargo_kprof::references::explain(f.metric).is_err() {
            problems.push(format!("{} is not explained in the metric map", f.metric));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The stage lists and the summary read the same stall metrics.
#[test]
fn stall_metrics_agree_between_stages_and_summary() {
    use cargo_kprof::analyze::summary::{stall_metric, STALL_REASONS};
    let from_summary: Vec<String> = STALL_REASONS.iter().map(|r| stall_metric(r)).collect();
    assert_eq!(cargo_kprof::ncu::stages::STALLS, from_summary.iter().map(String::as_str).collect::<Vec<_>>());
}
