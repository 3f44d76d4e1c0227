//! Where the HTML views go: `report.html` in a profile directory, and `index.html` and
//! `ab.html` in a profiles root.

use std::path::{Path, PathBuf};

use super::dir::ProfileDir;

const REPORT_HTML: &str = "report.html";
const INDEX_HTML: &str = "index.html";
const AB_HTML: &str = "ab.html";
const AB_PROFILES: &str = "ab_profiles.json";

impl ProfileDir {
    /// `report.html`: the profile as one self-contained page.
    pub fn report_html_path(&self) -> PathBuf {
        self.path().join(REPORT_HTML)
    }

    /// `comparison/ab_profiles.json`: an A/B check's two profiled launches compared
    /// metric by metric (the regression report's second part), for `report.html`.
    pub fn ab_profiles_path(&self) -> PathBuf {
        self.comparison_dir().join(AB_PROFILES)
    }
}

/// `<profiles root>/index.html`: every profile of the root as one page.
pub fn index_html_path(profiles_root: &Path) -> PathBuf {
    profiles_root.join(INDEX_HTML)
}

/// `<profiles root>/ab.html`: the A/B check of every kernel whose profile has one.
pub fn ab_html_path(profiles_root: &Path) -> PathBuf {
    profiles_root.join(AB_HTML)
}

/// The name of a profile's `report.html` relative to the profiles root, for links
/// (`hgemm_20261129_213211/report.html`).
pub fn report_html_link(profile_id: &str) -> String {
    format!("{profile_id}/{REPORT_HTML}")
}
