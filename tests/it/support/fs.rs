//! Paths of the recordings and small file-system helpers.

use std::path::{Path, PathBuf};

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `fixtures/h200`: the H200 recordings.
pub fn recordings() -> PathBuf {
    repo().join("fixtures/h200")
}

/// `details/` of a recorded demo profile (`fixtures/h200/demo-stages/<profile>/details`).
pub fn fixture_details(profile: &str) -> PathBuf {
    recordings().join("demo-stages").join(profile).join("details")
}

/// Copies the directory tree `from` to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// Lossy UTF-8 of a child's output.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
