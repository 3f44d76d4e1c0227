//! The tracer on a GPU: this test binary runs again as a child with the built tracer
//! injected (`CUDA_INJECTION64_PATH`), launches one kernel 7 times, and the trace it leaves
//! must count those 7 launches with their grid and block. It prints "skipped: ..." and
//! passes where there is no GPU or no CUPTI library (CI), as the harness's GPU tests do.
//!
//! CUPTI is the file `KPROF_CUPTI` names, else `libcupti.so` under `$CUDA_HOME` or
//! `/usr/local/cuda` (`extras/CUPTI/lib64`, `lib64`).

use std::path::{Path, PathBuf};
use std::process::Command;

use kprof_harness::prelude::*;
use kprof_tracer::tally::{CUPTI_VAR, HEADER, OUT_VAR};

const CHILD_ENV: &str = "KPROF_TRACER_TEST_CHILD";
const LAUNCHES: usize = 7;

fn skip(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {message}");
}

fn cupti() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(CUPTI_VAR) {
        return Some(PathBuf::from(p));
    }
    let roots = std::env::var_os("CUDA_HOME")
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from("/usr/local/cuda")]);
    roots
        .flat_map(|r| ["extras/CUPTI/lib64", "lib64"].map(|d| r.join(d).join("libcupti.so")))
        .find(|p| p.is_file())
}

/// The cdylib cargo built beside this test binary (`target/<profile>/libkprof_tracer.so`).
fn tracer_library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let lib = profile_dir.join("libkprof_tracer.so");
    assert!(lib.is_file(), "no {} (cargo builds the cdylib with the tests)", lib.display());
    lib
}

#[test]
fn a_traced_program_s_launches_are_in_its_trace() {
    if let Err(e) = Gpu::open(0, 1) {
        return skip(&format!("a_traced_program_s_launches_are_in_its_trace: {e:#}"));
    }
    let Some(cupti) = cupti() else {
        return skip("a_traced_program_s_launches_are_in_its_trace: no libcupti.so (set KPROF_CUPTI)");
    };
    let out = tempfile::tempdir().unwrap();
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "launch_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .env("CUDA_INJECTION64_PATH", tracer_library())
        .env(OUT_VAR, out.path())
        .env(CUPTI_VAR, &cupti)
        .output()
        .unwrap();
    let context = format!(
        "child {}\n--- stdout\n{}\n--- stderr\n{}",
        child.status,
        String::from_utf8_lossy(&child.stdout),
        String::from_utf8_lossy(&child.stderr)
    );
    assert!(
        child.status.success() && String::from_utf8_lossy(&child.stdout).contains("1 passed"),
        "{context}"
    );
    let files: Vec<PathBuf> = std::fs::read_dir(out.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "one trace per process: {files:?}\n{context}");
    let trace = std::fs::read_to_string(&files[0]).unwrap();
    assert!(trace.starts_with(HEADER), "{trace}");
    assert!(!trace.contains("\nerror\t"), "{trace}");
    let line = trace
        .lines()
        .find(|l| l.starts_with("kernel\t") && l.ends_with("\tkprof_tracer_test_add"))
        .unwrap_or_else(|| panic!("no line for the kernel: {trace}"));
    let fields: Vec<&str> = line.split('\t').collect();
    assert_eq!(fields[1], LAUNCHES.to_string(), "{line}");
    assert!(fields[2].parse::<u64>().unwrap() > 0, "a total duration: {line}");
    assert_eq!((fields[7], fields[8]), ("(3, 1, 1)", "(32, 1, 1)"), "{line}");
}

/// The child: launches the kernel `LAUNCHES` times when started by the test above.
#[test]
fn launch_child() {
    if std::env::var(CHILD_ENV).as_deref() != Ok("1") {
        return;
    }
    let gpu = Gpu::open(0, 1).unwrap();
    let f = gpu
        .compile(&kprof_harness::cuda_source!("tests/noop.cu"))
        .unwrap()
        .function("kprof_tracer_test_add")
        .unwrap();
    let mut x = gpu.random::<f32>(3).unwrap();
    let cfg = LaunchConfig { grid_dim: (3, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    for _ in 0..LAUNCHES {
        unsafe { gpu.stream().launch_builder(&f).arg(&mut x).launch(cfg) }.unwrap();
    }
    gpu.synchronize().unwrap();
}
