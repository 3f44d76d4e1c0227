//! `cargo kprof compare` and the comparing half of `cargo kprof check`.
//!
//! Both read [`Snapshot`]s, find the baseline, refuse an unfair comparison unless forced,
//! and compare ([`crate::compare::compare`]); `crate::report::comparison` writes the
//! reports into the current profile's `comparison/`. `check` then exits with
//! [`ExitCode::Regression`] when any kernel's duration regressed beyond the tolerance,
//! after writing every report and, when `GITHUB_STEP_SUMMARY` is set, a Markdown summary
//! there.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::compare::baseline;
use crate::compare::{self, Comparison, Snapshot};
use crate::error::{ExitCode, Failure};

/// `--baseline`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaselineSpec {
    /// The newest earlier profile of the same kernel, arguments and GPU.
    Auto,
    /// A profile directory.
    Dir(PathBuf),
    /// A saved baseline, `profile/baselines/NAME/`.
    Name(String),
    /// A saved baseline's directory given as a path (`.../baselines/NAME`), e.g. one
    /// copied from another machine: the kernel's baseline is `<path>/<kernel>/`.
    Set(PathBuf),
}

impl BaselineSpec {
    /// `auto`; a path: a profile directory (it has `details/`), else a saved baseline's
    /// directory; otherwise a baseline name.
    pub fn parse(s: &str) -> BaselineSpec {
        let path = Path::new(s);
        if s == "auto" {
            BaselineSpec::Auto
        } else if path.is_dir() && !path.join("details").is_dir() {
            BaselineSpec::Set(path.to_path_buf())
        } else if path.is_dir() || s.contains('/') {
            BaselineSpec::Dir(path.to_path_buf())
        } else {
            BaselineSpec::Name(s.to_string())
        }
    }
}

/// How to compare.
#[derive(Debug, Clone)]
pub struct GateOptions {
    /// What to compare against.
    pub baseline: BaselineSpec,
    /// Noise band, percent.
    pub tolerance_pct: f64,
    /// Compare even when the kernel or its arguments, the GPU, the ncu version or the
    /// clock control differ (with a warning).
    pub force: bool,
    /// Also draw `comparison/comparison.png`.
    pub visual: bool,
}

/// The outcome for one profile.
#[derive(Debug, Clone)]
pub struct GateResult {
    /// The profile compared.
    pub profile: PathBuf,
    /// The comparison.
    pub comparison: Comparison,
    /// `comparison/regression_report.md`.
    pub report: PathBuf,
    /// What could not be made besides the comparison (the picture), one line each.
    pub warnings: Vec<String>,
}

fn label_of(dir: &Path, prefix: &str) -> String {
    format!("{prefix} {}", dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())
}

/// Loads the baseline for `current` as `spec` says.
pub fn load_baseline(spec: &BaselineSpec, current: &Snapshot, profile_root: &Path) -> Result<Snapshot> {
    match spec {
        BaselineSpec::Dir(d) => {
            if !d.is_dir() {
                return Err(Failure::new(
                    ExitCode::Config,
                    format!("--baseline {}: no such directory", d.display()),
                )
                .help("give a profile directory, a saved baseline's name, or `auto`")
                .into());
            }
            Snapshot::load(d, label_of(d, "profile"))
        }
        BaselineSpec::Name(name) => {
            let dir = baseline::find(profile_root, name, &current.identity.kernel)?;
            Snapshot::load(&dir, format!("baseline {name}"))
        }
        BaselineSpec::Set(set) => {
            let dir = set.join(crate::profile::names::sanitize_kernel_name(&current.identity.kernel));
            if !dir.is_dir() {
                return Err(Failure::new(
                    ExitCode::Config,
                    format!(
                        "the baseline {} has no kernel `{}` ({} is missing)",
                        set.display(),
                        current.identity.kernel,
                        dir.display()
                    ),
                )
                .help("save it with `--save-baseline NAME`, then pass that NAME or its directory")
                .into());
            }
            Snapshot::load(&dir, format!("baseline {}", set.display()))
        }
        BaselineSpec::Auto => {
            let here = current.dir.canonicalize().unwrap_or_else(|_| current.dir.clone());
            let profiles = baseline::profiles_in(profile_root);
            let mut earlier = Vec::new();
            for p in profiles {
                if p.canonicalize().unwrap_or_else(|_| p.clone()) == here {
                    break;
                }
                earlier.push(p);
            }
            for p in earlier.iter().rev() {
                let Ok(s) = Snapshot::load(p, label_of(p, "profile")) else { continue };
                if s.identity == current.identity && s.conditions.device == current.conditions.device {
                    return Ok(s);
                }
            }
            Err(Failure::new(
                ExitCode::Config,
                format!(
                    "no earlier profile of `{}` with the same arguments on the same GPU under {}",
                    current.identity.kernel,
                    profile_root.display()
                ),
            )
            .help("pass --baseline DIR (a profile directory) or --baseline NAME (a saved baseline)")
            .into())
        }
    }
}

/// Reads the profile at `dir` as the current side of a comparison.
pub fn load_current(dir: &Path) -> Result<Snapshot> {
    Snapshot::load(dir, label_of(dir, "profile"))
}

/// The baseline of the profile `current` (see [`load_current`]) as `opts` say, and the
/// comparison with it. Refused, unless forced, when the two are not the same kernel with
/// the same arguments or were measured under different conditions.
pub fn compare_with_baseline(current: &Snapshot, opts: &GateOptions) -> Result<(Snapshot, Comparison)> {
    let profile_root = current.dir.parent().unwrap_or(Path::new(".")).to_path_buf();
    let base = load_baseline(&opts.baseline, current, &profile_root)?;
    let different = compare::identity_mismatch(&base, current);
    let mismatches: Vec<String> =
        different.iter().cloned().chain(compare::condition_mismatches(&base, current)).collect();
    if !mismatches.is_empty() && !opts.force {
        let why = if different.is_some() {
            "they are not the same kernel with the same arguments"
        } else {
            "the numbers were taken differently"
        };
        let mut f = Failure::new(
            ExitCode::Config,
            format!("refusing to compare {} with {}: {why}", current.label, base.label),
        );
        for m in &mismatches {
            f = f.help(m.clone());
        }
        return Err(f.help("pass --force to compare anyway; the report then carries a warning").into());
    }
    let comparison = compare::compare(&base, current, opts.tolerance_pct);
    Ok((base, comparison))
}

/// Appends `text` to the file `GITHUB_STEP_SUMMARY` names, when set.
pub fn write_step_summary(text: &str) -> Result<()> {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else { return Ok(()) };
    let mut f =
        std::fs::OpenOptions::new().create(true).append(true).open(&path).with_context(|| {
            format!("could not open GITHUB_STEP_SUMMARY ({})", Path::new(&path).display())
        })?;
    // Names come from CSVs and manifests: no control character reaches the summary.
    f.write_all(crate::shell::printable(text).as_bytes())?;
    Ok(())
}

/// The exit code of a gate: [`ExitCode::Regression`] when any comparison regressed.
pub fn exit_code(results: &[GateResult]) -> ExitCode {
    if results.iter().any(|r| r.comparison.regression) {
        ExitCode::Regression
    } else {
        ExitCode::Success
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_specs() {
        assert_eq!(BaselineSpec::parse("auto"), BaselineSpec::Auto);
        assert_eq!(BaselineSpec::parse("main"), BaselineSpec::Name("main".into()));
        assert_eq!(BaselineSpec::parse("profile/x_1"), BaselineSpec::Dir("profile/x_1".into()));
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("p/details")).unwrap();
        std::fs::create_dir_all(tmp.path().join("baselines/main")).unwrap();
        let (p, b) = (tmp.path().join("p"), tmp.path().join("baselines/main"));
        assert_eq!(BaselineSpec::parse(p.to_str().unwrap()), BaselineSpec::Dir(p.clone()));
        assert_eq!(BaselineSpec::parse(b.to_str().unwrap()), BaselineSpec::Set(b.clone()));
    }
}
