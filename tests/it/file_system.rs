//! File-system failures: an input that is not a regular file (a directory, a FIFO) is
//! refused naming it, and a full disk is a file-system failure (its exit code and the
//! file named), never a half-written profile that looks whole.

use std::path::Path;
use std::process::{Command, Output};

use crate::bad_input::{assert_all, verify, Expect};
use crate::support::{kprof_bounded, kprof_env, text};

/// F9: inputs that are not regular files bypassed the size limit: `import --raw /dev/zero`
/// ran out of memory, and a named pipe nobody writes hung `import` and `report`. Every
/// input is opened without waiting and refused (exit 3, naming it) unless it is a file.
#[test]
fn inputs_that_are_not_files_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // Named pipes live beside the root: the snapshot reads every file under it.
    let pipes = tempfile::tempdir().unwrap();
    let fifo = pipes.path().join("page.csv");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let fifo_s = fifo.display().to_string();
    let raw = crate::support::recordings().join("demo-full/copy_full_raw.csv").display().to_string();
    let cases: Vec<(&str, Vec<&str>, Vec<&str>)> = vec![
        ("raw /dev/zero", vec!["--raw", "/dev/zero"], vec!["/dev/zero", "not a regular file"]),
        ("raw a named pipe", vec!["--raw", &fifo_s], vec![&fifo_s, "not a regular file"]),
        ("source /dev/zero", vec!["--raw", &raw, "--source", "/dev/zero"], vec!["/dev/zero"]),
        ("details a named pipe", vec!["--raw", &raw, "--details", &fifo_s], vec![&fifo_s]),
        ("rules a named pipe", vec!["--raw", &raw, "--rules", &fifo_s], vec![&fifo_s]),
        ("template /dev/zero", vec!["--raw", &raw, "--template", "/dev/zero"], vec!["/dev/zero"]),
    ];
    let mut n = cases.len();
    let mut failures = Vec::new();
    for (case, mut args, names) in cases {
        args.splice(0..0, ["import"]);
        args.extend(["--output-dir", "out"]);
        let expect = Expect { code: 3, names: &names, allowed: &[] };
        failures.extend(verify(case, root, expect, || kprof_bounded(root, &args)));
    }

    // A profile whose raw page became a link to a named pipe: `report` hung on it.
    let out = kprof_bounded(root, &["import", "--raw", &raw, "--output-dir", "p"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let page = root.join("p/details/imported_01_raw.csv");
    std::fs::remove_file(&page).unwrap();
    std::os::unix::fs::symlink(&fifo, &page).unwrap();
    n += 1;
    let names = ["details/imported_01_raw.csv", "not a regular file"];
    let expect = Expect { code: 3, names: &names, allowed: &[] };
    failures.extend(verify("report of a page that is a pipe", root, expect, || {
        kprof_bounded(root, &["report", "p"])
    }));
    assert_all(failures, n);
}

/// `cargo-kprof kprof ARGS` in `cwd` with files limited to `kib` KiB (`ulimit -f`, with
/// SIGXFSZ ignored: a write past the limit fails with EFBIG, as a write fails on a full
/// disk with ENOSPC).
fn kprof_small_files(cwd: &Path, kib: u32, args: &[&str]) -> Output {
    let script = format!("trap '' XFSZ; ulimit -f {kib}; exec \"$0\" kprof \"$@\"");
    Command::new("bash")
        .args(["-c", &script, env!("CARGO_BIN_EXE_cargo-kprof")])
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env("KPROF_PLAN", "fixed")
        .output()
        .unwrap()
}

/// The recorded `copy` page with only its launch columns and its duration: a profile whose
/// `metrics_summary.json` is its largest data file.
fn narrow_page(raw: &str) -> String {
    let mut rows = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(raw.as_bytes());
    let rows: Vec<csv::StringRecord> = rows.records().map(Result::unwrap).collect();
    let keep: Vec<usize> = rows[0]
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.contains("__") || *c == "gpu__time_duration.sum")
        .map(|(i, _)| i)
        .collect();
    let mut out = csv::WriterBuilder::new().quote_style(csv::QuoteStyle::Always).from_writer(Vec::new());
    for r in &rows {
        out.write_record(keep.iter().map(|i| r.get(*i).unwrap_or(""))).unwrap();
    }
    String::from_utf8(out.into_inner().unwrap()).unwrap()
}

/// F12: a full disk while `report` wrote `metrics_raw.csv` or `metrics_summary.json` ended
/// with exit 1, the code of a bug (the I/O error was lost on the way). It is exit 12,
/// naming the file, with what to do; the file is left as it was.
#[test]
fn a_full_disk_is_a_file_system_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let raw =
        std::fs::read_to_string(crate::support::recordings().join("demo-full/copy_full_raw.csv")).unwrap();
    std::fs::write(t.join("full.csv"), &raw).unwrap();
    std::fs::write(t.join("narrow.csv"), narrow_page(&raw)).unwrap();
    for (page, dir) in [("full.csv", "full"), ("narrow.csv", "narrow")] {
        let out = kprof_env(t, &["import", "--raw", page, "--output-dir", dir], &[]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let size = |p: &str| std::fs::metadata(t.join(p)).unwrap().len();
    assert!(
        size("narrow/details/metrics_summary.json") > 2048 && size("narrow/details/metrics_raw.csv") < 2048
    );
    assert!(size("full/details/metrics_raw.csv") > 8192);
    let cases: Vec<(&str, &str, u32, &str, &[&str])> = vec![
        ("metrics_raw.csv", "full", 8, "full/details/metrics_raw.csv", &[]),
        (
            "metrics_summary.json",
            "narrow",
            2,
            "narrow/details/metrics_summary.json",
            &["narrow/details/metrics_raw.csv", "narrow/details/metrics_extracted.jsonl"],
        ),
    ];
    let n = cases.len();
    let mut failures = Vec::new();
    for (case, dir, kib, named, allowed) in cases {
        let names = [named, "File too large"];
        let expect = Expect { code: 12, names: &names, allowed };
        failures.extend(verify(case, t, expect, || kprof_small_files(t, kib, &["report", dir])));
    }
    assert_all(failures, n);
}
