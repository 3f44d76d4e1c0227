//! The fix loop closed: after a fix, whether each cause the earlier profile named is gone,
//! what the kernel saved against what was predicted, and what limits it now.
//!
//! The earlier profile's causes are its limiter and the causes read from its SASS
//! ([`crate::analyze::sass`]). A limiter is still there when the later verdict names it
//! again, as its limiter or among the other causes that hold; a SASS cause, when the
//! later source page shows it again. A later profile without a source page cannot rule a
//! SASS cause out: that cause is "not checked". The saving is the duration's change as
//! the comparison measured it (the harness' timing when both sides have one).

use serde::{Deserialize, Serialize};

use crate::analyze::rules::KernelVerdict;
use crate::units::value;

/// What became of one cause the earlier profile named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CauseOutcome {
    /// The limiter or SASS pattern (`atomics-contention`, `int64-division`).
    pub id: String,
    /// A limiter, or a cause read from the SASS.
    pub kind: CauseKind,
    /// What fixing it was predicted to save, percent of the kernel's time.
    pub predicted_saving_pct: Option<f64>,
    /// What became of it.
    pub outcome: Outcome,
    /// How the later profile shows it, when it is still there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<String>,
}

/// Where a cause was named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CauseKind {
    /// The verdict's limiter.
    Limiter,
    /// A cause read from the SASS ([`crate::analyze::sass`]).
    Instruction,
}

/// What became of a cause after the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The later profile does not name it.
    Gone,
    /// The later profile names it again.
    StillThere,
    /// The later profile has no source page to read a SASS cause from.
    NotChecked,
}

/// `regression.json`'s `fix_loop`: the earlier profile's causes after the change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixLoop {
    /// Each cause the earlier profile named, its limiter first.
    pub causes: Vec<CauseOutcome>,
    /// How much faster the kernel got, percent of the earlier duration (negative: slower).
    pub measured_saving_pct: Option<f64>,
    /// The later profile's limiter, when one names a cause.
    pub limiter_now: Option<String>,
    /// The later profile's class.
    pub classification_now: String,
    /// The loop in sentences, one per cause.
    pub text: String,
}

/// The loop from the earlier verdict `before` to the later `after`; `None` when the
/// earlier profile named no cause. `delta_pct`: the duration's change, percent.
pub fn close(before: &KernelVerdict, after: &KernelVerdict, delta_pct: Option<f64>) -> Option<FixLoop> {
    let mut causes: Vec<CauseOutcome> = Vec::new();
    if let Some(l) = &before.limiter {
        causes.push(limiter_outcome(&l.id, l.predicted_saving_pct, after));
    }
    for c in &before.instruction_causes {
        causes.push(instruction_outcome(&c.id, c.predicted_saving_pct, c.samples_pct, after));
    }
    if causes.is_empty() {
        return None;
    }
    let measured = delta_pct.map(|d| -d);
    let limiter_now = after.limiter.as_ref().map(|l| l.id.clone());
    let text = text(&causes, measured, &limiter_now, after.classification.name());
    Some(FixLoop {
        causes,
        measured_saving_pct: measured,
        limiter_now,
        classification_now: after.classification.name().to_string(),
        text,
    })
}

fn limiter_outcome(id: &str, predicted: Option<f64>, after: &KernelVerdict) -> CauseOutcome {
    let again = after.limiter.as_ref().filter(|l| l.id == id).map(|l| match l.predicted_saving_pct {
        Some(p) => format!("still the limiter, priced at up to {} %", value(p)),
        None => "still the limiter".to_string(),
    });
    let other = after.other_causes.iter().find(|o| o.id == id).map(|o| match o.predicted_saving_pct {
        Some(p) => format!("among the causes that hold, priced at up to {} %", value(p)),
        None => "among the causes that hold".to_string(),
    });
    let now = again.or(other);
    CauseOutcome {
        id: id.into(),
        kind: CauseKind::Limiter,
        predicted_saving_pct: predicted,
        outcome: if now.is_some() { Outcome::StillThere } else { Outcome::Gone },
        now,
    }
}

fn instruction_outcome(
    id: &str,
    predicted: Option<f64>,
    was_pct: f64,
    after: &KernelVerdict,
) -> CauseOutcome {
    let checked = !after.instruction_causes.is_empty() || !after.ruled_out.is_empty();
    let now = after.instruction_causes.iter().find(|c| c.id == id).map(|c| {
        format!("{} % of the samples on {}, was {} %", value(c.samples_pct), c.where_text(), value(was_pct))
    });
    let outcome = match (&now, checked) {
        (Some(_), _) => Outcome::StillThere,
        (None, true) => Outcome::Gone,
        (None, false) => Outcome::NotChecked,
    };
    CauseOutcome {
        id: id.into(),
        kind: CauseKind::Instruction,
        predicted_saving_pct: predicted,
        outcome,
        now,
    }
}

/// The priced values, each once: `57.94 %` or `57.94 % and 32.96 %`; `None` when none is.
fn percents(values: &[Option<f64>]) -> Option<String> {
    let mut shown: Vec<String> = Vec::new();
    for v in values.iter().flatten() {
        let v = format!("{} %", value(*v));
        if !shown.contains(&v) {
            shown.push(v);
        }
    }
    (!shown.is_empty()).then(|| shown.join(" and "))
}

fn ids(causes: &[&CauseOutcome]) -> String {
    causes.iter().map(|c| format!("`{}`", c.id)).collect::<Vec<_>>().join(" and ")
}

/// The loop in one sentence: "`X` gone: saved Y % (predicted up to Z %); `V` still there
/// (...); the limiter now is `W` (class)."
fn text(causes: &[CauseOutcome], measured: Option<f64>, limiter_now: &Option<String>, class: &str) -> String {
    let saved = match measured {
        Some(m) if m >= 0.0 => format!("saved {} %", value(m)),
        Some(m) => format!("{} % slower", value(-m)),
        None => "the duration was not compared".to_string(),
    };
    let of = |o: Outcome| causes.iter().filter(|c| c.outcome == o).collect::<Vec<_>>();
    let (gone, still, unchecked) = (of(Outcome::Gone), of(Outcome::StillThere), of(Outcome::NotChecked));
    let mut parts: Vec<String> = Vec::new();
    if !gone.is_empty() {
        let predicted: Vec<Option<f64>> = gone.iter().map(|c| c.predicted_saving_pct).collect();
        let p = percents(&predicted)
            .map(|p| format!("predicted up to {p}"))
            .unwrap_or_else(|| "not priced".into());
        parts.push(format!("{} gone: {saved} ({p})", ids(&gone)));
    }
    for c in &still {
        let p = percents(&[c.predicted_saving_pct])
            .map(|p| format!("predicted up to {p} if it goes"))
            .unwrap_or_else(|| "not priced".into());
        let now = c.now.as_deref().unwrap_or("named again");
        let lead = if gone.is_empty() && parts.is_empty() { format!(": {saved}") } else { String::new() };
        parts.push(format!("`{}` still there ({now}; {p}){lead}", c.id));
    }
    if !unchecked.is_empty() {
        parts.push(format!("{} not checked (the later profile has no source page)", ids(&unchecked)));
    }
    if gone.is_empty() && still.is_empty() {
        parts.push(saved);
    }
    let still_limiter = limiter_now.as_ref().is_some_and(|l| still.iter().any(|c| &c.id == l));
    if !still_limiter {
        parts.push(match limiter_now {
            Some(l) => format!("the limiter now is `{l}` ({class})"),
            None => format!("no limiter names a cause now ({class})"),
        });
    }
    format!("{}.", parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loop_is_one_sentence_whatever_became_of_each_cause() {
        let cause = |id: &str, kind: CauseKind, p: Option<f64>, outcome: Outcome, now: Option<&str>| {
            CauseOutcome { id: id.into(), kind, predicted_saving_pct: p, outcome, now: now.map(String::from) }
        };
        let lim = Some("memory-latency".to_string());
        let both = [
            cause("integer-overhead", CauseKind::Limiter, Some(57.94), Outcome::Gone, None),
            cause("int64-division", CauseKind::Instruction, Some(57.94), Outcome::Gone, None),
        ];
        assert_eq!(
            text(&both, Some(64.96), &lim, "memory-bound"),
            "`integer-overhead` and `int64-division` gone: saved 64.96 % (predicted up to 57.94 %); the limiter now is `memory-latency` (memory-bound)."
        );
        let mixed = [
            cause(
                "memory-latency",
                CauseKind::Limiter,
                Some(26.26),
                Outcome::StillThere,
                Some("still the limiter, priced at up to 25.29 %"),
            ),
            cause("double-promotion", CauseKind::Instruction, Some(4.49), Outcome::Gone, None),
        ];
        assert_eq!(
            text(&mixed, Some(1.74), &lim, "memory-bound"),
            "`double-promotion` gone: saved 1.74 % (predicted up to 4.49 %); `memory-latency` still there (still the limiter, priced at up to 25.29 %; predicted up to 26.26 % if it goes)."
        );
        let xu = [
            cause("pipe-xu", CauseKind::Limiter, None, Outcome::Gone, None),
            cause("double-promotion", CauseKind::Instruction, Some(91.2), Outcome::Gone, None),
        ];
        assert_eq!(
            text(&xu, Some(93.41), &Some("pipe-fma".into()), "compute-bound"),
            "`pipe-xu` and `double-promotion` gone: saved 93.41 % (predicted up to 91.20 %); the limiter now is `pipe-fma` (compute-bound)."
        );
        let slower =
            [cause("pipe-fma", CauseKind::Limiter, None, Outcome::StillThere, Some("still the limiter"))];
        assert_eq!(
            text(&slower, Some(-0.57), &Some("pipe-fma".into()), "compute-bound"),
            "`pipe-fma` still there (still the limiter; not priced): 0.57 % slower."
        );
        let unchecked =
            [cause("local-memory", CauseKind::Instruction, Some(59.07), Outcome::NotChecked, None)];
        assert_eq!(
            text(&unchecked, None, &None, "memory-bound"),
            "`local-memory` not checked (the later profile has no source page); the duration was not compared; no limiter names a cause now (memory-bound)."
        );
    }
}
