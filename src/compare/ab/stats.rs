//! The decision statistic of an A/B timing: how much slower or faster head is than base,
//! with a 95 % interval, and what that interval lets the check conclude.
//!
//! The method, and why:
//!
//! 1. **Paired log ratios.** Each kept round `r` gives `d_r = ln(head_r / base_r)`. The
//!    two runs of a round are adjacent in time, so slow drift (thermals, a clock that
//!    settles, another job on the host) moves both and cancels in the ratio. Logs make a
//!    change symmetric (`+x` and `-x` mean the same factor) and independent of the
//!    kernel's absolute duration.
//! 2. **Clock screening first.** A round in which either side ran with its SM clock more
//!    than [`CLOCK_DROP`] below the run's typical clock (the median of every reading of
//!    both sides) measured the clock, not the code: it is discarded, and named with its
//!    reason. The spread of the kept rounds' clocks is reported as the clock drift.
//! 3. **Hodges-Lehmann estimate, Wilcoxon signed-rank interval.** The estimate is the
//!    median of the `n(n+1)/2` Walsh averages `(d_i + d_j) / 2`, `i <= j`; the interval
//!    is the pair of order statistics of the sorted Walsh averages that the exact null
//!    distribution of the signed-rank statistic `W+` picks for 95 % (computed exactly up
//!    to [`EXACT_UP_TO`] rounds, by the normal approximation beyond). A rank method and
//!    not a bootstrap because it is deterministic (no random numbers: the same rounds
//!    always give the same verdict), exact at the small `n` a CI budget allows (10
//!    rounds), needs no normality, and bounds what one disturbed round can do (it cannot
//!    by itself turn an unchanged kernel into a regressed or improved one, only widen the
//!    interval towards ambiguous; from 12 rounds on the bounds never reach it, since its
//!    `n` Walsh averages are fewer than the `k` cut off each end). Percentile-bootstrap
//!    intervals are too narrow at `n = 10` and would call noise a change.
//! 4. **Percent.** The estimate and the bounds are reported as `(exp(x) - 1) * 100`.
//! 5. **Decision** with tolerance `t` (percent): the interval entirely at or above `t`:
//!    regressed; entirely at or below `-t`: improved; entirely inside `(-t, t)`:
//!    unchanged; otherwise the run cannot tell: ambiguous. Fewer than [`MIN_ROUNDS`] kept
//!    rounds admit no 95 % interval at all, and are ambiguous.

use serde::Serialize;

use super::rounds::{Round, Rounds};
use crate::model::ab::{AbVerdict, Side};

/// A round is discarded when either side's SM clock is this fraction below the run's
/// typical clock: 3 % is beyond the clock's jitter under load (well under 1 % on a locked
/// or boosting data-centre GPU) and large enough to move a compute-bound kernel's time by
/// more than a typical tolerance.
pub const CLOCK_DROP: f64 = 0.03;

/// The interval's nominal level.
pub const LEVEL: f64 = 0.95;

/// Fewer kept rounds than this admit no two-sided 95 % signed-rank interval: with 5
/// rounds even the widest one, `[min, max]`, covers only 93.75 %.
pub const MIN_ROUNDS: usize = 6;

/// Up to this many rounds the null distribution of `W+` is counted exactly (the counts fit
/// a `u128` many times over); beyond, the normal approximation is within one rank of it.
pub const EXACT_UP_TO: usize = 60;

/// The two-sided 95 % normal quantile.
const Z_975: f64 = 1.959_963_984_540_054;

/// What the interleaved timing says about one kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimeChange {
    /// Rounds kept after clock screening.
    pub rounds: usize,
    /// Each discarded round, with why.
    pub discarded: Vec<String>,
    /// Hodges-Lehmann estimate of head against base, percent (positive: head is slower).
    /// Not a number (`null` in JSON) when no round was kept.
    pub estimate_pct: f64,
    /// Lower bound of the interval, percent.
    pub lo_pct: f64,
    /// Upper bound of the interval, percent.
    pub hi_pct: f64,
    /// The interval's achieved confidence (0.951 for 10 rounds).
    pub confidence: f64,
    /// Half the interval's width, percent: the smallest change this run could resolve.
    pub resolution_pct: f64,
    /// Spread of the kept rounds' SM clocks relative to the run's typical clock, percent;
    /// `None` without clock readings.
    pub clock_drift_pct: Option<f64>,
    /// The tolerance the verdict was decided with, percent.
    pub tolerance_pct: f64,
    /// The conclusion.
    pub verdict: AbVerdict,
    /// Whether enough rounds were kept for a 95 % interval ([`MIN_ROUNDS`]).
    pub enough_rounds: bool,
    /// The sides whose kept rounds fall into two groups by process ([`super::modes`]): a
    /// diagnosis of why the run cannot tell, never part of the verdict.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<super::modes::TwoGroups>,
}

/// The timing verdict of `rounds` at a tolerance of `tolerance_pct` percent (a negative or
/// non-finite tolerance counts as 0).
pub fn time_change(rounds: &Rounds, tolerance_pct: f64) -> TimeChange {
    let t = if tolerance_pct.is_finite() { tolerance_pct.max(0.0) } else { 0.0 };
    let screened = screen(&rounds.rounds);
    let d = log_ratios(&screened.kept);
    let n = d.len();
    let walsh = walsh_averages(&d);
    let rank = interval_rank(n);
    let (lo, hi, confidence) = match (rank, walsh.first(), walsh.last()) {
        (Some((k, conf)), _, _) => (walsh[k - 1], walsh[walsh.len() - k], conf),
        // No 95 % interval: the widest one there is, [min, max], and what it covers.
        (None, Some(&min), Some(&max)) => (min, max, 1.0 - 2.0 * 0.5f64.powi(n as i32)),
        (None, _, _) => (f64::NAN, f64::NAN, 0.0),
    };
    let estimate = median_sorted(&walsh).unwrap_or(f64::NAN);
    let (lo_pct, hi_pct) = (pct(lo), pct(hi));
    let enough_rounds = rank.is_some();
    TimeChange {
        rounds: n,
        discarded: screened.discarded,
        estimate_pct: pct(estimate),
        lo_pct,
        hi_pct,
        confidence,
        resolution_pct: (hi_pct - lo_pct) / 2.0,
        clock_drift_pct: screened.clock_drift_pct,
        tolerance_pct: t,
        verdict: if enough_rounds { decide(lo_pct, hi_pct, t) } else { AbVerdict::Ambiguous },
        enough_rounds,
        groups: super::modes::two_groups(&screened.kept),
    }
}

/// Whether an undecided timing could be decided by as many rounds again: the verdict is
/// ambiguous, and an interval as wide as this one shrunk by sqrt 2 (what doubling the
/// rounds does to a spread that stays the same) around the same estimate would fall
/// inside the tolerance, or past it. An A/B check runs those rounds once, for the
/// kernels this holds for, so that a kernel whose processes vary more than most (an
/// L2-resident re-read on the H200: ±1.6 % at 12 rounds, estimate +0.7 %) gets the
/// rounds it needs, while one that more rounds could not settle (a 4 µs launch whose
/// rounds moved by ±15 %: ±7.4 %) is called ambiguous at once.
pub fn more_rounds_could_decide(c: &TimeChange) -> bool {
    if c.verdict != AbVerdict::Ambiguous {
        return false;
    }
    if !c.enough_rounds {
        // Too few rounds kept for a 95 % interval: more rounds are the only way to one.
        return c.rounds > 0;
    }
    let (e, t) = (c.estimate_pct, c.tolerance_pct);
    let half = c.resolution_pct / std::f64::consts::SQRT_2;
    if !(e.is_finite() && half.is_finite()) {
        return false;
    }
    e.abs() + half < t || e - half >= t || e + half <= -t
}

/// The verdict of an interval `[lo, hi]` (percent) at tolerance `t`: at or above `t`:
/// regressed; at or below `-t`: improved; inside `(-t, t)`: unchanged; else ambiguous.
/// A regression (improvement) also needs the whole interval above (below) zero, so that
/// at `t = 0` an interval of exactly zero is not called a change.
pub fn decide(lo: f64, hi: f64, t: f64) -> AbVerdict {
    if lo >= t && lo > 0.0 {
        AbVerdict::Regressed
    } else if hi <= -t && hi < 0.0 {
        AbVerdict::Improved
    } else if lo > -t && hi < t {
        AbVerdict::Unchanged
    } else {
        AbVerdict::Ambiguous
    }
}

/// A log ratio as a percent change: `(exp(x) - 1) * 100`.
pub fn pct(x: f64) -> f64 {
    x.exp_m1() * 100.0
}

/// The Walsh averages `(d_i + d_j) / 2`, `i <= j`, sorted ascending.
pub fn walsh_averages(d: &[f64]) -> Vec<f64> {
    let mut w = Vec::with_capacity(d.len() * (d.len() + 1) / 2);
    for (i, a) in d.iter().enumerate() {
        w.extend(d[i..].iter().map(|b| (a + b) / 2.0));
    }
    w.sort_by(f64::total_cmp);
    w
}

/// The Hodges-Lehmann estimate of `d`'s centre: the median of its Walsh averages
/// ([`time_change`] takes it from the Walsh averages it already sorted).
#[cfg(test)]
pub fn hodges_lehmann(d: &[f64]) -> Option<f64> {
    median_sorted(&walsh_averages(d))
}

fn median_sorted(v: &[f64]) -> Option<f64> {
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// For `n` rounds: the rank `k` of the 95 % interval's bounds among the sorted Walsh
/// averages (1-based: the interval is `[W_(k), W_(M-k+1)]`, `M = n(n+1)/2`), and the
/// confidence it achieves. `k` is the largest with `P(W+ <= k-1) <= 0.025`. `None` below
/// [`MIN_ROUNDS`], where no such `k` exists.
pub fn interval_rank(n: usize) -> Option<(usize, f64)> {
    if n > EXACT_UP_TO {
        return Some(normal_rank(n));
    }
    interval_rank_at(n, LEVEL)
}

/// [`interval_rank`] at another two-sided `level` (`0.9875` for the looks of
/// [`super::early_stop`]), counted exactly: `None` where no rank reaches the level (too few
/// rounds for it) and beyond [`EXACT_UP_TO`] rounds.
pub fn interval_rank_at(n: usize, level: f64) -> Option<(usize, f64)> {
    if n > EXACT_UP_TO {
        return None;
    }
    let tail = (1.0 - level) / 2.0;
    let mut best = None;
    let mut below = 0.0;
    for (w, p) in signed_rank_pmf(n).into_iter().enumerate() {
        below += p;
        if below > tail {
            break;
        }
        best = Some((w + 1, 1.0 - 2.0 * below));
    }
    best
}

/// The log ratios `ln(head / base)` of the rounds [`time_change`] keeps (after clock
/// screening), in the order they ran.
pub fn kept_log_ratios(rounds: &Rounds) -> Vec<f64> {
    log_ratios(&screen(&rounds.rounds).kept)
}

/// Each round's `ln(head / base)`.
fn log_ratios(kept: &[&Round]) -> Vec<f64> {
    kept.iter().map(|r| (r.head.median_ns / r.base.median_ns).ln()).collect()
}

/// The signed-rank interval of the log ratios `d` at two-sided `level`, as percent
/// `(lo, hi)`; `None` where `d` is too short for that level.
pub fn interval_pct_at(d: &[f64], level: f64) -> Option<(f64, f64)> {
    let (k, _) = interval_rank_at(d.len(), level)?;
    let walsh = walsh_averages(d);
    Some((pct(walsh[k - 1]), pct(walsh[walsh.len() - k])))
}

/// `P(W+ = w)` for `w = 0..=n(n+1)/2` under the null hypothesis: the number of subsets of
/// the ranks `1..=n` whose sum is `w`, over `2^n`. Counted exactly (for `n` up to
/// [`EXACT_UP_TO`]) by adding one rank at a time.
pub fn signed_rank_pmf(n: usize) -> Vec<f64> {
    let m = n * (n + 1) / 2;
    let mut counts = vec![0u128; m + 1];
    counts[0] = 1;
    for rank in 1..=n {
        for w in (rank..=m).rev() {
            counts[w] += counts[w - rank];
        }
    }
    let total = 2f64.powi(n as i32);
    counts.into_iter().map(|c| c as f64 / total).collect()
}

/// [`interval_rank`] by the normal approximation of `W+` (with continuity correction).
fn normal_rank(n: usize) -> (usize, f64) {
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let sd = (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt();
    let critical = (mean - Z_975 * sd - 0.5).floor().max(0.0);
    let below = normal_cdf((critical + 0.5 - mean) / sd);
    (critical as usize + 1, 1.0 - 2.0 * below)
}

/// The standard normal distribution function, from the complementary error function's
/// Chebyshev fit (fractional error below 1.2e-7).
fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    if x >= 0.0 {
        1.0 - erfc / 2.0
    } else {
        erfc / 2.0
    }
}

struct Screened<'a> {
    kept: Vec<&'a Round>,
    discarded: Vec<String>,
    clock_drift_pct: Option<f64>,
}

fn clocks<'a>(rounds: impl Iterator<Item = &'a Round>) -> Vec<f64> {
    rounds.flat_map(|r| [r.base.sm_clock_mhz, r.head.sm_clock_mhz]).flatten().collect()
}

/// Drops the rounds that cannot be compared (a median that is not a positive time) and
/// those run at a dropped clock.
fn screen(rounds: &[Round]) -> Screened<'_> {
    let mut all = clocks(rounds.iter());
    all.sort_by(f64::total_cmp);
    let reference = median_sorted(&all);
    let mut kept = Vec::new();
    let mut discarded = Vec::new();
    for r in rounds {
        let mut why: Vec<String> = Vec::new();
        for side in [Side::Base, Side::Head] {
            let s = r.sample(side);
            if !(s.median_ns.is_finite() && s.median_ns > 0.0) {
                why.push(format!("{}'s median {} ns is not a positive time", side.name(), s.median_ns));
            }
            if let (Some(c), Some(reference)) = (s.sm_clock_mhz, reference) {
                if c < reference * (1.0 - CLOCK_DROP) {
                    why.push(format!(
                        "{}'s SM clock {c:.0} MHz, {} below the run's {reference:.0} MHz",
                        side.name(),
                        crate::units::pct_fixed((reference - c) / reference * 100.0, 1)
                    ));
                }
            }
        }
        if why.is_empty() {
            kept.push(r);
        } else {
            discarded.push(format!("round {}: {}", r.index, why.join("; ")));
        }
    }
    let kept_clocks = clocks(kept.iter().copied());
    let clock_drift_pct = reference.filter(|_| !kept_clocks.is_empty()).map(|reference| {
        let max = kept_clocks.iter().copied().fold(f64::MIN, f64::max);
        let min = kept_clocks.iter().copied().fold(f64::MAX, f64::min);
        (max - min) / reference * 100.0
    });
    Screened { kept, discarded, clock_drift_pct }
}

#[cfg(test)]
mod tests {
    use super::super::rounds::SideSample;
    use super::*;

    /// Deterministic relative noise in [-1, 1], two unrelated patterns for the two sides.
    const NOISE_A: [f64; 12] = [0.9, -0.4, 0.1, -1.0, 0.6, -0.7, 0.3, 1.0, -0.2, -0.8, 0.5, -0.1];
    const NOISE_B: [f64; 12] = [-0.6, 0.8, -0.3, 0.2, -0.9, 1.0, -0.5, 0.4, 0.7, -1.0, -0.2, 0.6];

    fn sample(ns: f64, clock: Option<f64>) -> SideSample {
        SideSample { median_ns: ns, samples: 100, rel_noise: 0.003, sm_clock_mhz: clock }
    }

    /// A timing verdict with only the numbers [`more_rounds_could_decide`] reads.
    fn undecided(estimate_pct: f64, resolution_pct: f64, verdict: AbVerdict) -> TimeChange {
        TimeChange {
            rounds: 12,
            discarded: Vec::new(),
            estimate_pct,
            lo_pct: estimate_pct - resolution_pct,
            hi_pct: estimate_pct + resolution_pct,
            confidence: 0.958,
            resolution_pct,
            clock_drift_pct: None,
            tolerance_pct: 2.0,
            verdict,
            enough_rounds: true,
            groups: Vec::new(),
        }
    }

    #[test]
    fn more_rounds_only_for_what_they_could_decide() {
        use AbVerdict::*;
        // The zoo's A/A check on the H200 (fixtures/h200/ab-sweep/zoo-aa.log.gz):
        // `l2_reread_cg` +0.74 % ±1.58 could come inside ±2 % (0.74 + 1.12 < 2) ...
        assert!(more_rounds_could_decide(&undecided(0.74, 1.58, Ambiguous)));
        // ... `vec_add_small` -6.85 % ±7.37 could not, either way (±5.2 after doubling).
        assert!(!more_rounds_could_decide(&undecided(-6.85, 7.37, Ambiguous)));
        // Beside the tolerance: a likely regression that more rounds could confirm, and
        // a likely improvement.
        assert!(more_rounds_could_decide(&undecided(3.0, 1.3, Ambiguous)));
        assert!(more_rounds_could_decide(&undecided(-3.0, 1.3, Ambiguous)));
        // Right at the tolerance, no number of rounds is enough to be sure of either side.
        assert!(!more_rounds_could_decide(&undecided(2.0, 0.5, Ambiguous)));
        // An interval that doubling would shrink exactly onto the tolerance (0 ± 2 at
        // ±2 %) is still not inside it: `decide` wants it strictly inside.
        let onto = 2.0 * std::f64::consts::SQRT_2;
        assert_eq!(onto / std::f64::consts::SQRT_2, 2.0);
        assert!(!more_rounds_could_decide(&undecided(0.0, onto, Ambiguous)));
        // Decided kernels get no more rounds, however wide.
        for v in [Unchanged, Regressed, Improved] {
            assert!(!more_rounds_could_decide(&undecided(0.0, 1.9, v)), "{v:?}");
        }
        // Too few rounds kept for an interval: more rounds are the only way to one.
        let mut few = undecided(0.1, 0.1, Ambiguous);
        few.enough_rounds = false;
        assert!(more_rounds_could_decide(&few));
        few.rounds = 0;
        assert!(!more_rounds_could_decide(&few), "nothing kept at all");
        assert!(!more_rounds_could_decide(&undecided(f64::NAN, 1.0, Ambiguous)));
    }

    /// `n` rounds of a 1 ms kernel whose head is `shift_pct` slower, each side with
    /// relative noise up to `noise_pct`.
    fn rounds(n: usize, shift_pct: f64, noise_pct: f64) -> Rounds {
        let mut r = Rounds::new("hgemm_tiled", None, "hot", "harness");
        for i in 0..n {
            let base = 1e6 * (1.0 + NOISE_A[i % 12] * noise_pct / 100.0);
            let head = 1e6 * (1.0 + shift_pct / 100.0) * (1.0 + NOISE_B[i % 12] * noise_pct / 100.0);
            r.push(sample(base, Some(1980.0)), sample(head, Some(1980.0)));
        }
        r
    }

    #[test]
    fn critical_values_match_the_published_table() {
        // Two-sided 0.05 critical values of the signed-rank statistic; k = critical + 1.
        let table =
            [(6, 0), (7, 2), (8, 3), (9, 5), (10, 8), (11, 10), (12, 13), (15, 25), (20, 52), (30, 137)];
        for (n, critical) in table {
            assert_eq!(interval_rank(n).map(|(k, _)| k), Some(critical + 1), "n = {n}");
        }
        for n in 0..MIN_ROUNDS {
            assert_eq!(interval_rank(n), None, "n = {n}");
        }
    }

    #[test]
    fn achieved_confidence_is_exact() {
        // P(W+ <= 8) = 25 / 1024 for 10 rounds.
        let (_, c) = interval_rank(10).unwrap();
        assert!((c - (1.0 - 2.0 * 25.0 / 1024.0)).abs() < 1e-12, "{c}");
        assert_eq!(format!("{c:.3}"), "0.951");
        // 6 rounds: only the widest interval, 1 - 2/64.
        assert!((interval_rank(6).unwrap().1 - 62.0 / 64.0).abs() < 1e-12);
    }

    #[test]
    fn the_distribution_is_a_distribution() {
        let p = signed_rank_pmf(EXACT_UP_TO);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        // Symmetric about n(n+1)/4.
        assert_eq!(p.first(), p.last());
        // Two subsets of 1..=4 sum to 5: {1, 4} and {2, 3}.
        assert_eq!(signed_rank_pmf(4)[5] * 16.0, 2.0);
    }

    #[test]
    fn the_normal_approximation_agrees_near_the_switch() {
        for n in [40, 50, EXACT_UP_TO] {
            let (exact, c_exact) = interval_rank(n).unwrap();
            let (approx, c_approx) = normal_rank(n);
            assert!(exact.abs_diff(approx) <= 1, "n = {n}: {exact} vs {approx}");
            assert!((c_exact - c_approx).abs() < 0.005, "n = {n}");
        }
        // At the switch itself the counts are still exact: the confidence is the
        // distribution's own tail, not the approximation's.
        let (k, c) = interval_rank(EXACT_UP_TO).unwrap();
        let below: f64 = signed_rank_pmf(EXACT_UP_TO)[..k].iter().sum();
        assert!((c - (1.0 - 2.0 * below)).abs() < 1e-12, "{c} vs {}", 1.0 - 2.0 * below);
        // Beyond the switch, against the exact counts (2^100 still fits a u128).
        let p = signed_rank_pmf(100);
        let (k, c) = interval_rank(100).unwrap();
        let below: f64 = p[..k].iter().sum();
        assert!(below <= 0.0251 && below + p[k] > 0.0249, "k = {k}: {below}");
        assert!((0.95..0.952).contains(&c), "{c}");
    }

    #[test]
    fn hodges_lehmann_on_a_small_set() {
        // Walsh averages of [1, 2, 9]: 1, 1.5, 2, 5, 5.5, 9: median (2 + 5) / 2.
        assert_eq!(walsh_averages(&[9.0, 1.0, 2.0]), vec![1.0, 1.5, 2.0, 5.0, 5.5, 9.0]);
        assert_eq!(hodges_lehmann(&[1.0, 2.0, 9.0]), Some(3.5));
        assert_eq!(hodges_lehmann(&[4.0]), Some(4.0));
        assert_eq!(hodges_lehmann(&[]), None);
    }

    #[test]
    fn a_a_within_noise_is_unchanged() {
        let t = time_change(&rounds(10, 0.0, 0.3), 2.0);
        assert_eq!(t.verdict, AbVerdict::Unchanged, "{t:?}");
        assert_eq!(t.rounds, 10);
        assert!(t.enough_rounds);
        assert!(t.lo_pct < 0.0 && t.hi_pct > 0.0 && t.resolution_pct < 0.6, "{t:?}");
        assert_eq!(t.clock_drift_pct, Some(0.0));
    }

    #[test]
    fn a_clear_three_percent_slowdown_is_a_regression() {
        let t = time_change(&rounds(10, 3.0, 0.3), 2.0);
        assert_eq!(t.verdict, AbVerdict::Regressed, "{t:?}");
        assert!((t.estimate_pct - 3.0).abs() < 0.3, "{t:?}");
        assert!(t.lo_pct >= 2.0 && t.lo_pct < 3.0 && t.hi_pct > 3.0);
    }

    #[test]
    fn a_change_near_the_tolerance_in_heavy_noise_is_ambiguous() {
        let t = time_change(&rounds(10, 2.0, 1.5), 2.0);
        assert_eq!(t.verdict, AbVerdict::Ambiguous, "{t:?}");
        assert!(t.lo_pct < 2.0 && t.hi_pct > 2.0, "{t:?}");
        // The same shift at a resolution the run can reach is a regression at 1 %.
        assert_eq!(time_change(&rounds(10, 2.0, 0.3), 1.0).verdict, AbVerdict::Regressed);
    }

    #[test]
    fn a_five_percent_speedup_is_an_improvement() {
        let t = time_change(&rounds(10, -5.0, 0.3), 2.0);
        assert_eq!(t.verdict, AbVerdict::Improved, "{t:?}");
        assert!((t.estimate_pct + 5.0).abs() < 0.3, "{t:?}");
    }

    #[test]
    fn one_outlier_round_does_not_flip_unchanged() {
        // A round disturbed by ten times the noise: still unchanged at 10 rounds.
        let mut r = rounds(10, 0.0, 0.3);
        r.rounds[6].head.median_ns *= 1.03;
        assert_eq!(time_change(&r, 2.0).verdict, AbVerdict::Unchanged);
        // A gross outlier (+40 %) cannot fake a regression at 10 rounds: it only widens
        // the upper bound ...
        let mut r = rounds(10, 0.0, 0.3);
        r.rounds[6].head.median_ns *= 1.4;
        let t = time_change(&r, 2.0);
        assert_ne!(t.verdict, AbVerdict::Regressed);
        assert!(t.lo_pct < 0.0 && t.estimate_pct.abs() < 0.5, "{t:?}");
        // ... and from 12 rounds on, the bounds never reach it.
        let mut r = rounds(12, 0.0, 0.3);
        r.rounds[6].head.median_ns *= 1.4;
        let t = time_change(&r, 2.0);
        assert_eq!(t.verdict, AbVerdict::Unchanged, "{t:?}");
    }

    #[test]
    fn a_round_at_a_dropped_clock_is_discarded_and_named() {
        let mut r = rounds(10, 0.0, 0.3);
        r.rounds[4].head.sm_clock_mhz = Some(1710.0);
        r.rounds[4].head.median_ns *= 1.15;
        r.rounds[7].base.sm_clock_mhz = Some(1965.0); // 0.8 % below: kept
        let t = time_change(&r, 2.0);
        assert_eq!(t.rounds, 9);
        assert_eq!(t.discarded, vec!["round 4: head's SM clock 1710 MHz, 13.6 % below the run's 1980 MHz"]);
        assert_eq!(t.verdict, AbVerdict::Unchanged, "{t:?}");
        let drift = t.clock_drift_pct.unwrap();
        assert!((drift - 15.0 / 1980.0 * 100.0).abs() < 1e-9, "{drift}");
        // Exactly CLOCK_DROP below the run's clock is not yet "more than" it: kept.
        let mut r = rounds(10, 0.0, 0.3);
        r.rounds[4].head.sm_clock_mhz = Some(1980.0 * (1.0 - CLOCK_DROP));
        assert_eq!(time_change(&r, 2.0).rounds, 10);
    }

    #[test]
    fn without_clocks_nothing_is_screened() {
        let mut r = rounds(8, 0.0, 0.3);
        for round in &mut r.rounds {
            round.base.sm_clock_mhz = None;
            round.head.sm_clock_mhz = None;
        }
        let t = time_change(&r, 2.0);
        assert_eq!((t.rounds, t.clock_drift_pct), (8, None));
        assert!(t.discarded.is_empty());
    }

    #[test]
    fn fewer_than_six_rounds_are_ambiguous() {
        let t = time_change(&rounds(5, 10.0, 0.3), 2.0);
        assert_eq!(t.verdict, AbVerdict::Ambiguous);
        assert!(!t.enough_rounds);
        // The widest interval there is, and what it covers.
        assert!(t.lo_pct > 9.0 && t.hi_pct < 11.0, "{t:?}");
        assert!((t.confidence - 0.9375).abs() < 1e-12);

        let t = time_change(&rounds(0, 0.0, 0.3), 2.0);
        assert_eq!((t.rounds, t.verdict, t.confidence), (0, AbVerdict::Ambiguous, 0.0));
        assert!(t.estimate_pct.is_nan());
        let json = serde_json::to_value(&t).unwrap();
        assert!(json["estimate_pct"].is_null(), "{json}");
    }

    #[test]
    fn a_round_without_a_time_is_discarded() {
        let mut r = rounds(7, 0.0, 0.3);
        r.rounds[2].base.median_ns = 0.0;
        let t = time_change(&r, 2.0);
        assert_eq!(t.discarded, vec!["round 2: base's median 0 ns is not a positive time"]);
        assert_eq!(t.rounds, 6);
    }

    #[test]
    fn decisions_follow_the_band() {
        assert_eq!(decide(2.0, 4.0, 2.0), AbVerdict::Regressed);
        assert_eq!(decide(1.9, 4.0, 2.0), AbVerdict::Ambiguous);
        assert_eq!(decide(-4.0, -2.0, 2.0), AbVerdict::Improved);
        assert_eq!(decide(-1.9, 1.9, 2.0), AbVerdict::Unchanged);
        assert_eq!(decide(-1.9, 2.0, 2.0), AbVerdict::Ambiguous);
        // A real +3 % is never unchanged at 2 %: regressed or ambiguous.
        assert_eq!(decide(2.4, 3.8, 2.0), AbVerdict::Regressed);
        assert_eq!(decide(1.0, 5.0, 2.0), AbVerdict::Ambiguous);
        // At t = 0 nothing is unchanged, and a zero interval is no change either.
        assert_eq!(decide(0.0, 0.0, 0.0), AbVerdict::Ambiguous);
        assert_eq!(decide(0.1, 0.2, 0.0), AbVerdict::Regressed);
        assert!((pct(0.0f64.ln_1p()) - 0.0).abs() < 1e-12);
        assert!((pct(1.03f64.ln()) - 3.0).abs() < 1e-9);
    }
}
