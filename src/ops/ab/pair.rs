//! The paired kernels of an A/B check and how to check them: what the timing phase
//! ([`super::timing`]) and the verdicts ([`super::rounds`]) both read.

use std::time::Duration;

use crate::build::BuildOutput;
use crate::collect::rounds::SideRun;
use crate::compare::ab::rounds::{Rounds, SideSample};
use crate::model::ab::{AmbiguousPolicy, GateSignal, Side};
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

/// The rounds document from the runs as they happened.
pub fn to_rounds(k: &KernelPlan, runs: &[SideRun], source: &str) -> Rounds {
    let case = runs.first().map(|r| r.facts.case.clone()).or_else(|| k.case.clone());
    let mode = runs.first().map(|r| r.facts.mode.clone()).unwrap_or_else(|| "hot".into());
    let mut rounds = Rounds::new(&k.name, case.as_deref(), &mode, source);
    let sample = |r: &SideRun| SideSample {
        median_ns: r.facts.median_ns,
        samples: r.facts.samples,
        rel_noise: r.facts.rel_noise,
        sm_clock_mhz: r.sm_clock_mhz,
    };
    let last = runs.iter().map(|r| r.round).max();
    for index in 0..last.map_or(0, |l| l + 1) {
        let of = |side: Side| runs.iter().find(|r| r.round == index && r.side == side);
        if let (Some(b), Some(h)) = (of(Side::Base), of(Side::Head)) {
            rounds.push(sample(b), sample(h));
        }
    }
    rounds
}
