//! `--page raw`: one row per profiled launch, one column per metric.
//!
//! A `--set full` page has about 2,240 columns; a page of thousands of launches is tens of
//! megabytes. [`RawPage::read`] reads a page line by line from any reader and keeps only
//! the columns asked for, so the analysis holds what it reads, not the whole page.
//!
//! This file holds the page, its launches read by column name, and the page's text
//! rewritten with only some rows or columns; reading a page from text or a reader, and
//! why no page was found, are in `raw/read.rs`.

use std::collections::HashMap;

use super::lines::*;
use super::{parse_number, ParseError};

mod read;

pub use read::ReadError;

/// The columns every raw page starts with, describing the launch rather than a metric.
pub const LAUNCH_COLUMNS: &[&str] = &[
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
];
/// A `--page raw --csv` page: a header row (`"ID","Process ID",...,"Kernel Name",...` then
/// one column per metric), a units row, then one row per profiled launch.
///
/// Every row has exactly as many cells as the header. Cells are kept as ncu printed them.
#[derive(Debug, Clone, PartialEq)]
pub struct RawPage {
    /// Column names, in order: the fixed launch columns, then metric names.
    pub columns: Vec<String>,
    /// The unit of each column (`ns`, `%`, `""` for none), aligned with `columns`.
    pub units: Vec<String>,
    /// One row per profiled launch, each aligned with `columns`.
    pub rows: Vec<Vec<String>>,
    /// The 1-based source line of each row, for error messages.
    pub row_lines: Vec<usize>,
    /// The 1-based source line of the header row.
    pub header_line: usize,
    /// How many columns the page has as printed (more than `columns` when a read kept
    /// only some).
    pub width: usize,
    /// Where each column name first appears.
    index: HashMap<String, usize>,
}

/// Skips to a page's header row: the first CSV line starting `"ID"` that has `column`.
/// Returns its 1-based line number and cells, or `missing()` when there is none.
pub(super) fn find_header<'a>(
    lines: &mut impl Iterator<Item = (usize, &'a str)>,
    column: &str,
    missing: impl FnOnce() -> ParseError,
) -> Result<(usize, Vec<String>), ParseError> {
    for (no, line) in lines.by_ref() {
        if !line.starts_with("\"ID\"") {
            continue;
        }
        let cells = split_cells(line);
        if cells.first().is_some_and(|c| c == "ID") && cells.iter().any(|c| c == column) {
            return Ok((no, cells));
        }
    }
    Err(missing())
}

impl RawPage {
    /// The first metric of one launch's `cells` (in this page's column order) whose value
    /// is negative, with that value. ncu prints no negative value for a metric: they are
    /// durations, counts, sizes, rates and percentages (no recorded page holds one).
    pub fn negative_metric<'a>(&'a self, cells: &[String]) -> Option<(&'a str, f64)> {
        self.columns
            .iter()
            .zip(cells)
            .filter(|(c, _)| c.contains("__"))
            .find_map(|(c, v)| super::parse_number(v).filter(|v| *v < 0.0).map(|v| (c.as_str(), v)))
    }

    /// The index of the first column with this name (a hash lookup).
    pub fn column(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// The profiled launches, in the order ncu printed them.
    pub fn launches(&self) -> impl ExactSizeIterator<Item = Launch<'_>> + '_ {
        (0..self.rows.len()).map(move |index| Launch { page: self, index })
    }

    /// The text of this page (parsed from `text`) keeping only the rows `keep` accepts:
    /// ncu's own lines, the header and the units row as written, then the kept rows, each
    /// as ncu wrote it. `None` when a row does not sit on exactly one line of `text`.
    pub fn text_with_rows(&self, text: &str, keep: impl Fn(usize) -> bool) -> Option<String> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let row_at: std::collections::HashMap<usize, usize> =
            self.row_lines.iter().enumerate().map(|(i, line)| (*line, i)).collect();
        if row_at.len() != self.rows.len() {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut seen = 0;
        for (n, line) in text.split_inclusive('\n').enumerate() {
            match row_at.get(&(n + 1)) {
                Some(&row) => {
                    seen += 1;
                    // A row's cells are on its line: the line holds the whole record.
                    if !line.starts_with('"') {
                        return None;
                    }
                    if keep(row) {
                        out.push_str(line);
                    }
                }
                None => out.push_str(line),
            }
        }
        (seen == self.rows.len()).then_some(out)
    }

    /// The page's text with only the columns `keep` accepts (by name), in the header, the
    /// units row and every launch row; ncu's own lines are kept as written. `None` when a
    /// rewritten line does not split into the page's cells as ncu writes them
    /// (`"a","b"`), so that nothing is cut in the wrong place.
    pub fn text_with_columns(&self, text: &str, keep: impl Fn(&str) -> bool) -> Option<String> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let kept: Vec<bool> = self.columns.iter().map(|c| keep(c)).collect();
        if self.width != self.columns.len() {
            return None;
        }
        let rewritten: std::collections::HashSet<usize> = [self.header_line, self.header_line + 1]
            .into_iter()
            .chain(self.row_lines.iter().copied())
            .collect();
        let mut out = String::with_capacity(text.len());
        for (n, line) in text.split_inclusive('\n').enumerate() {
            if !rewritten.contains(&(n + 1)) {
                out.push_str(line);
                continue;
            }
            let body = line.trim_end_matches(['\n', '\r']);
            let cells = super::lines::ncu_split(body).filter(|c| c.len() == kept.len())?;
            let cut: Vec<&str> = cells.into_iter().zip(&kept).filter(|(_, k)| **k).map(|(c, _)| c).collect();
            out.push('"');
            out.push_str(&cut.join("\",\""));
            out.push('"');
            out.push_str(&line[body.len()..]);
        }
        Some(out)
    }

    /// The distinct kernel names, in order of first launch.
    pub fn kernel_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for launch in self.launches() {
            let name = launch.kernel_name();
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }
}

/// One profiled launch: a row of a [`RawPage`], read by column name.
#[derive(Debug, Clone, Copy)]
pub struct Launch<'a> {
    page: &'a RawPage,
    index: usize,
}

impl<'a> Launch<'a> {
    /// The position of this launch in the page (0-based).
    pub fn index(&self) -> usize {
        self.index
    }

    /// The 1-based source line of this launch's row.
    pub fn line(&self) -> usize {
        self.page.row_lines.get(self.index).copied().unwrap_or(0)
    }

    /// All cells of this launch, aligned with [`RawPage::columns`].
    pub fn cells(&self) -> &'a [String] {
        self.page.rows.get(self.index).map_or(&[], Vec::as_slice)
    }

    /// The cell in column `index`, as printed.
    pub fn cell(&self, index: usize) -> Option<&'a str> {
        self.cells().get(index).map(String::as_str)
    }

    /// The cell in the named column, as printed.
    pub fn get(&self, name: &str) -> Option<&'a str> {
        self.cell(self.page.column(name)?)
    }

    /// The named column's value as a number ([`parse_number`]); `None` for text or no value.
    pub fn number(&self, name: &str) -> Option<f64> {
        parse_number(self.get(name)?)
    }

    /// The named column's unit; `None` when the column is absent or has no unit.
    pub fn unit(&self, name: &str) -> Option<&'a str> {
        let unit = self.page.units.get(self.page.column(name)?)?;
        (!unit.is_empty()).then_some(unit.as_str())
    }

    /// The "Kernel Name" cell (`""` if the page has none).
    pub fn kernel_name(&self) -> &'a str {
        self.get("Kernel Name").unwrap_or("")
    }

    /// The "ID" cell: ncu's number for this launch within its run.
    pub fn id(&self) -> &'a str {
        self.get("ID").unwrap_or("")
    }
}
