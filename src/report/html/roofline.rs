//! The roofline of `report.html`: the kernel's FLOP rate against its arithmetic intensity
//! (FLOP per DRAM byte), under the device's DRAM and FP32 ceilings, laid out as SVG
//! coordinates for the template.
//!
//! The ceilings come from the device attributes ncu recorded in the profile's raw pages
//! (kept in the metrics summary), through the same rates the A/B counter rule prices work
//! at ([`PeakRates`]): DRAM bandwidth is the memory clock on both edges times the bus
//! width; the FP32 roof is one FMA (two FLOP) per thread of every warp the schedulers can
//! issue per cycle, at the highest SM clock. Nothing is taken from a table of known GPUs,
//! so a device kprof has never seen gets its own roofline.

use crate::analyze::summary::KernelSummary;
use crate::compare::cost::PeakRates;
use crate::units::{log_tick, sig, value};

/// Width of the SVG, in its own units.
const WIDTH: f64 = 560.0;
/// Height of the SVG.
const HEIGHT: f64 = 340.0;
/// The plot's edges inside the SVG: left, right, top, bottom.
const PLOT: (f64, f64, f64, f64) = (64.0, 544.0, 16.0, 292.0);

/// The device's ceilings for one kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct Ceilings {
    /// FP32 FLOP per second.
    pub flops_per_s: f64,
    /// DRAM bytes per second.
    pub dram_bytes_per_s: f64,
}

impl Ceilings {
    /// The ceilings from the device attributes in `k`'s summary; `None` when one they
    /// need was not recorded.
    pub fn of(k: &KernelSummary) -> Option<Ceilings> {
        let rates = PeakRates::from_summary(|f| k.get(f));
        Some(Ceilings { flops_per_s: rates.thread_issue? * 2.0, dram_bytes_per_s: rates.dram_bytes? })
    }

    /// FLOP per byte where the two roofs meet.
    pub fn ridge(&self) -> f64 {
        self.flops_per_s / self.dram_bytes_per_s
    }
}

/// A line between two points of the SVG.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Segment {
    /// Start.
    pub x1: String,
    /// Start.
    pub y1: String,
    /// End.
    pub x2: String,
    /// End.
    pub y2: String,
}

/// A tick of an axis: where it is and its label.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    /// Its position along the axis, in SVG units.
    pub at: String,
    /// Its label.
    pub label: String,
}

/// The kernel's point.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Its x.
    pub cx: String,
    /// Its y.
    pub cy: String,
    /// What it says on hover and beside it.
    pub label: String,
}

/// The roofline, ready to draw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Roofline {
    /// The ceilings are known (the device attributes were recorded).
    pub drawn: bool,
    /// The SVG's view box.
    pub view_box: String,
    /// The plot's frame.
    pub frame: Segment,
    /// The x axis' ticks (FLOP per byte).
    pub x_ticks: Vec<Tick>,
    /// The y axis' ticks (TFLOP/s).
    pub y_ticks: Vec<Tick>,
    /// The DRAM slope, up to the ridge.
    pub dram: Segment,
    /// The FP32 roof, from the ridge.
    pub compute: Segment,
    /// Which ceiling binds the kernel: `dram`, `compute`, or empty without a point.
    pub binding: String,
    /// The ceilings' labels.
    pub dram_label: String,
    /// The FP32 roof's label.
    pub compute_label: String,
    /// The kernel's point, when its FLOP, bytes and duration were collected.
    pub point: Option<Point>,
    /// One sentence: where the kernel is, or why it has no point.
    pub caption: String,
    /// How each ceiling follows from the recorded attributes.
    pub derivation: Vec<String>,
}

/// The kernel's place: arithmetic intensity (FLOP/byte) and FLOP/s, or why it has none.
fn point_of(k: &KernelSummary) -> Result<(f64, f64), &'static str> {
    match k.get("flops") {
        None => Err("its FLOP counts were not collected (the `roofline` or `compute` stage counts them)"),
        Some(f) if f <= 0.0 => {
            Err("it does no floating-point work: a data-movement kernel has no point here")
        }
        Some(_) => {
            match (k.get("dram_bytes"), k.get("arithmetic_intensity"), k.get("achieved_flops_per_s")) {
                (None, _, _) => Err("its DRAM bytes were not collected (the `memory` stage counts them)"),
                (_, Some(ai), Some(p)) if ai > 0.0 && p > 0.0 => Ok((ai, p)),
                (Some(b), _, _) if b <= 0.0 => Err("it moved no DRAM bytes: its intensity is unbounded"),
                _ => Err("its duration was not collected"),
            }
        }
    }
}

/// A log axis over `[lo, hi]` (powers of ten) mapped onto `[a, b]`.
struct LogAxis {
    lo: f64,
    hi: f64,
    a: f64,
    b: f64,
}

impl LogAxis {
    fn at(&self, v: f64) -> f64 {
        let t = (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10());
        self.a + t * (self.b - self.a)
    }

    fn ticks(&self, scale: f64) -> Vec<Tick> {
        let (lo, hi) = (self.lo.log10().round() as i32, self.hi.log10().round() as i32);
        (lo..=hi)
            .map(|e| 10f64.powi(e))
            .map(|v| Tick { at: coord(self.at(v)), label: log_tick(v / scale) })
            .collect()
    }
}

fn coord(v: f64) -> String {
    format!("{v:.1}")
}

fn floor_pow10(v: f64) -> f64 {
    10f64.powf(v.log10().floor())
}

fn ceil_pow10(v: f64) -> f64 {
    10f64.powf(v.log10().ceil())
}

/// The roofline of kernel `k`.
pub fn roofline(k: &KernelSummary) -> Roofline {
    let point = point_of(k);
    let Some(c) = Ceilings::of(k) else {
        return Roofline {
            caption: "The device's attributes (SM count, clocks, memory bus) were not recorded in the raw \
                      pages: no ceilings to draw."
                .into(),
            ..Roofline::default()
        };
    };
    let ridge = c.ridge();
    let (mut x, mut y) = ((ridge / 100.0, ridge * 100.0), (c.flops_per_s / 1e4, c.flops_per_s * 3.0));
    if let Ok((ai, flops)) = point {
        x = (x.0.min(ai / 3.0), x.1.max(ai * 3.0));
        y = (y.0.min(flops / 3.0), y.1);
    }
    let xa = LogAxis { lo: floor_pow10(x.0), hi: ceil_pow10(x.1), a: PLOT.0, b: PLOT.1 };
    let ya = LogAxis { lo: floor_pow10(y.0), hi: ceil_pow10(y.1), a: PLOT.3, b: PLOT.2 };
    let x_start = xa.lo.max(ya.lo / c.dram_bytes_per_s);
    let seg = |(x1, y1): (f64, f64), (x2, y2): (f64, f64)| Segment {
        x1: coord(xa.at(x1)),
        y1: coord(ya.at(y1)),
        x2: coord(xa.at(x2)),
        y2: coord(ya.at(y2)),
    };
    let (binding, caption, point) = match point {
        Ok((ai, flops)) => {
            let attainable = c.flops_per_s.min(ai * c.dram_bytes_per_s);
            let (binding, roof) =
                if ai < ridge { ("dram", "DRAM bandwidth") } else { ("compute", "the FP32 peak") };
            let label = format!("{} FLOP/byte, {} TFLOP/s", sig(ai, 3), sig(flops / 1e12, 3));
            let caption = format!(
                "The kernel: {label}, {} % of the {} TFLOP/s attainable at its intensity; {roof} binds it \
                 (ridge at {} FLOP/byte). Traffic served by L1 or L2 is not in this roofline.",
                sig(100.0 * flops / attainable, 3),
                sig(attainable / 1e12, 3),
                sig(ridge, 3)
            );
            let p = Point { cx: coord(xa.at(ai)), cy: coord(ya.at(flops)), label };
            (binding.to_string(), caption, Some(p))
        }
        Err(why) => (String::new(), format!("No point for the kernel: {why}."), None),
    };
    Roofline {
        drawn: true,
        view_box: format!("0 0 {WIDTH} {HEIGHT}"),
        frame: Segment { x1: coord(PLOT.0), y1: coord(PLOT.2), x2: coord(PLOT.1), y2: coord(PLOT.3) },
        x_ticks: xa.ticks(1.0),
        y_ticks: ya.ticks(1e12),
        dram: seg((x_start, x_start * c.dram_bytes_per_s), (ridge, c.flops_per_s)),
        compute: seg((ridge, c.flops_per_s), (xa.hi, c.flops_per_s)),
        binding,
        dram_label: format!("DRAM {} GB/s", value((c.dram_bytes_per_s / 1e9).round())),
        compute_label: format!("FP32 {} TFLOP/s", sig(c.flops_per_s / 1e12, 3)),
        point,
        caption,
        derivation: derivation(k),
    }
}

/// How the ceilings follow from the recorded attributes, one line each.
fn derivation(k: &KernelSummary) -> Vec<String> {
    let f = |name: &str| k.get(name).map(value).unwrap_or_else(|| "?".into());
    let ghz = |name: &str| k.get(name).map(|khz| sig(khz / 1e6, 4)).unwrap_or_else(|| "?".into());
    vec![
        format!(
            "FP32: {} SMs × {} schedulers × {} instruction(s) per scheduler and cycle × {} threads × 2 FLOP (FMA) \
             × {} GHz (the highest SM clock)",
            f("sm_count"),
            f("schedulers_per_sm"),
            f("ipc_per_scheduler"),
            f("warp_size"),
            ghz("sm_clock_khz")
        ),
        format!(
            "DRAM: {} GHz memory clock × 2 (both edges) × {}-bit bus ÷ 8",
            ghz("memory_clock_khz"),
            f("memory_bus_width_bits")
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn kernel(fields: &[(&str, f64)]) -> KernelSummary {
        let fields: BTreeMap<String, Option<f64>> =
            fields.iter().map(|(k, v)| (k.to_string(), Some(*v))).collect();
        KernelSummary { kernel: "k".into(), launches: 1, fields, top_stalls: Vec::new() }
    }

    const H200: &[(&str, f64)] = &[
        ("sm_count", 132.0),
        ("sm_clock_khz", 1_980_000.0),
        ("schedulers_per_sm", 4.0),
        ("ipc_per_scheduler", 1.0),
        ("warp_size", 32.0),
        ("memory_clock_khz", 3_201_000.0),
        ("memory_bus_width_bits", 6016.0),
    ];

    #[test]
    fn an_h200s_ceilings_come_from_its_attributes() {
        let c = Ceilings::of(&kernel(H200)).unwrap();
        // 132 x 4 x 32 x 2 x 1.98 GHz; the gpu_specs.yaml figure is 66.9 TFLOP/s.
        assert!((c.flops_per_s - 66.9e12).abs() < 0.01e12, "{c:?}");
        // 3.201 GHz x 2 x 6016 / 8: ncu's own 1,504 bytes per cycle.
        assert!((c.dram_bytes_per_s - 1504.0 * 3.201e9).abs() < 1e6, "{c:?}");
        assert!(Ceilings::of(&kernel(&H200[1..])).is_none());
    }

    #[test]
    fn the_binding_ceiling_is_the_one_under_the_point() {
        let mut memory = H200.to_vec();
        memory.extend([
            ("flops", 1e9),
            ("dram_bytes", 1e9),
            ("arithmetic_intensity", 1.0),
            ("achieved_flops_per_s", 1e12),
        ]);
        let r = roofline(&kernel(&memory));
        assert_eq!(r.binding, "dram");
        assert!(r.point.is_some() && r.drawn);
        let mut compute = H200.to_vec();
        compute.extend([
            ("flops", 1e12),
            ("dram_bytes", 1e9),
            ("arithmetic_intensity", 1000.0),
            ("achieved_flops_per_s", 3e13),
        ]);
        assert_eq!(roofline(&kernel(&compute)).binding, "compute");
        let mut copy = H200.to_vec();
        copy.push(("flops", 0.0));
        let r = roofline(&kernel(&copy));
        assert!(r.point.is_none() && r.binding.is_empty() && r.caption.contains("no floating-point work"));
        assert!(!roofline(&kernel(&[])).drawn);
    }
}
