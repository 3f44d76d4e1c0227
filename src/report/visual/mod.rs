//! `visual/profile_summary.png`: one profile's numbers as one picture, and two profiles
//! side by side (before and after a change).
//!
//! Drawn with plotters on an RGB buffer and encoded with `png`. Text uses DejaVu Sans,
//! compiled in from `assets/fonts/`, so drawing needs no system font library and looks
//! the same everywhere. Every number comes from the metrics summary, the verdict and the
//! hotspots the analysis wrote; a field that was not collected reads "not collected",
//! never 0.
//!
//! The picture ([`summary_layout`]): a header (title, verdict, duration, deciding
//! evidence), then speed-of-light bars, an FP32 DRAM roofline (or, when the FLOP counts or
//! DRAM bytes were not collected, the binding ceiling: the unit nearest its peak), occupancy
//! with its limiter, the top stall reasons and the top source lines. Where a census ran,
//! `visual/census.png` ([`census_png`]) draws its breakdown.

mod census;
mod panels;

pub use census::{census_height, census_png, CENSUS_BARS, CENSUS_WIDTH};

use std::sync::OnceLock;

use panels::roofline::{roof_point, RoofPoint};
use panels::{comparison_band, draw_summary};

use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::analyze::hotspots::{Hotspot, SourceKind};
use crate::analyze::rules::{Classification, Confidence, KernelVerdict};
use crate::analyze::summary::KernelSummary;
use crate::units::{
    duration, grouped, log_tick, pct, ratio, sig, tick, value as format_value, NOT_COLLECTED,
};

/// Device ceilings for the roofline.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceCeilings {
    /// The device's name in gpu_specs.yaml.
    pub name: String,
    /// Peak FP32 rate, FLOP/s.
    pub peak_fp32_flops_per_s: f64,
    /// Peak DRAM bandwidth, bytes/s.
    pub peak_dram_bytes_per_s: f64,
}

/// One profile as the picture needs it.
#[derive(Debug, Clone)]
pub struct VisualInput<'a> {
    /// The header's title, e.g. `hgemm_naive — NVIDIA H200`.
    pub title: String,
    /// The kernel's summary.
    pub kernel: &'a KernelSummary,
    /// Its verdict, if decided.
    pub verdict: Option<&'a KernelVerdict>,
    /// Source hotspots (`cuda` rows are shown, hottest first as given; SASS rows when the
    /// kernel has no line info).
    pub hotspots: &'a [Hotspot],
    /// Whether a source page was collected: with none, the hot-lines panel says how to
    /// collect one rather than how to build with line info.
    pub source_collected: bool,
    /// The device's ceilings, when the device is in gpu_specs.yaml.
    pub device: Option<DeviceCeilings>,
}

/// The caption under the binding ceiling, where the roofline cannot be drawn: what
/// collects what it needs.
pub const ROOFLINE_ADVICE: &str = "The roofline stage counts them: --stages basic,source,roofline";

/// The hot-lines panel's words when no source page was collected.
pub const HOT_LINES_ADVICE: &str = "the source stage maps samples to lines: --stages auto collects it";

/// Width of the summary picture, pixels.
pub const SUMMARY_WIDTH: u32 = 1600;
/// Height of the summary picture, pixels.
pub const SUMMARY_HEIGHT: u32 = 1000;
/// Height of the band across the top of the comparison picture, above its two columns.
pub const COMPARISON_BAND: u32 = 80;

/// Where one panel lies in a picture, pixels from the top left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PanelRect {
    /// What the panel shows.
    pub name: &'static str,
    /// Left edge.
    pub x: u32,
    /// Top edge.
    pub y: u32,
    /// Width.
    pub w: u32,
    /// Height.
    pub h: u32,
}

/// The panels of the summary picture ([`SUMMARY_WIDTH`] x [`SUMMARY_HEIGHT`]).
pub fn summary_layout() -> [PanelRect; 6] {
    let p = |name, x, y, w, h| PanelRect { name, x, y, w, h };
    [
        p("header", 0, 0, SUMMARY_WIDTH, 104),
        p("speed of light", 12, 112, 518, 444),
        p("roofline", 542, 112, 518, 444),
        p("occupancy", 1072, 112, 516, 444),
        p("stall reasons", 12, 568, 518, 420),
        p("source hotspots", 542, 568, 1046, 420),
    ]
}

/// The panels of the comparison picture: its top band (`band`), then the summary panels
/// of the `before` column (left) and the `after` column (right).
pub fn comparison_layout() -> Vec<(&'static str, PanelRect)> {
    let band = PanelRect { name: "comparison header", x: 0, y: 0, w: 2 * SUMMARY_WIDTH, h: COMPARISON_BAND };
    let mut out = vec![("band", band)];
    for (side, dx) in [("before", 0), ("after", SUMMARY_WIDTH)] {
        out.extend(
            summary_layout()
                .into_iter()
                .map(|r| (side, PanelRect { x: r.x + dx, y: r.y + COMPARISON_BAND, ..r })),
        );
    }
    out
}

/// Builds the DeviceCeilings from references' gpu_specs for a device name, if known (and
/// its FP32 peak is).
pub fn ceilings_for(device: &str) -> Option<DeviceCeilings> {
    let spec = crate::references::lookup_gpu(device, None)?;
    Some(DeviceCeilings {
        name: spec.name.clone(),
        peak_fp32_flops_per_s: spec.peak_tflops.fp32? * 1e12,
        peak_dram_bytes_per_s: spec.bandwidth_bytes_per_second(),
    })
}

/// PNG bytes of one profile's summary.
pub fn profile_summary_png(input: &VisualInput) -> Result<Vec<u8>> {
    let scales = Scales::of(&[input]);
    render(SUMMARY_WIDTH, SUMMARY_HEIGHT, |root| draw_summary(root, input, &scales, None))
}

/// PNG bytes of before (left) and after (right), side by side, same scales where they share an axis.
pub fn comparison_png(before: &VisualInput, after: &VisualInput) -> Result<Vec<u8>> {
    let scales = Scales::of(&[before, after]);
    render(2 * SUMMARY_WIDTH, SUMMARY_HEIGHT + COMPARISON_BAND, |root| {
        let band = root.clone().shrink((0, 0), (2 * SUMMARY_WIDTH, COMPARISON_BAND));
        comparison_band(&band, before, after)?;
        for (input, x, label) in [(before, 0, "Before"), (after, SUMMARY_WIDTH, "After")] {
            let column = root.clone().shrink((x, COMPARISON_BAND), (SUMMARY_WIDTH, SUMMARY_HEIGHT));
            draw_summary(&column, input, &scales, Some(label))?;
        }
        let x = SUMMARY_WIDTH as i32;
        line(root, (x, COMPARISON_BAND as i32), (x, (SUMMARY_HEIGHT + COMPARISON_BAND) as i32), FRAME, 2)
    })
}

// ---------------------------------------------------------------------------------------
// Drawing basics

pub(super) type Area<'b> = DrawingArea<BitMapBackend<'b>, Shift>;

/// The family the bundled font is registered under (plotters' default family name too).
const FONT: &str = "sans-serif";
static FONT_BYTES: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

pub(super) const TEXT: RGBColor = RGBColor(33, 37, 41);
pub(super) const MUTED: RGBColor = RGBColor(108, 117, 125);
pub(super) const FRAME: RGBColor = RGBColor(206, 212, 218);
pub(super) const GRID: RGBColor = RGBColor(228, 231, 235);
pub(super) const COMPUTE: RGBColor = RGBColor(230, 126, 34);
pub(super) const MEMORY: RGBColor = RGBColor(52, 116, 196);
pub(super) const ACHIEVED: RGBColor = RGBColor(46, 150, 70);
pub(super) const THEORETICAL: RGBColor = RGBColor(150, 200, 160);
pub(super) const STALL: RGBColor = RGBColor(192, 57, 43);
pub(super) const HOT: RGBColor = RGBColor(142, 68, 173);
pub(super) const POINT: RGBColor = RGBColor(214, 39, 40);
pub(super) const LIMITER: RGBColor = RGBColor(192, 57, 43);
pub(super) const FASTER: RGBColor = RGBColor(30, 130, 60);
pub(super) const SLOWER: RGBColor = RGBColor(192, 57, 43);

/// Registers the bundled font with plotters, once.
pub(super) fn register_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED
        .get_or_init(|| plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES).is_ok());
    if ok {
        Ok(())
    } else {
        Err(anyhow!("the bundled font (assets/fonts/DejaVuSans.ttf) does not parse"))
    }
}

/// Draws on a white `w` x `h` RGB buffer and encodes it as PNG.
pub(super) fn render(w: u32, h: u32, draw: impl FnOnce(&Area) -> Result<()>) -> Result<Vec<u8>> {
    register_font()?;
    let mut buf = vec![255u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
        root.fill(&WHITE)?;
        draw(&root)?;
        root.present()?;
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(&buf)?;
    writer.finish()?;
    Ok(out)
}

pub(super) fn style(size: u32, color: RGBColor, h: HPos) -> TextStyle<'static> {
    TextStyle {
        font: (FONT, size as f64).into_font(),
        color: color.to_backend_color(),
        pos: Pos::new(h, VPos::Top),
    }
}

/// Draws `s` with its capitals centred on `y`, starting at (Left), centred on (Center) or
/// ending at (Right) `x`. The bundled font puts the baseline half a size below the top.
pub(super) fn text(
    area: &Area,
    s: &str,
    (x, y): (i32, i32),
    size: u32,
    color: RGBColor,
    h: HPos,
) -> Result<()> {
    let top = y - (size as f64 * 0.14).round() as i32;
    area.draw_text(s, &style(size, color, h), (x, top))?;
    Ok(())
}

pub(super) fn text_width(area: &Area, s: &str, size: u32) -> Result<u32> {
    Ok(area.estimate_text_size(s, &style(size, TEXT, HPos::Left))?.0)
}

/// `s`, cut with an ellipsis to fit `max_w` pixels.
pub(super) fn fit(area: &Area, s: &str, size: u32, max_w: u32) -> Result<String> {
    if text_width(area, s, size)? <= max_w {
        return Ok(s.to_string());
    }
    let chars: Vec<char> = s.chars().collect();
    let (mut lo, mut hi) = (0, chars.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let candidate: String = chars[..mid].iter().collect::<String>().trim_end().to_string() + "…";
        if text_width(area, &candidate, size)? <= max_w {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Ok(chars[..lo].iter().collect::<String>().trim_end().to_string() + "…")
}

pub(super) fn fill(area: &Area, (x0, y0): (i32, i32), (x1, y1): (i32, i32), color: RGBColor) -> Result<()> {
    area.draw(&Rectangle::new([(x0, y0), (x1, y1)], color.filled()))?;
    Ok(())
}

pub(super) fn line(area: &Area, from: (i32, i32), to: (i32, i32), color: RGBColor, width: u32) -> Result<()> {
    area.draw(&PathElement::new(vec![from, to], color.stroke_width(width)))?;
    Ok(())
}

pub(super) fn size(area: &Area) -> (i32, i32) {
    let (w, h) = area.dim_in_pixel();
    (w as i32, h as i32)
}

/// A panel's frame and title; the content starts below y = 44.
pub(super) fn frame(area: &Area, title: &str, note: &str) -> Result<()> {
    let (w, h) = size(area);
    area.draw(&Rectangle::new([(0, 0), (w - 1, h - 1)], FRAME.stroke_width(1)))?;
    text(area, title, (14, 22), 20, TEXT, HPos::Left)?;
    if !note.is_empty() {
        let title_w = text_width(area, title, 20)? as i32;
        let note = fit(area, note, 14, (w - title_w - 44).max(0) as u32)?;
        text(area, &note, (w - 14, 23), 14, MUTED, HPos::Right)?;
    }
    Ok(())
}

pub(super) fn confidence(c: Confidence) -> &'static str {
    c.name()
}

pub(super) fn class_color(c: Classification) -> RGBColor {
    match c {
        Classification::MemoryBound => MEMORY,
        Classification::ComputeBound => COMPUTE,
        Classification::LatencyBound => RGBColor(142, 68, 173),
        Classification::OccupancyLimited => ACHIEVED,
        Classification::Balanced => RGBColor(23, 162, 184),
        Classification::Unknown => MUTED,
    }
}

// ---------------------------------------------------------------------------------------
// Scales shared by the columns of a comparison

/// Axis ranges that both columns of a comparison use.
pub(super) struct Scales {
    /// Roofline x (FLOP per byte) and y (TFLOP/s) ranges, when any input has a device.
    roof: Option<((f64, f64), (f64, f64))>,
    /// The stall axis' end, warps per issue.
    stall_max: f64,
}

pub(super) fn floor_pow10(v: f64) -> f64 {
    10f64.powf(v.log10().floor())
}

pub(super) fn ceil_pow10(v: f64) -> f64 {
    10f64.powf(v.log10().ceil())
}

impl Scales {
    fn of(inputs: &[&VisualInput]) -> Scales {
        let mut x = (f64::INFINITY, 0f64);
        let mut y = (f64::INFINITY, 0f64);
        let mut any_device = false;
        for i in inputs {
            if let Some(d) = &i.device {
                any_device = true;
                let peak = d.peak_fp32_flops_per_s / 1e12;
                let ridge = d.peak_fp32_flops_per_s / d.peak_dram_bytes_per_s;
                x = (x.0.min(1e-2).min(ridge / 1e3), x.1.max(1e3).max(ridge * 1e2));
                y = (y.0.min(peak / 1e3), y.1.max(peak * 3.0));
            }
            if let RoofPoint::Point { ai, tflops } = roof_point(i.kernel) {
                x = (x.0.min(ai / 3.0), x.1.max(ai * 3.0));
                y = (y.0.min(tflops / 3.0), y.1.max(tflops * 3.0));
            }
        }
        let roof =
            any_device.then(|| ((floor_pow10(x.0), ceil_pow10(x.1)), (floor_pow10(y.0), ceil_pow10(y.1))));
        let stall_max = inputs
            .iter()
            .flat_map(|i| i.kernel.top_stalls.iter().take(5).map(|s| s.warps_per_issue))
            .fold(0f64, f64::max);
        Scales { roof, stall_max }
    }
}

/// A "nice" axis for values up to `max`: its end and its step, at most 5 steps of 1, 2,
/// 2.5 or 5 x 10^k.
pub(super) fn nice_axis(max: f64) -> (f64, f64) {
    if max <= 0.0 || !max.is_finite() {
        return (1.0, 0.25);
    }
    let raw = max / 4.0;
    let base = floor_pow10(raw);
    let step =
        [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * base).find(|s| max / s <= 5.0).unwrap_or(10.0 * base);
    ((max / step).ceil() * step, step)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_are_nice() {
        assert_eq!(nice_axis(298.2), (300.0, 100.0));
        assert_eq!(nice_axis(13.38), (15.0, 5.0));
    }

    #[test]
    fn h200_ceilings_come_from_gpu_specs() {
        let c = ceilings_for("NVIDIA H200").expect("the H200 is in gpu_specs.yaml");
        let spec = crate::references::lookup_gpu("NVIDIA H200", None).unwrap();
        assert_eq!(c.peak_fp32_flops_per_s, spec.peak_tflops.fp32.unwrap() * 1e12);
        assert_eq!(c.peak_dram_bytes_per_s, spec.memory.bandwidth_gbps * 1e9);
        assert!(ceilings_for("NVIDIA GeForce 256").is_none());
    }

    #[test]
    fn layout_panels_lie_inside_the_picture_and_do_not_overlap() {
        let l = summary_layout();
        for (i, a) in l.iter().enumerate() {
            assert!(a.x + a.w <= SUMMARY_WIDTH && a.y + a.h <= SUMMARY_HEIGHT, "{a:?}");
            for b in &l[i + 1..] {
                let apart = a.x + a.w <= b.x || b.x + b.w <= a.x || a.y + a.h <= b.y || b.y + b.h <= a.y;
                assert!(apart, "{a:?} overlaps {b:?}");
            }
        }
        assert_eq!(comparison_layout().len(), 13);
    }
}
