//! What a verdict says: the bottleneck class and how sure it is.

use serde::{Deserialize, Serialize};

/// A bottleneck class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Classification {
    /// A memory unit limits the kernel.
    MemoryBound,
    /// The SM's pipes limit the kernel.
    ComputeBound,
    /// Waiting dominates: too little parallelism, or exposed latency.
    LatencyBound,
    /// Too few warps fit on an SM.
    OccupancyLimited,
    /// Compute and memory are both substantially used.
    Balanced,
    /// The collected metrics do not decide it.
    Unknown,
}

impl Classification {
    /// The spelling in JSON and reports.
    pub fn name(self) -> &'static str {
        match self {
            Classification::MemoryBound => "memory-bound",
            Classification::ComputeBound => "compute-bound",
            Classification::LatencyBound => "latency-bound",
            Classification::OccupancyLimited => "occupancy-limited",
            Classification::Balanced => "balanced",
            Classification::Unknown => "unknown",
        }
    }
}

/// How sure a verdict is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// Clear margins on the deciding metrics.
    High,
    /// Decided, with smaller margins.
    Medium,
    /// Little evidence.
    Low,
}

impl Confidence {
    /// The spelling in JSON and reports.
    pub fn name(self) -> &'static str {
        match self {
            Confidence::High => "high",
            Confidence::Medium => "medium",
            Confidence::Low => "low",
        }
    }
}
