//! Limiters: the cause behind a class, with the conditions that confirm and refute it, and
//! the advice an expert would give.

use serde::{Deserialize, Serialize};

use super::condition::{check_field, Condition};
use super::evidence::push_evidence;
use super::saving::{Saving, SavingSpec};
use super::summary::KernelSummary;
use super::template::{check_template, fill, placeholders};
use super::KernelVerdict;
use super::{add_missing, all_hold, Classification, Confidence, Hypothesis, Threshold};
use crate::model::stage::Stage;

/// A limiter's class: a fixed one, or the class the throughputs give (`from-throughput`),
/// for causes that show in either (an LSU-bound kernel is compute-bound or balanced).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub(super) enum LimiterClass {
    Fixed(Classification),
    Other(FromThroughput),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum FromThroughput {
    FromThroughput,
}

/// An advice id (`coalesce-accesses`): what `EXPECTED.md` files and tests compare.
pub type AdviceId = String;

/// One piece of advice; the first whose `when` holds and whose `{field}`s all fill in is
/// given.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AdviceSpec {
    id: AdviceId,
    #[serde(default)]
    when: Vec<String>,
    text: String,
}

/// A limiter as written in the rules file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LimiterSpec {
    pub(super) id: String,
    class: LimiterClass,
    /// The stage that tells more, when this limiter is named after the basic stage.
    #[serde(default)]
    follow_up_stage: Option<Stage>,
    requires: Vec<String>,
    #[serde(default)]
    refuted_by: Vec<String>,
    /// Conditions that make the evidence unambiguous: `high` confidence; else `medium`.
    #[serde(default)]
    high_when: Vec<String>,
    /// Conditions under which the unit is at its roof: nothing is left to fix in the kernel
    /// but the advice's lever.
    #[serde(default)]
    at_roof_when: Vec<String>,
    #[serde(default)]
    evidence: Vec<String>,
    /// A field that estimates the share of time (or traffic) the cause costs, in percent.
    #[serde(default)]
    gain: Option<String>,
    /// How much of the kernel's time fixing it could save (`saving.rs`).
    #[serde(default)]
    saving: Option<SavingSpec>,
    /// Stall reasons that mark the source lines this limiter points at.
    #[serde(default)]
    source_stalls: Vec<String>,
    /// ncu rule names that name the same cause.
    #[serde(default)]
    ncu_rules: Vec<String>,
    advice: Vec<AdviceSpec>,
}

#[derive(Debug, Clone)]
pub(super) struct Limiter {
    pub(super) spec: LimiterSpec,
    requires: Vec<Condition>,
    /// Each entry refutes when all its conditions hold (`a and b` in the YAML).
    refuted_by: Vec<Vec<Condition>>,
    high_when: Vec<Condition>,
    at_roof_when: Vec<Condition>,
    advice: Vec<(Vec<Condition>, AdviceSpec)>,
}

/// A limiter ranked before the verdict's that the collected metrics could not decide: the
/// cause may still be it. `stage` collects what it needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UncheckedLimiter {
    /// The limiter.
    pub id: String,
    /// The summary fields it needs that were not collected.
    pub missing: Vec<String>,
    /// The stage that collects them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
}

/// What a limiter found for one kernel, as `bottleneck_decision.json` records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimiterFinding {
    /// The limiter (`shared-bank-conflicts`).
    pub id: String,
    /// The advice's id (`pad-or-swizzle-shared`).
    pub advice_id: AdviceId,
    /// The advice, with the numbers filled in.
    pub advice: String,
    /// The estimated share of time or traffic the cause costs, percent, when computable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gain_pct: Option<f64>,
    /// The summary field `gain_pct` is read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gain_field: Option<String>,
    /// Fixing the cause could save up to this share of the kernel's time, percent, as the
    /// limiter's saving model predicts it; `None` (null) when it cannot be priced.
    #[serde(default)]
    pub predicted_saving_pct: Option<f64>,
    /// The model's terms with their values, when priced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saving_basis: Option<String>,
    /// Why the cause is not priced, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_priced: Option<String>,
    /// The unit is at its roof: nothing in the kernel is wrong; the advice is the lever left.
    #[serde(default)]
    pub at_roof: bool,
    /// The conditions that confirmed it (all held).
    pub requires: Vec<String>,
    /// The conditions that would have refuted it (none held).
    #[serde(default)]
    pub refuted_by: Vec<String>,
    /// Stall reasons that mark the source lines it points at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_stalls: Vec<String>,
    /// ncu rule names that name the same cause.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ncu_rules: Vec<String>,
    /// What ncu's own rules said, when a details page was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ncu: Option<NcuCheck>,
    /// The source lines where the limiter's stall reasons weigh most, when a source page
    /// was read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<LimiterLine>,
}

impl LimiterFinding {
    /// The predicted saving in words: "Fixing it could save up to X % of the kernel's
    /// time (basis)." or "Predicted saving: not priced: why."
    pub fn saving_text(&self) -> String {
        match (self.predicted_saving_pct, &self.not_priced) {
            (Some(p), _) => format!(
                "Fixing it could save up to {} % of the kernel's time ({}).",
                crate::units::value(p),
                self.saving_basis.as_deref().unwrap_or("the limiter's saving model")
            ),
            (None, Some(why)) => format!("Predicted saving: not priced: {why}."),
            (None, None) => {
                "Predicted saving: not priced: this verdict was written before causes were priced.".into()
            }
        }
    }

    /// ncu's own estimate for this cause, when a details page gave one: "ncu's own
    /// estimate (`Rule`): up to Y %."
    pub fn ncu_estimate_text(&self) -> Option<String> {
        let ncu = self.ncu.as_ref()?;
        let (rule, pct) = (ncu.agreeing_rule.as_ref()?, ncu.agreeing_speedup_pct?);
        Some(format!("ncu's own estimate ({rule}): up to {} %.", crate::units::value(pct)))
    }
}

/// What ncu's rules said about a kernel with a limiter (filled in by
/// the cross-check, `crosscheck.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NcuCheck {
    /// The limiter's ncu rules that fired (OPT or WRN) for this kernel.
    pub agreeing: Vec<String>,
    /// ncu's finding with the largest estimated speedup, and that speedup (percent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_rule: Option<String>,
    /// Its estimated speedup, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_speedup_pct: Option<f64>,
    /// Of the agreeing rules, the one with the largest estimated speedup: ncu's own
    /// estimate of what fixing this cause saves, beside the limiter's prediction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreeing_rule: Option<String>,
    /// Its estimated speedup, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreeing_speedup_pct: Option<f64>,
}

/// A source line whose stalls are the limiter's (found by the cross-check, `crosscheck.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimiterLine {
    /// The file.
    pub file: String,
    /// The line.
    pub line: u32,
    /// The source text.
    pub source: String,
    /// The line's share of the kernel's warp samples, percent.
    pub pct_of_kernel: f64,
    /// The limiter's stall reasons among the line's largest, `reason=samples`.
    pub stalls: String,
}

impl Limiter {
    pub(super) fn parse(spec: LimiterSpec) -> Result<Limiter, String> {
        let id = spec.id.clone();
        let conds = |list: &[String], what: &str| -> Result<Vec<Condition>, String> {
            list.iter()
                .map(|t| Condition::parse(t).map_err(|e| format!("limiter `{id}`, {what} `{t}`: {e}")))
                .collect()
        };
        let requires = conds(&spec.requires, "requires")?;
        if requires.is_empty() {
            return Err(format!("limiter `{id}` has no `requires` conditions"));
        }
        let refuted_by = spec
            .refuted_by
            .iter()
            .map(|t| {
                let parts: Vec<String> = t.split(" and ").map(str::to_string).collect();
                conds(&parts, "refuted_by")
            })
            .collect::<Result<Vec<_>, _>>()?;
        let high_when = conds(&spec.high_when, "high_when")?;
        let at_roof_when = conds(&spec.at_roof_when, "at_roof_when")?;
        for f in spec.evidence.iter().chain(spec.gain.iter()) {
            check_field(f).map_err(|m| format!("limiter `{id}`: {m}"))?;
        }
        if let Some(saving) = &spec.saving {
            saving.check().map_err(|m| format!("limiter `{id}`, saving: {m}"))?;
        }
        if spec.advice.is_empty() {
            return Err(format!("limiter `{id}` gives no advice"));
        }
        let mut advice = Vec::new();
        for a in &spec.advice {
            check_template(&a.text).map_err(|m| format!("limiter `{id}`, advice `{}`: {m}", a.id))?;
            advice.push((conds(&a.when, "advice when")?, a.clone()));
        }
        if !spec.advice.iter().any(|a| placeholders(&a.text).is_empty()) {
            return Err(format!(
                "limiter `{id}` has no advice without `{{field}}`s: add one, given when the numbers \
                 of the others were not collected"
            ));
        }
        Ok(Limiter { spec, requires, refuted_by, high_when, at_roof_when, advice })
    }

    /// What fixing this cause could save of the kernel's time.
    pub(super) fn saving(&self, s: &KernelSummary) -> Saving {
        SavingSpec::predict(self.spec.saving.as_ref(), s)
    }

    /// `Some(true)`: it names the cause (every `requires` holds, no `refuted_by` does);
    /// `Some(false)`: ruled out; `None`: a field it needs was not collected and nothing
    /// that was collected rules it out.
    pub(super) fn check(&self, s: &KernelSummary) -> Option<bool> {
        if self.refuted_by.iter().any(|group| all_hold(group, s) == Some(true)) {
            return Some(false);
        }
        all_hold(&self.requires, s)
    }

    /// The conditions of a named limiter that the summary contradicts.
    pub(super) fn contradictions(&self, s: &KernelSummary) -> Vec<String> {
        let id = &self.spec.id;
        let failed = self.requires.iter().filter(|c| c.eval(s) != Some(true));
        let refuting = self
            .refuted_by
            .iter()
            .filter(|g| all_hold(g, s) == Some(true))
            .map(|g| g.iter().map(|c| c.text.as_str()).collect::<Vec<_>>().join(" and "));
        failed
            .map(|c| format!("limiter `{id}`: `{}` does not hold", c.text))
            .chain(refuting.map(|t| format!("limiter `{id}`: refuted by `{t}`")))
            .collect()
    }

    /// The fields that make this limiter the answer when it is named (its `requires` and
    /// its saving model), or, when it is not, the fields of its `refuted_by` that hold and
    /// of its saving model: what a profile with more metrics could have changed it by.
    pub(super) fn deciding_fields(&self, s: &KernelSummary, named: bool) -> Vec<&str> {
        let saving = self.spec.saving.iter().flat_map(|m| m.fields());
        if named {
            return self.requires.iter().flat_map(|c| c.fields()).chain(saving).collect();
        }
        let refuting = self.refuted_by.iter().filter(|g| all_hold(g, s) == Some(true)).flatten();
        refuting.flat_map(|c| c.fields()).chain(saving).collect()
    }

    /// What an undecided limiter lacks, for the verdict to say what was not checked.
    pub(super) fn unchecked(&self, s: &KernelSummary) -> UncheckedLimiter {
        let mut missing: Vec<String> = Vec::new();
        add_missing(self.requires.iter().chain(self.refuted_by.iter().flatten()), s, &mut missing);
        UncheckedLimiter { id: self.spec.id.clone(), missing, stage: self.spec.follow_up_stage }
    }

    /// Writes the cause into `v`: class (unless `from-throughput`), confidence, the
    /// follow-up stage, its evidence, and its advice in place of the class hypotheses.
    pub(super) fn apply(&self, s: &KernelSummary, v: &mut KernelVerdict, saving: Saving) {
        let spec = &self.spec;
        if let LimiterClass::Fixed(class) = spec.class {
            v.classification = class;
        }
        v.confidence = if !self.high_when.is_empty() && all_hold(&self.high_when, s) == Some(true) {
            Confidence::High
        } else {
            Confidence::Medium
        };
        if let Some(stage) = spec.follow_up_stage {
            v.follow_up_stage = stage;
        }
        for c in &self.requires {
            for f in c.fields() {
                let Some(value) = s.get(f) else { continue };
                // A condition the class rule shares decided the limiter too: it is credited
                // to the limiter, which is the verdict's cause.
                match v.evidence.iter_mut().find(|e| e.field == f && e.threshold.as_str() == c.text) {
                    Some(e) => e.rule = spec.id.clone(),
                    None => {
                        push_evidence(&mut v.evidence, f, value, Threshold::Met(c.text.clone()), &spec.id)
                    }
                }
            }
        }
        // The fields it is priced from are evidence too: every number printed is one.
        let priced = matches!(saving, Saving::Priced { .. });
        let saving_fields = spec.saving.iter().flat_map(|m| m.fields()).filter(|_| priced);
        for f in spec.evidence.iter().map(String::as_str).chain(saving_fields) {
            if let Some(value) = s.get(f) {
                push_evidence(&mut v.evidence, f, value, Threshold::Supporting, &spec.id);
            }
        }
        let chosen = self.choose_advice(s);
        debug_assert!(chosen.is_some(), "limiter `{}`: no advice renders (the parser requires one)", spec.id);
        let (when, advice_id, text, mut cited) = match chosen {
            Some((when, advice, text)) => (when, advice.id.clone(), text, placeholders(&advice.text)),
            None => (&[][..], self.advice[self.advice.len() - 1].1.id.clone(), self.headline(), Vec::new()),
        };
        // Every number the advice prints is a row of evidence.
        for f in &cited {
            if let Some(value) = s.get(f) {
                push_evidence(&mut v.evidence, f, value, Threshold::Supporting, &spec.id);
            }
        }
        for c in self.requires.iter().chain(when) {
            for f in c.fields() {
                if !cited.iter().any(|x| x == f) {
                    cited.push(f.to_string());
                }
            }
        }
        // The cause's advice replaces the class's guesses: they may contradict it.
        v.hypotheses = vec![Hypothesis { text: text.clone(), evidence: cited }];
        v.missing.clear();
        v.limiter = Some(LimiterFinding {
            id: spec.id.clone(),
            advice_id,
            advice: text,
            gain_pct: spec.gain.as_deref().and_then(|g| s.get(g)),
            gain_field: spec.gain.clone(),
            predicted_saving_pct: saving.pct(),
            saving_basis: match &saving {
                Saving::Priced { basis, .. } => Some(basis.clone()),
                Saving::NotPriced(_) => None,
            },
            not_priced: match saving {
                Saving::NotPriced(why) => Some(why),
                Saving::Priced { .. } => None,
            },
            at_roof: !self.at_roof_when.is_empty() && all_hold(&self.at_roof_when, s) == Some(true),
            requires: self.requires.iter().map(|c| c.text.clone()).collect(),
            refuted_by: self.spec.refuted_by.clone(),
            source_stalls: spec.source_stalls.clone(),
            ncu_rules: spec.ncu_rules.clone(),
            ncu: None,
            lines: Vec::new(),
        });
    }
}

impl Limiter {
    /// The advice given: the first whose `when` holds and whose `{field}`s all fill in;
    /// else the last whose text has no `{field}` (what it says needs no number). `None`
    /// only for a limiter the parser would have refused.
    fn choose_advice(&self, s: &KernelSummary) -> Option<(&[Condition], &AdviceSpec, String)> {
        let held = self.advice.iter().find_map(|(when, a)| {
            if all_hold(when, s) != Some(true) {
                return None;
            }
            Some((when.as_slice(), a, fill(&a.text, s)?))
        });
        held.or_else(|| {
            self.advice
                .iter()
                .rev()
                .find(|(_, a)| placeholders(&a.text).is_empty())
                .map(|(_, a)| (&[][..], a, a.text.clone()))
        })
    }

    /// The limiter's plain headline, without numbers: what is printed if no advice can be
    /// (a defect: the parser requires an advice without `{field}`s).
    fn headline(&self) -> String {
        let id = &self.spec.id;
        format!("The cause is `{id}`: `cargo kprof explain {id}` says what to do about it.")
    }
}

impl Limiter {
    /// What `cargo kprof explain ID` prints: the limiter as the rules file defines it.
    pub(super) fn describe(&self, source: &str) -> String {
        let spec = &self.spec;
        let class = match spec.class {
            LimiterClass::Fixed(c) => c.name().to_string(),
            LimiterClass::Other(_) => "the class the throughputs give".to_string(),
        };
        let list = |l: &[String]| if l.is_empty() { "none".to_string() } else { l.join(", ") };
        let mut fields: Vec<(String, String)> = vec![
            ("Class".into(), class),
            ("Named when all hold".into(), list(&spec.requires)),
            ("Ruled out when any holds".into(), list(&spec.refuted_by)),
            ("High confidence when".into(), list(&spec.high_when)),
        ];
        if !spec.at_roof_when.is_empty() {
            fields.push(("At the unit's roof when".into(), list(&spec.at_roof_when)));
        }
        if let Some(stage) = spec.follow_up_stage {
            fields.push(("Checked by the stage".into(), stage.name().to_string()));
        }
        if let Some(g) = &spec.gain {
            fields.push(("What it wastes".into(), g.clone()));
        }
        fields.push(("Predicted saving".into(), saving_model(spec.saving.as_ref())));
        // The advice list is a fallback chain (the first whose numbers a kernel has is
        // printed): each text once, its numbers as N.
        let mut shown: Vec<String> = Vec::new();
        for a in &spec.advice {
            let text =
                placeholders(&a.text).iter().fold(a.text.clone(), |t, p| t.replace(&format!("{{{p}}}"), "N"));
            if shown.contains(&text) {
                continue;
            }
            let when =
                if a.when.is_empty() { String::new() } else { format!(" (when {})", a.when.join(", ")) };
            fields.push((format!("Advice `{}`{when}", a.id), text.clone()));
            shown.push(text);
        }
        if !spec.source_stalls.is_empty() {
            fields.push(("Stall reasons that mark its lines".into(), spec.source_stalls.join(", ")));
        }
        if !spec.ncu_rules.is_empty() {
            fields.push(("ncu rules that name the same cause".into(), spec.ncu_rules.join(", ")));
        }
        let mut out = format!("{} (limiter)\n", spec.id);
        for (k, v) in fields {
            crate::references::explain::wrap_field(&mut out, &k, &v);
        }
        out.push_str(&format!("Source: {source}; in a report each N is the kernel's own value.\n"));
        out
    }
}

/// The saving model in words, for `explain`.
fn saving_model(spec: Option<&SavingSpec>) -> String {
    match spec.map(SavingSpec::formula) {
        Some(f) => f,
        None => "not priced: the rules give this cause no saving model".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A limiter on `uncoalesced_excess_pct`, with a numbered advice and a plain one.
    fn limiter() -> Limiter {
        let spec: LimiterSpec = serde_yaml::from_str(
            "id: scattered\nclass: memory-bound\nrequires: [uncoalesced_excess_pct >= 40]\nadvice:\n  \
             - id: numbered\n    when: [global_load_bytes_per_sector < 8]\n    \
             text: \"Loads use {global_load_bytes_per_sector} of 32 bytes.\"\n  \
             - id: plain\n    text: \"Loads are scattered.\"\n",
        )
        .unwrap();
        Limiter::parse(spec).unwrap()
    }

    fn kernel(fields: &[(&str, f64)]) -> KernelSummary {
        KernelSummary::synthetic(fields)
    }

    #[test]
    fn the_first_advice_that_holds_and_fills_is_given_else_the_plain_one() {
        let l = limiter();
        let s = kernel(&[("uncoalesced_excess_pct", 80.0), ("global_load_bytes_per_sector", 4.0)]);
        let (_, a, text) = l.choose_advice(&s).unwrap();
        assert_eq!((a.id.as_str(), text.as_str()), ("numbered", "Loads use 4 of 32 bytes."));
        // Its condition does not hold, or its field was not collected: the plain advice.
        for s in [kernel(&[("global_load_bytes_per_sector", 16.0)]), kernel(&[])] {
            let (_, a, text) = l.choose_advice(&s).unwrap();
            assert_eq!((a.id.as_str(), text.as_str()), ("plain", "Loads are scattered."));
        }
    }

    #[test]
    fn a_limiter_without_a_plain_advice_is_refused() {
        let mut spec = limiter().spec;
        spec.advice.pop();
        let err = Limiter::parse(spec).unwrap_err();
        assert!(err.contains("limiter `scattered` has no advice without `{field}`s"), "{err}");
        let mut spec = limiter().spec;
        spec.advice[1].text = "Loads are {scattered.".into();
        let err = Limiter::parse(spec).unwrap_err();
        assert!(err.contains("advice `plain`"), "{err}");
    }

    /// A limiter the parser would refuse, built by hand: its only advice needs a number.
    fn unrenderable() -> Limiter {
        let mut l = limiter();
        l.advice.pop();
        l
    }

    #[test]
    fn when_nothing_renders_the_plain_headline_has_no_template() {
        let l = unrenderable();
        assert!(l.choose_advice(&kernel(&[])).is_none());
        let headline = l.headline();
        assert!(headline.contains("`scattered`") && !headline.contains(['{', '}']), "{headline}");
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "no advice renders")]
    fn nothing_rendering_is_a_defect_in_debug_builds() {
        let mut v = super::super::Rules::builtin().decide(&kernel(&[]));
        unrenderable().apply(
            &kernel(&[("uncoalesced_excess_pct", 80.0)]),
            &mut v,
            Saving::NotPriced("x".into()),
        );
    }

    #[test]
    #[cfg(not(debug_assertions))]
    fn nothing_rendering_prints_the_headline_in_release_builds() {
        let mut v = super::super::Rules::builtin().decide(&kernel(&[]));
        unrenderable().apply(
            &kernel(&[("uncoalesced_excess_pct", 80.0)]),
            &mut v,
            Saving::NotPriced("x".into()),
        );
        let l = v.limiter.unwrap();
        assert_eq!(l.advice, unrenderable().headline());
        assert_eq!(v.hypotheses[0].text, l.advice);
    }
}
