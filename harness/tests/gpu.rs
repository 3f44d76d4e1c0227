//! GPU tests: they need an NVIDIA GPU and driver, and print "skipped: ..." and pass where
//! there is none (CI). The profiling-window test also needs `ncu` (`$NCU`, else PATH, else
//! /usr/local/cuda/bin/ncu) and skips visibly without it.
//!
//! The window test runs this test binary again under ncu, selecting the child test
//! `profile_window_child` with `--exact`; that test runs a bench in-process only when
//! `KPROF_GPU_TEST_CHILD=1`, and does nothing in an ordinary test run.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use kprof_harness::prelude::*;
use kprof_harness::{CaseResult, Mode, ModeSelection, NoGpu, Options, Outcome};

const CHILD_ENV: &str = "KPROF_GPU_TEST_CHILD";

/// Reports a skip on stderr directly, past the test harness' output capture, so that a
/// skipped test is visible in a plain `cargo test` run.
fn skip(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {message}");
}

/// Serialises the GPU tests: the test harness runs tests on parallel threads, and timing
/// tests sharing the GPU would measure each other.
static GPU: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn gpu_lock() -> std::sync::MutexGuard<'static, ()> {
    GPU.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether a GPU is usable; prints a skip line when not. Other failures are test failures.
fn gpu_or_skip(test: &str) -> bool {
    match Gpu::open(0, 1) {
        Ok(_) => true,
        Err(e) => match e.downcast_ref::<NoGpu>() {
            Some(no) => {
                skip(&format!("{test}: {no}"));
                false
            }
            None => panic!("{test}: opening the GPU failed: {e:#}"),
        },
    }
}

fn quick_options() -> Options {
    let mut o = Options { quiet: true, ..Options::default() };
    o.rule.max_noise = 0.05;
    o.rule.min_samples = 10;
    o.rule.min_time = Duration::from_millis(50);
    o.rule.timeout = Duration::from_secs(5);
    o
}

/// A case running `kprof_test_axpy` over `n` floats (`y = 2x + y`).
fn axpy_case<'b>(bench: &'b mut Bench, name: &str, n: usize) -> &'b mut kprof_harness::Case {
    bench
        .case(name, move |gpu| {
            let f = gpu.compile(&cuda_source!("tests/kernels/axpy.cu"))?.function("kprof_test_axpy")?;
            let x = gpu.random::<f32>(n)?;
            let mut y = gpu.random::<f32>(n)?;
            let cfg = grid_1d(gpu.info().sm_count * 8, 256);
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&x).arg(&mut y).arg(&2.0f32).arg(&n).launch(cfg)
            })
        })
        .bytes(3 * 4 * n as u64)
}

fn measured(outcome: Outcome) -> Vec<CaseResult> {
    match outcome {
        Outcome::Measured(report) => report.cases,
        other => panic!("expected a measurement, got {other:?}"),
    }
}

fn assert_sane(c: &CaseResult, min_samples: usize) {
    assert!(c.samples >= min_samples, "{}: {} samples", c.name, c.samples);
    assert!(c.min_ns > 0.0, "{c:?}");
    assert!(c.min_ns <= c.median_ns && c.median_ns <= c.max_ns, "{c:?}");
    assert!(c.min_ns <= c.mean_ns && c.mean_ns <= c.max_ns, "{c:?}");
    assert!(c.stddev_ns >= 0.0 && c.rel_noise.is_finite(), "{c:?}");
    assert!(c.median_ns < 1e9, "a launch took over a second: {c:?}");
    // The clock probe runs after every measurement on a real GPU.
    let mhz = c.sm_clock_mhz.unwrap_or_else(|| panic!("{}: no SM clock measured: {c:?}", c.name));
    assert!((100.0..10_000.0).contains(&mhz), "{}: SM clock {mhz} MHz", c.name);
}

#[test]
fn standalone_case_has_sane_stats_and_writes_json() {
    let _gpu = gpu_lock();
    if !gpu_or_skip("standalone_case_has_sane_stats_and_writes_json") {
        return;
    }
    let n = 1 << 24; // 64 MiB per vector, 192 MiB moved: past L2, a DRAM-bound launch
    let mut bench = Bench::new();
    axpy_case(&mut bench, "axpy/n=16777216", n).check(move |gpu| {
        let f = gpu.compile(&cuda_source!("tests/kernels/axpy.cu"))?.function("kprof_test_axpy")?;
        let m = 1000usize;
        let x: Vec<f32> = gpu.random_host(m);
        let y: Vec<f32> = gpu.random_host(m);
        let (dx, mut dy) = (gpu.upload(&x)?, gpu.upload(&y)?);
        unsafe {
            gpu.stream()
                .launch_builder(&f)
                .arg(&dx)
                .arg(&mut dy)
                .arg(&2.0f32)
                .arg(&m)
                .launch(grid_1d(3, 128))?;
        }
        let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 2.0 * x + y).collect();
        assert_close("axpy", &gpu.download(&dy)?, &want, 1e-6, 1e-6)
    });
    let dir = std::env::temp_dir().join(format!("kprof-gpu-test-{}", std::process::id()));
    let mut options = quick_options();
    options.result_path = Some(dir.join("result.json"));
    let cases = measured(bench.run(&options).expect("the bench runs"));

    assert_eq!(cases.len(), 2, "one result per mode");
    assert_eq!(cases[0].mode, Mode::Cold);
    assert_eq!(cases[1].mode, Mode::Hot);
    for c in &cases {
        assert_sane(c, 10);
        assert_eq!(c.check, "passed");
        assert!(!c.graph);
        let gbps = c.gbps.unwrap();
        assert!((50.0..20_000.0).contains(&gbps), "{gbps} GB/s");
        // 192 MiB in 5 us to 100 ms.
        assert!((5e3..1e8).contains(&c.median_ns), "{c:?}");
    }
    println!("{cases:#?}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(json["schema_version"], 1);
    assert_eq!(json["cases"].as_array().unwrap().len(), 2);
    assert!(json["device"]["sm_count"].as_u64().unwrap() > 0);
    for c in json["cases"].as_array().unwrap() {
        let mhz = c["sm_clock_mhz"].as_f64().unwrap_or_else(|| panic!("no sm_clock_mhz in {c}"));
        assert!((100.0..10_000.0).contains(&mhz), "{mhz} MHz");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn cold_mode_flushes_l2() {
    let _gpu = gpu_lock();
    if !gpu_or_skip("cold_mode_flushes_l2") {
        return;
    }
    // 2 x 16 MiB: fits in the L2 of any recent data-centre GPU, so hot launches hit L2 and
    // cold ones, after the flush, must go to DRAM.
    let n = 1 << 22;
    let mut bench = Bench::new();
    axpy_case(&mut bench, "axpy/n=4194304", n);
    let cases = measured(bench.run(&quick_options()).unwrap());
    let (cold, hot) = (&cases[0], &cases[1]);
    println!("cold {:.0} ns, hot {:.0} ns", cold.median_ns, hot.median_ns);
    assert!(
        cold.median_ns > 1.15 * hot.median_ns,
        "cold ({:.0} ns) should be clearly slower than hot ({:.0} ns) for an L2-resident input",
        cold.median_ns,
        hot.median_ns
    );
}

#[test]
fn short_kernels_are_batched_and_graphs_replay() {
    let _gpu = gpu_lock();
    if !gpu_or_skip("short_kernels_are_batched_and_graphs_replay") {
        return;
    }
    let n = 1 << 16; // a few microseconds
    let mut bench = Bench::new();
    axpy_case(&mut bench, "axpy_plain/n=65536", n);
    axpy_case(&mut bench, "axpy_graph/n=65536", n).graph();
    let mut options = quick_options();
    options.modes = ModeSelection::Hot;
    let cases = measured(bench.run(&options).unwrap());
    println!("{cases:#?}");
    let (plain, graph) = (&cases[0], &cases[1]);
    assert!(plain.batch > 1, "a short kernel should be timed in batches: {plain:?}");
    assert!(!plain.graph && graph.graph);
    assert_sane(plain, 10);
    assert_sane(graph, 10);
    // A graph replays the same kernel without per-launch CPU overhead, so for a
    // launch-bound kernel it may be several times faster per launch (0.50 was seen on an
    // H200); far slower, or nearly free, would mean the graph does not run the kernel.
    let ratio = graph.median_ns / plain.median_ns;
    assert!((0.1..2.0).contains(&ratio), "graph vs plain per launch: {ratio}");

    // NO_GRAPH turns the graph off.
    let mut bench = Bench::new();
    axpy_case(&mut bench, "axpy_graph/n=65536", n).graph();
    options.graphs = false;
    let cases = measured(bench.run(&options).unwrap());
    assert!(!cases[0].graph);
}

/// Two cases with distinguishable kernels, for the profiling window.
fn window_bench() -> Bench {
    let mut bench = Bench::new();
    for (case, kernel) in
        [("window_a/n=1048576", "kprof_test_window_a"), ("window_b/n=1048576", "kprof_test_window_b")]
    {
        bench.case(case, move |gpu| {
            let f = gpu.compile(&cuda_source!("tests/kernels/axpy.cu"))?.function(kernel)?;
            let n = 1usize << 20;
            let mut y = gpu.random::<f32>(n)?;
            Ok(move |s: &CudaStream| unsafe {
                s.launch_builder(&f).arg(&mut y).arg(&n).launch(grid_1d((n / 256) as u32, 256))
            })
        });
    }
    bench
}

#[test]
fn profile_mode_runs_the_selected_case_without_a_profiler() {
    let _gpu = gpu_lock();
    if !gpu_or_skip("profile_mode_runs_the_selected_case_without_a_profiler") {
        return;
    }
    let env = |k: &str| match k {
        "KPROF_PROFILE" => Some("1".to_string()),
        "KPROF_CASE" => Some("window_b".to_string()),
        "KPROF_LAUNCH_COUNT" => Some("2".to_string()),
        _ => None,
    };
    let options = Options::parse(&[], env).unwrap();
    match window_bench().run(&options).unwrap() {
        Outcome::Profiled(names) => assert_eq!(names, ["window_b/n=1048576"]),
        other => panic!("expected the profiling window, got {other:?}"),
    }
}

/// The child of `profile_window_is_exact_under_ncu`: runs the window bench with the options in
/// the environment when started by it, and does nothing otherwise.
#[test]
fn profile_window_child() {
    if std::env::var(CHILD_ENV).as_deref() != Ok("1") {
        return;
    }
    let options = Options::parse(&[], |k| std::env::var(k).ok()).unwrap();
    window_bench().run(&options).unwrap();
}

fn find_ncu() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NCU").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    if let Some(path) = std::env::var_os("PATH") {
        if let Some(p) = std::env::split_paths(&path).map(|d| d.join("ncu")).find(|p| p.is_file()) {
            return Some(p);
        }
    }
    Some(PathBuf::from("/usr/local/cuda/bin/ncu")).filter(|p| p.is_file())
}

/// Splits one CSV line (quoted fields may hold commas).
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    fields.push(field);
    fields
}

/// Kernel names of the profiled launches in ncu's `--csv --page raw` log.
fn profiled_kernels(log: &str) -> Vec<String> {
    let mut lines = log.lines().skip_while(|l| !l.starts_with("\"ID\""));
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let header = csv_fields(header);
    let col = header.iter().position(|h| h == "Kernel Name").expect("a Kernel Name column");
    lines
        .skip(1) // the units row
        .filter(|l| !l.trim().is_empty() && !l.starts_with("=="))
        .map(|l| csv_fields(l)[col].clone())
        .collect()
}

#[test]
fn csv_parsing_of_a_recorded_ncu_log() {
    let log = "==PROF== Connected to process 1\n\
               ==PROF== Profiling \"copy_kernel\" - 0: 0%....50%....100% - 1 pass\n\
               \"ID\",\"Process ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\
               \"\",\"\",\"\",\"ns\"\n\
               \"0\",\"7\",\"copy_kernel(const float4 *, float4 *, unsigned long)\",\"1,384,146.83\"\n";
    assert_eq!(profiled_kernels(log), ["copy_kernel(const float4 *, float4 *, unsigned long)"]);
    assert_eq!(csv_fields("\"a,b\",c,\"d\"\"e\""), ["a,b", "c", "d\"e"]);
}

#[test]
fn profile_window_is_exact_under_ncu() {
    let _gpu = gpu_lock();
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let test = "profile_window_is_exact_under_ncu";
    let Some(ncu) = find_ncu() else {
        skip(&format!("{test}: ncu not found (set NCU or put ncu on PATH)"));
        return;
    };
    if !gpu_or_skip(test) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("kprof-ncu-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("ncu.csv");
    let exe = std::env::current_exe().unwrap();
    let output = Command::new(&ncu)
        .args([
            "--profile-from-start",
            "off",
            "--clock-control",
            "none",
            "--metrics",
            "gpu__time_duration.sum",
            "--csv",
            "--page",
            "raw",
            "--log-file",
        ])
        .arg(&log)
        .arg(&exe)
        .args(["--exact", "profile_window_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .env("KPROF_PROFILE", "1")
        .env("KPROF_LAUNCH_COUNT", "3")
        .env("KPROF_CASE", "window_a")
        .output()
        .expect("ncu starts");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let context = format!(
        "ncu {}\n--- ncu log\n{text}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{context}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("1 passed"),
        "the child test did not run: {context}"
    );
    let prof_lines = |kernel: &str| {
        text.lines().filter(|l| l.starts_with("==PROF== Profiling") && l.contains(kernel)).count()
    };
    // With --csv, ncu 2025.3 prints no per-launch "==PROF== Profiling" lines; count them
    // when present, and always count the CSV's data rows.
    let (a, b) = (prof_lines("kprof_test_window_a"), prof_lines("kprof_test_window_b"));
    assert!(a == 0 || a == 3, "{a} ==PROF== lines for the selected kernel: {context}");
    assert_eq!(b, 0, "{context}");
    let kernels = profiled_kernels(&text);
    assert_eq!(kernels.len(), 3, "exactly the window's launches: {context}");
    assert!(kernels.iter().all(|k| k.starts_with("kprof_test_window_a")), "{context}");
    std::fs::remove_dir_all(&dir).unwrap();
}
