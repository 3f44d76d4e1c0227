//! A verdict as written: one kernel's class, cause and evidence ([`KernelVerdict`]), and
//! `bottleneck_decision.json`, the verdicts of every kernel of a profile. The engine in
//! `mod.rs` fills these in; readers of the file (reports, `compare`) use them as they are.

use serde::{Deserialize, Serialize};

use super::summary::KernelSummary;
use super::{
    Classification, Confidence, Evidence, InstructionCause, LimiterFinding, OtherCause, Refinement, RuledOut,
    UncheckedLimiter,
};
use crate::model::stage::Stage;

/// An optimisation hypothesis and the fields it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hypothesis {
    /// The hypothesis, with the numbers filled in.
    pub text: String,
    /// The summary fields it cites.
    pub evidence: Vec<String>,
}

/// The verdict for one kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelVerdict {
    /// The kernel.
    pub kernel: String,
    /// The class.
    pub classification: Classification,
    /// How sure.
    pub confidence: Confidence,
    /// The rule that decided it; `None` for `unknown`.
    pub rule: Option<String>,
    /// The deciding metrics, then the supporting ones.
    pub evidence: Vec<Evidence>,
    /// The stage that would tell more.
    pub follow_up_stage: Stage,
    /// Concrete hypotheses, each tied to evidence.
    pub hypotheses: Vec<Hypothesis>,
    /// Fields that were not collected and kept rules from deciding (for `unknown`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// The cause, when a limiter names one: its id, advice, estimated gain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limiter: Option<LimiterFinding>,
    /// Causes ranked before `limiter` (or, without one, any cause) that the collected
    /// metrics could not decide, in rank order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchecked: Vec<UncheckedLimiter>,
    /// Set when the kernel is a closed library's (cuBLAS, cuDNN, ...): what the user
    /// controls instead of its code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<LibraryKernel>,
    /// The other causes whose conditions held, largest predicted saving first: what to
    /// fix next.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_causes: Vec<OtherCause>,
    /// Where `auto`'s stages alone would name another cause from the same launch's
    /// metrics: what they name, and the metric that changed the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refines: Option<Refinement>,
    /// Causes read from the SASS of its hot lines ([`crate::analyze::sass`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instruction_causes: Vec<InstructionCause>,
    /// The SASS patterns looked for on the kernel's source page and not found there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ruled_out: Vec<RuledOut>,
}

impl KernelVerdict {
    /// Why an `unknown` verdict is unknown, in one sentence: the metrics that were not
    /// collected, or, when all were, that no rule's conditions hold for them. `None` for a
    /// decided verdict.
    pub fn undecided(&self) -> Option<String> {
        if self.classification != Classification::Unknown {
            return None;
        }
        Some(if self.missing.is_empty() {
            "No rule could decide: every metric the rules read was collected, and no rule's conditions \
             hold for them."
                .to_string()
        } else {
            format!("No rule could decide: these metrics were not collected: {}.", self.missing.join(", "))
        })
    }
}

/// A kernel of a closed library, as a verdict records it
/// (see [`crate::analyze::library`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LibraryKernel {
    /// The library (`cuBLAS`, ...).
    pub library: String,
    /// Why the kernel is taken for the library's: the mark in its name, and what the
    /// source page showed.
    pub recognised_by: String,
    /// What the user controls instead of the kernel's code.
    pub advice: String,
}

/// `bottleneck_decision.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BottleneckDecision {
    /// Always 1.
    pub schema_version: u32,
    /// The rules file used.
    pub rules: String,
    /// One verdict per kernel.
    pub kernels: Vec<KernelVerdict>,
}

/// The verdict when no rule decides: what was missing, if anything. A decided verdict is
/// this one with the rule's fields set.
pub(super) fn unknown(s: &KernelSummary, missing: Vec<String>) -> KernelVerdict {
    KernelVerdict {
        kernel: s.kernel.clone(),
        classification: Classification::Unknown,
        confidence: Confidence::Low,
        rule: None,
        evidence: Vec::new(),
        follow_up_stage: Stage::SpeedOfLight,
        hypotheses: Vec::new(),
        missing,
        limiter: None,
        unchecked: Vec::new(),
        library: None,
        other_causes: Vec::new(),
        refines: None,
        instruction_causes: Vec::new(),
        ruled_out: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Rules;
    use super::*;

    fn kernel(fields: &[(&str, f64)]) -> KernelSummary {
        KernelSummary::synthetic(fields)
    }

    #[test]
    fn missing_metrics_give_unknown_and_say_which() {
        let v = Rules::builtin().decide(&kernel(&[("sm_throughput_pct", 50.0)]));
        assert_eq!(v.classification, Classification::Unknown);
        assert!(v.missing.contains(&"theoretical_occupancy_pct".to_string()), "{:?}", v.missing);
        let why = v.undecided().unwrap();
        assert!(
            why.starts_with("No rule could decide: these metrics were not collected: ")
                && why.contains("theoretical_occupancy_pct"),
            "{why}"
        );
        // With nothing missing the sentence says so instead of listing nothing.
        let all = KernelVerdict { missing: Vec::new(), ..v };
        assert!(!all.undecided().unwrap().contains("not collected"), "{:?}", all.undecided());
    }
}
