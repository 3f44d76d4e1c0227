//! `check --bmf` and `--github-benchmark` against the shapes Bencher and
//! github-action-benchmark document (`tests/data/exports/`, see its README): every key
//! kprof writes is one the tool's example uses, with the same JSON type, and every key the
//! example's entries all have is there. The files come from real `check` runs: a timed
//! harness kernel (the H200 timings) and a profiled one (the fake ncu replaying the H200's
//! pages), so both of the exporter's forms are covered.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::support::{fake_ncu, fixture_details, recordings, repo, text, Workspace};

/// A JSON document's shape.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Null,
    Bool,
    Number,
    String,
    /// An array; its items' shapes merged.
    Array(Box<Shape>),
    /// An object whose keys are names chosen by the writer (a benchmark, a measure); its
    /// values' shapes merged.
    Names(Box<Shape>),
    /// An object with these keys.
    Object(BTreeMap<String, Field>),
}

#[derive(Debug, Clone, PartialEq)]
struct Field {
    shape: Shape,
    /// Every instance of the object in the example has the key.
    required: bool,
}

impl Shape {
    fn kind(&self) -> &'static str {
        match self {
            Shape::Null => "null",
            Shape::Bool => "a boolean",
            Shape::Number => "a number",
            Shape::String => "a string",
            Shape::Array(_) => "an array",
            Shape::Names(_) | Shape::Object(_) => "an object",
        }
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The shape of `example`, whose first `names` levels of objects are keyed by names.
fn derive(example: &Value, names: usize) -> Shape {
    match example {
        Value::Null => Shape::Null,
        Value::Bool(_) => Shape::Bool,
        Value::Number(_) => Shape::Number,
        Value::String(_) => Shape::String,
        Value::Array(items) => Shape::Array(Box::new(merge_all(items.iter().map(|v| derive(v, names))))),
        Value::Object(map) if names > 0 => {
            Shape::Names(Box::new(merge_all(map.values().map(|v| derive(v, names - 1)))))
        }
        Value::Object(map) => Shape::Object(
            map.iter().map(|(k, v)| (k.clone(), Field { shape: derive(v, 0), required: true })).collect(),
        ),
    }
}

fn merge_all(shapes: impl Iterator<Item = Shape>) -> Shape {
    shapes.reduce(merge).expect("an empty array or object in the example: nothing to derive a shape from")
}

/// Two instances' shapes as one: a key missing from either is optional.
fn merge(a: Shape, b: Shape) -> Shape {
    match (a, b) {
        (Shape::Array(a), Shape::Array(b)) => Shape::Array(Box::new(merge(*a, *b))),
        (Shape::Names(a), Shape::Names(b)) => Shape::Names(Box::new(merge(*a, *b))),
        (Shape::Object(mut a), Shape::Object(mut b)) => {
            let keys: Vec<String> = a.keys().chain(b.keys()).cloned().collect();
            let mut merged = BTreeMap::new();
            for k in keys {
                let field = match (a.remove(&k), b.remove(&k)) {
                    (Some(fa), Some(fb)) => {
                        Field { shape: merge(fa.shape, fb.shape), required: fa.required && fb.required }
                    }
                    (Some(f), None) | (None, Some(f)) => Field { shape: f.shape, required: false },
                    (None, None) => continue, // taken already
                };
                merged.insert(k, field);
            }
            Shape::Object(merged)
        }
        (a, b) if a == b => a,
        (a, b) => panic!("the example mixes {} and {} at one place", a.kind(), b.kind()),
    }
}

/// Where `value` departs from `shape`, one line each.
fn violations(value: &Value, shape: &Shape, at: &str) -> Vec<String> {
    let mut out = Vec::new();
    match (shape, value) {
        (Shape::Null, Value::Null)
        | (Shape::Bool, Value::Bool(_))
        | (Shape::Number, Value::Number(_))
        | (Shape::String, Value::String(_)) => {}
        (Shape::Array(item), Value::Array(items)) => {
            for (i, v) in items.iter().enumerate() {
                out.extend(violations(v, item, &format!("{at}[{i}]")));
            }
        }
        (Shape::Names(item), Value::Object(map)) => {
            for (k, v) in map {
                out.extend(violations(v, item, &format!("{at}[{k:?}]")));
            }
        }
        (Shape::Object(fields), Value::Object(map)) => {
            for (k, v) in map {
                match fields.get(k) {
                    Some(f) => out.extend(violations(v, &f.shape, &format!("{at}.{k}"))),
                    None => out.push(format!(
                        "{at}: key `{k}` is not one the example uses ({:?})",
                        fields.keys().collect::<Vec<_>>()
                    )),
                }
            }
            for (k, f) in fields {
                if f.required && !map.contains_key(k) {
                    out.push(format!("{at}: required key `{k}` is missing"));
                }
            }
        }
        (shape, value) => {
            out.push(format!("{at}: {} where the example has {}", kind_of(value), shape.kind()))
        }
    }
    out
}

fn read_json(path: &Path) -> Value {
    let s = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Bencher: benchmark names, then measure names, then the metric's fields.
fn bmf_shape() -> Shape {
    derive(&read_json(&repo().join("tests/data/exports/bmf-example.json")), 2)
}

/// github-action-benchmark: an array of entries.
fn github_benchmark_shape() -> Shape {
    derive(&read_json(&repo().join("tests/data/exports/github-benchmark-example.json")), 0)
}

/// The innermost object's keys: (required, optional).
fn keys(shape: &Shape) -> (Vec<&str>, Vec<&str>) {
    match shape {
        Shape::Array(s) | Shape::Names(s) => keys(s),
        Shape::Object(fields) => {
            let pick = |req: bool| {
                fields.iter().filter(|(_, f)| f.required == req).map(|(k, _)| k.as_str()).collect()
            };
            (pick(true), pick(false))
        }
        other => panic!("no object in {other:?}"),
    }
}

fn assert_conforms(what: &str, value: &Value, shape: &Shape) {
    let wrong = violations(value, shape, what);
    assert!(wrong.is_empty(), "{}\n{what}: {value:#}", wrong.join("\n"));
}

/// The examples say what the docs say: Bencher's schema requires `value` of a measure
/// and allows `lower_value` and `upper_value`, all numbers; github-action-benchmark needs
/// `name`, `unit`, `value` and allows `range` and `extra`, strings.
#[test]
fn the_examples_derive_the_documented_required_and_optional_keys() {
    let bmf = bmf_shape();
    assert_eq!(keys(&bmf), (vec!["value"], vec!["lower_value", "upper_value"]));
    let Shape::Names(measures) = &bmf else { panic!("{bmf:?}") };
    let Shape::Names(metric) = measures.as_ref() else { panic!("{measures:?}") };
    let Shape::Object(fields) = metric.as_ref() else { panic!("{metric:?}") };
    assert!(fields.values().all(|f| f.shape == Shape::Number), "{fields:?}");

    let gh = github_benchmark_shape();
    assert_eq!(keys(&gh), (vec!["name", "unit", "value"], vec!["extra", "range"]));
    let Shape::Array(entry) = &gh else { panic!("{gh:?}") };
    let Shape::Object(fields) = entry.as_ref() else { panic!("{entry:?}") };
    let types: Vec<(&str, &Shape)> = fields.iter().map(|(k, f)| (k.as_str(), &f.shape)).collect();
    assert_eq!(
        types,
        [
            ("extra", &Shape::String),
            ("name", &Shape::String),
            ("range", &Shape::String),
            ("unit", &Shape::String),
            ("value", &Shape::Number)
        ]
    );
}

/// A key is required only when every instance has it, whatever their order.
#[test]
fn a_key_some_instances_lack_is_optional() {
    let example = serde_json::json!([{"a": 1, "b": "x"}, {"a": 2}, {"a": 3, "b": "y"}]);
    assert_eq!(keys(&derive(&example, 0)), (vec!["a"], vec!["b"]));
    let example = serde_json::json!({"n1": {"a": 1}, "n2": {"a": 2, "c": true}});
    let shape = derive(&example, 1);
    assert_eq!(keys(&shape), (vec!["a"], vec!["c"]));
    assert!(violations(&serde_json::json!({"other": {"a": 5}}), &shape, "x").is_empty());
}

/// The checker itself: a renamed key, a missing required key and a changed type each fail.
#[test]
fn a_renamed_key_a_missing_key_or_another_type_is_caught() {
    let bmf = bmf_shape();
    let good =
        serde_json::json!({"demo::k": {"latency": {"value": 1.0, "lower_value": 0.5, "upper_value": 1.5}}});
    assert!(violations(&good, &bmf, "bmf").is_empty());
    let renamed = serde_json::json!({"demo::k": {"latency": {"value": 1.0, "lower": 0.5}}});
    let wrong = violations(&renamed, &bmf, "bmf");
    assert_eq!(wrong.len(), 1, "{wrong:?}");
    assert!(wrong[0].starts_with("bmf[\"demo::k\"][\"latency\"]: key `lower` is not one"), "{wrong:?}");
    let no_value = serde_json::json!({"demo::k": {"latency": {"lower_value": 0.5}}});
    assert_eq!(
        violations(&no_value, &bmf, "bmf"),
        ["bmf[\"demo::k\"][\"latency\"]: required key `value` is missing"]
    );
    let text_value = serde_json::json!({"demo::k": {"latency": {"value": "1.0"}}});
    assert_eq!(
        violations(&text_value, &bmf, "bmf"),
        ["bmf[\"demo::k\"][\"latency\"].value: a string where the example has a number"]
    );

    let gh = github_benchmark_shape();
    let renamed = serde_json::json!([{"name": "k", "units": "ns", "value": 1.0}]);
    let wrong = violations(&renamed, &gh, "gh");
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    assert!(wrong.iter().any(|w| w.starts_with("gh[0]: key `units` is not one")), "{wrong:?}");
    assert!(wrong.contains(&"gh[0]: required key `unit` is missing".to_string()), "{wrong:?}");
    let numeric_range = serde_json::json!([{"name": "k", "unit": "ns", "value": 1.0, "range": 3.5}]);
    assert_eq!(
        violations(&numeric_range, &gh, "gh"),
        ["gh[0].range: a number where the example has a string"]
    );
    assert_eq!(
        violations(&serde_json::json!({"name": "k"}), &gh, "gh"),
        ["gh: an object where the example has an array"]
    );
}

/// `cargo-kprof kprof ARGS --manifest-path <ws>`, its target directory inside `ws`, with
/// `env`, outside any job array and without a step summary to append to.
fn kprof(ws: &Workspace, args: &[&str], env: &[(&str, &OsStr)]) -> Output {
    let mut cmd = crate::support::kprof_bin();
    // Stand-in benches: no GPU needed.
    cmd.env("KPROF_SKIP_GPU_CHECK", "1");
    cmd.arg("kprof").args(args).arg("--manifest-path").arg(ws.manifest());
    cmd.env_remove("NCU").env_remove("GITHUB_STEP_SUMMARY").env("CARGO_TARGET_DIR", ws.root().join("target"));
    for var in kprof_testkit::JOB_ARRAY_VARS {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn assert_exit(out: &Output, code: i32) {
    assert_eq!(out.status.code(), Some(code), "{}", text(&out.stderr));
}

/// A bench standing in for the harness: it writes the recorded H200 result where the
/// harness would (as `gate.rs`'s does).
const STAND_IN_BENCH: &str = r#"fn main() {
    let result = std::env::var("KPROF_RESULT").expect("KPROF_RESULT");
    let recorded = std::env::var("FAKE_TIMING").expect("FAKE_TIMING");
    std::fs::copy(recorded, result).unwrap();
}
"#;

/// `check --timing-only` of a harness kernel against a saved baseline: the latency is the
/// harness median with its interval, `range` is there.
#[test]
fn a_timed_kernels_results_have_the_documented_shapes() {
    let ws = Workspace::with_harness(
        "[[package.metadata.kprof.kernels]]\nname = \"hgemm_tiled\"\nbench = \"copy\"\ncase = \"hgemm_tiled\"\n",
    );
    std::fs::write(ws.root().join("benches/copy.rs"), STAND_IN_BENCH).unwrap();
    let timing = recordings().join("archive-runs/timing");
    let (run1, run2) = (timing.join("hgemm_tiled_run1.json"), timing.join("hgemm_tiled_run2.json"));
    assert_exit(
        &kprof(
            &ws,
            &["check", "--timing-only", "--save-baseline", "main"],
            &[("FAKE_TIMING", run1.as_os_str())],
        ),
        0,
    );
    let (bmf, gh) = (ws.root().join("kprof-bmf.json"), ws.root().join("kprof-gab.json"));
    let args = [
        "check",
        "--timing-only",
        "--baseline",
        "main",
        "--bmf",
        bmf.to_str().unwrap(),
        "--github-benchmark",
        gh.to_str().unwrap(),
    ];
    assert_exit(&kprof(&ws, &args, &[("FAKE_TIMING", run2.as_os_str())]), 0);

    let (bmf, gh) = (read_json(&bmf), read_json(&gh));
    assert_conforms("bmf", &bmf, &bmf_shape());
    assert_conforms("github-benchmark", &gh, &github_benchmark_shape());
    // Not vacuous: the optional fields are there, so their names and types were checked.
    let latency = &bmf["demo::hgemm_tiled"]["latency"];
    assert!(latency["lower_value"].is_number() && latency["upper_value"].is_number(), "{bmf:#}");
    assert!(gh[0]["range"].is_string() && gh[0]["extra"].is_string(), "{gh:#}");
}

/// `check` of a profiled kernel (no harness timing): the latency is ncu's duration, with
/// an `ncu-duration` measure beside it and no `range`.
#[test]
fn a_profiled_kernels_results_have_the_documented_shapes() {
    let ws = Workspace::new(
        "[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\nruntime = \"cuda\"\n",
    );
    let tools = ws.root().join("tools");
    let ncu = fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let replay = fixture_details("copy_20261129_213211");
    let env: Vec<(&str, &OsStr)> = vec![
        ("NCU", ncu.as_os_str()),
        ("FAKE_NCU_ARGV", argv.as_os_str()),
        ("FAKE_NCU_REPLAY", replay.as_os_str()),
        ("KPROF_SKIP_GPU_CHECK", OsStr::new("1")),
    ];
    assert_exit(&kprof(&ws, &["check", "--kernel", "copy", "--save-baseline", "main"], &env), 0);
    let (bmf, gh) = (ws.root().join("kprof-bmf.json"), ws.root().join("kprof-gab.json"));
    let args = [
        "check",
        "--kernel",
        "copy",
        "--baseline",
        "main",
        "--bmf",
        bmf.to_str().unwrap(),
        "--github-benchmark",
        gh.to_str().unwrap(),
    ];
    assert_exit(&kprof(&ws, &args, &env), 0);

    let (bmf, gh) = (read_json(&bmf), read_json(&gh));
    assert_conforms("bmf", &bmf, &bmf_shape());
    assert_conforms("github-benchmark", &gh, &github_benchmark_shape());
    assert!(bmf["demo::copy"]["ncu-duration"]["value"].is_number(), "{bmf:#}");
    assert!(gh[0].get("range").is_none() && gh[0]["extra"].is_string(), "{gh:#}");
}
