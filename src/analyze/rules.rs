//! The bottleneck rules engine: YAML rules (data) evaluated over a kernel summary.
//!
//! Rules live in `rules/bottleneck.yaml` (built in) or a user's `--rules FILE`. A rule is
//! a list of conditions (`field op number` or `field op field [+|- number]`); the first
//! rule whose conditions all hold gives the verdict. Every condition that decided it
//! becomes a row of evidence (metric, value, unit, threshold, rule id), and hypotheses
//! are filled in from the fields they cite, so each one names its evidence. The engine
//! has no knowledge of any particular bottleneck: changing a verdict means changing the
//! data.

use serde::{Deserialize, Serialize};

use super::summary::{self, KernelSummary};
use crate::error::{ExitCode, Failure};
use crate::model::stage::Stage;
pub use crate::model::verdict::{Classification, Confidence};

/// The rules shipped with cargo-kprof.
pub const BUILTIN_RULES: &str = include_str!("../../rules/bottleneck.yaml");
/// How the built-in rules are named in outputs.
pub const BUILTIN_NAME: &str = "rules/bottleneck.yaml (built in)";

/// A rules file as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    schema_version: u32,
    rules: Vec<RuleSpec>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    id: String,
    classification: Classification,
    confidence: Confidence,
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
    text: String,
    /// Offered only when no other hypothesis of the rule holds.
    #[serde(default)]
    fallback: bool,
}

/// `op` of a condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

/// The right-hand side of a condition.
#[derive(Debug, Clone, PartialEq)]
enum Rhs {
    Number(f64),
    Field(String, f64),
}

/// One parsed condition.
#[derive(Debug, Clone, PartialEq)]
struct Condition {
    text: String,
    field: String,
    op: Op,
    rhs: Rhs,
}

impl Condition {
    fn parse(text: &str) -> Result<Condition, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let (field, op, rest) = match words.as_slice() {
            [field, op, rest @ ..] if !rest.is_empty() => (*field, *op, rest),
            _ => return Err("expected `field op value`, e.g. `dram_throughput_pct >= 60`".into()),
        };
        let op = match op {
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            other => return Err(format!("unknown operator `{other}` (use <, <=, > or >=)")),
        };
        check_field(field)?;
        let rhs = match rest {
            [n] => match n.parse::<f64>() {
                Ok(v) => Rhs::Number(v),
                Err(_) => {
                    check_field(n)?;
                    Rhs::Field(n.to_string(), 0.0)
                }
            },
            [other, sign @ ("+" | "-"), n] => {
                check_field(other)?;
                let v: f64 = n.parse().map_err(|_| format!("`{n}` is not a number"))?;
                Rhs::Field(other.to_string(), if *sign == "-" { -v } else { v })
            }
            _ => return Err("the right side must be a number, a field, or `field + number`".into()),
        };
        Ok(Condition { text: text.to_string(), field: field.to_string(), op, rhs })
    }

    /// `Some(true/false)`, or `None` when a field it reads was not collected.
    fn eval(&self, s: &KernelSummary) -> Option<bool> {
        let lhs = s.get(&self.field)?;
        let rhs = match &self.rhs {
            Rhs::Number(v) => *v,
            Rhs::Field(f, offset) => s.get(f)? + offset,
        };
        Some(match self.op {
            Op::Lt => lhs < rhs,
            Op::Le => lhs <= rhs,
            Op::Gt => lhs > rhs,
            Op::Ge => lhs >= rhs,
        })
    }

    fn fields(&self) -> Vec<&str> {
        let mut f = vec![self.field.as_str()];
        if let Rhs::Field(other, _) = &self.rhs {
            f.push(other);
        }
        f
    }
}

fn check_field(name: &str) -> Result<(), String> {
    if summary::field_names().contains(&name) {
        Ok(())
    } else {
        Err(format!("unknown field `{name}`; fields are: {}", summary::field_names().join(", ")))
    }
}

/// A validated rule set.
#[derive(Debug, Clone)]
pub struct Rules {
    source: String,
    rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
struct Rule {
    spec: RuleSpec,
    when: Vec<Condition>,
    hypotheses: Vec<(Vec<Condition>, String, bool)>,
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
        if file.schema_version != 1 {
            return Err(bad(format!("schema_version {} (this cargo-kprof reads 1)", file.schema_version)));
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
            let mut hypotheses = Vec::new();
            for h in &spec.hypotheses {
                let conds = h.when.iter().map(cond).collect::<Result<Vec<_>, _>>()?;
                for name in placeholders(&h.text) {
                    check_field(&name).map_err(|m| bad(format!("rule `{}`, hypothesis: {m}", spec.id)))?;
                }
                hypotheses.push((conds, h.text.clone(), h.fallback));
            }
            rules.push(Rule { spec, when, hypotheses });
        }
        Ok(Rules { source: source.to_string(), rules })
    }

    /// Where these rules came from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The verdict for one kernel.
    pub fn decide(&self, s: &KernelSummary) -> KernelVerdict {
        let mut missing: Vec<String> = Vec::new();
        for rule in &self.rules {
            let results: Vec<Option<bool>> = rule.when.iter().map(|c| c.eval(s)).collect();
            for (c, r) in rule.when.iter().zip(&results) {
                if r.is_none() {
                    for f in c.fields() {
                        if s.get(f).is_none() && !missing.iter().any(|m| m == f) {
                            missing.push(f.to_string());
                        }
                    }
                }
            }
            if !results.iter().all(|r| *r == Some(true)) {
                continue;
            }
            let mut evidence: Vec<Evidence> = Vec::new();
            for c in &rule.when {
                for f in c.fields() {
                    if let Some(v) = s.get(f) {
                        push_evidence(&mut evidence, f, v, &c.text, &rule.spec.id);
                    }
                }
            }
            for f in &rule.spec.evidence {
                if let Some(v) = s.get(f) {
                    push_evidence(&mut evidence, f, v, "-", &rule.spec.id);
                }
            }
            let holds = |conds: &Vec<Condition>| conds.iter().all(|c| c.eval(s) == Some(true));
            let specific =
                rule.hypotheses.iter().any(|(c, t, fallback)| !fallback && holds(c) && fill(t, s).is_some());
            let hypotheses = rule
                .hypotheses
                .iter()
                .filter(|(conds, _, fallback)| holds(conds) && !(*fallback && specific))
                .filter_map(|(conds, text, _)| {
                    let mut cited: Vec<String> = placeholders(text);
                    for c in conds {
                        for f in c.fields() {
                            if !cited.iter().any(|x| x == f) {
                                cited.push(f.to_string());
                            }
                        }
                    }
                    Some(Hypothesis { text: fill(text, s)?, evidence: cited })
                })
                .collect();
            return KernelVerdict {
                kernel: s.kernel.clone(),
                classification: rule.spec.classification,
                confidence: rule.spec.confidence,
                rule: Some(rule.spec.id.clone()),
                evidence,
                follow_up_stage: rule.spec.follow_up_stage,
                hypotheses,
                missing: Vec::new(),
            };
        }
        KernelVerdict {
            kernel: s.kernel.clone(),
            classification: Classification::Unknown,
            confidence: Confidence::Low,
            rule: None,
            evidence: Vec::new(),
            follow_up_stage: Stage::SpeedOfLight,
            hypotheses: Vec::new(),
            missing,
        }
    }
}

fn push_evidence(out: &mut Vec<Evidence>, field: &str, value: f64, threshold: &str, rule: &str) {
    if out.iter().any(|e| e.field == field && (e.threshold == threshold || threshold == "-")) {
        return;
    }
    out.push(Evidence {
        metric: summary::source_of(field),
        field: field.to_string(),
        value,
        unit: summary::unit_of(field).to_string(),
        threshold: threshold.to_string(),
        rule: rule.to_string(),
    });
}

/// The `{field}` names in a template.
fn placeholders(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        let Some(len) = rest[start..].find('}') else { break };
        out.push(rest[start + 1..start + len].to_string());
        rest = &rest[start + len + 1..];
    }
    out
}

/// Fills `{field}` with values; `None` when a cited field was not collected.
fn fill(text: &str, s: &KernelSummary) -> Option<String> {
    let mut out = text.to_string();
    for name in placeholders(text) {
        let v = s.get(&name)?;
        out = out.replace(&format!("{{{name}}}"), &crate::units::value(v));
    }
    Some(out)
}

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
    /// The condition it met (`-` for supporting evidence).
    pub threshold: String,
    /// The rule.
    pub rule: String,
}

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

/// Verdicts for every kernel of a summary.
pub fn decide_all(rules: &Rules, summary: &summary::MetricsSummary) -> BottleneckDecision {
    BottleneckDecision {
        schema_version: 1,
        rules: rules.source().to_string(),
        kernels: summary.kernels.iter().map(|k| rules.decide(k)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn kernel(fields: &[(&str, f64)]) -> KernelSummary {
        let mut map: BTreeMap<String, Option<f64>> = BTreeMap::new();
        for (k, v) in fields {
            map.insert(k.to_string(), Some(*v));
        }
        KernelSummary { kernel: "k".into(), launches: 1, fields: map, top_stalls: Vec::new() }
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
        assert!(v.hypotheses.iter().any(|h| h.text.contains("DRAM runs at 83 %")), "{:?}", v.hypotheses);
    }

    #[test]
    fn missing_metrics_give_unknown_and_say_which() {
        let v = Rules::builtin().decide(&kernel(&[("sm_throughput_pct", 50.0)]));
        assert_eq!(v.classification, Classification::Unknown);
        assert!(v.missing.contains(&"theoretical_occupancy_pct".to_string()), "{:?}", v.missing);
    }

    #[test]
    fn field_comparisons_with_offsets() {
        let c = Condition::parse("sm_throughput_pct >= memory_max_pct + 10").unwrap();
        assert_eq!(c.eval(&kernel(&[("sm_throughput_pct", 70.0), ("memory_max_pct", 60.0)])), Some(true));
        assert_eq!(c.eval(&kernel(&[("sm_throughput_pct", 69.0), ("memory_max_pct", 60.0)])), Some(false));
        assert_eq!(c.eval(&kernel(&[("sm_throughput_pct", 69.0)])), None);
    }
}
