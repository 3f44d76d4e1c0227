//! A row of a verdict's evidence: the metric, its value, and the condition it met (or
//! that it only supports the verdict); and how a rule or limiter adds one, once.

use serde::{Deserialize, Serialize};

use super::summary;

/// One row of evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The ncu metric (or how the field is derived).
    pub metric: String,
    /// The summary field.
    pub field: String,
    /// Its value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// The condition it met, or [`Threshold::Supporting`].
    pub threshold: Threshold,
    /// The rule.
    pub rule: String,
}

impl Evidence {
    /// Whether the row supports the verdict rather than deciding it.
    pub fn is_supporting(&self) -> bool {
        self.threshold.is_supporting()
    }
}

/// What a row of evidence stands for: the condition that decided the verdict, or a field
/// shown in support of it. Written as the condition's text, or `-` for supporting
/// evidence, in `bottleneck_decision.json` and the tables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Threshold {
    /// The condition it met (`memory_max_pct >= 60`).
    Met(String),
    /// Supporting evidence: a field the rule shows beside its conditions.
    Supporting,
}

impl Threshold {
    /// How supporting evidence is written.
    const SUPPORTING: &'static str = "-";

    /// Whether this is supporting evidence.
    pub fn is_supporting(&self) -> bool {
        matches!(self, Threshold::Supporting)
    }

    /// The text as written: the condition, or `-`.
    pub fn as_str(&self) -> &str {
        match self {
            Threshold::Met(condition) => condition,
            Threshold::Supporting => Self::SUPPORTING,
        }
    }

    /// Whether the text as written is empty (a condition never is).
    pub fn is_empty(&self) -> bool {
        self.as_str().is_empty()
    }
}

impl std::fmt::Display for Threshold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Compares the text as written, as a test or a reader of the JSON would.
impl PartialEq<&str> for Threshold {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl From<String> for Threshold {
    fn from(text: String) -> Self {
        if text == Threshold::SUPPORTING {
            Threshold::Supporting
        } else {
            Threshold::Met(text)
        }
    }
}

impl From<Threshold> for String {
    fn from(t: Threshold) -> Self {
        match t {
            Threshold::Met(condition) => condition,
            Threshold::Supporting => Threshold::SUPPORTING.to_string(),
        }
    }
}

/// Adds a row of evidence for `field`, unless the same condition already cites it (or,
/// for supporting evidence, any row does).
pub(super) fn push_evidence(
    out: &mut Vec<Evidence>,
    field: &str,
    value: f64,
    threshold: Threshold,
    rule: &str,
) {
    if out.iter().any(|e| e.field == field && (e.threshold == threshold || threshold.is_supporting())) {
        return;
    }
    out.push(Evidence {
        metric: summary::source_of(field),
        field: field.to_string(),
        value,
        unit: summary::unit_of(field).to_string(),
        threshold,
        rule: rule.to_string(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report's evidence table prints each threshold through `Display`.
    #[test]
    fn a_threshold_prints_as_written() {
        assert_eq!(Threshold::Met("memory_max_pct >= 60".into()).to_string(), "memory_max_pct >= 60");
        assert_eq!(Threshold::Supporting.to_string(), "-");
    }
}
