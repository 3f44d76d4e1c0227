//! `final_report.md`: the summary, verdict, evidence and hotspots rendered into a template.
//!
//! The template is a Markdown file with `{{name}}` placeholders (`templates/final_report.md`
//! is built in; `--template FILE` replaces it). This module only formats: it receives
//! everything already computed and never reads files or runs processes, so a report can
//! be re-rendered from a profile directory at any time.

use super::md;
use crate::analyze::coverage::stage_is_here;
use crate::analyze::hotspots::{Hotspot, SourceKind};
use crate::analyze::rules::{Evidence, KernelVerdict, LimiterFinding};
use crate::analyze::summary::KernelSummary;
use crate::analyze::Analysis;
use crate::model::stage::Stage;
use crate::units::{duration, value as format_value};

/// The built-in template.
pub const BUILTIN_TEMPLATE: &str = include_str!("../../templates/final_report.md");

/// Renders the report.
pub fn render(template: &str, analysis: &Analysis) -> String {
    let (summary, decision) = (&analysis.summary, &analysis.decision);
    let hotspots = analysis.hotspots.as_slice();
    let sass_only =
        !hotspots.is_empty() && hotspots.iter().all(|h| h.kind == SourceKind::Sass && h.line == 0);
    let sections = Sections {
        verdict_line: decision.kernels.iter().map(verdict_line).collect::<Vec<_>>().join("\n"),
        verdicts: decision
            .kernels
            .iter()
            .map(|v| kernel_section(v, summary.kernels.iter().find(|k| k.kernel == v.kernel)))
            .collect(),
        hotspots: hotspots_section(hotspots, sass_only) + &summed_launches(&analysis.source_launches),
        limitations: limitations(analysis, sass_only),
        next_actions: next_actions(analysis),
    };
    // One pass: a value (a kernel's name) is never scanned for placeholders again.
    let out = crate::shell::fill_template(template, &placeholders(analysis, sections));
    // Names come from CSVs and manifests: no control character reaches the file.
    md::document(&out)
}

/// The parts of the report written from the analysis, before they fill the template.
struct Sections {
    verdict_line: String,
    verdicts: String,
    hotspots: String,
    limitations: Vec<String>,
    next_actions: Vec<String>,
}

/// Every `{{name}}` of the template and its text.
fn placeholders(analysis: &Analysis, sections: Sections) -> Vec<(&'static str, String)> {
    let (ctx, summary) = (&analysis.provenance, &analysis.summary);
    vec![
        ("title", md::text(&ctx.title)),
        ("verdict_line", sections.verdict_line),
        ("target_summary", ctx.target_summary.clone()),
        // Table cells: a `|` in a regex filter or a device name must not add a column.
        ("kernel_filter", md::cell(&ctx.kernel_filter)),
        ("profiler_version", md::cell(ctx.profiler_version.as_deref().unwrap_or("not recorded"))),
        ("device", md::cell(summary.device.as_deref().unwrap_or("not recorded"))),
        ("privilege_mode", md::cell(&ctx.privilege_mode)),
        ("clock_control", md::cell(ctx.clock_control.as_deref().unwrap_or("not recorded"))),
        ("verdicts", sections.verdicts.trim_end().to_string()),
        ("hotspots", sections.hotspots.trim_end().to_string()),
        ("collected", list(&ctx.collected)),
        (
            "device_limits",
            if analysis.device_limits.is_empty() {
                "The device is not in gpu_specs.yaml; see Limitations.".to_string()
            } else {
                list(&analysis.device_limits)
            },
        ),
        (
            "ncu_rules",
            if ctx.ncu_rules.is_empty() {
                "No details page was collected.".to_string()
            } else {
                format!(
                    "ncu's estimated speedups are upper bounds, not predictions.\n\n{}",
                    list(&ctx.ncu_rules)
                )
            },
        ),
        ("limitations", list(&sections.limitations)),
        ("next_actions", list(&sections.next_actions)),
        ("commands", ctx.commands.trim_end().to_string()),
    ]
}

/// A Markdown list, or `None.`.
fn list(items: &[String]) -> String {
    if items.is_empty() {
        "None.".to_string()
    } else {
        items
            .iter()
            .map(|i| {
                // An item names values from the data (a kernel's name): bounded as they are.
                let mut i = format!("- {i}");
                md::shorten(&mut i);
                i
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// One kernel's `###` section: its duration, cause or classification, what was not
/// checked, the evidence, and its top stall reasons.
fn kernel_section(v: &KernelVerdict, s: Option<&KernelSummary>) -> String {
    let mut out = format!("### {}\n\n", md::code(&v.kernel));
    if let Some(d) = s.and_then(|s| s.get("duration_ns")) {
        out.push_str(&format!(
            "Duration {} over {} launch(es) (median).\n\n",
            duration(d),
            s.map(|s| s.launches).unwrap_or(0)
        ));
    }
    if let Some(lib) = &v.library {
        out.push_str(&format!(
            "**A {} kernel, not your code** ({}): {}.\n\n",
            lib.library, lib.recognised_by, lib.advice
        ));
    }
    match &v.limiter {
        Some(l) => out.push_str(&cause(v, l)),
        None => out.push_str(&classification(v)),
    }
    let sass = crate::analyze::sass::sentences(v);
    if !sass.is_empty() {
        out.push_str("Seen in the SASS of its hot lines:\n\n");
        for s in sass {
            out.push_str(&format!("- {s}\n"));
        }
        out.push('\n');
    }
    if let Some(why) = v.undecided() {
        out.push_str(&format!("{why}\n\n"));
    }
    if !v.unchecked.is_empty() {
        out.push_str(&unchecked(v));
    }
    if !v.other_causes.is_empty() {
        out.push_str(&other_causes(v));
    }
    if let Some(r) = &v.refines {
        out.push_str(&format!("More evidence changed the answer: {}\n\n", r.text));
    }
    if !v.evidence.is_empty() {
        out.push_str(&evidence_table(v));
    }
    if let Some(s) = s {
        if !s.top_stalls.is_empty() {
            let top: Vec<String> = s
                .top_stalls
                .iter()
                .take(3)
                .map(|t| format!("{} ({} warps per issue)", t.reason, format_value(t.warps_per_issue)))
                .collect();
            out.push_str(&format!("Top stall reasons: {}.\n\n", top.join(", ")));
        }
    }
    out
}

/// Without a cause: the classification, and the rule's hypotheses.
fn classification(v: &KernelVerdict) -> String {
    let mut out = format!(
        "Classification: **{}**, confidence {}{}. No limiter of the rules names a cause.\n\n",
        v.classification.name(),
        v.confidence.name(),
        v.rule.as_ref().map(|r| format!(", by rule `{r}`")).unwrap_or_default()
    );
    if !v.hypotheses.is_empty() {
        out.push_str("Optimisation hypotheses:\n\n");
        for h in &v.hypotheses {
            out.push_str(&format!("- {} (evidence: {})\n", h.text, h.evidence.join(", ")));
        }
        out.push('\n');
    }
    out
}

/// The evidence rows: the cause's own first, then the supporting metrics.
fn evidence_table(v: &KernelVerdict) -> String {
    let mut out = String::from("Evidence (the deciding conditions, then supporting metrics):\n\n");
    out.push_str("| metric | value | unit | threshold | rule |\n|---|---|---|---|---|\n");
    let by_limiter = |e: &&Evidence| v.limiter.as_ref().is_some_and(|l| e.rule == l.id);
    let rows = v.evidence.iter().filter(by_limiter).chain(v.evidence.iter().filter(|e| !by_limiter(e)));
    for e in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            md::cell_code(if e.metric.starts_with("derived") { &e.field } else { &e.metric }),
            format_value(e.value),
            md::cell(&e.unit),
            md::cell_code(&e.threshold.to_string()),
            md::cell(&e.rule)
        ));
    }
    out.push('\n');
    out
}

/// The hottest source lines, or SASS instructions without line info, or why there are
/// none.
/// Says which kernels' hot lines sum several launches (empty when none do).
fn summed_launches(launches: &[(String, usize)]) -> String {
    if launches.is_empty() {
        return String::new();
    }
    let each: Vec<String> = launches.iter().map(|(k, n)| format!("{} ({n} launches)", md::code(k))).collect();
    format!(
        "\nEach line's samples are summed over the profiled launches of its kernel: {}.\n",
        each.join(", ")
    )
}

fn hotspots_section(hotspots: &[Hotspot], sass_only: bool) -> String {
    if hotspots.is_empty() {
        "No source page was collected: the `source` stage maps samples to lines (`--stages auto` \
         collects it; a `--stages` list needs `source` in it)."
            .to_string()
    } else if sass_only {
        let mut t = String::from(
            "No line info: the hottest SASS instructions instead.\n\n| % samples | address | instruction | top stalls |\n|---|---|---|---|\n",
        );
        for h in hotspots.iter().take(8) {
            t.push_str(&format!(
                "| {} | {} | `{}` | {} |\n",
                format_value(h.pct_of_kernel),
                md::cell(&h.address),
                md::cell(&h.source).replace('`', "'"),
                md::cell(&h.top_stalls)
            ));
        }
        t
    } else {
        let mut t = String::from("| % samples | file:line | source | top stalls |\n|---|---|---|---|\n");
        for h in hotspots.iter().filter(|h| h.kind == SourceKind::Cuda).take(8) {
            let file = h.file.rsplit('/').next().unwrap_or(&h.file);
            t.push_str(&format!(
                "| {} | {}:{} | `{}` | {} |\n",
                format_value(h.pct_of_kernel),
                md::cell(file),
                h.line,
                md::cell(&h.source).replace('`', "'"),
                md::cell(&h.top_stalls)
            ));
        }
        t
    }
}

/// What the analysis says it could not see, then what the inputs lack: source, line
/// info, clock control, and each kernel's memory stage and stall reasons.
fn limitations(analysis: &Analysis, sass_only: bool) -> Vec<String> {
    let (ctx, hotspots) = (&analysis.provenance, &analysis.hotspots);
    let mut limitations: Vec<String> = analysis.limitations.clone();
    if !ctx.source_collected {
        limitations.push("No source page: hotspots are not available.".into());
    } else if sass_only && analysis.decision.kernels.iter().all(|v| v.library.is_some()) {
        limitations.push(
            "The kernel is a closed library's, shipped without line info: hotspots are SASS instructions, \
             and there is nothing to rebuild."
                .into(),
        );
    } else if sass_only {
        limitations.push(format!(
            "The kernel has no line info, so hotspots are SASS instructions, not source lines; to see lines, {}.",
            crate::analyze::hotspots::LINE_INFO_ADVICE
        ));
    } else if hotspots
        .iter()
        .filter(|h| h.kind == SourceKind::Cuda)
        .all(|h| h.source.contains("Unable to open"))
    {
        limitations.push(
            "Source text could not be read: build with line info and keep the sources at their paths.".into(),
        );
    }
    limitations.extend(crate::analyze::hotspots::generated_source_note(hotspots));
    match ctx.clock_control.as_deref() {
        Some("none") => limitations.push(
            "Clocks were not locked (`--clock-control none`): durations follow the GPU's boost clock; compare runs on the same machine.".into(),
        ),
        Some(_) => {}
        None => limitations.push("Clock control is not known for these inputs.".into()),
    }
    for v in &analysis.decision.kernels {
        if let Some(s) = analysis.summary.kernels.iter().find(|k| k.kernel == v.kernel) {
            if s.get("dram_read_bytes").is_none() {
                limitations.push(format!(
                    "{}: the memory stage was not collected (bytes, hit rates, coalescing unknown).",
                    md::code(&v.kernel)
                ));
            }
            if s.top_stalls.is_empty() {
                limitations.push(format!("{}: stall reasons were not collected.", md::code(&v.kernel)));
            }
        }
    }
    limitations
}

/// Per kernel, its follow-up stage (or, when its metrics are here, to act on the advice),
/// then the source stage when it is missing: each as the command that collects it, for
/// the configured entry (or the pages to export, for an import).
fn next_actions(analysis: &Analysis) -> Vec<String> {
    let ctx = &analysis.provenance;
    let mut next: Vec<String> = Vec::new();
    for v in &analysis.decision.kernels {
        let stage = v.follow_up_stage;
        let summary = analysis.summary.kernels.iter().find(|k| k.kernel == v.kernel);
        let here = summary.is_some_and(|k| stage_is_here(stage, &ctx.stages_collected, k));
        next.push(match (here, &ctx.selection) {
            (true, _) => format!(
                "{}: the `{stage}` stage's metrics are here; act on the {}, then profile again and compare.",
                md::code(&v.kernel),
                if v.limiter.is_some() { "advice" } else { "hypotheses" }
            ),
            (false, Some(selection)) => format!(
                "{}: the `{stage}` stage ({}).",
                md::code(&v.kernel),
                md::code(&format!("{selection} --stages {}", stages_with(stage)))
            ),
            (false, None) => format!(
                "{}: the `{stage}` stage's metrics are not in these pages: export them too (`ncu --set full`) \
                 and import again.",
                md::code(&v.kernel)
            ),
        });
    }
    if !ctx.source_collected {
        next.push(match &ctx.selection {
            Some(selection) => format!(
                "The `source` stage, to see which lines the time goes to (`{selection} --stages {}`).",
                stages_with(Stage::Source)
            ),
            None => {
                "A source page, to see which lines the time goes to: `ncu --csv --page source --print-source \
                     cuda,sass --section SourceCounters ...`, imported with `--source FILE`."
                    .into()
            }
        });
    }
    next
}

/// `basic,source` and `stage`: what a run that adds `stage` collects.
fn stages_with(stage: Stage) -> String {
    let mut stages = vec![Stage::Basic, Stage::Source, stage];
    stages.sort();
    stages.dedup();
    stages.iter().map(|s| s.name()).collect::<Vec<_>>().join(",")
}

/// The one-line verdict at the top of the report.
fn verdict_line(v: &KernelVerdict) -> String {
    match &v.limiter {
        Some(l) => format!(
            "**{}**: {}, cause `{}` (confidence {}, {}); advice `{}`.",
            md::code(&v.kernel),
            v.classification.name(),
            l.id,
            v.confidence.name(),
            match l.predicted_saving_pct {
                Some(p) => format!("fixing it could save up to {} %", format_value(p)),
                None => "saving not priced".into(),
            },
            l.advice_id
        ),
        None => {
            format!(
                "**{}**: {} (confidence {}).",
                md::code(&v.kernel),
                v.classification.name(),
                v.confidence.name()
            )
        }
    }
}

/// The cause, its advice, where it shows in the source and what ncu's rules say.
fn cause(v: &KernelVerdict, l: &LimiterFinding) -> String {
    let mut out = format!(
        "**Cause: `{}`**. Classification **{}**, confidence {}.",
        l.id,
        v.classification.name(),
        v.confidence.name()
    );
    out.push_str(&format!(" {}", l.saving_text()));
    if let Some(ncu) = l.ncu_estimate_text() {
        out.push_str(&format!(" {ncu}"));
    }
    if let (Some(g), Some(field)) = (l.gain_pct, &l.gain_field) {
        let what = crate::analyze::summary::source_of(field);
        let what = what.strip_prefix("derived: ").unwrap_or(&what);
        let what = what.split(", percent").next().unwrap_or(what);
        out.push_str(&format!(" What it wastes: {} % ({what}).", format_value(g)));
    }
    if l.at_roof {
        out.push_str(
            " The unit is at its roof: nothing in the kernel is wrong; the advice is the lever left.",
        );
    }
    out.push_str(&format!("\n\n**Advice** (`{}`): {}\n\n", l.advice_id, l.advice));
    if !l.lines.is_empty() {
        out.push_str(&format!("Where its stall reasons ({}) weigh most:\n\n", l.source_stalls.join(", ")));
        out.push_str("| % samples | file:line | source | stalls |\n|---|---|---|---|\n");
        for line in &l.lines {
            let file = line.file.rsplit('/').next().unwrap_or(&line.file);
            out.push_str(&format!(
                "| {} | {}:{} | `{}` | {} |\n",
                format_value(line.pct_of_kernel),
                md::cell(file),
                line.line,
                md::cell(&line.source).replace('`', "'"),
                md::cell(&line.stalls)
            ));
        }
        out.push('\n');
    }
    if let Some(ncu) = &l.ncu {
        let named = l.ncu_rules.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", ");
        let top = match (&ncu.top_rule, ncu.top_speedup_pct) {
            (Some(r), Some(p)) => {
                format!("; ncu's largest estimated speedup is `{r}` ({} %)", format_value(p))
            }
            _ => String::new(),
        };
        if ncu.agreeing.is_empty() {
            out.push_str(&format!(
                "ncu's rules: none of those that name this cause ({named}) fired{top}.\n\n"
            ));
        } else {
            let agreeing = ncu.agreeing.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", ");
            out.push_str(&format!("ncu's rules agree: {agreeing} fired{top}.\n\n"));
        }
    }
    out
}

/// The other causes whose conditions held, with what fixing each could save.
fn other_causes(v: &KernelVerdict) -> String {
    let items: Vec<String> = v
        .other_causes
        .iter()
        .map(|o| match o.predicted_saving_pct {
            Some(p) => format!("`{}` (up to {} %)", o.id, format_value(p)),
            None => format!("`{}` (not priced)", o.id),
        })
        .collect();
    format!("Other causes whose conditions hold: {}.\n\n", items.join(", "))
}

/// The causes ranked above the verdict's that the collected metrics could not decide.
fn unchecked(v: &KernelVerdict) -> String {
    let mut stages: Vec<String> = Vec::new();
    for u in &v.unchecked {
        if let Some(s) = u.stage {
            if !stages.contains(&s.name().to_string()) {
                stages.push(s.name().to_string());
            }
        }
    }
    let ids = v.unchecked.iter().map(|u| format!("`{}`", u.id)).collect::<Vec<_>>().join(", ");
    let what = if v.limiter.is_some() { "Ranked above this cause and not checked" } else { "Not checked" };
    let stages = if stages.is_empty() {
        String::new()
    } else {
        format!(" (the `{}` stage collects what they need)", stages.join("`, `"))
    };
    format!("{what}, because their metrics were not collected: {ids}{stages}.\n\n")
}
