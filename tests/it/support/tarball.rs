//! Tar files built entry by entry, for archives a careful packer would never write: names
//! with `..` or a leading `/`, symbolic and hard links, devices, sparse files (the old GNU
//! form and the PAX forms). Headers are filled in raw, so nothing is normalised away on
//! the way in.

use std::io::Read;
use std::path::Path;

/// What an entry is.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A regular file with these bytes.
    File(Vec<u8>),
    /// A directory.
    Dir,
    /// A symbolic link to this target.
    Symlink(String),
    /// A hard link to this entry name.
    HardLink(String),
    /// A named pipe.
    Fifo,
    /// An old GNU sparse file (type `S`): `data` stored at the end of a file of
    /// `real_size` bytes, the rest a hole that unpacks as zeros.
    GnuSparse {
        /// The bytes stored.
        data: Vec<u8>,
        /// The size it unpacks to.
        real_size: u64,
    },
    /// A regular file preceded by a PAX extended header holding these records (as the
    /// PAX forms of GNU sparse files are written: `GNU.sparse.*` keys).
    Pax(Vec<(String, String)>, Vec<u8>),
}

/// One entry: its name as stored, what it is, and its mode.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The name, byte for byte as it goes into the header.
    pub name: String,
    /// What it is.
    pub kind: Kind,
    /// Permission bits.
    pub mode: u32,
}

impl Entry {
    /// A regular file, mode 0644.
    pub fn file(name: &str, data: impl Into<Vec<u8>>) -> Entry {
        Entry { name: name.into(), kind: Kind::File(data.into()), mode: 0o644 }
    }

    /// A directory, mode 0755.
    pub fn dir(name: &str) -> Entry {
        Entry { name: name.into(), kind: Kind::Dir, mode: 0o755 }
    }

    /// A symbolic link.
    pub fn symlink(name: &str, target: &str) -> Entry {
        Entry { name: name.into(), kind: Kind::Symlink(target.into()), mode: 0o777 }
    }

    /// A hard link.
    pub fn hard_link(name: &str, target: &str) -> Entry {
        Entry { name: name.into(), kind: Kind::HardLink(target.into()), mode: 0o644 }
    }

    /// A named pipe.
    pub fn fifo(name: &str) -> Entry {
        Entry { name: name.into(), kind: Kind::Fifo, mode: 0o644 }
    }

    /// An old GNU sparse file: `data` at the end of `real_size` bytes.
    pub fn gnu_sparse(name: &str, data: impl Into<Vec<u8>>, real_size: u64) -> Entry {
        Entry { name: name.into(), kind: Kind::GnuSparse { data: data.into(), real_size }, mode: 0o755 }
    }

    /// A regular file described by a PAX header with `records`.
    pub fn pax(name: &str, records: &[(&str, &str)], data: impl Into<Vec<u8>>) -> Entry {
        let records = records.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Entry { name: name.into(), kind: Kind::Pax(records, data.into()), mode: 0o755 }
    }
}

/// Writes `entries` as a tar file at `path`. Names up to 100 bytes are stored raw in the
/// header; longer ones through the tar crate's GNU long-name support.
pub fn write(path: &Path, entries: &[Entry]) {
    let mut b = tar::Builder::new(std::fs::File::create(path).unwrap());
    for e in entries {
        let mut h = tar::Header::new_gnu();
        h.set_mode(e.mode);
        h.set_mtime(1_764_000_000);
        let (ty, data): (tar::EntryType, &[u8]) = match &e.kind {
            Kind::File(d) => (tar::EntryType::Regular, d),
            Kind::Dir => (tar::EntryType::Directory, &[]),
            Kind::Symlink(t) => {
                h.set_link_name_literal(t.as_bytes()).unwrap();
                (tar::EntryType::Symlink, &[])
            }
            Kind::HardLink(t) => {
                h.set_link_name_literal(t.as_bytes()).unwrap();
                (tar::EntryType::Link, &[])
            }
            Kind::Fifo => (tar::EntryType::Fifo, &[]),
            Kind::GnuSparse { data, real_size } => {
                // One chunk at the end; everything before it is a hole.
                let gnu = h.as_gnu_mut().unwrap();
                gnu.sparse[0].set_offset(real_size - data.len() as u64);
                gnu.sparse[0].set_length(data.len() as u64);
                gnu.set_real_size(*real_size);
                (tar::EntryType::GNUSparse, data)
            }
            Kind::Pax(records, data) => {
                b.append_pax_extensions(records.iter().map(|(k, v)| (k.as_str(), v.as_bytes()))).unwrap();
                (tar::EntryType::Regular, data)
            }
        };
        h.set_entry_type(ty);
        h.set_size(data.len() as u64);
        if e.name.len() <= 100 {
            let slot = &mut h.as_old_mut().name;
            slot[..e.name.len()].copy_from_slice(e.name.as_bytes());
            h.set_cksum();
            b.append(&h, data).unwrap();
        } else {
            b.append_data(&mut h, &e.name, data).unwrap();
        }
    }
    b.into_inner().unwrap();
}

/// The entries of the tar file at `path` (files and directories), in order.
pub fn read(path: &Path) -> Vec<Entry> {
    let mut a = tar::Archive::new(std::fs::File::open(path).unwrap());
    let mut out = Vec::new();
    for e in a.entries().unwrap() {
        let mut e = e.unwrap();
        let name = String::from_utf8(e.path_bytes().into_owned()).unwrap();
        let mode = e.header().mode().unwrap();
        let kind = if e.header().entry_type().is_dir() {
            Kind::Dir
        } else {
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            Kind::File(data)
        };
        out.push(Entry { name, kind, mode });
    }
    out
}

/// The tar file of `entries`, as bytes (an archive inside another).
pub fn bytes(entries: &[Entry]) -> Vec<u8> {
    let tmp = tempfile::NamedTempFile::new().unwrap();
    write(tmp.path(), entries);
    std::fs::read(tmp.path()).unwrap()
}

/// The entries of a tar file held as bytes.
pub fn read_bytes(data: &[u8]) -> Vec<Entry> {
    let tmp = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tmp.path(), data).unwrap();
    read(tmp.path())
}

/// The manifest of a kprof archive's entries, as JSON.
pub fn manifest(entries: &[Entry]) -> serde_json::Value {
    let e = entries.iter().find(|e| e.name == "kprof-archive.json").expect("a kprof archive");
    match &e.kind {
        Kind::File(d) => serde_json::from_slice(d).unwrap(),
        other => panic!("{other:?}"),
    }
}

/// `entries` with the manifest replaced by `value`.
pub fn with_manifest(entries: &[Entry], value: &serde_json::Value) -> Vec<Entry> {
    entries
        .iter()
        .map(|e| {
            if e.name == "kprof-archive.json" {
                Entry::file(&e.name, serde_json::to_vec_pretty(value).unwrap())
            } else {
                e.clone()
            }
        })
        .collect()
}
