//! Running the stages: one ncu run per stage, `basic` first, then (for `auto`) the one
//! follow-up the rules choose from basic's metrics.
//!
//! Each run writes its CSV through `--log-file` into `details/`; the target's own output
//! is kept only when a stage fails, in `run_manifest.yaml`. ncu exits 0 when the filter
//! matches nothing, so every log is read for that, and for the counter-permission error,
//! before the next stage starts. Under `--sudo` the output is also read for sudo's
//! refusal (`sudo: a password is required`), which stops the run the same way, with
//! exit code 7. ncu exiting 0 without a readable page (no file, an empty one, something
//! else), or killed by a signal, stops it with exit code 13 and the file or signal named.
//! The manifest is written whatever happens ([`collect`] writes the stages as they end,
//! [`record_ending`] the exit code and message of every ending), so a failed, partial or
//! interrupted run still says what ran, why, and how it ended.

pub mod discover;
pub mod environment;
pub mod prepare;
pub mod timing;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::analyze::{rules::Rules, summary};
use crate::error::{exit_code_of, ExitCode, Failure, Signal};
use crate::model::filter::KernelFilter;
use crate::model::stage::{Stage, StageSelection};
use crate::ncu::command::{stage_command, StageCollection, StageRun, TargetCommand};
use crate::ncu::parse::{scan_log, RawPage, SourcePage};
use crate::ncu::privilege::{self, Privilege, PERMISSION_GUIDE};
use crate::plan::{KernelPlan, StagePlan};
use crate::process::{self, shell_comment, tail_lines, Ending, ProcessBuilder, RunOptions};
use crate::profile::{ProfileDir, RunManifest, StageOutcome, StageStatus};
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
}

/// Runs the stages of one kernel, reporting each step through `shell`. The manifest is
/// written when the stages end, however they end.
pub fn collect(run: &KernelRun<'_>, rules: &Rules, shell: &Shell) -> Result<RunManifest> {
    let mut manifest = RunManifest::new(&run.kernel.name, run.kernel.privilege);
    let started = Instant::now();
    let mut ncu_ms = 0u64;
    let result = collect_stages(run, rules, shell, &mut manifest, &mut ncu_ms);
    manifest.kprof_overhead_ms = (started.elapsed().as_millis() as u64).saturating_sub(ncu_ms);
    manifest.write(run.dir)?;
    result.map(|()| manifest)
}

fn collect_stages(
    run: &KernelRun<'_>,
    rules: &Rules,
    shell: &Shell,
    manifest: &mut RunManifest,
    ncu_ms: &mut u64,
) -> Result<()> {
    let KernelRun { dir, kernel, target, ncu, first, timeout } = *run;
    let say = |line: &str| shell.status(line);
    // The filter is the plan's, or the one discovery chooses.
    let mut filter: Option<KernelFilter> = kernel.filter.clone();
    let auto = matches!(kernel.stages, StagePlan::Stages(StageSelection::Auto));
    let mut queue: Vec<(StageCollection, ProcessBuilder, String)> = first
        .iter()
        .map(|(c, p)| {
            (c.clone(), p.clone(), if auto { "auto: always first".into() } else { "requested".into() })
        })
        .collect();
    let mut i = 0;
    while i < queue.len() {
        let (collection, cmd, why) = queue[i].clone();
        i += 1;
        say(&format!("Profiling `{}`: stage {} ({})", kernel.name, collection.name(), why));
        let bar = if shell.progress() {
            indicatif::ProgressBar::new_spinner()
        } else {
            indicatif::ProgressBar::hidden()
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        let passes_hint = match &collection {
            StageCollection::Named(s) => crate::ncu::stages::definition(*s)
                .passes_h200
                .map(|p| format!(", about {p} passes per launch"))
                .unwrap_or_default(),
            _ => String::new(),
        };
        bar.set_message(format!("ncu: stage {} of `{}`{passes_hint}", collection.name(), kernel.name));
        bar.enable_steady_tick(Duration::from_millis(120));
        let ran = run_stage(dir, &collection, &cmd, why, timeout, kernel.privilege, shell);
        bar.finish_and_clear();
        *ncu_ms += ran.outcome.wall_ms;
        let status = ran.outcome.status;
        let log = ran.outcome.log.clone();
        manifest.stages.push(ran.outcome);
        if status != StageStatus::Ok {
            manifest.status = status;
            let everything = KernelFilter::regex(".*");
            let f = filter.as_ref().unwrap_or(&everything);
            let end = StageEnd {
                status,
                signal: ran.signal,
                problem: ran.problem,
                stage: collection.name().to_string(),
            };
            return Err(stage_failure(&end, kernel, f, log.as_deref().unwrap_or(""), &cmd).into());
        }
        let page = ran.page;
        let passes = manifest.stages.last().map(|s| s.passes.clone()).unwrap_or_default();
        // The source page has no pass column: say only that it finished.
        say(&match passes.first() {
            Some(p) => format!("  done: {p} pass(es) per launch"),
            None => "  done".to_string(),
        });
        let stage_cmd = |collection: &StageCollection, filter: &KernelFilter| {
            let log = dir.stage_raw_path(collection);
            stage_command(
                ncu,
                &StageRun {
                    collection,
                    filter: Some(filter),
                    window: kernel.window,
                    clock_control: kernel.clock_control,
                    log_file: &log,
                    target,
                    privilege: kernel.privilege,
                },
            )
        };
        if collection == StageCollection::Discovery {
            let chosen = discover::discover(dir, page)?;
            say(&format!("Discovery: profiling `{}` ({})", chosen.0, chosen.1));
            let f = KernelFilter::from_hint(&chosen.0);
            for (n, c) in kernel.stage_collections().into_iter().enumerate() {
                let cmd = stage_cmd(&c, &f);
                append_command(
                    dir,
                    &format!("# Stage {}: {} (kernel chosen by discovery)\n{cmd}\n", n + 1, c.name()),
                )?;
                queue.push((c, cmd, format!("for `{}`, chosen by discovery", chosen.0)));
            }
            filter = Some(f);
            continue;
        }
        let Some(filter) = filter.as_ref() else { continue };
        if auto && collection == StageCollection::Named(Stage::Basic) {
            let (stage, reason) = follow_up(page, rules, filter)?;
            say(&format!("Follow-up: {stage} ({reason})"));
            let follow = StageCollection::Named(stage);
            let cmd = stage_cmd(&follow, filter);
            append_command(dir, &format!("# Stage 2: {stage}, chosen: {}\n{cmd}\n", shell_comment(&reason)))?;
            queue.push((follow, cmd, format!("auto follow-up: {reason}")));
        }
    }
    Ok(())
}

/// Records how the run of `kernel` ended in its `run_manifest.yaml`: the exit code, the
/// message of a failure, and a status when the stages ended `ok` but the run did not
/// (the timing run, the analysis, a signal between stages). A run that never reached
/// the stages gets a manifest with none.
pub fn record_ending(dir: &ProfileDir, kernel: &KernelPlan, end: Result<(), &anyhow::Error>) -> Result<()> {
    let code = end.map_or_else(exit_code_of, |()| ExitCode::Success);
    let mut manifest =
        RunManifest::read(dir).unwrap_or_else(|_| RunManifest::new(&kernel.name, kernel.privilege));
    if manifest.status == StageStatus::Ok {
        manifest.status = StageStatus::of_exit(code);
    }
    manifest.exit_code = Some(code.code());
    manifest.message = end.err().map(|e| {
        let failure = e.chain().find_map(|c| c.downcast_ref::<Failure>());
        failure.map_or_else(|| format!("{e:#}"), |f| f.message.clone())
    });
    manifest.write(dir)
}

/// Records that `kernel` was never run: an earlier kernel's run ended the whole run with
/// `code`.
pub fn record_not_run(dir: &ProfileDir, kernel: &KernelPlan, code: ExitCode) -> Result<()> {
    let mut manifest = RunManifest::new(&kernel.name, kernel.privilege);
    manifest.status = StageStatus::NotRun;
    manifest.exit_code = Some(code.code());
    manifest.message = Some(format!("not run: an earlier kernel's run ended the run ({})", code.name()));
    manifest.write(dir)
}

/// What one stage left: its manifest entry, its parsed page and, when it failed, why.
struct StageRan {
    outcome: StageOutcome,
    page: Result<RawPage, String>,
    /// The signal kprof received, when that stopped the stage.
    signal: Option<Signal>,
    /// What went wrong in words, when the console alone does not say it (ncu killed by a
    /// signal, a missing or unreadable page).
    problem: Option<String>,
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
        Ending::NotStarted(_) => (None, Some(StageStatus::TargetFailed), None),
    };
    let console = match &done.ending {
        Ending::NotStarted(msg) => format!("{msg}\n{}", done.console()),
        _ => done.console(),
    };
    let written = std::fs::read(dir.path().join(&output_rel));
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
    let mut problem = None;
    let status = if let Some(ended) = ended {
        ended
    } else if scan.permission_denied || sudo_refused {
        StageStatus::Permission
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
    StageRan { outcome, page: parsed, signal, problem }
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

/// The follow-up stage and why, from the rules over basic's metrics (its parsed page).
fn follow_up(page: Result<RawPage, String>, rules: &Rules, filter: &KernelFilter) -> Result<(Stage, String)> {
    // A stage ends `ok` only with a readable page (see `unreadable_page`).
    let page = page.map_err(|e| Failure::new(ExitCode::NcuFailed, e))?;
    let re = regex::Regex::new(&filter.pattern).ok();
    let summary = summary::summarize([&page], re.as_ref());
    let Some(k) = summary.kernels.first() else {
        return Ok((Stage::SpeedOfLight, "basic gave no metrics for the filtered kernel".into()));
    };
    let v = rules.decide(k);
    let stage: Stage = v.follow_up_stage;
    // The conditions that decided, then each field they read with its value, once.
    let deciding: Vec<&crate::analyze::rules::Evidence> = v
        .evidence
        .iter()
        .filter(|e| e.threshold != "-")
        // A limiter's own conditions say why; the class rule's would repeat them.
        .filter(|e| v.limiter.as_ref().is_none_or(|l| e.rule == l.id))
        .collect();
    let mut conditions: Vec<&str> = Vec::new();
    let mut values: Vec<String> = Vec::new();
    for e in &deciding {
        if !conditions.contains(&e.threshold.as_str()) {
            conditions.push(&e.threshold);
        }
        let value = format!("{} = {}", e.field, crate::units::value(e.value));
        if !values.contains(&value) {
            values.push(value);
        }
    }
    let evidence = [format!("{} ({})", conditions.join(", "), values.join(", "))];
    let reason = match (&v.limiter, &v.rule) {
        (Some(l), _) => format!("limiter `{}` ({}): {}", l.id, v.classification.name(), evidence.join(", ")),
        (None, Some(rule)) => format!("rule `{rule}` ({}): {}", v.classification.name(), evidence.join(", ")),
        (None, None) => format!("no rule decided (missing: {})", v.missing.join(", ")),
    };
    Ok((stage, reason))
}

/// How a stage that did not end `ok` ended.
struct StageEnd {
    status: StageStatus,
    signal: Option<Signal>,
    problem: Option<String>,
    stage: String,
}

fn stage_failure(
    end: &StageEnd,
    kernel: &KernelPlan,
    filter: &KernelFilter,
    log: &str,
    cmd: &ProcessBuilder,
) -> Failure {
    // What ncu and the program printed last, or that they printed nothing.
    let printed = if log.trim().is_empty() {
        "ncu and the program printed nothing".to_string()
    } else {
        format!("what ncu and the program printed last:\n{log}")
    };
    match end.status {
        StageStatus::NoMatch => {
            let mut seen: Vec<&str> = log.lines().take_while(|l| !l.trim().is_empty()).collect();
            seen.retain(|l| !l.starts_with("=="));
            let hint = kernel.name.to_lowercase();
            seen.sort_by_key(|k| closeness(&hint, &k.to_lowercase()));
            let mut f = Failure::new(
                ExitCode::NoKernelMatched,
                format!(
                    "the kernel filter `{}` matched no kernel launched by `{}`",
                    filter.to_ncu_arg(),
                    kernel.name
                ),
            );
            f = if seen.is_empty() {
                f.help("ncu listed no kernels: the program launched none inside the profiling window")
            } else {
                f.help(format!("kernels ncu saw, closest first: {}", seen.join(", ")))
            };
            f.help("pass --kernel with part of one of those names, or --kernel-regex")
        }
        StageStatus::Permission => {
            match privilege::sudo_refusal(log).filter(|_| kernel.privilege == Privilege::Sudo) {
                Some(line) => privilege::sudo_refused(line),
                None => Failure::new(ExitCode::Permission, PERMISSION_GUIDE),
            }
        }
        StageStatus::Timeout => {
            Failure::new(ExitCode::Timeout, format!("ncu ran past --timeout and was stopped:\n{log}"))
                .help("raise --timeout, or profile fewer launches (--launch-count)")
        }
        StageStatus::Interrupted => {
            let signal = end.signal.or_else(process::pending_signal).unwrap_or(Signal::Int);
            process::interrupted(signal, &format!("during stage {}", end.stage))
        }
        StageStatus::NcuFailed => Failure::new(
            ExitCode::NcuFailed,
            format!("{}; {printed}", end.problem.as_deref().unwrap_or("ncu failed")),
        )
        .help(format!("the command was: {cmd}"))
        .help("run it by hand to see what ncu says; `cargo kprof doctor` checks the setup"),
        _ => Failure::new(
            ExitCode::TargetFailed,
            match &end.problem {
                Some(p) => format!("the profiled program failed under ncu ({p}); {printed}"),
                None => format!("the profiled program failed under ncu; {printed}"),
            },
        )
        .help(format!("the command was: {cmd}")),
    }
}

/// Smaller is closer: 0 for a substring match, else one more than the edit distance.
fn closeness(hint: &str, name: &str) -> usize {
    if name.contains(hint) {
        0
    } else {
        1 + crate::suggest::edit_distance(hint, name)
    }
}

fn append_command(dir: &ProfileDir, text: &str) -> Result<()> {
    crate::profile::fs::append(&dir.commands_script_path(), text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_kernels_first() {
        let mut names = ["transpose_kernel", "hgemm_tiled", "copy_kernel"];
        names.sort_by_key(|n| closeness("hgemm", n));
        assert_eq!(names[0], "hgemm_tiled");
    }
}
