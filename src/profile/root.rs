//! The profiles root, `<workspace root>/profile/`, and what it holds beside the profiles:
//! `ncu_path` (created once, never rewritten: the user edits it to match their sudoers
//! rule), saved baselines, the index of profiles and the harness's PTX cache.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::dir::{create_dir_all, io_failure};
use super::names::sanitize_kernel_name;
use crate::error::{ExitCode, Failure};

/// The file under the profiles root naming the ncu binary that sudo mode runs.
pub const NCU_PATH_FILE: &str = "ncu_path";

/// What [`ensure_ncu_path`] writes when the file is absent.
pub const DEFAULT_NCU_PATH: &str = "/usr/local/cuda/bin/ncu";

/// The folder of saved baselines under the profiles root.
const BASELINES_DIR: &str = "baselines";

/// `<profiles root>/baselines`: saved baselines, `baselines/NAME/<kernel>/`.
pub fn baselines_root(profiles_root: &Path) -> PathBuf {
    profiles_root.join(BASELINES_DIR)
}

/// `<profiles root>/baselines/NAME/<kernel>/`: kernel `kernel` of the saved baseline
/// `name`. `name` is a checked baseline name (`compare::baseline::check_name`: a single
/// plain path component); the kernel name, which comes from the data, goes through the
/// sanitiser.
pub fn baseline_kernel_dir(profiles_root: &Path, name: &str, kernel: &str) -> PathBuf {
    baselines_root(profiles_root).join(name).join(sanitize_kernel_name(kernel))
}

/// `<profiles root>/.ptx-cache-<pid>`: NVRTC's output shared by the harness runs of one
/// invocation (`KPROF_PTX_CACHE`, see `kprof_harness::ptx_cache`), hidden beside the
/// profiles like the batches' folders, and removed when the invocation ends. The process
/// id keeps two invocations on one profiles root apart.
pub fn ptx_cache_dir(profiles_root: &Path) -> PathBuf {
    profiles_root.join(format!(".ptx-cache-{}", std::process::id()))
}

/// `<profiles root>/index.json`: every analysed profile, one row each.
pub fn index_json_path(profiles_root: &Path) -> PathBuf {
    profiles_root.join("index.json")
}

/// `<profiles root>/index.md`: the same as a table.
pub fn index_md_path(profiles_root: &Path) -> PathBuf {
    profiles_root.join("index.md")
}

/// What a saved baseline keeps of a profile, relative to the profile directory: what a
/// comparison reads. Raw CSVs stay in the profile.
pub const BASELINE_FILES: &[&str] = &[
    "profile-target.yaml",
    "run_manifest.yaml",
    "details/00_environment.txt",
    "details/metrics_summary.json",
    "details/bottleneck_decision.json",
    "details/source_hotspots.csv",
    "details/timing.json",
];

/// The name of the profiles root under a workspace root.
pub const PROFILES_DIR: &str = "profile";

/// The profiles root of a workspace: `<workspace root>/profile`.
pub fn profiles_root(workspace_root: &Path) -> PathBuf {
    workspace_root.join(PROFILES_DIR)
}

/// Creates the profiles root (`<workspace root>/profile`) when it is missing. Returns
/// whether this call created it, so that the run that does can say so once: the folder
/// sits in the user's source tree. An existing directory is left as it is.
pub fn create_profiles_root(profiles_root: &Path) -> Result<bool, Failure> {
    match fs::create_dir(profiles_root) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists && profiles_root.is_dir() => Ok(false),
        Err(err) if err.kind() == io::ErrorKind::NotFound => create_dir_all(profiles_root).map(|()| true),
        Err(err) => Err(io_failure("cannot create directory", profiles_root, &err)),
    }
}

/// What a run says when it has created the profiles root: what the folder holds, and how
/// to keep it out of version control, or keep only the saved baselines a gate reads.
pub fn profiles_root_created_note(profiles_root: &Path) -> String {
    format!(
        "created {}: it holds this workspace's local profiles (and `{PROFILES_DIR}/{NCU_PATH_FILE}`); \
         add `{PROFILES_DIR}/` to .gitignore, or, if you gate on saved baselines, commit only \
         `{PROFILES_DIR}/{BASELINES_DIR}/` (.gitignore: `/{PROFILES_DIR}/*` and `!/{PROFILES_DIR}/{BASELINES_DIR}/`)",
        profiles_root.display()
    )
}

/// Creates `<profiles_root>/ncu_path` when it is absent, naming `found` (the ncu this run
/// located), else [`DEFAULT_NCU_PATH`], and leaves an existing file alone. Returns the
/// file's path. Called only once the machine passed its checks (or for a dry run), so that
/// a run that cannot profile writes nothing.
pub fn ensure_ncu_path(profiles_root: &Path, found: Option<&Path>) -> Result<PathBuf, Failure> {
    create_dir_all(profiles_root)?;
    let file = profiles_root.join(NCU_PATH_FILE);
    let named = found.map(|p| p.display().to_string()).unwrap_or_else(|| DEFAULT_NCU_PATH.to_string());
    match fs::OpenOptions::new().write(true).create_new(true).open(&file) {
        Ok(mut handle) => {
            handle
                .write_all(format!("{named}\n").as_bytes())
                .map_err(|e| io_failure("cannot write", &file, &e))?;
            Ok(file)
        }
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(file),
        Err(err) => Err(io_failure("cannot create", &file, &err)),
    }
}

/// The ncu binary named in `<profiles_root>/ncu_path`: its one non-blank line, trimmed.
pub fn read_ncu_path(profiles_root: &Path) -> Result<PathBuf, Failure> {
    let file = profiles_root.join(NCU_PATH_FILE);
    let text = fs::read_to_string(&file).map_err(|e| {
        io_failure("cannot read", &file, &e).help(format!(
            "sudo mode runs the ncu named in this file; \
             create it: printf '%s\\n' {DEFAULT_NCU_PATH} > {}",
            file.display()
        ))
    })?;
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    match lines.as_slice() {
        [path] => Ok(PathBuf::from(path)),
        found => {
            let problem =
                if found.is_empty() { "is empty".to_string() } else { format!("has {} lines", found.len()) };
            Err(Failure::new(
                ExitCode::Config,
                format!("{} {problem}; it must hold exactly one path to ncu", file.display()),
            )
            .help(format!(
                "write the path your sudoers NOPASSWD rule allows: \
                 printf '%s\\n' /absolute/path/to/ncu > {}",
                file.display()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ncu_path_names_the_ncu_the_run_found() {
        let tmp = tempfile::tempdir().unwrap();
        let root = profiles_root(tmp.path());
        ensure_ncu_path(&root, Some(Path::new("/opt/nsight/ncu"))).unwrap();
        assert_eq!(read_ncu_path(&root).unwrap(), Path::new("/opt/nsight/ncu"));
    }

    #[test]
    fn ncu_path_is_created_once_and_never_overwritten() {
        let tmp = tempfile::tempdir().unwrap();
        let root = profiles_root(tmp.path());
        let file = ensure_ncu_path(&root, None).unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "/usr/local/cuda/bin/ncu\n");
        assert_eq!(read_ncu_path(&root).unwrap(), Path::new(DEFAULT_NCU_PATH));

        fs::write(&file, "  /opt/cuda/bin/ncu  \n\n").unwrap();
        ensure_ncu_path(&root, Some(Path::new("/elsewhere/ncu"))).unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "  /opt/cuda/bin/ncu  \n\n");
        assert_eq!(read_ncu_path(&root).unwrap(), Path::new("/opt/cuda/bin/ncu"));

        fs::write(&file, "\n").unwrap();
        let err = read_ncu_path(&root).unwrap_err();
        assert_eq!(err.code, ExitCode::Config);
        assert!(err.message.contains("ncu_path is empty"), "{err}");
        fs::write(&file, "/a/ncu\n/b/ncu\n").unwrap();
        assert!(read_ncu_path(&root).unwrap_err().message.contains("ncu_path has 2 lines"));
        let missing = read_ncu_path(&tmp.path().join("nowhere")).unwrap_err();
        assert!(
            missing.message.starts_with("cannot read") && missing.help[0].contains("printf"),
            "{missing}"
        );
    }

    #[test]
    fn the_profiles_root_is_created_once_and_says_so() {
        let tmp = tempfile::tempdir().unwrap();
        let root = profiles_root(tmp.path());
        assert!(create_profiles_root(&root).unwrap());
        assert!(!create_profiles_root(&root).unwrap());
        let nested = tmp.path().join("a/b/profile");
        assert!(create_profiles_root(&nested).unwrap() && nested.is_dir());
        let file = tmp.path().join("plain");
        fs::write(&file, "x").unwrap();
        assert_eq!(create_profiles_root(&file).unwrap_err().code, ExitCode::Filesystem);
        let note = profiles_root_created_note(&root);
        assert!(note.contains(&format!("created {}", root.display())), "{note}");
        assert!(
            note.contains("add `profile/` to .gitignore") && note.contains("`profile/baselines/`"),
            "{note}"
        );
    }
}
