//! The paired kernels of an A/B check and how to check them: what the timing phase
//! ([`super::timing`]) and the verdicts ([`super::rounds`]) both read.

use std::time::Duration;

use crate::build::BuildOutput;
use crate::model::ab::{AmbiguousPolicy, GateSignal};
use crate::plan::KernelPlan;
use crate::profile::dir::ProfileDir;

/// One kernel on both sides, profiled.
pub struct AbPair<'a> {
    /// The head's plan of it.
    pub head_kernel: &'a KernelPlan,
    /// The base's plan of it.
    pub base_kernel: &'a KernelPlan,
    /// The head's profile.
    pub head_dir: &'a ProfileDir,
    /// The base's profile.
    pub base_dir: &'a ProfileDir,
    /// The head's executables.
    pub head_built: Option<&'a BuildOutput>,
    /// The base's executables.
    pub base_built: Option<&'a BuildOutput>,
}

/// How to check.
#[derive(Debug, Clone)]
pub struct AbOptions {
    /// Timing rounds per side.
    pub rounds: u32,
    /// `--tolerance-pct`; else each kernel's own.
    pub tolerance_pct: Option<f64>,
    /// Which signals may fail the gate.
    pub gate: GateSignal,
    /// What an ambiguous kernel does to the exit code.
    pub ambiguous: AmbiguousPolicy,
    /// `--timeout` of each timing run.
    pub timeout: Option<Duration>,
    /// Whether the harness kernels of one program are timed by one run per side and
    /// round (`--no-batch`: one run per kernel).
    pub batch: bool,
    /// How to name the base (`3f2a1c9d0e1b (HEAD~1)`).
    pub base_label: String,
}
