//! Values from the data reach no reader as control: no bidirectional control character
//! (U+202E reorders a line) is printed or written, and markup in a value is text in the
//! Markdown kprof writes (issue #45, G11).

use crate::support::text;
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

/// #45 G13 (the reports' part): a kernel name of a megabyte was written whole wherever the
/// Markdown report names it (7 MB for one name); past 4 KiB a value is cut, saying so.
#[test]
fn a_megabyte_kernel_name_is_cut_in_the_markdown_report() {
    let tmp = tempfile::tempdir().unwrap();
    let name = format!("hgemm{}", "x".repeat(1 << 20));
    let (dir, out) = reported_as(tmp.path(), &name);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let md = std::fs::read_to_string(dir.join("final_report.md")).unwrap();
    assert!(md.len() < 256 << 10, "final_report.md is {} bytes", md.len());
    assert!(md.contains("more bytes)"), "the cut is not said");
}
