//! Compiles kernels/reduce.cu to `$OUT_DIR/reduce.ptx` with nvcc.
//!
//! nvcc is `$NVCC`, else `$CUDA_HOME/bin/nvcc`, else `nvcc` on PATH. Flags for line info are
//! not added here: `cargo kprof` sets `NVCC_APPEND_FLAGS=-lineinfo`, which nvcc reads itself,
//! and the `rerun-if-env-changed` lines below make cargo re-run this script when it does.
//! No `-arch` is given: nvcc's default PTX target runs on every GPU the driver supports.
//!
//! Without nvcc the build still succeeds (so the workspace builds on machines without
//! CUDA): a warning says how to point at nvcc, no PTX is written, the `reduce_ptx` cfg is
//! not set, and the bench fails at run time with a message saying the same.
use std::path::{Path, PathBuf};
use std::process::Command;

fn find_nvcc() -> Option<PathBuf> {
    if let Some(nvcc) = std::env::var_os("NVCC").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(nvcc));
    }
    if let Some(home) = std::env::var_os("CUDA_HOME").filter(|v| !v.is_empty()) {
        let nvcc = Path::new(&home).join("bin").join("nvcc");
        if nvcc.is_file() {
            return Some(nvcc);
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("nvcc")).find(|p| p.is_file())
}

fn main() {
    for var in ["NVCC", "NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS", "KPROF_LINEINFO", "CUDA_HOME", "PATH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=kernels/reduce.cu");
    println!("cargo:rustc-check-cfg=cfg(reduce_ptx)");

    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let ptx = out_dir.join("reduce.ptx");
    // Never leave a PTX from an earlier build behind when this one cannot make it.
    let _ = std::fs::remove_file(&ptx);

    let source = std::fs::canonicalize("kernels/reduce.cu").expect("kernels/reduce.cu exists");
    let Some(nvcc) = find_nvcc() else {
        println!(
            "cargo:warning=nvcc was not found, so the `reduce` bench has no PTX and will fail \
             when run. Set NVCC=/path/to/nvcc or CUDA_HOME=/path/to/cuda, or put nvcc on PATH, \
             and build again."
        );
        return;
    };
    // The absolute source path goes into the PTX's line info, so ncu can find the file.
    let output = Command::new(&nvcc).arg("--ptx").arg(&source).arg("-o").arg(&ptx).output();
    match output {
        Ok(out) if out.status.success() && ptx.is_file() => {
            println!("cargo:rustc-cfg=reduce_ptx");
        }
        Ok(out) => {
            let _ = std::fs::remove_file(&ptx);
            let stderr = String::from_utf8_lossy(&out.stderr);
            panic!("{} --ptx {} failed ({}):\n{stderr}", nvcc.display(), source.display(), out.status);
        }
        Err(e) => {
            println!(
                "cargo:warning=nvcc at {} could not be run ({e}), so the `reduce` bench has \
                 no PTX and will fail when run. Set NVCC to a working nvcc and build again.",
                nvcc.display()
            );
        }
    }
}
