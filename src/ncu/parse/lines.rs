//! Lines and cells: how ncu's CSV lines are split, and the errors a page can have.

use super::log::{NO_KERNELS, PERMISSION_CODE};
use super::{scan_log, ParseError, ParseErrorKind};

/// Every line with its 1-based number, without the line terminator (`\n` or `\r\n`).
pub(super) fn numbered_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.split('\n').enumerate().map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
}

/// The lines that may be CSV records: those starting with a quote.
pub(super) fn csv_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    numbered_lines(text).filter(|(_, l)| l.starts_with('"'))
}

/// Splits a line the way ncu writes it: `"a","b","c"` -> `a`, `b`, `c`, with no unescaping.
pub(super) fn ncu_split(line: &str) -> Option<Vec<&str>> {
    let inner = line.strip_prefix('"')?.strip_suffix('"')?;
    Some(inner.split("\",\"").collect())
}

/// Splits a line as standard CSV (quotes escaped by doubling), one record.
pub(super) fn csv_split(line: &str) -> Vec<String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .terminator(csv::Terminator::Any(b'\n'))
        .from_reader(line.as_bytes());
    let mut record = csv::StringRecord::new();
    match reader.read_record(&mut record) {
        Ok(true) => record.iter().map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

/// The cells of a header or key/value line, whose width nothing tells us in advance.
pub(super) fn split_cells(line: &str) -> Vec<String> {
    match ncu_split(line) {
        Some(cells) => cells.into_iter().map(str::to_owned).collect(),
        None => csv_split(line),
    }
}

/// How a data row must fit its header.
#[derive(Clone, Copy)]
pub(super) struct Fit {
    /// The header's number of cells.
    pub(super) width: usize,
    /// The column that may hold free text; surplus cells from splitting are joined back into it.
    pub(super) free_text: Option<usize>,
    /// Whether rows may stop early (the details page ends metric rows before the rule columns).
    pub(super) allow_short: bool,
}

impl Fit {
    fn accepts(&self, n: usize) -> bool {
        n == self.width || (self.allow_short && n < self.width)
    }
}

/// Splits a data row to fit its header; `Err(cells found)` when it cannot.
pub(super) fn split_fitted(line: &str, fit: Fit) -> Result<Vec<String>, usize> {
    let ncu = ncu_split(line);
    if let Some(cells) = &ncu {
        if fit.accepts(cells.len()) {
            return Ok(cells.iter().map(|c| (*c).to_owned()).collect());
        }
    }
    let cells = csv_split(line);
    if fit.accepts(cells.len()) {
        return Ok(cells);
    }
    if let (Some(parts), Some(col)) = (&ncu, fit.free_text) {
        if parts.len() > fit.width && col < fit.width {
            let extra = parts.len() - fit.width;
            let mut out: Vec<String> = parts[..col].iter().map(|c| (*c).to_owned()).collect();
            out.push(parts[col..=col + extra].join("\",\""));
            out.extend(parts[col + extra + 1..].iter().map(|c| (*c).to_owned()));
            return Ok(out);
        }
    }
    Err(ncu.map_or(cells.len(), |p| p.len()))
}

pub(super) fn ragged(
    origin: &str,
    line: usize,
    found: usize,
    width: usize,
    header_line: usize,
) -> ParseError {
    ParseError::new(
        origin,
        line,
        format!(
            "ragged row: {found} cell(s) where the header on line {header_line} has {width} \
             (a truncated or damaged line?)"
        ),
    )
}

/// The first line containing `needle`, or the last line.
pub(super) fn line_of(text: &str, needle: &str) -> usize {
    let mut last = 1;
    for (no, line) in numbered_lines(text) {
        if line.contains(needle) {
            return no;
        }
        last = no;
    }
    last
}

/// The error for a text in which the page's header was not found, explained by ncu's lines.
pub(super) fn no_page_error(text: &str, origin: &str, page: &str, header_hint: &str) -> ParseError {
    let log = scan_log(text);
    if log.no_kernels_profiled {
        let seen = if log.available_kernels.is_empty() {
            "ncu listed no kernel it saw".to_string()
        } else {
            format!("the kernels ncu saw: {}", log.available_kernels.join(", "))
        };
        let line = line_of(text, NO_KERNELS);
        return ParseError::new(
            origin,
            line,
            format!("no kernel was profiled (ncu: \"{NO_KERNELS}.\"), so there is no {page}; {seen}"),
        )
        .with_kind(ParseErrorKind::NoKernelProfiled);
    }
    if log.permission_denied {
        return ParseError::new(
            origin,
            line_of(text, PERMISSION_CODE),
            format!(
                "ncu may not read the GPU performance counters ({PERMISSION_CODE}), so there is no {page}"
            ),
        )
        .with_kind(ParseErrorKind::PermissionDenied);
    }
    if let Some(error) = log.errors.first() {
        return ParseError::new(
            origin,
            line_of(text, error),
            format!("ncu reported an error and printed no {page}: {error}"),
        )
        .with_kind(ParseErrorKind::NcuError);
    }
    if text.trim().is_empty() {
        return ParseError::new(origin, 1, format!("empty input: no {page}"));
    }
    let last = numbered_lines(text).count();
    ParseError::new(origin, last, format!("no {page} in {last} line(s): no header row ({header_hint})"))
}
