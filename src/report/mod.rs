//! Every rendering: an analysis into a profile directory (the derived data files,
//! `final_report.md` ([`markdown`]), the PNG summary ([`visual`]), `report.html`
//! ([`html`])), the profiles index ([`index`], with its `index.html`), a before/after comparison's pages and the gate's step summary
//! ([`comparison`]), and an A/B check's pages and step summary ([`ab`]). Nothing here
//! decides anything: the numbers and verdicts come from [`crate::analyze`] and
//! `crate::compare`, and renderers take them as plain values, never a driver's options,
//! so that drivers import this module and it imports none of them.
//!
//! Every file is written to a temporary name and renamed into place, so a failure never
//! leaves a half-written output; inputs are never changed.

pub mod ab;
pub mod bisect;
pub mod breakdown;
pub mod comparison;
pub mod html;
pub mod index;
pub mod markdown;
pub mod md;
pub mod visual;

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::analyze::hotspots::{self, Hotspot};
use crate::analyze::rules::BottleneckDecision;
use crate::analyze::summary::MetricsSummary;
use crate::analyze::{self, Analysis, AnalyzeOptions};
use crate::profile::fs::{write_atomic, write_atomic_bytes, write_atomic_with};
use crate::profile::ProfileDir;

/// Writes `analysis` into `dir`: `metrics_raw.csv`, `metrics_extracted.jsonl`,
/// `metrics_summary.json`, `bottleneck_decision.json`, `source_hotspots.csv` (with a source
/// page), the picture `visual/profile_summary.png` (of the first kernel),
/// `final_report.md`, `breakdown.md` and `visual/census.png` where a census ran, and, from those files, `report.html`. A picture that cannot be drawn or written does not fail the report:
/// it goes into [`Analysis::warnings`] and the limitations, and no partial or stale
/// picture is left.
pub fn write(dir: &ProfileDir, analysis: &mut Analysis, template: &str) -> Result<()> {
    // Nothing is written through a linked subfolder: checked before the first file.
    for sub in [dir.details_dir(), dir.visual_dir(), dir.comparison_dir()] {
        crate::profile::fs::refuse_linked_folder(&sub)?;
    }
    write_atomic_with(&dir.metrics_raw_path(), |out| {
        analyze::exports::write_metrics_raw(&analysis.raw_inputs, analysis.kernel_filter.as_ref(), out)
    })?;
    write_atomic_with(&dir.metrics_extracted_path(), |out| {
        analyze::exports::write_extracted(&analysis.raw_inputs, analysis.kernel_filter.as_ref(), out)
    })?;
    write_atomic(&dir.metrics_summary_path(), &(serde_json::to_string_pretty(&analysis.summary)? + "\n"))?;
    write_atomic(
        &dir.bottleneck_decision_path(),
        &(serde_json::to_string_pretty(&analysis.decision)? + "\n"),
    )?;
    if analysis.provenance.source_collected {
        write_atomic(&dir.source_hotspots_path(), &hotspots::to_csv(&analysis.hotspots)?)?;
    }
    let source = analysis.provenance.source_collected;
    if let Err(e) =
        write_visual_summary(dir, &analysis.summary, &analysis.decision, &analysis.hotspots, source)
    {
        // A picture of the previous analysis would disagree with the new numbers.
        std::fs::remove_file(dir.visual_summary_path()).ok();
        let note = format!("{} was not written: {e:#}", dir.relative(&dir.visual_summary_path()));
        analysis.limitations.push(format!("{note}."));
        analysis.warnings.push(note);
    }
    write_atomic(&dir.final_report_path(), &markdown::render(template, analysis))?;
    if let Some(note) = breakdown::write(dir)? {
        analysis.warnings.push(note);
    }
    html::write_profile(dir)
}

/// The report template: `--template FILE`, or the built-in one.
pub fn load_template(opts: &AnalyzeOptions) -> Result<String> {
    match &opts.template {
        Some(p) => crate::profile::import::read(p),
        None => Ok(markdown::BUILTIN_TEMPLATE.to_string()),
    }
}

/// Analyses `dir` again and rewrites everything derived from its pages (`cargo kprof
/// report`, and after each collection).
pub fn refresh(dir: &ProfileDir, opts: &AnalyzeOptions) -> Result<Analysis> {
    let template = load_template(opts)?;
    let mut analysis = analyze::analyze(dir, opts)?;
    write(dir, &mut analysis, &template)?;
    Ok(analysis)
}

/// `cargo kprof import`: a new profile directory from ncu CSV exports, analysed.
pub fn import(
    raw: &[PathBuf],
    source: Option<&Path>,
    details: Option<&Path>,
    kernel: Option<&crate::model::filter::KernelHint>,
    output_dir: &Path,
    opts: &AnalyzeOptions,
) -> Result<(ProfileDir, Analysis)> {
    let max_mb = opts.max_input_mb.unwrap_or(crate::profile::fs::DEFAULT_MAX_INPUT_MB);
    // Built beside the output directory and renamed there when complete: a failure
    // (dropping `staged`) leaves nothing behind.
    let read = &crate::analyze::summary::is_read_metric;
    let staged = crate::profile::import::create(raw, source, details, kernel, output_dir, max_mb, read)?;
    let analysis = refresh(staged.dir(), opts)?;
    let dir = staged.finish()?;
    Ok((dir, analysis))
}

/// Draws `visual/profile_summary.png` for the first kernel of `summary` and writes it
/// atomically.
fn write_visual_summary(
    dir: &ProfileDir,
    summary: &MetricsSummary,
    decision: &BottleneckDecision,
    hot: &[Hotspot],
    source_collected: bool,
) -> Result<()> {
    let Some(kernel) = summary.kernels.first() else { return Ok(()) };
    let device = summary.device.as_deref();
    let of_kernel = |h: &&Hotspot| {
        h.function == kernel.kernel
            || h.function.strip_prefix(kernel.kernel.as_str()).is_some_and(|r| r.starts_with('('))
    };
    let mut lines: Vec<Hotspot> = hot.iter().filter(of_kernel).cloned().collect();
    if lines.is_empty() && summary.kernels.len() == 1 {
        // One kernel: the source page's function name may be spelled differently.
        lines = hot.to_vec();
    }
    let input = visual::VisualInput {
        title: match device {
            Some(d) => format!("{} — {d}", kernel.kernel),
            None => format!("{} — device not named in the inputs", kernel.kernel),
        },
        kernel,
        verdict: decision.kernels.iter().find(|v| v.kernel == kernel.kernel),
        hotspots: &lines,
        source_collected,
        device: device.and_then(visual::ceilings_for),
    };
    // The picture is optional: a bug in drawing must not cost the analysis either.
    let png = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| visual::profile_summary_png(&input)))
        .unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(anyhow::anyhow!("drawing it panicked: {what}"))
        })?;
    dir.ensure_dir(&dir.visual_dir())?;
    write_atomic_bytes(&dir.visual_summary_path(), &png)
}
