//! From a profile directory's ncu pages to what they mean: a metrics summary, a
//! bottleneck verdict with its evidence, source hotspots, the kernels against the
//! device's limits. [`analyze`] reads and computes; it writes nothing ([`crate::report`]
//! renders an [`Analysis`] into the directory).
//!
//! [`summary`] names, in one table, the ncu metric behind every summary field; [`rules`]
//! evaluates the YAML rules (data, not code) over those fields; [`hotspots`] ranks source
//! lines and their SASS by warp samples; [`sass`] reads causes off the hot lines'
//! instructions; [`inputs`] reads the pages and their provenance;
//! [`exports`] flattens the metrics for other tools; [`device`] compares with
//! `gpu_specs.yaml`.

use std::path::{Path, PathBuf};

use anyhow::Result;

pub mod counters;
pub mod coverage;
pub mod crosscheck;
pub mod device;
pub mod exports;
pub mod hotspots;
pub mod inputs;
pub mod library;
pub mod rules;
pub mod sass;
pub mod source_launches;
pub mod summary;

use crate::error::{ExitCode, Failure};
use crate::ncu::parse::RawPage;
use crate::profile::import::read;
use crate::profile::ProfileDir;
use hotspots::Hotspot;
pub use inputs::Provenance;
use rules::{BottleneckDecision, Rules};
use summary::MetricsSummary;

/// Options shared by import and report.
#[derive(Debug, Clone, Default)]
pub struct AnalyzeOptions {
    /// `--rules FILE`.
    pub rules: Option<PathBuf>,
    /// `--template FILE`.
    pub template: Option<PathBuf>,
    /// The workspace root, to read source lines ncu could not open.
    pub source_root: Option<PathBuf>,
    /// More folders to read such lines from, by path suffix (an unpacked archive's
    /// dependency sources).
    pub source_roots: Vec<PathBuf>,
    /// Source files by the name line info gives them (an unpacked archive's dependency
    /// sources, whose names may be relative to the package that compiled them).
    pub source_map: std::collections::BTreeMap<String, PathBuf>,
    /// `--max-input-mb`: the largest raw page read, in MiB (default
    /// [`inputs::DEFAULT_MAX_INPUT_MB`]).
    pub max_input_mb: Option<u64>,
}

/// Everything an analysis found, in memory; [`crate::report::write`] renders it.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// `details/metrics_summary.json`.
    pub summary: MetricsSummary,
    /// `details/bottleneck_decision.json`.
    pub decision: BottleneckDecision,
    /// `details/source_hotspots.csv` (empty without a source page).
    pub hotspots: Vec<Hotspot>,
    /// Where the numbers come from.
    pub provenance: Provenance,
    /// Each kernel against the device's limits from gpu_specs.yaml (empty when unknown).
    pub device_limits: Vec<String>,
    /// What the analysis could not do (an unknown device, a picture not drawn, ...).
    pub limitations: Vec<String>,
    /// The raw pages read, from which [`crate::report::write`] streams `details/metrics_raw.csv`
    /// and `details/metrics_extracted.jsonl`.
    pub raw_inputs: Vec<inputs::RawInput>,
    /// The kernel filter the inputs kept to.
    pub kernel_filter: Option<regex::Regex>,
    /// Each kernel whose source page summed several launches, with their number (the
    /// hot lines are those launches' samples added line by line).
    pub source_launches: Vec<(String, usize)>,
    /// Outputs that could not be made while the analysis itself succeeded (such as
    /// `visual/profile_summary.png`), one line each, for the caller to print as warnings;
    /// set by [`crate::report::write`], and listed among the limitations too.
    pub warnings: Vec<String>,
}

/// The bottleneck rules: `--rules FILE`, or the built-in ones.
pub fn load_rules(opts: &AnalyzeOptions) -> Result<Rules> {
    match &opts.rules {
        Some(p) => Ok(Rules::parse(&read(p)?, &p.display().to_string())?),
        None => Ok(Rules::builtin()),
    }
}

/// Analyses the pages of a profile directory. Reads only.
pub fn analyze(dir: &ProfileDir, opts: &AnalyzeOptions) -> Result<Analysis> {
    let rules = load_rules(opts)?;
    let inputs = inputs::read_inputs(dir, opts.max_input_mb.unwrap_or(inputs::DEFAULT_MAX_INPUT_MB))?;
    let pages: Vec<&RawPage> = inputs.raw.iter().map(|r| &r.page).collect();
    let summary = summary::summarize(pages.iter().copied(), inputs.kernel_filter.as_ref());
    if summary.kernels.is_empty() {
        return Err(Failure::new(
            ExitCode::NoKernelMatched,
            format!(
                "no kernel in the inputs matches the kernel filter `{}`",
                inputs.kernel_filter.as_ref().map(|re| re.as_str()).unwrap_or("")
            ),
        )
        .help(format!("kernels in the files: {}", kernel_names(&pages).join(", ")))
        .into());
    }
    let mut limitations = Vec::new();
    let mut device_limits = Vec::new();
    match summary.device.as_deref().map(|d| (d, crate::references::lookup_gpu(d, None))) {
        Some((_, Some(spec))) => device_limits = device::device_limits(spec, &summary),
        Some((device, None)) => limitations.push(format!(
            "`{device}` is not in references/nvidia/architectures/gpu_specs.yaml: no device limits (roofline, \
             warp slots) are used."
        )),
        None => limitations.push("The device is not named in the inputs: no device limits are used.".into()),
    }
    let mut decision = rules::decide_all(&rules, &summary);
    let roots: Vec<Option<PathBuf>> = std::iter::once(opts.source_root.clone())
        .chain(opts.source_roots.iter().cloned().map(Some))
        .collect();
    let map = opts.source_map.clone();
    let resolve = move |file: &str, line: u32| resolve_line(&map, &roots, file, line);
    // The page's launches are summed once: the hot lines and the launch counts come from it.
    let merged = inputs.source.as_ref().map(source_launches::merged);
    let source_launches: Vec<(String, usize)> = match &merged {
        Some((_, launches)) => launches.iter().filter(|(_, n)| *n > 1).cloned().collect(),
        None => Vec::new(),
    };
    let hotspots: Vec<Hotspot> = match &merged {
        Some((page, _)) => hotspots::ranked(page, &resolve)
            .into_iter()
            .filter(|h| inputs.kernel_filter.as_ref().is_none_or(|re| re.is_match(&h.function)))
            .collect(),
        None => Vec::new(),
    };
    crosscheck::cross_check(&mut decision, &inputs.provenance.ncu_findings, &hotspots);
    library::annotate(&mut decision, &summary, &hotspots);
    if let Some((page, _)) = &merged {
        sass::annotate(&mut decision, page, &resolve);
    }
    Ok(Analysis {
        summary,
        decision,
        hotspots,
        provenance: inputs.provenance,
        device_limits,
        limitations,
        raw_inputs: inputs.raw,
        kernel_filter: inputs.kernel_filter,
        source_launches,
        warnings: Vec::new(),
    })
}

/// Where to look for a source file named by the line info: the path itself, then, under
/// `root`, ever shorter tails of it, longest first. A build on another machine (an
/// archive built there) names that machine's paths (`/build/ws/kernels/a.cu`); the same
/// file under this workspace is `root/kernels/a.cu`.
/// Where a file the line info names is here: by its exact name, else by a relative name
/// it ends with (ncu may show a relative name joined to a folder of its own).
fn mapped<'m>(map: &'m std::collections::BTreeMap<String, PathBuf>, file: &str) -> Option<&'m PathBuf> {
    map.get(file).or_else(|| {
        map.iter()
            .find(|(n, _)| !Path::new(n).is_absolute() && Path::new(file).ends_with(n))
            .map(|(_, at)| at)
    })
}

/// Line `line` of the source file the line info names `file`: from where the archive's
/// map puts it, else where it is, else by path suffix under one of `roots`.
fn resolve_line(
    map: &std::collections::BTreeMap<String, PathBuf>,
    roots: &[Option<PathBuf>],
    file: &str,
    line: u32,
) -> Option<String> {
    mapped(map, file)
        .and_then(|at| read_line(&at.to_string_lossy(), line, &[None]))
        .or_else(|| read_line(file, line, roots))
}

/// Line `line` of `file`, read where it is or, by path suffix, under one of `roots`.
fn read_line(file: &str, line: u32, roots: &[Option<PathBuf>]) -> Option<String> {
    roots.iter().flat_map(|root| source_candidates(file, root.as_deref())).find_map(|p| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|t| t.lines().nth(line.saturating_sub(1) as usize).map(String::from))
    })
}

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

fn kernel_names(pages: &[&RawPage]) -> Vec<String> {
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

    #[test]
    fn dependency_sources_are_read_from_an_unpacked_archives_deps_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let deps = tmp.path().join("deps");
        let file = deps.join("registry/src/index.crates.io-0123/candle-kernels-0.11.1/src/reduce.cu");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "// one\n  float acc = 0.0f;\n").unwrap();
        let named =
            "/home/builder/.cargo/registry/src/index.crates.io-0123/candle-kernels-0.11.1/src/reduce.cu";
        let roots = [Some(tmp.path().join("workspace")), Some(deps)];
        assert_eq!(super::read_line(named, 2, &roots).as_deref(), Some("  float acc = 0.0f;"));
        assert_eq!(super::read_line(named, 2, &roots[..1]), None);
        let map = [("src/reduce.cu".to_string(), file.clone())].into();
        assert_eq!(super::mapped(&map, "src/reduce.cu"), Some(&file));
        assert_eq!(super::mapped(&map, "/somewhere/src/reduce.cu"), Some(&file));
        assert_eq!(super::mapped(&map, "/somewhere/src/xreduce.cu"), None);
        // The whole resolution, as the analysis runs it: a mapped name is read where the
        // map puts it (candle's PTX names `src/reduce.cu`; ncu prints the build machine's
        // absolute path, which ends with it).
        let absolute = "/root/.cargo/registry/src/index.crates.io-0123/candle-kernels-0.11.1/src/reduce.cu";
        assert_eq!(super::resolve_line(&map, &[], absolute, 2).as_deref(), Some("  float acc = 0.0f;"));
        // A map entry whose file is missing falls back to the roots.
        let stale = [("src/reduce.cu".to_string(), tmp.path().join("gone.cu"))].into();
        assert_eq!(super::resolve_line(&stale, &roots, named, 2).as_deref(), Some("  float acc = 0.0f;"));
    }
}
