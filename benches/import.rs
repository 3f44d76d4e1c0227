//! How long importing a 200-launch `--set full` raw page takes, next to Python's `csv`.
//!
//! The input is a timing input, not a fixture: it is derived from the real one-launch
//! recording `fixtures/h200/demo-full/copy_full_raw.csv` (2,238 columns) by repeating its
//! launch row 200 times (IDs renumbered 0..199), and written to a temporary file. Each run
//! reads the file, parses it with `RawPage::parse`, walks every launch and converts every
//! cell with `parse_number`. Python's timing covers `csv.reader` over the same file (split
//! only, no number conversion) when `python3` is on `PATH`.
//!
//! Run with `cargo bench --bench import`. Exits non-zero when our median reaches 1 s.

use std::io::Write;
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use cargo_kprof::ncu::parse::{parse_number, RawPage};

const LAUNCHES: usize = 200;
const RUNS: usize = 9;
const LIMIT: Duration = Duration::from_secs(1);
const RECORDING: &str = "fixtures/h200/demo-full/copy_full_raw.csv";

/// The recording's header and units rows, then its launch row `LAUNCHES` times.
fn derived_input() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(RECORDING);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with('"')).collect();
    let [header, units, launch] = lines[..] else {
        panic!("{RECORDING}: expected a header, a units row and one launch row");
    };
    let rest = launch.strip_prefix("\"0\",").expect("the launch row has ID 0");
    let mut out = format!("{header}\n{units}\n");
    for id in 0..LAUNCHES {
        out.push_str(&format!("\"{id}\",{rest}\n"));
    }
    out
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// One import: read, parse, convert every cell. Returns (launches, numeric cells, checksum).
fn import(path: &Path) -> (usize, usize, f64) {
    let text = std::fs::read_to_string(path).expect("read the timing input");
    let page = RawPage::parse(&text, &path.display().to_string()).expect("the timing input parses");
    let (mut numbers, mut sum) = (0, 0.0);
    for launch in page.launches() {
        for cell in launch.cells() {
            if let Some(v) = parse_number(cell) {
                numbers += 1;
                sum += v;
            }
        }
    }
    (page.rows.len(), numbers, sum)
}

const PYTHON: &str = r#"
import csv, statistics, sys, time
times = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    with open(sys.argv[1], newline="") as f:
        rows = sum(1 for _ in csv.reader(f))
    times.append(time.perf_counter() - t)
print(statistics.median(times), rows)
"#;

/// Python's median over `RUNS` runs, or why there is none.
fn python_median(path: &Path) -> Result<Duration, String> {
    let out = Command::new("python3")
        .arg("-c")
        .arg(PYTHON)
        .arg(path)
        .arg(RUNS.to_string())
        .output()
        .map_err(|e| format!("python3 not run: {e}"))?;
    if !out.status.success() {
        return Err(format!("python3 failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let secs: f64 = stdout
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("unexpected python3 output: {stdout}"))?;
    Ok(Duration::from_secs_f64(secs))
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() -> ExitCode {
    let input = derived_input();
    let mut file = tempfile::NamedTempFile::new().expect("a temporary file");
    file.write_all(input.as_bytes()).expect("write the timing input");
    file.flush().expect("flush the timing input");
    let path = file.path();

    println!("import bench: a timing input derived from the recording {RECORDING}");
    println!("  by repeating its launch row {LAUNCHES} times (not a fixture; IDs renumbered)");
    println!("  {} bytes; median of {RUNS} runs each", input.len());

    let mut times = Vec::with_capacity(RUNS);
    let mut shape = (0, 0, 0.0);
    for _ in 0..RUNS {
        let start = Instant::now();
        shape = std::hint::black_box(import(path));
        times.push(start.elapsed());
    }
    let ours = median(times);
    let (launches, numbers, _) = shape;
    println!("  parsed {launches} launches, {numbers} numeric cells");
    println!();
    println!("  {:<58} {:>10}", "RawPage::parse + parse_number on every cell (read incl.)", ms(ours));
    match python_median(path) {
        Ok(python) => {
            println!("  {:<58} {:>10}", "python3 csv.reader over the file (split only)", ms(python));
            println!(
                "  {:<58} {:>10}",
                "ratio ours / python",
                format!("{:.2}x", ours.as_secs_f64() / python.as_secs_f64())
            );
        }
        Err(why) => println!("  python3 comparison skipped: {why}"),
    }
    if ours >= LIMIT {
        eprintln!("import bench: median {} is not under the {} limit", ms(ours), ms(LIMIT));
        return ExitCode::FAILURE;
    }
    println!("  ok: under the {} limit", ms(LIMIT));
    ExitCode::SUCCESS
}
