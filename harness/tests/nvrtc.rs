//! NVRTC compiles without a GPU: every demo kernel and the harness' test kernels compile to
//! PTX that carries line info (`.loc`) and names the source by its absolute path.
//!
//! Needs libnvrtc on the loader path. Without it the tests print "skipped: ..." and pass,
//! unless `KPROF_REQUIRE_NVRTC=1`, when they fail (CI sets it after
//! `.ci/install-cuda-tools.sh`).

use std::path::{Path, PathBuf};

use kprof_harness::nvrtc::{compile_ptx, compile_ptx_with, nvrtc_available, nvrtc_version};

/// Reports a skip on stderr directly, past the test harness' output capture, so that a
/// skipped test is visible in a plain `cargo test` run.
fn skip(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {message}");
}

/// Whether to run; panics when NVRTC is required but missing.
fn nvrtc_or_skip(test: &str) -> bool {
    if nvrtc_available() {
        return true;
    }
    let required = std::env::var("KPROF_REQUIRE_NVRTC").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "{test}: KPROF_REQUIRE_NVRTC=1 but libnvrtc cannot be loaded; run \
         `eval \"$(.ci/install-cuda-tools.sh DIR)\"` to install it from PyPI"
    );
    skip(&format!("{test}: libnvrtc not found (set LD_LIBRARY_PATH to a dir with libnvrtc.so.13)"));
    false
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("harness/ has a parent").to_path_buf()
}

fn cu_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
        .collect();
    files.sort();
    files
}

fn check_ptx(path: &Path, ptx: &str) {
    let canonical = std::fs::canonicalize(path).unwrap();
    let locs = ptx.lines().filter(|l| l.trim_start().starts_with(".loc")).count();
    assert!(locs > 0, "{}: no .loc lines in the PTX", path.display());
    assert!(
        ptx.contains(&format!("\"{}\"", canonical.display())),
        "{}: the PTX does not name the source by its canonical path",
        path.display()
    );
    assert!(ptx.contains(".target sm_90"), "{}: wrong target", path.display());
}

#[test]
fn demo_kernels_compile_with_line_info_and_absolute_paths() {
    if !nvrtc_or_skip("demo_kernels_compile_with_line_info_and_absolute_paths") {
        return;
    }
    println!("NVRTC {:?}", nvrtc_version().unwrap());
    let dirs = [repo_root().join("examples/demo/kernels"), repo_root().join("harness/tests/kernels")];
    let mut compiled = Vec::new();
    for dir in &dirs {
        for file in cu_files(dir) {
            let code = std::fs::read_to_string(&file).unwrap();
            let ptx = compile_ptx(&code, &file, "compute_90")
                .unwrap_or_else(|e| panic!("{}: {e:#}", file.display()));
            check_ptx(&file, &ptx);
            compiled.push(file.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    for expected in ["copy.cu", "fma.cu", "tiny.cu", "hgemm.cu", "occupancy.cu", "axpy.cu"] {
        assert!(compiled.iter().any(|c| c == expected), "{expected} was not compiled: {compiled:?}");
    }
}

#[test]
fn extern_c_kernel_names_survive_unmangled() {
    if !nvrtc_or_skip("extern_c_kernel_names_survive_unmangled") {
        return;
    }
    let file = repo_root().join("examples/demo/kernels/hgemm.cu");
    let ptx = compile_ptx(&std::fs::read_to_string(&file).unwrap(), &file, "sm_90").unwrap();
    assert!(ptx.contains(".entry hgemm_naive("));
    assert!(ptx.contains(".entry hgemm_tiled("));
}

#[test]
fn relative_path_becomes_absolute_program_name() {
    if !nvrtc_or_skip("relative_path_becomes_absolute_program_name") {
        return;
    }
    // Relative to the package directory, where cargo runs tests.
    let rel = Path::new("tests/kernels/axpy.cu");
    let ptx = compile_ptx(&std::fs::read_to_string(rel).unwrap(), rel, "compute_90").unwrap();
    check_ptx(rel, &ptx);
}

#[test]
fn compile_errors_carry_the_log_and_the_path() {
    if !nvrtc_or_skip("compile_errors_carry_the_log_and_the_path") {
        return;
    }
    let bad = "extern \"C\" __global__ void broken(float *x) { x[0] = undefined_name; }";
    let err = compile_ptx(bad, Path::new("/src/broken.cu"), "compute_90").unwrap_err();
    let msg = format!("{err:#}");
    assert!(msg.contains("/src/broken.cu"), "{msg}");
    assert!(msg.contains("undefined_name"), "{msg}");
    assert!(msg.contains("--generate-line-info"), "{msg}");
}

#[test]
fn extra_options_reach_nvrtc() {
    if !nvrtc_or_skip("extra_options_reach_nvrtc") {
        return;
    }
    let src = "#ifndef WIDTH\n#error WIDTH must be defined\n#endif\n\
               extern \"C\" __global__ void k(float *x) { x[0] = WIDTH; }";
    let path = Path::new("/src/defined.cu");
    assert!(compile_ptx(src, path, "compute_90").is_err());
    let ptx = compile_ptx_with(src, path, "compute_90", &["-DWIDTH=3".to_string()]).unwrap();
    assert!(ptx.contains(".entry k("));
}
