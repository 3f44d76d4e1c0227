//! kprof-harness: the microbenchmark harness for `cargo kprof` bench targets.
//!
//! A bench target (`harness = false`) registers named cases and hands them to [`main`]:
//!
//! ```ignore
//! use kprof_harness::prelude::*;
//!
//! const N4: usize = 1 << 26; // float4 elements: 1 GiB
//!
//! fn main() {
//!     let mut bench = Bench::new();
//!     bench
//!         .case("copy/n=67108864", |gpu| {
//!             let copy = gpu.compile(&cuda_source!("kernels/copy.cu"))?.function("copy_kernel")?;
//!             let src = gpu.random::<f32>(4 * N4)?;
//!             let mut dst = gpu.zeros::<f32>(4 * N4)?;
//!             let cfg = grid_1d(gpu.info().sm_count * 8, 256);
//!             Ok(move |s: &CudaStream| unsafe {
//!                 s.launch_builder(&copy).arg(&src).arg(&mut dst).arg(&N4).launch(cfg)
//!             })
//!         })
//!         .bytes(2 * 16 * N4 as u64);
//!     kprof_harness::main(bench);
//! }
//! ```
//!
//! Design, in short (each module says more):
//! - Cases register cheaply and set up lazily ([`mod@bench`]), so `--list` needs no GPU.
//! - The harness owns warm-up, the `ncu` profiling window, timing and statistics
//!   ([`timing`], [`stats`]), so every bench measures the same way and `cargo kprof` can
//!   rely on the window: under `KPROF_PROFILE=1` exactly `KPROF_LAUNCH_COUNT` launches of
//!   each selected case happen between `cuProfilerStart` and `cuProfilerStop`.
//! - NVRTC compiles always carry line info and the source's absolute path ([`nvrtc`]), so
//!   ncu's source view and `cargo kprof`'s hotspot table can point at real lines.
//! - Inputs are seeded random data ([`rng`]), never zeros or uninitialised memory.
//! - Results are a schema-versioned JSON document plus a table ([`report`]); options come
//!   from flags and `KPROF_*` variables ([`config`]).
//! - Library functions return `Result`; only [`main`] exits the process.
#![warn(missing_docs)]
#![warn(clippy::too_many_lines)]

pub mod bench;
pub mod config;
pub mod device;
pub mod nvrtc;
pub mod ptx_cache;
pub mod report;
pub mod rng;
pub mod stats;
pub mod timing;

pub use bench::{assert_close, main, Bench, Case, LaunchResult, Outcome};
pub use config::{Mode, ModeSelection, Options};
pub use device::{DeviceInfo, Gpu, Module, NoGpu};
pub use nvrtc::{compile_ptx, CudaSource};
pub use report::{CaseResult, Report, SCHEMA_VERSION};
pub use rng::{random_cycle, random_vec};

/// The anyhow crate, whose `Result` setup and check closures return.
pub use anyhow;
/// The cudarc this crate is built on, so benches use the same version.
pub use cudarc;
/// The `half` crate, for `f16` / `bf16` host data.
pub use half;

use cudarc::driver::LaunchConfig;

/// A 1-D launch configuration: `blocks` blocks of `threads` threads, no dynamic shared memory.
pub fn grid_1d(blocks: u32, threads: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 }
}

/// Everything a bench usually needs: `use kprof_harness::prelude::*;`.
pub mod prelude {
    pub use crate::{assert_close, cuda_source, grid_1d, Bench, CudaSource, Gpu};
    pub use anyhow::{bail, ensure, Context as _, Result};
    pub use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
    pub use half::{bf16, f16};
}
