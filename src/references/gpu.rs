//! `gpu_specs.yaml` as [`GpuSpec`]s, and the lookup by the device name ncu reports.

use std::sync::OnceLock;

use serde::Deserialize;

use super::GPU_SPECS;

/// One GPU product from `gpu_specs.yaml`. Field meanings and units are documented at the
/// top of that file and in `architecture-notes.md`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSpec {
    /// The product name as `nvidia-smi` and ncu's `device__attribute_display_name` print it.
    pub name: String,
    /// Other spellings of the same product (never a different product).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The die, e.g. `GH100`.
    pub chip: String,
    /// The architecture family, e.g. `Hopper`.
    pub architecture: String,
    /// `"major.minor"`, e.g. `"9.0"`.
    pub compute_capability: String,
    /// Board form factor (`SXM5`, `PCIe`, ...).
    pub form_factor: String,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Boost clock in MHz; the peak rates are at this clock.
    pub boost_clock_mhz: u32,
    /// Device memory.
    pub memory: MemorySpec,
    /// L2 cache size in MiB.
    pub l2_cache_mib: f64,
    /// Largest shared-memory carve-out per SM, in KiB.
    pub shared_memory_per_sm_kib: u32,
    /// Most shared memory one block may opt in to, in KiB.
    pub shared_memory_per_block_kib: u32,
    /// 32-bit registers per SM.
    pub registers_per_sm: u32,
    /// Most registers one thread may use.
    pub registers_per_thread_max: u32,
    /// Resident warps per SM at most.
    pub max_warps_per_sm: u32,
    /// Resident blocks per SM at most.
    pub max_blocks_per_sm: u32,
    /// Threads per block at most.
    pub max_threads_per_block: u32,
    /// FP32 lanes (CUDA cores) per SM.
    pub fp32_lanes_per_sm: u32,
    /// Dense peak rates in TFLOP/s at the boost clock.
    pub peak_tflops: PeakRates,
    /// Documents the figures come from.
    pub sources: Vec<String>,
    /// Per-field remarks: other sources, derivations, low confidence.
    #[serde(default)]
    pub notes: Vec<SpecNote>,
    /// Facts read off a real device of this kind, with date and tool version.
    #[serde(default)]
    pub observed: Vec<String>,
}

/// Device memory of a [`GpuSpec`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySpec {
    /// Marketed capacity in GB.
    pub size_gb: f64,
    /// Memory technology (`HBM3e`, `GDDR6`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// Peak bandwidth in GB/s (10^9 bytes per second).
    pub bandwidth_gbps: f64,
}

/// Dense peak rates in TFLOP/s; `None` where the chip lacks the unit or data type.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeakRates {
    /// FP64 on the FMA/FP64 pipe.
    pub fp64: Option<f64>,
    /// FP64 on tensor cores (DMMA).
    pub fp64_tensor: Option<f64>,
    /// FP32 on the FMA pipe.
    pub fp32: Option<f64>,
    /// FP16 without tensor cores (packed pairs).
    pub fp16: Option<f64>,
    /// BF16 without tensor cores.
    pub bf16: Option<f64>,
    /// TF32 on tensor cores.
    pub tf32_tensor: Option<f64>,
    /// FP16 on tensor cores, FP32 accumulate.
    pub fp16_tensor: Option<f64>,
    /// BF16 on tensor cores, FP32 accumulate.
    pub bf16_tensor: Option<f64>,
    /// FP8 on tensor cores.
    pub fp8_tensor: Option<f64>,
}

impl PeakRates {
    /// Every rate with its field name, in file order.
    pub fn all(&self) -> [(&'static str, Option<f64>); 9] {
        [
            ("fp64", self.fp64),
            ("fp64_tensor", self.fp64_tensor),
            ("fp32", self.fp32),
            ("fp16", self.fp16),
            ("bf16", self.bf16),
            ("tf32_tensor", self.tf32_tensor),
            ("fp16_tensor", self.fp16_tensor),
            ("bf16_tensor", self.bf16_tensor),
            ("fp8_tensor", self.fp8_tensor),
        ]
    }
}

/// A remark on one field of a [`GpuSpec`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecNote {
    /// The field, as a dotted path (`peak_tflops.fp16`, `memory.bandwidth_gbps`).
    pub field: String,
    /// Where the figure comes from or how it was derived.
    pub note: String,
    /// How far to trust the figure; absent means it comes from the listed sources.
    #[serde(default)]
    pub confidence: Option<Confidence>,
}

/// Trust in a figure of `gpu_specs.yaml`: `low` (derived or from a secondary source),
/// `medium` (probably right, not confirmed by a primary document) or `high`.
pub use crate::model::verdict::Confidence;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GpuSpecFile {
    #[allow(dead_code)]
    schema_version: u32,
    gpus: Vec<GpuSpec>,
}

impl GpuSpec {
    /// Whether `name` is this product's name or one of its aliases (trimmed, runs of
    /// whitespace collapsed, case-insensitive, whole string).
    pub fn matches_name(&self, name: &str) -> bool {
        let wanted = normalize_name(name);
        !wanted.is_empty()
            && std::iter::once(&self.name).chain(&self.aliases).any(|n| normalize_name(n) == wanted)
    }

    /// L2 size in bytes.
    pub fn l2_cache_bytes(&self) -> u64 {
        (self.l2_cache_mib * 1024.0 * 1024.0).round() as u64
    }

    /// Peak DRAM bandwidth in bytes per second.
    pub fn bandwidth_bytes_per_second(&self) -> f64 {
        self.memory.bandwidth_gbps * 1e9
    }

    /// Threads resident per SM at most (`max_warps_per_sm` x 32).
    pub fn max_threads_per_sm(&self) -> u32 {
        self.max_warps_per_sm * 32
    }

    /// The ridge point in FLOP per DRAM byte for a peak rate in TFLOP/s: below it a kernel
    /// cannot reach that peak whatever it does, because DRAM bandwidth caps it first.
    pub fn ridge_point(&self, peak_tflops: f64) -> f64 {
        peak_tflops * 1e12 / self.bandwidth_bytes_per_second()
    }

    /// The note for a field (dotted path), if any.
    pub fn note(&self, field: &str) -> Option<&SpecNote> {
        self.notes.iter().find(|n| n.field == field)
    }
}

fn normalize_name(name: &str) -> String {
    name.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// Parses a `gpu_specs.yaml` document. Pure; [`gpu_specs`] uses it on the embedded file.
pub fn parse_gpu_specs(yaml: &str) -> Result<Vec<GpuSpec>, serde_yaml::Error> {
    serde_yaml::from_str::<GpuSpecFile>(yaml).map(|f| f.gpus)
}

/// The embedded GPU specifications, parsed on first use.
///
/// # Panics
/// If the embedded `gpu_specs.yaml` does not parse. The file is part of the binary and
/// `tests/references.rs` parses it, so this is a build defect, not a user error.
pub fn gpu_specs() -> &'static [GpuSpec] {
    static SPECS: OnceLock<Vec<GpuSpec>> = OnceLock::new();
    SPECS.get_or_init(|| {
        parse_gpu_specs(GPU_SPECS.contents)
            .unwrap_or_else(|e| panic!("the embedded {} does not parse: {e}", GPU_SPECS.path))
    })
}

/// The specification of the device ncu reports as `name` (its display name, e.g.
/// `NVIDIA H200`), matched whole and case-insensitively against names and aliases. When
/// `compute_capability` is given (`"9.0"`), it must agree with the entry. Returns `None`
/// for an unknown device or a disagreeing compute capability; never a similar GPU.
pub fn lookup_gpu(name: &str, compute_capability: Option<&str>) -> Option<&'static GpuSpec> {
    let spec = gpu_specs().iter().find(|s| s.matches_name(name))?;
    match compute_capability {
        None => Some(spec),
        Some(cc) => {
            let wanted = parse_compute_capability(cc)?;
            (parse_compute_capability(&spec.compute_capability) == Some(wanted)).then_some(spec)
        }
    }
}

/// `"9.0"` or `"9"` as (9, 0); anything else is `None`.
fn parse_compute_capability(cc: &str) -> Option<(u32, u32)> {
    let cc = cc.trim();
    let (major, minor) = cc.split_once('.').unwrap_or((cc, "0"));
    Some((major.parse().ok()?, minor.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compute_capability_forms() {
        assert_eq!(parse_compute_capability("9.0"), Some((9, 0)));
        assert_eq!(parse_compute_capability(" 9 "), Some((9, 0)));
        assert_eq!(parse_compute_capability("8.9"), Some((8, 9)));
        assert_eq!(parse_compute_capability("sm_90"), None);
    }
}
