//! One answer per launch: every recorded pair of profiles of the same kernels, the fewer
//! stages and the more (`fixtures/h200/zoo-auto/` against `zoo-full/`, and the demo's
//! separate stages, `demo-stages/`, against `demo-full/`), analysed with today's rules.
//! More evidence refines an answer and never overturns it without saying why: the pairs
//! name the same limiter, and where they do not, a report names the metric that changed
//! the answer (the fuller profile's `refines`, or the leaner one's `unchecked` causes
//! with the metrics they lacked).

use std::path::{Path, PathBuf};

use crate::support::{copy_dir, recordings, text};

/// The one verdict in a profile directory's `bottleneck_decision.json`, by kernel name.
fn verdicts(dir: &Path) -> Vec<serde_json::Value> {
    let path = dir.join("details/bottleneck_decision.json");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    doc["kernels"].as_array().unwrap().clone()
}

/// `cargo kprof report DIR` over a copy of a recorded profile directory.
fn report(recorded: &Path, tmp: &Path) -> PathBuf {
    let dir = tmp.join(recorded.file_name().unwrap());
    copy_dir(recorded, &dir);
    let run = crate::support::kprof_bin().args(["kprof", "report"]).arg(&dir).output().unwrap();
    assert_eq!(run.status.code(), Some(0), "{}: {}", dir.display(), text(&run.stderr));
    dir
}

/// `cargo kprof import` of a recorded `--set full` raw page and its details page.
fn import(set: &str, name: &str, tmp: &Path) -> PathBuf {
    let inputs = tmp.join(format!("in-{name}"));
    let out = tmp.join(format!("full-{name}"));
    let run = crate::support::fs::import_full(&format!("{set}/{name}"), &inputs, &out);
    assert_eq!(run.status.code(), Some(0), "{name}: {}", text(&run.stderr));
    out
}

/// The recorded profile directories of a set (`<kernel>_<timestamp>/`), by kernel.
fn recorded_dirs(set: &str) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(recordings().join(set))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name.split("_20").next().unwrap().to_string(), p)
        })
        .collect();
    out.sort();
    out
}

fn limiter(v: &serde_json::Value) -> Option<&str> {
    v["limiter"]["id"].as_str()
}

/// Compares each pair: (kernel, leaner verdict, fuller verdict). Returns the number that
/// agree and, for each that does not, whether a report names the metric that changed it.
fn compare(pairs: &[(String, serde_json::Value, serde_json::Value)]) -> (usize, Vec<String>) {
    let mut agree = 0;
    let mut unexplained = Vec::new();
    for (kernel, lean, full) in pairs {
        if limiter(lean) == limiter(full) {
            agree += 1;
            continue;
        }
        // The fuller profile says what the leaner stages name and which metric changed it.
        let refined = full["refines"]["limiter"].as_str() == limiter(lean)
            && full["refines"]["field"]
                .as_str()
                .is_some_and(|f| full["refines"]["text"].as_str().unwrap().contains(f));
        // Or the leaner profile lists the fuller one's cause as not checked, naming the
        // metrics it lacked.
        let unchecked = lean["unchecked"].as_array().into_iter().flatten().any(|u| {
            Some(u["id"].as_str().unwrap()) == limiter(full) && !u["missing"].as_array().unwrap().is_empty()
        });
        if !(refined || unchecked) {
            unexplained.push(format!(
                "{kernel}: {:?} with fewer stages, {:?} with more, and no report says which metric changed it",
                limiter(lean),
                limiter(full)
            ));
        }
    }
    (agree, unexplained)
}

#[test]
fn the_zoo_auto_runs_and_full_imports_name_the_same_cause() {
    let tmp = tempfile::tempdir().unwrap();
    let pairs: Vec<_> = recorded_dirs("zoo-auto")
        .into_iter()
        .map(|(kernel, dir)| {
            let lean = verdicts(&report(&dir, tmp.path())).remove(0);
            let full = verdicts(&import("zoo-full", &kernel, tmp.path())).remove(0);
            (kernel, lean, full)
        })
        .collect();
    assert_eq!(pairs.len(), 28);
    let (agree, unexplained) = compare(&pairs);
    assert!(agree >= 26, "only {agree} of 28 zoo kernels get one answer");
    assert!(unexplained.is_empty(), "{}", unexplained.join("\n"));
}

#[test]
fn the_demo_stages_and_full_imports_name_the_same_cause_or_say_why_not() {
    let tmp = tempfile::tempdir().unwrap();
    let full_name = |k: &str| if k == "hgemm" { "hgemm_naive".to_string() } else { k.to_string() };
    let pairs: Vec<_> = recorded_dirs("demo-stages")
        .into_iter()
        .map(|(kernel, dir)| {
            let lean = verdicts(&report(&dir, tmp.path())).remove(0);
            let full = verdicts(&import("demo-full", &full_name(&kernel), tmp.path())).remove(0);
            (kernel, lean, full)
        })
        .collect();
    assert_eq!(pairs.len(), 7);
    let (agree, unexplained) = compare(&pairs);
    // The two hgemm kernels were recorded before the stages collected L1's throughput per
    // elapsed cycle: their stage profiles leave `l1-shared-bandwidth` unchecked.
    assert!(agree >= 5, "only {agree} of 7 demo kernels get one answer");
    assert!(unexplained.is_empty(), "{}", unexplained.join("\n"));
}
