//! `--page source --print-source cuda,sass`: per-line and per-instruction samples.

use super::lines::*;
use super::log::no_page_error;
use super::{parse_number, scan_log, ParseError};

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
    /// The instructions of a page printed with `--print-source sass` (a kernel without
    /// line info): the header is then `Address`, `Source`, metrics, `file_path` is empty
    /// and `lines` is empty.
    pub sass: Vec<SassRow>,
}

impl SourceBlock {
    /// Whether this block is SASS only: its kernel had no line info.
    pub fn is_sass_only(&self) -> bool {
        self.columns.first().is_some_and(|c| c == "Address")
    }
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
        let mut parser = SourceParser { origin, ..Default::default() };
        for (no, line) in csv_lines(text) {
            if parser.key_row(line) {
                continue;
            }
            if line.starts_with("\"Address\",\"Source\"") {
                parser.open_sass_block(line, no);
            } else if line.starts_with("\"Line No\"") {
                parser.open_cuda_block(line, no)?;
            } else {
                parser.row(line, no)?;
            }
        }
        if parser.blocks.is_empty() && scan_log(text).no_line_info.is_empty() {
            return Err(no_page_error(
                text,
                origin,
                "source page",
                "\"File Path\",... then \"Line No\",\"Source\",...",
            ));
        }
        Ok(SourcePage { blocks: parser.blocks })
    }
}

/// A source page's text cut at its blocks, each line kept as written, so that a page of
/// several kernels can be split by function without being rewritten.
///
/// A block starts at its "File Path" row (a SASS-only block: at its "Kernel Name" row)
/// and runs to the next block's start. ncu's own `==` lines and whatever comes before
/// the first block belong to no block.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceText<'t> {
    /// Every line with its line end, and the index of the block it belongs to (`None`:
    /// ncu's lines, and the lines before the first block).
    pub lines: Vec<(&'t str, Option<usize>)>,
    /// The function each block names ("Function Name", or a SASS-only block's "Kernel
    /// Name"), in page order; empty when its block names none.
    pub functions: Vec<String>,
}

impl SourceText<'_> {
    /// Cuts `text`, a source page as ncu wrote it.
    pub fn cut(text: &str) -> SourceText<'_> {
        let mut out = SourceText::default();
        let mut open = false;
        for raw in text.split_inclusive('\n') {
            let line = raw.trim_end_matches(['\n', '\r']);
            let line = line.strip_prefix('\u{feff}').unwrap_or(line);
            if line.starts_with("==") {
                out.lines.push((raw, None));
                continue;
            }
            let kernel = key_value(line.trim_end_matches(','), "Kernel Name");
            if key_value(line, "File Path").is_some() || kernel.is_some() {
                out.functions.push(kernel.unwrap_or_default());
                open = true;
            } else if let Some(name) = key_value(line, "Function Name").filter(|_| open) {
                if let Some(f) = out.functions.last_mut().filter(|f| f.is_empty()) {
                    *f = name;
                }
            }
            out.lines.push((raw, open.then(|| out.functions.len() - 1)));
        }
        out
    }
}

/// A source page as it is read: the blocks so far, and the key rows naming the next one.
#[derive(Default)]
struct SourceParser<'o> {
    /// Where the page comes from, for errors.
    origin: &'o str,
    /// The blocks read so far.
    blocks: Vec<SourceBlock>,
    /// The last "File Path" row's value, until a header takes it.
    file_path: Option<String>,
    /// The last "Function Name" (or "Kernel Name") row's value, until a header takes it.
    function_name: Option<String>,
    /// The 1-based line of the last header, for errors.
    header_line: usize,
    /// Whether the lines that follow belong to the last block (no key row since its header).
    in_block: bool,
}

impl SourceParser<'_> {
    /// Takes a "File Path", "Function Name" or "Kernel Name" row; `false` for any other.
    fn key_row(&mut self, line: &str) -> bool {
        if let Some(path) = key_value(line, "File Path") {
            self.file_path = Some(path);
        } else if let Some(name) = key_value(line, "Function Name") {
            self.function_name = Some(name);
        } else if let Some(name) = key_value(line.trim_end_matches(','), "Kernel Name") {
            // `--print-source sass`: a kernel name row, then an `Address` header.
            self.function_name = Some(name);
            self.file_path = None;
        } else {
            return false;
        }
        self.in_block = false;
        true
    }

    /// Opens a SASS-only block at its `Address` header (a kernel without line info).
    fn open_sass_block(&mut self, line: &str, no: usize) {
        let columns = split_cells(line);
        let function_name = self.function_name.take().unwrap_or_default();
        self.blocks.push(SourceBlock {
            file_path: String::new(),
            function_name,
            columns,
            ..Default::default()
        });
        self.header_line = no;
        self.in_block = true;
    }

    /// Opens a CUDA block at its `Line No` header, which must follow a "File Path" row.
    fn open_cuda_block(&mut self, line: &str, no: usize) -> Result<(), ParseError> {
        let columns = split_cells(line);
        if columns.len() < 4 || columns[2] != "Address" {
            return Err(ParseError::new(
                self.origin,
                no,
                "a source header without the columns \"Line No\",\"Source\",\"Address\",\"Source\" \
                 (print the page with --print-source cuda,sass)",
            ));
        }
        let Some(file_path) = self.file_path.take() else {
            return Err(ParseError::new(
                self.origin,
                no,
                "a source header with no \"File Path\" row before it",
            ));
        };
        let function_name = self.function_name.take().unwrap_or_default();
        self.blocks.push(SourceBlock { file_path, function_name, columns, ..Default::default() });
        self.header_line = no;
        self.in_block = true;
        Ok(())
    }

    /// Adds a data row to the open block; a line outside a block (program output in a
    /// stdout capture) is skipped.
    fn row(&mut self, line: &str, no: usize) -> Result<(), ParseError> {
        let (origin, header_line) = (self.origin, self.header_line);
        let Some(block) = self.blocks.last_mut().filter(|_| self.in_block) else {
            return Ok(());
        };
        let split = |free_text: usize| {
            let fit = Fit { width: block.columns.len(), free_text: Some(free_text), allow_short: false };
            split_fitted(line, fit).map_err(|n| ragged(origin, no, n, fit.width, header_line))
        };
        if block.is_sass_only() {
            let cells = split(1)?;
            if cells[0] != "..." {
                let (address, instruction) = (cells[0].clone(), cells[1].trim().to_string());
                block.sass.push(SassRow { address, instruction, values: cells });
            }
            return Ok(());
        }
        // CUDA rows carry free text in the first "Source" column, SASS rows in the second.
        let cells = split(if line.starts_with("\"\",") { 3 } else { 1 })?;
        if !cells[0].is_empty() {
            let line_no = cells[0].trim().parse::<u32>().map_err(|_| {
                ParseError::new(origin, no, format!("\"Line No\" is \"{}\", not a line number", cells[0]))
            })?;
            let source = cells[1].clone();
            block.lines.push(SourceLine { line_no, source, values: cells, sass: Vec::new(), page_line: no });
            return Ok(());
        }
        if cells[2] == "..." {
            return Ok(());
        }
        let Some(source_line) = block.lines.last_mut() else {
            return Err(ParseError::new(
                origin,
                no,
                format!("a SASS row (address {}) before any CUDA source line of its block", cells[2]),
            ));
        };
        let (address, instruction) = (cells[2].clone(), cells[3].trim().to_string());
        source_line.sass.push(SassRow { address, instruction, values: cells });
        Ok(())
    }
}
