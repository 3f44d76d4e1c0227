//! A limiter held against the other witnesses in the profile: ncu's own rules (a details
//! page) and the source lines whose stalls are the limiter's (a source page). Neither
//! changes the verdict; both are recorded beside it, so a report can say where ncu agrees,
//! where its largest finding names something else, and which lines to look at first.
//!
//! Imports run one way: this file fills in the [`NcuCheck`] and [`LimiterLine`] of a
//! [`super::rules::LimiterFinding`], whose shape the rules own (they are fields of the
//! verdict, serialized with it); the rules know nothing of this file.

use super::hotspots::{Hotspot, SourceKind};
use super::rules::BottleneckDecision;
pub use super::rules::{LimiterLine, NcuCheck};
use super::summary::stall_source_name;
use crate::ncu::parse::DetailsRow;

/// One rule result of ncu's details page.
#[derive(Debug, Clone, PartialEq)]
pub struct NcuFinding {
    /// The kernel, as the details page names it.
    pub kernel: String,
    /// The rule (`UncoalescedGlobalAccess`).
    pub rule: String,
    /// `OPT` (an optimisation opportunity), `WRN`, `INF`...
    pub kind: String,
    /// ncu's estimated speedup, percent.
    pub speedup: Option<f64>,
}

impl NcuFinding {
    /// The finding of one details row.
    pub fn from_row(r: &DetailsRow) -> NcuFinding {
        NcuFinding {
            kernel: r.kernel.clone(),
            rule: r.rule_name.clone(),
            kind: r.rule_type.clone(),
            speedup: r.speedup,
        }
    }

    /// Whether ncu reports something to act on (not only information).
    fn fired(&self) -> bool {
        matches!(self.kind.as_str(), "OPT" | "WRN")
    }
}

/// The name before the argument list: details and source pages may spell the arguments
/// differently from the raw page.
pub(super) fn base(name: &str) -> &str {
    name.split('(').next().unwrap_or(name).trim()
}

/// Fills each limiter's `ncu` and `lines` from the findings and hotspots there are.
pub fn cross_check(decision: &mut BottleneckDecision, findings: &[NcuFinding], hotspots: &[Hotspot]) {
    for v in &mut decision.kernels {
        let kernel = base(&v.kernel).to_string();
        let Some(limiter) = v.limiter.as_mut() else { continue };
        let mine: Vec<&NcuFinding> = findings.iter().filter(|f| base(&f.kernel) == kernel).collect();
        if !mine.is_empty() {
            let mut agreeing: Vec<String> = Vec::new();
            for f in mine.iter().filter(|f| f.fired() && limiter.ncu_rules.contains(&f.rule)) {
                if !agreeing.contains(&f.rule) {
                    agreeing.push(f.rule.clone());
                }
            }
            let largest = |keep: &dyn Fn(&NcuFinding) -> bool| {
                mine.iter()
                    .filter(|f| f.fired() && f.speedup.is_some_and(|s| s > 0.0) && keep(f))
                    .max_by(|a, b| a.speedup.unwrap_or(0.0).total_cmp(&b.speedup.unwrap_or(0.0)))
                    .copied()
            };
            let top = largest(&|_| true);
            let own = largest(&|f| limiter.ncu_rules.contains(&f.rule));
            limiter.ncu = Some(NcuCheck {
                agreeing,
                top_rule: top.map(|f| f.rule.clone()),
                top_speedup_pct: top.and_then(|f| f.speedup),
                agreeing_rule: own.map(|f| f.rule.clone()),
                agreeing_speedup_pct: own.and_then(|f| f.speedup),
            });
        }
        let wanted: Vec<&str> = limiter.source_stalls.iter().map(|r| stall_source_name(r)).collect();
        let mut lines: Vec<(f64, LimiterLine)> = hotspots
            .iter()
            // A line with under 1 % of the kernel's samples is not where the time goes.
            .filter(|h| h.kind == SourceKind::Cuda && base(&h.function) == kernel && h.pct_of_kernel >= 1.0)
            .filter_map(|h| {
                let hits: Vec<(String, f64)> =
                    h.stalls.iter().filter(|(r, _)| wanted.contains(&r.as_str())).cloned().collect();
                let weight: f64 = hits.iter().map(|(_, n)| n).sum();
                (weight > 0.0).then(|| {
                    let stalls = super::hotspots::stalls_text(&hits);
                    let line = LimiterLine {
                        file: h.file.clone(),
                        line: h.line,
                        source: h.source.clone(),
                        pct_of_kernel: h.pct_of_kernel,
                        stalls,
                    };
                    (weight, line)
                })
            })
            .collect();
        lines.sort_by(|a, b| b.0.total_cmp(&a.0));
        limiter.lines = lines.into_iter().take(3).map(|(_, l)| l).collect();
    }
}
