//! `cargo kprof bisect`'s search, pure: which revision of a first-parent history to check
//! next against the good revision, and what the checks so far conclude.
//!
//! The history is the first-parent list `good..bad`, oldest first: index 0 is the child
//! of `--good`, the last index is `--bad`. The good revision itself is never checked (it
//! is the other side of every check). The search is a state machine: [`Search::next`]
//! names the revision to check and with how many times the usual rounds, the caller runs
//! that A/B check and hands its [`Outcome`] to [`Search::record`], until `next` says
//! nothing is left; [`Search::result`] then reads the conclusion.
//!
//! 1. `--bad` is checked first: a history whose last revision did not regress against
//!    `--good` has nothing to bisect.
//! 2. Then a binary search between the last revision known good (not slower beyond the
//!    tolerance: unchanged or improved) and the first known regressed, checking the
//!    candidate nearest the middle. With `n` revisions and no unknown step this is at most
//!    `ceil(log2 n) + 1` checks, `--bad`'s included.
//! 3. An `ambiguous` check is run once more with twice the rounds; ambiguous again, the
//!    revision is unknown. A revision that could not be checked (its build failed, it
//!    lacks the kernel) is unknown at once, as `git bisect skip` leaves it. The search
//!    goes on around unknown revisions; when only unknown ones lie between the last good
//!    and the first regressed, the answer is that range, naming them.
//! 4. A history that got slower twice: when a regressed revision checked later in the
//!    history is slower than the first regressed one by more than both intervals allow,
//!    the answer names it for a follow-up bisect between the two.

use serde::Serialize;

/// A timing interval of one check, percent against `--good`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// The estimate.
    pub estimate_pct: f64,
    /// The lower bound.
    pub lo_pct: f64,
    /// The upper bound.
    pub hi_pct: f64,
}

/// What one check of a revision against `--good` concluded.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
pub enum Outcome {
    /// Slower beyond the tolerance, or a gated counter grew: the regression is here.
    Regressed {
        /// The timing interval, when time was measured.
        time: Option<Interval>,
    },
    /// Within the tolerance.
    Unchanged,
    /// Faster beyond the tolerance: not regressed either.
    Improved,
    /// The interval straddles the tolerance.
    Ambiguous,
    /// Not checked: why (a failed build, the kernel missing).
    Skipped {
        /// Why, in words.
        reason: String,
    },
}

impl Outcome {
    /// `regressed`, `unchanged`, `improved`, `ambiguous` or `skipped`.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Regressed { .. } => "regressed",
            Outcome::Unchanged => "unchanged",
            Outcome::Improved => "improved",
            Outcome::Ambiguous => "ambiguous",
            Outcome::Skipped { .. } => "skipped",
        }
    }
}

/// A revision's state in the search.
#[derive(Debug, Clone, PartialEq)]
enum Known {
    Untested,
    Good,
    Bad(Option<Interval>),
    /// Ambiguous twice, or skipped.
    Unknown,
}

/// What to check next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// The revision's index in the history.
    pub index: usize,
    /// How many times the usual rounds: 1, or 2 for the retry of an ambiguous check.
    pub rounds_factor: u32,
}

/// One check as it happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// The revision's index in the history.
    pub index: usize,
    /// How many times the usual rounds.
    pub rounds_factor: u32,
    /// What it concluded.
    pub outcome: Outcome,
    /// After it, the last revision known good (`None`: `--good` itself) ...
    pub last_good: Option<usize>,
    /// ... and the first known regressed (`None`: not known yet).
    pub first_bad: Option<usize>,
}

/// What the search concludes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Found {
    /// The first regressed revision.
    FirstBad {
        /// Its index.
        index: usize,
        /// A later revision clearly slower still: a second regression to bisect between
        /// the two.
        second: Option<usize>,
    },
    /// The first regressed revision is one of `hidden` or `through`: the revisions after
    /// `after` (`None`: `--good`) could not be told.
    Range {
        /// The last revision known good; `None` for `--good`.
        after: Option<usize>,
        /// The first known regressed.
        through: usize,
        /// The unknown revisions between them.
        hidden: Vec<usize>,
        /// As in [`Found::FirstBad`].
        second: Option<usize>,
    },
    /// `--bad` is not slower than `--good` beyond the tolerance.
    NoRegression,
    /// `--bad` itself could not be told from `--good` (ambiguous twice, or not checked).
    Undecided,
}

/// The search over a history of `n` revisions.
#[derive(Debug, Clone)]
pub struct Search {
    known: Vec<Known>,
    steps: Vec<Step>,
    /// The revision checked once ambiguous, to be checked again with twice the rounds.
    retry: Option<usize>,
}

impl Search {
    /// A search over `n` revisions (`good..bad`, oldest first); `n` is at least 1.
    pub fn new(n: usize) -> Search {
        Search { known: vec![Known::Untested; n.max(1)], steps: Vec::new(), retry: None }
    }

    /// The checks so far, in order.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// How many steps checked a revision (skipped revisions are no checks); the tests hold
    /// the search to its bound with it.
    #[cfg(test)]
    pub fn checks(&self) -> usize {
        self.steps.iter().filter(|s| !matches!(s.outcome, Outcome::Skipped { .. })).count()
    }

    fn last(&self) -> usize {
        self.known.len() - 1
    }

    /// The last known good revision and the first known regressed one.
    fn bounds(&self) -> (Option<usize>, Option<usize>) {
        let first_bad = self.known.iter().position(|k| matches!(k, Known::Bad(_)));
        let below = first_bad.unwrap_or(self.known.len());
        let last_good = self.known[..below].iter().rposition(|k| *k == Known::Good);
        (last_good, first_bad)
    }

    /// The next check, or `None` when the search is over.
    pub fn next(&self) -> Option<Probe> {
        if let Some(index) = self.retry {
            return Some(Probe { index, rounds_factor: 2 });
        }
        let last = self.last();
        match &self.known[last] {
            Known::Untested => return Some(Probe { index: last, rounds_factor: 1 }),
            Known::Good | Known::Unknown => return None,
            Known::Bad(_) => {}
        }
        let (good, bad) = self.bounds();
        let (lo, hi) = (good.map_or(0, |g| g + 1), bad.unwrap_or(last));
        // Twice the middle, so that an even span picks its lower middle revision.
        let mid2 = lo + hi.saturating_sub(1);
        (lo..hi)
            .filter(|&i| self.known[i] == Known::Untested)
            .min_by_key(|&i| ((2 * i).abs_diff(mid2), i))
            .map(|index| Probe { index, rounds_factor: 1 })
    }

    /// Records the outcome of the check [`Search::next`] asked for.
    pub fn record(&mut self, probe: Probe, outcome: Outcome) {
        let i = probe.index;
        self.retry = None;
        self.known[i] = match &outcome {
            Outcome::Regressed { time } => Known::Bad(*time),
            Outcome::Unchanged | Outcome::Improved => Known::Good,
            Outcome::Ambiguous if probe.rounds_factor < 2 => {
                self.retry = Some(i);
                Known::Untested
            }
            Outcome::Ambiguous | Outcome::Skipped { .. } => Known::Unknown,
        };
        let (last_good, first_bad) = self.bounds();
        self.steps.push(Step { index: i, rounds_factor: probe.rounds_factor, outcome, last_good, first_bad });
    }

    /// What the checks so far conclude (meant for when [`Search::next`] is `None`).
    pub fn result(&self) -> Found {
        let last = self.last();
        match &self.known[last] {
            Known::Good => return Found::NoRegression,
            Known::Untested | Known::Unknown => return Found::Undecided,
            Known::Bad(_) => {}
        }
        let (good, bad) = self.bounds();
        let through = bad.unwrap_or(last);
        let from = good.map_or(0, |g| g + 1);
        let second = self.second(through);
        let hidden: Vec<usize> = (from..through).collect();
        if hidden.is_empty() {
            Found::FirstBad { index: through, second }
        } else {
            Found::Range { after: good, through, hidden, second }
        }
    }

    /// The regressed revision after `first` whose interval lies wholly above `first`'s:
    /// the one with the largest estimate.
    fn second(&self, first: usize) -> Option<usize> {
        let Known::Bad(Some(at_first)) = self.known[first] else { return None };
        self.known
            .iter()
            .enumerate()
            .skip(first + 1)
            .filter_map(|(i, k)| match k {
                Known::Bad(Some(t)) if t.lo_pct > at_first.hi_pct => Some((i, t.estimate_pct)),
                _ => None,
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i)
    }
}

/// At most this many checks find the first regressed revision of `n` when every check
/// decides: `ceil(log2 n) + 1`.
pub fn check_bound(n: usize) -> usize {
    let n = n.max(1);
    (usize::BITS - (n - 1).leading_zeros()) as usize + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slower(pct: f64) -> Outcome {
        Outcome::Regressed {
            time: Some(Interval { estimate_pct: pct, lo_pct: pct - 0.2, hi_pct: pct + 0.2 }),
        }
    }

    /// Runs the search with `oracle` answering each probe; returns the result and the probes.
    fn run(n: usize, mut oracle: impl FnMut(Probe) -> Outcome) -> (Found, Search) {
        let mut s = Search::new(n);
        let mut guard = 0;
        while let Some(p) = s.next() {
            let o = oracle(p);
            s.record(p, o);
            guard += 1;
            assert!(guard <= 4 * n + 4, "the search does not end");
        }
        (s.result(), s)
    }

    #[test]
    fn the_bound_is_ceil_log2_plus_one() {
        let expected = [(1, 1), (2, 2), (3, 3), (4, 3), (5, 4), (8, 4), (9, 5), (16, 5), (17, 6), (1000, 11)];
        for (n, b) in expected {
            assert_eq!(check_bound(n), b, "n = {n}");
        }
    }

    /// A regression planted at every revision `k` of every history up to 70 revisions is
    /// found, exactly, within `ceil(log2 n) + 1` checks, and `--bad` is checked first.
    #[test]
    fn every_planted_regression_is_named_within_the_bound() {
        for n in 1..=70 {
            for k in 0..n {
                let (found, s) = run(n, |p| if p.index >= k { slower(10.0) } else { Outcome::Unchanged });
                assert_eq!(found, Found::FirstBad { index: k, second: None }, "n = {n}, k = {k}");
                assert!(s.checks() <= check_bound(n), "n = {n}, k = {k}: {} checks", s.checks());
                assert_eq!(s.steps()[0].index, n - 1);
                // Every revision is checked at most once.
                let mut seen: Vec<usize> = s.steps().iter().map(|st| st.index).collect();
                seen.sort_unstable();
                seen.dedup();
                assert_eq!(seen.len(), s.steps().len(), "n = {n}, k = {k}");
            }
        }
    }

    /// The bound is reached: some planted revision needs all `ceil(log2 n) + 1` checks.
    #[test]
    fn the_bound_is_tight() {
        for n in [2, 5, 16, 33] {
            let most = (0..n)
                .map(|k| run(n, |p| if p.index >= k { slower(10.0) } else { Outcome::Unchanged }).1.checks())
                .max()
                .unwrap();
            assert_eq!(most, check_bound(n), "n = {n}");
        }
    }

    #[test]
    fn improved_counts_as_not_regressed_and_an_unregressed_bad_ends_at_once() {
        let (found, s) = run(9, |p| if p.index >= 4 { slower(5.0) } else { Outcome::Improved });
        assert_eq!(found, Found::FirstBad { index: 4, second: None });
        assert!(s.checks() <= 5);
        let (found, s) = run(9, |_| Outcome::Unchanged);
        assert_eq!(found, Found::NoRegression);
        assert_eq!(s.checks(), 1);
    }

    /// An ambiguous check runs once more with twice the rounds; when the retry decides, the
    /// search goes on as if the first had.
    #[test]
    fn an_ambiguous_check_is_retried_once_with_twice_the_rounds() {
        let (n, k) = (16, 5);
        let (found, s) = run(n, |p| match p.index {
            7 if p.rounds_factor == 1 => Outcome::Ambiguous,
            i if i >= k => slower(4.0),
            _ => Outcome::Unchanged,
        });
        assert_eq!(found, Found::FirstBad { index: k, second: None });
        let at7: Vec<u32> = s.steps().iter().filter(|st| st.index == 7).map(|st| st.rounds_factor).collect();
        assert_eq!(at7, [1, 2]);
        assert!(s.checks() <= check_bound(n) + 1);
    }

    /// Ambiguous twice, the revision is unknown: when it is the only one between the last
    /// good and the first regressed, the answer is that range.
    #[test]
    fn a_twice_ambiguous_revision_at_the_edge_leaves_a_range() {
        let (n, k) = (10, 6);
        let (found, s) = run(n, |p| match p.index {
            i if i == k => Outcome::Ambiguous,
            i if i > k => slower(3.0),
            _ => Outcome::Unchanged,
        });
        assert_eq!(found, Found::Range { after: Some(k - 1), through: k + 1, hidden: vec![k], second: None });
        let at_k: Vec<u32> = s.steps().iter().filter(|st| st.index == k).map(|st| st.rounds_factor).collect();
        assert_eq!(at_k, [1, 2]);
    }

    /// A revision that cannot be checked is skipped and the search goes around it: the
    /// first regressed revision is still named unless the skipped one is it or the one
    /// before it, and then a range names both, within one check more than the bound.
    #[test]
    fn a_skipped_revision_is_gone_around() {
        let skip = || Outcome::Skipped { reason: "the build failed".into() };
        for n in 3..=24 {
            for k in 0..n {
                for broken in 0..n - 1 {
                    let (found, s) = run(n, |p| match p.index {
                        i if i == broken => skip(),
                        i if i >= k => slower(8.0),
                        _ => Outcome::Unchanged,
                    });
                    // The broken revision hides the first regressed one when it is that
                    // one or the one before it.
                    let expected = if broken == k {
                        let after = k.checked_sub(1);
                        Found::Range { after, through: k + 1, hidden: vec![k], second: None }
                    } else if broken + 1 == k {
                        let after = broken.checked_sub(1);
                        Found::Range { after, through: k, hidden: vec![broken], second: None }
                    } else {
                        Found::FirstBad { index: k, second: None }
                    };
                    assert_eq!(found, expected, "n = {n}, k = {k}, broken = {broken}");
                    assert!(s.checks() <= check_bound(n) + 1, "n = {n}, k = {k}, broken = {broken}");
                }
            }
        }
    }

    #[test]
    fn a_bad_that_cannot_be_told_is_undecided() {
        let (found, s) = run(6, |_| Outcome::Ambiguous);
        assert_eq!(found, Found::Undecided);
        assert_eq!(s.checks(), 2);
        let (found, _) = run(6, |_| Outcome::Skipped { reason: "x".into() });
        assert_eq!(found, Found::Undecided);
    }

    /// Slower twice: +3 % at revision 4, +40 % from revision 11 on. The first step past the
    /// tolerance is named, and a later regressed revision clearly slower still is named
    /// for the follow-up; one within the first's interval is not.
    #[test]
    fn a_second_step_past_the_tolerance_is_named_for_a_follow_up() {
        let (found, _) = run(16, |p| match p.index {
            i if i >= 11 => slower(40.0),
            i if i >= 4 => slower(3.0),
            _ => Outcome::Unchanged,
        });
        let Found::FirstBad { index: 4, second: Some(second) } = found else { panic!("{found:?}") };
        assert!(second >= 11, "{second}");
        let (found, _) = run(16, |p| if p.index >= 4 { slower(3.0) } else { Outcome::Unchanged });
        assert_eq!(found, Found::FirstBad { index: 4, second: None });
        // Counters alone (no time): no claim about a second step.
        let (found, _) =
            run(8, |p| if p.index >= 2 { Outcome::Regressed { time: None } } else { Outcome::Unchanged });
        assert_eq!(found, Found::FirstBad { index: 2, second: None });
    }

    /// Each step carries the interval as it stood after it.
    #[test]
    fn each_step_carries_its_interval() {
        let (_, s) = run(8, |p| if p.index >= 3 { slower(9.0) } else { Outcome::Unchanged });
        let first = &s.steps()[0];
        assert_eq!((first.index, first.last_good, first.first_bad), (7, None, Some(7)));
        let last = s.steps().last().unwrap();
        assert_eq!((last.last_good, last.first_bad), (Some(2), Some(3)));
    }
}
