//! A [`Snapshot`]: what a comparison reads from one side, a profile directory or a saved
//! baseline (`profile/baselines/NAME/<kernel>/`, the same files), through the profile
//! directory's typed readers.

use std::path::{Path, PathBuf};

use anyhow::Result;
use kprof_contract::ResultFile;
use serde::{Deserialize, Serialize};

use crate::analyze::rules::{BottleneckDecision, KernelVerdict};
use crate::analyze::summary::{KernelSummary, MetricsSummary};
use crate::error::{ExitCode, Failure};
pub use crate::model::timing::TimingFacts;
use crate::profile::target_spec::TargetSpec;
use crate::profile::ProfileDir;

/// What a profile is of: equal identities are the same measurement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The configured kernel name (the hint).
    pub kernel: String,
    /// The harness case, if any.
    pub case: Option<String>,
    /// The program's arguments.
    pub args: Vec<String>,
}

/// What the numbers depend on.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Conditions {
    /// The GPU, as ncu named it.
    pub device: Option<String>,
    /// `Version 2025.3.1.0 (build ...)`, from `ncu --version`.
    pub ncu_version: Option<String>,
    /// `none` or `base`.
    pub clock_control: Option<String>,
}

/// One source line of the hotspots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HotLine {
    /// `hgemm.cu:24`.
    pub location: String,
    /// Share of the kernel's samples, percent.
    pub pct: f64,
    /// The line's text, when known.
    pub source: String,
}

impl HotLine {
    /// The file name part of the location.
    pub fn file(&self) -> &str {
        self.location.rsplit_once(':').map_or(self.location.as_str(), |(f, _)| f)
    }

    /// The line number part of the location.
    pub fn line(&self) -> Option<u32> {
        self.location.rsplit_once(':').and_then(|(_, l)| l.parse().ok())
    }
}

/// The line of `other` (another revision's hot lines) that is `h`, one of `own`: the
/// same file and the same text, since line numbers shift when code above them changes
/// (the nearest such line when the text repeats). Failing that, the line at the same
/// location, which was edited in place -- unless that line's text is found in `own`,
/// which means it moved rather than changed. A line whose text is unknown or too short to
/// tell lines apart (`}`, `i++;`) is matched by its location only.
pub fn counterpart<'a>(other: &'a [HotLine], own: &[HotLine], h: &HotLine) -> Option<&'a HotLine> {
    let same_location = || other.iter().find(|l| l.location == h.location);
    if !telling(h) {
        return same_location();
    }
    let by_text = |lines: &'a [HotLine], h: &HotLine| -> Option<&'a HotLine> {
        let distance = |l: &HotLine| match (l.line(), h.line()) {
            (Some(a), Some(b)) => a.abs_diff(b),
            _ => u32::MAX,
        };
        lines.iter().filter(|l| l.file() == h.file() && l.source == h.source).min_by_key(|l| distance(l))
    };
    by_text(other, h).or_else(|| {
        same_location()
            .filter(|o| !telling(o) || !own.iter().any(|l| l.file() == o.file() && l.source == o.source))
    })
}

/// Whether a line's text is long enough to recognise it elsewhere in the file.
fn telling(h: &HotLine) -> bool {
    h.source.chars().filter(|c| !c.is_whitespace()).count() >= 8
}

/// Everything a comparison reads from one side.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Where it was read from.
    pub dir: PathBuf,
    /// How to name it in reports (`profile hgemm_20261129_230345`, `baseline main`).
    pub label: String,
    /// What was measured.
    pub identity: Identity,
    /// Under what conditions.
    pub conditions: Conditions,
    /// The kernel's summary (the first kernel of the profile).
    pub kernel: KernelSummary,
    /// Its verdict, if the profile has one.
    pub verdict: Option<KernelVerdict>,
    /// Its hottest CUDA source lines, hottest first.
    pub hotspots: Vec<HotLine>,
    /// The harness timing, if taken.
    pub timing: Option<TimingFacts>,
}

impl Snapshot {
    /// Reads a profile directory (or a baseline's kernel directory).
    pub fn load(dir: &Path, label: impl Into<String>) -> Result<Snapshot> {
        let label = label.into();
        let profile = ProfileDir::at(dir);
        let spec_path = profile.target_spec_path();
        let spec = if spec_path.is_file() { Some(TargetSpec::read_from(&spec_path)?) } else { None };
        let timing_doc: Option<ResultFile> = profile.read_timing().ok().flatten();
        // A `check --timing-only` profile has a timing and no ncu metrics.
        let summary: MetricsSummary = match profile.read_metrics_summary()? {
            Some(s) => s,
            None if profile.has_timing() => MetricsSummary {
                schema_version: 1,
                device: None,
                kernels: vec![KernelSummary {
                    kernel: spec.as_ref().map(|s| s.kernel.name.clone()).unwrap_or_default(),
                    launches: 0,
                    fields: Default::default(),
                    top_stalls: Vec::new(),
                }],
            },
            None => {
                return Err(Failure::new(
                    ExitCode::Config,
                    format!("{} has no details/metrics_summary.json: not an analysed profile", dir.display()),
                )
                .help(format!("run `cargo kprof report {}` first, or pick another directory", dir.display()))
                .into())
            }
        };
        let kernel = summary.kernels.first().cloned().ok_or_else(|| {
            Failure::new(ExitCode::Config, format!("{} summarises no kernel", dir.display()))
        })?;
        let verdict = profile
            .read_bottleneck_decision::<BottleneckDecision>()
            .ok()
            .flatten()
            .and_then(|d| d.kernels.into_iter().find(|v| v.kernel == kernel.kernel));
        let identity = Identity {
            kernel: spec.as_ref().map(|s| s.kernel.name.clone()).unwrap_or_else(|| kernel.kernel.clone()),
            case: spec.as_ref().and_then(|s| s.kernel.case.clone()),
            args: spec.as_ref().map(|s| s.target.args.clone()).unwrap_or_default(),
        };
        let environment = std::fs::read_to_string(profile.environment_path()).unwrap_or_default();
        let conditions = Conditions {
            // The harness names the device too (a timing-only profile has no ncu summary).
            device: summary
                .device
                .clone()
                .or_else(|| timing_doc.as_ref().and_then(|d| d.device.as_ref()).map(|d| d.name.clone())),
            ncu_version: environment
                .lines()
                .find(|l| l.starts_with("Version "))
                .map(|l| l.trim().to_string()),
            clock_control: spec.as_ref().map(|s| s.profiling.clock_control.name().to_string()),
        };
        let timing = timing_doc.as_ref().and_then(|d| TimingFacts::of(d, identity.case.as_deref()));
        Ok(Snapshot {
            dir: dir.to_path_buf(),
            label,
            identity,
            conditions,
            hotspots: std::fs::read_to_string(profile.source_hotspots_path())
                .map(|t| hot_lines(&t))
                .unwrap_or_default(),
            kernel,
            verdict,
            timing,
        })
    }

    /// The duration compared: the harness median when timed, else ncu's.
    pub(crate) fn duration_ns(&self) -> Option<f64> {
        self.timing.as_ref().map(|t| t.median_ns).or_else(|| self.kernel.get("duration_ns"))
    }
}

/// The `cuda` rows of `source_hotspots.csv`, hottest first.
fn hot_lines(csv_text: &str) -> Vec<HotLine> {
    let mut rd = csv::Reader::from_reader(csv_text.as_bytes());
    let headers = match rd.headers() {
        Ok(h) => h.clone(),
        Err(_) => return Vec::new(),
    };
    let col = |name: &str| headers.iter().position(|h| h == name);
    let (Some(kind), Some(file), Some(line), Some(pct), Some(source)) =
        (col("kind"), col("file"), col("line"), col("pct_of_kernel"), col("source"))
    else {
        return Vec::new();
    };
    let mut out: Vec<HotLine> = rd
        .records()
        .filter_map(|r| r.ok())
        .filter(|r| r.get(kind) == Some("cuda"))
        .filter_map(|r| {
            let name = Path::new(r.get(file)?).file_name()?.to_string_lossy().into_owned();
            Some(HotLine {
                location: format!("{name}:{}", r.get(line)?),
                pct: r.get(pct)?.parse().ok()?,
                source: r.get(source)?.trim().to_string(),
            })
        })
        .collect();
    out.sort_by(|a, b| b.pct.total_cmp(&a.pct));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(location: &str, source: &str) -> HotLine {
        HotLine { location: location.into(), pct: 1.0, source: source.into() }
    }

    #[test]
    fn a_line_is_found_by_its_text_wherever_it_moved() {
        let base = [line("k.py:38", "num = tl.exp(shifted)"), line("k.py:40", "tl.store(out, num / den)")];
        let head = [line("k.py:40", "num = tl.exp(shifted)"), line("k.py:42", "tl.store(out, num / den)")];
        assert_eq!(counterpart(&base, &head, &head[0]), Some(&base[0]));
        assert_eq!(counterpart(&base, &head, &head[1]), Some(&base[1]));
        // The same text in another file is another line.
        assert_eq!(counterpart(&base, &head, &line("j.py:40", "num = tl.exp(shifted)")), None);
    }

    #[test]
    fn repeated_text_takes_the_nearest_line() {
        let base = [line("k.cu:10", "acc += a[i] * b[i];"), line("k.cu:30", "acc += a[i] * b[i];")];
        let head = [line("k.cu:32", "acc += a[i] * b[i];")];
        assert_eq!(counterpart(&base, &head, &head[0]), Some(&base[1]));
    }

    #[test]
    fn a_line_edited_in_place_keeps_its_location_but_one_that_moved_away_does_not() {
        let base = [line("k.cu:48", "acc += As[ty][i] * Bs[i][tx];")];
        let head = [line("k.cu:48", "acc += As[ty][i] * Bs[tx][i];")];
        assert_eq!(counterpart(&base, &head, &head[0]), Some(&base[0]));
        // The base's line 48 is now line 50: the new line 48 is new, not an edit of it.
        let head = [line("k.cu:48", "float x2 = far[i];"), line("k.cu:50", "acc += As[ty][i] * Bs[i][tx];")];
        assert_eq!(counterpart(&base, &head, &head[0]), None);
        assert_eq!(counterpart(&base, &head, &head[1]), Some(&base[0]));
    }

    #[test]
    fn short_or_unknown_text_is_matched_by_location() {
        let base = [line("k.cu:20", "}"), line("k.cu:21", "")];
        let head = [line("k.cu:22", "}"), line("k.cu:21", "")];
        assert_eq!(counterpart(&base, &head, &head[0]), None);
        assert_eq!(counterpart(&base, &head, &head[1]), Some(&base[1]));
    }
}
