//! Where `cargo kprof bisect` writes: its result (`bisect.json`, `bisect.md`) in the
//! profiles root, and each checked revision's profiles beside the head's.

use std::path::{Path, PathBuf};

const BISECT_JSON: &str = "bisect.json";
const BISECT_MD: &str = "bisect.md";

/// `<profiles root>/bisect.json`: the steps and the result, for programs.
pub fn bisect_json_path(profiles_root: &Path) -> PathBuf {
    profiles_root.join(BISECT_JSON)
}

/// `<profiles root>/bisect.md`: the same for people.
pub fn bisect_md_path(profiles_root: &Path) -> PathBuf {
    profiles_root.join(BISECT_MD)
}

/// Where the profiles of a revision checked by a bisect go: `profile/rev-<commit>/`,
/// kept between steps and runs (a revision checked twice adds its new profiles there).
pub fn revision_profiles_root(profiles_root: &Path, short_commit: &str) -> PathBuf {
    let safe: String = short_commit.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    profiles_root.join(format!("rev-{safe}"))
}
