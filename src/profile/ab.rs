//! The files of an A/B check (`check --base`) inside the two sides' profile directories,
//! and where the base side's profiles go.
//!
//! Each side's timing rounds are that side's harness results, one per round, under its own
//! `details/rounds/`. The head's `comparison/` holds the rounds of both sides as one
//! document (`ab_rounds.json`), the kernel's A/B result (`ab.json`) and the report.

use std::path::{Path, PathBuf};

use super::dir::ProfileDir;

const ROUNDS_DIR: &str = "rounds";
const AB_ROUNDS: &str = "ab_rounds.json";
const AB_RESULT: &str = "ab.json";

impl ProfileDir {
    /// `details/rounds/`: this side's harness result of every timing round.
    pub fn rounds_dir(&self) -> PathBuf {
        self.details_dir().join(ROUNDS_DIR)
    }

    /// `details/rounds/round_NN.json`.
    pub fn round_result_path(&self, round: u32) -> PathBuf {
        self.rounds_dir().join(format!("round_{round:02}.json"))
    }

    /// `details/rounds/round_NN_raw.csv`: ncu's page of a round timed by ncu (a program
    /// that is not a harness bench).
    pub fn round_page_path(&self, round: u32) -> PathBuf {
        self.rounds_dir().join(format!("round_{round:02}_raw.csv"))
    }

    /// `comparison/ab_rounds.json`: both sides' rounds, interleaved as they ran.
    pub fn ab_rounds_path(&self) -> PathBuf {
        self.comparison_dir().join(AB_ROUNDS)
    }

    /// `comparison/ab.json`: the kernel's A/B result (time, counters, verdict).
    pub fn ab_result_path(&self) -> PathBuf {
        self.comparison_dir().join(AB_RESULT)
    }
}

/// Where the base side's profiles go: `profile/base-<commit>/` beside the head's, so that
/// both stay with the project and the base's never mix with the head's in the index.
pub fn base_profiles_root(profiles_root: &Path, short_commit: &str) -> PathBuf {
    let safe: String = short_commit.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    profiles_root.join(format!("base-{safe}"))
}
