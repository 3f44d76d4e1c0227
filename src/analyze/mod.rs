//! Turning ncu CSV pages on disk into a profile directory's analysis outputs.
//!
//! Used by `cargo kprof import` (CSV exports made anywhere, by any ncu invocation) and
//! `cargo kprof report DIR` (re-render an existing directory). Inputs are never changed:
//! import copies them into `details/`, and every derived file is written to a temporary
//! name and renamed into place, so a failure never leaves a half-written output.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::json;

pub mod hotspots;
pub mod rules;
pub mod summary;

use crate::error::{ExitCode, Failure};
use crate::ncu::parse::{parse_number, scan_log, RawPage, SourcePage};
use crate::profile::dir::ProfileDir;
use crate::profile::fs::{write_atomic, write_atomic_bytes};
use crate::report::markdown::{self as report, ReportContext};
use hotspots::Hotspot;
use rules::{BottleneckDecision, Rules};
use summary::MetricsSummary;

/// What an import recorded about itself, so `report` can redo the same analysis.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ImportRecord {
    /// The files as given, with their copies under `details/`.
    pub files: Vec<ImportedFile>,
    /// The `--kernel` hint, if any.
    pub kernel: Option<String>,
}

/// One imported file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedFile {
    /// `raw`, `source` or `details`.
    pub page: String,
    /// The path given on the command line.
    pub original: PathBuf,
    /// The copy, relative to the profile directory.
    pub copy: PathBuf,
}

/// The file an import writes its record to, under `details/`.
pub const IMPORT_RECORD: &str = "import.json";

/// Options shared by import and report.
#[derive(Debug, Clone, Default)]
pub struct AnalyzeOptions {
    /// `--rules FILE`.
    pub rules: Option<PathBuf>,
    /// `--template FILE`.
    pub template: Option<PathBuf>,
    /// The workspace root, to read source lines ncu could not open.
    pub source_root: Option<PathBuf>,
}

fn read(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("could not read {}", path.display()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn load_rules(opts: &AnalyzeOptions) -> Result<Rules> {
    match &opts.rules {
        Some(p) => Ok(Rules::parse(&read(p)?, &p.display().to_string())?),
        None => Ok(Rules::builtin()),
    }
}

fn load_template(opts: &AnalyzeOptions) -> Result<String> {
    match &opts.template {
        Some(p) => read(p),
        None => Ok(report::BUILTIN_TEMPLATE.to_string()),
    }
}

/// `cargo kprof import`: copies the exports into a new profile directory and analyses them.
pub fn import(
    raw: &[PathBuf],
    source: Option<&Path>,
    details: Option<&Path>,
    kernel: Option<&str>,
    output_dir: &Path,
    opts: &AnalyzeOptions,
) -> Result<(ProfileDir, Analysis)> {
    // Parse everything before creating anything, so bad input leaves no directory behind.
    for p in raw {
        let text = read(p)?;
        RawPage::parse(&text, &p.display().to_string()).map_err(|e| {
            let log = scan_log(&text);
            let mut f = Failure::new(ExitCode::Config, format!("{e}"));
            if log.no_kernels_profiled {
                f = f.help(format!(
                    "ncu profiled no kernel in this run; it saw: {}",
                    log.available_kernels.join(", ")
                ));
            }
            f.help("export with `ncu --csv --page raw` (or `-i REPORT --csv --page raw`)")
        })?;
    }
    if let Some(p) = source {
        SourcePage::parse(&read(p)?, &p.display().to_string()).map_err(|e| {
            Failure::new(ExitCode::Config, e.to_string())
                .help("export with `--csv --page source --print-source cuda,sass`")
        })?;
    }
    if let Some(p) = details {
        crate::ncu::parse::DetailsPage::parse(&read(p)?, &p.display().to_string()).map_err(|e| {
            Failure::new(ExitCode::Config, e.to_string()).help("export with `--csv --page details`")
        })?;
    }
    if let Some(k) = kernel {
        regex::Regex::new(&crate::model::filter::KernelFilter::from_hint(k).pattern)
            .map_err(|e| Failure::new(ExitCode::Config, format!("--kernel `{k}`: {e}")))?;
    }
    let dir = ProfileDir::create_explicit(output_dir)?;
    let details_dir = dir.details_dir();
    let mut record = ImportRecord { files: Vec::new(), kernel: kernel.map(String::from) };
    let mut copy = |page: &str, from: &Path, name: String| -> Result<()> {
        let rel = PathBuf::from("details").join(&name);
        std::fs::copy(from, dir.path().join(&rel))
            .with_context(|| format!("could not copy {} into {}", from.display(), details_dir.display()))?;
        record.files.push(ImportedFile { page: page.into(), original: from.to_path_buf(), copy: rel });
        Ok(())
    };
    for (i, p) in raw.iter().enumerate() {
        copy("raw", p, format!("imported_{:02}_raw.csv", i + 1))?;
    }
    if let Some(p) = source {
        copy("source", p, "imported_source.csv".into())?;
    }
    if let Some(p) = details {
        copy("details", p, "imported_details.csv".into())?;
    }
    write_atomic(&details_dir.join(IMPORT_RECORD), &serde_json::to_string_pretty(&record)?)?;
    let analysis = analyze_with_warnings(&dir, opts)?;
    Ok((dir, analysis))
}

/// The pages of a profile directory: stage raw pages, imported raw pages, a source page.
struct Inputs {
    raw: Vec<(String, String, RawPage)>,
    source: Option<SourcePage>,
    kernel_filter: Option<regex::Regex>,
    ctx: ReportContext,
}

fn collect_inputs(dir: &ProfileDir) -> Result<Inputs> {
    let details = dir.details_dir();
    let mut ctx = ReportContext { privilege_mode: "n/a".into(), ..Default::default() };
    let mut raw = Vec::new();
    let mut source = None;
    let mut kernel_filter = None;
    let record_path = details.join(IMPORT_RECORD);
    let spec_path = dir.target_spec_path();
    let mut names: Vec<PathBuf> = std::fs::read_dir(&details)
        .with_context(|| format!("could not read {}", details.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    names.sort();
    for p in &names {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let text = read(p)?;
        let origin = format!("details/{name}");
        if name == "imported_details.csv" || name.ends_with("_details.csv") {
            let page = crate::ncu::parse::DetailsPage::parse(&text, &origin)
                .map_err(|e| Failure::new(ExitCode::Config, e.to_string()))?;
            let mut rules: Vec<&crate::ncu::parse::DetailsRow> =
                page.rules().filter(|r| r.speedup.is_some_and(|v| v > 0.0)).collect();
            rules.sort_by(|a, b| b.speedup.unwrap_or(0.0).total_cmp(&a.speedup.unwrap_or(0.0)));
            for r in rules.iter().take(5) {
                let first = r.rule_description.split(". ").next().unwrap_or(&r.rule_description);
                ctx.ncu_rules.push(format!(
                    "`{}` ({}, {}): estimated speedup {} % ({}). {}.",
                    r.rule_name,
                    r.section,
                    r.kernel,
                    crate::analyze::rules::format_value(r.speedup.unwrap_or(0.0)),
                    r.speedup_type.to_lowercase(),
                    first.trim_end_matches('.')
                ));
            }
            ctx.collected.push(format!("`{origin}`: details page ({} rule findings)", page.rules().count()));
        } else if name == "07_source_raw.csv" || name == "imported_source.csv" {
            source = Some(
                SourcePage::parse(&text, &origin)
                    .map_err(|e| Failure::new(ExitCode::Config, e.to_string()))?,
            );
            ctx.collected.push(format!("`{origin}`: source page"));
            ctx.stages_collected.push("source".into());
            ctx.source_collected = true;
        } else if name.ends_with("_raw.csv") && name != "metrics_raw.csv" && name != "00_discovery_raw.csv" {
            let page =
                RawPage::parse(&text, &origin).map_err(|e| Failure::new(ExitCode::Config, e.to_string()))?;
            let stage = name
                .trim_end_matches("_raw.csv")
                .trim_start_matches(|c: char| c.is_ascii_digit() || c == '_');
            if let Some(s) = crate::model::stage::Stage::ALL.iter().find(|s| s.raw_file_name() == name) {
                ctx.stages_collected.push(s.name().to_string());
            }
            ctx.collected.push(format!(
                "`{origin}`: {} launch(es), {} columns",
                page.launches().count(),
                page.columns.len()
            ));
            raw.push((stage.to_string(), origin, page));
        }
    }
    if raw.is_empty() {
        return Err(Failure::new(
            ExitCode::Config,
            format!("{} has no raw ncu pages to analyse", details.display()),
        )
        .help("import CSV exports with `cargo kprof import --raw FILE --output-dir DIR`")
        .into());
    }
    if let Ok(text) = std::fs::read_to_string(&record_path) {
        let record: ImportRecord =
            serde_json::from_str(&text).with_context(|| format!("invalid {}", record_path.display()))?;
        let files: Vec<String> =
            record.files.iter().map(|f| format!("`{}` ({})", f.original.display(), f.page)).collect();
        ctx.target_summary = format!("Imported from ncu CSV exports: {}.", files.join(", "));
        ctx.kernel_filter = match &record.kernel {
            Some(k) => {
                let f = crate::model::filter::KernelFilter::from_hint(k);
                kernel_filter = regex::Regex::new(&f.pattern).ok();
                format!("`{}` (from --kernel {k})", f.to_ncu_arg())
            }
            None => "none: every kernel in the files".into(),
        };
        ctx.title = record.kernel.clone().unwrap_or_else(|| "imported kernels".into());
        ctx.commands = format!(
            "cargo kprof import {} --output-dir {}",
            record
                .files
                .iter()
                .map(|f| format!(
                    "--{} {}",
                    f.page,
                    crate::process::shell_quote(&f.original.to_string_lossy())
                ))
                .collect::<Vec<_>>()
                .join(" "),
            crate::process::shell_quote(&dir.path().to_string_lossy())
        ) + &record.kernel.as_ref().map(|k| format!(" --kernel {k}")).unwrap_or_default();
    } else if let Ok(spec) = crate::profile::target_spec::TargetSpec::read_from(&spec_path) {
        ctx.title = spec.kernel.name.clone();
        ctx.target_summary = format!(
            "`{}` {} (runtime `{}`, cwd `{}`)",
            spec.target.executable,
            spec.target.args.iter().map(|a| crate::process::shell_quote(a)).collect::<Vec<_>>().join(" "),
            spec.target.runtime.name(),
            spec.target.cwd.display()
        );
        ctx.kernel_filter = format!("`{}:{}`", spec.kernel.filter_mode, spec.kernel.filter);
        kernel_filter = regex::Regex::new(&spec.kernel.filter).ok();
        ctx.privilege_mode = match spec.privilege.mode {
            crate::model::kinds::Privilege::None => "none".into(),
            crate::model::kinds::Privilege::Sudo => "full_sudo".into(),
        };
        ctx.clock_control = Some(spec.profiling.clock_control.name().to_string());
        ctx.commands = std::fs::read_to_string(dir.commands_script_path()).unwrap_or_default();
    }
    if let Ok(env) = std::fs::read_to_string(details.join("00_environment.txt")) {
        ctx.profiler_version = env.lines().find(|l| l.contains("Version")).map(|l| l.trim().to_string());
    }
    Ok(Inputs { raw, source, kernel_filter, ctx })
}

/// What [`analyze_with_warnings`] produced.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// `details/metrics_summary.json`.
    pub summary: MetricsSummary,
    /// `details/bottleneck_decision.json`.
    pub decision: BottleneckDecision,
    /// Outputs that could not be made while the analysis itself succeeded (such as
    /// `visual/profile_summary.png`), one line each, for the caller to print as warnings;
    /// `final_report.md` lists them under its limitations too.
    pub warnings: Vec<String>,
}

/// Analyses a profile directory and (re)writes its derived outputs and `final_report.md`.
/// [`analyze_with_warnings`] also returns what could not be drawn.
pub fn analyze(dir: &ProfileDir, opts: &AnalyzeOptions) -> Result<(MetricsSummary, BottleneckDecision)> {
    let a = analyze_with_warnings(dir, opts)?;
    Ok((a.summary, a.decision))
}

/// Analyses a profile directory and (re)writes its derived outputs, the picture
/// `visual/profile_summary.png` (of the first kernel) and `final_report.md`. A picture that
/// cannot be drawn or written does not fail the analysis: it is reported in
/// [`Analysis::warnings`], and no partial or stale picture is left.
pub fn analyze_with_warnings(dir: &ProfileDir, opts: &AnalyzeOptions) -> Result<Analysis> {
    let rules = load_rules(opts)?;
    let template = load_template(opts)?;
    let mut inputs = collect_inputs(dir)?;
    let pages: Vec<RawPage> = inputs.raw.iter().map(|(_, _, p)| p.clone()).collect();
    let summary = summary::summarize(&pages, inputs.kernel_filter.as_ref());
    if summary.kernels.is_empty() {
        return Err(Failure::new(
            ExitCode::NoKernelMatched,
            "no kernel in the inputs matches the kernel filter",
        )
        .help(format!("kernels in the files: {}", kernel_names(&pages).join(", ")))
        .into());
    }
    match summary.device.as_deref().map(|d| (d, crate::references::lookup_gpu(d, None))) {
        Some((_, Some(spec))) => inputs.ctx.device_limits = device_limits(spec, &summary),
        Some((device, None)) => inputs.ctx.limitations.push(format!(
            "`{device}` is not in references/nvidia/architectures/gpu_specs.yaml: no device limits (roofline, \
             warp slots) are used."
        )),
        None => inputs.ctx.limitations.push("The device is not named in the inputs: no device limits are used.".into()),
    }
    let decision = rules::decide_all(&rules, &summary);
    let root = opts.source_root.clone();
    let resolve = move |file: &str, line: u32| -> Option<String> {
        source_candidates(file, root.as_deref()).iter().find_map(|p| {
            std::fs::read_to_string(p)
                .ok()
                .and_then(|t| t.lines().nth(line.saturating_sub(1) as usize).map(String::from))
        })
    };
    let hot: Vec<Hotspot> = match &inputs.source {
        Some(page) => hotspots::hotspots(page, &resolve)
            .into_iter()
            .filter(|h| inputs.kernel_filter.as_ref().is_none_or(|re| re.is_match(&h.function)))
            .collect(),
        None => Vec::new(),
    };
    let details = dir.details_dir();
    write_atomic(
        &details.join("metrics_raw.csv"),
        &merged_raw_csv(&inputs.raw, inputs.kernel_filter.as_ref())?,
    )?;
    write_atomic(
        &details.join("metrics_extracted.jsonl"),
        &extracted_jsonl(&inputs.raw, inputs.kernel_filter.as_ref()),
    )?;
    write_atomic(&details.join("metrics_summary.json"), &(serde_json::to_string_pretty(&summary)? + "\n"))?;
    write_atomic(
        &details.join("bottleneck_decision.json"),
        &(serde_json::to_string_pretty(&decision)? + "\n"),
    )?;
    if inputs.source.is_some() {
        write_atomic(&details.join("source_hotspots.csv"), &hotspots::to_csv(&hot)?)?;
    }
    let mut warnings = Vec::new();
    if let Err(e) = write_visual_summary(dir, &summary, &decision, &hot) {
        // A picture of the previous analysis would disagree with the new numbers.
        std::fs::remove_file(dir.visual_summary_path()).ok();
        let note = format!("visual/profile_summary.png was not written: {e:#}");
        inputs.ctx.limitations.push(format!("{note}."));
        warnings.push(note);
    }
    let text = report::render(&template, &inputs.ctx, &summary, &decision, &hot);
    write_atomic(&dir.final_report_path(), &text)?;
    Ok(Analysis { summary, decision, warnings })
}

/// Draws `visual/profile_summary.png` for the first kernel of `summary` and writes it
/// atomically.
fn write_visual_summary(
    dir: &ProfileDir,
    summary: &MetricsSummary,
    decision: &BottleneckDecision,
    hot: &[Hotspot],
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
    let input = crate::report::visual::VisualInput {
        title: match device {
            Some(d) => format!("{} — {d}", kernel.kernel),
            None => format!("{} — device not named in the inputs", kernel.kernel),
        },
        kernel,
        verdict: decision.kernels.iter().find(|v| v.kernel == kernel.kernel),
        hotspots: &lines,
        device: device.and_then(crate::report::visual::ceilings_for),
    };
    // The picture is optional: a bug in drawing must not cost the analysis either.
    let png = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::report::visual::profile_summary_png(&input)
    }))
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

/// Where to look for a source file named by the line info: the path itself, then, under
/// `root`, ever shorter tails of it, longest first. A build on another machine (an
/// archive built there) names that machine's paths (`/build/ws/kernels/a.cu`); the same
/// file under this workspace is `root/kernels/a.cu`.
fn source_candidates(file: &str, root: Option<&Path>) -> Vec<PathBuf> {
    let path = PathBuf::from(file);
    let mut out = vec![path.clone()];
    if let Some(root) = root {
        let parts: Vec<_> =
            path.components().filter(|c| matches!(c, std::path::Component::Normal(_))).collect();
        for start in 0..parts.len() {
            out.push(parts[start..].iter().fold(root.to_path_buf(), |p, c| p.join(c)));
        }
    }
    out
}

/// Where each kernel stands against the device's limits from gpu_specs.yaml: the FP32
/// roofline (when FLOP counts and DRAM bytes were collected), DRAM bandwidth and warp slots.
fn device_limits(spec: &crate::references::GpuSpec, summary: &MetricsSummary) -> Vec<String> {
    use crate::analyze::rules::format_value as f;
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

fn kernel_names(pages: &[RawPage]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for p in pages {
        for l in p.launches() {
            if !names.iter().any(|n| n == l.kernel_name()) {
                names.push(l.kernel_name().to_string());
            }
        }
    }
    names
}

/// Columns every raw page starts with; not metrics.
const FIXED: &[&str] = &[
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
];

/// The launches of a page that pass `filter`, each with its index among its kernel's
/// launches in that page (how launches of different stages line up).
fn numbered_launches<'a>(
    page: &'a RawPage,
    filter: Option<&'a regex::Regex>,
) -> impl Iterator<Item = (usize, crate::ncu::parse::Launch<'a>)> + 'a {
    let mut nth: BTreeMap<&'a str, usize> = BTreeMap::new();
    page.launches().filter(move |l| filter.is_none_or(|re| re.is_match(l.kernel_name()))).map(move |l| {
        let n = nth.entry(l.kernel_name()).or_default();
        *n += 1;
        (*n - 1, l)
    })
}

/// `metrics_raw.csv`: every stage merged, one row per launch (kernel and its n-th launch),
/// one column per metric, the units row kept.
fn merged_raw_csv(raw: &[(String, String, RawPage)], filter: Option<&regex::Regex>) -> Result<String> {
    let mut columns: Vec<String> = Vec::new();
    let mut units: BTreeMap<String, String> = BTreeMap::new();
    let mut rows: Vec<((String, usize), BTreeMap<String, String>)> = Vec::new();
    let mut row_of: std::collections::HashMap<(String, usize), usize> = std::collections::HashMap::new();
    for (_, _, page) in raw {
        for (n, launch) in numbered_launches(page, filter) {
            let key = (launch.kernel_name().to_string(), n);
            let idx = *row_of.entry(key.clone()).or_insert_with(|| {
                rows.push((key, BTreeMap::new()));
                rows.len() - 1
            });
            for (i, col) in page.columns.iter().enumerate() {
                if FIXED.contains(&col.as_str()) {
                    continue;
                }
                if !units.contains_key(col) {
                    columns.push(col.clone());
                    units.insert(col.clone(), page.units.get(i).cloned().unwrap_or_default());
                }
                if let Some(v) = launch.cell(i) {
                    rows[idx].1.entry(col.clone()).or_insert_with(|| v.to_string());
                }
            }
        }
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["Kernel Name".to_string(), "Launch".to_string()];
    header.extend(columns.iter().cloned());
    w.write_record(&header)?;
    let mut unit_row = vec![String::new(), String::new()];
    unit_row.extend(columns.iter().map(|c| units.get(c).cloned().unwrap_or_default()));
    w.write_record(&unit_row)?;
    for ((kernel, n), values) in &rows {
        let mut r = vec![kernel.clone(), n.to_string()];
        r.extend(columns.iter().map(|c| values.get(c).cloned().unwrap_or_default()));
        w.write_record(&r)?;
    }
    let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("writing metrics_raw.csv: {e}"))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `metrics_extracted.jsonl`: one object per launch and numeric metric.
fn extracted_jsonl(raw: &[(String, String, RawPage)], filter: Option<&regex::Regex>) -> String {
    let mut out = String::new();
    for (stage, _, page) in raw {
        for (n, launch) in numbered_launches(page, filter) {
            let kernel = launch.kernel_name();
            for (i, col) in page.columns.iter().enumerate() {
                if !col.contains("__") {
                    continue;
                }
                let Some(value) = launch.cell(i).and_then(parse_number) else { continue };
                let obj = json!({
                    "kernel": kernel, "launch": n, "stage": stage, "metric": col,
                    "value": value, "unit": page.units.get(i).cloned().unwrap_or_default(),
                });
                out.push_str(&obj.to_string());
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    #[test]
    fn sources_built_on_another_machine_are_found_under_the_workspace() {
        let c = super::source_candidates("/build/ws/kernels/a.cu", Some(Path::new("/here")));
        let c: Vec<_> = c.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(
            c,
            [
                "/build/ws/kernels/a.cu",
                "/here/build/ws/kernels/a.cu",
                "/here/ws/kernels/a.cu",
                "/here/kernels/a.cu",
                "/here/a.cu"
            ]
        );
        assert_eq!(super::source_candidates("a.cu", None), [PathBuf::from("a.cu")]);
    }
}
