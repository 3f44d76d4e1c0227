//! The hot-line evidence of an A/B verdict: where the head's time goes and which lines
//! gained. Pure, like the rest of the verdict: two snapshots in, a phrase out. The phrase
//! is stored in [`super::verdict::KernelAb::hotspot`], so the reviewer's line, `ab.json`
//! and the JSON event all say the same thing.

use crate::compare::{counterpart, HotLine, Snapshot};
use crate::units::pct_fixed;

/// Lines whose share of the samples grew by at least this many points are named as rising.
const RISING_POINTS: f64 = 5.0;

/// Where the head's time goes and what moved: the head's hottest line with its share on
/// both sides (`hgemm.cu:48 (72.2 % -> 80.4 %)`, or `moved from hgemm.cu:24 (97.6 %) to
/// hgemm.cu:48 (72.2 %)` when the base's hottest line was another; when the two lines
/// only swapped places, each within 5 points of the other on both sides, `fma.cu:7
/// (36.8 % -> 36.8 %), level with fma.cu:3 (39.5 % -> 35.5 %)`), then up to two other
/// lines whose share grew by 5 points or more (`rising triton_softmax.py:39 (0.0 % ->
/// 13.6 %)`). Lines are matched by their text ([`counterpart`]), so a line that only moved
/// down the file is not taken for the one that now has its number.
pub fn hotspot_phrase(base: &Snapshot, head: &Snapshot) -> Option<String> {
    let h = head.hotspots.first()?;
    let Some(base_top) = base.hotspots.first() else {
        return Some(format!("{} ({})", h.location, pct_fixed(h.pct, 1)));
    };
    let b = counterpart(&base.hotspots, &head.hotspots, h);
    let level_with = b.and_then(|b| level(base, head, b, h));
    let mut out = match (b, level_with) {
        (Some(b), _) if std::ptr::eq(b, base_top) => format!("{} ({})", h.location, shares(b, h)),
        (Some(b), Some(t)) => {
            format!("{} ({}), level with {} ({})", h.location, shares(b, h), t.location, shares(base_top, t))
        }
        _ => format!(
            "moved from {} ({}) to {} ({})",
            base_top.location,
            pct_fixed(base_top.pct, 1),
            h.location,
            pct_fixed(h.pct, 1)
        ),
    };
    let mut rising: Vec<(f64, String)> = head
        .hotspots
        .iter()
        .skip(1)
        .map(|l| match counterpart(&base.hotspots, &head.hotspots, l) {
            Some(b) => (l.pct - b.pct, format!("{} ({})", l.location, shares(b, l))),
            None => (l.pct, format!("{} (0.0 % -> {})", l.location, pct_fixed(l.pct, 1))),
        })
        .filter(|(gain, _)| *gain >= RISING_POINTS)
        .collect();
    rising.sort_by(|a, b| b.0.total_cmp(&a.0));
    if !rising.is_empty() {
        let named: Vec<String> = rising.into_iter().take(2).map(|(_, s)| s).collect();
        out.push_str(&format!(", rising {}", named.join(" and ")));
    }
    Some(out)
}

/// The head's line that was the base's hottest, when the two hottest lines only swapped
/// places: `b` (the base's side of the head's hottest line `h`) within [`RISING_POINTS`] of
/// the base's hottest line, and that line within as much of `h` in the head.
fn level<'h>(base: &Snapshot, head: &'h Snapshot, b: &HotLine, h: &HotLine) -> Option<&'h HotLine> {
    let base_top = base.hotspots.first()?;
    let t = counterpart(&head.hotspots, &base.hotspots, base_top)?;
    (base_top.pct - b.pct < RISING_POINTS && h.pct - t.pct < RISING_POINTS).then_some(t)
}

/// `72.1 % -> 74.7 %`, with the base's line number when the line moved in the file, or
/// `edited` when the change rewrote it.
fn shares(base: &HotLine, head: &HotLine) -> String {
    let moved = match base.line() {
        Some(n) if base.location != head.location => format!("line {n} in the base, "),
        _ if base.source != head.source => "edited, ".to_string(),
        _ => String::new(),
    };
    format!("{moved}{} -> {}", pct_fixed(base.pct, 1), pct_fixed(head.pct, 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(side: &str, dir: &str) -> Snapshot {
        let at = kprof_testkit::recordings().join(format!("bisect/c5/{side}/{dir}"));
        Snapshot::load(&at, side).unwrap()
    }

    /// The H200 bisect's unchanged step (c5 against c0): the kernel's signature line and
    /// its loop hold 39.5 % and 36.8 % of the samples on one side, 35.5 % and 36.8 % on the
    /// other. They swapped places; nothing moved, and the phrase says so.
    #[test]
    fn two_lines_that_swap_places_are_level_not_moved() {
        let base = load("base", "fma_chain_20261202_035642");
        let head = load("head", "fma_chain_20261202_035633");
        assert_eq!(
            hotspot_phrase(&base, &head).unwrap(),
            "fma.cu:7 (edited, 36.8 % -> 36.8 %), level with fma.cu:3 (39.5 % -> 35.5 %)"
        );
        // A line that overtook the other by more than 5 points has moved.
        let mut far = head.clone();
        far.hotspots[0].pct = 45.0;
        assert!(hotspot_phrase(&base, &far).unwrap().starts_with("moved from fma.cu:3 (39.5 %) to fma.cu:7"));
    }
}
