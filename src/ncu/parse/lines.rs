//! Lines and cells: how ncu's CSV lines are split, and the ragged-row error a page can have.
//!
//! The bottom of the parsers: it imports nothing from its siblings. [`super::log`] builds
//! on it (ncu's own lines are read with [`numbered_lines`]) and explains a missing page;
//! the page parsers use both.

use super::ParseError;

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
