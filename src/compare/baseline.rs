//! Saved baselines: `profile/baselines/NAME/<kernel>/`, plain files to commit.
//!
//! A baseline keeps what a comparison reads from a profile (see
//! [`crate::compare::Snapshot`]): `profile-target.yaml`, `run_manifest.yaml` and, under
//! `details/`, the environment, the metrics summary, the verdict, the hotspots and the
//! harness timing. Raw CSVs stay in the profile. A saved baseline is never overwritten.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::error::{ExitCode, Failure};
use crate::profile::dir::{self, ProfileDir};

/// `profile/baselines`.
pub fn root(profile_root: &Path) -> PathBuf {
    dir::baselines_root(profile_root)
}

/// Checks a baseline name: letters, digits, `.`, `_`, `-`, not starting with `.`.
pub fn check_name(name: &str) -> Result<(), Failure> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(Failure::new(ExitCode::Usage, format!("`{name}` is not a baseline name"))
            .help("use letters, digits, `.`, `_` and `-`, such as `main` or `v0.3`"))
    }
}

/// Where kernel `kernel` of baseline `name` lives.
pub fn kernel_dir(profile_root: &Path, name: &str, kernel: &str) -> PathBuf {
    root(profile_root).join(name).join(dir::sanitize_kernel_name(kernel))
}

/// Refuses before any work when `name` already holds `kernel`.
pub fn ensure_free(profile_root: &Path, name: &str, kernel: &str) -> Result<(), Failure> {
    check_name(name)?;
    let dir = kernel_dir(profile_root, name, kernel);
    if dir.exists() {
        return Err(Failure::new(
            ExitCode::Config,
            format!(
                "baseline `{name}` already holds `{kernel}` ({}); baselines are never overwritten",
                dir.display()
            ),
        )
        .help(format!("pick another name, or delete {} yourself first", dir.display())));
    }
    Ok(())
}

/// Copies a profile's summaries into baseline `name` under the kernel `kernel`.
pub fn save(profile_root: &Path, name: &str, kernel: &str, profile: &Path) -> Result<PathBuf> {
    ensure_free(profile_root, name, kernel)?;
    if !ProfileDir::at(profile).has_results() {
        return Err(Failure::new(
            ExitCode::Config,
            format!(
                "{} has neither details/metrics_summary.json nor details/timing.json to save",
                profile.display()
            ),
        )
        .into());
    }
    let dest = kernel_dir(profile_root, name, kernel);
    // Written beside, then renamed: a half-saved baseline never appears under its name.
    let parent = dest.parent().expect("a baseline kernel dir has a parent");
    std::fs::create_dir_all(parent).with_context(|| format!("could not create {}", parent.display()))?;
    let staging = parent.join(format!(".{}.saving-{}", kernel, std::process::id()));
    std::fs::create_dir_all(staging.join("details"))
        .with_context(|| format!("could not create {}", staging.display()))?;
    for rel in dir::BASELINE_FILES {
        let from = profile.join(rel);
        if from.is_file() {
            std::fs::copy(&from, staging.join(rel))
                .with_context(|| format!("could not copy {}", from.display()))?;
        }
    }
    let id = profile.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    std::fs::write(staging.join("SOURCE"), format!("{id}\n"))?;
    std::fs::rename(&staging, &dest).with_context(|| format!("could not create {}", dest.display()))?;
    Ok(dest)
}

/// The kernel directory of baseline `name`, or an error that lists what exists.
pub fn find(profile_root: &Path, name: &str, kernel: &str) -> Result<PathBuf, Failure> {
    check_name(name)?;
    let dir = kernel_dir(profile_root, name, kernel);
    if ProfileDir::at(&dir).has_results() {
        return Ok(dir);
    }
    let names = list_dirs(&root(profile_root));
    let f = Failure::new(
        ExitCode::Config,
        format!("no baseline `{name}` for kernel `{kernel}` under {}", root(profile_root).display()),
    );
    Err(if names.iter().any(|n| n == name) {
        f.help(format!(
            "baseline `{name}` holds: {}; save this kernel with `--save-baseline {name}`",
            list_dirs(&root(profile_root).join(name)).join(", ")
        ))
    } else if names.is_empty() {
        f.help(format!(
            "save one first: `cargo kprof check --save-baseline {name}` (or `compare --save-baseline`)"
        ))
    } else {
        f.help(format!("saved baselines: {}", names.join(", ")))
    })
}

fn list_dirs(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Profile directories under `profile_root` (not baselines), oldest first by the
/// timestamp in their id (`<kernel>_YYYYMMDD_HHMMSS[_N]`).
pub fn profiles_in(profile_root: &Path) -> Vec<PathBuf> {
    let re = regex::Regex::new(r"_(\d{8}_\d{6})(?:_(\d+))?$").expect("a valid regex");
    let mut out: Vec<(String, u32, PathBuf)> = std::fs::read_dir(profile_root)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| ProfileDir::at(p).has_results())
                .filter_map(|p| {
                    let name = p.file_name()?.to_string_lossy().into_owned();
                    let c = re.captures(&name)?;
                    let n = c.get(2).and_then(|m| m.as_str().parse().ok()).unwrap_or(0);
                    Some((c[1].to_string(), n, p))
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out.into_iter().map(|(_, _, p)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(root: &Path, id: &str) -> PathBuf {
        let dir = root.join(id);
        std::fs::create_dir_all(dir.join("details")).unwrap();
        std::fs::write(dir.join("details/metrics_summary.json"), "{}").unwrap();
        std::fs::write(dir.join("details/01_basic_raw.csv"), "raw").unwrap();
        dir
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("main").is_ok());
        assert!(check_name("v0.3-rc_1").is_ok());
        for bad in ["", ".hidden", "a/b", "a b", "../x"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn save_keeps_summaries_and_never_overwrites() {
        let tmp = tempfile::tempdir().unwrap();
        let p = profile(tmp.path(), "hgemm_20261129_230345");
        let saved = save(tmp.path(), "main", "hgemm", &p).unwrap();
        assert_eq!(saved, tmp.path().join("baselines/main/hgemm"));
        assert!(saved.join("details/metrics_summary.json").is_file());
        assert!(!saved.join("details/01_basic_raw.csv").exists(), "raw CSVs stay in the profile");
        assert_eq!(std::fs::read_to_string(saved.join("SOURCE")).unwrap(), "hgemm_20261129_230345\n");
        let again = save(tmp.path(), "main", "hgemm", &p).unwrap_err();
        assert!(again.to_string().contains("never overwritten"), "{again}");
        assert_eq!(find(tmp.path(), "main", "hgemm").unwrap(), saved);
        let missing = find(tmp.path(), "main", "copy").unwrap_err();
        assert!(format!("{missing:?}").contains("holds: hgemm"), "{missing:?}");
        let unknown = find(tmp.path(), "release", "copy").unwrap_err();
        assert!(format!("{unknown:?}").contains("saved baselines: main"), "{unknown:?}");
    }

    #[test]
    fn profiles_are_ordered_by_their_timestamp() {
        let tmp = tempfile::tempdir().unwrap();
        profile(tmp.path(), "b_20261129_230000");
        profile(tmp.path(), "a_20261129_231000");
        profile(tmp.path(), "a_20261129_230000_2");
        profile(tmp.path(), "a_20261129_230000");
        std::fs::create_dir_all(tmp.path().join("baselines/main")).unwrap();
        let names: Vec<String> = profiles_in(tmp.path())
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        // Within one second, a collision suffix (`_2`) was created after the plain id.
        assert_eq!(
            names,
            ["a_20261129_230000", "b_20261129_230000", "a_20261129_230000_2", "a_20261129_231000"]
        );
    }
}
