//! `--page source --print-source cuda,sass`: per-line and per-instruction samples.

use super::lines::*;
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
            if let Some(name) = key_value(line.trim_end_matches(','), "Kernel Name") {
                // `--print-source sass`: a kernel name row, then an `Address` header.
                function_name = Some(name);
                file_path = None;
                in_block = false;
                continue;
            }
            if line.starts_with("\"Address\",\"Source\"") {
                let columns = split_cells(line);
                let function_name = function_name.take().unwrap_or_default();
                blocks.push(SourceBlock {
                    file_path: String::new(),
                    function_name,
                    columns,
                    ..Default::default()
                });
                header_line = no;
                in_block = true;
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
                blocks.push(SourceBlock { file_path, function_name, columns, ..Default::default() });
                header_line = no;
                in_block = true;
                continue;
            }
            let Some(block) = blocks.last_mut().filter(|_| in_block) else {
                continue; // not part of a block: program output in a stdout capture
            };
            if block.is_sass_only() {
                let fit = Fit { width: block.columns.len(), free_text: Some(1), allow_short: false };
                let cells =
                    split_fitted(line, fit).map_err(|n| ragged(origin, no, n, fit.width, header_line))?;
                if cells[0] != "..." {
                    let (address, instruction) = (cells[0].clone(), cells[1].trim().to_string());
                    block.sass.push(SassRow { address, instruction, values: cells });
                }
                continue;
            }
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
