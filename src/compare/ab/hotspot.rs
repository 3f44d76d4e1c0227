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
/// hgemm.cu:48 (72.2 %)` when the base's hottest line was another), then up to two other
/// lines whose share grew by 5 points or more (`rising triton_softmax.py:39 (0.0 % ->
/// 13.6 %)`). Lines are matched by their text ([`counterpart`]), so a line that only moved
/// down the file is not taken for the one that now has its number.
pub fn hotspot_phrase(base: &Snapshot, head: &Snapshot) -> Option<String> {
    let h = head.hotspots.first()?;
    let Some(base_top) = base.hotspots.first() else {
        return Some(format!("{} ({})", h.location, pct_fixed(h.pct, 1)));
    };
    let mut out = match counterpart(&base.hotspots, &head.hotspots, h) {
        Some(b) if std::ptr::eq(b, base_top) => format!("{} ({})", h.location, shares(b, h)),
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
