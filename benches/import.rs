//! `cargo kprof import` of large raw pages, end to end (summary, verdict, report, PNG):
//! wall time and peak memory of the importing process.
//!
//! The inputs are timing inputs, not fixtures: they are derived from the real one-launch
//! recording `fixtures/h200/demo-full/copy_full_raw.csv` (an H200 `--set full` page, 2,238
//! columns) by repeating its launch row (IDs renumbered) and written to a temporary
//! directory: 203 launches (3.7 MB) and 2,837 launches (50 MB).
//!
//! Each import runs `cargo-kprof kprof import --raw PAGE --output-dir DIR` as a child;
//! its peak resident memory comes from `wait4`'s resource usage of that child. With
//! `KPROF_BENCH_BASELINE=/path/to/an/older/cargo-kprof` the same imports run with that
//! binary too, interleaved, and the ratios are printed (`scripts/bench-import.sh REV`
//! builds REV's binary and runs this bench against it).
//!
//! Run with `cargo bench --bench import`. Exits non-zero when a target is missed:
//! 203 launches under 0.3 s; 2,837 launches under 3 s and 300 MB.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

const RECORDING: &str = "demo-full/copy_full_raw.csv";
const RUNS: usize = 5;

/// (launches, wall-time target, peak-memory target in MiB)
const CASES: [(usize, Duration, Option<u64>); 2] =
    [(203, Duration::from_millis(300), None), (2_837, Duration::from_secs(3), Some(300))];

/// The recording's header and units rows, then its launch row `launches` times.
fn write_input(launches: usize, path: &Path) {
    let text = kprof_testkit::recording(RECORDING);
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with('"')).collect();
    let [header, units, launch] = lines[..] else {
        panic!("{RECORDING}: expected a header, a units row and one launch row");
    };
    let rest = launch.strip_prefix("\"0\",").expect("the launch row has ID 0");
    let mut out = String::with_capacity((header.len() + 2) * (launches + 2));
    out.push_str(header);
    out.push('\n');
    out.push_str(units);
    out.push('\n');
    for id in 0..launches {
        out.push_str(&format!("\"{id}\",{rest}\n"));
    }
    std::fs::write(path, out).unwrap();
}

/// Runs one import; returns its wall time and peak resident memory (MiB).
fn import(kprof: &Path, page: &Path, out: &Path) -> (Duration, f64) {
    let _ = std::fs::remove_dir_all(out);
    let started = Instant::now();
    // Reaped by wait4 below, which also returns the child's resource usage.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(kprof)
        .args(["kprof", "import", "--raw"])
        .arg(page)
        .arg("--output-dir")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start cargo-kprof");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for this child, which we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    assert_eq!(waited, pid, "wait4 failed");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{} failed on {}",
        kprof.display(),
        page.display()
    );
    // ru_maxrss is in KiB on Linux.
    (wall, usage.ru_maxrss as f64 / 1024.0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> ExitCode {
    // `cargo bench` passes `--bench`; this harness takes no options.
    let kprof = PathBuf::from(env!("CARGO_BIN_EXE_cargo-kprof"));
    let baseline = std::env::var_os("KPROF_BENCH_BASELINE").map(PathBuf::from);
    let tmp = tempfile::tempdir().unwrap();
    println!("import of a --set full raw page (derived from {RECORDING} by repeating its launch row)");
    println!("cargo-kprof: {}", kprof.display());
    match &baseline {
        Some(b) => println!("baseline:    {} (KPROF_BENCH_BASELINE)", b.display()),
        None => println!("baseline:    none (set KPROF_BENCH_BASELINE to compare with another build)"),
    }
    let mut missed = Vec::new();
    for (launches, wall_target, mem_target) in CASES {
        let page = tmp.path().join(format!("raw_{launches}.csv"));
        write_input(launches, &page);
        let mb = std::fs::metadata(&page).unwrap().len() as f64 / 1e6;
        let (mut walls, mut mems, mut base_walls, mut base_mems) = (vec![], vec![], vec![], vec![]);
        for _ in 0..RUNS {
            let (w, m) = import(&kprof, &page, &tmp.path().join("out"));
            walls.push(w.as_secs_f64());
            mems.push(m);
            if let Some(b) = &baseline {
                let (w, m) = import(b, &page, &tmp.path().join("out_base"));
                base_walls.push(w.as_secs_f64());
                base_mems.push(m);
            }
        }
        let (wall, mem) = (median(walls), median(mems));
        print!(
            "{launches:>5} launches ({mb:>5.1} MB): {wall:>6.3} s, peak {mem:>6.1} MiB (median of {RUNS})"
        );
        if baseline.is_some() {
            let (bw, bm) = (median(base_walls), median(base_mems));
            print!(
                "; baseline {bw:>6.3} s, {bm:>6.1} MiB; new/baseline: time {:.3}x, memory {:.3}x",
                wall / bw,
                mem / bm
            );
        }
        println!();
        if wall > wall_target.as_secs_f64() {
            missed.push(format!("{launches} launches: {wall:.3} s (target {:?})", wall_target));
        }
        if let Some(t) = mem_target.filter(|t| mem > *t as f64) {
            missed.push(format!("{launches} launches: {mem:.0} MiB (target {t} MiB)"));
        }
    }
    if missed.is_empty() {
        println!("targets met: 203 launches < 0.3 s; 2,837 launches < 3 s and < 300 MiB");
        ExitCode::SUCCESS
    } else {
        eprintln!("targets missed: {}", missed.join("; "));
        ExitCode::FAILURE
    }
}
