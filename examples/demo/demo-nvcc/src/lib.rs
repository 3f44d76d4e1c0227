//! The PTX that build.rs made with nvcc, embedded in the binary so it runs on a GPU machine
//! without the build tree.
#![warn(missing_docs)]

/// `$OUT_DIR/reduce.ptx`, or `None` when nvcc was not found at build time.
#[cfg(reduce_ptx)]
pub const REDUCE_PTX: Option<&str> = Some(include_str!(concat!(env!("OUT_DIR"), "/reduce.ptx")));

/// `$OUT_DIR/reduce.ptx`, or `None` when nvcc was not found at build time.
#[cfg(not(reduce_ptx))]
pub const REDUCE_PTX: Option<&str> = None;

/// The PTX, or an error that says how to get it.
pub fn reduce_ptx() -> kprof_harness::anyhow::Result<&'static str> {
    REDUCE_PTX.ok_or_else(|| {
        kprof_harness::anyhow::anyhow!(
            "this binary was built without nvcc, so it has no PTX for reduce_kernel; set \
             NVCC=/path/to/nvcc (or CUDA_HOME) and rebuild demo-nvcc"
        )
    })
}
