//! Saved baselines: `profile/baselines/NAME/<kernel>/`, plain files to commit.
//!
//! A baseline keeps what a comparison reads from a profile (see
//! [`crate::compare::Snapshot`]): `profile-target.yaml`, `run_manifest.yaml` and, under
//! `details/`, the environment, the metrics summary, the verdict, the hotspots and the
//! harness timing. Raw CSVs stay in the profile. A saved baseline is never overwritten.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::error::{ExitCode, Failure};
use crate::profile::dir::ProfileDir;
use crate::profile::root;

/// `profile/baselines`.
pub fn root(profile_root: &Path) -> PathBuf {
    root::baselines_root(profile_root)
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
    root::baseline_kernel_dir(profile_root, name, kernel)
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
    // Written beside, then renamed: a half-saved baseline never appears under its name, and
    // a failed save leaves nothing behind.
    let staging = crate::profile::output::create_baseline_staging(profile_root, name, kernel)?;
    let filled = (|| -> Result<()> {
        std::fs::create_dir(staging.join("details"))
            .with_context(|| format!("could not create {}", staging.display()))?;
        for rel in root::BASELINE_FILES {
            let from = profile.join(rel);
            if from.is_file() {
                std::fs::copy(&from, staging.join(rel))
                    .with_context(|| format!("could not copy {}", from.display()))?;
            }
        }
        let id = profile.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        std::fs::write(staging.join("SOURCE"), format!("{id}\n"))?;
        std::fs::rename(&staging, &dest).with_context(|| format!("could not create {}", dest.display()))
    })();
    if let Err(e) = filled {
        std::fs::remove_dir_all(&staging).ok();
        return Err(e);
    }
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

    /// Every path under `root`, relative to it.
    fn tree(root: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                out.push(p.strip_prefix(root).unwrap().display().to_string());
                if p.is_dir() && !p.is_symlink() {
                    stack.push(p);
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn a_kernel_name_never_leads_a_path_out_of_the_baseline() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("ws/profile");
        let p = profile(&root, "x_20261129_230345");
        // A kernel name as ncu's CSV may spell it: the staging folder came from it raw.
        let saved = save(&root, "main", "../../../../escaped/../k", &p).unwrap();
        assert_eq!(saved, root.join("baselines/main/escaped_k"));
        let all = tree(tmp.path());
        let outside: Vec<&String> = all
            .iter()
            .filter(|p| {
                !p.starts_with("ws/profile/x_20261129_230345") && !p.starts_with("ws/profile/baselines")
            })
            .filter(|p| !["ws", "ws/profile"].contains(&p.as_str()))
            .collect();
        assert!(outside.is_empty(), "written outside the baseline: {outside:?}");
        let under: Vec<String> = tree(&root.join("baselines/main"));
        assert!(under.iter().all(|p| p.starts_with("escaped_k")), "{under:?}");
    }

    #[test]
    fn a_failed_save_leaves_no_staging_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let p = profile(tmp.path(), "hgemm_20261129_230345");
        std::fs::create_dir_all(tmp.path().join("baselines/main")).unwrap();
        // A dangling link where the baseline goes: free by `exists`, but the rename fails.
        std::os::unix::fs::symlink(tmp.path().join("nowhere"), tmp.path().join("baselines/main/hgemm"))
            .unwrap();
        assert!(save(tmp.path(), "main", "hgemm", &p).is_err());
        assert_eq!(tree(&tmp.path().join("baselines/main")), ["hgemm"]);
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
