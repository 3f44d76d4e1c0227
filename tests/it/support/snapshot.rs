//! What is on disk under a directory, to show that a command changed nothing outside the
//! place it may write: every path with its kind, and for files their size, modification
//! time and a hash of their contents.

use std::collections::BTreeMap;
use std::path::Path;

/// One path's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// A directory (its entries are listed on their own).
    Dir,
    /// A file: size, modification time (ns since the epoch), FNV-1a hash.
    File(u64, u128, u64),
    /// A symbolic link and its target.
    Link(String),
}

/// Every path under `root` (relative to it, `/`-separated), with its state; links are
/// not followed.
pub fn take(root: &Path) -> BTreeMap<String, State> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let state = if meta.file_type().is_symlink() {
                State::Link(std::fs::read_link(&p).unwrap().display().to_string())
            } else if meta.is_dir() {
                stack.push(p.clone());
                State::Dir
            } else {
                let bytes = std::fs::read(&p).unwrap_or_default();
                let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
                });
                let mtime = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                State::File(meta.len(), mtime, hash)
            };
            out.insert(rel, state);
        }
    }
    out
}

/// The paths that appeared, disappeared or changed between two snapshots, except those
/// equal to or under one of `allowed` (relative paths).
pub fn changes(
    before: &BTreeMap<String, State>,
    after: &BTreeMap<String, State>,
    allowed: &[&str],
) -> Vec<String> {
    let inside =
        |p: &str| allowed.iter().any(|a| !a.is_empty() && (p == *a || p.starts_with(&format!("{a}/"))));
    let mut out = Vec::new();
    for (p, s) in before {
        if inside(p) {
            continue;
        }
        match after.get(p) {
            None => out.push(format!("removed {p}")),
            Some(t) if t != s => out.push(format!("changed {p}")),
            _ => {}
        }
    }
    for p in after.keys() {
        if !before.contains_key(p) && !inside(p) {
            out.push(format!("created {p}"));
        }
    }
    out
}
