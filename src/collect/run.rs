//! One ncu run of one stage: the command run under a spinner that names it, its page
//! read back, and how it ended, decided once from ncu's exit, its console and the page
//! (ncu exits 0 when its filter matched nothing, so every log is read for that, for the
//! counter-permission error and, under `--sudo`, for sudo's refusal). The stage loop
//! ([`super::queue`]) decides what the ending means for the stages after it.
//!
//! [`KernelRun`] (where a kernel's run goes and what it runs) and the `commands.sh`
//! appender live here, at the bottom of `collect/`, so that the stage units import them
//! from this file rather than from their parent module.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use super::reason::Reason;
use crate::error::Signal;
use crate::events::Event;
use crate::model::stage::Stage;
use crate::ncu::command::{StageCollection, TargetCommand};
use crate::ncu::parse::{scan_log, RawPage, SourcePage};
use crate::ncu::privilege::{self, Privilege};
use crate::plan::KernelPlan;
use crate::process::{self, tail_lines, Ending, ProcessBuilder, RunOptions};
use crate::profile::{ProfileDir, StageOutcome, StageStatus};
use crate::shell::Shell;

/// One kernel's collection: where it goes and what it runs.
pub struct KernelRun<'a> {
    /// The profile directory.
    pub dir: &'a ProfileDir,
    /// The kernel's plan.
    pub kernel: &'a KernelPlan,
    /// The profiled program.
    pub target: &'a TargetCommand,
    /// The ncu binary (under sudo, the one named in `profile/ncu_path`).
    pub ncu: &'a Path,
    /// The stage commands already written to `commands.sh` (for `auto`, only basic).
    pub first: &'a [(StageCollection, ProcessBuilder)],
    /// `--timeout`: the longest one ncu run may take.
    pub timeout: Option<Duration>,
    /// Whether a census of a plain program that picks several kernels ends with the
    /// census, leaving every pick, the first included, to one batch (see
    /// `ops::profile::census`); otherwise the first pick is profiled here at once.
    pub batch_picks: bool,
}

/// Runs one stage under a spinner that names it.
pub(super) fn run_announced(
    run: &KernelRun<'_>,
    collection: &StageCollection,
    cmd: &ProcessBuilder,
    reason: &Reason,
    shell: &Shell,
) -> StageRan {
    let why = reason.to_string();
    shell.emit(&Event::StageStarted {
        kernel: run.kernel.name.clone(),
        stage: collection.name().to_string(),
        why: why.clone(),
    });
    let bar = if shell.progress() {
        indicatif::ProgressBar::new_spinner()
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    let passes_hint = match collection {
        _ if crate::ncu::command::is_import(cmd) => ", from basic's report".to_string(),
        StageCollection::Named(s) => crate::ncu::stages::definition(*s)
            .passes_h200
            .map(|p| format!(", about {p} passes per launch"))
            .unwrap_or_default(),
        _ => String::new(),
    };
    bar.set_message(format!("ncu: stage {} of `{}`{passes_hint}", collection.name(), run.kernel.name));
    bar.enable_steady_tick(Duration::from_millis(120));
    let ran = run_stage(run.dir, collection, cmd, why, run.timeout, run.kernel.privilege, shell);
    bar.finish_and_clear();
    ran
}

/// What one stage left: its manifest entry, its parsed page and, when it failed, why.
pub(super) struct StageRan {
    pub outcome: StageOutcome,
    pub page: Result<RawPage, String>,
    /// The signal kprof received, when that stopped the stage.
    pub signal: Option<Signal>,
    /// What went wrong in words, when the console alone does not say it (ncu killed by a
    /// signal, a missing or unreadable page).
    pub problem: Option<String>,
    /// Kernels ncu said it had no line info for (source stage).
    pub no_line_info: Vec<String>,
}

fn run_stage(
    dir: &ProfileDir,
    collection: &StageCollection,
    cmd: &ProcessBuilder,
    why: String,
    timeout: Option<Duration>,
    privilege: Privilege,
    shell: &Shell,
) -> StageRan {
    let output_rel = crate::profile::dir::raw_page_rel(collection);
    let opts = RunOptions { timeout, graceful: privilege == Privilege::Sudo, ..Default::default() };
    let done = process::run(cmd, opts, shell);
    let wall_ms = done.wall.as_millis() as u64;
    let (exit_code, ended, signal) = match &done.ending {
        Ending::Exited(status) => (status.code(), None, None),
        Ending::TimedOut => (None, Some(StageStatus::Timeout), None),
        Ending::Interrupted(s) => (None, Some(StageStatus::Interrupted), Some(*s)),
        // ncu never ran: kprof's command line, not the program (exit 13, not 8).
        Ending::NotStarted(_) => (None, Some(StageStatus::NcuFailed), None),
    };
    let console = match &done.ending {
        Ending::NotStarted(msg) => format!("{msg}\n{}", done.console()),
        _ => done.console(),
    };
    let mut problem = match &done.ending {
        Ending::NotStarted(msg) => Some(not_started(msg, cmd, collection)),
        _ => None,
    };
    let written = read_page(&dir.path().join(&output_rel), collection, cmd);
    let log_text = written.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
    let scan = scan_log(&format!("{log_text}\n{console}"));
    let parsed = RawPage::parse(&log_text, &output_rel).map_err(|e| e.to_string());
    let page = parsed.as_ref().ok();
    let passes: Vec<u32> = page
        .map(|p| {
            p.launches().filter_map(|l| l.number("profiler__replayer_passes")).map(|v| v as u32).collect()
        })
        .unwrap_or_default();
    let launches = page.map(|p| p.launches().count()).unwrap_or(0);
    let sudo_refused = privilege == Privilege::Sudo && privilege::sudo_refusal(&console).is_some();
    // ncu killed by a signal: not the program (whose crash ncu reports with an exit code).
    let killed = match &done.ending {
        Ending::Exited(status) if status.code().is_none() => Some(process::describe_status(status)),
        _ => None,
    };
    let status = if let Some(ended) = ended {
        ended
    } else if scan.permission_denied || sudo_refused {
        StageStatus::Permission
    } else if scan.counters_busy {
        problem = Some(format!(
            "ncu could not profile during stage {}: another profiling session held this GPU's counters \
             (ncu said \"a driver resource was unavailable\")",
            collection.name()
        ));
        StageStatus::NcuFailed
    } else if let Some(killed) = killed {
        problem = Some(format!("ncu was {killed} during stage {}", collection.name()));
        StageStatus::NcuFailed
    } else if scan.no_kernels_profiled {
        StageStatus::NoMatch
    } else if let Some(code) = exit_code.filter(|c| *c != 0) {
        problem = Some(format!("ncu exit code {code}"));
        StageStatus::TargetFailed
    } else if let Some(unreadable) = unreadable_page(collection, &output_rel, &written, &parsed) {
        problem = Some(format!("ncu exited 0 but {unreadable}"));
        StageStatus::NcuFailed
    } else {
        StageStatus::Ok
    };
    let log = (status != StageStatus::Ok).then(|| {
        let mut t = tail_lines(&console, 20);
        if status == StageStatus::NoMatch {
            // A blank line ends the list: the program's own output follows it.
            t = format!("{}\n\n{}", scan.available_kernels.join("\n"), t);
        }
        t
    });
    let outcome = StageOutcome {
        stage: collection.name().to_string(),
        why,
        command: cmd.to_string(),
        exit_code,
        wall_ms,
        passes,
        launches,
        status,
        output: output_rel,
        log,
    };
    StageRan { outcome, page: parsed, signal, problem, no_line_info: scan.no_line_info }
}

/// Why ncu could not be started for `collection`, with the longest argument's length: Linux
/// takes at most 128 KiB in one argument, and none with a NUL byte.
fn not_started(msg: &str, cmd: &ProcessBuilder, collection: &StageCollection) -> String {
    let longest = cmd.get_args().iter().map(|a| a.len()).max().unwrap_or(0);
    format!(
        "ncu could not be started for stage {} ({msg}); its longest argument is {longest} bytes (Linux takes \
         at most {} in one, and no NUL byte): a kernel filter or window too large for a command line",
        collection.name(),
        MAX_ARG_BYTES
    )
}

/// The most bytes Linux takes in one argument (`MAX_ARG_STRLEN`, 32 pages).
pub const MAX_ARG_BYTES: usize = 128 * 1024;

/// The page `cmd` wrote at `path` for `collection`; cut to the columns its stages' own
/// runs print when the run also collected the source section ([`without_source_section`]).
fn read_page(path: &Path, collection: &StageCollection, cmd: &ProcessBuilder) -> std::io::Result<Vec<u8>> {
    let bytes = std::fs::read(path)?;
    match crate::ncu::command::exports_report(cmd) {
        true => Ok(without_source_section(path, &bytes, &collection.stages()).unwrap_or(bytes)),
        false => Ok(bytes),
    }
}

/// The page of a run of `stages` (basic, or basic merged with follow-ups) that also
/// collected the source section, cut to the columns a run of those stages prints without
/// it ([`crate::ncu::stages::merged::printed_without_source`]) and written back; `None`
/// when it cannot be cut (left as ncu wrote it).
fn without_source_section(path: &Path, bytes: &[u8], stages: &[Stage]) -> Option<Vec<u8>> {
    let text = String::from_utf8_lossy(bytes);
    let page = RawPage::parse(&text, "").ok()?;
    let cut =
        page.text_with_columns(&text, |c| crate::ncu::stages::merged::printed_without_source(c, stages))?;
    crate::profile::fs::write_atomic(path, &cut).ok()?;
    Some(cut.into_bytes())
}

/// Why the page a stage wrote cannot be read, naming the file; `None` when it can.
fn unreadable_page(
    collection: &StageCollection,
    output_rel: &str,
    written: &std::io::Result<Vec<u8>>,
    parsed: &Result<RawPage, String>,
) -> Option<String> {
    let bytes = match written {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(format!("wrote no {output_rel}")),
        Err(e) => return Some(format!("{output_rel} cannot be read: {e}")),
        Ok(b) => b,
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Some(format!("{output_rel} is empty"));
    }
    let error = if *collection == StageCollection::Named(Stage::Source) {
        SourcePage::parse(&String::from_utf8_lossy(bytes), output_rel).err().map(|e| e.to_string())
    } else {
        parsed.as_ref().err().cloned()
    };
    error.map(|e| format!("{output_rel} is not the page it asked for: {e}"))
}

/// Appends `text` to the kernel's `commands.sh`.
pub(super) fn append_command(dir: &ProfileDir, text: &str) -> Result<()> {
    crate::profile::fs::append(&dir.commands_script_path(), text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// basic's page written by a run that also exported the report (an H200 run of
    /// `aos_field_gather`, 422 columns) is read, and left on disk, with basic's own 305; a
    /// page of a run without the report is read as written.
    #[test]
    fn basic_s_page_from_the_run_with_the_report_keeps_basic_s_columns() {
        let recorded = kprof_testkit::recordings().join("source-import/with-report/01_basic_raw.csv");
        let dir = tempfile::tempdir().unwrap();
        let page = dir.path().join("01_basic_raw.csv");
        let columns =
            |bytes: &[u8]| RawPage::parse(&String::from_utf8_lossy(bytes), "").unwrap().columns.len();
        let mut plain = ProcessBuilder::new("ncu");
        plain.args(["--metrics", "gpu__time_duration.sum", "--csv", "--page", "raw"]);
        std::fs::copy(&recorded, &page).unwrap();
        let basic = StageCollection::Named(Stage::Basic);
        assert_eq!(columns(&read_page(&page, &basic, &plain).unwrap()), 422);
        let mut exported = ProcessBuilder::new("ncu");
        exported.args(["--section", "SourceCounters", "--export", "r.ncu-rep", "--force-overwrite"]);
        assert_eq!(columns(&read_page(&page, &basic, &exported).unwrap()), 305);
        assert_eq!(columns(&std::fs::read(&page).unwrap()), 305, "written back");
        // The same page read as a merged first run's (basic with compute): the section's
        // columns go but those compute asks for too (its run prints them), basic's stay.
        std::fs::copy(&recorded, &page).unwrap();
        let merged = StageCollection::Merged(vec![Stage::Basic, Stage::Compute]);
        let kept =
            RawPage::parse(&String::from_utf8_lossy(&read_page(&page, &merged, &exported).unwrap()), "")
                .unwrap()
                .columns;
        let compute_s: Vec<&String> = kept
            .iter()
            .filter(|c| !crate::ncu::stages::merged::printed_alone(c, Stage::Basic))
            .inspect(|c| assert!(crate::ncu::stages::merged::printed_alone(c, Stage::Compute), "{c}"))
            .collect();
        assert_eq!(kept.len(), 305 + compute_s.len());
        assert!(kept.len() < 422);
    }
}
