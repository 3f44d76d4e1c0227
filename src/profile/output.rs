//! Places kprof creates for a run, checked and made so that a failure leaves nothing:
//! an explicit `--output-dir` checked before anything is built, the missing folders above
//! it created and removed again, and folders built beside their final place and renamed
//! there when complete (an import, a saved baseline).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::dir::{create_dir_all, io_failure, refuse, ProfileDir};
use super::names::MAX_COLLISION_SUFFIX;
use crate::error::{ExitCode, Failure};

/// The marker a dry run leaves in its folder: the folder is kprof's scratch, which the
/// kernel's next dry run rewrites.
const DRY_RUN_MARKER: &str = ".kprof-dry-run";

/// The one folder a kernel's dry runs write into, `<profiles_root>/<kernel>_dry-run/`:
/// made with [`DRY_RUN_MARKER`] the first time, and reused after (the previous dry run's
/// `commands.sh` and `profile-target.yaml` removed first), so that dry runs do not pile up
/// timestamped folders. A folder of that name without the marker, or a link, is not
/// kprof's: it is refused and left as it is.
pub fn dry_run_dir(profiles_root: &Path, kernel: &str) -> Result<ProfileDir, Failure> {
    create_dir_all(profiles_root)?;
    let path = profiles_root.join(format!("{}_dry-run", super::names::sanitize_kernel_name(kernel)));
    let marker = path.join(DRY_RUN_MARKER);
    match fs::create_dir(&path) {
        Ok(()) => fs::write(&marker, "a dry run's folder: the next dry run of this kernel rewrites it\n")
            .map_err(|e| io_failure("cannot write", &marker, &e))?,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let ours = fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir())
                && fs::symlink_metadata(&marker).is_ok_and(|m| m.is_file());
            if !ours {
                return Err(Failure::new(
                    ExitCode::Filesystem,
                    format!(
                        "{} is not a folder of kprof's dry runs (it has no {DRY_RUN_MARKER})",
                        path.display()
                    ),
                )
                .help("move it away, or give the dry run its own --output-dir"));
            }
            let dir = ProfileDir::at(&path);
            for old in [dir.commands_script_path(), dir.target_spec_path()] {
                match fs::remove_file(&old) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io_failure("cannot replace", &old, &e)),
                }
            }
        }
        Err(e) => return Err(io_failure("cannot create", &path, &e)),
    }
    let dir = ProfileDir::at(&path);
    create_dir_all(&dir.details_dir())?;
    Ok(dir)
}

/// Checks, before anything is built, that `dir` (an explicit `--output-dir`) can be used:
/// as a profile directory it must not exist or be an empty directory; as the folder of
/// several profiles (`several`) it must be a directory if it exists. Either way it, or the
/// nearest of its ancestors that exists, must be a directory this user may write in.
/// Nothing is created.
pub fn check_output_dir(dir: &Path, several: bool) -> Result<(), Failure> {
    match fs::symlink_metadata(dir) {
        Ok(_) if !dir.is_dir() => return Err(refuse(dir, "exists and is not a directory")),
        Ok(_) => {
            let mut entries =
                fs::read_dir(dir).map_err(|e| io_failure("cannot read output directory", dir, &e))?;
            if !several && entries.next().is_some() {
                return Err(refuse(dir, "is not empty"));
            }
            return writable(dir, dir);
        }
        Err(_) => {}
    }
    let mut ancestor = dir.parent();
    while let Some(a) = ancestor.filter(|a| !a.as_os_str().is_empty()) {
        if fs::symlink_metadata(a).is_ok() {
            if !a.is_dir() {
                return Err(refuse(dir, &format!("cannot be created: {} is not a directory", a.display())));
            }
            return writable(dir, a);
        }
        ancestor = a.parent();
    }
    writable(dir, Path::new("."))
}

/// Refuses `dir` when this user may not create entries in `existing` (itself or its
/// nearest existing ancestor).
fn writable(dir: &Path, existing: &Path) -> Result<(), Failure> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(existing.as_os_str().as_bytes()).unwrap_or_default();
        // SAFETY: `c` is a valid NUL-terminated path; access(2) only reads it.
        if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
            let why = if existing == dir {
                "is not writable".to_string()
            } else {
                format!("cannot be created: {} is not writable", existing.display())
            };
            return Err(refuse(dir, &why));
        }
    }
    Ok(())
}

/// Creates `dir` and its missing ancestors; returns those it created, outermost first, so
/// that a failed run can remove exactly them.
pub fn create_missing_dirs(dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at.filter(|d| !d.as_os_str().is_empty() && fs::symlink_metadata(d).is_err()) {
        missing.push(d.to_path_buf());
        at = d.parent();
    }
    missing.reverse();
    let mut created = Vec::new();
    for d in missing {
        match fs::create_dir(&d) {
            Ok(()) => created.push(d),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => {
                remove_created_dirs(&created);
                return Err(io_failure("cannot create directory", &d, &err));
            }
        }
    }
    Ok(created)
}

/// Removes the directories [`create_missing_dirs`] created, innermost first, each only
/// while it is empty.
pub fn remove_created_dirs(created: &[PathBuf]) {
    for d in created.iter().rev() {
        fs::remove_dir(d).ok();
    }
}

/// Creates a new hidden folder beside `final_dir` (`.<name>.<purpose>-<pid>-<n>`), in
/// which something is built before it is renamed to `final_dir`. A signal that ends the
/// process removes it; the folders of the same name and purpose that processes no longer
/// running left (a kill -9, a power cut) are removed first.
pub fn create_staging_beside(final_dir: &Path, purpose: &str) -> Result<PathBuf, Failure> {
    let name = final_dir.file_name().ok_or_else(|| refuse(final_dir, "names no directory"))?;
    let parent = final_dir.parent().unwrap_or(Path::new("."));
    let prefix = format!(".{}.{purpose}-", name.to_string_lossy());
    sweep_stale(parent, &prefix);
    for n in 1..=MAX_COLLISION_SUFFIX {
        let staging = parent.join(format!("{prefix}{}-{n}", std::process::id()));
        // Listed before it exists: a signal between the two steps must not leave it behind.
        crate::process::remove_on_signal(&staging);
        match fs::create_dir(&staging) {
            Ok(()) => return Ok(staging),
            Err(err) => {
                // Not ours to remove (this process's earlier folder of the same number).
                crate::process::keep_on_signal(&staging);
                if err.kind() == io::ErrorKind::AlreadyExists {
                    continue;
                }
                return Err(io_failure("cannot create directory", &staging, &err));
            }
        }
    }
    Err(Failure::new(ExitCode::Filesystem, format!("cannot create a staging folder in {}", parent.display())))
}

/// Removes the staging folders under `parent` named `<prefix><pid>-<n>` whose process is
/// no longer running. Best effort: what cannot be removed stays.
fn sweep_stale(parent: &Path, prefix: &str) {
    let Ok(entries) = fs::read_dir(parent) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(prefix) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else { continue };
        let gone = pid > 0
            && pid != std::process::id() as i32
            // SAFETY: kill with signal 0 sends nothing; it asks whether `pid` exists.
            && unsafe { libc::kill(pid, 0) } == -1
            && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone && e.file_type().is_ok_and(|t| t.is_dir()) {
            fs::remove_dir_all(e.path()).ok();
        }
    }
}

/// Renames the folder `staging` (built by [`create_staging_beside`]) to `final_dir`, which
/// must not exist or be an empty directory; anything else is refused and left as it is.
pub fn rename_into_place(staging: &Path, final_dir: &Path) -> Result<(), Failure> {
    crate::process::keep_on_signal(staging);
    match fs::rename(staging, final_dir) {
        Ok(()) => Ok(()),
        Err(err) if matches!(err.raw_os_error(), Some(libc::ENOTEMPTY | libc::EEXIST)) => {
            Err(refuse(final_dir, "was filled by someone else meanwhile"))
        }
        Err(err) if err.raw_os_error() == Some(libc::ENOTDIR) => {
            Err(refuse(final_dir, "exists and is not a directory"))
        }
        Err(err) => Err(io_failure("cannot rename the new profile directory to", final_dir, &err)),
    }
}

/// Creates the folder a baseline's kernel is written in before it is renamed into place:
/// a hidden sibling of [`super::root::baseline_kernel_dir`] inside the same baseline
/// (`.<kernel>.saving-<pid>-<n>`), new, never one that exists.
pub fn create_baseline_staging(profiles_root: &Path, name: &str, kernel: &str) -> Result<PathBuf, Failure> {
    let parent = super::root::baselines_root(profiles_root).join(name);
    create_dir_all(&parent)?;
    let kernel = super::names::sanitize_kernel_name(kernel);
    for n in 1..=MAX_COLLISION_SUFFIX {
        let staging = parent.join(format!(".{kernel}.saving-{}-{n}", std::process::id()));
        match fs::create_dir(&staging) {
            Ok(()) => return Ok(staging),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(io_failure("cannot create directory", &staging, &err)),
        }
    }
    Err(Failure::new(ExitCode::Filesystem, format!("cannot create a staging folder in {}", parent.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_dirs_are_checked_without_creating_anything() {
        let tmp = tempfile::tempdir().unwrap();
        let used = tmp.path().join("used");
        fs::create_dir(&used).unwrap();
        fs::write(used.join("notes.txt"), "x").unwrap();
        assert!(check_output_dir(&tmp.path().join("new/deeper"), false).is_ok());
        assert!(!tmp.path().join("new").exists());
        assert!(check_output_dir(&used, true).is_ok(), "several profiles go into an existing folder");
        let err = check_output_dir(&used, false).unwrap_err();
        assert_eq!(err.code, ExitCode::Filesystem);
        assert!(err.message.contains("is not empty"), "{err}");
        let file = used.join("notes.txt");
        assert!(check_output_dir(&file, true).unwrap_err().message.contains("is not a directory"));
        let under = check_output_dir(&file.join("a/b"), false).unwrap_err();
        assert!(under.message.contains(&format!("{} is not a directory", file.display())), "{under}");
    }
}
