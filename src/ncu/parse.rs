//! Pure parsers for the pages ncu prints with `--csv`, and for ncu's own log lines.
//!
//! Every parser takes the whole text plus an `origin` label (a file name, "stdout") and
//! does no I/O, so each is tested on recorded ncu output and fuzzed on arbitrary input.
//! Errors name the origin and the 1-based line ([`ParseError`]); no input makes a parser
//! panic.
//!
//! Design, from what ncu 2025.3 really writes:
//!
//! - **One physical line is one record.** A `--log-file` starts with `==PROF==` /
//!   `==WARNING==` lines, and a stdout capture interleaves the CSV with the profiled
//!   program's own lines. Only lines that start with `"` are CSV candidates; everything else
//!   (ncu's `==` lines, program output, blank lines) is skipped. Reading line by line also
//!   keeps one stray quote in a program's output from swallowing the rest of the page, which
//!   a reader over the whole text would do.
//! - **ncu quotes every cell and escapes nothing.** The source page prints
//!   `"13","extern "C" __global__ void f(const __half *A,","-",...`. A standard CSV reader
//!   (the `csv` crate, Python's `csv`) splits that line into the *right number* of cells with
//!   the *wrong contents* (`,-"` lands in the Address column). So a line that starts and ends
//!   with `"` is split on the `","` separator first, the exact inverse of how ncu writes it;
//!   the `csv` crate reads the lines ncu does not write that way (the details page ends its
//!   metric rows with an unquoted empty cell) and serves as the fallback. When a split gives
//!   more cells than the header, the surplus belongs to the page's one free-text column
//!   (CUDA source text, SASS instruction, rule description) and is joined back into it.
//! - **Numbers stay text until asked for.** Cells are kept as ncu printed them; callers
//!   convert with [`parse_number`], which understands thousands separators (`1,384,146.83`)
//!   and treats ncu's placeholders (`""`, `n/a`, `-`, `nan`, `no data`) as no value.
//! - **A missing page explains itself.** When no page is found, the parser scans ncu's own
//!   lines ([`scan_log`]) and says why: no kernel matched the filter (with the kernels ncu
//!   saw), no permission for the performance counters, or ncu's error line.
//!   [`ParseError::kind`] lets callers map these to exit codes.

use std::fmt;

/// Parses a number as ncu prints it, or `None` for text and placeholders.
///
/// Accepts plain integers and decimals (`532.640000`, `-3`, `1e-05`), thousands separators
/// in groups of three (`1,384,146.83`, `532,704`) and percentages above 100 (`102.82`).
/// Returns `None` for `""`, `n/a`, `-`, `nan`, `inf`, text (`PolicySpread`, `(256, 1, 1)`)
/// and malformed groupings (`1,23`).
pub fn parse_number(s: &str) -> Option<f64> {
    let s = s.trim();
    let bytes = s.as_bytes();
    let allowed = |c: &u8| c.is_ascii_digit() || matches!(c, b',' | b'.' | b'-' | b'+' | b'e' | b'E');
    if bytes.is_empty() || !bytes.iter().all(allowed) || !bytes.iter().any(u8::is_ascii_digit) {
        return None;
    }
    let value = if s.contains(',') {
        without_thousands_separators(s)?.parse::<f64>().ok()?
    } else {
        s.parse().ok()?
    };
    value.is_finite().then_some(value)
}

/// `-1,234,567.5` -> `-1234567.5`; `None` unless every group after the first has 3 digits.
fn without_thousands_separators(s: &str) -> Option<String> {
    let (sign, rest) = match s.as_bytes().first() {
        Some(b'-' | b'+') => s.split_at(1),
        _ => ("", s),
    };
    let (int, frac) = match rest.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (rest, None),
    };
    let all_digits = |g: &str| !g.is_empty() && g.bytes().all(|c| c.is_ascii_digit());
    let mut groups = int.split(',');
    let first = groups.next()?;
    if !all_digits(first) || first.len() > 3 {
        return None;
    }
    let mut out = String::with_capacity(s.len());
    out.push_str(sign);
    out.push_str(first);
    for g in groups {
        if g.len() != 3 || !all_digits(g) {
            return None;
        }
        out.push_str(g);
    }
    if let Some(frac) = frac {
        if !all_digits(frac) {
            return None;
        }
        out.push('.');
        out.push_str(frac);
    }
    Some(out)
}

/// Why a page could not be parsed; callers map this to an exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParseErrorKind {
    /// The text is not the page asked for, or is damaged (truncated, ragged rows).
    Malformed,
    /// ncu printed "No kernels were profiled": the kernel filter matched no launch.
    NoKernelProfiled,
    /// ncu may not read the GPU performance counters (`ERR_NVGPUCTRPERM`).
    PermissionDenied,
    /// ncu printed an `==ERROR==` line and no page.
    NcuError,
}

/// A parse failure, located at a 1-based line of a named input.
///
/// Displays as `{origin}:{line}: {message}`, the form compilers use, so editors and
/// terminals can jump to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The label the caller gave the input: a file path, `stdout`.
    pub origin: String,
    /// The 1-based line the problem was found on.
    pub line: usize,
    /// What is wrong, in words.
    pub message: String,
    /// The class of failure.
    pub kind: ParseErrorKind,
}

impl ParseError {
    fn new(origin: &str, line: usize, message: impl Into<String>) -> Self {
        ParseError {
            origin: origin.to_string(),
            line,
            message: message.into(),
            kind: ParseErrorKind::Malformed,
        }
    }

    fn with_kind(mut self, kind: ParseErrorKind) -> Self {
        self.kind = kind;
        self
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.origin, self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

// ---------------------------------------------------------------------------------------
// Lines and cells
// ---------------------------------------------------------------------------------------

/// Every line with its 1-based number, without the line terminator (`\n` or `\r\n`).
fn numbered_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.split('\n').enumerate().map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
}

/// The lines that may be CSV records: those starting with a quote.
fn csv_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    numbered_lines(text).filter(|(_, l)| l.starts_with('"'))
}

/// Splits a line the way ncu writes it: `"a","b","c"` -> `a`, `b`, `c`, with no unescaping.
fn ncu_split(line: &str) -> Option<Vec<&str>> {
    let inner = line.strip_prefix('"')?.strip_suffix('"')?;
    Some(inner.split("\",\"").collect())
}

/// Splits a line as standard CSV (quotes escaped by doubling), one record.
fn csv_split(line: &str) -> Vec<String> {
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
fn split_cells(line: &str) -> Vec<String> {
    match ncu_split(line) {
        Some(cells) => cells.into_iter().map(str::to_owned).collect(),
        None => csv_split(line),
    }
}

/// How a data row must fit its header.
#[derive(Clone, Copy)]
struct Fit {
    /// The header's number of cells.
    width: usize,
    /// The column that may hold free text; surplus cells from splitting are joined back into it.
    free_text: Option<usize>,
    /// Whether rows may stop early (the details page ends metric rows before the rule columns).
    allow_short: bool,
}

impl Fit {
    fn accepts(&self, n: usize) -> bool {
        n == self.width || (self.allow_short && n < self.width)
    }
}

/// Splits a data row to fit its header; `Err(cells found)` when it cannot.
fn split_fitted(line: &str, fit: Fit) -> Result<Vec<String>, usize> {
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

fn ragged(origin: &str, line: usize, found: usize, width: usize, header_line: usize) -> ParseError {
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
fn line_of(text: &str, needle: &str) -> usize {
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
fn no_page_error(text: &str, origin: &str, page: &str, header_hint: &str) -> ParseError {
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

// ---------------------------------------------------------------------------------------
// ncu's own lines
// ---------------------------------------------------------------------------------------

const NO_KERNELS: &str = "No kernels were profiled";
const PERMISSION_CODE: &str = "ERR_NVGPUCTRPERM";
const NO_LINE_INFO: &str = "No lineinfo available to show CUDA-C source related to";

/// What ncu said about a run, read from its `==PROF==`, `==WARNING==` and `==ERROR==` lines
/// in a `--log-file` or a stdout capture.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NcuLog {
    /// ncu printed "No kernels were profiled": the kernel filter matched no launch (ncu still
    /// exits 0).
    pub no_kernels_profiled: bool,
    /// The numbered list ncu prints after "Available Kernels:", in order.
    pub available_kernels: Vec<String>,
    /// The text of each `==ERROR==` line.
    pub errors: Vec<String>,
    /// The text of each `==WARNING==` line.
    pub warnings: Vec<String>,
    /// `ERR_NVGPUCTRPERM` appeared: ncu may not read the performance counters.
    pub permission_denied: bool,
    /// Each `==PROF== Profiling "NAME"...` line: the kernel and, when the line (or its
    /// continuation after an interleaved warning) ends in `- N passes`, the replay passes.
    pub profiled: Vec<(String, Option<u32>)>,
    /// Kernels for which ncu had no line info to show CUDA source ("No lineinfo available
    /// to show CUDA-C source related to 'NAME'").
    pub no_line_info: Vec<String>,
}

/// Where an ncu message begins in a line: `==TAG==` with an upper-case tag.
fn marker_at(line: &str, at: usize) -> Option<(usize, &str)> {
    let rest = line.get(at..)?.strip_prefix("==")?;
    let tag_len = rest.bytes().take_while(u8::is_ascii_uppercase).count();
    if tag_len < 2 || !rest[tag_len..].starts_with("==") {
        return None;
    }
    Some((tag_len + 4, &rest[..tag_len]))
}

/// Splits a line into `(tag, text)` segments at each `==TAG==` marker; text before the first
/// marker has no tag. ncu sometimes writes a warning in the middle of a progress line.
fn segments(line: &str) -> Vec<(Option<&str>, &str)> {
    let mut out = Vec::new();
    let mut tag = None;
    let mut start = 0;
    let mut i = 0;
    while let Some(found) = line.get(i..).and_then(|r| r.find("==")) {
        let at = i + found;
        if let Some((len, next_tag)) = marker_at(line, at) {
            if at > start || tag.is_some() {
                out.push((tag, &line[start..at]));
            }
            tag = Some(next_tag);
            start = at + len;
            i = start;
        } else {
            i = at + 2;
        }
    }
    if start < line.len() || tag.is_some() {
        out.push((tag, &line[start..]));
    }
    out
}

/// `... - 38 passes` -> 38.
fn passes_suffix(text: &str) -> Option<u32> {
    let t = text.trim_end();
    let t = t.strip_suffix(" passes").or_else(|| t.strip_suffix(" pass"))?;
    let (_, n) = t.rsplit_once("- ")?;
    n.trim().parse().ok()
}

/// `3. name` -> `name`.
fn numbered_item(text: &str) -> Option<&str> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let name = text.get(digits..)?.strip_prefix('.')?.trim();
    (digits > 0 && !name.is_empty()).then_some(name)
}

/// Reads ncu's own lines out of a log file or a stdout capture. Never fails: lines it does
/// not recognise (the program's output, CSV) are ignored.
pub fn scan_log(text: &str) -> NcuLog {
    let mut log = NcuLog::default();
    let mut in_available = false;
    let mut awaiting_passes: Option<usize> = None;
    for (_, line) in numbered_lines(text) {
        if line.contains(PERMISSION_CODE) {
            log.permission_denied = true;
        }
        if line.starts_with('"') {
            continue; // a CSV row
        }
        for (tag, body) in segments(line) {
            let body = body.trim();
            match tag {
                None => {
                    if body.trim_end_matches(':') == "Available Kernels" {
                        in_available = true;
                    } else if let Some(name) = numbered_item(body).filter(|_| in_available) {
                        log.available_kernels.push(name.to_string());
                    } else if !body.is_empty() {
                        in_available = false;
                        if let Some(i) = awaiting_passes {
                            if let Some(n) = passes_suffix(body) {
                                log.profiled[i].1 = Some(n);
                                awaiting_passes = None;
                            }
                        }
                    }
                }
                Some(tag) => {
                    in_available = false;
                    match tag {
                        "PROF" => {
                            if let Some(rest) = body.strip_prefix("Profiling ") {
                                let name = match (rest.find('"'), rest.rfind('"')) {
                                    (Some(a), Some(b)) if b > a => &rest[a + 1..b],
                                    _ => rest.split(':').next().unwrap_or(rest).trim(),
                                };
                                let passes = passes_suffix(rest);
                                log.profiled.push((name.to_string(), passes));
                                awaiting_passes = passes.is_none().then(|| log.profiled.len() - 1);
                            }
                        }
                        "WARNING" => {
                            if body.contains(NO_KERNELS) {
                                log.no_kernels_profiled = true;
                            }
                            if let Some(rest) = body.split_once(NO_LINE_INFO).map(|(_, r)| r) {
                                let name = rest.trim().trim_end_matches('.').trim_matches('\'');
                                log.no_line_info.push(name.to_string());
                            }
                            log.warnings.push(body.to_string());
                        }
                        "ERROR" => log.errors.push(body.to_string()),
                        _ => {}
                    }
                }
            }
        }
    }
    log
}

// ---------------------------------------------------------------------------------------
// --page raw
// ---------------------------------------------------------------------------------------

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
fn find_header<'a>(
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

// ---------------------------------------------------------------------------------------
// --page details
// ---------------------------------------------------------------------------------------

/// A `--page details --csv` page: one row per metric of each section, and one per rule
/// result (rule rows carry the section identifier, e.g. `SpeedOfLight`, in "Section Name").
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DetailsPage {
    /// The rows, in the order ncu printed them.
    pub rows: Vec<DetailsRow>,
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

        let mut rows = Vec::new();
        for (no, line) in lines {
            if line.starts_with("\"ID\"") && split_cells(line) == columns {
                continue; // a repeated header
            }
            let cells = split_fitted(line, fit).map_err(|n| ragged(origin, no, n, fit.width, header_line))?;
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
        Ok(DetailsPage { rows })
    }

    /// The rule rows.
    pub fn rules(&self) -> impl Iterator<Item = &DetailsRow> {
        self.rows.iter().filter(|r| r.is_rule())
    }
}

// ---------------------------------------------------------------------------------------
// --page source --print-source cuda,sass
// ---------------------------------------------------------------------------------------

/// A `--page source --csv --print-source cuda,sass` page: one block per source file of each
/// function (inlined headers such as `cuda_fp16.hpp` get blocks of their own).
///
/// A page with no block is an error unless ncu said it had no line info for the kernel
/// ([`NcuLog::no_line_info`]); then it is an empty page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourcePage {
    /// The blocks, in the order ncu printed them.
    pub blocks: Vec<SourceBlock>,
}

/// The CUDA source lines of one file that a function's SASS maps to, each with its SASS.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceBlock {
    /// The "File Path" row's value.
    pub file_path: String,
    /// The "Function Name" row's value.
    pub function_name: String,
    /// The header: `Line No`, `Source`, `Address`, `Source`, then metric columns
    /// (`# Samples`, `Instructions Executed`, `stall_*`, ...).
    pub columns: Vec<String>,
    /// The CUDA source lines, in the order ncu printed them.
    pub lines: Vec<SourceLine>,
}

impl SourceBlock {
    /// The index of the first column with this name. "Source" names two columns (CUDA
    /// text, then SASS text); this returns the first.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }
}

/// One CUDA source line and the SASS instructions attributed to it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceLine {
    /// The 1-based line number in the block's file.
    pub line_no: u32,
    /// The source text (`<Unable to open source file>` when ncu could not read it).
    pub source: String,
    /// All cells of the row, aligned with [`SourceBlock::columns`].
    pub values: Vec<String>,
    /// The SASS rows that follow this line. ncu's `...` rows (elided addresses) are left out.
    pub sass: Vec<SassRow>,
    /// The 1-based line of this row in the page.
    pub page_line: usize,
}

impl SourceLine {
    /// The cell in column `index` as a number.
    pub fn number(&self, index: usize) -> Option<f64> {
        parse_number(self.values.get(index)?)
    }
}

/// One SASS instruction row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SassRow {
    /// The instruction's address, e.g. `0x7ff8ed7a0000`.
    pub address: String,
    /// The instruction, without ncu's leading padding (`LDC R1, c[0x0][0x28]`, `@P0 EXIT`
    /// keeps its inner spacing).
    pub instruction: String,
    /// All cells of the row, aligned with [`SourceBlock::columns`].
    pub values: Vec<String>,
}

impl SassRow {
    /// The cell in column `index` as a number.
    pub fn number(&self, index: usize) -> Option<f64> {
        parse_number(self.values.get(index)?)
    }
}

/// `"File Path","/a/b.cu"` -> `/a/b.cu` for `key` = `File Path`.
fn key_value(line: &str, key: &str) -> Option<String> {
    let rest = line.strip_prefix('"')?.strip_prefix(key)?.strip_prefix('"')?;
    if rest.is_empty() {
        return Some(String::new());
    }
    let value = rest.strip_prefix(',')?;
    let value = value.strip_prefix('"').unwrap_or(value);
    Some(value.strip_suffix('"').unwrap_or(value).to_string())
}

impl SourcePage {
    /// Parses a source page out of a log file, stdout capture or `ncu -i` output.
    pub fn parse(text: &str, origin: &str) -> Result<SourcePage, ParseError> {
        let mut blocks: Vec<SourceBlock> = Vec::new();
        let mut file_path: Option<String> = None;
        let mut function_name: Option<String> = None;
        let mut header_line = 0;
        let mut in_block = false;
        for (no, line) in csv_lines(text) {
            if let Some(path) = key_value(line, "File Path") {
                file_path = Some(path);
                in_block = false;
                continue;
            }
            if let Some(name) = key_value(line, "Function Name") {
                function_name = Some(name);
                in_block = false;
                continue;
            }
            if line.starts_with("\"Line No\"") {
                let columns = split_cells(line);
                if columns.len() < 4 || columns[2] != "Address" {
                    return Err(ParseError::new(
                        origin,
                        no,
                        "a source header without the columns \"Line No\",\"Source\",\"Address\",\"Source\" \
                         (print the page with --print-source cuda,sass)",
                    ));
                }
                let Some(file_path) = file_path.take() else {
                    return Err(ParseError::new(
                        origin,
                        no,
                        "a source header with no \"File Path\" row before it",
                    ));
                };
                let function_name = function_name.take().unwrap_or_default();
                blocks.push(SourceBlock { file_path, function_name, columns, lines: Vec::new() });
                header_line = no;
                in_block = true;
                continue;
            }
            let Some(block) = blocks.last_mut().filter(|_| in_block) else {
                continue; // not part of a block: program output in a stdout capture
            };
            // CUDA rows carry free text in the first "Source" column, SASS rows in the second.
            let free_text = if line.starts_with("\"\",") { 3 } else { 1 };
            let fit = Fit { width: block.columns.len(), free_text: Some(free_text), allow_short: false };
            let cells = split_fitted(line, fit).map_err(|n| ragged(origin, no, n, fit.width, header_line))?;
            if cells[0].is_empty() {
                if cells[2] == "..." {
                    continue;
                }
                let Some(source_line) = block.lines.last_mut() else {
                    return Err(ParseError::new(
                        origin,
                        no,
                        format!("a SASS row (address {}) before any CUDA source line of its block", cells[2]),
                    ));
                };
                let address = cells[2].clone();
                let instruction = cells[3].trim().to_string();
                source_line.sass.push(SassRow { address, instruction, values: cells });
            } else {
                let line_no = cells[0].trim().parse::<u32>().map_err(|_| {
                    ParseError::new(origin, no, format!("\"Line No\" is \"{}\", not a line number", cells[0]))
                })?;
                let source = cells[1].clone();
                block.lines.push(SourceLine {
                    line_no,
                    source,
                    values: cells,
                    sass: Vec::new(),
                    page_line: no,
                });
            }
        }
        if blocks.is_empty() && scan_log(text).no_line_info.is_empty() {
            return Err(no_page_error(
                text,
                origin,
                "source page",
                "\"File Path\",... then \"Line No\",\"Source\",...",
            ));
        }
        Ok(SourcePage { blocks })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_ncu_prints_them() {
        assert_eq!(parse_number("1,384,146.83"), Some(1_384_146.83));
        assert_eq!(parse_number("532,704"), Some(532_704.0));
        assert_eq!(parse_number("532.640000"), Some(532.64));
        assert_eq!(parse_number("102.82"), Some(102.82));
        assert_eq!(parse_number(" 7 "), Some(7.0));
        assert_eq!(parse_number("-1,000"), Some(-1000.0));
        assert_eq!(parse_number("0"), Some(0.0));
        assert_eq!(parse_number("1e-05"), Some(1e-5));
        assert_eq!(parse_number("0.07114"), Some(0.07114));
        for text in ["", "n/a", "-", "nan", "inf", "no data", "PolicySpread", "(256, 1, 1)", "all", "9.0.1"] {
            assert_eq!(parse_number(text), None, "{text:?}");
        }
        for bad in ["1,23", "1234,567", ",123", "1,234.", "1,234.5.6", "--1", "1,,234", "1,234e5"] {
            assert_eq!(parse_number(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn error_display_names_origin_and_line() {
        let err = ParseError::new("a.csv", 7, "ragged row");
        assert_eq!(err.to_string(), "a.csv:7: ragged row");
    }

    const HEADER: &str = r#""ID","Kernel Name","gpu__time_duration.sum","label""#;
    const UNITS: &str = r#""","","ns","""#;

    #[test]
    fn raw_page_minimal() {
        let text = format!(
            "==PROF== Connected\n{HEADER}\n{UNITS}\n\"0\",\"k(int, float)\",\"1,234\",\"x\"\r\nprogram says hi\n\"1\",\"k(int, float)\",\"5\",\"\"\n"
        );
        let page = RawPage::parse(&text, "t").unwrap();
        assert_eq!(page.header_line, 2);
        assert_eq!(page.row_lines, vec![4, 6]);
        let launches: Vec<_> = page.launches().collect();
        assert_eq!(launches[0].kernel_name(), "k(int, float)");
        assert_eq!(launches[0].number("gpu__time_duration.sum"), Some(1234.0));
        assert_eq!(launches[0].unit("gpu__time_duration.sum"), Some("ns"));
        assert_eq!(launches[0].unit("label"), None);
        assert_eq!(launches[1].id(), "1");
        assert_eq!(launches[1].get("label"), Some(""));
        assert_eq!(launches[1].get("nope"), None);
        assert_eq!(page.kernel_names(), vec!["k(int, float)"]);
    }

    #[test]
    fn raw_page_empty_input() {
        let err = RawPage::parse("", "empty.csv").unwrap_err();
        assert_eq!((err.line, err.kind), (1, ParseErrorKind::Malformed));
        assert!(err.message.contains("empty input"), "{err}");
    }

    #[test]
    fn raw_page_header_only() {
        let err = RawPage::parse(&format!("==PROF== x\n{HEADER}\n"), "h.csv").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("no units row"), "{err}");
    }

    #[test]
    fn raw_page_header_and_units_only() {
        let err = RawPage::parse(&format!("{HEADER}\n{UNITS}\n"), "u.csv").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("no launch row"), "{err}");
    }

    #[test]
    fn raw_page_units_row_missing() {
        let err = RawPage::parse(&format!("{HEADER}\n\"0\",\"k\",\"1\",\"x\"\n"), "m.csv").unwrap_err();
        assert_eq!(err.to_string().split(": ").next(), Some("m.csv:2"));
        assert!(err.message.contains("units row is missing"), "{err}");
    }

    #[test]
    fn raw_page_ragged_row() {
        let text = format!("{HEADER}\n{UNITS}\n\"0\",\"k\",\"1\",\"x\"\n\"1\",\"k\",\"2\"\n");
        let err = RawPage::parse(&text, "r.csv").unwrap_err();
        assert_eq!(err.line, 4);
        assert!(err.message.contains("3 cell(s)") && err.message.contains("has 4"), "{err}");
    }

    #[test]
    fn raw_page_second_units_row() {
        let text = format!("{HEADER}\n{UNITS}\n{UNITS}\n\"0\",\"k\",\"1\",\"x\"\n");
        let err = RawPage::parse(&text, "t").unwrap_err();
        assert_eq!(err.line, 3);
        assert!(err.message.contains("empty \"ID\""), "{err}");
    }

    #[test]
    fn raw_page_rejects_details_page() {
        let text = "\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Rule Name\"\n";
        let err = RawPage::parse(text, "d.csv").unwrap_err();
        assert!(err.message.contains("details page"), "{err}");
    }

    #[test]
    fn raw_page_repeated_header_is_skipped() {
        let row = "\"0\",\"k\",\"1\",\"x\"";
        let text = format!("{HEADER}\n{UNITS}\n{row}\n{HEADER}\n{UNITS}\n{row}\n");
        assert_eq!(RawPage::parse(&text, "t").unwrap().rows.len(), 2);
    }

    #[test]
    fn raw_page_standard_csv_escaping_is_read() {
        // Not in ncu's shape (unquoted cells), so read as standard CSV.
        let text = format!("{HEADER}\n{UNITS}\n\"0\",\"a \"\"b\"\", c\",1,x\n");
        let page = RawPage::parse(&text, "t").unwrap();
        assert_eq!(page.launches().next().unwrap().kernel_name(), "a \"b\", c");
    }

    #[test]
    fn ncu_split_keeps_unescaped_quotes() {
        assert_eq!(
            ncu_split(r#""13","extern "C" void f(int a,","-""#).unwrap(),
            vec!["13", "extern \"C\" void f(int a,", "-"]
        );
        assert_eq!(ncu_split(r#""""#).unwrap(), vec![""]);
        assert_eq!(ncu_split("\""), None);
    }

    #[test]
    fn surplus_cells_join_the_free_text_column() {
        let fit = Fit { width: 3, free_text: Some(1), allow_short: false };
        let cells = split_fitted(r#""8","printf("a","b");","-""#, fit).unwrap();
        assert_eq!(cells, vec!["8", "printf(\"a\",\"b\");", "-"]);
        assert_eq!(split_fitted(r#""8","-""#, fit), Err(2));
    }

    #[test]
    fn log_lines() {
        let text = "==WARNING== Note: clocks\n\
                    ==PROF== Profiling \"k_a\": 0%....50%....100% - 38 passes\n\
                    ==PROF== Profiling \"k_b\" - 0 (1/1): 0%==WARNING== Launching is slow.\n\
                    ....50%....100% - 12 passes\n\
                    ==PROF== Profiling \"k_c\": 0%\n\
                    ==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n\
                    ==WARNING== No kernels were profiled.\n\
                    Available Kernels:\n\
                    1. copy_kernel\n\
                    2. f(float, int)\n\
                    3. \n\
                    ==WARNING== No lineinfo available to show CUDA-C source related to 'reduce_kernel'.\n";
        let log = scan_log(text);
        assert_eq!(
            log.profiled,
            vec![("k_a".to_string(), Some(38)), ("k_b".to_string(), Some(12)), ("k_c".to_string(), None)]
        );
        assert_eq!(log.available_kernels, vec!["copy_kernel", "f(float, int)"]);
        assert!(log.no_kernels_profiled && log.permission_denied);
        assert_eq!(log.errors.len(), 1);
        assert_eq!(log.warnings.len(), 4);
        assert_eq!(log.warnings[1], "Launching is slow.");
        assert_eq!(log.no_line_info, vec!["reduce_kernel"]);
    }

    #[test]
    fn missing_page_explained_by_ncu() {
        let err = RawPage::parse("==ERROR== ERR_NVGPUCTRPERM - denied\n", "log").unwrap_err();
        assert_eq!(err.kind, ParseErrorKind::PermissionDenied);
        let err = DetailsPage::parse("x\n==ERROR== Failed to prepare kernel\n", "log").unwrap_err();
        assert_eq!((err.kind, err.line), (ParseErrorKind::NcuError, 2));
        let err = SourcePage::parse("just\ntext\n", "log").unwrap_err();
        assert_eq!((err.kind, err.line), (ParseErrorKind::Malformed, 3));
    }

    #[test]
    fn details_short_metric_rows_and_rule_rows() {
        let text = "\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\"Rule Name\",\"Rule Type\",\"Rule Description\",\"Estimated Speedup Type\",\"Estimated Speedup\"\n\
                    \"0\",\"k\",\"SOL\",\"Duration\",\"us\",\"1,532.64\",\n\
                    \"0\",\"k\",\"SpeedOfLight\",\"\",\"\",\"\",\"R\",\"OPT\",\"Use \"x\", then y.\",\"local\",\"93.19\"\n";
        let page = DetailsPage::parse(text, "d").unwrap();
        assert_eq!(page.rows.len(), 2);
        assert!(!page.rows[0].is_rule());
        assert_eq!(parse_number(&page.rows[0].metric_value), Some(1532.64));
        let rule = page.rules().next().unwrap();
        assert_eq!(rule.rule_description, "Use \"x\", then y.");
        assert_eq!((rule.speedup, rule.line), (Some(93.19), 3));
        let err = DetailsPage::parse(&text.replace(",\"us\",\"1,532.64\",", ""), "d").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("short row"), "{err}");
    }

    #[test]
    fn source_blocks_lines_and_sass() {
        let header = "\"Line No\",\"Source\",\"Address\",\"Source\",\"# Samples\"";
        let text = format!(
            "\"File Path\",\"/k/a.cu\"\n\"Function Name\",\"f\"\n{header}\n\
             \"3\",\"extern \"C\" void f(int a, int b) {{\",\"-\",\"-\",\"5\"\n\
             \"\",\"\",\"0x10\",\"      @P0   EXIT\",\"2\"\n\
             \"\",\"\",\"...\",\"...\",\"-\"\n\
             \"\",\"\",\"0x30\",\"      MOV R1, R2\",\"3\"\n\
             \"File Path\",\"/cuda/cuda_fp16.hpp\"\n\"Function Name\",\"f\"\n{header}\n\
             \"9\",\"return h;\",\"-\",\"-\",\"1\"\n"
        );
        let page = SourcePage::parse(&text, "s").unwrap();
        assert_eq!(page.blocks.len(), 2);
        let block = &page.blocks[0];
        assert_eq!((block.file_path.as_str(), block.function_name.as_str()), ("/k/a.cu", "f"));
        assert_eq!(block.column("Source"), Some(1));
        let line = &block.lines[0];
        assert_eq!((line.line_no, line.source.as_str()), (3, "extern \"C\" void f(int a, int b) {"));
        assert_eq!(line.sass.len(), 2);
        assert_eq!(line.sass[0].instruction, "@P0   EXIT");
        assert_eq!(line.sass[1].address, "0x30");
        assert_eq!(line.sass[1].number(4), Some(3.0));
        assert_eq!(page.blocks[1].file_path, "/cuda/cuda_fp16.hpp");
    }

    #[test]
    fn source_errors_are_located() {
        let header = "\"Line No\",\"Source\",\"Address\",\"Source\",\"# Samples\"";
        let orphan = format!("\"File Path\",\"a.cu\"\n{header}\n\"\",\"\",\"0x10\",\"EXIT\",\"2\"\n");
        let err = SourcePage::parse(&orphan, "s").unwrap_err();
        assert_eq!(err.line, 3);
        assert!(err.message.contains("before any CUDA source line"), "{err}");
        let no_file = format!("{header}\n");
        assert!(SourcePage::parse(&no_file, "s").unwrap_err().message.contains("File Path"));
        let bad_no = format!("\"File Path\",\"a.cu\"\n{header}\n\"x\",\"y\",\"-\",\"-\",\"1\"\n");
        assert!(SourcePage::parse(&bad_no, "s").unwrap_err().message.contains("not a line number"));
        let ragged_row = format!("\"File Path\",\"a.cu\"\n{header}\n\"1\",\"y\"\n");
        assert_eq!(SourcePage::parse(&ragged_row, "s").unwrap_err().line, 3);
    }

    #[test]
    fn source_page_without_line_info_is_empty() {
        let text = "==WARNING== No lineinfo available to show CUDA-C source related to 'k'.\n";
        assert!(SourcePage::parse(text, "s").unwrap().blocks.is_empty());
    }

    #[test]
    fn segments_split_at_markers() {
        assert_eq!(
            segments("a==PROF== b==WARNING== c"),
            vec![(None, "a"), (Some("PROF"), " b"), (Some("WARNING"), " c")]
        );
        assert_eq!(segments("x == y ==Z== =="), vec![(None, "x == y ==Z== ==")]);
        assert_eq!(segments("==ERROR=="), vec![(Some("ERROR"), "")]);
    }
}
