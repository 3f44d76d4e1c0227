//! Each kernel against the device's documented limits (`gpu_specs.yaml`): DRAM bandwidth,
//! the FP32 roofline and warp slots.

use super::summary::MetricsSummary;

/// Where each kernel stands against the device's limits from gpu_specs.yaml: the FP32
/// roofline (when FLOP counts and DRAM bytes were collected), DRAM bandwidth and warp slots.
pub fn device_limits(spec: &crate::references::GpuSpec, summary: &MetricsSummary) -> Vec<String> {
    use crate::units::value as f;
    let bw = spec.bandwidth_bytes_per_second();
    let mut out = vec![format!(
        "{} (gpu_specs.yaml): {} SMs, {} GB/s DRAM, FP32 {} TFLOP/s{}, {} warps per SM.",
        spec.name,
        spec.sm_count,
        f(spec.memory.bandwidth_gbps),
        spec.peak_tflops.fp32.map(f).unwrap_or_else(|| "?".into()),
        spec.peak_tflops
            .fp32
            .map(|p| format!(" (ridge point {} FLOP/byte)", f(spec.ridge_point(p))))
            .unwrap_or_default(),
        spec.max_warps_per_sm
    )];
    for k in &summary.kernels {
        let name = &k.kernel;
        if let (Some(bytes), Some(ns)) = (k.get("dram_bytes"), k.get("duration_ns")) {
            if ns > 0.0 {
                let gbps = bytes / (ns * 1e-9) / 1e9;
                out.push(format!(
                    "`{name}`: DRAM {} GB/s, {} % of the device's {} GB/s.",
                    f(gbps),
                    f(100.0 * gbps * 1e9 / bw),
                    f(spec.memory.bandwidth_gbps)
                ));
            }
        }
        if let (Some(ai), Some(achieved), Some(peak)) =
            (k.get("arithmetic_intensity"), k.get("achieved_flops_per_s"), spec.peak_tflops.fp32)
        {
            let attainable = (peak * 1e12).min(ai * bw);
            let side = if ai < spec.ridge_point(peak) { "memory side" } else { "compute side" };
            out.push(format!(
                "`{name}`: FP32 DRAM roofline: {} FLOP per DRAM byte ({side} of the ridge), attainable {} TFLOP/s, achieved {} TFLOP/s ({} % of attainable); traffic served by L1 or L2 is not in this roofline.",
                f(ai),
                f(attainable / 1e12),
                f(achieved / 1e12),
                f(100.0 * achieved / attainable)
            ));
        }
        if let Some(occ) = k.get("achieved_occupancy_pct") {
            out.push(format!(
                "`{name}`: about {} of the SM's {} warp slots in use (achieved occupancy {} %).",
                f((occ * spec.max_warps_per_sm as f64 / 100.0).round()),
                spec.max_warps_per_sm,
                f(occ)
            ));
        }
    }
    out
}
