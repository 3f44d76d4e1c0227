//! The HTML views: `report.html` in each analysed profile directory, and `index.html`
//! (with `ab.html` after an A/B check) in a profiles root ([`root`]).
//!
//! Each page is one self-contained file: its CSS, its SVG figures and the little
//! JavaScript that sorts tables are inline, and nothing is fetched from the network, so a
//! page opens offline and as a CI artifact. It is rendered with askama from the templates
//! under `templates/html/`, checked against these structs when kprof is compiled; askama
//! escapes every value it writes into the HTML, and every string that came from a program
//! or a CSV (kernel names, source lines, instructions, labels) reaches the page only
//! through such a value, so a hostile kernel name shows as text, never as markup.
//!
//! A page is built only from files of the directory it describes ([`load`]), never from an
//! analysis in memory, with no clock and no ordering left to chance: rendering the same
//! directory again gives the same bytes. [`write_profile`] is called by the pass that
//! writes `final_report.md` and again whenever a comparison lands in the directory.

mod comparison;
mod kernel;
pub mod load;
mod roofline;
pub mod root;
mod source;

use anyhow::Result;
use askama::Template;

use crate::profile::fs::write_atomic;
use crate::profile::ProfileDir;
use crate::units::seconds;
use comparison::{ab_view, comparison_view, ComparisonView};
use kernel::{kernel_view, ExplainEntry, Glossary, KernelView};
use load::ProfileData;
use source::{source_view, SourceView};

/// A stage that ran, and why.
#[derive(Debug, Clone)]
struct StageRow {
    /// The stage, or the imported page.
    stage: String,
    /// Why it ran.
    why: String,
    /// How it ended, with its replay passes and wall time.
    outcome: String,
    /// Its page, relative to the profile directory.
    output: String,
}

/// One fact of the header.
#[derive(Debug, Clone)]
struct Fact {
    /// What.
    name: String,
    /// Its value.
    value: String,
}

/// `report.html`.
#[derive(Template)]
#[template(path = "html/report.html")]
struct ReportPage {
    title: String,
    id: String,
    facts: Vec<Fact>,
    kernels: Vec<KernelView>,
    stages: Vec<StageRow>,
    source: SourceView,
    comparison: Option<ComparisonView>,
    glossary: Vec<ExplainEntry>,
    files: Vec<String>,
}

/// Renders `report.html` for the profile `data`.
pub fn render_profile(data: &ProfileData) -> Result<String> {
    let mut glossary = Glossary::default();
    let kernels: Vec<KernelView> = data
        .decision
        .kernels
        .iter()
        .map(|v| kernel_view(v, data.summary.kernels.iter().find(|k| k.kernel == v.kernel), &mut glossary))
        .collect();
    let comparison = match (&data.ab, &data.comparison) {
        (Some(ab), _) => Some(ab_view(ab, data.ab_profiles.as_ref(), &data.hotspots)),
        (None, Some(c)) => Some(comparison_view(c, &data.hotspots)),
        (None, None) => None,
    };
    let page = ReportPage {
        title: title(data),
        id: data.id.clone(),
        facts: facts(data),
        kernels,
        stages: stages(data),
        source: source_view(
            &data.hotspots,
            data.source_collected,
            data.decision
                .kernels
                .iter()
                .filter_map(|v| v.library.as_ref().map(|l| l.library.as_str()))
                .next(),
        ),
        comparison,
        glossary: glossary.entries,
        files: data.files.clone(),
    };
    // Values from the data: no control or bidirectional character reaches the page.
    Ok(crate::shell::printable(&page.render()?))
}

/// Writes `report.html` into `dir` from its own files; does nothing for a directory that
/// holds no analysis (a timing-only profile).
pub fn write_profile(dir: &ProfileDir) -> Result<()> {
    match load::load(dir)? {
        Some(data) => write_atomic(&dir.report_html_path(), &render_profile(&data)?),
        None => Ok(()),
    }
}

/// A name or a source line as the pages show it: cut past
/// [`crate::report::md::LONGEST_VALUE`] bytes, saying how many more there were, as the
/// Markdown report cuts it (a name of a megabyte, from a page, would be written wherever
/// the page names it).
pub(super) fn shown(text: &str) -> String {
    crate::shell::cut(text, crate::report::md::LONGEST_VALUE)
}

fn title(data: &ProfileData) -> String {
    let name = match data.decision.kernels.as_slice() {
        [one] => one.kernel.clone(),
        _ if !data.provenance.title.is_empty() => data.provenance.title.clone(),
        _ => data.id.clone(),
    };
    let name = shown(&name);
    match &data.summary.device {
        Some(d) => format!("{name} on {d}"),
        None => name,
    }
}

/// The header's facts: what was profiled, with what, on what.
fn facts(data: &ProfileData) -> Vec<Fact> {
    let p = &data.provenance;
    let or_not = |v: &Option<String>| v.clone().unwrap_or_else(|| "not recorded".into());
    let plain = |s: &str| s.replace('`', "");
    [
        ("target", plain(&p.target_summary)),
        ("kernel filter", plain(&p.kernel_filter)),
        ("device", or_not(&data.summary.device)),
        ("profiler", or_not(&p.profiler_version)),
        ("clock control", or_not(&p.clock_control)),
    ]
    .into_iter()
    .filter(|(_, v)| !v.is_empty())
    .map(|(name, value)| Fact { name: name.into(), value })
    .collect()
}

/// The stages the run's manifest lists, or, for an import, its pages.
fn stages(data: &ProfileData) -> Vec<StageRow> {
    match &data.manifest {
        Some(m) => m
            .stages
            .iter()
            .map(|s| {
                let passes = match s.passes.as_slice() {
                    [] => String::new(),
                    [p] => format!(", {p} replay passes"),
                    many => format!(
                        ", {} replay passes",
                        many.iter().map(u32::to_string).collect::<Vec<_>>().join("/")
                    ),
                };
                StageRow {
                    stage: s.stage.clone(),
                    why: s.why.clone(),
                    outcome: format!("{}{passes}, {}", s.status, seconds(s.wall_ms as f64 / 1000.0)),
                    output: s.output.clone(),
                }
            })
            .collect(),
        None => {
            // An import has no manifest; nor has a directory whose pages were collected by
            // running its `commands.sh` by hand.
            let imported = data.provenance.target_summary.starts_with("Imported");
            let why = if imported { "imported from an ncu export" } else { "no run manifest says why" };
            data.pages
                .iter()
                .map(|p| StageRow {
                    stage: p.rsplit('/').next().unwrap_or(p).to_string(),
                    why: why.into(),
                    outcome: "page present".into(),
                    output: p.clone(),
                })
                .collect()
        }
    }
}
