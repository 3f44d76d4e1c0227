//! An A/B archive (`cargo kprof archive --base REV`): both sides of a check, for a GPU
//! machine without cargo.
//!
//! It is a tar of exactly three plain files: `kprof-ab.json` (which revision the base is),
//! `head.tar` and `base.tar`, each an ordinary archive as [`super::write`] makes it. Each
//! side is then unpacked, and checked entry by entry, exactly as a one-sided archive is:
//! the pair adds no way to write outside `--workspace-remap`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::error::{ExitCode, Failure};

/// The pair's manifest.
pub const PAIR_MANIFEST: &str = "kprof-ab.json";
const HEAD: &str = "head.tar";
const BASE: &str = "base.tar";
/// Where the two inner archives are put while they are unpacked (inside `--workspace-remap`).
const INNER_DIR: &str = ".kprof-ab-archives";

/// `kprof-ab.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairManifest {
    /// 1.
    pub schema_version: u32,
    /// The cargo-kprof that wrote it.
    pub kprof_version: String,
    /// What `--base` asked for, or how the base was chosen.
    pub base_asked: String,
    /// The base commit.
    pub base_commit: String,
    /// The head's commit (`HEAD` when packed; the working tree may have held changes).
    pub head_commit: Option<String>,
}

/// Writes the pair to `out` (never over an existing file) from two archives already
/// written, and removes those.
pub fn write(manifest: &PairManifest, head: &Path, base: &Path, out: &Path) -> Result<()> {
    let file = std::fs::OpenOptions::new().write(true).create_new(true).open(out).map_err(|e| {
        Failure::new(ExitCode::Filesystem, format!("could not create the archive {}: {e}", out.display()))
            .help("archives are never overwritten: pick a new file name")
    })?;
    let written = (|| -> Result<()> {
        let mut tar = tar::Builder::new(file);
        let json = serde_json::to_vec_pretty(manifest)?;
        let mut header = tar::Header::new_gnu();
        header.set_size(json.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, PAIR_MANIFEST, json.as_slice())?;
        for (path, name) in [(head, HEAD), (base, BASE)] {
            let mut f =
                std::fs::File::open(path).with_context(|| format!("could not read {}", path.display()))?;
            tar.append_file(name, &mut f).with_context(|| format!("could not pack {}", path.display()))?;
        }
        tar.into_inner()?.sync_all().ok();
        Ok(())
    })();
    if written.is_err() {
        std::fs::remove_file(out).ok();
    }
    written?;
    std::fs::remove_file(head).ok();
    std::fs::remove_file(base).ok();
    Ok(())
}

/// The side archives' temporary names next to `out` while the pair is made; refused when
/// either exists (nothing of someone's is overwritten).
pub fn temporaries(out: &Path) -> Result<(PathBuf, PathBuf), Failure> {
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let at = |side: &str| out.with_file_name(format!(".{name}.{side}.partial"));
    let (head, base) = (at("head"), at("base"));
    for p in [&head, &base, &out.to_path_buf()] {
        if p.symlink_metadata().is_ok() {
            return Err(Failure::new(ExitCode::Filesystem, format!("{} exists", p.display())).help(
                "archives are never overwritten: pick a new file name, or remove a leftover .partial file",
            ));
        }
    }
    Ok((head, base))
}

/// The pair's manifest when `archive` is an A/B archive; `None` for a one-sided one.
pub fn read_manifest(archive: &Path) -> Result<Option<PairManifest>, Failure> {
    let unreadable = |e: String| {
        Failure::new(ExitCode::Config, format!("{} is not a readable tar archive: {e}", archive.display()))
            .help("pass the tar file `cargo kprof archive -o FILE` wrote, complete and unchanged")
    };
    let file = std::fs::File::open(archive).map_err(|e| {
        Failure::new(ExitCode::Filesystem, format!("could not open the archive {}: {e}", archive.display()))
            .help("pass the tar file `cargo kprof archive -o FILE` wrote")
    })?;
    let mut tar = tar::Archive::new(file);
    let mut entries = tar.entries().map_err(|e| unreadable(e.to_string()))?;
    let Some(first) = entries.next() else { return Ok(None) };
    let mut first = first.map_err(|e| unreadable(e.to_string()))?;
    if first.path_bytes().as_ref() != PAIR_MANIFEST.as_bytes() {
        return Ok(None);
    }
    let mut text = Vec::new();
    first.by_ref().take(1 << 20).read_to_end(&mut text).map_err(|e| unreadable(e.to_string()))?;
    let m: PairManifest = serde_json::from_slice(&text).map_err(|e| {
        Failure::new(ExitCode::Config, format!("{}: {PAIR_MANIFEST} cannot be read: {e}", archive.display()))
    })?;
    if m.schema_version != 1 {
        return Err(Failure::new(
            ExitCode::Config,
            format!(
                "{}: an A/B archive of schema {} (this cargo-kprof reads 1)",
                archive.display(),
                m.schema_version
            ),
        )
        .help("check it with the cargo-kprof version that wrote it"));
    }
    Ok(Some(m))
}

/// Extracts the two side archives of the pair into `<dir>/.kprof-ab-archives/`, refusing any
/// entry but the three files; returns (head, base).
pub fn extract_sides(archive: &Path, dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let refuse = |what: String| -> anyhow::Error {
        Failure::new(ExitCode::Config, format!("{}: {what}", archive.display()))
            .help("pass the file `cargo kprof archive --base` wrote, unchanged")
            .into()
    };
    let inner = dir.join(INNER_DIR);
    std::fs::create_dir_all(&inner).with_context(|| format!("could not create {}", inner.display()))?;
    let file =
        std::fs::File::open(archive).with_context(|| format!("could not open {}", archive.display()))?;
    let mut tar = tar::Archive::new(file);
    let mut seen = Vec::new();
    for entry in tar.entries()? {
        let mut entry = entry?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let regular = entry.header().entry_type() == tar::EntryType::Regular;
        if !regular || ![PAIR_MANIFEST, HEAD, BASE].contains(&name.as_str()) || seen.contains(&name) {
            return Err(refuse(format!(
                "entry `{}` is not one of {PAIR_MANIFEST}, {HEAD}, {BASE} (plain files, once each)",
                crate::process::shell_comment(&name)
            )));
        }
        seen.push(name.clone());
        if name == PAIR_MANIFEST {
            continue;
        }
        let dest = inner.join(&name);
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&dest)
            .with_context(|| format!("could not create {}", dest.display()))?;
        std::io::copy(&mut entry, &mut out).with_context(|| format!("could not write {}", dest.display()))?;
        out.flush()?;
    }
    for needed in [HEAD, BASE] {
        if !seen.iter().any(|s| s == needed) {
            return Err(refuse(format!("no {needed}")));
        }
    }
    Ok((inner.join(HEAD), inner.join(BASE)))
}

/// Removes what [`extract_sides`] wrote, once both sides are unpacked.
pub fn remove_sides(dir: &Path) {
    let inner = dir.join(INNER_DIR);
    for name in [HEAD, BASE] {
        std::fs::remove_file(inner.join(name)).ok();
    }
    std::fs::remove_dir(inner).ok();
}
