//! The kinds a plan is made of: how a program launches its kernels ([`Runtime`]), which
//! cargo target it is ([`CargoTargetKind`]), which launches are profiled
//! ([`LaunchWindow`]), how ncu treats the clocks ([`ClockControl`]) and how ncu gets at
//! the counters ([`Privilege`]). Each is written the same way in
//! manifests, YAML, JSON and messages (`name()`).

use std::fmt;

use cargo_metadata::TargetKind;
use serde::{Deserialize, Serialize};

/// ncu's `--clock-control` mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockControl {
    /// Leave the GPU clocks alone.
    None,
    /// Lock the clocks to base frequency (ncu's default): steadier, not peak, numbers.
    Base,
}

impl ClockControl {
    /// The spelling in manifests, YAML and on ncu's command line.
    pub fn name(self) -> &'static str {
        match self {
            ClockControl::None => "none",
            ClockControl::Base => "base",
        }
    }
}

impl fmt::Display for ClockControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How ncu is started (`privilege` in the manifests, `--sudo` on the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Privilege {
    /// Run ncu directly: `NCU`, then `PATH`, then `profile/ncu_path`.
    #[default]
    None,
    /// Run exactly the ncu named in `profile/ncu_path` as `sudo -n <path> ...`, which
    /// needs a NOPASSWD sudoers rule for that path; never with a password.
    Sudo,
}

impl Privilege {
    /// The spelling in manifests, YAML and messages.
    pub fn name(self) -> &'static str {
        match self {
            Privilege::None => "none",
            Privilege::Sudo => "sudo",
        }
    }
}

impl fmt::Display for Privilege {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How the target program launches the kernel, which decides how the launch window
/// is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Runtime {
    /// A bench built on `kprof-harness`, which marks the exact profiling range.
    Harness,
    /// A Rust program launching CUDA kernels itself; launch skip/count pick the window.
    Cuda,
    /// Any other program, run as given.
    Command,
    /// A Python program launching Triton kernels (JIT and autotune launches to skip).
    PythonTriton,
}

impl Runtime {
    /// The spelling in manifests and YAML.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Harness => "harness",
            Runtime::Cuda => "cuda",
            Runtime::Command => "command",
            Runtime::PythonTriton => "python-triton",
        }
    }

    pub(crate) const ALL: [Runtime; 4] =
        [Runtime::Harness, Runtime::Cuda, Runtime::Command, Runtime::PythonTriton];
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The kind of a cargo target a kernel entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CargoTargetKind {
    /// `[[bench]]`, built by `cargo build --bench`.
    Bench,
    /// `[[example]]`.
    Example,
    /// `[[bin]]`.
    Bin,
}

impl CargoTargetKind {
    /// The manifest key and cargo flag name (`bench`, `example`, `bin`).
    pub fn name(self) -> &'static str {
        match self {
            CargoTargetKind::Bench => "bench",
            CargoTargetKind::Example => "example",
            CargoTargetKind::Bin => "bin",
        }
    }

    /// The matching cargo_metadata target kind.
    pub fn cargo_kind(self) -> TargetKind {
        match self {
            CargoTargetKind::Bench => TargetKind::Bench,
            CargoTargetKind::Example => TargetKind::Example,
            CargoTargetKind::Bin => TargetKind::Bin,
        }
    }

    /// Every kind.
    pub const ALL: [CargoTargetKind; 3] =
        [CargoTargetKind::Bench, CargoTargetKind::Example, CargoTargetKind::Bin];
}

impl CargoTargetKind {
    /// The cargo flag that selects one target of this kind (`--bench`).
    pub fn cargo_flag(self) -> &'static str {
        match self {
            CargoTargetKind::Bench => "--bench",
            CargoTargetKind::Example => "--example",
            CargoTargetKind::Bin => "--bin",
        }
    }
}

impl fmt::Display for CargoTargetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which launches of the filtered kernel are profiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LaunchWindow {
    /// The kprof harness opens a profiler range around exactly the requested launches:
    /// ncu runs with `--profile-from-start off` and needs no skip/count guess.
    HarnessRange {
        /// How many launches of each selected case the harness makes inside the range.
        launch_count: u32,
    },
    /// A plain program: skip the first launches that match, then profile some.
    SkipCount {
        /// Matching launches to skip (warm-up, JIT, autotuning).
        launch_skip: u32,
        /// Matching launches to profile.
        launch_count: u32,
    },
}

/// Where a plain program's launch window came from, which decides whether kprof may fit
/// it to what the program launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowOrigin {
    /// kprof's default for the runtime: when it would skip every launch of the kernel,
    /// kprof profiles the kernel's last launches instead, and says so.
    #[default]
    Default,
    /// Set in the manifests or on the command line: kept as given.
    Set,
}

impl LaunchWindow {
    /// The window in ncu's words, for messages: `--launch-skip 5 --launch-count 3`, or the
    /// harness range.
    pub fn describe(self) -> String {
        match self {
            LaunchWindow::HarnessRange { launch_count } => {
                format!("the harness profiling range ({launch_count} launch(es) of each case)")
            }
            LaunchWindow::SkipCount { launch_skip, launch_count } => {
                format!("--launch-skip {launch_skip} --launch-count {launch_count}")
            }
        }
    }

    /// Launches profiled.
    pub fn launch_count(self) -> u32 {
        match self {
            LaunchWindow::HarnessRange { launch_count } | LaunchWindow::SkipCount { launch_count, .. } => {
                launch_count
            }
        }
    }
}
