//! The outer archive of an A/B pair (`archive --base`) and of a bisect bundle (`archive
//! --bisect`): a tar of plain files whose first entry is the bundle's manifest, then the
//! inner archives, each an ordinary archive as [`super::write`] makes it.
//!
//! Both kinds are written by one function ([`write`]), their inner archives copied out by
//! one ([`extract_inner`]), and an archive's kind is told here only, by [`sniff`] reading
//! its first entry: the manifests' names are spelled in this file and nowhere else
//! (`tests/it/layout.rs` keeps it so). [`super::open`] is the one caller of [`sniff`].

use std::io::{Read, Write};
use std::path::Path;

use anyhow::{Context, Result};

use crate::error::{ExitCode, Failure};

/// The two kinds of outer archive, each told by the name of its first entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// An A/B archive: `kprof-ab.json`, `head.tar`, `base.tar`.
    Pair,
    /// A bisect bundle: `kprof-bisect.json`, then `build-<n>.tar` for each build.
    Bisect,
}

impl Layout {
    /// The name of its manifest, its first entry.
    pub const fn manifest(self) -> &'static str {
        match self {
            Layout::Pair => "kprof-ab.json",
            Layout::Bisect => "kprof-bisect.json",
        }
    }
}

/// What an archive's first entry says it is: one build, or an outer archive with its
/// manifest's bytes (at most 1 MiB of them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sniffed {
    /// Anything else: a one-build archive, or no archive kprof wrote (the first pass
    /// over its entries, `check::check`, says which).
    Build,
    /// An outer archive of this layout, with its manifest's bytes.
    Outer(Layout, Vec<u8>),
}

/// Reads the first entry of `archive`: the one place an archive's kind is told.
pub(super) fn sniff(archive: &Path) -> Result<Sniffed, Failure> {
    let unreadable = |e: String| {
        Failure::new(ExitCode::Config, format!("{} is not a readable tar archive: {e}", archive.display()))
            .help("pass the tar file `cargo kprof archive -o FILE` wrote, complete and unchanged")
    };
    let mut tar = tar::Archive::new(super::check::open(archive)?);
    let mut entries = tar.entries().map_err(|e| unreadable(e.to_string()))?;
    let Some(first) = entries.next() else { return Ok(Sniffed::Build) };
    let mut first = first.map_err(|e| unreadable(e.to_string()))?;
    let name = first.path_bytes().into_owned();
    let Some(layout) = [Layout::Bisect, Layout::Pair].into_iter().find(|l| name == l.manifest().as_bytes())
    else {
        return Ok(Sniffed::Build);
    };
    let mut text = Vec::new();
    first.by_ref().take(1 << 20).read_to_end(&mut text).map_err(|e| unreadable(e.to_string()))?;
    Ok(Sniffed::Outer(layout, text))
}

/// Writes an outer archive to `out` (never over an existing file): `manifest` as the
/// layout's first entry, then each inner archive `(name, file)` in order. The inner files
/// are removed once the archive is written; `out` is removed when writing fails.
pub(super) fn write<M: serde::Serialize>(
    layout: Layout,
    manifest: &M,
    inner: &[(String, &Path)],
    out: &Path,
) -> Result<()> {
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
        tar.append_data(&mut header, layout.manifest(), json.as_slice())?;
        for (name, path) in inner {
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
    for (_, path) in inner {
        std::fs::remove_file(path).ok();
    }
    Ok(())
}

/// Copies the inner archives `allowed` of an outer archive of `layout` into `inner`, each a
/// new file; the manifest is read by [`sniff`] and skipped. Any other entry, an entry that
/// is not a plain file, or one met twice is refused with `refuse(name)`. Returns the names
/// met.
pub(super) fn extract_inner(
    archive: &Path,
    inner: &Path,
    layout: Layout,
    allowed: &[String],
    refuse: &dyn Fn(&str) -> anyhow::Error,
) -> Result<Vec<String>> {
    let manifest = layout.manifest();
    std::fs::create_dir_all(inner).with_context(|| format!("could not create {}", inner.display()))?;
    let mut tar = tar::Archive::new(super::check::open(archive)?);
    let mut seen: Vec<String> = Vec::new();
    for entry in tar.entries()? {
        let mut entry = entry?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let regular = entry.header().entry_type() == tar::EntryType::Regular;
        let known = name == manifest || allowed.contains(&name);
        if !regular || !known || seen.contains(&name) {
            return Err(refuse(&name));
        }
        seen.push(name.clone());
        if name == manifest {
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
    Ok(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bundle with `entries` (name, regular file or not), as a tar in `dir`.
    fn bundle(dir: &Path, entries: &[(&str, bool)]) -> std::path::PathBuf {
        let path = dir.join("bundle.tar");
        let mut b = tar::Builder::new(std::fs::File::create(&path).unwrap());
        for (name, regular) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(if *regular { tar::EntryType::Regular } else { tar::EntryType::Directory });
            h.set_size(if *regular { 2 } else { 0 });
            h.set_mode(0o644);
            let data: &[u8] = if *regular { b"ok" } else { b"" };
            b.append_data(&mut h, name, data).unwrap();
        }
        b.finish().unwrap();
        path
    }

    /// Only the listed inner archives, each once, as plain files: a second copy of one,
    /// or a folder of its name, is refused and names it.
    #[test]
    fn inner_archives_are_plain_files_met_once() {
        let tmp = tempfile::tempdir().unwrap();
        let allowed = vec!["head.tar".to_string(), "base.tar".to_string()];
        let refuse = |name: &str| anyhow::anyhow!("refused {name}");
        let ok = bundle(tmp.path(), &[("kprof-ab.json", true), ("head.tar", true), ("base.tar", true)]);
        let met = extract_inner(&ok, &tmp.path().join("in-1"), Layout::Pair, &allowed, &refuse).unwrap();
        assert_eq!(met, ["kprof-ab.json", "head.tar", "base.tar"]);
        assert_eq!(std::fs::read(tmp.path().join("in-1/head.tar")).unwrap(), b"ok");
        assert!(!tmp.path().join("in-1/kprof-ab.json").exists(), "the manifest is read elsewhere");
        for (n, entries) in [
            vec![("head.tar", true), ("head.tar", true)],
            vec![("head.tar", false)],
            vec![("other.tar", true)],
        ]
        .into_iter()
        .enumerate()
        {
            let dir = tmp.path().join(format!("case-{n}"));
            std::fs::create_dir_all(&dir).unwrap();
            let path = bundle(&dir, &entries);
            let err = extract_inner(&path, &dir.join("in"), Layout::Pair, &allowed, &refuse).unwrap_err();
            let name = entries.last().unwrap().0;
            assert_eq!(err.to_string(), format!("refused {name}"), "{entries:?}");
        }
    }

    /// A pair and a bundle are written by the one writer: each is sniffed as its layout,
    /// with the manifest first and the inner archives after it, in order.
    #[test]
    fn pairs_and_bundles_are_written_by_one_writer_and_told_apart_by_their_first_entry() {
        let tmp = tempfile::tempdir().unwrap();
        for (layout, names) in [
            (Layout::Pair, vec!["head.tar", "base.tar"]),
            (Layout::Bisect, vec!["build-0.tar", "build-1.tar", "build-2.tar"]),
        ] {
            let files: Vec<(String, std::path::PathBuf)> = names
                .iter()
                .map(|n| {
                    let p = tmp.path().join(format!("{n}.partial"));
                    std::fs::write(&p, n).unwrap();
                    (n.to_string(), p)
                })
                .collect();
            let inner: Vec<(String, &Path)> = files.iter().map(|(n, p)| (n.clone(), p.as_path())).collect();
            let out = tmp.path().join(format!("{layout:?}.tar"));
            write(layout, &serde_json::json!({ "schema_version": 1 }), &inner, &out).unwrap();
            assert!(files.iter().all(|(_, p)| !p.exists()), "the inner files are removed");
            let Sniffed::Outer(told, bytes) = sniff(&out).unwrap() else { panic!("{layout:?}: not sniffed") };
            assert_eq!(told, layout);
            assert!(String::from_utf8(bytes).unwrap().contains("\"schema_version\": 1"));
            let mut tar = tar::Archive::new(std::fs::File::open(&out).unwrap());
            let met: Vec<String> = tar
                .entries()
                .unwrap()
                .map(|e| String::from_utf8_lossy(&e.unwrap().path_bytes()).into_owned())
                .collect();
            let expected: Vec<&str> = [layout.manifest()].into_iter().chain(names.iter().copied()).collect();
            assert_eq!(met, expected);
            assert!(write(layout, &1, &[], &out).is_err(), "never over an existing file");
        }
    }
}
