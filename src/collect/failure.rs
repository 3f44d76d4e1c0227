//! What a stage that did not end `ok` tells the user: the message, and the help that
//! names the fix.

use super::discover::{closeness, Census};
use super::run::StageRan;
use super::window;
use crate::error::{ExitCode, Failure, Signal};
use crate::model::filter::KernelFilter;
use crate::model::kinds::LaunchWindow;
use crate::model::stage::Stage;
use crate::ncu::command::StageCollection;
use crate::ncu::privilege::{self, Privilege, PERMISSION_GUIDE};
use crate::plan::KernelPlan;
use crate::process::{self, ProcessBuilder};
use crate::profile::StageStatus;

/// A filter that matched no launch, explained by the census of launches when there is
/// one: the window, every kernel ncu saw with its launch count, and the fix.
pub(super) fn no_match(
    kernel: &KernelPlan,
    filter: &KernelFilter,
    window: LaunchWindow,
    census: Option<&Census>,
    log: &str,
) -> Failure {
    let Some(census) = census else {
        return stage_failure(
            &StageEnd { status: StageStatus::NoMatch, signal: None, problem: None, stage: String::new() },
            kernel,
            filter,
            log,
            &ProcessBuilder::new("ncu"),
        )
        .help(format!("the launch window was {}", window.describe()));
    };
    let matched = census.launches_matching(filter);
    let f = Failure::new(
        ExitCode::NoKernelMatched,
        format!(
            "the kernel filter `{}` matched no launch of `{}` in the window {}",
            filter.to_ncu_arg(),
            kernel.name,
            window.describe()
        ),
    );
    if census.kernels.is_empty() {
        return f.help(
            "a durations-only pass over every launch saw no kernel at all: the program launched none under ncu              (check its arguments, and that it runs on the GPU)",
        );
    }
    let f = f.help(format!(
        "launches ncu saw (every launch, durations only), closest first: {}",
        census.listing(Some(&kernel.name))
    ));
    match window::set_window_advice(window, matched) {
        Some(advice) => f.help(advice),
        None if matched > 0 => f.help(format!(
            "the filter matches {matched} launch(es), none inside the window: widen it with --launch-skip/--launch-count"
        )),
        None => f.help("pass --kernel with part of one of those names (`=NAME` for exactly that function), or --kernel-regex"),
    }
}

/// How a stage that did not end `ok` ended.
pub(super) struct StageEnd {
    pub status: StageStatus,
    pub signal: Option<Signal>,
    pub problem: Option<String>,
    pub stage: String,
}

pub(super) fn stage_failure(
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
        StageStatus::NcuFailed if end.problem.as_deref().is_some_and(|p| p.contains("another profiling session")) => {
            Failure::new(ExitCode::NcuFailed, end.problem.clone().unwrap_or_default())
                .help(
                    "wait for the other profiler (another ncu or kprof on this GPU, DCGM's profiling metrics) \
                     or pick another GPU with CUDA_VISIBLE_DEVICES, then run again",
                )
                .help(
                    "ncu processes on one GPU wait for each other through a lock file under $TMPDIR: \
                     processes given different TMPDIRs collide instead",
                )
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

/// Whether a stage that ended with `status` may fail and the run go on: `auto`'s source
/// stage (the hot lines are an addition to the verdict, not its ground; also after
/// discovery and as SASS only), when ncu or the program failed; a permission error, a
/// timeout or a signal still ends the run.
pub(super) fn hot_lines_may_fail(auto: bool, collection: &StageCollection, status: StageStatus) -> bool {
    auto && *collection == StageCollection::Named(Stage::Source)
        && matches!(status, StageStatus::NcuFailed | StageStatus::TargetFailed)
}

/// What went wrong with a source stage, in a few words.
pub(super) fn hot_lines_problem(ran: &StageRan) -> String {
    ran.problem.clone().unwrap_or_else(|| format!("it ended `{}`", ran.outcome.status.name()))
}
