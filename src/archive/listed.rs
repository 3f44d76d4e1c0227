//! What an archive's plan lists, held against its entries: every listed file packed,
//! every packed file listed, each executable under `bin/`, library names that cannot
//! reach a file by accident (the second half of [`super::check`]'s first pass).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::entry::{entry_path, refuse};
use super::{ArchiveManifest, BIN, DEPS, MANIFEST, WORKSPACE};
use crate::error::Failure;

/// Refuses a plan whose `included` or `build_outputs` name a file the archive lacks.
pub(super) fn check_listed_files(
    archive: &Path,
    manifest: &ArchiveManifest,
    files: &BTreeSet<PathBuf>,
) -> Result<(), Failure> {
    for (list, paths) in [("included", &manifest.included), ("build_outputs", &manifest.build_outputs)] {
        for p in paths {
            let packed = entry_path(p).ok().is_some_and(|r| files.contains(&Path::new(WORKSPACE).join(r)));
            if !packed {
                return Err(refuse(
                    archive,
                    format_args!(
                        "`{MANIFEST}` lists `{}` in `{list}`, which is not a file under `{WORKSPACE}/` of the archive",
                        crate::process::shell_comment(&p.to_string_lossy())
                    ),
                ));
            }
        }
    }
    for d in &manifest.dependency_sources {
        if !entry_path(&d.entry).ok().is_some_and(|r| files.contains(&Path::new(DEPS).join(r))) {
            return Err(refuse(
                archive,
                format_args!(
                    "`{MANIFEST}` lists the dependency source `{}`, which is not a file under `{DEPS}/` of the archive",
                    crate::process::shell_comment(&d.entry.to_string_lossy())
                ),
            ));
        }
    }
    Ok(())
}

/// Refuses a library name that is neither a plain file name nor an absolute path
/// ([`super::libs::odd_name`]).
pub(super) fn check_library_names(archive: &Path, manifest: &ArchiveManifest) -> Result<(), Failure> {
    let Some((name, executable)) = super::libs::odd_name(manifest.libraries.iter().flatten()) else {
        return Ok(());
    };
    Err(refuse(
        archive,
        format_args!(
            "`{MANIFEST}` names the library `{}` of `{}`, which is neither a file name nor an absolute path",
            crate::process::shell_comment(name),
            crate::process::shell_comment(executable)
        ),
    ))
}

/// Refuses a file the plan does not list: every file of an archive kprof writes is its
/// plan, an executable, or a source, included file or build output under `workspace/`,
/// so what is unpacked is at most what the plan lists.
pub(super) fn check_all_listed(
    archive: &Path,
    manifest: &ArchiveManifest,
    files: &BTreeSet<PathBuf>,
) -> Result<(), Failure> {
    let workspace = Path::new(WORKSPACE);
    let mut listed: BTreeSet<PathBuf> = [PathBuf::from(MANIFEST)].into();
    listed.extend(manifest.executables.iter().filter_map(|(_, f)| entry_path(Path::new(f)).ok()));
    listed.extend(manifest.tracer.iter().filter_map(|f| entry_path(Path::new(f)).ok()));
    for p in manifest.sources.iter().chain(&manifest.included).chain(&manifest.build_outputs) {
        listed.extend(entry_path(p).ok().map(|r| workspace.join(r)));
    }
    for d in &manifest.dependency_sources {
        listed.extend(entry_path(&d.entry).ok().map(|r| Path::new(DEPS).join(r)));
    }
    match files.iter().find(|f| !listed.contains(*f)) {
        Some(f) => Err(refuse(
            archive,
            format_args!(
                "entry `{}` is not listed in `{MANIFEST}` (as an executable, the tracer, a source, included \
                 file, build output or dependency source): an archive unpacks only what its plan lists",
                crate::process::shell_comment(&f.to_string_lossy())
            ),
        )),
        None => Ok(()),
    }
}

/// Each executable's file relative to the unpacked archive: a packed file under `bin/`.
pub(super) fn check_executables(
    archive: &Path,
    manifest: &ArchiveManifest,
    files: &BTreeSet<PathBuf>,
) -> Result<Vec<PathBuf>, Failure> {
    let mut exes = Vec::new();
    for (t, file) in &manifest.executables {
        let rel = entry_path(Path::new(file))
            .ok()
            .filter(|r| r.starts_with(BIN) && files.contains(r))
            .ok_or_else(|| {
                refuse(
                    archive,
                    format_args!(
                        "`{MANIFEST}`: the executable of {} `{}` is `{}`, not a file under `{BIN}/` of the archive",
                        t.kind,
                        t.name,
                        crate::process::shell_comment(file)
                    ),
                )
            })?;
        exes.push(rel);
    }
    Ok(exes)
}

/// The tracer library's file relative to the unpacked archive, when the plan lists one:
/// exactly the packed file [`super::TRACER_ENTRY`] names.
pub(super) fn check_tracer(
    archive: &Path,
    manifest: &ArchiveManifest,
    files: &BTreeSet<PathBuf>,
) -> Result<Option<PathBuf>, Failure> {
    let Some(file) = &manifest.tracer else { return Ok(None) };
    let rel =
        entry_path(Path::new(file)).ok().filter(|r| r == Path::new(super::TRACER_ENTRY) && files.contains(r));
    rel.map(Some).ok_or_else(|| {
        refuse(
            archive,
            format_args!(
                "`{MANIFEST}`: the tracer is `{}`, not the packed file `{}`",
                crate::process::shell_comment(file),
                super::TRACER_ENTRY
            ),
        )
    })
}
