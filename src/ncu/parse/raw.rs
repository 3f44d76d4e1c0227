//! `--page raw`: one row per profiled launch, one column per metric.

use super::lines::*;
use super::{parse_number, ParseError};

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
    /// Parses a raw page out of a log file or stdout capture.
    ///
    /// Fails with [`ParseErrorKind::NoKernelProfiled`] when ncu profiled nothing, and with a
    /// located [`ParseErrorKind::Malformed`] error when the units row is missing, a row is
    /// ragged, or no launch row follows the units row.
    pub fn parse(text: &str, origin: &str) -> Result<RawPage, ParseError> {
        let mut lines = csv_lines(text);
        let (header_line, columns) = find_header(&mut lines, "Kernel Name", || {
            no_page_error(text, origin, "raw page", "\"ID\",\"Process ID\",...,\"Kernel Name\"")
        })?;
        if columns.iter().any(|c| c == "Metric Name") && columns.iter().any(|c| c == "Rule Name") {
            return Err(ParseError::new(
                origin,
                header_line,
                "this is a details page (--page details), not a raw page (--page raw)",
            ));
        }
        let fit = Fit { width: columns.len(), free_text: None, allow_short: false };

        let Some((units_line, line)) = lines.next() else {
            return Err(ParseError::new(
                origin,
                header_line,
                "the page ends after its header: no units row and no launch row (a truncated page?)",
            ));
        };
        let units =
            split_fitted(line, fit).map_err(|n| ragged(origin, units_line, n, fit.width, header_line))?;
        if let Some(id) = units.first().filter(|id| !id.is_empty()) {
            return Err(ParseError::new(
                origin,
                units_line,
                format!(
                    "expected the units row (an empty \"ID\" cell) after the header on line \
                     {header_line}, found a launch row with ID \"{id}\": the units row is missing"
                ),
            ));
        }

        let mut rows = Vec::new();
        let mut row_lines = Vec::new();
        let mut after_repeated_header = false;
        for (no, line) in lines {
            if line.starts_with("\"ID\"") && split_cells(line) == columns {
                // A second page with the same columns (ncu prints one per process).
                after_repeated_header = true;
                continue;
            }
            let cells = split_fitted(line, fit).map_err(|n| ragged(origin, no, n, fit.width, header_line))?;
            let empty_id = cells.first().is_some_and(|c| c.is_empty());
            if std::mem::take(&mut after_repeated_header) && empty_id {
                continue; // its units row
            }
            if empty_id {
                return Err(ParseError::new(
                    origin,
                    no,
                    "a launch row with an empty \"ID\" cell (a second units row?)",
                ));
            }
            rows.push(cells);
            row_lines.push(no);
        }
        if rows.is_empty() {
            return Err(ParseError::new(
                origin,
                units_line,
                "no launch row after the units row: the page lists no profiled launch (a truncated page?)",
            ));
        }
        Ok(RawPage { columns, units, rows, row_lines, header_line })
    }

    /// The index of the first column with this name.
    ///
    /// A linear scan (a full-set page has about 2,240 columns, microseconds); to read one
    /// metric of many launches, look the index up once and use [`Launch::cell`].
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// The profiled launches, in the order ncu printed them.
    pub fn launches(&self) -> impl ExactSizeIterator<Item = Launch<'_>> + '_ {
        (0..self.rows.len()).map(move |index| Launch { page: self, index })
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
