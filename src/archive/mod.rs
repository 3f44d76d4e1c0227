//! Build here, profile there: `cargo kprof archive` and `cargo-kprof kprof run --archive`.
//!
//! GPU machines often have no Rust toolchain. An archive is a plain tar file holding the
//! built executables (`bin/`), the workspace's CUDA sources (`workspace/`, so hotspots can
//! show source lines), and the resolved plan (`kprof-archive.json`), as cargo-nextest's
//! archives do for tests. Unpacking rewrites every path from the build machine's
//! workspace root to the unpacked one (`--workspace-remap`); the profile then runs the
//! same collection and analysis as `cargo kprof`, without cargo.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::build::{BuildOutput, BuildTarget, BuiltExecutable};
use crate::error::{ExitCode, Failure};
use crate::plan::{KernelPlan, Plan, PlannedTarget};
use check::{check, cwd_under, CheckedArchive, Entries};
use entry::entry_path;

pub mod adjust;
pub mod bisect;
pub mod check;
pub mod contents;
pub mod deps;
pub mod emit;
mod entry;
pub mod libs;
mod listed;
pub mod loader;
pub mod outer;
pub mod pair;
pub use contents::Contents;

/// The plan's file inside an archive.
pub const MANIFEST: &str = "kprof-archive.json";

/// The manifest's schema this cargo-kprof writes; it reads every version up to it.
pub const SCHEMA_VERSION: u32 = 3;

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
    /// The shared libraries each packed program loads (schema 3); `None` in older
    /// archives, whose libraries are not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub libraries: Option<Vec<libs::ProgramLibraries>>,
    /// Dependency sources the line info names, packed under `deps/` (schema 3).
    #[serde(default)]
    pub dependency_sources: Vec<deps::DependencySource>,
    /// Dependency sources the line info names that were not found when packing.
    #[serde(default)]
    pub dependency_sources_missing: Vec<PathBuf>,
    /// Dependency sources the line info names that were not packed, and why (a link out
    /// of its folder, a file over `deps::LARGEST_SOURCE`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependency_sources_refused: Vec<deps::RefusedSource>,
    /// The tracing census's injection library (`bin/libkprof_tracer.so`), built on this
    /// machine for the programs whose census may be traced; `run --archive` injects it
    /// (without one the GPU machine has no cargo to build it, and the census is ncu's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracer: Option<String>,
}

/// What the dependency graph tells the packer: the libraries cudarc opens itself, and each
/// package's folder (relative names in a build script's line info start there).
#[derive(Debug, Clone, Default)]
pub struct Graph {
    /// The libraries cudarc opens itself.
    pub opened: Vec<libs::OpenedLibrary>,
    /// Each package's folder, by name.
    pub package_roots: std::collections::BTreeMap<String, PathBuf>,
}

impl Graph {
    /// Read from `cargo metadata` with the resolve.
    pub fn of(metadata: &cargo_metadata::Metadata) -> Graph {
        let package_roots = metadata
            .packages
            .iter()
            .filter_map(|p| Some((p.name.to_string(), p.manifest_path.parent()?.as_std_path().to_path_buf())))
            .collect();
        Graph { opened: libs::cudarc_opened(metadata), package_roots }
    }
}

/// Writes the archive: the executables of `built`, the files of `contents` and the plan,
/// with the libraries each program loads, the dependency sources its line info names and
/// `tracer`, the census tracer library (`ops::archive::tracer_to_pack`). Refuses to
/// overwrite an existing file, and removes the file it created when packing fails.
pub fn write(
    plan: &Plan,
    built: Option<&BuildOutput>,
    contents: &Contents,
    graph: &Graph,
    tracer: Option<&Path>,
    out: &Path,
) -> Result<ArchiveManifest> {
    let file = std::fs::OpenOptions::new().write(true).create_new(true).open(out).map_err(|e| {
        Failure::new(ExitCode::Filesystem, format!("could not create the archive {}: {e}", out.display()))
            .help("archives are never overwritten: pick a new file name")
    })?;
    let written = pack(plan, built, contents, graph, tracer, file);
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
    graph: &Graph,
    tracer: Option<&Path>,
    file: std::fs::File,
) -> Result<ArchiveManifest> {
    let mut tar = builder(file);
    let mut executables = Vec::new();
    let mut libraries = Vec::new();
    let search = loader::Search::here(None, &crate::shell::Shell::quiet());
    let find = |name: &str, d: &libs::Dynamic, at: &Path| search.find(name, d, at);
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
            // A program whose census may be traced needs CUPTI too (else ncu's census runs).
            let mut opened = graph.opened.clone();
            if plan
                .kernels
                .iter()
                .any(|k| k.target == PlannedTarget::Cargo(t.clone()) && libs::traces_census(k))
            {
                opened.push(libs::cupti_for_census());
            }
            libraries.push(libs::record(exe, &name, &opened, &find));
            executables.push((t.clone(), name));
        }
    }
    for rel in contents.files() {
        tar.append_path_with_name(plan.workspace_root.join(rel), Path::new(WORKSPACE).join(rel))
            .with_context(|| format!("could not pack {}", rel.display()))?;
    }
    let exes: Vec<&Path> =
        executables.iter().filter_map(|(t, _)| built.and_then(|b| b.executable(t))).collect();
    let prefixes = deps::Prefixes {
        package_roots: graph.package_roots.clone(),
        ..deps::Prefixes::here(&plan.workspace_root)
    };
    let found = deps::find(&exes, built, &prefixes);
    for s in &found.sources {
        tar.append_path_with_name(&s.file, Path::new(DEPS).join(&s.entry))
            .with_context(|| format!("could not pack {}", s.file.display()))?;
    }
    if let Some(file) = tracer {
        tar.append_path_with_name(file, TRACER_ENTRY)
            .with_context(|| format!("could not pack {}", file.display()))?;
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
        libraries: Some(libraries),
        dependency_sources: found.sources,
        dependency_sources_missing: found.missing,
        dependency_sources_refused: found.refused,
        tracer: tracer.map(|_| TRACER_ENTRY.to_string()),
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

/// The tracer library's entry in an archive.
pub const TRACER_ENTRY: &str = "bin/libkprof_tracer.so";

/// A tar writer that stores every file as a plain file. Linkers leave holes in large
/// executables; the tar crate would store those as GNU sparse entries, which other tools
/// handle unevenly: an archive of plain entries unpacks the same everywhere.
fn builder<W: std::io::Write>(out: W) -> tar::Builder<W> {
    let mut tar = tar::Builder::new(out);
    tar.sparse(false);
    tar
}

/// The entries an archive holds (see [`write`]): the plan, `bin/`, `workspace/`.
const BIN: &str = "bin";
/// The folder of an unpacked archive that holds the workspace (its `profile/` too).
pub const WORKSPACE: &str = "workspace";
/// The folder of an archive that holds dependency sources (`deps::find`).
pub const DEPS: &str = "deps";

/// Unpacks an archive into `dir` (new or empty) and returns the remapped plan and the
/// unpacked executables; `adjust` chooses and changes the archived kernels (`run
/// --archive`'s and `check --archive`'s options) once the archive is checked and before
/// anything is written, so what it refuses leaves `dir` as it was. The kernels it returns
/// keep their archived working directories, which are remapped after it.
///
/// The archive, a regular file, is read twice. The first pass ([`check`]) checks every
/// entry and the plan and writes nothing. The second pass creates plain files and folders
/// only, each new, and only the entries the first pass let through, at the sizes it saw.
pub fn unpack_adjusted(
    archive: &Path,
    dir: &Path,
    timeout: Option<std::time::Duration>,
    adjust: impl FnOnce(&ArchiveManifest, Vec<KernelPlan>) -> Result<Vec<KernelPlan>>,
) -> Result<(Plan, BuildOutput)> {
    require_new_or_empty(dir)?;
    let CheckedArchive { manifest, kernels, executables: files, tracer, entries } = check(archive)?;
    let kernels = adjust(&manifest, kernels.into_iter().map(|(k, _)| k).collect())?
        .into_iter()
        .map(|k| {
            let rel = cwd_under(&manifest.workspace_root, &k.cwd)
                .with_context(|| format!("kernel `{}`: cwd outside the packed workspace", k.name))?;
            Ok((k, rel))
        })
        .collect::<Result<Vec<_>>>()?;
    let (created, claim) = claim(dir)?;
    let unpacked = (|| -> Result<(Plan, BuildOutput)> {
        let dir = dir.canonicalize().with_context(|| format!("could not resolve {}", dir.display()))?;
        extract(archive, &dir, &entries)?;
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
            profile_root: crate::profile::root::profiles_root(&root),
            build: None,
            source_roots: vec![dir.join(DEPS)],
            source_map: manifest
                .dependency_sources
                .iter()
                .flat_map(|d| {
                    let at = dir.join(DEPS).join(&d.entry);
                    let file = d.file.to_string_lossy().into_owned();
                    d.names.iter().cloned().chain([file]).map(move |n| (n, at.clone()))
                })
                .collect(),
            kernels,
            output_dir: None,
            dry_run: false,
            timeout,
            batch: true,
            gpus: Vec::new(),
            notes: Vec::new(),
            partition: None,
            tracer: tracer.map(|t| dir.join(t)),
        };
        Ok((plan, BuildOutput { executables, build_script_out_dirs: Vec::new() }))
    })();
    std::fs::remove_file(&claim).ok();
    if unpacked.is_err() {
        // Only what this call wrote: the directory was new, or empty but for its claim.
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

/// The file that marks a `--workspace-remap` as being unpacked into by one run.
const CLAIM: &str = ".kprof-unpacking";

/// Claims `dir` for this run's unpacking: creates it (or takes it empty), then creates its
/// claim file exclusively, so that of two runs given one folder (a launcher whose shard
/// variable is empty) one unpacks and the other is refused without touching it. Returns
/// whether the folder was created here, and the claim to remove once unpacked.
fn claim(dir: &Path) -> Result<(bool, PathBuf)> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("could not create {}", parent.display()))?;
    }
    let created = match std::fs::create_dir(dir) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
        Err(e) => return Err(anyhow::Error::new(e).context(format!("could not create {}", dir.display()))),
    };
    let claim = dir.join(CLAIM);
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&claim) {
        Ok(mut f) => {
            use std::io::Write;
            writeln!(f, "{}", std::process::id()).ok();
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(claimed(dir, &std::fs::read_to_string(&claim).unwrap_or_default()).into());
        }
        Err(e) => return Err(anyhow::Error::new(e).context(format!("could not create {}", claim.display()))),
    }
    // Claimed: anything else in the folder is another run's, finished before the claim.
    let others = std::fs::read_dir(dir).map(|d| d.flatten().any(|e| e.file_name() != CLAIM)).unwrap_or(true);
    if others {
        std::fs::remove_file(&claim).ok();
        return Err(busy(dir, "another run unpacked into it meanwhile; nothing was touched").into());
    }
    Ok((created, claim))
}

/// The refusal of a `--workspace-remap` another run uses: `why`, and the fix.
fn busy(dir: &Path, why: &str) -> Failure {
    Failure::new(ExitCode::Filesystem, format!("--workspace-remap {}: {why}", dir.display()))
        .help("give each run its own --workspace-remap (a launcher: check that its shard variable is set)")
}

/// The refusal of a `--workspace-remap` whose claim names `pid` (see [`claim`]).
fn claimed(dir: &Path, pid: &str) -> Failure {
    busy(
        dir,
        &format!(
            "another run (pid {}) is unpacking an archive into it, or one that ended did; nothing was touched",
            pid.trim()
        ),
    )
}

/// An archive, opened once: what it holds, told by its first entry ([`outer::sniff`]),
/// with its manifest when it is an outer archive (read and checked, or why it cannot be:
/// the command that is handed the other kind says what it is first).
#[derive(Debug)]
pub enum Opened {
    /// One build (`archive -o FILE`); its entries and plan are checked when it is
    /// unpacked ([`check()`]).
    Build,
    /// Two builds for an A/B check (`archive --base REV`).
    Pair(Result<pair::PairManifest, Failure>),
    /// A bisect bundle (`archive --bisect GOOD..BAD`).
    Bisect(Result<bisect::BisectManifest, Failure>),
}

/// Opens `archive` and tells what it holds (see [`Opened`]): the one place its kind is
/// read.
pub fn open(archive: &Path) -> Result<Opened, Failure> {
    Ok(match outer::sniff(archive)? {
        outer::Sniffed::Build => Opened::Build,
        outer::Sniffed::Outer(outer::Layout::Pair, text) => {
            Opened::Pair(pair::parse_manifest(archive, &text))
        }
        outer::Sniffed::Outer(outer::Layout::Bisect, text) => {
            Opened::Bisect(bisect::parse_manifest(archive, &text))
        }
    })
}

/// The plan of an archive, once every entry is checked (nothing is written).
pub fn read_checked_manifest(archive: &Path) -> Result<ArchiveManifest, Failure> {
    check(archive).map(|c| c.manifest)
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
    if let Ok(pid) = std::fs::read_to_string(dir.join(CLAIM)) {
        return Err(claimed(dir, &pid));
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

/// The second pass: plain files and folders under `dir`, each created new, each an entry
/// the first pass checked ([`check`]) and at most the size it had then; an archive that
/// changed in between is refused. Executables keep their execute bits; no other mode bit
/// is copied.
fn extract(archive: &Path, dir: &Path, checked: &Entries) -> Result<()> {
    let changed = |what: String| {
        entry::refuse(archive, format_args!("{what}: the archive changed while it was unpacked"))
    };
    let mut tar = tar::Archive::new(check::open(archive)?);
    for entry in tar.entries()? {
        let mut entry = entry?;
        let rel = entry_path(&entry.path()?).map_err(|why| anyhow::anyhow!("an entry {why}"))?;
        let shown = crate::process::shell_comment(&rel.to_string_lossy());
        let dest = dir.join(&rel);
        let is_dir = entry.header().entry_type() == tar::EntryType::Directory;
        match (checked.get(&rel), is_dir) {
            (Some(None), true) => {
                std::fs::create_dir_all(&dest)
                    .with_context(|| format!("could not create {}", dest.display()))?;
                continue;
            }
            (Some(Some(size)), false) if *size == entry.size() => {}
            _ => return Err(changed(format!("entry `{shown}` was not checked as it is now")).into()),
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
        let size = entry.size();
        let written = std::io::copy(&mut std::io::Read::take(&mut entry, size), &mut out)
            .with_context(|| format!("could not write {}", dest.display()))?;
        if written != size {
            return Err(changed(format!("entry `{shown}` holds {written} bytes, not {size}")).into());
        }
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

    /// An archive of a folder entry and a file in it, written with kprof's own builder.
    fn folder_and_file(tmp: &Path) -> PathBuf {
        let archive = tmp.join("a.tar");
        let mut tar = builder(std::fs::File::create(&archive).unwrap());
        let mut folder = tar::Header::new_gnu();
        folder.set_entry_type(tar::EntryType::Directory);
        folder.set_size(0);
        folder.set_mode(0o755);
        tar.append_data(&mut folder, "sub/", std::io::empty()).unwrap();
        let mut file = tar::Header::new_gnu();
        file.set_size(5);
        file.set_mode(0o644);
        tar.append_data(&mut file, "sub/a.txt", &b"hello"[..]).unwrap();
        tar.into_inner().unwrap();
        archive
    }

    /// The second pass unpacks the folders and files the first pass checked, as they were.
    #[test]
    fn extract_unpacks_checked_folders_and_files() {
        let tmp = tempfile::tempdir().unwrap();
        let archive = folder_and_file(tmp.path());
        let checked: check::Entries =
            [(PathBuf::from("sub"), None), (PathBuf::from("sub/a.txt"), Some(5))].into_iter().collect();
        let out = tmp.path().join("out");
        std::fs::create_dir(&out).unwrap();
        extract(&archive, &out, &checked).unwrap();
        assert!(out.join("sub").is_dir());
        assert_eq!(std::fs::read_to_string(out.join("sub/a.txt")).unwrap(), "hello");
        // Packed as 0644: unpacked without an execute bit.
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(out.join("sub/a.txt")).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0, "{mode:o}");
    }

    /// A file whose size is not the one the first pass checked (the archive changed in
    /// between) is refused, naming it, and not unpacked.
    #[test]
    fn extract_refuses_an_entry_that_changed_since_the_check() {
        let tmp = tempfile::tempdir().unwrap();
        let archive = folder_and_file(tmp.path());
        let checked: check::Entries =
            [(PathBuf::from("sub"), None), (PathBuf::from("sub/a.txt"), Some(3))].into_iter().collect();
        let out = tmp.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let err = format!("{:#}", extract(&archive, &out, &checked).unwrap_err());
        assert!(err.contains("entry `sub/a.txt` was not checked as it is now"), "{err}");
        assert!(!out.join("sub/a.txt").exists());
    }

    #[test]
    fn sparse_entries_from_other_writers_are_refused() {
        // An archive whose executable a sparse-aware writer stored as GNU sparse: kprof
        // never writes one, and its holes would unpack to any size, so it is refused.
        let tmp = tempfile::tempdir().unwrap();
        let exe = sparse_file(tmp.path());
        let archive = tmp.path().join("a.tar");
        let mut tar = tar::Builder::new(std::fs::File::create(&archive).unwrap());
        tar.append_path_with_name(&exe, "bin/exe").unwrap();
        tar.into_inner().unwrap();
        let mut read = tar::Archive::new(std::fs::File::open(&archive).unwrap());
        let kind = read.entries().unwrap().next().unwrap().unwrap().header().entry_type();
        assert_eq!(kind, tar::EntryType::GNUSparse);
        let err = check(&archive).unwrap_err().to_string();
        assert!(err.contains("entry `bin/exe` is a GNU sparse file"), "{err}");
    }
}
