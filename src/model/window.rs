//! Launch windows as planned: kprof's defaults per runtime, a window from the given skip
//! and count, and whether it was set or is a default kprof may fit to the program.

use crate::model::kinds::{LaunchWindow, Runtime, WindowOrigin};

/// Built-in defaults when neither the command line nor the manifests set a value.
pub mod defaults {
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
}

/// A window with neither skip nor count set anywhere is kprof's default, and may be fitted.
pub fn window_origin(skip: Option<u32>, count: Option<u32>) -> WindowOrigin {
    if skip.is_none() && count.is_none() {
        WindowOrigin::Default
    } else {
        WindowOrigin::Set
    }
}

/// The launch window for `runtime` from the given skip and count, else the runtime's
/// defaults; a skip for a harness target is ignored, with a note.
pub fn window_for(
    runtime: Runtime,
    skip: Option<u32>,
    count: Option<u32>,
    name: &str,
    notes: &mut Vec<String>,
) -> LaunchWindow {
    match runtime {
        Runtime::Harness => {
            if skip.is_some_and(|s| s > 0) {
                notes.push(format!(
                    "{name}: launch-skip is ignored for harness targets; the harness opens the profiling range after its warm-up"
                ));
            }
            LaunchWindow::HarnessRange { launch_count: count.unwrap_or(defaults::HARNESS_LAUNCH_COUNT) }
        }
        Runtime::Cuda | Runtime::Command | Runtime::PythonTriton => {
            let (s, c) = match runtime {
                Runtime::Cuda => defaults::CUDA_WINDOW,
                Runtime::PythonTriton => defaults::TRITON_WINDOW,
                _ => defaults::COMMAND_WINDOW,
            };
            LaunchWindow::SkipCount { launch_skip: skip.unwrap_or(s), launch_count: count.unwrap_or(c) }
        }
    }
}
