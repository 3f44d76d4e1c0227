//! One kernel's part of `report.html`: its verdict, cause, advice and predicted saving,
//! the evidence with each metric's meaning, its stall reasons and its roofline.

use crate::analyze::rules::{Evidence, KernelVerdict, LimiterFinding};
use crate::analyze::summary::{source_of, KernelSummary};
use crate::units::{duration, ratio, value};

use super::roofline::{roofline, Roofline};

/// One kernel, ready for the template.
#[derive(Debug, Clone)]
pub struct KernelView {
    /// The kernel's name as ncu printed it.
    pub name: String,
    /// The classification (`memory-bound`).
    pub class: String,
    /// The verdict in one sentence.
    pub verdict: String,
    /// The median duration and the launches it is the median of.
    pub duration: String,
    /// The cause a limiter named, if one did.
    pub cause: Option<CauseView>,
    /// Without a cause: the rule's hypotheses.
    pub hypotheses: Vec<String>,
    /// Causes read from the SASS of its hot lines, a sentence each.
    pub sass: Vec<String>,
    /// The causes that could not be checked, as a sentence (empty when none).
    pub unchecked: String,
    /// The follow-up stage and why, as a sentence.
    pub next: String,
    /// The evidence, the cause's own rows first.
    pub evidence: Vec<EvidenceRow>,
    /// The stall reasons, largest first.
    pub stalls: Vec<Bar>,
    /// The roofline.
    pub roofline: Roofline,
    /// For a closed library's kernel: which library, why, and what the user controls
    /// instead of its code (empty otherwise).
    pub library: String,
}

/// The cause a limiter named.
#[derive(Debug, Clone)]
pub struct CauseView {
    /// The limiter (`uncoalesced-global`).
    pub id: String,
    /// The anchor of its explanation.
    pub explain: String,
    /// The advice's id.
    pub advice_id: String,
    /// The advice, numbers filled in.
    pub advice: String,
    /// What it costs, and so what fixing it may save (empty when not computable).
    pub saving: String,
    /// The unit is at its roof: nothing is wrong, the advice is the lever left.
    pub at_roof: bool,
    /// What ncu's own rules said (empty without a details page).
    pub ncu: String,
    /// The stall reasons that mark its lines, joined.
    pub stall_reasons: String,
    /// The source lines where those stall reasons weigh most.
    pub lines: Vec<CauseLine>,
}

/// A source line a cause points at.
#[derive(Debug, Clone)]
pub struct CauseLine {
    /// `hgemm.cu:24`.
    pub location: String,
    /// Its share of the kernel's samples.
    pub pct: String,
    /// The code.
    pub code: String,
    /// Its stall reasons.
    pub stalls: String,
}

/// One evidence row.
#[derive(Debug, Clone)]
pub struct EvidenceRow {
    /// The ncu metric, or the summary field of a derived figure.
    pub metric: String,
    /// The anchor of its explanation.
    pub explain: String,
    /// The value.
    pub value: String,
    /// Its unit.
    pub unit: String,
    /// The condition it was tested in (`-` for a supporting metric).
    pub threshold: String,
    /// The rule or limiter it belongs to.
    pub rule: String,
    /// Whether it is the cause's own row.
    pub deciding: bool,
}

/// A labelled bar: a stall reason, a kernel's GPU time.
#[derive(Debug, Clone)]
pub struct Bar {
    /// What it is.
    pub label: String,
    /// Its value, as shown.
    pub value: String,
    /// Its length, percent of the longest.
    pub width: String,
}

/// One entry of the page's glossary: a metric or cause and what it means.
#[derive(Debug, Clone)]
pub struct ExplainEntry {
    /// Its anchor (`explain-3`).
    pub id: String,
    /// The metric or cause.
    pub name: String,
    /// What it means, as `cargo kprof explain` prints it.
    pub text: String,
}

/// The glossary of a page: each name once, in the order the page first links it.
#[derive(Debug, Default)]
pub struct Glossary {
    /// The entries.
    pub entries: Vec<ExplainEntry>,
}

impl Glossary {
    /// The anchor of `name`'s entry, added on first use. `field` is the summary field
    /// behind a metric, whose description stands in when `explain` does not know it.
    pub fn link(&mut self, name: &str, field: &str) -> String {
        if let Some(e) = self.entries.iter().find(|e| e.name == name) {
            return e.id.clone();
        }
        let text = match crate::references::explain::explain(name) {
            Ok(text) => text.trim_end().to_string(),
            Err(_) => match source_of(field) {
                s if s.is_empty() => format!("`{name}`: no entry in the metric map."),
                s => match s.strip_prefix("derived: ") {
                    Some(d) => format!("{name} (derived by kprof): {d}."),
                    None => format!("{name}: read from ncu's `{s}`."),
                },
            },
        };
        let id = format!("explain-{}", self.entries.len() + 1);
        self.entries.push(ExplainEntry { id: id.clone(), name: name.to_string(), text });
        id
    }
}

/// The view of kernel `v`, with its summary `s` when there is one.
pub fn kernel_view(v: &KernelVerdict, s: Option<&KernelSummary>, glossary: &mut Glossary) -> KernelView {
    let cause = v.limiter.as_ref().map(|l| cause_view(l, glossary));
    let verdict = match &v.limiter {
        Some(l) => {
            format!("{}, cause {} (confidence {}).", v.classification.name(), l.id, v.confidence.name())
        }
        None => format!(
            "{} (confidence {}); no limiter of the rules names a cause.",
            v.classification.name(),
            v.confidence.name()
        ),
    };
    let duration = s
        .and_then(|s| s.get("duration_ns").map(|d| (d, s.launches)))
        .map(|(d, n)| format!("{} (median of {n} launch{})", duration(d), if n == 1 { "" } else { "es" }))
        .unwrap_or_default();
    let max_stall = s.and_then(|s| s.top_stalls.first()).map_or(0.0, |t| t.warps_per_issue);
    let stalls = s
        .map(|s| {
            s.top_stalls
                .iter()
                .take(8)
                .filter(|t| t.warps_per_issue > 0.0)
                .map(|t| Bar {
                    label: t.reason.clone(),
                    value: format!("{} warps per issue", ratio(t.warps_per_issue)),
                    width: width(t.warps_per_issue, max_stall),
                })
                .collect()
        })
        .unwrap_or_default();
    KernelView {
        name: super::shown(&v.kernel),
        class: v.classification.name().to_string(),
        verdict,
        duration,
        cause,
        hypotheses: v
            .hypotheses
            .iter()
            .map(|h| format!("{} (evidence: {})", h.text, h.evidence.join(", ")))
            .collect(),
        sass: crate::analyze::sass::sentences(v),
        unchecked: unchecked(v),
        next: format!("Follow-up stage: {}.", v.follow_up_stage),
        evidence: evidence(v, glossary),
        stalls,
        roofline: s.map(roofline).unwrap_or_default(),
        library: v
            .library
            .as_ref()
            .map(|l| format!("A {} kernel, not your code ({}): {}.", l.library, l.recognised_by, l.advice))
            .unwrap_or_default(),
    }
}

/// `v` as a share of `max`, for a bar's width.
pub fn width(v: f64, max: f64) -> String {
    if max > 0.0 && v > 0.0 {
        format!("{:.1}", (100.0 * v / max).clamp(0.5, 100.0))
    } else {
        "0".into()
    }
}

fn cause_view(l: &LimiterFinding, glossary: &mut Glossary) -> CauseView {
    let mut saving = l.saving_text();
    if let Some(ncu) = l.ncu_estimate_text() {
        saving.push_str(&format!(" {ncu}"));
    }
    if let (Some(g), Some(field)) = (l.gain_pct, &l.gain_field) {
        let what = source_of(field);
        let what = what.strip_prefix("derived: ").unwrap_or(&what);
        let what = what.split(", percent").next().unwrap_or(what);
        saving.push_str(&format!(" What it wastes: {} % ({what}).", value(g)));
    }
    let ncu = l.ncu.as_ref().map(|n| {
        let top = match (&n.top_rule, n.top_speedup_pct) {
            (Some(r), Some(p)) => format!("; ncu's largest estimated speedup is {r} ({} %)", value(p)),
            _ => String::new(),
        };
        if n.agreeing.is_empty() {
            format!("None of ncu's rules that name this cause ({}) fired{top}.", l.ncu_rules.join(", "))
        } else {
            format!("ncu's rules agree: {} fired{top}.", n.agreeing.join(", "))
        }
    });
    CauseView {
        id: l.id.clone(),
        explain: glossary.link(&l.id, ""),
        advice_id: l.advice_id.to_string(),
        advice: l.advice.clone(),
        saving,
        at_roof: l.at_roof,
        ncu: ncu.unwrap_or_default(),
        stall_reasons: l.source_stalls.join(", "),
        lines: l
            .lines
            .iter()
            .map(|line| CauseLine {
                location: format!("{}:{}", line.file.rsplit('/').next().unwrap_or(&line.file), line.line),
                pct: format!("{} %", value(line.pct_of_kernel)),
                code: line.source.clone(),
                stalls: line.stalls.clone(),
            })
            .collect(),
    }
}

fn evidence(v: &KernelVerdict, glossary: &mut Glossary) -> Vec<EvidenceRow> {
    let by_limiter = |e: &&Evidence| v.limiter.as_ref().is_some_and(|l| e.rule == l.id);
    let rows = v.evidence.iter().filter(by_limiter).chain(v.evidence.iter().filter(|e| !by_limiter(e)));
    rows.map(|e| {
        let metric = if e.metric.starts_with("derived") { e.field.clone() } else { e.metric.clone() };
        EvidenceRow {
            explain: glossary.link(&metric, &e.field),
            metric,
            value: value(e.value),
            unit: e.unit.clone(),
            threshold: e.threshold.to_string(),
            rule: e.rule.clone(),
            deciding: by_limiter(&e),
        }
    })
    .collect()
}

fn unchecked(v: &KernelVerdict) -> String {
    if v.unchecked.is_empty() {
        return v.undecided().unwrap_or_default();
    }
    let mut stages: Vec<&str> = Vec::new();
    for s in v.unchecked.iter().filter_map(|u| u.stage) {
        if !stages.contains(&s.name()) {
            stages.push(s.name());
        }
    }
    let ids: Vec<&str> = v.unchecked.iter().map(|u| u.id.as_str()).collect();
    let what = if v.limiter.is_some() { "Ranked above this cause and not checked" } else { "Not checked" };
    let stages = if stages.is_empty() {
        String::new()
    } else {
        format!(" (the {} stage collects what they need)", stages.join(", "))
    };
    format!("{what}, because their metrics were not collected: {}{stages}.", ids.join(", "))
}
