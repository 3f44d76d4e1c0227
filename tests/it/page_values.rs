//! Values read off ncu pages: each kernel's metrics extracted once, and values no counter
//! can have (negative durations, counts) refused naming the page and the cell. The pages
//! are H200 recordings, changed in one cell for the case and only used as the broken
//! inputs they are.

use crate::bad_input::{assert_all, verify, Expect};
use crate::support::{kprof_env, text};

/// F11: `metrics_extracted.jsonl` repeated the kernel's name on every row (one per launch
/// and metric): a 2 KB C++ template name made a 58 MB page write 421 MB. The name is now
/// stored once per kernel, in the file's first line, which also gives its schema version;
/// each row names its kernel by its place in that list.
#[test]
fn extracted_metrics_name_each_kernel_once() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let raw =
        std::fs::read_to_string(crate::support::recordings().join("demo-full/copy_full_raw.csv")).unwrap();
    let long = format!(
        "void copy_kernel<{}>(float const*, float*, int)",
        "cute::Layout<cute::_1, cute::_8>, ".repeat(60)
    );
    assert!(long.len() > 2000);
    for (dir, name) in [("short", "copy_kernel"), ("long", long.as_str())] {
        std::fs::write(
            t.join(format!("{dir}.csv")),
            raw.replacen("\"copy_kernel\"", &format!("\"{name}\""), 1),
        )
        .unwrap();
        let before = crate::support::snapshot::take(t);
        let out = kprof_env(t, &["import", "--raw", &format!("{dir}.csv"), "--output-dir", dir], &[]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let changed = crate::support::snapshot::changes(&before, &crate::support::snapshot::take(t), &[dir]);
        assert!(changed.is_empty(), "{changed:?}");
    }
    let read =
        |dir: &str| std::fs::read_to_string(t.join(dir).join("details/metrics_extracted.jsonl")).unwrap();
    let (short, long_text) = (read("short"), read("long"));
    assert_eq!(long_text.matches(long.as_str()).count(), 1, "the name once");
    assert!(long_text.len() < short.len() + long.len() + 64, "{} against {}", long_text.len(), short.len());
    let lines: Vec<serde_json::Value> = long_text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0], serde_json::json!({"kernels": [long], "schema_version": 2}));
    assert!(lines.len() > 20, "{} rows", lines.len());
    for row in &lines[1..] {
        assert_eq!(row["kernel"], 0, "{row}");
        for key in ["launch", "metric", "stage", "unit", "value"] {
            assert!(row.get(key).is_some(), "{key} missing in {row}");
        }
    }
}

/// A raw page with the first launch's `column` set to `value`.
pub(crate) fn with_cell(raw: &str, column: &str, value: &str) -> String {
    // ncu's own lines (`==PROF==`) come first on a page it printed: kept as they are.
    let (ncu, csv_part): (Vec<&str>, Vec<&str>) = raw.lines().partition(|l| l.starts_with("=="));
    let csv_text = csv_part.join("\n");
    let mut rows =
        csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(csv_text.as_bytes());
    let rows: Vec<csv::StringRecord> = rows.records().map(Result::unwrap).collect();
    let at = rows[0].iter().position(|c| c == column).unwrap();
    let mut out = csv::WriterBuilder::new().quote_style(csv::QuoteStyle::Always).from_writer(Vec::new());
    for (n, r) in rows.iter().enumerate() {
        let cells = r.iter().enumerate().map(|(i, c)| if n == 2 && i == at { value } else { c });
        out.write_record(cells.collect::<Vec<_>>()).unwrap();
    }
    let csv = String::from_utf8(out.into_inner().unwrap()).unwrap();
    if ncu.is_empty() {
        csv
    } else {
        format!("{}\n{csv}", ncu.join("\n"))
    }
}

/// The recorded `copy` page with every positive value of a metric column negated.
fn negated_page(raw: &str) -> String {
    let mut rows = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(raw.as_bytes());
    let rows: Vec<csv::StringRecord> = rows.records().map(Result::unwrap).collect();
    let header = rows[0].clone();
    let mut out = csv::WriterBuilder::new().quote_style(csv::QuoteStyle::Always).from_writer(Vec::new());
    for (n, r) in rows.iter().enumerate() {
        let cells = r.iter().enumerate().map(|(i, c)| {
            let metric = header.get(i).is_some_and(|h| h.contains("__"));
            let positive = c.replace(',', "").parse::<f64>().is_ok_and(|v| v > 0.0);
            if n >= 2 && metric && positive {
                format!("-{c}")
            } else {
                c.to_string()
            }
        });
        out.write_record(cells.collect::<Vec<_>>()).unwrap();
    }
    String::from_utf8(out.into_inner().unwrap()).unwrap()
}

/// F12: negative metric values gave a verdict of high confidence ("latency-bound: the
/// kernel runs for -532640 ns"). ncu prints no negative value for a metric kprof reads;
/// such a page is refused (exit 3), naming the file, the metric and the kernel, by
/// `import` and by `report`.
#[test]
fn negative_metric_values_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let raw =
        std::fs::read_to_string(crate::support::recordings().join("demo-full/copy_full_raw.csv")).unwrap();
    std::fs::write(t.join("negative.csv"), negated_page(&raw)).unwrap();
    std::fs::write(t.join("duration.csv"), with_cell(&raw, "gpu__time_duration.sum", "-532.640000")).unwrap();
    std::fs::write(t.join("ok.csv"), &raw).unwrap();
    let out = kprof_env(t, &["import", "--raw", "ok.csv", "--output-dir", "p"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    std::fs::write(t.join("p/details/imported_01_raw.csv"), negated_page(&raw)).unwrap();
    let cases: Vec<(&str, Vec<&str>, Vec<&str>)> = vec![
        (
            "every metric negative",
            vec!["import", "--raw", "negative.csv", "--output-dir", "a"],
            vec!["negative.csv", "copy_kernel"],
        ),
        (
            "a negative duration",
            vec!["import", "--raw", "duration.csv", "--output-dir", "b"],
            vec!["duration.csv", "gpu__time_duration.sum", "-532.64"],
        ),
        (
            "report of a page made negative",
            vec!["report", "p"],
            vec!["details/imported_01_raw.csv", "copy_kernel"],
        ),
    ];
    let n = cases.len();
    let mut failures = Vec::new();
    for (case, args, names) in cases {
        let expect = Expect { code: 3, names: &names, allowed: &[] };
        failures.extend(verify(case, t, expect, || kprof_env(t, &args, &[])));
    }
    assert_all(failures, n);
}
