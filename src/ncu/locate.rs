//! Finding the `ncu` binary.
//!
//! Order, as cargo-flamegraph and cargo-llvm-cov do for their tools: the `NCU`
//! environment variable (an explicit override must exist, or it is an error, never
//! silently skipped), then `ncu` on `PATH`, then the path written in
//! `profile/ncu_path` (created with `/usr/local/cuda/bin/ncu` by default).
//!
//! The result is always an absolute path, and it is the one both checked and run: ncu runs
//! in the package directory, not the caller's. A bare `NCU=name` (no `/`) is looked up on
//! `PATH`, as a shell would; a relative path (`NCU=./ncu`) is relative to the current
//! directory, and so is a relative line in `profile/ncu_path`.

use std::ffi::OsStr;
use std::fmt;
use std::path::{Component, Path, PathBuf};

/// Where the `ncu` we use came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NcuSource {
    /// The `NCU` environment variable.
    Env,
    /// The first `ncu` on `PATH`.
    Path,
    /// The path written in this file (`profile/ncu_path`).
    NcuPathFile(PathBuf),
}

impl fmt::Display for NcuSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NcuSource::Env => f.write_str("the NCU environment variable"),
            NcuSource::Path => f.write_str("PATH"),
            NcuSource::NcuPathFile(p) => write!(f, "{}", p.display()),
        }
    }
}

/// A found `ncu` binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NcuLocation {
    /// The binary.
    pub path: PathBuf,
    /// How it was found.
    pub source: NcuSource,
}

/// Why no `ncu` was found: each place looked at and what was there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NcuNotFound {
    /// One line per place looked at.
    pub tried: Vec<String>,
    /// True when `NCU` was set but wrong: the fix is then to correct it.
    pub bad_override: bool,
}

impl fmt::Display for NcuNotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.tried.join("; "))
    }
}

/// Finds ncu from the given `NCU` value, `PATH` value and `profile/ncu_path` file.
///
/// The inputs are passed in (not read from the process) so tests can drive every case.
pub fn locate_ncu(
    ncu_env: Option<&OsStr>,
    path_env: Option<&OsStr>,
    ncu_path_file: &Path,
) -> Result<NcuLocation, NcuNotFound> {
    let mut tried = Vec::new();
    if let Some(value) = ncu_env.filter(|v| !v.is_empty()) {
        let p = PathBuf::from(value);
        let bare = matches!(p.components().collect::<Vec<_>>().as_slice(), [Component::Normal(_)]);
        if bare {
            if let Some(found) = path_env.and_then(|path| find_in_path(&value.to_string_lossy(), path)) {
                return Ok(NcuLocation { path: found, source: NcuSource::Env });
            }
            tried.push(format!(
                "NCU={} is not an executable on PATH (a name without `/` is looked up on PATH; \
                 for a file in the current directory write NCU=./{}, or give an absolute path)",
                p.display(),
                p.display()
            ));
            return Err(NcuNotFound { tried, bad_override: true });
        }
        let p = absolute(&p);
        if is_executable(&p) {
            return Ok(NcuLocation { path: p, source: NcuSource::Env });
        }
        tried.push(format!("NCU={} is not an executable file", value.to_string_lossy()));
        return Err(NcuNotFound { tried, bad_override: true });
    }
    tried.push("NCU is not set".to_string());
    if let Some(found) = path_env.and_then(|p| find_in_path("ncu", p)) {
        return Ok(NcuLocation { path: found, source: NcuSource::Path });
    }
    tried.push("`ncu` is not on PATH".to_string());
    match std::fs::read_to_string(ncu_path_file) {
        Ok(text) => {
            let path = PathBuf::from(text.trim());
            let path = if path.as_os_str().is_empty() { path } else { absolute(&path) };
            if !path.as_os_str().is_empty() && is_executable(&path) {
                return Ok(NcuLocation { path, source: NcuSource::NcuPathFile(ncu_path_file.to_path_buf()) });
            }
            tried.push(format!(
                "{} (from {}) does not exist or is not executable",
                path.display(),
                ncu_path_file.display()
            ));
        }
        Err(_) => tried.push(format!("{} does not exist", ncu_path_file.display())),
    }
    Err(NcuNotFound { tried, bad_override: false })
}

/// The first executable `name` in a `PATH`-style list, as an absolute path.
pub fn find_in_path(name: &str, path_env: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(path_env).map(|dir| absolute(&dir.join(name))).find(|p| is_executable(p))
}

/// `p` against the current directory (unchanged when it is absolute or that fails).
fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn fake_ncu(dir: &Path) -> PathBuf {
        let p = dir.join("ncu");
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        p
    }

    #[test]
    fn env_override_wins_and_must_exist() {
        let t = tempfile::tempdir().unwrap();
        let ncu = fake_ncu(t.path());
        let none = t.path().join("missing");
        let got = locate_ncu(Some(ncu.as_os_str()), Some(OsStr::new("")), &none).unwrap();
        assert_eq!(got, NcuLocation { path: ncu.clone(), source: NcuSource::Env });
        let bad = t.path().join("nope/ncu");
        let err = locate_ncu(Some(bad.as_os_str()), Some(t.path().as_os_str()), &none).unwrap_err();
        assert!(err.bad_override);
        assert!(err.to_string().contains("is not an executable file"), "{err}");
    }

    #[test]
    fn a_relative_override_becomes_absolute_and_a_bare_name_is_looked_up_on_path() {
        let t = tempfile::tempdir().unwrap();
        let bin = t.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let ncu = fake_ncu(&bin);
        let none = t.path().join("missing");
        let got = locate_ncu(Some(OsStr::new("ncu")), Some(bin.as_os_str()), &none).unwrap();
        assert_eq!(got.path, ncu);
        let err = locate_ncu(Some(OsStr::new("ncu")), Some(OsStr::new("/nonexistent")), &none).unwrap_err();
        assert!(err.bad_override && err.to_string().contains("NCU=./ncu"), "{err}");
        // A path with a `/` is relative to the current directory, and comes back absolute.
        let here = std::env::current_dir().unwrap();
        let rel = pathdiff(&ncu, &here);
        let got = locate_ncu(Some(rel.as_os_str()), None, &none).unwrap();
        assert!(got.path.is_absolute() && got.path.ends_with("bin/ncu"), "{got:?}");
    }

    /// `to` relative to `from` through `..` components.
    fn pathdiff(to: &Path, from: &Path) -> PathBuf {
        let mut out = PathBuf::new();
        for _ in from.components().skip(1) {
            out.push("..");
        }
        out.join(to.strip_prefix("/").unwrap())
    }

    #[test]
    fn path_then_ncu_path_file() {
        let t = tempfile::tempdir().unwrap();
        let bin = t.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let ncu = fake_ncu(&bin);
        let path: OsString = std::env::join_paths([t.path().join("empty"), bin.clone()]).unwrap();
        let file = t.path().join("ncu_path");
        assert_eq!(locate_ncu(None, Some(&path), &file).unwrap().source, NcuSource::Path);

        std::fs::write(&file, format!("{}\n", ncu.display())).unwrap();
        let got = locate_ncu(None, Some(OsStr::new("")), &file).unwrap();
        assert_eq!(got.path, ncu);
        assert_eq!(got.source, NcuSource::NcuPathFile(file.clone()));

        std::fs::write(&file, "/usr/local/cuda-none/bin/ncu\n").unwrap();
        let err = locate_ncu(None, None, &file).unwrap_err();
        assert_eq!(err.tried.len(), 3);
        assert!(err.tried[2].contains("/usr/local/cuda-none/bin/ncu"), "{err}");
    }
}
