//! Rounds that fall into two groups: a kernel whose time depends on something each
//! process draws anew.
//!
//! On the H200, `l2_reread_cg` (a 4 MiB table re-read from L2) ran either at about 312 µs
//! or at about 322 µs in a process, never in between: 12 rounds of its A/A check put the
//! base 4 fast and 8 slow, the head 8 fast and 4 slow. Each round's ratio is then about
//! -3.3 %, 0 or +3.3 % by the luck of two draws, and 12 rounds cannot resolve ±2 % against
//! that (`fixtures/h200/ab-sweep/zoo-aa-2.log.gz`). No statistic over 12 processes can; what
//! kprof can do is say so, so that the reader knows why the check cannot tell and what
//! would: a tolerance above the gap for that kernel, or many more rounds.
//!
//! This is a diagnosis only: it never changes a verdict. A side's rounds count as two
//! groups when, sorted, their largest step between neighbours is at least
//! [`MIN_GAP_PCT`] and at least [`GAP_OVER_SPREAD`] times the wider group's own range, with
//! at least two rounds in each group.

use serde::Serialize;

use super::rounds::Round;

/// The smallest step between two groups worth naming, percent of the lower group's top.
pub const MIN_GAP_PCT: f64 = 1.0;
/// How much wider than each group's own range the step between them must be.
pub const GAP_OVER_SPREAD: f64 = 1.5;

/// One side's rounds in two groups.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TwoGroups {
    /// `base` or `head`.
    pub side: &'static str,
    /// Rounds in the faster group.
    pub fast: usize,
    /// Rounds in the slower group.
    pub slow: usize,
    /// The step between the groups, percent of the faster group's slowest round.
    pub gap_pct: f64,
}

/// The sides whose kept rounds fall into two groups; empty when none does.
pub fn two_groups(kept: &[&Round]) -> Vec<TwoGroups> {
    let base: Vec<f64> = kept.iter().map(|r| r.base.median_ns).collect();
    let head: Vec<f64> = kept.iter().map(|r| r.head.median_ns).collect();
    [("base", base), ("head", head)].into_iter().filter_map(|(side, v)| split(side, v)).collect()
}

fn split(side: &'static str, mut v: Vec<f64>) -> Option<TwoGroups> {
    if v.iter().any(|x| !x.is_finite() || *x <= 0.0) {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n < 4 {
        return None;
    }
    // The largest relative step with at least two rounds on each side of it.
    let (at, gap) =
        (2..=n - 2).map(|i| (i, (v[i] / v[i - 1] - 1.0) * 100.0)).max_by(|a, b| a.1.total_cmp(&b.1))?;
    let range = |g: &[f64]| (g[g.len() - 1] / g[0] - 1.0) * 100.0;
    let spread = range(&v[..at]).max(range(&v[at..]));
    (gap >= MIN_GAP_PCT && gap >= GAP_OVER_SPREAD * spread).then_some(TwoGroups {
        side,
        fast: at,
        slow: n - at,
        gap_pct: gap,
    })
}

/// The words for an ambiguous verdict's reader, when a side's rounds fall into groups:
/// `the base's rounds fall into two groups 2.7 % apart (4 fast, 8 slow) and the head's ...`.
pub fn phrase(groups: &[TwoGroups]) -> Option<String> {
    let parts: Vec<String> = groups
        .iter()
        .map(|g| {
            format!(
                "the {}'s into two groups {:.1} % apart ({} fast, {} slow)",
                g.side, g.gap_pct, g.fast, g.slow
            )
        })
        .collect();
    let widest = groups.iter().map(|g| g.gap_pct).fold(0.0, f64::max);
    (!parts.is_empty()).then(|| {
        format!(
            "its rounds fall by process, {}: which group a run lands in moves a round by more than \
             the code did; a tolerance above {widest:.1} % for this kernel, or many more rounds, would decide it",
            parts.join(" and ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::ab::rounds::SideSample;
    use crate::model::ab::Side;

    fn round(index: u32, base_us: f64, head_us: f64) -> Round {
        let s =
            |us: f64| SideSample { median_ns: us * 1e3, samples: 300, rel_noise: 0.006, sm_clock_mhz: None };
        Round { index, first: Side::first_in_round(index), base: s(base_us), head: s(head_us) }
    }

    #[test]
    fn the_recorded_l2_resident_re_read_falls_into_two_groups_on_both_sides() {
        // `l2_reread_cg`'s 12 rounds on the H200, µs (fixtures/h200/ab-sweep/zoo-aa-2.log.gz).
        let base = [
            322.080, 323.424, 323.104, 312.304, 323.904, 321.376, 320.848, 321.472, 312.160, 321.632,
            311.424, 312.368,
        ];
        let head = [
            312.864, 322.048, 312.272, 322.704, 313.440, 312.096, 319.312, 310.048, 322.304, 310.784,
            309.888, 312.000,
        ];
        let rounds: Vec<Round> = (0..12).map(|i| round(i as u32, base[i], head[i])).collect();
        let kept: Vec<&Round> = rounds.iter().collect();
        let groups = two_groups(&kept);
        assert_eq!(groups.len(), 2, "{groups:?}");
        assert_eq!((groups[0].side, groups[0].fast, groups[0].slow), ("base", 4, 8));
        assert!((groups[0].gap_pct - 2.71).abs() < 0.01, "{groups:?}");
        assert!((groups[1].gap_pct - 1.87).abs() < 0.01, "{groups:?}");
        assert_eq!((groups[1].side, groups[1].fast, groups[1].slow), ("head", 8, 4));
        let words = phrase(&groups).unwrap();
        assert!(words.contains("the base's into two groups 2.7 % apart (4 fast, 8 slow)"), "{words}");
        assert!(words.contains("a tolerance above 2.7 %"), "{words}");
    }

    #[test]
    fn ordinary_noise_and_a_single_outlier_are_not_two_groups() {
        // A unimodal spread of ±0.5 %, and one round 5 % off (one round is no group).
        let noise = [0.1, -0.4, 0.3, -0.2, 0.5, -0.5, 0.0, 0.2, -0.1, 0.4, -0.3, 0.25];
        let rounds: Vec<Round> = (0..12)
            .map(|i| round(i as u32, 1000.0 * (1.0 + noise[i] / 100.0), 1000.0 * (1.0 - noise[i] / 100.0)))
            .collect();
        assert!(two_groups(&rounds.iter().collect::<Vec<_>>()).is_empty());
        let mut outlier = rounds.clone();
        outlier[5].head.median_ns *= 1.05;
        assert!(two_groups(&outlier.iter().collect::<Vec<_>>()).is_empty());
        // A step smaller than 1 % is not named, however tight the groups.
        let tight: Vec<Round> =
            (0..12).map(|i| round(i as u32, if i % 2 == 0 { 1000.0 } else { 1008.0 }, 1000.0)).collect();
        assert!(two_groups(&tight.iter().collect::<Vec<_>>()).is_empty());
        assert!(phrase(&[]).is_none());
    }
}
