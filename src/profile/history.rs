//! `profile/cost_history.jsonl`: what each batched ncu run cost, kept in the profiles
//! root so that the next run of the same program can be planned from measurements
//! ([`crate::collect::planner`]).
//!
//! One JSON object per line, appended after each run: the program, the stages it
//! collected, its wall time, and per kernel its launches, passes and mean duration (and,
//! after `auto`'s basic, the follow-up the rules chose). Appending keeps parallel runs
//! (one worker per GPU) from losing each other's lines. The file is derived data: a line
//! that does not read (an older or newer shape, a cut-off write) is skipped, a file that
//! is not a regular file or is over [`MAX_BYTES`] is not read, and deleting the file only
//! costs the next run its estimates.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// The file's name in the profiles root.
const HISTORY: &str = "cost_history.jsonl";

/// The most of the file that is read, from its end: about 20,000 runs.
pub const MAX_BYTES: u64 = 8 << 20;

/// `KPROF_COST_HISTORY=FILE`: the history kept in `FILE` instead of the profiles root.
/// For GPU machines that profile archives, where each `run --archive` unpacks into a new
/// folder and so starts a new profiles root.
pub const HISTORY_ENV: &str = "KPROF_COST_HISTORY";

/// The cost history of the profiles root `root`: `profile/cost_history.jsonl`, or the file
/// `KPROF_COST_HISTORY` names.
pub fn history_path(root: &Path) -> PathBuf {
    match std::env::var_os(HISTORY_ENV) {
        Some(file) if !file.is_empty() => PathBuf::from(file),
        _ => root.join(HISTORY),
    }
}

/// One ncu run of a program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryRun {
    /// Always 1.
    pub schema_version: u32,
    /// The program, as the plan names its target (`package/bench/name`, or the command).
    pub program: String,
    /// The stages the run collected: `basic`, `source`, `memory+compute`, ...
    pub stages: String,
    /// Whether it was the first run of its batch.
    pub first: bool,
    /// Wall time of the ncu process, ms.
    pub wall_ms: u64,
    /// The kernels it profiled.
    pub kernels: Vec<HistoryKernel>,
}

/// One kernel of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryKernel {
    /// The kernel, as the plan names it.
    pub kernel: String,
    /// Launches profiled.
    pub launches: u32,
    /// Replay passes per launch (the first launch's).
    pub passes: u32,
    /// Mean duration of a launch, ns (0 when the page had none).
    pub duration_ns: f64,
    /// After `auto`'s basic: the follow-up the rules chose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_up: Option<String>,
}

/// Appends `run` as one line. The profiles root's own file is never followed through a
/// symbolic link (nothing outside the profiles root is written); a file
/// `KPROF_COST_HISTORY` names is the user's choice, links and all.
pub fn append(root: &Path, run: &HistoryRun) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut line = serde_json::to_string(run)?;
    line.push('\n');
    let path = history_path(root);
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    if path == root.join(HISTORY) {
        options.custom_flags(libc::O_NOFOLLOW);
    }
    let mut f = options.open(&path).with_context(|| format!("could not open {}", path.display()))?;
    // One write per line: appends from parallel workers do not interleave within it.
    f.write_all(line.as_bytes())?;
    Ok(())
}

/// The recorded runs of `program`, oldest first; none when there is no readable history.
pub fn runs_of(root: &Path, program: &str) -> Vec<HistoryRun> {
    let path = history_path(root);
    let Ok(Ok(mut file)) = super::fs::open_regular(&path) else { return Vec::new() };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_BYTES {
        use std::io::{Seek, SeekFrom};
        if file.seek(SeekFrom::Start(len - MAX_BYTES)).is_err() {
            return Vec::new();
        }
    }
    let mut bytes = Vec::new();
    if file.take(MAX_BYTES).read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| serde_json::from_str::<HistoryRun>(l).ok())
        .filter(|r| r.schema_version == 1 && r.program == program)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(program: &str, stages: &str, wall_ms: u64) -> HistoryRun {
        HistoryRun {
            schema_version: 1,
            program: program.into(),
            stages: stages.into(),
            first: stages == "basic",
            wall_ms,
            kernels: vec![HistoryKernel {
                kernel: "copy".into(),
                launches: 1,
                passes: 8,
                duration_ns: 1500.0,
                follow_up: None,
            }],
        }
    }

    #[test]
    fn runs_come_back_per_program_and_bad_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), &run("demo/bench/copy", "basic", 3000)).unwrap();
        append(dir.path(), &run("zoo/bench/memory", "memory", 2000)).unwrap();
        crate::profile::fs::append(&history_path(dir.path()), "{\"schema_version\":1,\"prog\n").unwrap();
        append(dir.path(), &run("demo/bench/copy", "memory", 2500)).unwrap();
        let runs = runs_of(dir.path(), "demo/bench/copy");
        assert_eq!(runs.iter().map(|r| r.wall_ms).collect::<Vec<_>>(), vec![3000, 2500]);
        assert!(runs_of(dir.path(), "other").is_empty());
        assert!(runs_of(&dir.path().join("absent"), "demo/bench/copy").is_empty());
    }

    /// A history file planted as a link to elsewhere is not written through.
    #[test]
    fn a_linked_history_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "mine\n").unwrap();
        let root = dir.path().join("profile");
        std::fs::create_dir(&root).unwrap();
        std::os::unix::fs::symlink(&outside, root.join(HISTORY)).unwrap();
        assert!(append(&root, &run("demo/bench/copy", "basic", 3000)).is_err());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "mine\n");
    }
}
