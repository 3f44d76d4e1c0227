//! Build here, profile there: `cargo kprof archive` and `cargo-kprof kprof run --archive`.
//!
//! GPU machines often have no Rust toolchain. An archive is a plain tar file holding the
//! built executables (`bin/`), the workspace's CUDA sources (`workspace/`, so hotspots can
//! show source lines), and the resolved plan (`kprof-archive.json`), as cargo-nextest's
//! archives do for tests. Unpacking rewrites every path from the build machine's
//! workspace root to the unpacked one (`--workspace-remap`); the profile then runs the
//! same collection and analysis as `cargo kprof`, without cargo.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::build::{BuildOutput, BuildTarget, BuiltExecutable};
use crate::error::{ExitCode, Failure};
use crate::plan::{KernelPlan, Plan, PlannedTarget};

pub mod adjust;
pub mod contents;
pub mod emit;
pub mod pair;
pub use contents::Contents;

/// The plan's file inside an archive.
pub const MANIFEST: &str = "kprof-archive.json";

/// The manifest's schema this cargo-kprof writes; it reads every version up to it.
pub const SCHEMA_VERSION: u32 = 2;

/// `kprof-archive.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ArchiveManifest {
    /// [`SCHEMA_VERSION`] when written; 1 for archives without `included` and `build_outputs`.
    pub schema_version: u32,
    /// The cargo-kprof that wrote it.
    pub kprof_version: String,
    /// The workspace root on the build machine; paths under it are remapped.
    pub workspace_root: PathBuf,
    /// The kernels, as resolved on the build machine.
    pub kernels: Vec<KernelPlan>,
    /// Each built target and its file in the archive (`bin/<name>`).
    pub executables: Vec<(BuildTarget, String)>,
    /// Packed sources, relative to the workspace root.
    pub sources: Vec<PathBuf>,
    /// Files the `include` globs matched, relative to the workspace root (schema 2).
    #[serde(default)]
    pub included: Vec<PathBuf>,
    /// Build-script outputs (`.ptx`, `.cubin`, `.fatbin` from `OUT_DIR`), relative to the
    /// workspace root (schema 2).
    #[serde(default)]
    pub build_outputs: Vec<PathBuf>,
}

/// Writes the archive: the executables of `built`, the files of `contents` and the plan.
/// Refuses to overwrite an existing file, and removes the file it created when packing fails.
pub fn write(
    plan: &Plan,
    built: Option<&BuildOutput>,
    contents: &Contents,
    out: &Path,
) -> Result<ArchiveManifest> {
    let file = std::fs::OpenOptions::new().write(true).create_new(true).open(out).map_err(|e| {
        Failure::new(ExitCode::Filesystem, format!("could not create the archive {}: {e}", out.display()))
            .help("archives are never overwritten: pick a new file name")
    })?;
    let written = pack(plan, built, contents, file);
    if written.is_err() {
        // Only the file this call created: a half-written archive would block the retry.
        std::fs::remove_file(out).ok();
    }
    written
}

fn pack(
    plan: &Plan,
    built: Option<&BuildOutput>,
    contents: &Contents,
    file: std::fs::File,
) -> Result<ArchiveManifest> {
    let mut tar = builder(file);
    let mut executables = Vec::new();
    for k in &plan.kernels {
        if let PlannedTarget::Cargo(t) = &k.target {
            if executables.iter().any(|(bt, _): &(BuildTarget, String)| bt == t) {
                continue;
            }
            let exe = built
                .and_then(|b| b.executable(t))
                .with_context(|| format!("{} `{}` was not built", t.kind, t.name))?;
            let name = format!("bin/{}", exe.file_name().and_then(|n| n.to_str()).unwrap_or(&t.name));
            tar.append_path_with_name(exe, &name)
                .with_context(|| format!("could not pack {}", exe.display()))?;
            executables.push((t.clone(), name));
        }
    }
    for rel in contents.files() {
        tar.append_path_with_name(plan.workspace_root.join(rel), Path::new(WORKSPACE).join(rel))
            .with_context(|| format!("could not pack {}", rel.display()))?;
    }
    let manifest = ArchiveManifest {
        schema_version: SCHEMA_VERSION,
        kprof_version: env!("CARGO_PKG_VERSION").into(),
        workspace_root: plan.workspace_root.clone(),
        kernels: plan.kernels.clone(),
        executables,
        sources: contents.sources.clone(),
        included: contents.included.clone(),
        build_outputs: contents.build_outputs.clone(),
    };
    let json = serde_json::to_vec_pretty(&manifest)?;
    let mut header = tar::Header::new_gnu();
    header.set_size(json.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, MANIFEST, json.as_slice())?;
    tar.into_inner()?.sync_all().ok();
    Ok(manifest)
}

/// A tar writer that stores every file as a plain file. Linkers leave holes in large
/// executables; the tar crate would store those as GNU sparse entries, which other tools
/// handle unevenly: an archive of plain entries unpacks the same everywhere.
fn builder<W: std::io::Write>(out: W) -> tar::Builder<W> {
    let mut tar = tar::Builder::new(out);
    tar.sparse(false);
    tar
}

/// The largest `kprof-archive.json` read: a plan is a few KiB.
pub const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// The entries an archive holds (see [`write`]): the plan, `bin/`, `workspace/`.
const BIN: &str = "bin";
/// The folder of an unpacked archive that holds the workspace (its `profile/` too).
pub const WORKSPACE: &str = "workspace";

/// Unpacks an archive into `dir` (new or empty) and returns the remapped plan and the
/// unpacked executables; `adjust` chooses and changes the archived kernels (`run
/// --archive`'s and `check --archive`'s options) once the archive is checked and before
/// anything is written, so what it refuses leaves `dir` as it was. The kernels it returns
/// keep their archived working directories, which are remapped after it.
///
/// The archive is read twice. The first pass checks every entry and the plan and writes
/// nothing: an entry that could reach outside `dir` (a symbolic or hard link, a name with
/// `..` or a leading `/`, a device), a name outside `bin/`, `workspace/` and the plan, a
/// second entry of one name, a plan of another schema, or a plan whose working directories
/// or executables lie outside `dir` is refused with a message naming it (exit 3). The
/// second pass creates plain files and folders only, each new.
pub fn unpack_adjusted(
    archive: &Path,
    dir: &Path,
    timeout: Option<std::time::Duration>,
    adjust: impl FnOnce(Vec<KernelPlan>) -> Result<Vec<KernelPlan>>,
) -> Result<(Plan, BuildOutput)> {
    require_new_or_empty(dir)?;
    let CheckedArchive { manifest, kernels, executables: files } = check(archive)?;
    let kernels = adjust(kernels.into_iter().map(|(k, _)| k).collect())?
        .into_iter()
        .map(|k| {
            let rel = cwd_under(&manifest.workspace_root, &k.cwd)
                .with_context(|| format!("kernel `{}`: cwd outside the packed workspace", k.name))?;
            Ok((k, rel))
        })
        .collect::<Result<Vec<_>>>()?;
    let created = !dir.exists();
    std::fs::create_dir_all(dir).with_context(|| format!("could not create {}", dir.display()))?;
    let unpacked = (|| -> Result<(Plan, BuildOutput)> {
        let dir = dir.canonicalize().with_context(|| format!("could not resolve {}", dir.display()))?;
        extract(archive, &dir)?;
        let root = dir.join(WORKSPACE);
        std::fs::create_dir_all(&root).with_context(|| format!("could not create {}", root.display()))?;
        let kernels: Vec<KernelPlan> = kernels
            .into_iter()
            .map(|(mut k, rel)| {
                k.cwd = root.join(rel);
                k
            })
            .collect();
        for k in &kernels {
            std::fs::create_dir_all(&k.cwd)
                .with_context(|| format!("could not create {}", k.cwd.display()))?;
        }
        let executables = manifest
            .executables
            .iter()
            .zip(files)
            .map(|((target, _), file)| BuiltExecutable { target: target.clone(), executable: dir.join(file) })
            .collect();
        let plan = Plan {
            workspace_root: root.clone(),
            profile_root: crate::profile::dir::profiles_root(&root),
            build: None,
            kernels,
            output_dir: None,
            dry_run: false,
            timeout,
            batch: true,
            gpus: Vec::new(),
            notes: Vec::new(),
            partition: None,
        };
        Ok((plan, BuildOutput { executables, build_script_out_dirs: Vec::new() }))
    })();
    if unpacked.is_err() {
        // Only what this call wrote: the directory was new or empty.
        if created {
            std::fs::remove_dir_all(dir).ok();
        } else if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                std::fs::remove_dir_all(e.path()).or_else(|_| std::fs::remove_file(e.path())).ok();
            }
        }
    }
    unpacked
}

/// Refuses a `--workspace-remap` that exists and is not a directory, or is not empty: an
/// archive is unpacked only into a new or empty directory, so nothing there is overwritten.
pub fn require_new_or_empty(dir: &Path) -> Result<(), Failure> {
    if std::fs::symlink_metadata(dir).is_ok() && !dir.is_dir() {
        return Err(Failure::new(
            ExitCode::Filesystem,
            format!("--workspace-remap {} exists and is not a directory", dir.display()),
        )
        .help("pass --workspace-remap NEW_DIR"));
    }
    if dir.exists() && std::fs::read_dir(dir).map(|mut d| d.next().is_some()).unwrap_or(true) {
        return Err(Failure::new(
            ExitCode::Filesystem,
            format!(
                "--workspace-remap {} is not empty; an archive is unpacked only into a new or empty directory",
                dir.display()
            ),
        )
        .help("pass --workspace-remap NEW_DIR"));
    }
    Ok(())
}

/// A refusal of `archive`, naming what in it is wrong (exit 3).
fn refuse(archive: &Path, what: impl std::fmt::Display) -> Failure {
    Failure::new(ExitCode::Config, format!("{}: {what}", archive.display())).help(
        "use an archive written by `cargo kprof archive -o FILE`, as it was written; \
         archives from elsewhere are refused when they could write outside --workspace-remap",
    )
}

/// An entry's name as a relative path of plain components, or why it is refused.
fn entry_path(name: &Path) -> Result<PathBuf, &'static str> {
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

/// A kernel's working directory relative to the packed workspace root, when it lies under it.
fn cwd_under(root: &Path, cwd: &Path) -> Option<PathBuf> {
    let r = cwd.strip_prefix(root).ok()?;
    entry_path(r).ok().or_else(|| r.as_os_str().is_empty().then(PathBuf::new))
}

/// What the first pass over an archive found: the plan, each kernel with its working
/// directory relative to the unpacked workspace, and each executable's file relative to
/// the unpacked archive.
#[derive(Debug)]
struct CheckedArchive {
    manifest: ArchiveManifest,
    kernels: Vec<(KernelPlan, PathBuf)>,
    executables: Vec<PathBuf>,
}

/// The first pass: every entry checked, the plan read and checked against the entries.
fn check(archive: &Path) -> Result<CheckedArchive, Failure> {
    let (files, text) = check_entries(archive)?;
    let manifest = read_manifest(archive, &text)?;
    if manifest.kernels.is_empty() {
        return Err(refuse(archive, format_args!("`{MANIFEST}` holds no kernel to profile")));
    }
    let kernels = check_kernels(archive, &manifest)?;
    check_listed_files(archive, &manifest, &files)?;
    let executables = check_executables(archive, &manifest, &files)?;
    Ok(CheckedArchive { manifest, kernels, executables })
}

/// A tar stream that cannot be read.
fn unreadable(archive: &Path, e: &std::io::Error) -> Failure {
    // The tar crate quotes the damaged bytes: keep control characters off the terminal.
    let e = crate::process::shell_comment(&e.to_string());
    Failure::new(ExitCode::Config, format!("{} is not a readable tar archive: {e}", archive.display()))
        .help("pass the tar file `cargo kprof archive -o FILE` wrote, complete and unchanged")
}

/// Checks every entry's name and type; returns the files (relative paths) and the plan's
/// bytes.
fn check_entries(archive: &Path) -> Result<(BTreeSet<PathBuf>, Vec<u8>), Failure> {
    let file = std::fs::File::open(archive).map_err(|e| {
        Failure::new(ExitCode::Filesystem, format!("could not open the archive {}: {e}", archive.display()))
            .help("pass the tar file `cargo kprof archive -o FILE` wrote")
    })?;
    let mut tar = tar::Archive::new(file);
    let mut names = BTreeSet::new();
    let mut files = BTreeSet::new();
    let mut text = None;
    for entry in tar.entries().map_err(|e| unreadable(archive, &e))? {
        let mut entry = entry.map_err(|e| unreadable(archive, &e))?;
        let (rel, kind, shown) = check_entry(archive, &entry)?;
        if !names.insert(rel.clone()) && kind != tar::EntryType::Directory {
            return Err(refuse(archive, format_args!("entry `{shown}` appears twice")));
        }
        if kind == tar::EntryType::Directory {
            continue;
        }
        files.insert(rel.clone());
        if rel.as_os_str() == MANIFEST {
            text = Some(read_manifest_entry(archive, &mut entry)?);
        }
    }
    let Some(text) = text else {
        return Err(refuse(archive, format_args!("no `{MANIFEST}` entry: not a cargo kprof archive")));
    };
    Ok((files, text))
}

/// One entry's relative path, type and name as shown in messages; refused when its name
/// could reach outside the unpacked folder, it is not a plain file or folder, or it lies
/// outside the plan, `bin/` and `workspace/` (less `workspace/profile`).
fn check_entry<R: std::io::Read>(
    archive: &Path,
    entry: &tar::Entry<'_, R>,
) -> Result<(PathBuf, tar::EntryType, String), Failure> {
    let shown = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
    let shown = crate::process::shell_comment(&shown);
    let name = entry.path().map_err(|e| refuse(archive, format_args!("entry `{shown}`: {e}")))?;
    let rel = entry_path(&name).map_err(|why| refuse(archive, format_args!("entry `{shown}` {why}")))?;
    let kind = entry.header().entry_type();
    let what = match kind {
        // GNU sparse: a file with holes, as tar writers store executables by default.
        tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::GNUSparse => None,
        tar::EntryType::Directory => None,
        tar::EntryType::Symlink => Some("is a symbolic link"),
        tar::EntryType::Link => Some("is a hard link"),
        _ => Some("is neither a file nor a folder"),
    };
    if let Some(what) = what {
        let to = entry.link_name_bytes().map(|t| String::from_utf8_lossy(&t).into_owned());
        let to = to.map(|t| format!(" (to `{}`)", crate::process::shell_comment(&t))).unwrap_or_default();
        return Err(refuse(
            archive,
            format_args!("entry `{shown}` {what}{to}; an archive holds only files and folders"),
        ));
    }
    let top = rel.components().next().map(|c| c.as_os_str().to_string_lossy().into_owned());
    let allowed = match top.as_deref() {
        Some(MANIFEST) => rel.as_os_str() == MANIFEST && kind != tar::EntryType::Directory,
        Some(BIN) => true,
        Some(WORKSPACE) => {
            rel.components().nth(1).is_none_or(|c| c.as_os_str() != crate::profile::dir::PROFILES_DIR)
        }
        _ => false,
    };
    if !allowed {
        return Err(refuse(
            archive,
            format_args!(
                "entry `{shown}` is not part of a cargo kprof archive (only `{MANIFEST}`, `{BIN}/` and \
                 `{WORKSPACE}/` without `{WORKSPACE}/profile`)"
            ),
        ));
    }
    Ok((rel, kind, shown))
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
/// refused for a bad name or env key, a working directory outside the workspace, or a
/// cargo target without an executable.
fn check_kernels(archive: &Path, manifest: &ArchiveManifest) -> Result<Vec<(KernelPlan, PathBuf)>, Failure> {
    let mut kernels = Vec::new();
    for k in &manifest.kernels {
        let bad = |what: String| refuse(archive, format_args!("`{MANIFEST}`, kernel `{}`: {what}", k.name));
        crate::model::names::check_name(&k.name)
            .map_err(|p| refuse(archive, format_args!("`{MANIFEST}`: the kernel name {:?} {p}", k.name)))?;
        if let Some(key) = k.env.keys().find(|key| !crate::model::names::is_env_key(key)) {
            return Err(bad(format!("env key `{key}` is not a valid environment variable name")));
        }
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

/// Refuses a plan whose `included` or `build_outputs` name a file the archive lacks.
fn check_listed_files(
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
    Ok(())
}

/// Each executable's file relative to the unpacked archive: a packed file under `bin/`.
fn check_executables(
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

/// The second pass: plain files and folders under `dir`, each created new (the first pass
/// checked every name). Executables keep their execute bits; no other mode bit is copied.
fn extract(archive: &Path, dir: &Path) -> Result<()> {
    let file =
        std::fs::File::open(archive).with_context(|| format!("could not open {}", archive.display()))?;
    let mut tar = tar::Archive::new(file);
    for entry in tar.entries()? {
        let mut entry = entry?;
        let rel = entry_path(&entry.path()?).map_err(|why| anyhow::anyhow!("an entry {why}"))?;
        let dest = dir.join(&rel);
        if entry.header().entry_type() == tar::EntryType::Directory {
            std::fs::create_dir_all(&dest).with_context(|| format!("could not create {}", dest.display()))?;
            continue;
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("could not create {}", parent.display()))?;
        }
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            let exec = entry.header().mode().unwrap_or(0) & 0o111 != 0;
            options.mode(if exec { 0o755 } else { 0o644 });
        }
        let mut out = options.open(&dest).with_context(|| format!("could not create {}", dest.display()))?;
        std::io::copy(&mut entry, &mut out).with_context(|| format!("could not write {}", dest.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom, Write};

    /// A file with a hole in it, as linkers write large executables.
    fn sparse_file(dir: &Path) -> PathBuf {
        let path = dir.join("exe");
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(b"head").unwrap();
        f.seek(SeekFrom::Start(8 << 20)).unwrap();
        f.write_all(b"tail").unwrap();
        path
    }

    #[test]
    fn files_with_holes_are_packed_as_plain_files() {
        let tmp = tempfile::tempdir().unwrap();
        let exe = sparse_file(tmp.path());
        let mut tar = builder(Vec::new());
        tar.append_path_with_name(&exe, "bin/exe").unwrap();
        let bytes = tar.into_inner().unwrap();
        let mut read = tar::Archive::new(bytes.as_slice());
        let entry = read.entries().unwrap().next().unwrap().unwrap();
        assert_eq!(entry.header().entry_type(), tar::EntryType::Regular);
        assert_eq!(entry.size(), (8 << 20) + 4);
    }

    #[test]
    fn sparse_entries_from_other_writers_are_files() {
        // An archive whose executable a sparse-aware writer stored as GNU sparse: accepted,
        // and unpacked with its holes as zeros.
        let tmp = tempfile::tempdir().unwrap();
        let exe = sparse_file(tmp.path());
        let archive = tmp.path().join("a.tar");
        let mut tar = tar::Builder::new(std::fs::File::create(&archive).unwrap());
        tar.append_path_with_name(&exe, "bin/exe").unwrap();
        tar.into_inner().unwrap();
        let mut read = tar::Archive::new(std::fs::File::open(&archive).unwrap());
        let mut entry = read.entries().unwrap().next().unwrap().unwrap();
        let kind = entry.header().entry_type();
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut data).unwrap();
        assert_eq!(data.len(), (8 << 20) + 4, "{kind:?}");
        assert_eq!(&data[..4], b"head");
        assert_eq!(&data[data.len() - 4..], b"tail");
        let err = check(&archive).unwrap_err().to_string();
        // Refused for lacking a plan, not for the entry's type.
        assert!(!err.contains("neither a file nor a folder"), "{kind:?}: {err}");
    }
}
