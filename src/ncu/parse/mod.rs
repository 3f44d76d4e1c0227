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

mod details;
mod lines;
mod log;
mod raw;
mod source;

pub use details::{DetailsPage, DetailsRow, EmbeddedTable};
pub use log::{scan_log, NcuLog};
pub use raw::{Launch, RawPage, ReadError, LAUNCH_COLUMNS};
pub use source::{SassRow, SourceBlock, SourceLine, SourcePage, SourceText};

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

#[cfg(test)]
mod tests {
    use super::lines::*;
    use super::log::segments;
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
    fn a_source_page_cut_at_its_blocks_keeps_every_line() {
        let header = "\"Line No\",\"Source\",\"Address\",\"Source\",\"# Samples\"";
        let text = format!(
            "==PROF== Connected\r\n\"File Path\",\"/k/a.cu\"\r\n\"Function Name\",\"f\"\r\n{header}\r\n\
             \"3\",\"x\",\"-\",\"-\",\"5\"\r\n==WARNING== late\r\n\
             \"File Path\",\"/k/b.cu\"\n\"Function Name\",\"g\"\n{header}\n\"4\",\"y\",\"-\",\"-\",\"1\"\n\
             \"Kernel Name\",\"void h<int>(int)\",\n\"Address\",\"Source\",\"# Samples\"\n\"0x10\",\"EXIT\",\"1\""
        );
        let cut = SourceText::cut(&text);
        assert_eq!(cut.functions, ["f", "g", "void h<int>(int)"]);
        assert_eq!(cut.lines.iter().map(|(l, _)| *l).collect::<String>(), text);
        let blocks: Vec<Option<usize>> = cut.lines.iter().map(|(_, b)| *b).collect();
        let (a, b, c) = (Some(0), Some(1), Some(2));
        assert_eq!(blocks, [None, a, a, a, a, None, b, b, b, b, c, c, c]);
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
