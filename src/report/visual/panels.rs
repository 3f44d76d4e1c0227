//! The panels of the picture: header, speed-of-light bars, roofline, occupancy, stalls,
//! source lines, and the band between the two columns of a comparison. The roofline
//! panel, and the binding ceiling drawn in its place, are in `panels/roofline.rs`.

use super::*;

pub(super) mod roofline;

use roofline::roofline;

pub(super) fn draw_summary(
    root: &Area,
    input: &VisualInput,
    scales: &Scales,
    label: Option<&str>,
) -> Result<()> {
    let [head, sol, roof, occ, stall, hot] = summary_layout();
    let sub = |r: PanelRect| root.clone().shrink((r.x, r.y), (r.w, r.h));
    header(&sub(head), input, label)?;
    speed_of_light(&sub(sol), input.kernel)?;
    roofline(&sub(roof), input, scales)?;
    occupancy(&sub(occ), input.kernel)?;
    stalls(&sub(stall), input.kernel, scales)?;
    hotspots(&sub(hot), input.hotspots, input.source_collected)
}

fn header(area: &Area, input: &VisualInput, label: Option<&str>) -> Result<()> {
    let (w, h) = size(area);
    let k = input.kernel;
    let title = match label {
        Some(l) => format!("{l}: {}", input.title),
        None => input.title.clone(),
    };
    let title = fit(area, &title, 28, (w - 32) as u32)?;
    text(area, &title, (16, 24), 28, TEXT, HPos::Left)?;
    let mut x = 16;
    match input.verdict {
        Some(v) => {
            let name = v.classification.name();
            let chip_w = text_width(area, name, 18)? as i32 + 20;
            fill(area, (x, 48), (x + chip_w, 76), class_color(v.classification))?;
            text(area, name, (x + 10, 62), 18, WHITE, HPos::Left)?;
            x += chip_w + 12;
            let rule = match (&v.limiter, &v.rule) {
                (Some(l), _) => format!(" (cause {}, advice {})", l.id, l.advice_id),
                (None, Some(r)) => format!(" (rule {r})"),
                (None, None) => String::new(),
            };
            let s = format!("{} confidence{rule}", confidence(v.confidence));
            text(area, &s, (x, 62), 18, TEXT, HPos::Left)?;
            x += text_width(area, &s, 18)? as i32;
        }
        None => {
            let s = "verdict: not decided";
            text(area, s, (x, 62), 18, MUTED, HPos::Left)?;
            x += text_width(area, s, 18)? as i32;
        }
    }
    let launches = if k.launches == 1 { "1 launch".to_string() } else { format!("{} launches", k.launches) };
    let dur = match k.get("duration_ns") {
        Some(ns) => format!("   ·   duration {} (median)   ·   {launches}", duration(ns)),
        None => format!("   ·   duration {NOT_COLLECTED}   ·   {launches}"),
    };
    text(area, &dur, (x, 62), 18, TEXT, HPos::Left)?;
    if let Some(v) = input.verdict {
        let mut seen: Vec<&str> = Vec::new();
        let mut parts = Vec::new();
        // The cause's conditions when a limiter named one, else the class rule's.
        let deciding = |e: &&crate::analyze::rules::Evidence| {
            !e.is_supporting() && v.limiter.as_ref().is_none_or(|l| e.rule == l.id)
        };
        for e in v.evidence.iter().filter(deciding) {
            if seen.contains(&e.field.as_str()) {
                continue;
            }
            seen.push(&e.field);
            let unit = if e.unit.is_empty() { String::new() } else { format!(" {}", e.unit) };
            parts.push(format!("{} = {}{unit} ({})", e.field, format_value(e.value), e.threshold));
        }
        if !parts.is_empty() {
            let s = fit(area, &format!("Evidence: {}", parts.join(";  ")), 15, (w - 32) as u32)?;
            text(area, &s, (16, 90), 15, MUTED, HPos::Left)?;
        }
    }
    line(area, (0, h - 1), (w, h - 1), FRAME, 1)
}

/// One row of a horizontal bar chart: label, value (None = not collected), colour.
struct Bar {
    label: String,
    value: Option<f64>,
    color: RGBColor,
    text: String,
}

/// Horizontal bars between y = `top` and `bottom` (the axis' labels below it), labels in
/// the left `label_w` pixels, the axis from 0 to `max` with ticks every `step`.
#[allow(clippy::too_many_arguments)]
fn bars(
    area: &Area,
    rows: &[Bar],
    top: i32,
    bottom: i32,
    label_w: i32,
    max: f64,
    step: f64,
    tick: &dyn Fn(f64) -> String,
) -> Result<()> {
    let (w, _) = size(area);
    let (x0, x1) = (label_w, w - 84);
    let px = |v: f64| x0 + ((v / max).clamp(0.0, 1.0) * (x1 - x0) as f64).round() as i32;
    for i in 0..=((max / step).round() as usize).min(10) {
        let t = i as f64 * step;
        let x = px(t);
        line(area, (x, top), (x, bottom), GRID, 1)?;
        text(area, &tick(t), (x, bottom + 14), 14, MUTED, HPos::Center)?;
    }
    line(area, (x0, top), (x0, bottom), MUTED, 1)?;
    let row_h = (bottom - top) as f64 / rows.len().max(1) as f64;
    let thick = (row_h * 0.56).min(34.0) as i32;
    for (i, r) in rows.iter().enumerate() {
        let yc = top + (row_h * (i as f64 + 0.5)).round() as i32;
        let label = fit(area, &r.label, 16, (label_w - 16) as u32)?;
        text(area, &label, (label_w - 10, yc), 16, TEXT, HPos::Right)?;
        match r.value {
            Some(v) => {
                let end = px(v);
                if end > x0 {
                    fill(area, (x0 + 1, yc - thick / 2), (end, yc + thick / 2), r.color)?;
                }
                let tw = text_width(area, &r.text, 16)? as i32;
                if end + 8 + tw <= w - 8 {
                    text(area, &r.text, (end + 8, yc), 16, TEXT, HPos::Left)?;
                } else {
                    text(area, &r.text, (end - 8, yc), 16, WHITE, HPos::Right)?;
                }
            }
            None => text(area, NOT_COLLECTED, (x0 + 10, yc), 16, MUTED, HPos::Left)?,
        }
    }
    Ok(())
}

fn pct_bar(k: &KernelSummary, label: &str, field: &str, color: RGBColor) -> Bar {
    let value = k.get(field);
    Bar { label: label.into(), value, color, text: value.map(pct).unwrap_or_default() }
}

fn speed_of_light(area: &Area, k: &KernelSummary) -> Result<()> {
    frame(area, "Speed of light", "% of peak throughput")?;
    let rows = [
        pct_bar(k, "SM (compute)", "sm_throughput_pct", COMPUTE),
        pct_bar(k, "Memory", "memory_throughput_pct", MEMORY),
        pct_bar(k, "DRAM", "dram_throughput_pct", MEMORY),
        pct_bar(k, "L1/TEX", "l1tex_throughput_pct", MEMORY),
        pct_bar(k, "L2", "l2_throughput_pct", MEMORY),
    ];
    let (_, h) = size(area);
    bars(area, &rows, 56, h - 64, 140, 100.0, 25.0, &|t| crate::units::pct_fixed(t, 0))?;
    fill(area, (140, h - 26), (154, h - 14), COMPUTE)?;
    text(area, "compute", (160, h - 20), 14, MUTED, HPos::Left)?;
    fill(area, (240, h - 26), (254, h - 14), MEMORY)?;
    text(area, "memory units", (260, h - 20), 14, MUTED, HPos::Left)
}

fn occupancy(area: &Area, k: &KernelSummary) -> Result<()> {
    frame(area, "Occupancy", "% of the SM's warp slots")?;
    let rows = [
        pct_bar(k, "achieved", "achieved_occupancy_pct", ACHIEVED),
        pct_bar(k, "theoretical", "theoretical_occupancy_pct", THEORETICAL),
    ];
    bars(area, &rows, 52, 164, 120, 100.0, 25.0, &|t| crate::units::pct_fixed(t, 0))?;
    let (w, _) = size(area);
    let top = 226;
    text(area, "Blocks per SM allowed by", (20, top), 16, TEXT, HPos::Left)?;
    let limits = [
        ("registers", k.get("occupancy_limit_registers")),
        ("shared memory", k.get("occupancy_limit_shared_mem")),
        ("warps", k.get("occupancy_limit_warps")),
        ("blocks", k.get("occupancy_limit_blocks")),
    ];
    let min = limits.iter().filter_map(|(_, v)| *v).fold(f64::INFINITY, f64::min);
    // At full theoretical occupancy no limit holds the SM back: none is the limiter.
    let full = k.get("theoretical_occupancy_pct").is_some_and(|t| t >= 99.95);
    for (i, (name, v)) in limits.iter().enumerate() {
        let y = top + 32 + 30 * i as i32;
        let limiter = !full && v.is_some_and(|v| v == min);
        let color = if limiter { LIMITER } else { TEXT };
        text(area, name, (32, y), 16, color, HPos::Left)?;
        let value = match v {
            Some(v) => format_value(*v),
            None => NOT_COLLECTED.into(),
        };
        text(area, &value, (180, y), 16, if v.is_some() { color } else { MUTED }, HPos::Right)?;
        if limiter {
            text(area, "◀ limiter", (190, y), 16, LIMITER, HPos::Left)?;
        }
    }
    let x = w / 2 + 14;
    text(area, "Launch", (x, top), 16, TEXT, HPos::Left)?;
    let launch = [
        ("threads/block", k.get("block_size").map(format_value)),
        ("grid (blocks)", k.get("grid_size").map(grouped)),
        ("regs/thread", k.get("registers_per_thread").map(format_value)),
        ("shared/block", k.get("shared_mem_per_block_kib").map(|v| format!("{} KiB", format_value(v)))),
    ];
    for (i, (name, v)) in launch.iter().enumerate() {
        let y = top + 32 + 30 * i as i32;
        text(area, name, (x + 12, y), 16, TEXT, HPos::Left)?;
        match v {
            Some(v) => text(area, v, (w - 16, y), 16, TEXT, HPos::Right)?,
            None => text(area, NOT_COLLECTED, (w - 16, y), 16, MUTED, HPos::Right)?,
        }
    }
    let (_, h) = size(area);
    let note =
        match limits.iter().filter(|(_, v)| v.is_some_and(|v| v == min)).map(|(n, _)| *n).collect::<Vec<_>>()
        {
            l if l.is_empty() => "the occupancy limits were not collected".to_string(),
            _ if full => {
                format!("No limiter: every warp slot can be used ({} block(s) per SM)", format_value(min))
            }
            l => format!("Limiter: {} ({} block(s) per SM)", l.join(", "), format_value(min)),
        };
    let color = if min.is_finite() && !full { LIMITER } else { MUTED };
    text(area, &note, (20, h - 26), 16, color, HPos::Left)
}

fn stalls(area: &Area, k: &KernelSummary, scales: &Scales) -> Result<()> {
    frame(area, "Top stall reasons", "warps stalled per issued instruction")?;
    let (w, h) = size(area);
    if k.top_stalls.is_empty() {
        return text(area, "stall reasons not collected", (w / 2, h / 2), 18, MUTED, HPos::Center);
    }
    let rows: Vec<Bar> = k
        .top_stalls
        .iter()
        .take(5)
        .map(|s| Bar {
            label: s.reason.clone(),
            value: Some(s.warps_per_issue),
            color: STALL,
            text: ratio(s.warps_per_issue),
        })
        .collect();
    let (max, step) = nice_axis(scales.stall_max);
    let bottom = 56 + ((h - 64 - 56) * rows.len() as i32) / 5;
    bars(area, &rows, 56, bottom, 180, max, step, &tick)?;
    let total: f64 = k.top_stalls.iter().map(|s| s.warps_per_issue).sum();
    let note = format!(
        "{} of {} reasons shown; all reasons sum to {}",
        rows.len(),
        k.top_stalls.len(),
        ratio(total)
    );
    text(area, &note, (20, h - 22), 14, MUTED, HPos::Left)
}

fn hotspots(area: &Area, hot: &[Hotspot], source_collected: bool) -> Result<()> {
    let (w, h) = size(area);
    let mut rows: Vec<&Hotspot> = hot.iter().filter(|r| r.kind == SourceKind::Cuda).take(5).collect();
    let sass = rows.is_empty() && hot.iter().any(|r| r.kind == SourceKind::Sass);
    if sass {
        // No line info: the hottest instructions stand in for lines.
        rows = hot.iter().filter(|r| r.kind == SourceKind::Sass).take(5).collect();
        frame(area, "Top SASS instructions (no line info)", "share of the kernel's warp samples")?;
    } else {
        frame(area, "Top source lines", "share of the kernel's warp samples")?;
    }
    if rows.is_empty() {
        let (first, second) = if source_collected {
            ("no source lines for this kernel", "the source page holds no samples of it")
        } else {
            ("source lines not collected", HOT_LINES_ADVICE)
        };
        text(area, first, (w / 2, h / 2 - 14), 18, MUTED, HPos::Center)?;
        return text(area, second, (w / 2, h / 2 + 14), 16, MUTED, HPos::Center);
    }
    let (loc_x, bar_x, bar_w, src_x) = (46, 250, 140, 470);
    let head_y = 60;
    text(area, "#", (20, head_y), 14, MUTED, HPos::Left)?;
    text(area, if sass { "address" } else { "file:line" }, (loc_x, head_y), 14, MUTED, HPos::Left)?;
    text(area, "share", (bar_x, head_y), 14, MUTED, HPos::Left)?;
    text(area, "source  (below: stall samples, largest first)", (src_x, head_y), 14, MUTED, HPos::Left)?;
    line(area, (14, head_y + 14), (w - 14, head_y + 14), FRAME, 1)?;
    let row_h = (h - head_y - 30) / 5;
    for (i, r) in rows.iter().enumerate() {
        let y = head_y + 22 + row_h * i as i32;
        let yc = y + row_h / 2 - 10;
        text(area, &(i + 1).to_string(), (20, yc), 16, TEXT, HPos::Left)?;
        let file = r.file.rsplit(['/', '\\']).next().unwrap_or(&r.file);
        let at = if r.kind == SourceKind::Sass { r.address.clone() } else { format!("{file}:{}", r.line) };
        let loc = fit(area, &at, 16, (bar_x - loc_x - 12) as u32)?;
        text(area, &loc, (loc_x, yc), 16, TEXT, HPos::Left)?;
        let share = r.pct_of_kernel.clamp(0.0, 100.0);
        fill(area, (bar_x, yc - 9), (bar_x + bar_w, yc + 9), GRID)?;
        if share > 0.0 {
            fill(
                area,
                (bar_x, yc - 9),
                (bar_x + (bar_w as f64 * share / 100.0).round().max(1.0) as i32, yc + 9),
                HOT,
            )?;
        }
        text(area, &pct(r.pct_of_kernel), (bar_x + bar_w + 8, yc), 16, TEXT, HPos::Left)?;
        let src = if r.source.is_empty() { "(source text not available)" } else { r.source.as_str() };
        let src = fit(area, src, 16, (w - src_x - 16) as u32)?;
        text(area, &src, (src_x, yc), 16, if r.source.is_empty() { MUTED } else { TEXT }, HPos::Left)?;
        if !r.top_stalls.is_empty() {
            let stalls = fit(area, &r.top_stalls, 14, (w - src_x - 16) as u32)?;
            text(area, &stalls, (src_x, yc + 22), 14, MUTED, HPos::Left)?;
        }
        if i + 1 < rows.len() {
            line(area, (14, y + row_h - 2), (w - 14, y + row_h - 2), GRID, 1)?;
        }
    }
    Ok(())
}

pub(super) fn comparison_band(area: &Area, before: &VisualInput, after: &VisualInput) -> Result<()> {
    let (w, h) = size(area);
    let names = if before.kernel.kernel == after.kernel.kernel {
        before.kernel.kernel.clone()
    } else {
        format!("{} → {}", before.kernel.kernel, after.kernel.kernel)
    };
    let title = fit(area, &format!("Before → after: {names}"), 26, (w / 2 - 32) as u32)?;
    text(area, &title, (16, 24), 26, TEXT, HPos::Left)?;
    let (s, color) = match (before.kernel.get("duration_ns"), after.kernel.get("duration_ns")) {
        (Some(b), Some(a)) if b > 0.0 && a > 0.0 => {
            let delta = a - b;
            let sign = if delta < 0.0 { "−" } else { "+" };
            let speed = if a < b {
                format!("{}× as fast", sig(b / a, 3))
            } else {
                format!("{}× as slow", sig(a / b, 3))
            };
            (
                format!(
                    "Duration {} → {}: {sign}{} ({sign}{}), {speed}",
                    duration(b),
                    duration(a),
                    duration(delta.abs()),
                    pct(100.0 * delta.abs() / b),
                ),
                if a < b {
                    FASTER
                } else if a > b {
                    SLOWER
                } else {
                    TEXT
                },
            )
        }
        (b, a) => (
            format!(
                "Duration {} → {}",
                b.map(duration).unwrap_or_else(|| NOT_COLLECTED.into()),
                a.map(duration).unwrap_or_else(|| NOT_COLLECTED.into())
            ),
            MUTED,
        ),
    };
    text(area, &s, (16, 60), 20, color, HPos::Left)?;
    text(area, "Both columns share their axes' scales.", (w - 16, 60), 15, MUTED, HPos::Right)?;
    line(area, (0, h - 1), (w, h - 1), FRAME, 2)
}
