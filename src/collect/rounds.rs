//! The timing half of an A/B check (`check --base`): both sides' harness timings in
//! interleaved rounds on one GPU.
//!
//! A round runs each side's bench once, as [`super::timing`] runs it for `check`, writing
//! the harness result to that side's `details/rounds/round_NN.json`. The side that runs
//! first alternates (base, head; head, base; ...), so a slow drift of the GPU (warming up,
//! a neighbour's load, a clock that sags) lands on both sides equally and cancels in the
//! per-round ratio. A round is a whole process, not a loop inside one: the two sides are
//! different executables, and a process per round also samples what differs between runs
//! of one build (allocation addresses, module load), which a change must clear too.
//!
//! The rounds time the kernels of one program together: the harness times every case
//! that `KPROF_CASE` selects in one process, so a round runs each side's program once with
//! `KPROF_CASE` the alternation of the kernels' cases ([`crate::model::filter::alternation`]) and takes
//! each kernel's measurement, and its SM clock, out of that one result. The result is
//! written once, to the first kernel's `details/rounds/round_NN.json`, and copied to the
//! others'; each kernel's `commands.sh` names the kernels that shared the command. A
//! program starts once per side and round instead of once per kernel, side and round
//! (each start compiles its kernels and sets up their inputs), and a drift still lands on
//! both sides of every kernel's round alike.
//!
//! Each run measures hot launches only (`KPROF_MODE=hot`) for at least 0.1 s of GPU time
//! per case (`KPROF_MIN_TIME`) to a loose noise target of 2 % (`KPROF_MAX_NOISE`) within 3 s
//! (`KPROF_TIMEOUT`), unless the kernel's own environment sets them; the correctness
//! check runs in the first round only.

use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use kprof_contract::env as contract;
use kprof_contract::ResultFile;

use super::timing::{run_timing, timing_command, TimingFacts};
use crate::analyze::summary::{median_and_spread, unit_scale};
use crate::error::{ExitCode, Failure};
use crate::model::ab::Side;
use crate::model::filter::KernelFilter;
use crate::model::kinds::{ClockControl, Privilege};
use crate::ncu::command::stage_command;
use crate::ncu::parse::RawPage;
use crate::ncu::{LaunchWindow, StageCollection, StageRun, TargetCommand};
use crate::process::{self, Ending, RunOptions};
use crate::profile::dir::ProfileDir;
use crate::shell::Shell;

/// GPU time each side measures per case and round, unless the kernel's environment says
/// otherwise. Much of the rounds' spread is the difference between processes (allocation,
/// module load, clocks), which measuring longer inside one does not reduce. Two zoo-wide
/// A/A checks on an H200 (`fixtures/h200/ab-sweep`): at 100 ms the 28-kernel check's
/// rounds took about a fifth less time than at 200 ms, and the median standard deviation
/// of a kernel's round-to-round change rose from 0.23 % to 0.29 %. A few kernels lost more
/// (`hmma_loop` 0.17 % -> 1.32 %, `smem_byte_sum` 0.14 % -> 0.84 %), so this is a trade of
/// resolution for time that a kernel may undo with its own `KPROF_MIN_TIME`.
pub const ROUND_MIN_TIME: &str = "100ms";
/// The noise target of a round's measurement, percent: loose, see [`round_target`].
pub const ROUND_MAX_NOISE: &str = "2";
/// The wall-time limit of a round's measurement.
pub const ROUND_TIMEOUT: &str = "3s";

/// One side of the rounds: its program (with the harness environment, `KPROF_CASE`
/// selecting every member's case).
#[derive(Clone, Copy)]
pub struct RoundSide<'a> {
    /// Base or head.
    pub side: Side,
    /// The bench, as profiling runs it.
    pub target: &'a TargetCommand,
}

/// One kernel on one side of a program's rounds: where its results go and which case of
/// the harness result is its own.
#[derive(Clone, Copy)]
pub struct MemberSide<'a> {
    /// The kernel's profile directory on this side.
    pub dir: &'a ProfileDir,
    /// The kernel's harness case on this side (`None`: the result's only case).
    pub case: Option<&'a str>,
}

/// One kernel timed by a program's rounds.
#[derive(Clone, Copy)]
pub struct RoundMember<'a> {
    /// kprof's name of the kernel.
    pub kernel: &'a str,
    /// Its base side.
    pub base: MemberSide<'a>,
    /// Its head side.
    pub head: MemberSide<'a>,
}

impl<'a> RoundMember<'a> {
    /// The member's `side`.
    pub fn side(&self, side: Side) -> MemberSide<'a> {
        match side {
            Side::Base => self.base,
            Side::Head => self.head,
        }
    }
}

/// One side's run in one round.
#[derive(Debug, Clone)]
pub struct SideRun {
    /// Which side.
    pub side: Side,
    /// The round, from 0.
    pub round: u32,
    /// The harness' measurement of the case.
    pub facts: TimingFacts,
    /// The SM clock right after the measurement, when the harness could measure it.
    pub sm_clock_mhz: Option<f64>,
}

/// The command a side runs in `round`: the target with the round's settings.
pub fn round_target(target: &TargetCommand, round: u32) -> TargetCommand {
    let mut t = target.clone();
    t.env.entry(contract::MODE.to_string()).or_insert_with(|| "hot".to_string());
    t.env.entry(contract::MIN_TIME.to_string()).or_insert_with(|| ROUND_MIN_TIME.to_string());
    // The rounds' spread is the noise the verdict reads; a round need not reach the
    // harness' own 0.5 % target (on the H200 a 546 us copy hovered at 0.50-0.52 % and ran
    // to the 10 s limit in some rounds, not others).
    t.env.entry(contract::MAX_NOISE.to_string()).or_insert_with(|| ROUND_MAX_NOISE.to_string());
    t.env.entry(contract::TIMEOUT.to_string()).or_insert_with(|| ROUND_TIMEOUT.to_string());
    if round > 0 {
        t.env.insert(contract::NO_CHECK.to_string(), "1".to_string());
    }
    t
}

/// Runs the interleaved rounds `rounds` (numbered from 0: `0..12` at first, `12..24` for
/// more of the same) of both sides' harness benches for the kernels `members` of one
/// program: each round runs each side's program once, and each member's measurement is
/// its case in that one result. Returns each member's runs, in the order of `members`.
/// The result is written to the first member's `details/rounds/round_NN.json` and copied
/// to the others'.
pub fn run_rounds(
    sides: [RoundSide<'_>; 2],
    members: &[RoundMember<'_>],
    rounds: Range<u32>,
    timeout: Option<Duration>,
    shell: &Shell,
) -> Result<Vec<Vec<SideRun>>> {
    let Some(first) = members.first() else { return Ok(Vec::new()) };
    let shown = rounds.start.max(1);
    for s in &sides {
        let cmd =
            timing_command(&round_target(s.target, shown), &first.side(s.side).dir.round_result_path(shown));
        for (i, m) in members.iter().enumerate() {
            note_command(m.side(s.side).dir, &rounds_comment(members, i, &rounds), &cmd)?;
        }
    }
    let kernels: Vec<&str> = members.iter().map(|m| m.kernel).collect();
    interleave(rounds, &kernels, shell, |side, round| {
        let Some(s) = sides.iter().find(|s| s.side == side) else { anyhow::bail!("no {} side", side.name()) };
        let result = first.side(side).dir.round_result_path(round);
        run_timing(&round_target(s.target, round), &result, timeout, shell)?;
        let doc: Option<ResultFile> = crate::profile::fs::read_json(&result)?;
        let Some(doc) = doc else {
            anyhow::bail!("{}: the harness wrote no result", result.display());
        };
        let bytes = if members.len() > 1 { std::fs::read(&result)? } else { Vec::new() };
        let mut runs = Vec::with_capacity(members.len());
        for (i, m) in members.iter().enumerate() {
            let own = m.side(side);
            if i > 0 {
                crate::profile::fs::write_atomic_bytes(&own.dir.round_result_path(round), &bytes)?;
            }
            let (facts, sm_clock_mhz) = measurement(&doc, m.kernel, own.case, &result)?;
            runs.push(SideRun { side, round, facts, sm_clock_mhz });
        }
        Ok(runs)
    })
}

/// What member `own`'s `commands.sh` says above the command of `members`' `rounds`.
fn rounds_comment(members: &[RoundMember<'_>], own: usize, rounds: &Range<u32>) -> String {
    let mut why = if rounds.start == 0 {
        "A/B timing rounds: round 2's command; each round ran it with its own result file \
         (round 1 without KPROF_NO_CHECK)"
            .to_string()
    } else {
        format!(
            "A/B timing rounds {}-{}, run because the first {} could not decide: round {}'s command; \
             each round ran it with its own result file",
            rounds.start + 1,
            rounds.end,
            rounds.start,
            rounds.start + 1
        )
    };
    if members.len() > 1 {
        let others: Vec<String> = members
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != own)
            .map(|(_, m)| format!("`{}`", m.kernel))
            .collect();
        let result = match own {
            0 => "written here and copied to theirs".to_string(),
            _ => format!("written to `{}`'s details/rounds and copied here", members[0].kernel),
        };
        why.push_str(&format!(
            "\n# The command was shared with {}: one run timed their cases and this kernel's; \
             its result was {result}",
            others.join(", ")
        ));
    }
    why
}

/// The measurement of `kernel`'s `case` in the harness result `doc` (read from `result`),
/// and the SM clock right after it.
fn measurement(
    doc: &ResultFile,
    kernel: &str,
    case: Option<&str>,
    result: &Path,
) -> Result<(TimingFacts, Option<f64>)> {
    let Some(facts) = TimingFacts::of(doc, case) else {
        return Err(Failure::new(
            ExitCode::TargetFailed,
            format!(
                "{}: no measurement of case `{}` of kernel `{kernel}` in the harness result",
                result.display(),
                case.unwrap_or("(any)")
            ),
        )
        .help("check that the kernel's `case` names a case its bench registers")
        .into());
    };
    Ok((facts, crate::model::timing::case_result(doc, case).and_then(|c| c.sm_clock_mhz)))
}

/// One side of rounds timed by ncu, for a program that is not a harness bench: the
/// kernel's own filter and window, durations only (one pass per launch).
#[derive(Clone, Copy)]
pub struct NcuRoundSide<'a> {
    /// Base or head.
    pub side: Side,
    /// The ncu the side's profile ran.
    pub ncu: &'a Path,
    /// The program, as profiling runs it.
    pub target: &'a TargetCommand,
    /// The kernel filter.
    pub filter: &'a KernelFilter,
    /// The window the side's stages ran with (fitted, when kprof fitted it).
    pub window: LaunchWindow,
    /// ncu's clock control.
    pub clock_control: ClockControl,
    /// How ncu is started.
    pub privilege: Privilege,
    /// The side's profile directory.
    pub dir: &'a ProfileDir,
    /// The profiled kernel's function, as ncu names it: the launches kept.
    pub function: Option<&'a str>,
}

/// Runs `rounds` interleaved rounds of both sides under ncu, each round's page kept as
/// `details/rounds/round_NN_raw.csv`. A round's measurement is the median of ncu's
/// `gpu__time_duration.sum` over the window's launches of the kernel; ncu replays each
/// launch with caches flushed, so it is a `cold` time, and the clocks are not read.
pub fn run_ncu_rounds(
    kernel: &str,
    sides: [NcuRoundSide<'_>; 2],
    rounds: u32,
    timeout: Option<Duration>,
    shell: &Shell,
) -> Result<Vec<SideRun>> {
    let command = |s: &NcuRoundSide<'_>, log: &Path| {
        stage_command(
            s.ncu,
            &StageRun {
                collection: &StageCollection::Discovery,
                filter: Some(s.filter),
                window: s.window,
                clock_control: s.clock_control,
                log_file: log,
                target: s.target,
                privilege: s.privilege,
                ranges: &[],
                report: None,
            },
        )
    };
    for s in &sides {
        let cmd = command(s, &s.dir.round_page_path(0));
        note_command(
            s.dir,
            "A/B timing rounds (ncu durations): round 1's command; each round wrote its own page",
            &cmd,
        )?;
    }
    let mut runs = interleave(0..rounds, &[kernel], shell, |side, round| {
        let Some(s) = sides.iter().find(|s| s.side == side) else { anyhow::bail!("no {} side", side.name()) };
        let log = s.dir.round_page_path(round);
        let cmd = command(s, &log);
        let done = process::run(&cmd, RunOptions { timeout, ..Default::default() }, shell);
        let failed = |what: String| -> anyhow::Error {
            Failure::new(ExitCode::NcuFailed, what)
                .help(format!("the command was: {}", cmd.command_line()))
                .into()
        };
        match &done.ending {
            Ending::Interrupted(signal) => {
                return Err(process::interrupted(*signal, "during a timing round").into())
            }
            Ending::TimedOut => {
                return Err(Failure::new(
                    ExitCode::Timeout,
                    "a timing round ran past --timeout and was stopped",
                )
                .help(format!("the command was: {}", cmd.command_line()))
                .into())
            }
            Ending::Exited(status) if status.success() && log.is_file() => {}
            other => {
                return Err(failed(format!(
                    "ncu's timing round {} of the {} failed: {other}",
                    round + 1,
                    side.name()
                )))
            }
        }
        let text = std::fs::read_to_string(&log)?;
        let origin = log.display().to_string();
        let page = RawPage::parse(&text, &origin).map_err(|e| failed(e.to_string()))?;
        let facts = ncu_round_facts(&page, &origin, s.function)?;
        Ok(vec![SideRun { side, round, facts, sm_clock_mhz: None }])
    })?;
    Ok(runs.pop().unwrap_or_default())
}

/// What one ncu round measured: the median of `gpu__time_duration.sum` over the page's
/// launches of `function` (every launch when `None`), in nanoseconds, as a `cold` time.
/// `origin` names the page in errors.
pub fn ncu_round_facts(page: &RawPage, origin: &str, function: Option<&str>) -> Result<TimingFacts> {
    let mut durations: Vec<f64> = page
        .launches()
        .filter(|l| function.is_none_or(|f| l.kernel_name() == f))
        .filter_map(|l| {
            let unit = l.unit(DURATION).map(unit_scale).unwrap_or(1.0);
            l.number(DURATION).map(|v| v * unit)
        })
        .collect();
    let samples = durations.len();
    let Some((median_ns, rel_noise)) = median_and_spread(&mut durations) else {
        return Err(Failure::new(
            ExitCode::NoKernelMatched,
            format!("{origin}: no launch of `{}` in the timing round", function.unwrap_or("the kernel")),
        )
        .into());
    };
    Ok(TimingFacts {
        case: function.unwrap_or_default().to_string(),
        mode: "cold".into(),
        median_ns,
        samples,
        rel_noise,
    })
}

/// ncu's duration metric.
const DURATION: &str = "gpu__time_duration.sum";

/// Adds a round's command to `commands.sh`, under `why`.
fn note_command(dir: &ProfileDir, why: &str, cmd: &crate::process::ProcessBuilder) -> Result<()> {
    std::fs::create_dir_all(dir.rounds_dir())?;
    super::append_command(dir, &format!("\n# {why}\n{}\n", cmd.command_line()))
}

/// The rounds: in each, both sides once, the first alternating; `run` measures one side,
/// one run for each of the `members` kernels it times. Returns each member's runs.
fn interleave(
    rounds: Range<u32>,
    kernels: &[&str],
    shell: &Shell,
    mut run: impl FnMut(Side, u32) -> Result<Vec<SideRun>>,
) -> Result<Vec<Vec<SideRun>>> {
    let members = kernels.len();
    let mut out: Vec<Vec<SideRun>> = vec![Vec::new(); members];
    for round in rounds {
        crate::process::check_signal("between timing rounds")?;
        let first = Side::first_in_round(round);
        for side in [first, first.other()] {
            let runs = run(side, round)?;
            anyhow::ensure!(
                runs.len() == members,
                "a timing run measured {} of {members} kernels",
                runs.len()
            );
            for (own, r) in out.iter_mut().zip(runs) {
                own.push(r);
            }
        }
        for (own, kernel) in out.iter().zip(kernels) {
            let of = |side: Side| own.iter().rev().find(|r| r.round == round && r.side == side);
            if let (Some(b), Some(h)) = (of(Side::Base), of(Side::Head)) {
                shell.emit(&crate::events::Event::RoundDone {
                    kernel: kernel.to_string(),
                    round: round + 1,
                    base_ns: b.facts.median_ns,
                    head_ns: h.facts.median_ns,
                    change_pct: (h.facts.median_ns / b.facts.median_ns - 1.0) * 100.0,
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kernel_reads_its_own_case_out_of_a_shared_result_or_is_named_missing() {
        assert_eq!(
            crate::model::filter::alternation(["hgemm_naive", "hgemm_tiled"]),
            "(?:hgemm_naive)|(?:hgemm_tiled)"
        );
        let case = |name: &str, median: f64, clock: f64| {
            format!(
                r#"{{"name":"{name}","mode":"hot","graph":false,"batch":1,"samples":10,"median_ns":{median},
                "min_ns":1.0,"max_ns":1.0,"mean_ns":1.0,"stddev_ns":0.0,"rel_noise":0.01,"rel_stddev":0.01,
                "stop_reason":"converged","check":"passed","bytes":null,"flops":null,"gbps":null,
                "tflops":null,"pct_dram_peak":null,"pct_fp32_peak":null,"sm_clock_mhz":{clock}}}"#
            )
        };
        let json = format!(
            r#"{{"schema_version":1,"harness_version":"0.1.0","bench":"compute","device":{{"name":"GPU"}},
            "settings":{{}},"cases":[{},{}]}}"#,
            case("hgemm_naive/m=64", 100.0, 1980.0),
            case("hgemm_tiled/m=64", 40.0, 1710.0)
        );
        let doc: ResultFile = serde_json::from_str(&json).unwrap();
        let result = Path::new("/p/naive/details/rounds/round_03.json");
        let (naive, naive_clock) = measurement(&doc, "naive", Some("hgemm_naive"), result).unwrap();
        let (tiled, tiled_clock) = measurement(&doc, "tiled", Some("hgemm_tiled"), result).unwrap();
        assert_eq!((naive.median_ns, naive_clock), (100.0, Some(1980.0)));
        assert_eq!((tiled.median_ns, tiled_clock), (40.0, Some(1710.0)));
        let missing = measurement(&doc, "copy", Some("copy"), result).unwrap_err().to_string();
        assert!(missing.contains("kernel `copy`") && missing.contains("round_03.json"), "{missing}");
    }

    #[test]
    fn sides_alternate_and_only_the_first_round_checks() {
        assert_eq!(
            (0..4).map(Side::first_in_round).collect::<Vec<_>>(),
            [Side::Base, Side::Head, Side::Base, Side::Head]
        );
        let mut env = std::collections::BTreeMap::new();
        env.insert("KPROF_MIN_TIME".to_string(), "1s".to_string());
        let t = TargetCommand { program: "/b".into(), args: vec![], env, cwd: "/".into(), ptx_cache: None };
        let r0 = round_target(&t, 0);
        assert_eq!(r0.env["KPROF_MODE"], "hot");
        assert_eq!(r0.env["KPROF_MIN_TIME"], "1s", "the kernel's own setting wins");
        assert!(!r0.env.contains_key("KPROF_NO_CHECK"));
        assert_eq!(round_target(&t, 1).env["KPROF_NO_CHECK"], "1");
    }

    /// The one profile directory of a side of a run recorded under
    /// `fixtures/h200/ab-runs/`.
    fn recorded_profile(run: &str, side: &str) -> ProfileDir {
        ProfileDir::at(kprof_testkit::ab_run_profile(run, side))
    }

    /// The rounds of a program that is not a harness bench (the Triton softmax of
    /// `examples/python`) are ncu's durations, one launch per side and round: reading the
    /// recorded pages again gives exactly the medians the check recorded.
    #[test]
    fn ncu_rounds_read_back_from_their_recorded_pages() {
        for run in ["py-aa", "py-slow", "py-slow-2"] {
            let head = recorded_profile(run, "head");
            let rounds: crate::compare::ab::rounds::Rounds =
                serde_json::from_str(&std::fs::read_to_string(head.ab_rounds_path()).unwrap()).unwrap();
            assert_eq!((rounds.source.as_str(), rounds.mode.as_str()), ("ncu", "cold"), "{run}");
            assert_eq!(rounds.rounds.len(), 12, "{run}");
            let function = rounds.case.as_deref();
            assert_eq!(function, Some("softmax_kernel"));
            for (side, dir) in [("base", recorded_profile(run, "base")), ("head", head.clone())] {
                for r in &rounds.rounds {
                    let page = dir.round_page_path(r.index);
                    let text = std::fs::read_to_string(&page).unwrap();
                    let origin = page.display().to_string();
                    let parsed = RawPage::parse(&text, &origin).unwrap();
                    let facts = ncu_round_facts(&parsed, &origin, function).unwrap();
                    let recorded = if side == "base" { &r.base } else { &r.head };
                    assert_eq!(
                        (facts.median_ns, facts.samples),
                        (recorded.median_ns, recorded.samples),
                        "{run} {side}"
                    );
                }
            }
            // Another kernel's name matches no launch of the page: an error, not a zero.
            let page = head.round_page_path(0);
            let text = std::fs::read_to_string(&page).unwrap();
            let parsed = RawPage::parse(&text, "p").unwrap();
            assert!(ncu_round_facts(&parsed, "p", Some("layer_norm")).is_err());
        }
    }
}
