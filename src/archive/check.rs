//! The first pass over an archive: every entry and the plan checked, nothing written.
//!
//! An entry that could reach outside the unpacked folder (a symbolic or hard link, a name
//! with `..` or a leading `/`, a device), a sparse entry in either of its forms (the old
//! GNU type `S`, or `GNU.sparse.*` records in a PAX header: kprof never writes them, and a
//! 1.5 KB one unpacks to gigabytes of zeros), a name outside `bin/`, `workspace/` and the
//! plan, two entries of one name, a file where another entry needs a folder, a file the
//! plan does not list, and a plan that kprof would not write (another schema, working
//! directories or executables outside the archive, values its command line refuses) are
//! refused with a message naming them (exit 3). What passes is the list of entries the
//! second pass may create, with their sizes: the unpacked total is the sum of what the
//! plan lists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::entry::{entry_path, refuse};
use super::{listed, ArchiveManifest, BIN, DEPS, MANIFEST, SCHEMA_VERSION, WORKSPACE};
use crate::error::{ExitCode, Failure};
use crate::model::kinds::LaunchWindow;
use crate::plan::{KernelPlan, PlannedTarget};

/// The largest `kprof-archive.json` read: a plan is a few KiB.
pub const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// What the first pass over an archive found: the plan, each kernel with its working
/// directory relative to the unpacked workspace, each executable's file relative to the
/// unpacked archive, and every entry that may be unpacked.
#[derive(Debug)]
pub struct CheckedArchive {
    /// The plan.
    pub manifest: ArchiveManifest,
    /// Each kernel with its working directory relative to the unpacked workspace.
    pub kernels: Vec<(KernelPlan, PathBuf)>,
    /// Each executable's file relative to the unpacked archive.
    pub executables: Vec<PathBuf>,
    /// The tracer library's file relative to the unpacked archive, when one is packed.
    pub tracer: Option<PathBuf>,
    /// Every entry that may be unpacked.
    pub entries: Entries,
}

/// The entries of an archive by relative path: a file's size, or `None` for a folder
/// (given as an entry, or holding one).
pub type Entries = BTreeMap<PathBuf, Option<u64>>;

/// Opens the archive, refusing a path that is not a regular file: a pipe (`/dev/stdin`)
/// can be read only once, and an archive is read twice (checked, then unpacked); a named
/// pipe nobody writes would wait forever, and a device never ends.
pub fn open(archive: &Path) -> Result<std::fs::File, Failure> {
    match crate::profile::fs::open_regular(archive) {
        Ok(Ok(file)) => Ok(file),
        Ok(Err(what)) => Err(Failure::new(
            ExitCode::Config,
            format!(
                "{} is not a regular file ({what}): an archive is read twice, once to check every entry \
                 and once to unpack it",
                archive.display()
            ),
        )
        .help("save it to a file first (e.g. `cat > k.tar`), then pass --archive k.tar")),
        Err(e) => Err(Failure::new(
            ExitCode::Filesystem,
            format!("could not open the archive {}: {e}", archive.display()),
        )
        .help("pass the tar file `cargo kprof archive -o FILE` wrote")),
    }
}

/// A kernel's working directory relative to the packed workspace root, when it lies under it.
pub(super) fn cwd_under(root: &Path, cwd: &Path) -> Option<PathBuf> {
    let r = cwd.strip_prefix(root).ok()?;
    entry_path(r).ok().or_else(|| r.as_os_str().is_empty().then(PathBuf::new))
}

/// The first pass: every entry checked, the plan read and checked against the entries.
/// Nothing is written; every relative path it returns has only plain components.
pub fn check(archive: &Path) -> Result<CheckedArchive, Failure> {
    let (entries, text) = check_entries(archive)?;
    let (manifest, kernels) = check_plan(archive, &text)?;
    let files: BTreeSet<PathBuf> =
        entries.iter().filter(|(_, size)| size.is_some()).map(|(p, _)| p.clone()).collect();
    listed::check_listed_files(archive, &manifest, &files)?;
    listed::check_library_names(archive, &manifest)?;
    let executables = listed::check_executables(archive, &manifest, &files)?;
    let tracer = listed::check_tracer(archive, &manifest, &files)?;
    listed::check_all_listed(archive, &manifest, &files)?;
    Ok(CheckedArchive { manifest, kernels, executables, tracer, entries })
}

/// A tar stream that cannot be read.
pub(super) fn unreadable(archive: &Path, e: &std::io::Error) -> Failure {
    // The tar crate quotes the damaged bytes: keep control characters off the terminal.
    let e = crate::process::shell_comment(&e.to_string());
    Failure::new(ExitCode::Config, format!("{} is not a readable tar archive: {e}", archive.display()))
        .help("pass the tar file `cargo kprof archive -o FILE` wrote, complete and unchanged")
}

/// Checks every entry's name, type and place among the others; returns the entries and
/// the plan's bytes.
fn check_entries(archive: &Path) -> Result<(Entries, Vec<u8>), Failure> {
    let mut tar = tar::Archive::new(open(archive)?);
    let mut entries = Entries::new();
    let mut text = None;
    for entry in tar.entries().map_err(|e| unreadable(archive, &e))? {
        let mut entry = entry.map_err(|e| unreadable(archive, &e))?;
        let (rel, kind, shown) = check_entry(archive, &mut entry)?;
        let size = (kind != tar::EntryType::Directory).then(|| entry.size());
        place(archive, &mut entries, &rel, size, &shown)?;
        if rel.as_os_str() == MANIFEST {
            text = Some(read_manifest_entry(archive, &mut entry)?);
        }
    }
    let Some(text) = text else {
        return Err(refuse(archive, format_args!("no `{MANIFEST}` entry: not a cargo kprof archive")));
    };
    Ok((entries, text))
}

/// Adds one entry to `entries`, refusing a second entry of a file's name, a file where a
/// folder is (given, or holding another entry), and an entry under a file.
fn place(
    archive: &Path,
    entries: &mut Entries,
    rel: &Path,
    size: Option<u64>,
    shown: &str,
) -> Result<(), Failure> {
    let clash = |what: String| refuse(archive, format_args!("entry `{shown}` {what}"));
    match (entries.get(rel), size) {
        (Some(None), None) => return Ok(()),
        (Some(Some(_)), Some(_)) => return Err(clash("appears twice".into())),
        (Some(Some(_)), None) => {
            return Err(clash("is a folder where the archive has a file of that name".into()))
        }
        (Some(None), Some(_)) => {
            let under =
                entries.range(rel.to_path_buf()..).map(|(p, _)| p).find(|p| *p != rel && p.starts_with(rel));
            let by = under
                .map(|p| format!(" (`{}` lies in it)", crate::process::shell_comment(&p.to_string_lossy())))
                .unwrap_or_default();
            return Err(clash(format!("is a file where the archive has a folder of that name{by}")));
        }
        (None, _) => {}
    }
    for above in rel.ancestors().skip(1).filter(|a| !a.as_os_str().is_empty()) {
        match entries.get(above) {
            Some(Some(_)) => {
                return Err(clash(format!(
                    "lies under `{}`, which is a file in the archive",
                    crate::process::shell_comment(&above.to_string_lossy())
                )))
            }
            Some(None) => break,
            None => {
                entries.insert(above.to_path_buf(), None);
            }
        }
    }
    entries.insert(rel.to_path_buf(), size);
    Ok(())
}

/// One entry's relative path, type and name as shown in messages; refused when its name
/// could reach outside the unpacked folder, it is not a plain file or folder (a sparse
/// file is not), or it lies outside the plan, `bin/` and `workspace/` (less
/// `workspace/profile`).
fn check_entry<R: std::io::Read>(
    archive: &Path,
    entry: &mut tar::Entry<'_, R>,
) -> Result<(PathBuf, tar::EntryType, String), Failure> {
    let shown = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
    let shown = crate::process::shell_comment(&shown);
    let name = entry.path().map_err(|e| refuse(archive, format_args!("entry `{shown}`: {e}")))?;
    let rel = entry_path(&name).map_err(|why| refuse(archive, format_args!("entry `{shown}` {why}")))?;
    let kind = entry.header().entry_type();
    let what = match kind {
        tar::EntryType::Regular | tar::EntryType::Continuous if is_pax_sparse(entry) => {
            Some("is a sparse file (`GNU.sparse` records in its PAX header), which kprof never writes")
        }
        tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::Directory => None,
        tar::EntryType::GNUSparse => Some("is a GNU sparse file (type `S`), which kprof never writes"),
        tar::EntryType::Symlink => Some("is a symbolic link"),
        tar::EntryType::Link => Some("is a hard link"),
        _ => Some("is neither a file nor a folder"),
    };
    if let Some(what) = what {
        let to = entry.link_name_bytes().map(|t| String::from_utf8_lossy(&t).into_owned());
        let to = to.map(|t| format!(" (to `{}`)", crate::process::shell_comment(&t))).unwrap_or_default();
        return Err(refuse(
            archive,
            format_args!("entry `{shown}` {what}{to}; an archive holds only plain files and folders"),
        ));
    }
    let top = rel.components().next().map(|c| c.as_os_str().to_string_lossy().into_owned());
    let allowed = match top.as_deref() {
        Some(MANIFEST) => rel.as_os_str() == MANIFEST && kind != tar::EntryType::Directory,
        Some(BIN) => true,
        // Each file there must be one the plan lists (`check_all_listed`).
        Some(DEPS) => true,
        Some(WORKSPACE) => {
            rel.components().nth(1).is_none_or(|c| c.as_os_str() != crate::profile::root::PROFILES_DIR)
        }
        _ => false,
    };
    if !allowed {
        return Err(refuse(
            archive,
            format_args!(
                "entry `{shown}` is not part of a cargo kprof archive (only `{MANIFEST}`, `{BIN}/`, `{DEPS}/` \
                 and `{WORKSPACE}/` without `{WORKSPACE}/profile`)"
            ),
        ));
    }
    Ok((rel, kind, shown))
}

/// Whether a PAX header describes the entry as sparse (any `GNU.sparse.*` record: formats
/// 0.0, 0.1 and 1.0). The tar crate hands such an entry over as a plain file holding the
/// sparse map and the data; unpacked, it would not be the file that was packed.
fn is_pax_sparse<R: std::io::Read>(entry: &mut tar::Entry<'_, R>) -> bool {
    match entry.pax_extensions() {
        Ok(Some(records)) => records.flatten().any(|r| r.key_bytes().starts_with(b"GNU.sparse.")),
        Ok(None) => false,
        // A PAX header that cannot be read is no file kprof wrote.
        Err(_) => true,
    }
}

/// The plan entry's bytes, refused above [`MAX_MANIFEST_BYTES`].
fn read_manifest_entry<R: std::io::Read>(
    archive: &Path,
    entry: &mut tar::Entry<'_, R>,
) -> Result<Vec<u8>, Failure> {
    if entry.size() > MAX_MANIFEST_BYTES {
        return Err(refuse(
            archive,
            format_args!(
                "entry `{MANIFEST}` is {} bytes; a cargo kprof plan is a few KiB (at most {MAX_MANIFEST_BYTES})",
                entry.size()
            ),
        ));
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(entry, &mut bytes).map_err(|e| unreadable(archive, &e))?;
    Ok(bytes)
}

/// Each kernel of the plan with its working directory relative to the packed workspace;
/// refused for a bad name or env key, a value the command line refuses (a launch count of
/// 0, a case that is no regex, a tolerance that is not a percentage), a working directory
/// outside the workspace, or a cargo target without an executable.
fn check_kernels(archive: &Path, manifest: &ArchiveManifest) -> Result<Vec<(KernelPlan, PathBuf)>, Failure> {
    let mut kernels = Vec::new();
    for k in &manifest.kernels {
        let bad = |what: String| refuse(archive, format_args!("`{MANIFEST}`, kernel `{}`: {what}", k.name));
        crate::model::names::check_name(&k.name)
            .map_err(|p| refuse(archive, format_args!("`{MANIFEST}`: the kernel name {:?} {p}", k.name)))?;
        if let Some(key) = k.env.keys().find(|key| !crate::model::names::is_env_key(key)) {
            return Err(bad(format!("env key `{key}` is not a valid environment variable name")));
        }
        check_values(k).map_err(bad)?;
        let rel = cwd_under(&manifest.workspace_root, &k.cwd).ok_or_else(|| {
            bad(format!(
                "cwd `{}` is outside the packed workspace `{}`",
                k.cwd.display(),
                manifest.workspace_root.display()
            ))
        })?;
        if let PlannedTarget::Cargo(t) = &k.target {
            if !manifest.executables.iter().any(|(bt, _)| bt == t) {
                return Err(bad(format!("{} `{}` has no executable in the archive", t.kind, t.name)));
            }
        }
        kernels.push((k.clone(), rel));
    }
    Ok(kernels)
}

/// The checks the manifests and the command line make on a kernel's values, made again
/// on an archived plan (which anyone may have edited): at least one launch, a `case` that
/// is a regex, a tolerance that is a percentage. A regex filter is checked when the plan
/// is read.
fn check_values(k: &KernelPlan) -> Result<(), String> {
    let (LaunchWindow::HarnessRange { launch_count } | LaunchWindow::SkipCount { launch_count, .. }) =
        k.window;
    if launch_count == 0 {
        return Err(
            "`window.launch_count` is 0; a profile needs at least one launch (as --launch-count)".into()
        );
    }
    if let Some(case) = &k.case {
        if let Err(e) = regex::Regex::new(case) {
            let e = crate::process::shell_comment(&e.to_string());
            return Err(format!(
                "`case` `{}` is not a valid regex: {e}",
                crate::process::shell_comment(case)
            ));
        }
    }
    if !(k.tolerance_pct.is_finite() && k.tolerance_pct >= 0.0) {
        return Err(format!("`tolerance_pct` {} is not a percentage of 0 or more", k.tolerance_pct));
    }
    Ok(())
}

/// The checks a plan gets on its own, before it is held against the archive's entries:
/// `text` is a `kprof-archive.json`, `archive` only names it in messages. Returns the plan
/// and each kernel with its working directory relative to the packed workspace.
pub fn check_plan(
    archive: &Path,
    text: &[u8],
) -> Result<(ArchiveManifest, Vec<(KernelPlan, PathBuf)>), Failure> {
    let manifest = read_manifest(archive, text)?;
    if manifest.kernels.is_empty() {
        return Err(refuse(archive, format_args!("`{MANIFEST}` holds no kernel to profile")));
    }
    let kernels = check_kernels(archive, &manifest)?;
    Ok((manifest, kernels))
}

/// `kprof-archive.json`: JSON of schema version 1 or 2 (fields added in 2 default to
/// empty), with an absolute workspace root. A newer schema is refused, naming the version.
fn read_manifest(archive: &Path, text: &[u8]) -> Result<ArchiveManifest, Failure> {
    let invalid = |e: &dyn std::fmt::Display| refuse(archive, format_args!("invalid `{MANIFEST}`: {e}"));
    let value: serde_json::Value = serde_json::from_slice(text).map_err(|e| invalid(&e))?;
    match value.get("schema_version").and_then(serde_json::Value::as_u64) {
        Some(v) if (1..=u64::from(SCHEMA_VERSION)).contains(&v) => {}
        Some(v) if v > u64::from(SCHEMA_VERSION) => {
            let by = value
                .get("kprof_version")
                .and_then(serde_json::Value::as_str)
                .map(|w| format!(" (written by cargo-kprof {})", crate::process::shell_comment(w)))
                .unwrap_or_default();
            return Err(Failure::new(
                ExitCode::Config,
                format!(
                    "{}: `{MANIFEST}` has schema_version {v}{by}, newer than this cargo-kprof {} reads \
                     (1 to {SCHEMA_VERSION})",
                    archive.display(),
                    env!("CARGO_PKG_VERSION")
                ),
            )
            .help("upgrade cargo-kprof on this machine to the version that wrote the archive, or write it with this one"));
        }
        Some(v) => {
            return Err(refuse(
                archive,
                format_args!(
                    "`{MANIFEST}` has schema_version {v}; this cargo-kprof reads schema_version 1 to {SCHEMA_VERSION}"
                ),
            ))
        }
        None => return Err(invalid(&format_args!("no schema_version (1 to {SCHEMA_VERSION})"))),
    }
    let manifest: ArchiveManifest = serde_json::from_value(value).map_err(|e| invalid(&e))?;
    if !manifest.workspace_root.is_absolute() {
        return Err(invalid(&format_args!(
            "workspace_root `{}` is not an absolute path",
            manifest.workspace_root.display()
        )));
    }
    Ok(manifest)
}
