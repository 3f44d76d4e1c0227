//! The roofline panel: the kernel's point under the device's FP32 and DRAM ceilings, or
//! why it has none; without the counts it needs, the binding ceiling (the unit nearest
//! its peak) in its place, and without the device's ceilings, the point's numbers alone.

use super::*;

/// The kernel's place on the roofline, or why it has none: what was not collected (the
/// panel then shows the binding ceiling instead), or a headline and a detail.
pub(crate) enum RoofPoint {
    Point { ai: f64, tflops: f64 },
    NotCollected(&'static str),
    Absent(&'static str, &'static str),
}

pub(crate) fn roof_point(k: &KernelSummary) -> RoofPoint {
    match k.get("flops") {
        None => RoofPoint::NotCollected("FLOP counts"),
        Some(f) if f <= 0.0 => RoofPoint::Absent(
            "No floating-point work (0 FLOP)",
            "a pure data-movement kernel: no point to place",
        ),
        Some(_) => {
            match (k.get("dram_bytes"), k.get("arithmetic_intensity"), k.get("achieved_flops_per_s")) {
                (None, _, _) => RoofPoint::NotCollected("DRAM bytes"),
                (Some(b), _, _) if b <= 0.0 => {
                    RoofPoint::Absent("No DRAM traffic measured", "no arithmetic intensity")
                }
                (_, Some(ai), Some(p)) if ai > 0.0 && p > 0.0 => RoofPoint::Point { ai, tflops: p / 1e12 },
                _ => RoofPoint::Absent("Duration not collected", "no achieved FLOP/s"),
            }
        }
    }
}

/// Two centred lines in a light box around (`cx`, `cy`).
fn note_box(area: &Area, (cx, cy): (i32, i32), first: &str, second: &str) -> Result<()> {
    let (w, _) = size(area);
    let first = fit(area, first, 16, (w - 60) as u32)?;
    let second = fit(area, second, 14, (w - 60) as u32)?;
    let tw = text_width(area, &first, 16)?.max(text_width(area, &second, 14)?) as i32;
    let (x0, x1) = ((cx - tw / 2 - 14).max(4), (cx + tw / 2 + 14).min(w - 4));
    fill(area, (x0, cy - 26), (x1, cy + 26), RGBColor(248, 249, 250))?;
    area.draw(&Rectangle::new([(x0, cy - 26), (x1, cy + 26)], FRAME))?;
    text(area, &first, (cx, cy - 10), 16, TEXT, HPos::Center)?;
    text(area, &second, (cx, cy + 12), 14, MUTED, HPos::Center)
}

pub(super) fn roofline(area: &Area, input: &VisualInput, scales: &Scales) -> Result<()> {
    let point = roof_point(input.kernel);
    if let RoofPoint::NotCollected(what) = point {
        return binding_ceiling(area, input.kernel, what);
    }
    let (w, h) = size(area);
    let (Some(device), Some(((x_lo, x_hi), (y_lo, y_hi)))) = (&input.device, scales.roof) else {
        return roofline_without_ceilings(area, point);
    };
    let peak = device.peak_fp32_flops_per_s / 1e12;
    let bw_t = device.peak_dram_bytes_per_s / 1e12;
    let ridge = peak / bw_t;
    frame(area, "Roofline (FP32, DRAM)", &format!("ridge {} FLOP/byte", sig(ridge, 3)))?;
    let plot = area.margin(40, 6, 6, 26);
    let mut chart = ChartBuilder::on(&plot)
        .x_label_area_size(50)
        .y_label_area_size(66)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..y_hi).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("arithmetic intensity, FLOP per DRAM byte")
        .y_desc("TFLOP/s")
        .label_style((FONT, 14).into_font().color(&MUTED))
        .axis_desc_style((FONT, 15).into_font().color(&TEXT))
        .x_label_formatter(&|v| log_tick(*v))
        .y_label_formatter(&|v| log_tick(*v))
        .bold_line_style(GRID)
        .light_line_style(WHITE)
        .axis_style(MUTED)
        .draw()?;
    // The DRAM slope, from where it enters the plot to the ridge, then the compute roof.
    let x_start = x_lo.max(y_lo / bw_t);
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(x_start, x_start * bw_t), (ridge, peak)],
        MEMORY.stroke_width(3),
    )))?;
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(ridge, peak), (x_hi, peak)],
        COMPUTE.stroke_width(3),
    )))?;
    let label = |s: String, at: (f64, f64), offset: (i32, i32), color: RGBColor, h: HPos| {
        EmptyElement::at(at) + Text::new(s, offset, style(14, color, h))
    };
    chart.draw_series(std::iter::once(label(
        format!("FP32 peak {} TFLOP/s", sig(peak, 3)),
        (ridge, peak),
        (10, -24),
        COMPUTE,
        HPos::Left,
    )))?;
    // Below the slope, a third of the way up it.
    let x_dram = x_start * (ridge / x_start).powf(0.3);
    chart.draw_series(std::iter::once(label(
        format!("DRAM {} GB/s", format_value((device.peak_dram_bytes_per_s / 1e9).round())),
        (x_dram, x_dram * bw_t),
        (14, 2),
        MEMORY,
        HPos::Left,
    )))?;
    match point {
        RoofPoint::Point { ai, tflops } => {
            let attainable = peak.min(ai * bw_t);
            let first = format!("{} FLOP/B, {} TFLOP/s", sig(ai, 3), sig(tflops, 3));
            let second = format!("{} % of attainable", sig(100.0 * tflops / attainable, 3));
            // In panel pixels: the point, the plot's extent.
            let (bx, by) = area.get_base_pixel();
            let (px, py) = chart.backend_coord(&(ai, tflops));
            let (xs, ys) = chart.plotting_area().get_pixel_range();
            let plot = PlotPixels { left: xs.start - bx, right: xs.end - bx, bottom: ys.end - by };
            mark_point(area, (px - bx, py - by), plot, &first, &second)
        }
        RoofPoint::Absent(first, second) => note_box(area, (w * 64 / 100, h * 77 / 100), first, second),
        RoofPoint::NotCollected(_) => Ok(()),
    }
}

/// The units basic measures against their own peaks, for the binding ceiling.
const CEILINGS: [(&str, &str, RGBColor); 4] = [
    ("SM (compute)", "sm_throughput_pct", COMPUTE),
    ("DRAM", "dram_throughput_pct", MEMORY),
    ("L2", "l2_throughput_pct", MEMORY),
    ("L1/TEX", "l1tex_throughput_pct", MEMORY),
];

/// The unit nearest its peak, from the throughputs basic collects: its name, share and
/// colour. `None` when none was collected.
pub(super) fn binding(k: &KernelSummary) -> Option<(&'static str, f64, RGBColor)> {
    CEILINGS
        .iter()
        .filter_map(|(name, field, color)| k.get(field).map(|v| (*name, v, *color)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// Instead of a roofline without a point: the binding ceiling, the unit nearest its peak
/// (from what basic collects), as one bar, and what the roofline needs.
fn binding_ceiling(area: &Area, k: &KernelSummary, missing: &str) -> Result<()> {
    let (w, h) = size(area);
    frame(area, "Binding ceiling", "the unit nearest its peak")?;
    match binding(k) {
        Some((name, share, color)) => {
            let rows = [Bar { label: name.to_string(), value: Some(share), color, text: pct(share) }];
            bars(area, &rows, 70, 170, 140, 100.0, 25.0, &|t| crate::units::pct_fixed(t, 0))?;
            let side = if color == COMPUTE { "compute" } else { "memory" };
            let line = format!("{name} runs at {} of its peak: the {side} side binds first", pct(share));
            text(area, &fit(area, &line, 16, (w - 40) as u32)?, (20, 230), 16, TEXT, HPos::Left)?;
            text(area, "(every unit: Speed of light, left)", (20, 256), 14, MUTED, HPos::Left)?;
        }
        None => text(area, "throughputs not collected", (w / 2, 150), 18, MUTED, HPos::Center)?,
    }
    let why = format!("No roofline: {missing} not collected.");
    note_box(area, (w / 2, h - 80), &why, ROOFLINE_ADVICE)
}

/// The roofline panel of a device without known ceilings: the point's numbers alone.
fn roofline_without_ceilings(area: &Area, point: RoofPoint) -> Result<()> {
    let (w, h) = size(area);
    frame(area, "Roofline (FP32, DRAM)", "")?;
    text(area, "device not in gpu_specs.yaml", (w / 2, h / 2 - 50), 20, MUTED, HPos::Center)?;
    text(area, "no ceilings to draw", (w / 2, h / 2 - 20), 16, MUTED, HPos::Center)?;
    match point {
        RoofPoint::Point { ai, tflops } => note_box(
            area,
            (w / 2, h / 2 + 40),
            &format!("arithmetic intensity {} FLOP/byte", sig(ai, 3)),
            &format!("achieved {} TFLOP/s", sig(tflops, 3)),
        ),
        RoofPoint::Absent(first, second) => note_box(area, (w / 2, h / 2 + 40), first, second),
        RoofPoint::NotCollected(_) => Ok(()),
    }
}

/// The plot's extent inside its panel, in panel pixels.
struct PlotPixels {
    left: i32,
    right: i32,
    bottom: i32,
}

/// The kernel's point at `(px, py)` (panel pixels) with its two lines of numbers,
/// centred under the point (over it near the bottom) and kept inside the plot.
fn mark_point(area: &Area, (px, py): (i32, i32), plot: PlotPixels, first: &str, second: &str) -> Result<()> {
    let tw = text_width(area, first, 15)?.max(text_width(area, second, 14)?) as i32;
    let left = (px - tw / 2).clamp(plot.left + 6, (plot.right - tw - 6).max(plot.left + 6));
    let low = py > plot.bottom - 70;
    let y1 = if low { py - 50 } else { py + 26 };
    fill(area, (left - 6, y1 - 13), (left + tw + 6, y1 + 34), WHITE)?;
    text(area, first, (left, y1), 15, TEXT, HPos::Left)?;
    text(area, second, (left, y1 + 21), 14, MUTED, HPos::Left)?;
    area.draw(&Circle::new((px, py), 7, POINT.filled()))?;
    area.draw(&Circle::new((px, py), 7, WHITE.stroke_width(1)))?;
    Ok(())
}
