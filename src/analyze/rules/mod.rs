//! The bottleneck rules engine: YAML rules (data) evaluated over a kernel summary.
//!
//! Rules live in `rules/bottleneck.yaml` (built in) or a user's `--rules FILE`. A condition
//! is `field op number` or `field op field [+|- number]`, over the summary's fields (see
//! `cargo kprof explain`); a condition on a field that was not collected is undecided.
//!
//! Two layers, both data:
//! - **Class rules** (`rules:`) read the device-wide throughputs, per elapsed cycle: the
//!   first whose conditions all hold gives the class (memory-, compute-, latency-bound,
//!   occupancy-limited, balanced), the follow-up stage and fallback hypotheses.
//! - **Limiters** (`limiters:`) name the cause. Each has the conditions that confirm it
//!   (`requires`), the ones that rule it out (`refuted_by`), the ones that make it
//!   unambiguous (`high_when`), its class, the advice an expert gives (with variants), an
//!   estimated gain, a saving model (`saving.rs`) and the stall reasons that point at
//!   source lines. Of the limiters whose `requires` all hold and none of whose
//!   `refuted_by` holds, the first in file order names the cause unless a later one is
//!   predicted to save clearly more (the ranking); its class and advice replace the class
//!   rule's. A limiter or hypothesis that its own metrics refute is never reported.
//!
//! Every condition that decided a verdict becomes a row of evidence (metric, value, unit,
//! threshold, rule or limiter id); texts are filled in from the fields they cite, so each
//! one names its evidence. The engine knows no particular bottleneck: changing a verdict
//! means changing the data.
//!
//! The verdict's whole shape is declared in this module (`verdict.rs`, its rows of
//! evidence in `evidence.rs`), the cross-check's parts of a limiter ([`NcuCheck`],
//! [`LimiterLine`]) included: `analyze/crosscheck.rs` imports the rules to fill those in,
//! and nothing here imports it. The `{field}`s of the texts are checked and filled in
//! `template.rs`.

use serde::Deserialize;

use super::summary::{self, KernelSummary};
use crate::error::{ExitCode, Failure};
use crate::model::stage::Stage;
pub use crate::model::verdict::{Classification, Confidence};

mod condition;
mod evidence;
mod instruction;
mod limiter;
mod refine;
mod saving;
mod template;
mod verdict;

use condition::check_field;
pub(crate) use condition::Condition;
use evidence::push_evidence;
pub use evidence::{Evidence, Threshold};
pub use instruction::{CauseLine, InstructionCause, RuledOut};
pub use limiter::{AdviceId, LimiterFinding, LimiterLine, NcuCheck, UncheckedLimiter};
pub use refine::Refinement;
pub use saving::OtherCause;
use saving::Ranking;
use template::{check_template, fill, placeholders};
use verdict::unknown;
pub use verdict::{BottleneckDecision, Hypothesis, KernelVerdict, LibraryKernel};

/// The rules shipped with cargo-kprof.
pub const BUILTIN_RULES: &str = include_str!("../../../rules/bottleneck.yaml");
/// How the built-in rules are named in outputs.
pub const BUILTIN_NAME: &str = "rules/bottleneck.yaml (built in)";

/// A rules file as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    schema_version: u32,
    rules: Vec<RuleSpec>,
    #[serde(default)]
    limiters: Vec<limiter::LimiterSpec>,
    /// How the causes that hold are ranked by their predicted saving.
    #[serde(default)]
    ranking: Option<Ranking>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    id: String,
    classification: Classification,
    confidence: Confidence,
    /// With `confidence: high`, conditions that must also hold for `high`; else `medium`.
    #[serde(default)]
    high_when: Vec<String>,
    follow_up_stage: Stage,
    when: Vec<String>,
    #[serde(default)]
    evidence: Vec<String>,
    #[serde(default)]
    hypotheses: Vec<HypothesisSpec>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct HypothesisSpec {
    #[serde(default)]
    when: Vec<String>,
    /// Conditions any one of which makes the hypothesis false: it is then not offered.
    #[serde(default)]
    refuted_by: Vec<String>,
    text: String,
    /// Offered only when no other hypothesis of the rule holds.
    #[serde(default)]
    fallback: bool,
}

/// A validated rule set.
#[derive(Debug, Clone)]
pub struct Rules {
    source: String,
    rules: Vec<Rule>,
    limiters: Vec<limiter::Limiter>,
    ranking: Ranking,
}

#[derive(Debug, Clone)]
struct Rule {
    spec: RuleSpec,
    when: Vec<Condition>,
    high_when: Vec<Condition>,
    hypotheses: Vec<HypothesisRule>,
}

#[derive(Debug, Clone)]
struct HypothesisRule {
    when: Vec<Condition>,
    refuted_by: Vec<Condition>,
    text: String,
    fallback: bool,
}

/// `Some(true)` when every condition holds, `Some(false)` when one fails, `None` when one
/// reads a field that was not collected (and none fails).
fn all_hold(conds: &[Condition], s: &KernelSummary) -> Option<bool> {
    let mut undecided = false;
    for c in conds {
        match c.eval(s) {
            Some(false) => return Some(false),
            None => undecided = true,
            Some(true) => {}
        }
    }
    if undecided {
        None
    } else {
        Some(true)
    }
}

/// Adds to `missing`, once each, the fields `conds` read that were not collected.
fn add_missing<'c>(
    conds: impl IntoIterator<Item = &'c Condition>,
    s: &KernelSummary,
    missing: &mut Vec<String>,
) {
    for c in conds {
        for f in c.fields() {
            if s.get(f).is_none() && !missing.iter().any(|m| m == f) {
                missing.push(f.to_string());
            }
        }
    }
}

/// Whether any condition holds (an undecided one does not).
fn any_holds(conds: &[Condition], s: &KernelSummary) -> bool {
    conds.iter().any(|c| c.eval(s) == Some(true))
}

impl Rules {
    /// The built-in rules.
    pub fn builtin() -> Rules {
        // The shipped file is validated by a test; failing here is a build defect.
        Rules::parse(BUILTIN_RULES, BUILTIN_NAME)
            .unwrap_or_else(|e| panic!("built-in rules are invalid: {e}"))
    }

    /// Parses and validates a rules file; errors name the file, the rule and the condition.
    pub fn parse(text: &str, source: &str) -> Result<Rules, Failure> {
        let bad = |msg: String| {
            Failure::new(ExitCode::Config, format!("invalid rules file {source}: {msg}"))
                .help("see rules/bottleneck.yaml in the cargo-kprof repository for the format")
        };
        let file: RulesFile = serde_yaml::from_str(text).map_err(|e| bad(e.to_string()))?;
        if !(1..=2).contains(&file.schema_version) {
            return Err(bad(format!(
                "schema_version {} (this cargo-kprof reads 1 and 2)",
                file.schema_version
            )));
        }
        let mut rules = Vec::new();
        for spec in file.rules {
            let cond =
                |t: &String| Condition::parse(t).map_err(|e| bad(format!("rule `{}`, `{t}`: {e}", spec.id)));
            let when = spec.when.iter().map(cond).collect::<Result<Vec<_>, _>>()?;
            if when.is_empty() {
                return Err(bad(format!("rule `{}` has no conditions", spec.id)));
            }
            for e in &spec.evidence {
                check_field(e).map_err(|m| bad(format!("rule `{}`, evidence: {m}", spec.id)))?;
            }
            let high_when = spec.high_when.iter().map(cond).collect::<Result<Vec<_>, _>>()?;
            let mut hypotheses = Vec::new();
            for h in &spec.hypotheses {
                let conds = h.when.iter().map(cond).collect::<Result<Vec<_>, _>>()?;
                let refuted_by = h.refuted_by.iter().map(cond).collect::<Result<Vec<_>, _>>()?;
                check_template(&h.text).map_err(|m| bad(format!("rule `{}`, hypothesis: {m}", spec.id)))?;
                hypotheses.push(HypothesisRule {
                    when: conds,
                    refuted_by,
                    text: h.text.clone(),
                    fallback: h.fallback,
                });
            }
            rules.push(Rule { spec, when, high_when, hypotheses });
        }
        let mut limiters = Vec::new();
        for spec in file.limiters {
            if limiters.iter().any(|l: &limiter::Limiter| l.spec.id == spec.id) {
                return Err(bad(format!("limiter `{}` appears twice", spec.id)));
            }
            limiters.push(limiter::Limiter::parse(spec).map_err(bad)?);
        }
        let ranking = file.ranking.unwrap_or_default();
        Ok(Rules { source: source.to_string(), rules, limiters, ranking })
    }

    /// The limiter ids, in evaluation order.
    pub fn limiter_ids(&self) -> Vec<&str> {
        self.limiters.iter().map(|l| l.spec.id.as_str()).collect()
    }

    /// The explanation of one limiter (`cargo kprof explain ID`), if `id` names one.
    pub fn describe_limiter(&self, id: &str) -> Option<String> {
        self.limiters.iter().find(|l| l.spec.id == id).map(|l| l.describe(&self.source))
    }

    /// What in a printed verdict its own conditions contradict, as sentences; empty when
    /// nothing. The limiter's `requires` must all hold and none of its `refuted_by`; every
    /// hypothesis printed (its text, filled in) must come from a hypothesis of the verdict's
    /// rule whose `when` holds and whose `refuted_by` does not. The engine only prints what
    /// passes; this re-checks a verdict as written (CI runs it on every recording).
    pub fn contradictions(&self, s: &KernelSummary, v: &KernelVerdict) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(f) = &v.limiter {
            match self.limiters.iter().find(|l| l.spec.id == f.id) {
                None => out.push(format!("limiter `{}` is not in {}", f.id, self.source)),
                Some(l) => out.extend(l.contradictions(s)),
            }
            if v.hypotheses.len() != 1 || v.hypotheses[0].text != f.advice {
                out.push(format!("limiter `{}`: the printed advice is not the limiter's", f.id));
            }
            return out;
        }
        let Some(rule) = v.rule.as_ref().and_then(|id| self.rules.iter().find(|r| &r.spec.id == id)) else {
            return out;
        };
        for h in &v.hypotheses {
            let source =
                rule.hypotheses.iter().find(|r| fill(&r.text, s).as_deref() == Some(h.text.as_str()));
            match source {
                None => {
                    out.push(format!("rule `{}`: hypothesis not from the rule: {}", rule.spec.id, h.text))
                }
                Some(r) if all_hold(&r.when, s) != Some(true) => out.push(format!(
                    "rule `{}`: hypothesis printed although its `when` fails: {}",
                    rule.spec.id, h.text
                )),
                Some(r) if any_holds(&r.refuted_by, s) => out.push(format!(
                    "rule `{}`: hypothesis refuted by its own metrics: {}",
                    rule.spec.id, h.text
                )),
                Some(_) => {}
            }
        }
        out
    }

    /// Where these rules came from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The verdict for one kernel: of the limiters whose conditions hold, the one the
    /// ranking by predicted saving picks ([`Ranking::winner`]) names the cause; the others
    /// are listed with their savings.
    pub fn decide(&self, s: &KernelSummary) -> KernelVerdict {
        let mut verdict = self.decide_class(s);
        let mut held: Vec<(usize, saving::Saving)> = Vec::new();
        let mut undecided: Vec<(usize, UncheckedLimiter)> = Vec::new();
        for (i, l) in self.limiters.iter().enumerate() {
            match l.check(s) {
                Some(true) => held.push((i, l.saving(s))),
                Some(false) => {}
                None => undecided.push((i, l.unchecked(s))),
            }
        }
        let pcts: Vec<Option<f64>> = held.iter().map(|(_, sv)| sv.pct()).collect();
        let winner = self.ranking.winner(&pcts).map(|w| held.remove(w));
        let cut = winner.as_ref().map_or(usize::MAX, |(i, _)| *i);
        let unchecked: Vec<UncheckedLimiter> =
            undecided.into_iter().filter(|(i, _)| *i < cut).map(|(_, u)| u).collect();
        if let Some((i, sv)) = winner {
            let small = sv.pct().is_some_and(|p| p < self.ranking.high_needs_saving_pct);
            self.limiters[i].apply(s, &mut verdict, sv);
            // A cause that would save little is not a confident answer.
            if small && verdict.confidence == Confidence::High {
                verdict.confidence = Confidence::Medium;
            }
        }
        let mut others: Vec<OtherCause> = held
            .into_iter()
            .map(|(i, sv)| OtherCause {
                id: self.limiters[i].spec.id.clone(),
                predicted_saving_pct: sv.pct(),
                not_priced: match sv {
                    saving::Saving::NotPriced(why) => Some(why),
                    saving::Saving::Priced { .. } => None,
                },
            })
            .collect();
        others.sort_by(|a, b| {
            b.predicted_saving_pct.unwrap_or(-1.0).total_cmp(&a.predicted_saving_pct.unwrap_or(-1.0))
        });
        verdict.other_causes = others;
        if !unchecked.is_empty() {
            // A cause ranked higher was not checked: what was found may be its symptom.
            if verdict.confidence == Confidence::High {
                verdict.confidence = Confidence::Medium;
            }
            if let Some(f) = verdict.limiter.as_mut() {
                f.at_roof = false;
            }
        }
        verdict.unchecked = unchecked;
        verdict
    }

    /// The class rules alone: the first whose conditions all hold.
    fn decide_class(&self, s: &KernelSummary) -> KernelVerdict {
        let mut missing: Vec<String> = Vec::new();
        for rule in &self.rules {
            let results: Vec<Option<bool>> = rule.when.iter().map(|c| c.eval(s)).collect();
            add_missing(
                rule.when.iter().zip(&results).filter(|(_, r)| r.is_none()).map(|(c, _)| c),
                s,
                &mut missing,
            );
            if !results.iter().all(|r| *r == Some(true)) {
                continue;
            }
            let mut evidence: Vec<Evidence> = Vec::new();
            for c in &rule.when {
                for f in c.fields() {
                    if let Some(v) = s.get(f) {
                        push_evidence(&mut evidence, f, v, Threshold::Met(c.text.clone()), &rule.spec.id);
                    }
                }
            }
            for f in &rule.spec.evidence {
                if let Some(v) = s.get(f) {
                    push_evidence(&mut evidence, f, v, Threshold::Supporting, &rule.spec.id);
                }
            }
            let offered =
                |h: &&HypothesisRule| all_hold(&h.when, s) == Some(true) && !any_holds(&h.refuted_by, s);
            let specific =
                rule.hypotheses.iter().filter(offered).any(|h| !h.fallback && fill(&h.text, s).is_some());
            let hypotheses = rule
                .hypotheses
                .iter()
                .filter(offered)
                .filter(|h| !(h.fallback && specific))
                .filter_map(|h| {
                    let mut cited: Vec<String> = placeholders(&h.text);
                    for c in &h.when {
                        for f in c.fields() {
                            if !cited.iter().any(|x| x == f) {
                                cited.push(f.to_string());
                            }
                        }
                    }
                    Some(Hypothesis { text: fill(&h.text, s)?, evidence: cited })
                })
                .collect();
            let confidence = match rule.spec.confidence {
                Confidence::High if all_hold(&rule.high_when, s) != Some(true) => Confidence::Medium,
                c => c,
            };
            return KernelVerdict {
                classification: rule.spec.classification,
                confidence,
                rule: Some(rule.spec.id.clone()),
                evidence,
                follow_up_stage: rule.spec.follow_up_stage,
                hypotheses,
                ..unknown(s, Vec::new())
            };
        }
        unknown(s, missing)
    }
}

/// Verdicts for every kernel of a summary.
pub fn decide_all(rules: &Rules, summary: &summary::MetricsSummary) -> BottleneckDecision {
    BottleneckDecision {
        schema_version: 1,
        rules: rules.source().to_string(),
        kernels: summary
            .kernels
            .iter()
            .map(|k| {
                let mut v = rules.decide(k);
                v.refines = rules.refinement(k, &v);
                v
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(fields: &[(&str, f64)]) -> KernelSummary {
        KernelSummary::synthetic(fields)
    }

    #[test]
    fn builtin_rules_parse() {
        let r = Rules::builtin();
        assert!(r.rules.len() >= 5);
    }

    #[test]
    fn bad_rules_name_the_rule_and_condition() {
        let text = "schema_version: 1\nrules:\n  - id: r1\n    classification: memory-bound\n    confidence: high\n    follow_up_stage: memory\n    when: [dram_pct >= 60]\n";
        let err = Rules::parse(text, "my.yaml").unwrap_err().to_string();
        assert!(
            err.contains("my.yaml") && err.contains("rule `r1`") && err.contains("unknown field `dram_pct`"),
            "{err}"
        );
        let text = text.replace("dram_pct >= 60", "dram_throughput_pct => 60");
        let err = Rules::parse(&text, "my.yaml").unwrap_err().to_string();
        assert!(err.contains("unknown operator `=>`"), "{err}");
        let err = Rules::parse("schema_version: 1\nrules:\n  - id: x\n    colour: red\n", "f")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `colour`"), "{err}");
    }

    #[test]
    fn first_matching_rule_decides_with_evidence_and_filled_hypotheses() {
        let s = kernel(&[
            ("sm_throughput_pct", 6.8),
            ("memory_max_pct", 88.0),
            ("dram_throughput_pct", 83.0),
            ("unit_max_pct", 88.0),
            ("theoretical_occupancy_pct", 100.0),
            ("achieved_occupancy_pct", 98.7),
            ("waves_per_sm", 1.0),
        ]);
        let v = Rules::builtin().decide(&s);
        assert_eq!(v.classification, Classification::MemoryBound);
        assert_eq!(v.rule.as_deref(), Some("memory-bound"));
        assert_eq!(v.follow_up_stage, Stage::Memory);
        let e = v.evidence.iter().find(|e| e.field == "memory_max_pct").unwrap();
        assert_eq!(e.threshold, "memory_max_pct >= 60");
        let h =
            v.hypotheses.iter().find(|h| h.text.contains("DRAM runs at 83 %")).expect("the DRAM hypothesis");
        // Its placeholders, then its conditions' fields, each once.
        assert_eq!(h.evidence, ["dram_throughput_pct"]);
    }

    #[test]
    fn a_verdict_its_metrics_contradict_is_caught() {
        let s = kernel(&[
            ("sm_throughput_pct", 6.8),
            ("memory_max_pct", 88.0),
            ("dram_throughput_pct", 83.0),
            ("l2_throughput_pct", 85.0),
            ("unit_max_pct", 88.0),
            ("theoretical_occupancy_pct", 100.0),
            ("achieved_occupancy_pct", 98.7),
            ("waves_per_sm", 1.0),
            ("duration_ns", 500_000.0),
        ]);
        let rules = Rules::builtin();
        let v = rules.decide(&s);
        assert_eq!(v.limiter.as_ref().map(|l| l.id.as_str()), Some("dram-bandwidth"));
        assert!(rules.contradictions(&s, &v).is_empty(), "{:?}", rules.contradictions(&s, &v));
        let mut wrong = v.clone();
        wrong.limiter.as_mut().unwrap().id = "pipe-fma".into();
        let found = rules.contradictions(&s, &wrong);
        assert!(found.iter().any(|c| c.contains("`sm_throughput_pct >= 60` does not hold")), "{found:?}");
        let mut refuted = rules.decide_class(&s);
        refuted.hypotheses = vec![Hypothesis { text: "made up".into(), evidence: Vec::new() }];
        assert!(rules.contradictions(&s, &refuted)[0].contains("hypothesis not from the rule"));
        // A limiter prints its advice as its one hypothesis: another text, or a second
        // hypothesis beside it, is a contradiction.
        let mut advised = v.clone();
        advised.hypotheses[0].text = "other advice".into();
        let twice = {
            let mut t = v.clone();
            t.hypotheses.push(v.hypotheses[0].clone());
            t
        };
        for w in [advised, twice] {
            let found = rules.contradictions(&s, &w);
            assert!(found.iter().any(|c| c.contains("the printed advice is not the limiter's")), "{found:?}");
        }
        // A rule's hypothesis printed although its `when` fails: the L2 one needs DRAM
        // under 40 %, and this kernel's DRAM runs at 83 %.
        let rule = rules.rules.iter().find(|r| r.spec.id == "memory-bound").unwrap();
        let l2 = rule.hypotheses.iter().find(|h| h.text.starts_with("L2 runs at")).unwrap();
        let mut unheld = rules.decide_class(&s);
        unheld.hypotheses = vec![Hypothesis { text: fill(&l2.text, &s).unwrap(), evidence: Vec::new() }];
        let found = rules.contradictions(&s, &unheld);
        assert!(found.iter().any(|c| c.contains("printed although its `when` fails")), "{found:?}");
        // And one its `refuted_by` refutes: L1 re-reads, but with bank conflicts in most of
        // the shared-memory wavefronts.
        let conflicted = kernel(&[
            ("l1tex_throughput_pct", 90.0),
            ("dram_throughput_pct", 10.0),
            ("shared_conflict_pct", 60.0),
        ]);
        let l1 = rule.hypotheses.iter().find(|h| h.text.starts_with("L1/TEX runs at")).unwrap();
        let mut refuted = rules.decide_class(&s);
        refuted.hypotheses =
            vec![Hypothesis { text: fill(&l1.text, &conflicted).unwrap(), evidence: Vec::new() }];
        let found = rules.contradictions(&conflicted, &refuted);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("hypothesis refuted by its own metrics"), "{found:?}");
    }

    /// The class rules leave no gap: an SM at 58 % with memory at 32 % (an integer-bound
    /// kernel, `fixtures/h200/fix-loop/`) and every unit at 40-50 % are decided.
    #[test]
    fn a_moderately_busy_kernel_always_gets_a_class() {
        let quiet =
            [("theoretical_occupancy_pct", 100.0), ("achieved_occupancy_pct", 70.0), ("waves_per_sm", 1.0)];
        for (sm, memory, class) in [
            (57.7f64, 31.9, Classification::ComputeBound),
            (45.0, 38.0, Classification::Balanced),
            (38.0, 45.0, Classification::Balanced),
        ] {
            let fields: Vec<(&str, f64)> = quiet
                .iter()
                .copied()
                .chain([
                    ("sm_throughput_pct", sm),
                    ("memory_max_pct", memory),
                    ("unit_max_pct", sm.max(memory)),
                ])
                .collect();
            let v = Rules::builtin().decide(&kernel(&fields));
            assert_eq!(v.classification, class, "SM {sm} %, memory {memory} %: {v:?}");
            assert_eq!(v.undecided(), None);
        }
    }

    #[test]
    fn field_comparisons_with_offsets() {
        let c = Condition::parse("sm_throughput_pct >= memory_max_pct + 10").unwrap();
        assert_eq!(c.eval(&kernel(&[("sm_throughput_pct", 70.0), ("memory_max_pct", 60.0)])), Some(true));
        assert_eq!(c.eval(&kernel(&[("sm_throughput_pct", 69.0), ("memory_max_pct", 60.0)])), Some(false));
        assert_eq!(c.eval(&kernel(&[("sm_throughput_pct", 69.0)])), None);
    }
}
