//! The files of a program's census in its profile directory, written only where the
//! census ran: `breakdown.json` (read by [`ProfileDir::read_breakdown`]), `breakdown.md`
//! and `visual/census.png`.

use std::path::PathBuf;

use super::dir::ProfileDir;

impl ProfileDir {
    /// `breakdown.json`: every kernel of the census, its launches, time, share and shapes,
    /// and the kernels picked.
    pub fn breakdown_json_path(&self) -> PathBuf {
        self.path().join("breakdown.json")
    }

    /// `breakdown.md`: the census as a table, from `breakdown.json`.
    pub fn breakdown_md_path(&self) -> PathBuf {
        self.path().join("breakdown.md")
    }

    /// `visual/census.png`: the census as bars, from `breakdown.json`.
    pub fn census_png_path(&self) -> PathBuf {
        self.visual_dir().join("census.png")
    }
}
