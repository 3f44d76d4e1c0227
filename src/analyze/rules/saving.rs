//! The predicted saving of a cause: how much of the kernel's time fixing it could save,
//! from the model each limiter writes in the rules (`saving:`), and the ranking of the
//! causes that hold by it.
//!
//! The model (docs/predicted-saving.md derives it per family):
//!
//! ```text
//! saving = min(removes x of / 100, 100 - max(bounded_by))
//! ```
//!
//! `removes` is the share of a unit's work (or of the warps' waiting) the fix takes away,
//! `of` the share of the kernel's time that work takes (absent: all of it), and
//! `bounded_by` the units whose work the fix leaves as it is: at the measured work the
//! busiest of them would reach its roof first, so the kernel cannot get faster than it
//! allows. A cause the counters cannot price says why (`not_priced:`), and is never 0.

use serde::{Deserialize, Serialize};

use super::condition::check_field;
use super::summary::KernelSummary;
use crate::units::value;

/// A limiter's `saving:` as written in the rules file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SavingSpec {
    /// The field giving the share of the unit's work, or of the waiting, the fix removes,
    /// percent.
    #[serde(default)]
    removes: Option<String>,
    /// The field giving the share of the kernel's time that work takes, percent; absent:
    /// all of it.
    #[serde(default)]
    of: Option<String>,
    /// The throughputs (percent of peak) of the units whose work the fix leaves as it is.
    #[serde(default)]
    bounded_by: Vec<String>,
    /// Why the counters cannot price the cause (instead of `removes`).
    #[serde(default)]
    not_priced: Option<String>,
}

/// How rules files without a `saving:` for a limiter price it.
const NO_MODEL: &str = "the rules give this cause no saving model";

impl SavingSpec {
    /// Checks the fields it names; exactly one of `removes` and `not_priced`.
    pub(super) fn check(&self) -> Result<(), String> {
        match (&self.removes, &self.not_priced) {
            (Some(_), Some(_)) => return Err("`saving` has both `removes` and `not_priced`".into()),
            (None, None) => return Err("`saving` needs `removes` (a field) or `not_priced` (why not)".into()),
            _ => {}
        }
        for f in self.removes.iter().chain(self.of.iter()).chain(self.bounded_by.iter()) {
            check_field(f)?;
        }
        Ok(())
    }

    /// The fields the model reads.
    pub(super) fn fields(&self) -> impl Iterator<Item = &str> {
        self.removes.iter().chain(self.of.iter()).chain(self.bounded_by.iter()).map(String::as_str)
    }

    /// The model in words, for `explain`: `min(removes x of / 100, 100 - max(bounded_by))`.
    pub(super) fn formula(&self) -> String {
        if let Some(why) = &self.not_priced {
            return format!("not priced: {why}");
        }
        let removes = self.removes.as_deref().unwrap_or("?");
        let share = match &self.of {
            Some(of) => format!("{removes} x {of} / 100"),
            None => removes.to_string(),
        };
        match self.bounded_by.as_slice() {
            [] => format!("up to {share} % of the time"),
            [one] => format!("up to min({share}, 100 - {one}) % of the time"),
            many => format!("up to min({share}, 100 - max({})) % of the time", many.join(", ")),
        }
    }

    /// The saving for one kernel.
    pub(super) fn predict(spec: Option<&SavingSpec>, s: &KernelSummary) -> Saving {
        let Some(spec) = spec else { return Saving::NotPriced(NO_MODEL.into()) };
        if let Some(why) = &spec.not_priced {
            return Saving::NotPriced(why.clone());
        }
        let Some(removes) = spec.removes.as_deref() else { return Saving::NotPriced(NO_MODEL.into()) };
        let Some(removed) = s.get(removes) else {
            return Saving::NotPriced(format!("{removes} was not collected"));
        };
        let removed = removed.clamp(0.0, 100.0);
        let (share, of_text) = match spec.of.as_deref() {
            None => (100.0, String::new()),
            Some(of) => match s.get(of) {
                Some(v) => (v.clamp(0.0, 100.0), format!(" of {of} {} %", value(v))),
                None => return Saving::NotPriced(format!("{of} was not collected")),
            },
        };
        let mut basis = format!("{removes} {} %{of_text}", value(removed));
        let mut pct = removed * share / 100.0;
        let roof = spec
            .bounded_by
            .iter()
            .filter_map(|f| s.get(f).map(|v| (f, v)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((field, busy)) = roof {
            let room = (100.0 - busy).max(0.0);
            if room < pct {
                pct = room;
                basis.push_str(&format!(", bounded by {field} at {} %", value(busy)));
            }
        }
        Saving::Priced { pct: round2(pct), basis }
    }
}

/// Two decimals: what the reports print.
fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// A cause's predicted saving.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Saving {
    /// Up to `pct` % of the kernel's time, computed as `basis` says.
    Priced {
        /// Percent of the kernel's time.
        pct: f64,
        /// The model's terms with their values.
        basis: String,
    },
    /// Why the counters cannot price it.
    NotPriced(String),
}

impl Saving {
    /// The percentage, when priced.
    pub(super) fn pct(&self) -> Option<f64> {
        match self {
            Saving::Priced { pct, .. } => Some(*pct),
            Saving::NotPriced(_) => None,
        }
    }
}

/// How the causes that hold are ranked, from the rules file's `ranking:`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Ranking {
    /// A cause ranked lower in the file names the kernel's limiter only when its predicted
    /// saving exceeds the higher one's by more than this, percentage points; within it
    /// the file's order breaks the tie.
    pub(super) margin_pct: f64,
    /// A cause predicted to save less than this, percent, is at most `medium` confidence.
    pub(super) high_needs_saving_pct: f64,
}

impl Default for Ranking {
    fn default() -> Self {
        Ranking { margin_pct: 5.0, high_needs_saving_pct: 10.0 }
    }
}

impl Ranking {
    /// Which of the causes that hold (in file order) names the limiter: the first, unless
    /// a later priced one saves more than `margin_pct` more than the one chosen so far. A
    /// cause that cannot be priced is neither overtaken nor overtakes.
    pub(super) fn winner(&self, savings: &[Option<f64>]) -> Option<usize> {
        let mut best = 0;
        let first = savings.first()?;
        let mut best_pct = *first;
        for (i, s) in savings.iter().enumerate().skip(1) {
            if let (Some(b), Some(p)) = (best_pct, s) {
                if *p > b + self.margin_pct {
                    best = i;
                    best_pct = Some(*p);
                }
            }
        }
        Some(best)
    }
}

/// Another cause whose conditions held, with its predicted saving: what to fix after the
/// named one (or instead, where the two are close).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OtherCause {
    /// The limiter.
    pub id: String,
    /// Its predicted saving, percent of the kernel's time; `None` when not priced.
    pub predicted_saving_pct: Option<f64>,
    /// Why it is not priced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_priced: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> SavingSpec {
        let s: SavingSpec = serde_yaml::from_str(text).unwrap();
        s.check().unwrap();
        s
    }

    fn kernel(fields: &[(&str, f64)]) -> KernelSummary {
        KernelSummary::synthetic(fields)
    }

    #[test]
    fn the_waste_removed_times_the_units_share_bounded_by_the_next_roof() {
        let s =
            spec("removes: uncoalesced_excess_pct\nof: memory_max_pct\nbounded_by: [sm_throughput_pct]\n");
        // Synthetic summaries: 87.5 % of the sectors are waste, memory 47.7 % busy.
        let k =
            kernel(&[("uncoalesced_excess_pct", 87.5), ("memory_max_pct", 47.7), ("sm_throughput_pct", 5.0)]);
        let got = SavingSpec::predict(Some(&s), &k);
        assert_eq!(got.pct(), Some(41.74), "{got:?}");
        // The SM at 80 %: the kernel cannot get more than 20 % faster.
        let k = kernel(&[
            ("uncoalesced_excess_pct", 87.5),
            ("memory_max_pct", 96.0),
            ("sm_throughput_pct", 80.0),
        ]);
        let Saving::Priced { pct, basis } = SavingSpec::predict(Some(&s), &k) else { panic!() };
        assert_eq!(pct, 20.0);
        assert!(basis.contains("bounded by sm_throughput_pct at 80 %"), "{basis}");
    }

    #[test]
    fn what_cannot_be_priced_says_why_and_is_never_zero() {
        let s = spec("removes: uncoalesced_excess_pct\nof: memory_max_pct\n");
        let got = SavingSpec::predict(Some(&s), &kernel(&[("memory_max_pct", 50.0)]));
        assert_eq!(got, Saving::NotPriced("uncoalesced_excess_pct was not collected".into()));
        let s = spec("not_priced: at the roof\n");
        assert_eq!(SavingSpec::predict(Some(&s), &kernel(&[])).pct(), None);
        assert_eq!(SavingSpec::predict(None, &kernel(&[])), Saving::NotPriced(NO_MODEL.into()));
        let both: SavingSpec = serde_yaml::from_str("removes: tail_loss_pct\nnot_priced: x\n").unwrap();
        assert!(both.check().is_err());
    }

    #[test]
    fn a_later_cause_overtakes_only_beyond_the_margin() {
        let r = Ranking::default();
        assert_eq!(r.winner(&[Some(41.7), Some(52.3)]), Some(1));
        assert_eq!(r.winner(&[Some(41.7), Some(45.0)]), Some(0));
        assert_eq!(r.winner(&[None, Some(90.0)]), Some(0));
        assert_eq!(r.winner(&[Some(10.0), None, Some(30.0)]), Some(2));
        assert_eq!(r.winner(&[]), None);
    }
}
