//! Every zoo kernel compiles with NVRTC for sm_90 (compute_90, as the harness compiles it on
//! an H200) and defines the kernels its benches look up. Needs libnvrtc, not a GPU; without
//! libnvrtc the test says so and passes (the benches would fail with the same message).
use std::path::PathBuf;

use kprof_harness::nvrtc::{compile_ptx_with, nvrtc_available};

/// (file in kernels/, extra NVRTC options, kernels it must define)
const KERNELS: &[(&str, &[&str], &[&str])] = &[
    ("stream_scale_f4.cu", &[], &["stream_scale_f4"]),
    ("l2_reread_cg.cu", &[], &["l2_reread_cg"]),
    ("smem_read_f4.cu", &[], &["smem_read_f4"]),
    ("smem_column_read.cu", &[], &["smem_column_read"]),
    ("aos_field_gather.cu", &[], &["aos_field_gather"]),
    ("local_histogram.cu", &[], &["local_histogram"]),
    ("fp32_fma_chains.cu", &[], &["fp32_fma_chains"]),
    ("chacha_rounds.cu", &[], &["chacha_rounds"]),
    ("fp64_dfma_chains.cu", &[], &["fp64_dfma_chains"]),
    ("sfu_chains.cu", &[], &["sfu_chains"]),
    ("hmma_loop.cu", &[], &["hmma_loop"]),
    ("smem_byte_sum.cu", &[], &["smem_byte_sum"]),
    ("lane_switch.cu", &[], &["lane_switch"]),
    ("atomic_bins.cu", &[], &["atomic_bins"]),
    ("leader_warp_steps.cu", &[], &["leader_warp_steps"]),
    ("logistic_map.cu", &[], &["logistic_map"]),
    ("fixed_blocks_fma.cu", &[], &["fixed_blocks_fma"]),
    ("vec_add_small.cu", &[], &["vec_add_small"]),
    ("code_switch_64.cu", &[], &["code_switch_64"]),
    ("list_walk.cu", &[], &["list_walk_regtile", "list_walk_smem", "list_walk_warp_blocks"]),
    ("transpose_tile32.cu", &[], &["transpose_tile32"]),
    ("rowsum_per_thread.cu", &[], &["rowsum_per_thread"]),
    ("median5x5.cu", &[], &["median5x5"]),
    ("gbm_paths.cu", &["--use_fast_math"], &["gbm_paths"]),
    ("nbody_fp64.cu", &[], &["nbody_fp64"]),
    ("reduce_single_block.cu", &[], &["reduce_single_block"]),
    ("const_table_divergent.cu", &[], &["const_table_divergent"]),
    ("smem_atomics_hot.cu", &[], &["smem_atomics_hot"]),
    ("pointer_chase_smem200k.cu", &[], &["pointer_chase_smem200k"]),
];

/// The fix variants in kernels/fixes/ (FIXES.md): one file per kernel, defining
/// `<kernel>__fix1` and `<kernel>__fix2`.
const FIXED: &[&str] = &[
    "atomic_bins",
    "const_table_divergent",
    "fixed_blocks_fma",
    "lane_switch",
    "local_histogram",
    "pointer_chase_smem200k",
    "reduce_single_block",
    "rowsum_per_thread",
    "smem_atomics_hot",
    "smem_column_read",
];

#[test]
fn every_fix_file_is_listed_and_fixes_a_listed_kernel() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/fixes");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".cu"))
        .collect();
    files.sort();
    let listed: Vec<String> = FIXED.iter().map(|k| format!("{k}.cu")).collect();
    assert_eq!(files, listed);
    for kernel in FIXED {
        assert!(KERNELS.iter().any(|(_, _, names)| names.contains(kernel)), "{kernel} is not a zoo kernel");
    }
}

#[test]
fn every_fix_compiles_for_sm_90_with_nvrtc() {
    if !nvrtc_available() {
        println!("skipped: libnvrtc is not loadable here (put it on LD_LIBRARY_PATH to run this test)");
        return;
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/fixes");
    for kernel in FIXED {
        let path = dir.join(format!("{kernel}.cu"));
        let code = std::fs::read_to_string(&path).unwrap();
        let ptx = compile_ptx_with(&code, &path, "compute_90", &[])
            .unwrap_or_else(|e| panic!("fixes/{kernel}.cu does not compile: {e:#}"));
        for fix in ["__fix1", "__fix2"] {
            assert!(ptx.contains(&format!(".entry {kernel}{fix}(")), "fixes/{kernel}.cu: no `{kernel}{fix}`");
        }
    }
}

#[test]
fn every_kernel_file_is_listed() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".cu"))
        .collect();
    files.sort();
    let mut listed: Vec<String> = KERNELS.iter().map(|(f, ..)| f.to_string()).collect();
    listed.sort();
    assert_eq!(files, listed);
}

#[test]
fn every_kernel_compiles_for_sm_90_with_nvrtc() {
    if !nvrtc_available() {
        println!("skipped: libnvrtc is not loadable here (put it on LD_LIBRARY_PATH to run this test)");
        return;
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels");
    for (file, options, names) in KERNELS {
        let path = dir.join(file);
        let code = std::fs::read_to_string(&path).unwrap();
        let options: Vec<String> = options.iter().map(|s| s.to_string()).collect();
        let ptx = compile_ptx_with(&code, &path, "compute_90", &options)
            .unwrap_or_else(|e| panic!("{file} does not compile: {e:#}"));
        for name in *names {
            assert!(ptx.contains(&format!(".entry {name}(")), "{file}: no kernel `{name}` in the PTX");
        }
    }
}
