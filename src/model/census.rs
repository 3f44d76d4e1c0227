//! The census of a plain program: how it is bounded and which of its kernels are profiled
//! ([`CensusPlan`], [`Pick`]), and its breakdown ([`Breakdown`]): every kernel of one
//! durations-only ncu pass, with its launches, total and mean time, share of the pass's
//! GPU time and launch shapes.
//!
//! ncu serialises the launches it profiles, so the shares are of serialised GPU time: the
//! sum of every profiled launch's duration, not the program's wall time, in which
//! kernels on several streams may overlap.

use serde::{Deserialize, Serialize};

use crate::error::{ExitCode, Failure};

/// The share of the census' time the default pick covers, percent.
pub const DEFAULT_SHARE_PCT: f64 = 80.0;
/// The most kernels the default pick profiles.
pub const DEFAULT_MAX_KERNELS: usize = 5;
/// A traced kernel whose every launch started in this first part of the traced GPU span
/// (the first launch's start to the last one's end) is marked early: warm-up, autotuning
/// or set-up rather than the program's steady work.
pub const EARLY_PART_OF_SPAN: f64 = 0.1;

/// The least share of a traced census' time that the kernels not marked early must hold
/// for the picks to leave the early ones out: then the program has a steady state, and
/// its warm-up, autotuning or set-up kernels are not what to profile. Below it (a
/// program whose main work is early, or that launches once) nothing is left out.
pub const STEADY_STATE_MIN_PCT: f64 = 50.0;

/// Whether a kernel whose last launch started at `last_start` is early in a trace whose
/// launches span `span` (ns): see [`EARLY_PART_OF_SPAN`].
pub fn is_early(last_start: u64, span: (u64, u64)) -> bool {
    let (first, end) = span;
    end > first && (last_start.saturating_sub(first) as f64) < EARLY_PART_OF_SPAN * (end - first) as f64
}

/// How a census was taken: one ncu durations-only pass, or the program traced with CUPTI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CensusSource {
    /// ncu's durations-only pass (serialised launches, up to its launch cap).
    #[default]
    Ncu,
    /// kprof's tracer (CUPTI activity records of every launch, as the program ran them).
    Trace,
}

impl CensusSource {
    /// Whether it is ncu's (the breakdown's JSON leaves it out then).
    pub fn is_ncu(&self) -> bool {
        *self == CensusSource::Ncu
    }
}

/// Which kernels of a census are profiled.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "by", content = "value")]
pub enum Pick {
    /// The costliest kernels that make up [`DEFAULT_SHARE_PCT`] of the time, at most
    /// [`DEFAULT_MAX_KERNELS`].
    #[default]
    Default,
    /// `--top N`: the N costliest.
    Top(u32),
    /// `--min-share P`: every kernel with at least P % of the time.
    MinShare(f64),
}

impl Pick {
    /// `--top N`, checked: at least 1.
    pub fn top(n: u32) -> Result<Pick, Failure> {
        if n == 0 {
            return Err(Failure::new(ExitCode::Usage, "--top 0 picks no kernel")
                .help("pass --top 1 or more (the N costliest kernels of the census)"));
        }
        Ok(Pick::Top(n))
    }

    /// `--min-share P`, checked: a percentage above 0 and at most 100.
    pub fn min_share(p: f64) -> Result<Pick, Failure> {
        if !p.is_finite() || p <= 0.0 || p > 100.0 {
            return Err(Failure::new(ExitCode::Usage, format!("--min-share {p} is not a share of the time"))
                .help("pass a percentage above 0 and at most 100, e.g. --min-share 10"));
        }
        Ok(Pick::MinShare(p))
    }

    /// How the pick reads in a message: `the kernels making up 80 % of GPU time, at most 5`.
    pub fn describe(&self) -> String {
        match self {
            Pick::Default => format!(
                "the kernels making up {} % of GPU time, at most {DEFAULT_MAX_KERNELS}",
                DEFAULT_SHARE_PCT
            ),
            Pick::Top(n) => format!("--top {n}"),
            Pick::MinShare(p) => format!("--min-share {p}"),
        }
    }
}

/// How a census is bounded and read: the pick, and which launches the pass profiles.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CensusPlan {
    /// Which kernels are profiled.
    #[serde(default)]
    pub pick: Pick,
    /// `--census-launches N`: the most launches the pass profiles (kprof's default
    /// otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_cap: Option<u32>,
    /// `--nvtx-include EXPR`: only launches inside these NVTX ranges (ncu's `--nvtx
    /// --nvtx-include`, ORed), for the census and the stages of the kernels it picks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvtx_include: Vec<String>,
    /// `--profiler-range`: only launches between the program's `cuProfilerStart` and
    /// `cuProfilerStop` (ncu's `--profile-from-start off`), for the census and the stages.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub profiler_range: bool,
    /// Whether this plan is a kernel a census picked (its exact function, its window
    /// fitted to the launches the census counted), not a kernel the user named: the
    /// picks of one plain program are profiled together, see `collect::batch`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub picked: bool,
}

impl CensusPlan {
    /// Whether nothing was set (the plan's JSON leaves it out then).
    pub fn is_default(&self) -> bool {
        *self == CensusPlan::default()
    }

    /// The ncu options that bound every launch profiled: NVTX ranges and the profiler
    /// range (the launch cap is the census window's).
    pub fn ncu_range_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.profiler_range {
            out.extend(["--profile-from-start".to_string(), "off".to_string()]);
        }
        if !self.nvtx_include.is_empty() {
            out.push("--nvtx".to_string());
            for r in &self.nvtx_include {
                out.extend(["--nvtx-include".to_string(), r.clone()]);
            }
        }
        out
    }

    /// How the census was bounded, in words (`None` when only by kprof's launch cap).
    pub fn describe_bounds(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.profiler_range {
            parts.push("between cuProfilerStart and cuProfilerStop".to_string());
        }
        if !self.nvtx_include.is_empty() {
            parts.push(format!("inside NVTX range {}", self.nvtx_include.join(" or ")));
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// One kernel of a census.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakdownRow {
    /// The kernel name as ncu printed it.
    pub kernel: String,
    /// Its function name (what a filter matches).
    pub function: String,
    /// Launches profiled.
    pub launches: usize,
    /// Their total duration, ns.
    pub total_ns: f64,
    /// Their mean duration, ns.
    pub mean_ns: f64,
    /// Its share of the census' serialised GPU time, percent.
    pub share_pct: f64,
    /// The grid sizes of its launches as ncu printed them (`(256, 256, 1)`), each once,
    /// in the order first seen.
    pub grid: Vec<String>,
    /// The block sizes, the same way.
    pub block: Vec<String>,
    /// Whether every launch came early in the program (a traced census only, see
    /// [`EARLY_PART_OF_SPAN`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub early: bool,
}

/// `breakdown.json`: every kernel of a census, costliest first, and which were picked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// Always 1.
    pub schema_version: u32,
    /// Launches the pass profiled in all.
    pub launches: usize,
    /// Whether the pass stopped at its launch cap (later launches are not counted).
    pub capped: bool,
    /// The sum of every launch's duration (serialised GPU time), ns.
    pub total_ns: f64,
    /// How the pass was bounded beyond its launch cap, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<String>,
    /// How the profiled kernels were picked.
    pub pick: String,
    /// The picked kernels' function names, costliest first.
    pub chosen: Vec<String>,
    /// Every kernel, costliest first (total duration, then launches).
    pub kernels: Vec<BreakdownRow>,
    /// How the census was taken (left out for ncu's pass).
    #[serde(default, skip_serializing_if = "CensusSource::is_ncu")]
    pub by: CensusSource,
}

/// One launch as a census counts it.
#[derive(Debug, Clone, PartialEq)]
pub struct CensusLaunch<'a> {
    /// The kernel name.
    pub kernel: &'a str,
    /// Its function name.
    pub function: String,
    /// Its duration, ns.
    pub duration_ns: f64,
    /// Grid size as printed, if the page has it.
    pub grid: Option<&'a str>,
    /// Block size as printed, if the page has it.
    pub block: Option<&'a str>,
}

impl Breakdown {
    /// The breakdown of these launches (every launch of a pass, in order); `capped` when
    /// the pass stopped at its cap. Nothing is picked yet.
    pub fn from_launches<'a>(
        launches: impl IntoIterator<Item = CensusLaunch<'a>>,
        capped: bool,
    ) -> Breakdown {
        let mut rows: Vec<BreakdownRow> = Vec::new();
        let mut count = 0;
        for l in launches {
            count += 1;
            let i = match rows.iter().position(|r| r.kernel == l.kernel) {
                Some(i) => i,
                None => {
                    rows.push(BreakdownRow {
                        kernel: l.kernel.to_string(),
                        function: l.function.clone(),
                        launches: 0,
                        total_ns: 0.0,
                        mean_ns: 0.0,
                        share_pct: 0.0,
                        grid: Vec::new(),
                        block: Vec::new(),
                        early: false,
                    });
                    rows.len() - 1
                }
            };
            let r = &mut rows[i];
            r.launches += 1;
            r.total_ns += l.duration_ns;
            for (seen, shape) in [(&mut r.grid, l.grid), (&mut r.block, l.block)] {
                if let Some(s) = shape.filter(|s| !s.is_empty()) {
                    if !seen.iter().any(|g| g == s) {
                        seen.push(s.to_string());
                    }
                }
            }
        }
        Breakdown::from_rows(rows, count, capped)
    }

    /// The breakdown of `rows` already summed per kernel (their launches and total time
    /// set), of `launches` launches in all: sorted costliest first, their means and shares
    /// computed. Nothing is picked yet.
    pub fn from_rows(mut rows: Vec<BreakdownRow>, launches: usize, capped: bool) -> Breakdown {
        rows.sort_by(|a, b| b.total_ns.total_cmp(&a.total_ns).then(b.launches.cmp(&a.launches)));
        let total_ns: f64 = rows.iter().map(|r| r.total_ns).sum();
        for r in &mut rows {
            r.mean_ns = r.total_ns / r.launches.max(1) as f64;
            r.share_pct = if total_ns > 0.0 { 100.0 * r.total_ns / total_ns } else { 0.0 };
        }
        Breakdown {
            schema_version: 1,
            launches,
            capped,
            total_ns,
            bounds: None,
            pick: String::new(),
            chosen: Vec::new(),
            kernels: rows,
            by: CensusSource::Ncu,
        }
    }

    /// The rows `pick` chooses, costliest first, one per function (a filter matches a
    /// function, so two kernels of one function are profiled once, and `--top N` counts
    /// functions). An error when
    /// `--min-share` leaves none, naming the largest share.
    ///
    /// When [`Breakdown::steady_share`] says the program has a steady state, the kernels
    /// marked early are left out and the shares are of the steady state's time.
    pub fn choose(&self, pick: Pick) -> Result<Vec<&BreakdownRow>, Failure> {
        let steady = self.steady_share();
        let share = |r: &BreakdownRow| steady.map_or(r.share_pct, |s| 100.0 * r.share_pct / s);
        let rows: Vec<&BreakdownRow> = self.kernels.iter().filter(|r| steady.is_none() || !r.early).collect();
        let mut out: Vec<&BreakdownRow> = Vec::new();
        let mut covered = 0.0;
        for r in &rows {
            let take = match pick {
                Pick::Default => covered < DEFAULT_SHARE_PCT && out.len() < DEFAULT_MAX_KERNELS,
                Pick::Top(n) => out.len() < n as usize,
                Pick::MinShare(p) => share(r) >= p,
            };
            if !take {
                break;
            }
            covered += share(r);
            if !out.iter().any(|o| o.function == r.function) {
                out.push(r);
            }
        }
        if out.is_empty() {
            if let (Pick::MinShare(p), Some(top)) = (pick, rows.first()) {
                return Err(Failure::new(
                    ExitCode::NoKernelMatched,
                    format!(
                        "--min-share {p}: no kernel has that share of GPU time; the largest is `{}` with {}",
                        top.function,
                        crate::units::pct_fixed(share(top), 1)
                    ),
                )
                .help("lower --min-share, or pass --top N to profile the N costliest kernels"));
            }
        }
        Ok(out)
    }

    /// The share of the time of the kernels not marked early, when the picks leave the
    /// early ones out: some are marked, and the others hold at least
    /// [`STEADY_STATE_MIN_PCT`] of the time. `None` otherwise (and for ncu's census, which
    /// marks none).
    pub fn steady_share(&self) -> Option<f64> {
        if !self.kernels.iter().any(|r| r.early) {
            return None;
        }
        let steady: f64 = self.kernels.iter().filter(|r| !r.early).map(|r| r.share_pct).sum();
        (steady >= STEADY_STATE_MIN_PCT).then_some(steady)
    }

    /// Picks the kernels `pick` chooses ([`Breakdown::choose`]) and records them.
    pub fn pick(&mut self, pick: Pick) -> Result<(), Failure> {
        let chosen = self.choose(pick)?.iter().map(|r| r.function.clone()).collect();
        self.pick = match self.steady_share() {
            Some(s) => format!(
                "{}, in the steady state ({} of the time; kernels launched only early are left out)",
                pick.describe(),
                crate::units::pct_fixed(s, 0)
            ),
            None => pick.describe(),
        };
        self.chosen = chosen;
        Ok(())
    }

    /// Launches of the function `function` (what a filter on it matches).
    pub fn launches_of(&self, function: &str) -> usize {
        self.kernels.iter().filter(|r| r.function == function).map(|r| r.launches).sum()
    }

    /// The share of the time the functions in `chosen` make up, percent.
    pub fn share_of(&self, chosen: &[String]) -> f64 {
        self.kernels.iter().filter(|r| chosen.contains(&r.function)).map(|r| r.share_pct).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(kernel: &'static str, ns: f64) -> CensusLaunch<'static> {
        CensusLaunch {
            kernel,
            function: kernel.to_string(),
            duration_ns: ns,
            grid: Some("(1, 1, 1)"),
            block: None,
        }
    }

    /// Shares 50, 20, 12, 8, 5, 3, 2 % of 1000 ns.
    fn seven() -> Breakdown {
        let ks =
            [("a", 500.0), ("b", 200.0), ("c", 120.0), ("d", 80.0), ("e", 50.0), ("f", 30.0), ("g", 20.0)];
        Breakdown::from_launches(ks.iter().map(|(k, ns)| launch(k, *ns)), false)
    }

    fn names(rows: &[&BreakdownRow]) -> Vec<String> {
        rows.iter().map(|r| r.function.clone()).collect()
    }

    #[test]
    fn rows_sum_launches_and_shares() {
        let b = Breakdown::from_launches(
            [launch("x", 10.0), launch("y", 30.0), launch("x", 20.0), launch("y", 10.0)],
            true,
        );
        assert_eq!(b.launches, 4);
        assert!(b.capped);
        assert_eq!(b.total_ns, 70.0);
        assert_eq!(b.kernels[0].function, "y");
        assert_eq!((b.kernels[0].launches, b.kernels[0].total_ns, b.kernels[0].mean_ns), (2, 40.0, 20.0));
        assert_eq!(b.kernels[1].mean_ns, 15.0);
        assert!((b.kernels[0].share_pct - 400.0 / 7.0).abs() < 1e-9);
        assert_eq!(b.kernels[0].grid, vec!["(1, 1, 1)"]);
        assert!(b.kernels[0].block.is_empty());
    }

    #[test]
    fn the_default_takes_80_percent_at_most_5() {
        let b = seven();
        // 50 + 20 = 70 < 80, + 12 = 82: three kernels.
        assert_eq!(names(&b.choose(Pick::Default).unwrap()), ["a", "b", "c"]);
        // Flat: 10 kernels of 10 % each would need 8; the cap is 5.
        let flat = Breakdown::from_launches(
            ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"].iter().map(|k| launch(k, 1.0)),
            false,
        );
        assert_eq!(flat.choose(Pick::Default).unwrap().len(), DEFAULT_MAX_KERNELS);
        // One kernel with all the time: just it.
        let one = Breakdown::from_launches([launch("only", 5.0)], false);
        assert_eq!(names(&one.choose(Pick::Default).unwrap()), ["only"]);
    }

    #[test]
    fn top_and_min_share() {
        let b = seven();
        assert_eq!(names(&b.choose(Pick::Top(2)).unwrap()), ["a", "b"]);
        assert_eq!(b.choose(Pick::Top(50)).unwrap().len(), 7);
        assert_eq!(names(&b.choose(Pick::MinShare(12.0)).unwrap()), ["a", "b", "c"]);
        assert_eq!(names(&b.choose(Pick::MinShare(12.5)).unwrap()), ["a", "b"]);
        let none = b.choose(Pick::MinShare(60.0)).unwrap_err();
        assert!(none.message.contains("the largest is `a` with 50.0 %"), "{}", none.message);
        assert_eq!(b.share_of(&["a".into(), "c".into()]), 62.0);
    }

    #[test]
    fn one_function_is_picked_once() {
        let b = Breakdown::from_launches(
            [
                CensusLaunch { function: "gemm".into(), ..launch("void gemm<float>(float *)", 60.0) },
                CensusLaunch { function: "gemm".into(), ..launch("void gemm<half>(half *)", 30.0) },
                launch("fill", 10.0),
            ],
            false,
        );
        // N counts functions: the two instantiations of `gemm` are one.
        assert_eq!(names(&b.choose(Pick::Top(1)).unwrap()), ["gemm"]);
        assert_eq!(names(&b.choose(Pick::Top(2)).unwrap()), ["gemm", "fill"]);
        assert_eq!(names(&b.choose(Pick::Default).unwrap()), ["gemm"]);
    }

    #[test]
    fn bad_picks_name_the_option_and_the_fix() {
        let e = Pick::top(0).unwrap_err();
        assert_eq!(e.message, "--top 0 picks no kernel");
        assert!(e.help.join(" ").contains("--top 1"), "{:?}", e.help);
        for bad in [0.0, -3.0, 150.0, f64::NAN] {
            let e = Pick::min_share(bad).unwrap_err();
            assert!(e.message.starts_with("--min-share"), "{}", e.message);
        }
        assert_eq!(Pick::min_share(10.0).unwrap(), Pick::MinShare(10.0));
    }

    /// `seven()` with the kernels `early` marked early, as a traced census marks them.
    fn marked(early: &[&str]) -> Breakdown {
        let mut b = seven();
        for r in &mut b.kernels {
            r.early = early.contains(&r.function.as_str());
        }
        b
    }

    fn chosen(b: &Breakdown, pick: Pick) -> Vec<String> {
        b.choose(pick).unwrap().iter().map(|r| r.function.clone()).collect()
    }

    /// #44: with a steady state (the kernels not marked early hold at least half the
    /// time), the picks leave the early ones out and count shares of the steady state's
    /// time: `b` and `c` are autotuning here, so `a` (50 % of all, 73.5 % of the steady
    /// 68 %) and `d` make up 80 %.
    #[test]
    fn the_picks_leave_early_kernels_out_when_there_is_a_steady_state() {
        let mut b = marked(&["b", "c"]);
        assert_eq!(b.steady_share().map(|s| s.round()), Some(68.0));
        assert_eq!(chosen(&b, Pick::Default), ["a", "d"]);
        assert_eq!(chosen(&b, Pick::Top(3)), ["a", "d", "e"]);
        assert_eq!(chosen(&b, Pick::MinShare(10.0)), ["a", "d"], "d is 11.8 % of the steady state");
        b.pick(Pick::Default).unwrap();
        assert!(
            b.pick.ends_with(
                "in the steady state (68 % of the time; kernels launched only early are left out)"
            ),
            "{}",
            b.pick
        );
        // Without marks, or with the steady state under half the time (the main work is
        // early, as in a program that launches once), nothing is left out.
        assert_eq!(chosen(&seven(), Pick::Default), ["a", "b", "c"]);
        let mostly_early = marked(&["a", "c"]);
        assert_eq!(mostly_early.steady_share(), None);
        assert_eq!(chosen(&mostly_early, Pick::Default), ["a", "b", "c"]);
    }

    #[test]
    fn early_means_every_launch_in_the_first_tenth_of_the_span() {
        // A span of 1000 ns from 5000: the first tenth ends at 5100.
        assert!(is_early(5000, (5000, 6000)));
        assert!(is_early(5099, (5000, 6000)));
        assert!(!is_early(5100, (5000, 6000)));
        assert!(!is_early(5900, (5000, 6000)));
        // One launch, or launches all at one instant: nothing to tell apart.
        assert!(!is_early(5000, (5000, 5000)));
    }

    #[test]
    fn range_options_for_ncu() {
        let plan = CensusPlan {
            nvtx_include: vec!["forward/".into(), "dec@step/".into()],
            profiler_range: true,
            ..CensusPlan::default()
        };
        assert_eq!(
            plan.ncu_range_args(),
            [
                "--profile-from-start",
                "off",
                "--nvtx",
                "--nvtx-include",
                "forward/",
                "--nvtx-include",
                "dec@step/"
            ]
        );
        assert!(CensusPlan::default().ncu_range_args().is_empty());
        assert_eq!(CensusPlan::default().describe_bounds(), None);
    }
}
