//! Built-in defaults when neither the command line nor the manifests set a value.

/// Launches profiled by default in a harness range.
pub const HARNESS_LAUNCH_COUNT: u32 = 1;
/// Deterministic microbenchmarks (a Rust program launching kernels itself): skip 5, profile 3.
pub const CUDA_WINDOW: (u32, u32) = (5, 3);
/// Iterative programs (any command): skip 10, profile 1.
pub const COMMAND_WINDOW: (u32, u32) = (10, 1);
/// Triton JIT programs: skip 20 (JIT and autotune launches), profile 1.
pub const TRITON_WINDOW: (u32, u32) = (20, 1);
/// Comparison tolerance, percent.
pub const TOLERANCE_PCT: f64 = 2.0;
