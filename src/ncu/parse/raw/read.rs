//! Reading a raw page: from its whole text ([`RawPage::parse`]) or line by line from a
//! reader ([`RawPage::read`], [`RawPage::for_each_row`]), keeping only the columns asked
//! for; the header, the units row and the launch rows checked as they come, and why no
//! page was found ([`ReadError`]), explained from ncu's own lines.

use std::collections::HashMap;
use std::io::BufRead;

use super::{RawPage, LAUNCH_COLUMNS};
use crate::ncu::parse::lines::{ragged, split_cells, split_fitted, Fit};
use crate::ncu::parse::log::no_page_error;
use crate::ncu::parse::ParseError;

/// Text kept from before a page's header, for explaining a missing page (ncu's own
/// lines say why): at most this many bytes.
const PREAMBLE_LIMIT: usize = 8 << 20;

impl RawPage {
    /// Parses a raw page out of a log file or stdout capture.
    ///
    /// Fails with [`ParseErrorKind::NoKernelProfiled`] when ncu profiled nothing, and with a
    /// located [`ParseErrorKind::Malformed`] error when the units row is missing, a row is
    /// ragged, or no launch row follows the units row.
    pub fn parse(text: &str, origin: &str) -> Result<RawPage, ParseError> {
        Self::read(text.as_bytes(), origin, &|_| true).map_err(|e| e.into_parse_error(text, origin))
    }

    /// Reads a raw page line by line from `reader`, keeping the launch columns
    /// ([`LAUNCH_COLUMNS`]) and the metric columns `keep` accepts; the others are dropped
    /// as each row is read. Errors as [`RawPage::parse`]; a reader that fails is a
    /// malformed page at the line it failed on.
    pub fn read(
        reader: impl BufRead,
        origin: &str,
        keep: &dyn Fn(&str) -> bool,
    ) -> Result<RawPage, ReadError> {
        let mut rows = Vec::new();
        let mut row_lines = Vec::new();
        let mut page = Self::for_each_row(reader, origin, keep, &mut |_, no, cells| {
            rows.push(cells);
            row_lines.push(no);
            Ok(())
        })?;
        page.rows = rows;
        page.row_lines = row_lines;
        Ok(page)
    }

    /// Reads a raw page line by line like [`RawPage::read`], handing each launch row (its
    /// line number and kept cells) to `on_row` instead of keeping it: for pages too large to
    /// hold. Returns the page's header and units, with no rows.
    pub fn for_each_row(
        reader: impl BufRead,
        origin: &str,
        keep: &dyn Fn(&str) -> bool,
        on_row: &mut RowFn<'_>,
    ) -> Result<RawPage, ReadError> {
        let mut lines = LineReader {
            reader,
            no: 0,
            buf: Vec::new(),
            preamble: String::new(),
            keep_preamble: true,
            origin,
        };
        let (header_line, columns) = read_header(&mut lines)?;
        let layout = Layout::new(origin, header_line, columns, keep);
        let (units_line, units) = read_units(&mut lines, &layout)?;
        let header = layout.header_page(units);
        let launches = read_launches(&mut lines, &layout, &header, on_row)?;
        if launches == 0 {
            return Err(ReadError::Parse(ParseError::new(
                origin,
                units_line,
                "no launch row after the units row: the page lists no profiled launch (a truncated page?)",
            )));
        }
        Ok(header)
    }
}

/// What [`RawPage::for_each_row`] hands each launch row to: the page's header (no rows),
/// the row's 1-based line and its kept cells.
pub type RowFn<'f> = dyn FnMut(&RawPage, usize, Vec<String>) -> Result<(), ParseError> + 'f;

/// Why [`RawPage::read`] found no page.
#[derive(Debug)]
pub enum ReadError {
    /// The page is there and malformed (or the reader failed).
    Parse(ParseError),
    /// No header was found; `preamble` holds the text read (up to a limit) for
    /// [`ReadError::into_parse_error`] to explain from ncu's own lines.
    NoPage {
        /// The lines read, joined by newlines.
        preamble: String,
    },
}

impl From<ParseError> for ReadError {
    fn from(e: ParseError) -> Self {
        ReadError::Parse(e)
    }
}

impl ReadError {
    /// The parse error, with a missing page explained by ncu's lines in `text` (the whole
    /// input when the caller has it, else the text read before the end).
    pub fn into_parse_error(self, text: &str, origin: &str) -> ParseError {
        match self {
            ReadError::Parse(e) => e,
            ReadError::NoPage { preamble } => {
                let text = if text.is_empty() { preamble.as_str() } else { text };
                no_page_error(text, origin, "raw page", "\"ID\",\"Process ID\",...,\"Kernel Name\"")
            }
        }
    }

    /// The parse error for a page read from `origin`, explaining a missing page from what
    /// was read.
    pub fn with_origin(self, origin: &str) -> ParseError {
        match self {
            ReadError::Parse(e) => e,
            ReadError::NoPage { preamble } => {
                no_page_error(&preamble, origin, "raw page", "\"ID\",\"Process ID\",...,\"Kernel Name\"")
            }
        }
    }
}

/// Lines of a reader with their 1-based numbers, lossy UTF-8, without terminators; keeps
/// the text before the header (up to [`PREAMBLE_LIMIT`]) for error messages.
struct LineReader<'o, R: BufRead> {
    reader: R,
    no: usize,
    buf: Vec<u8>,
    preamble: String,
    keep_preamble: bool,
    origin: &'o str,
}

impl<R: BufRead> LineReader<'_, R> {
    fn next_line(&mut self) -> Result<Option<(usize, String)>, ParseError> {
        self.buf.clear();
        let n = self
            .reader
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| ParseError::new(self.origin, self.no + 1, format!("could not read: {e}")))?;
        if n == 0 {
            return Ok(None);
        }
        self.no += 1;
        let mut bytes = self.buf.as_slice();
        if self.no == 1 {
            bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
        }
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let line = String::from_utf8_lossy(bytes).into_owned();
        if self.keep_preamble && self.preamble.len() < PREAMBLE_LIMIT {
            self.preamble.push_str(&line);
            self.preamble.push('\n');
        }
        Ok(Some((self.no, line)))
    }

    /// The next line that may be a CSV record (it starts with a quote).
    fn next_csv_line(&mut self) -> Result<Option<(usize, String)>, ParseError> {
        while let Some((no, line)) = self.next_line()? {
            if line.starts_with('"') {
                return Ok(Some((no, line)));
            }
        }
        Ok(None)
    }
}

/// What a raw page's header fixes for every row after it: the width a row must have and
/// the columns a read keeps.
struct Layout<'o> {
    /// Where the page comes from, for errors.
    origin: &'o str,
    /// The 1-based line of the header.
    header_line: usize,
    /// Every column, as printed.
    columns: Vec<String>,
    /// How a row must fit the header.
    fit: Fit,
    /// The indices of the columns kept: the launch columns and those the read asked for.
    kept: Vec<usize>,
}

impl<'o> Layout<'o> {
    fn new(origin: &'o str, header_line: usize, columns: Vec<String>, keep: &dyn Fn(&str) -> bool) -> Self {
        let fit = Fit { width: columns.len(), free_text: None, allow_short: false };
        let kept = (0..columns.len())
            .filter(|&i| LAUNCH_COLUMNS.contains(&columns[i].as_str()) || keep(&columns[i]))
            .collect();
        Layout { origin, header_line, columns, fit, kept }
    }

    /// The kept cells of a row.
    fn select(&self, cells: Vec<String>) -> Vec<String> {
        if self.kept.len() == cells.len() {
            return cells;
        }
        let mut cells = cells;
        self.kept.iter().map(|&i| std::mem::take(&mut cells[i])).collect()
    }

    /// Splits the row on line `no` to the header's width; a ragged row is an error.
    fn split(&self, line: &str, no: usize) -> Result<Vec<String>, ParseError> {
        split_fitted(line, self.fit).map_err(|n| ragged(self.origin, no, n, self.fit.width, self.header_line))
    }

    /// The page with its kept columns and units and no rows.
    fn header_page(&self, units: Vec<String>) -> RawPage {
        let columns = self.select(self.columns.clone());
        let mut index = HashMap::with_capacity(columns.len());
        for (i, c) in columns.iter().enumerate() {
            index.entry(c.clone()).or_insert(i);
        }
        RawPage {
            columns,
            units: self.select(units),
            rows: Vec::new(),
            row_lines: Vec::new(),
            header_line: self.header_line,
            width: self.fit.width,
            index,
        }
    }
}

/// Skips to the header: the first CSV line starting `"ID"` that has "Kernel Name". Stops
/// keeping the preamble there, and refuses a details page's header.
fn read_header<R: BufRead>(lines: &mut LineReader<'_, R>) -> Result<(usize, Vec<String>), ReadError> {
    let (header_line, columns) = loop {
        let Some((no, line)) = lines.next_line()? else {
            return Err(ReadError::NoPage { preamble: std::mem::take(&mut lines.preamble) });
        };
        if !line.starts_with("\"ID\"") {
            continue;
        }
        let cells = split_cells(&line);
        if cells.first().is_some_and(|c| c == "ID") && cells.iter().any(|c| c == "Kernel Name") {
            break (no, cells);
        }
    };
    lines.preamble = String::new();
    lines.keep_preamble = false;
    if columns.iter().any(|c| c == "Metric Name") && columns.iter().any(|c| c == "Rule Name") {
        return Err(ReadError::Parse(ParseError::new(
            lines.origin,
            header_line,
            "this is a details page (--page details), not a raw page (--page raw)",
        )));
    }
    Ok((header_line, columns))
}

/// Reads the units row that must follow the header: its line and cells.
fn read_units<R: BufRead>(
    lines: &mut LineReader<'_, R>,
    layout: &Layout<'_>,
) -> Result<(usize, Vec<String>), ReadError> {
    let (origin, header_line) = (layout.origin, layout.header_line);
    let Some((units_line, line)) = lines.next_csv_line()? else {
        return Err(ReadError::Parse(ParseError::new(
            origin,
            header_line,
            "the page ends after its header: no units row and no launch row (a truncated page?)",
        )));
    };
    let units = layout.split(&line, units_line)?;
    if let Some(id) = units.first().filter(|id| !id.is_empty()) {
        return Err(ReadError::Parse(ParseError::new(
            origin,
            units_line,
            format!(
                "expected the units row (an empty \"ID\" cell) after the header on line \
                 {header_line}, found a launch row with ID \"{id}\": the units row is missing"
            ),
        )));
    }
    Ok((units_line, units))
}

/// Hands each launch row to `on_row`, skipping a repeated header and its units row (ncu
/// prints one page per process); returns how many launches there were.
fn read_launches<R: BufRead>(
    lines: &mut LineReader<'_, R>,
    layout: &Layout<'_>,
    header: &RawPage,
    on_row: &mut RowFn<'_>,
) -> Result<usize, ReadError> {
    let mut launches = 0usize;
    let mut after_repeated_header = false;
    while let Some((no, line)) = lines.next_csv_line()? {
        if line.starts_with("\"ID\"") && split_cells(&line) == layout.columns {
            // A second page with the same columns (ncu prints one per process).
            after_repeated_header = true;
            continue;
        }
        let cells = layout.split(&line, no)?;
        let empty_id = cells.first().is_some_and(|c| c.is_empty());
        if std::mem::take(&mut after_repeated_header) && empty_id {
            continue; // its units row
        }
        if empty_id {
            return Err(ReadError::Parse(ParseError::new(
                layout.origin,
                no,
                "a launch row with an empty \"ID\" cell (a second units row?)",
            )));
        }
        on_row(header, no, layout.select(cells))?;
        launches += 1;
    }
    Ok(launches)
}
