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

/// The plan's file inside an archive.
pub const MANIFEST: &str = "kprof-archive.json";

/// Source files packed so hotspots can show their lines on the other machine.
const SOURCE_EXTENSIONS: &[&str] = &["cu", "cuh"];

/// `kprof-archive.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ArchiveManifest {
    /// Always 1.
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
}

fn sources_under(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name();
            if p.is_dir() {
                if !matches!(name.to_str(), Some("target" | "profile" | ".git")) {
                    stack.push(p);
                }
            } else if p.extension().and_then(|x| x.to_str()).is_some_and(|x| SOURCE_EXTENSIONS.contains(&x)) {
                if let Ok(rel) = p.strip_prefix(root) {
                    out.push(rel.to_path_buf());
                }
            }
        }
    }
    out.sort();
    out
}

/// Writes the archive; refuses to overwrite an existing file.
pub fn write(plan: &Plan, built: Option<&BuildOutput>, out: &Path) -> Result<()> {
    let file = std::fs::OpenOptions::new().write(true).create_new(true).open(out).map_err(|e| {
        Failure::new(ExitCode::Filesystem, format!("could not create the archive {}: {e}", out.display()))
            .help("archives are never overwritten: pick a new file name")
    })?;
    let mut tar = tar::Builder::new(file);
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
    let sources = sources_under(&plan.workspace_root);
    for rel in &sources {
        tar.append_path_with_name(plan.workspace_root.join(rel), Path::new("workspace").join(rel))
            .with_context(|| format!("could not pack {}", rel.display()))?;
    }
    let manifest = ArchiveManifest {
        schema_version: 1,
        kprof_version: env!("CARGO_PKG_VERSION").into(),
        workspace_root: plan.workspace_root.clone(),
        kernels: plan.kernels.clone(),
        executables,
        sources,
    };
    let json = serde_json::to_vec_pretty(&manifest)?;
    let mut header = tar::Header::new_gnu();
    header.set_size(json.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, MANIFEST, json.as_slice())?;
    tar.into_inner()?.sync_all().ok();
    Ok(())
}

/// Unpacks an archive into `dir` (new or empty) and returns the remapped plan and the
/// unpacked executables.
pub fn unpack(
    archive: &Path,
    dir: &Path,
    timeout: Option<std::time::Duration>,
) -> Result<(Plan, BuildOutput)> {
    if dir.exists() && std::fs::read_dir(dir).map(|mut d| d.next().is_some()).unwrap_or(true) {
        return Err(Failure::new(
            ExitCode::Filesystem,
            format!(
                "{} is not empty; an archive is unpacked only into a new or empty directory",
                dir.display()
            ),
        )
        .help("pass --workspace-remap NEW_DIR")
        .into());
    }
    std::fs::create_dir_all(dir.join("workspace"))
        .with_context(|| format!("could not create {}", dir.display()))?;
    let dir = dir.canonicalize().with_context(|| format!("could not resolve {}", dir.display()))?;
    let file = std::fs::File::open(archive).map_err(|e| {
        Failure::new(ExitCode::Config, format!("could not open the archive {}: {e}", archive.display()))
    })?;
    tar::Archive::new(file).unpack(&dir).map_err(|e| {
        Failure::new(ExitCode::Config, format!("{} is not a readable archive: {e}", archive.display()))
    })?;
    let text = std::fs::read_to_string(dir.join(MANIFEST)).map_err(|_| {
        Failure::new(
            ExitCode::Config,
            format!("{} has no {MANIFEST}: not a cargo kprof archive", archive.display()),
        )
    })?;
    let manifest: ArchiveManifest = serde_json::from_str(&text)
        .with_context(|| format!("invalid {MANIFEST} in {}", archive.display()))?;
    let root = dir.join("workspace");
    let remap = |p: &Path| match p.strip_prefix(&manifest.workspace_root) {
        Ok(rest) => root.join(rest),
        Err(_) => p.to_path_buf(),
    };
    let kernels: Vec<KernelPlan> = manifest
        .kernels
        .iter()
        .cloned()
        .map(|mut k| {
            k.cwd = remap(&k.cwd);
            k
        })
        .collect();
    for k in &kernels {
        std::fs::create_dir_all(&k.cwd).ok();
    }
    let executables = manifest
        .executables
        .iter()
        .map(|(target, file)| BuiltExecutable { target: target.clone(), executable: dir.join(file) })
        .collect();
    let plan = Plan {
        workspace_root: root.clone(),
        profile_root: root.join("profile"),
        build: None,
        kernels,
        output_dir: None,
        dry_run: false,
        timeout,
        notes: Vec::new(),
    };
    Ok((plan, BuildOutput { executables, build_script_out_dirs: Vec::new() }))
}
