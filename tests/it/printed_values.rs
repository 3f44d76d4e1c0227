//! Values from the data reach no reader as control: no bidirectional control character
//! (U+202E reorders a line) is printed or written, and markup in a value is text in the
//! Markdown kprof writes (issue #45, G11).

use crate::support::{kprof_env, text};
use crate::templates::reported_as;

#[test]
fn a_kernel_name_with_bidi_controls_and_markup_prints_neither() {
    let tmp = tempfile::tempdir().unwrap();
    let name = "hgemm_naive\u{202E}gnp.exe\u{2066}<script>alert(1)</script>";
    let (dir, out) = reported_as(tmp.path(), name);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let console = format!("{}{}", text(&out.stdout), text(&out.stderr));
    let bidi = |s: &str| s.chars().any(|c| matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'));
    assert!(!bidi(&console), "the console holds a bidirectional control: {console}");
    for file in ["final_report.md", "report.html"] {
        let written = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(!bidi(&written), "{file} holds a bidirectional control");
    }
    // In the Markdown, `<script>` outside a code span is escaped.
    let md = std::fs::read_to_string(dir.join("final_report.md")).unwrap();
    for line in md.lines().filter(|l| l.contains("<script>")) {
        let outside: String = line.split('`').step_by(2).collect();
        assert!(!outside.contains("<script>"), "markup outside a code span: {line}");
    }
}

/// #45 G13: a kernel name of a megabyte was written whole wherever a report names it:
/// 7 MB of `final_report.md`, 7.4 MB of `report.html` (title, heading, every source line
/// and file block naming it), and 353 MB of `source_hotspots.csv` (once per row). Past
/// 4 KiB a value shown to people is cut, saying so; a hot-spot row keeps 16 KiB of its
/// function's name, and `metrics_summary.json` the whole name.
#[test]
fn a_megabyte_kernel_name_is_cut_in_the_reports_and_the_hot_spots() {
    let tmp = tempfile::tempdir().unwrap();
    let name = format!("hgemm{}", "x".repeat(1 << 20));
    let (dir, out) = reported_as(tmp.path(), &name);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let md = std::fs::read_to_string(dir.join("final_report.md")).unwrap();
    assert!(md.len() < 256 << 10, "final_report.md is {} bytes", md.len());
    assert!(md.contains("more bytes)"), "the cut is not said");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.len() < 256 << 10, "report.html is {} bytes", html.len());
    assert!(html.contains("more bytes)"), "the cut is not said in report.html");
    let csv = std::fs::metadata(dir.join("details/source_hotspots.csv")).unwrap().len();
    assert!(csv < 8 << 20, "source_hotspots.csv is {csv} bytes");
    let summary = std::fs::read_to_string(dir.join("details/metrics_summary.json")).unwrap();
    assert!(summary.contains(&name), "metrics_summary.json keeps the whole name");
}

/// The control characters other than newline and tab in `text`.
fn controls(text: &str) -> Vec<char> {
    text.chars().filter(|c| c.is_control() && *c != '\n' && *c != '\t').collect()
}

/// The `|` of a Markdown table row that separate cells (not escaped as `\|`).
fn cell_bars(row: &str) -> usize {
    row.char_indices().filter(|(i, c)| *c == '|' && !row[..*i].ends_with('\\')).count()
}

/// A kernel name that sets the terminal's title, clears the screen, and holds a NUL byte,
/// a `|` and backticks.
const HOSTILE: &str = "copy\u{1b}]0;pwned\u{7}\u{1b}[2J\u{0}|`x`_kernel";

/// F10: a kernel name's terminal escapes reached stdout (the result line), and NUL bytes
/// reached `final_report.md`; stderr already stripped them. Every human-facing output
/// (stdout, the Markdown files, the GitHub step summary) now drops control characters and
/// keeps a name inside its table cell; the JSON keeps the raw name.
#[test]
fn control_characters_reach_no_human_facing_output() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let raw =
        std::fs::read_to_string(crate::support::recordings().join("demo-full/copy_full_raw.csv")).unwrap();
    let csv = t.join("hostile_raw.csv");
    std::fs::write(&csv, raw.replacen("\"copy_kernel\"", &format!("\"{HOSTILE}\""), 1)).unwrap();
    let before = crate::support::snapshot::take(t);
    let out = kprof_env(t, &["import", "--raw", "hostile_raw.csv", "--output-dir", "p"], &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let changed = crate::support::snapshot::changes(&before, &crate::support::snapshot::take(t), &["p"]);
    assert!(changed.is_empty(), "{changed:?}");
    assert!(stdout.contains("copy]0;pwned[2J|`x`_kernel: "), "{stdout:?}");
    assert!(controls(&stdout).is_empty(), "stdout: {stdout:?}");
    let report = std::fs::read_to_string(t.join("p/final_report.md")).unwrap();
    assert!(controls(&report).is_empty(), "final_report.md: {:?}", controls(&report));
    assert!(report.contains("### ``copy]0;pwned[2J|`x`_kernel``"), "{report}");
    for row in report.lines().filter(|l| l.starts_with('|')) {
        assert!(matches!(cell_bars(row), 3 | 5 | 6), "a name added a column: {row}");
    }
    let decision = std::fs::read_to_string(t.join("p/details/bottleneck_decision.json")).unwrap();
    assert!(
        decision.contains("copy\\u001b]0;pwned\\u0007\\u001b[2J\\u0000|`x`_kernel"),
        "the JSON keeps the raw name"
    );

    // A comparison carried by a merged shard, summed up for the CI step.
    crate::support::copy_dir(&crate::support::recordings().join("check-runs/rerun"), &t.join("rerun"));
    let comparison = std::fs::read_dir(t.join("rerun/workspace/profile"))
        .unwrap()
        .map(|e| e.unwrap().path().join("comparison/regression.json"))
        .find(|p| p.is_file())
        .unwrap();
    let json = std::fs::read_to_string(&comparison).unwrap();
    let hostile_json = serde_json::to_string(HOSTILE).unwrap();
    std::fs::write(&comparison, json.replace("\"hgemm_tiled\"", &hostile_json)).unwrap();
    let summary = t.join("summary.md");
    let summary_s = summary.display().to_string();
    let out = kprof_env(
        t,
        &["merge", "rerun", "--output-dir", "merged"],
        &[("GITHUB_STEP_SUMMARY", summary_s.as_str())],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(controls(&stdout).is_empty(), "stdout: {stdout:?}");
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(controls(&md).is_empty(), "step summary: {md:?}");
    let row = md.lines().find(|l| l.starts_with("| ``copy")).unwrap_or_else(|| panic!("{md}"));
    assert_eq!(cell_bars(row), 6, "{row}");
    let index = std::fs::read_to_string(t.join("merged/index.md")).unwrap();
    assert!(controls(&index).is_empty(), "index.md: {index:?}");
}
