//! A report writes only inside its profile directory: a `details/`, `visual/` or
//! `comparison/` that is a symbolic link (a profile from an artifact or a tarball may hold
//! one pointing anywhere) is refused, exit 3, and nothing is written through it
//! (issue #45, G7).

use std::path::Path;

use crate::support::{copy_dir, kprof_bounded, recordings, text};

/// Every file under `dir`, with its bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn report_refuses_to_write_through_a_linked_subfolder() {
    for sub in ["visual", "details", "comparison"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("hgemm_20261129_213211");
        copy_dir(&recordings().join("demo-stages/hgemm_20261129_213211"), &dir);
        // The folder the link points to, outside the profile, holding what the subfolder held.
        let outside = tmp.path().join("elsewhere");
        std::fs::create_dir_all(&outside).unwrap();
        if dir.join(sub).is_dir() {
            copy_dir(&dir.join(sub), &outside);
            std::fs::remove_dir_all(dir.join(sub)).unwrap();
        }
        std::os::unix::fs::symlink(&outside, dir.join(sub)).unwrap();
        let before = files(&outside);
        let out = kprof_bounded(tmp.path(), &["report", dir.to_str().unwrap()]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{sub}: {stderr}");
        assert!(
            stderr.contains(sub) && stderr.contains("symbolic link") && stderr.contains("help:"),
            "{sub}: {stderr}"
        );
        assert_eq!(files(&outside), before, "{sub}: written through the link");
    }
}
