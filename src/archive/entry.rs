//! An archive entry's name as a relative path, and the refusal that names the archive:
//! what the first pass ([`super::check`]), the listed-files checks ([`super::listed`]) and
//! the unpacking share.

use std::path::{Component, Path, PathBuf};

use crate::error::{ExitCode, Failure};

/// A refusal of `archive`, naming what in it is wrong (exit 3).
pub(super) fn refuse(archive: &Path, what: impl std::fmt::Display) -> Failure {
    Failure::new(ExitCode::Config, format!("{}: {what}", archive.display())).help(
        "use an archive written by `cargo kprof archive -o FILE`, as it was written; \
         archives from elsewhere are refused when they could write outside --workspace-remap",
    )
}

/// An entry's name as a relative path of plain components, or why it is refused.
pub(super) fn entry_path(name: &Path) -> Result<PathBuf, &'static str> {
    let mut out = PathBuf::new();
    for c in name.components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err("has a `..` component"),
            Component::RootDir | Component::Prefix(_) => return Err("is an absolute path"),
        }
    }
    if out.as_os_str().is_empty() {
        return Err("has an empty name");
    }
    Ok(out)
}
