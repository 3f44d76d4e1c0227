//! The kernel zoo's diagnoses against what a kernel engineer expected before any of them ran
//! (`examples/zoo/EXPECTED.md`), on the H200 recordings: `--set full` pages imported
//! (`fixtures/h200/zoo-full/`) and cargo kprof's own `auto` runs re-analysed
//! (`fixtures/h200/zoo-auto/`). The expectations are read from EXPECTED.md itself, so the
//! table there is what is tested; a miss names the kernel, what was expected, what came out
//! and the evidence, and says whether the kernel is one of the held-out six.

use std::path::{Path, PathBuf};

use crate::support::{copy_dir, recordings, repo, text};

/// One row of EXPECTED.md's summary table.
#[derive(Debug)]
struct Expected {
    kernel: String,
    held_out: bool,
    limiters: Vec<String>,
    class: String,
    advice: String,
}

/// Parses the summary table: `| `name` | bench | held out | `limiter` ... | class | `advice` | ...`.
fn expectations() -> Vec<Expected> {
    let text = std::fs::read_to_string(repo().join("examples/zoo/EXPECTED.md")).unwrap();
    let ticked =
        |cell: &str| -> Vec<String> { cell.split('`').skip(1).step_by(2).map(str::to_string).collect() };
    let rows: Vec<Expected> = text
        .lines()
        .skip_while(|l| !l.starts_with("| kernel (= kprof entry)"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            Expected {
                kernel: ticked(cells[0])[0].clone(),
                held_out: cells[2].contains("yes"),
                limiters: ticked(cells[3]),
                class: cells[4].to_string(),
                advice: ticked(cells[5])[0].clone(),
            }
        })
        .collect();
    assert_eq!(rows.len(), 28, "EXPECTED.md's summary table changed shape");
    assert_eq!(rows.iter().filter(|r| r.held_out).count(), 6);
    rows
}

/// The verdict of a kernel from a profile directory's `bottleneck_decision.json`.
fn verdict(dir: &Path) -> serde_json::Value {
    let path = dir.join("details/bottleneck_decision.json");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let kernels = doc["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 1, "{}", path.display());
    kernels[0].clone()
}

/// What missed, one line per kernel, held-out ones marked.
fn misses(rows: &[Expected], mut verdict_of: impl FnMut(&Expected) -> serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    for row in rows {
        let v = verdict_of(row);
        let class = v["classification"].as_str().unwrap_or("?");
        let limiter = v["limiter"]["id"].as_str().unwrap_or("(none)");
        let advice = v["limiter"]["advice_id"].as_str().unwrap_or("(none)");
        if row.limiters.iter().any(|l| l == limiter) && class == row.class && advice == row.advice {
            // The advice given is the limiter's, and nothing was printed that contradicts it.
            let hypotheses = v["hypotheses"].as_array().unwrap();
            assert_eq!(hypotheses.len(), 1, "{}: {hypotheses:?}", row.kernel);
            assert_eq!(hypotheses[0]["text"], v["limiter"]["advice"], "{}", row.kernel);
            continue;
        }
        let deciding: Vec<String> = v["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["threshold"] != "-")
            .map(|e| format!("{} = {}", e["field"].as_str().unwrap(), e["value"]))
            .collect();
        out.push(format!(
            "{}{}: expected {} / {} / {}, got {class} / {limiter} / {advice} ({})",
            row.kernel,
            if row.held_out { " (held out)" } else { "" },
            row.class,
            row.limiters.join(" or "),
            row.advice,
            deciding.join(", ")
        ));
    }
    out
}

/// `cargo kprof import` of each kernel's `--set full` raw and details pages.
#[test]
fn full_recordings_get_the_expected_limiter_and_advice() {
    let rows = expectations();
    let tmp = tempfile::tempdir().unwrap();
    let missed = misses(&rows, |row| {
        let inputs = tmp.path().join(format!("in-{}", row.kernel));
        let out = tmp.path().join(&row.kernel);
        let run = crate::support::fs::import_full(&format!("zoo-full/{}", row.kernel), &inputs, &out);
        assert_eq!(run.status.code(), Some(0), "{}: {}", row.kernel, text(&run.stderr));
        verdict(&out)
    });
    assert!(missed.is_empty(), "{} of {} kernels missed:\n{}", missed.len(), rows.len(), missed.join("\n"));
}

/// The recorded `auto` run of a kernel (basic and one follow-up on the H200).
fn auto_run(kernel: &str) -> PathBuf {
    let root = recordings().join("zoo-auto");
    let prefix = format!("{kernel}_2");
    let found: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.file_name().unwrap().to_string_lossy().starts_with(&prefix))
        .collect();
    assert_eq!(found.len(), 1, "{kernel}: {found:?}");
    found.into_iter().next().unwrap()
}

/// `cargo kprof report` over each recorded `auto` run: today's rules on the two stages the
/// H200 run collected reach the expected limiter and advice, for a fraction of the full
/// set's replay passes.
#[test]
fn auto_runs_get_the_expected_limiter_and_advice() {
    let rows = expectations();
    let tmp = tempfile::tempdir().unwrap();
    let full_passes =
        cargo_kprof::ncu::stages::definition(cargo_kprof::model::stage::Stage::Full).passes_h200.unwrap();
    let mut costs = Vec::new();
    let missed = misses(&rows, |row| {
        let recorded = auto_run(&row.kernel);
        let dir = tmp.path().join(recorded.file_name().unwrap());
        copy_dir(&recorded, &dir);
        let run = crate::support::kprof_bin().args(["kprof", "report"]).arg(&dir).output().unwrap();
        assert_eq!(run.status.code(), Some(0), "{}: {}", row.kernel, text(&run.stderr));
        let manifest: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(dir.join("run_manifest.yaml")).unwrap()).unwrap();
        let stages = manifest["stages"].as_sequence().unwrap();
        assert_eq!(stages.len(), 2, "{}: basic and one follow-up", row.kernel);
        let passes: u64 = stages
            .iter()
            .flat_map(|s| s["passes"].as_sequence().unwrap().iter().map(|p| p.as_u64().unwrap()))
            .sum();
        costs.push((row.kernel.clone(), passes));
        verdict(&dir)
    });
    assert!(missed.is_empty(), "{} of {} kernels missed:\n{}", missed.len(), rows.len(), missed.join("\n"));
    for (kernel, passes) in costs {
        assert!(
            passes as f64 <= 0.6 * full_passes as f64,
            "{kernel}: auto took {passes} passes, the full set {full_passes}"
        );
    }
}
