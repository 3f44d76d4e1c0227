//! `--page details`: sections, metrics and ncu's rule findings with estimated speedups.

use super::lines::*;
use super::log::no_page_error;
use super::raw::find_header;
use super::{parse_number, ParseError};

/// A `--page details --csv` page: one row per metric of each section, and one per rule
/// result (rule rows carry the section identifier, e.g. `SpeedOfLight`, in "Section Name").
///
/// With `--print-details all` ncu also prints a section's own table inside the page: after
/// the NUMA Affinity section's rows comes a header of its own (`"GPU ID","GPU Name",
/// "NUMA ID by CPU Affinity",...`) and one row per GPU, then the page's rows go on. Those
/// tables are kept apart, in [`DetailsPage::tables`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DetailsPage {
    /// The rows, in the order ncu printed them.
    pub rows: Vec<DetailsRow>,
    /// Tables printed inside the page, in order.
    pub tables: Vec<EmbeddedTable>,
}

/// A table ncu printed inside a details page, with a header of its own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EmbeddedTable {
    /// The section of the row before it (`NUMA Affinity`).
    pub section: String,
    /// Its header.
    pub columns: Vec<String>,
    /// Its rows, each as wide as the header.
    pub rows: Vec<Vec<String>>,
    /// The 1-based line of its header.
    pub line: usize,
}

/// One row of a details page. Metric rows leave the rule fields empty; rule rows leave the
/// metric fields empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DetailsRow {
    /// The launch's "ID".
    pub id: String,
    /// "Kernel Name".
    pub kernel: String,
    /// "Section Name": a section title for metric rows, a section identifier for rule rows.
    pub section: String,
    /// "Metric Name", e.g. `Duration`.
    pub metric_name: String,
    /// "Metric Unit", possibly scaled (`us`, `Kbyte`).
    pub metric_unit: String,
    /// "Metric Value" as printed.
    pub metric_value: String,
    /// "Rule Name", e.g. `SOLBottleneck`.
    pub rule_name: String,
    /// "Rule Type": `OPT`, `INF`, `WRN`...
    pub rule_type: String,
    /// "Rule Description": ncu's advice text.
    pub rule_description: String,
    /// "Estimated Speedup Type": `local` or `global`.
    pub speedup_type: String,
    /// "Estimated Speedup" in percent, when the rule gives one.
    pub speedup: Option<f64>,
    /// The 1-based source line of this row.
    pub line: usize,
}

impl DetailsRow {
    /// Whether this row is a rule result rather than a metric.
    pub fn is_rule(&self) -> bool {
        !self.rule_name.is_empty()
    }
}

/// Whether a short line is the header of a table inside the page: at least two cells, and
/// none of them empty or a number (a page row starts with the launch's numeric ID; a
/// truncated one still does).
fn starts_a_table(cells: &[String]) -> bool {
    cells.len() >= 2 && cells.iter().all(|c| !c.trim().is_empty() && parse_number(c).is_none())
}

const DETAILS_COLUMNS: [&str; 11] = [
    "ID",
    "Kernel Name",
    "Section Name",
    "Metric Name",
    "Metric Unit",
    "Metric Value",
    "Rule Name",
    "Rule Type",
    "Rule Description",
    "Estimated Speedup Type",
    "Estimated Speedup",
];

impl DetailsPage {
    /// Parses a details page out of a log file or stdout capture. A page with a header and
    /// no rows is empty, not an error.
    pub fn parse(text: &str, origin: &str) -> Result<DetailsPage, ParseError> {
        let mut lines = csv_lines(text);
        let (header_line, columns) = find_header(&mut lines, "Metric Name", || {
            no_page_error(text, origin, "details page", "\"ID\",...,\"Section Name\",\"Metric Name\",...")
        })?;
        let mut at = [0usize; DETAILS_COLUMNS.len()];
        for (slot, name) in at.iter_mut().zip(DETAILS_COLUMNS) {
            *slot = columns.iter().position(|c| c == name).ok_or_else(|| {
                ParseError::new(origin, header_line, format!("the details header has no \"{name}\" column"))
            })?;
        }
        let [id, kernel, section, metric_name, metric_unit, metric_value, rule_name, rule_type, rule_description, speedup_type, speedup] =
            at;
        // Metric rows stop after "Rule Name"; every row reaches at least "Metric Value".
        let min_width = metric_value.max(kernel).max(section).max(metric_name).max(metric_unit) + 1;
        let fit = Fit { width: columns.len(), free_text: Some(rule_description), allow_short: true };

        let mut rows: Vec<DetailsRow> = Vec::new();
        let mut tables: Vec<EmbeddedTable> = Vec::new();
        // The embedded table whose rows are being read, if any.
        let mut open: Option<EmbeddedTable> = None;
        for (no, line) in lines {
            if line.starts_with("\"ID\"") && split_cells(line) == columns {
                continue; // a repeated header
            }
            if let Some(table) = open.as_mut() {
                let cells = split_cells(line);
                if cells.len() == table.columns.len() && cells.len() < min_width {
                    table.rows.push(cells);
                    continue;
                }
                tables.extend(open.take());
            }
            let cells = split_fitted(line, fit).map_err(|n| ragged(origin, no, n, fit.width, header_line))?;
            if cells.len() < min_width && starts_a_table(&cells) {
                // Its first cell names a column; a page row starts with the launch's ID.
                let section = rows.last().map(|r| r.section.clone()).unwrap_or_default();
                open = Some(EmbeddedTable { section, columns: cells, rows: Vec::new(), line: no });
                continue;
            }
            if cells.len() < min_width {
                return Err(ParseError::new(
                    origin,
                    no,
                    format!(
                        "short row: {} cell(s) where every details row reaches \"Metric Value\" \
                         ({min_width} cells; a truncated line?)",
                        cells.len()
                    ),
                ));
            }
            let cell = |i: usize| cells.get(i).cloned().unwrap_or_default();
            rows.push(DetailsRow {
                id: cell(id),
                kernel: cell(kernel),
                section: cell(section),
                metric_name: cell(metric_name),
                metric_unit: cell(metric_unit),
                metric_value: cell(metric_value),
                rule_name: cell(rule_name),
                rule_type: cell(rule_type),
                rule_description: cell(rule_description),
                speedup_type: cell(speedup_type),
                speedup: cells.get(speedup).and_then(|s| parse_number(s)),
                line: no,
            });
        }
        tables.extend(open);
        Ok(DetailsPage { rows, tables })
    }

    /// The rule rows.
    pub fn rules(&self) -> impl Iterator<Item = &DetailsRow> {
        self.rows.iter().filter(|r| r.is_rule())
    }
}
