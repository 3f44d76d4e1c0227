//! When a kernel's A/B rounds may stop before the planned count: they already put it
//! inside the tolerance, at a level no later round is likely to undo.
//!
//! Looking at the rounds as they come and stopping on the first decided interval calls
//! noise a change more often than the 95 % interval says: each look is another chance.
//! Two guards keep the looks from adding an alarm:
//!
//! 1. **A look stops only on `unchanged`.** A kernel that stops early is one whose
//!    interval lies inside the tolerance; one that looks regressed or improved runs every
//!    planned round and is judged by the ordinary rule. On the same rounds, the looks can
//!    then only take an alarm away, never add one. Resampling the recorded A/A rounds of
//!    the zoo showed why the other way is wrong: stopping on a change too raised a 5 µs
//!    kernel's false alarms from 28 to 35 in 2,000 draws (`recorded_sweep.rs`).
//! 2. **A wider interval at each look.** The same signed-rank interval
//!    ([`super::stats`]) at the level [`look_level`] gives, `1 - 0.05 / L` for the `L`
//!    looks before the last round (Bonferroni), so that a kernel stopped as unchanged was
//!    inside the tolerance at more than the check's confidence, and a real change near
//!    the tolerance goes on to the last round. A wider interval that is inside the
//!    tolerance puts the 95 % one of the same rounds inside it too: the verdict is the one
//!    the rounds give.
//!
//! The first look is at [`FIRST_LOOK`] kept rounds, the fewest for which the signed-rank
//! interval reaches that level for a check of 12 rounds (`1 - 0.05 / 4`: the widest
//! interval of 8 rounds covers 99.2 %). A check of [`FIRST_LOOK`] rounds or fewer never
//! stops early. On the recorded A/A rounds (two zoo sweeps and the demo, 63 kernels), the
//! looks stop after 8.3 of 12 rounds on average.

use super::rounds::Rounds;
use super::stats::{decide, interval_pct_at, kept_log_ratios, LEVEL};
use crate::model::ab::AbVerdict;

/// The kept rounds of the first look.
pub const FIRST_LOOK: usize = 8;

/// The two-sided level of each early look when `planned` rounds are planned: `1 - 0.05 / L`
/// for the `L = planned - FIRST_LOOK` looks after rounds `FIRST_LOOK..planned`; `None`
/// when there is no look before the last round.
pub fn look_level(planned: usize) -> Option<f64> {
    let looks = planned.checked_sub(FIRST_LOOK).filter(|&l| l > 0)?;
    Some(1.0 - (1.0 - LEVEL) / looks as f64)
}

/// The verdict `rounds` decide before the `planned`-th round at tolerance `tolerance_pct`,
/// or `None` when they must go on: fewer kept rounds than [`FIRST_LOOK`], no look left,
/// or an interval at the look's level that is still ambiguous.
pub fn decided_early(rounds: &Rounds, tolerance_pct: f64, planned: usize) -> Option<AbVerdict> {
    if rounds.rounds.len() >= planned {
        return None;
    }
    let level = look_level(planned)?;
    let d = kept_log_ratios(rounds);
    if d.len() < FIRST_LOOK {
        return None;
    }
    let t = if tolerance_pct.is_finite() { tolerance_pct.max(0.0) } else { 0.0 };
    let (lo, hi) = interval_pct_at(&d, level)?;
    Some(decide(lo, hi, t)).filter(|v| *v == AbVerdict::Unchanged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::ab::rounds::SideSample;
    use crate::compare::ab::stats::time_change;

    fn rounds(ratios: &[f64]) -> Rounds {
        Rounds::of_log_ratios(&ratios.iter().map(|q| q.ln()).collect::<Vec<_>>())
    }

    #[test]
    fn looks_come_only_between_the_first_look_and_the_last_round() {
        assert_eq!(look_level(8), None);
        assert_eq!(look_level(6), None);
        assert!((look_level(12).unwrap() - 0.9875).abs() < 1e-12);
        let steady = rounds(&[1.001, 0.999, 1.0, 1.002, 0.998, 1.001, 1.0, 0.999]);
        assert_eq!(decided_early(&steady, 2.0, 12), Some(AbVerdict::Unchanged));
        assert_eq!(decided_early(&rounds(&[1.001; 7]), 2.0, 12), None, "before the first look");
        assert_eq!(decided_early(&steady, 2.0, 8), None, "no look before the last round");
        let mut twelve = steady.clone();
        for q in [1.0, 1.0, 1.0, 1.0] {
            twelve.push(
                twelve.rounds[0].base.clone(),
                SideSample { median_ns: 1000.0 * q, ..twelve.rounds[0].base.clone() },
            );
        }
        assert_eq!(decided_early(&twelve, 2.0, 12), None, "the last round is the ordinary rule's");
    }

    #[test]
    fn a_change_runs_every_round_and_so_does_one_near_the_tolerance() {
        let slower = rounds(&[1.05, 1.049, 1.051, 1.05, 1.052, 1.048, 1.05, 1.05]);
        assert_eq!(time_change(&slower, 2.0).verdict, AbVerdict::Regressed);
        assert_eq!(decided_early(&slower, 2.0, 12), None);
        let faster = rounds(&[0.95, 0.951, 0.949, 0.95, 0.948, 0.952, 0.95, 0.95]);
        assert_eq!(decided_early(&faster, 2.0, 12), None);
        // +1.7 % with one round at +2.1 %: the 95 % interval is inside the tolerance, the
        // look's wider one is not, so the rounds go on.
        let inside = rounds(&[1.017, 1.016, 1.018, 1.017, 1.012, 1.017, 1.021, 1.016]);
        assert_eq!(time_change(&inside, 2.0).verdict, AbVerdict::Unchanged);
        assert_eq!(decided_early(&inside, 2.0, 12), None);
        // +2.2 % with one round at +1.5 %: the look's interval reaches below the tolerance,
        // so the rounds go on.
        let close = rounds(&[1.022, 1.021, 1.023, 1.022, 1.015, 1.022, 1.024, 1.021]);
        assert_eq!(decided_early(&close, 2.0, 12), None);
    }

    #[test]
    fn an_early_verdict_is_the_one_the_ordinary_interval_gives_at_the_same_rounds() {
        for ratios in [
            vec![1.001, 0.999, 1.0, 1.002, 0.998, 1.001, 1.0, 0.999, 1.0],
            vec![1.011, 1.009, 1.01, 1.012, 1.008, 1.011, 1.01, 1.009],
            vec![0.99, 0.989, 0.991, 0.99, 0.988, 0.992, 0.99, 0.99, 0.991, 0.99],
        ] {
            let r = rounds(&ratios);
            let early = decided_early(&r, 2.0, 12).expect("decided");
            assert_eq!(early, time_change(&r, 2.0).verdict, "{ratios:?}");
        }
    }
}
