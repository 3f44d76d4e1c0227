//! The reference set under `references/`: embedded at build time, used at run time.
//!
//! The files are written for people first (the ncu guide, the Profiling Guide index, the
//! metric map, the architecture notes) and two of them double as data:
//!
//! - `references/nvidia/architectures/gpu_specs.yaml` is parsed into [`GpuSpec`]s. Lookups
//!   go by the device name ncu reports and must agree with the compute capability when it
//!   is known; an unknown device is `None`, never "the closest GPU", because borrowing
//!   another product's peaks would put wrong numbers into a report.
//! - `references/nvidia/ncu-metric-map.md` is the single source of what `cargo kprof
//!   explain` prints. Each `### NAME` heading with its fixed `- Field: text` bullets is one
//!   [`Topic`]; there is no second copy in code or YAML to drift from it. What depends on
//!   our stage definitions is derived from [`crate::ncu::StageCollection`] when printing:
//!   a stage shows the ncu options it really runs, a metric or section the stages whose raw
//!   CSV carries it.
//!
//! All six files are embedded with `include_str!` (see [`FILES`]), so the binary needs no
//! data directory; the two data files are parsed once, on first use. The parsers are pure functions over `&str` and are tested on
//! the embedded files (`tests/references.rs`), so a malformed reference fails CI rather
//! than a user's run.
//!
//! An unknown `explain` topic is a [`Failure`] with [`ExitCode::Usage`]: the topic is a
//! command-line argument with a closed set of valid values, the same class of mistake as a
//! value clap rejects, and the message suggests the closest known names.

pub mod explain;
pub mod gpu;

pub use explain::{
    explain, find_topics, parse_metric_map, suggestions, topics, Topic, TopicKind, REQUIRED_FIELDS,
};
pub use gpu::{gpu_specs, lookup_gpu, parse_gpu_specs, Confidence, GpuSpec, MemorySpec, PeakRates, SpecNote};

/// One embedded reference file: its path relative to the repository root and its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReferenceFile {
    /// Path relative to the repository (and package) root, with `/` separators.
    pub path: &'static str,
    /// The file's contents as embedded at build time.
    pub contents: &'static str,
}

/// `references/nvidia/ncu-guide.md`: the ncu command flow and the facts seen on real runs.
pub const NCU_GUIDE: ReferenceFile = ReferenceFile {
    path: "references/nvidia/ncu-guide.md",
    contents: include_str!("../../references/nvidia/ncu-guide.md"),
};

/// `references/nvidia/ProfilingGuide.index.md`: where to look in NVIDIA's Profiling Guide.
pub const PROFILING_GUIDE_INDEX: ReferenceFile = ReferenceFile {
    path: "references/nvidia/ProfilingGuide.index.md",
    contents: include_str!("../../references/nvidia/ProfilingGuide.index.md"),
};

/// `references/nvidia/ncu-metric-map.md`: questions, metrics, sections, stages and
/// classifications with their meaning, evidence and usual fixes (what `explain` prints).
pub const METRIC_MAP: ReferenceFile = ReferenceFile {
    path: "references/nvidia/ncu-metric-map.md",
    contents: include_str!("../../references/nvidia/ncu-metric-map.md"),
};

/// `references/nvidia/architectures/README.md`: layout and lookup order.
pub const ARCHITECTURES_README: ReferenceFile = ReferenceFile {
    path: "references/nvidia/architectures/README.md",
    contents: include_str!("../../references/nvidia/architectures/README.md"),
};

/// `references/nvidia/architectures/architecture-notes.md`: how to use the spec fields.
pub const ARCHITECTURE_NOTES: ReferenceFile = ReferenceFile {
    path: "references/nvidia/architectures/architecture-notes.md",
    contents: include_str!("../../references/nvidia/architectures/architecture-notes.md"),
};

/// `references/nvidia/architectures/gpu_specs.yaml`: machine-readable GPU specifications.
pub const GPU_SPECS: ReferenceFile = ReferenceFile {
    path: "references/nvidia/architectures/gpu_specs.yaml",
    contents: include_str!("../../references/nvidia/architectures/gpu_specs.yaml"),
};

/// `references/nvidia/libraries.md`: closed libraries' kernels, the marks in their names
/// and the knobs they offer.
pub const LIBRARIES: ReferenceFile = ReferenceFile {
    path: "references/nvidia/libraries.md",
    contents: include_str!("../../references/nvidia/libraries.md"),
};

/// Every embedded reference file, in reading order.
pub const FILES: [ReferenceFile; 7] = [
    NCU_GUIDE,
    PROFILING_GUIDE_INDEX,
    METRIC_MAP,
    ARCHITECTURES_README,
    ARCHITECTURE_NOTES,
    GPU_SPECS,
    LIBRARIES,
];
