//! Replays of `fixtures/h200/whole-programs` (see its README): a cuBLAS SGEMM and a candle
//! program profiled from archives, and the `mio` kernels in the zoo's `auto` run. Each
//! recorded profile is copied and analysed again with `cargo kprof report`.

use std::path::{Path, PathBuf};

use crate::support::{copy_dir, recordings, text};

/// The one recorded profile under `whole-programs/<set>` whose name starts with `prefix`.
fn recorded(set: &str, prefix: &str) -> PathBuf {
    let root = recordings().join("whole-programs").join(set);
    let found: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    assert_eq!(found.len(), 1, "{set}/{prefix}: {found:?}");
    found.into_iter().next().unwrap()
}

/// `cargo kprof report` over a copy of the recorded profile; returns the copy.
fn reported(set: &str, prefix: &str, tmp: &Path) -> PathBuf {
    let dir = tmp.join(prefix);
    copy_dir(&recorded(set, prefix), &dir);
    let out = crate::support::kprof_bin().args(["kprof", "report"]).arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    dir
}

fn decision(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("details/bottleneck_decision.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// cuBLAS's FFMA SGEMM: named cuBLAS's, with the TF32/BF16 knob and no rebuild advice;
/// its SASS-only page (each launch's block printed twice) sums 3 launches, once each.
#[test]
fn the_cublas_sgemm_is_a_library_kernel_with_the_library_s_knob() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = reported("sgemm", "sgemm_", tmp.path());
    let d = decision(&dir);
    let v = &d["kernels"][0];
    assert!(v["kernel"].as_str().unwrap().ends_with("_cublas"), "{v}");
    assert_eq!(v["limiter"]["id"], "pipe-fma", "{v}");
    assert_eq!(v["library"]["library"], "cuBLAS", "{v}");
    let advice = v["library"]["advice"].as_str().unwrap();
    assert!(advice.contains("CUBLAS_TF32_TENSOR_OP_MATH") && advice.contains("BF16"), "{advice}");
    let report = std::fs::read_to_string(dir.join("final_report.md")).unwrap();
    assert!(report.contains("**A cuBLAS kernel, not your code**"), "{report}");
    assert!(report.contains("there is nothing to rebuild"), "{report}");
    assert!(!report.contains("build the kernel with line info"), "{report}");
    assert!(report.contains("(3 launches)"), "{report}");
    // One row per instruction: the repeated blocks and the launches are summed.
    let csv = std::fs::read_to_string(dir.join("details/source_hotspots.csv")).unwrap();
    let mut addresses: Vec<&str> = csv.lines().skip(1).filter_map(|l| l.split(',').nth(4)).collect();
    let rows = addresses.len();
    addresses.sort_unstable();
    addresses.dedup();
    assert_eq!(addresses.len(), rows, "an instruction is listed twice");
    assert!(rows > 1000, "{rows} instructions");
}

/// candle's softmax: its hot lines are candle-kernels' own lines, summed over 3 launches.
#[test]
fn candle_s_softmax_hot_lines_are_candle_kernels_lines_summed_over_its_launches() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = reported("candle", "softmax_", tmp.path());
    let report = std::fs::read_to_string(dir.join("final_report.md")).unwrap();
    assert!(report.contains("`softmax_f32` (3 launches)"), "{report}");
    let csv = std::fs::read_to_string(dir.join("details/source_hotspots.csv")).unwrap();
    let first = csv.lines().nth(1).unwrap();
    assert!(
        first.starts_with("cuda,softmax_f32,") && first.contains("candle-kernels-0.11.1/src/reduce.cu,319,"),
        "{first}"
    );
    // Each source line once.
    let lines: Vec<&str> = csv.lines().filter(|l| l.starts_with("cuda,")).collect();
    let mut keys: Vec<String> =
        lines.iter().map(|l| l.split(',').take(4).collect::<Vec<_>>().join(",")).collect();
    keys.sort();
    let n = keys.len();
    keys.dedup();
    assert_eq!(keys.len(), n, "a source line is listed twice");
    // The GEMM of the same program is cuBLAS's.
    let gemm = reported("candle", "matmul_", tmp.path());
    assert_eq!(decision(&gemm)["kernels"][0]["library"]["library"], "cuBLAS");
}

/// The `mio` kernels' `auto` run on the H200 names the causes EXPECTED.md names.
#[test]
fn the_mio_kernels_auto_run_names_the_expected_causes() {
    let tmp = tempfile::tempdir().unwrap();
    for (kernel, limiter) in [
        ("const_table_divergent", "divergent-constant-loads"),
        ("smem_atomics_hot", "shared-atomics-contention"),
        ("pointer_chase_smem200k", "occupancy-shared-memory"),
    ] {
        let dir = reported("zoo-auto", &format!("{kernel}_"), tmp.path());
        let d = decision(&dir);
        assert_eq!(d["kernels"][0]["limiter"]["id"], limiter, "{kernel}: {}", d["kernels"][0]);
    }
}

/// After the fix, on the H200: candle's softmax hot lines carry candle-kernels' own text,
/// read from the archive's `deps/` (the recorded `source_hotspots.csv`, as the run wrote it).
#[test]
fn candle_s_hot_lines_carry_their_text_from_the_archive() {
    let dir = recorded("candle-text", "softmax_");
    let csv = std::fs::read_to_string(dir.join("details/source_hotspots.csv")).unwrap();
    let first = csv.lines().nth(1).unwrap();
    assert!(first.contains("reduce.cu,319,,\"max_val = maxg(max_val, x[i]);\""), "{first}");
    // Every line of candle-kernels' files has its text. (CUDA's own headers, named by the
    // build machine's toolkit path, are not packed: one sm_30_intrinsics.hpp line has none.)
    let candle: Vec<&str> =
        csv.lines().filter(|l| l.starts_with("cuda,") && l.contains("/candle-kernels-0.11.1/")).collect();
    let unread = candle.iter().filter(|l| l.contains("Unable to open")).count();
    assert!(candle.len() > 10 && unread == 0, "{unread} of {} lines without text", candle.len());
}
