//! Templates are filled in one pass: a value from the data (a kernel's name, an archive's
//! name) is never scanned again for placeholders (issue #45, G3).

use std::path::{Path, PathBuf};

use crate::support::{copy_dir, kprof_bounded, recordings, text};

/// The demo `hgemm` profile with its kernel renamed `name`, reported again.
pub(crate) fn reported_as(tmp: &Path, name: &str) -> (PathBuf, std::process::Output) {
    let dir = tmp.join("renamed_20261129_213211");
    copy_dir(&recordings().join("demo-stages/hgemm_20261129_213211"), &dir);
    for e in std::fs::read_dir(dir.join("details")).unwrap() {
        let path = e.unwrap().path();
        let page = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, page.replace("hgemm_naive", name)).unwrap();
    }
    let out = kprof_bounded(tmp, &["report", dir.to_str().unwrap()]);
    (dir, out)
}

#[test]
fn a_placeholder_in_a_kernel_name_is_printed_as_written() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, out) = reported_as(tmp.path(), "hgemm_naive{{commands}}");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let md = std::fs::read_to_string(dir.join("final_report.md")).unwrap();
    assert!(md.contains("hgemm_naive{{commands}}"), "the name was expanded:\n{md}");
    // The commands section is where the template puts it, once.
    let commands = std::fs::read_to_string(dir.join("commands.sh")).unwrap();
    let first = commands.lines().find(|l| l.contains("ncu")).unwrap();
    assert_eq!(md.matches(first.trim()).count(), 1, "{md}");
}

#[test]
fn a_name_of_many_placeholders_is_filled_in_linear_time_and_memory() {
    let tmp = tempfile::tempdir().unwrap();
    // 20,000 `{{verdicts}}`: each expansion re-scanned would need gigabytes (4 GiB limit).
    let name = format!("hgemm{}", "{{verdicts}}".repeat(20_000));
    let (dir, out) = reported_as(tmp.path(), &name);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let md = std::fs::read_to_string(dir.join("final_report.md")).unwrap();
    assert!(md.len() < 4 << 20, "{} bytes", md.len());
    let hidden: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "a staging folder stayed: {hidden:?}");
}

/// #45 G12: the verdict line bolded the kernel's name as text, so markup in a name (from
/// a CSV) was raw HTML on a Markdown viewer; the name is a code span now.
#[test]
fn a_kernel_name_in_the_verdict_line_is_a_code_span() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, out) = reported_as(tmp.path(), "hgemm_naive<img src=x onerror=alert(1)>");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let md = std::fs::read_to_string(dir.join("final_report.md")).unwrap();
    for line in md.lines().filter(|l| l.contains("<img")) {
        let outside: String = line.split('`').step_by(2).collect();
        assert!(!outside.contains("<img"), "markup outside a code span: {line}");
    }
}
