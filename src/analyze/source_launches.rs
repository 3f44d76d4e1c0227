//! A source page of a window of several launches holds one block per launch of each
//! kernel's file (ncu prints the page per profiled launch). The hot lines are a kernel's,
//! not a launch's: the blocks of one function and file are summed into one, line by line
//! and instruction by instruction, and the number of launches summed is kept to be said.
//!
//! A page printed SASS only (`--print-source sass`, a kernel without line info) holds
//! each launch's block twice, back to back and identical (seen on an H200 with ncu
//! 2025.3.1 for a cuBLAS kernel: 6 blocks for 3 launches): the second copy is not a launch
//! and is skipped.

use crate::ncu::parse::{parse_number, SassRow, SourceBlock, SourceLine, SourcePage};

/// Columns that identify a row rather than measure it: never summed.
const KEYS: [&str; 3] = ["Line No", "Address", "Source"];

/// The page with each function's blocks of one file summed into one, and how many
/// launches of each function it summed (1 for a function profiled once), in page order.
pub fn merged(page: &SourcePage) -> (SourcePage, Vec<(String, usize)>) {
    let mut blocks: Vec<SourceBlock> = Vec::new();
    let mut seen: Vec<((String, String), usize)> = Vec::new();
    let mut previous: Option<&SourceBlock> = None;
    for b in &page.blocks {
        let repeated = b.lines.is_empty() && previous == Some(b);
        previous = Some(b);
        if repeated {
            continue;
        }
        let key = (b.function_name.clone(), b.file_path.clone());
        match blocks.iter_mut().find(|m| {
            m.function_name == b.function_name && m.file_path == b.file_path && m.columns == b.columns
        }) {
            Some(m) => add_block(m, b),
            None => blocks.push(b.clone()),
        }
        match seen.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => seen.push((key, 1)),
        }
    }
    let mut launches: Vec<(String, usize)> = Vec::new();
    for ((function, _), n) in seen {
        match launches.iter_mut().find(|(f, _)| *f == function) {
            Some((_, m)) => *m = (*m).max(n),
            None => launches.push((function, n)),
        }
    }
    (SourcePage { blocks }, launches)
}

/// Adds `b`'s numbers into `into` (same function, file and columns).
fn add_block(into: &mut SourceBlock, b: &SourceBlock) {
    let measured: Vec<bool> = into.columns.iter().map(|c| !KEYS.contains(&c.as_str())).collect();
    for l in &b.lines {
        match into.lines.iter_mut().find(|m| m.line_no == l.line_no) {
            Some(m) => add_line(m, l, &measured),
            None => into.lines.push(l.clone()),
        }
    }
    add_rows(&mut into.sass, &b.sass, &measured);
}

fn add_line(into: &mut SourceLine, l: &SourceLine, measured: &[bool]) {
    add_values(&mut into.values, &l.values, measured);
    add_rows(&mut into.sass, &l.sass, measured);
}

/// Each row of `rows` added to the row of `into` with the same address and instruction
/// (appended when none). ncu can list one instruction twice under a line (an inlined
/// call's code under each of its lines): the k-th listing adds to the k-th.
fn add_rows(into: &mut Vec<SassRow>, rows: &[SassRow], measured: &[bool]) {
    let same = |a: &SassRow, b: &SassRow| a.address == b.address && a.instruction == b.instruction;
    for (i, r) in rows.iter().enumerate() {
        let k = rows[..i].iter().filter(|p| same(p, r)).count();
        match into.iter_mut().filter(|m| same(m, r)).nth(k) {
            Some(m) => add_values(&mut m.values, &r.values, measured),
            None => into.push(r.clone()),
        }
    }
}

/// Sums the measured cells that are numbers on both sides; other cells keep `into`'s.
fn add_values(into: &mut [String], values: &[String], measured: &[bool]) {
    for (i, cell) in into.iter_mut().enumerate() {
        if !measured.get(i).copied().unwrap_or(false) {
            continue;
        }
        if let (Some(a), Some(b)) = (parse_number(cell), values.get(i).and_then(|v| parse_number(v))) {
            *cell = format!("{}", a + b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(function: &str, samples: &str) -> SourceBlock {
        let columns = ["Line No", "Source", "Address", "Source", "# Samples"].map(String::from).to_vec();
        let sass = SassRow {
            address: "0x10".into(),
            instruction: "FFMA R1, R2, R3, R4".into(),
            values: ["", "", "0x10", "FFMA R1, R2, R3, R4", samples].map(String::from).to_vec(),
        };
        SourceBlock {
            file_path: "/k.cu".into(),
            function_name: function.into(),
            columns,
            lines: vec![SourceLine {
                line_no: 7,
                source: "a = b * c + a;".into(),
                values: ["7", "a = b * c + a;", "", "", samples].map(String::from).to_vec(),
                sass: vec![sass],
                page_line: 1,
            }],
            sass: Vec::new(),
        }
    }

    /// Blocks built here (not read from ncu): three launches of `k` and one of `j`.
    #[test]
    fn launches_of_one_kernel_sum_into_one_block_per_file() {
        let page = SourcePage {
            blocks: vec![block("k", "10"), block("j", "5"), block("k", "20"), block("k", "30")],
        };
        let (m, launches) = merged(&page);
        assert_eq!(m.blocks.len(), 2);
        assert_eq!(launches, vec![("k".to_string(), 3), ("j".to_string(), 1)]);
        let k = &m.blocks[0];
        assert_eq!(k.lines.len(), 1);
        assert_eq!(k.lines[0].values[0], "7", "the line number is not summed");
        assert_eq!(k.lines[0].values[4], "60");
        assert_eq!(k.lines[0].sass.len(), 1);
        assert_eq!(k.lines[0].sass[0].values[4], "60");
        assert_eq!(m.blocks[1].lines[0].values[4], "5");
    }

    /// One instruction listed twice under a line, as ncu printed `softmax_f32`'s
    /// `FMNMX` under `reduce.cu:319` on an H200: each listing sums with its own.
    #[test]
    fn an_instruction_listed_twice_sums_listing_by_listing() {
        let twice = |samples: [&str; 2]| {
            let mut b = block("k", samples[0]);
            let mut again = b.lines[0].sass[0].clone();
            again.values[4] = samples[1].into();
            b.lines[0].sass.push(again);
            b
        };
        let page = SourcePage { blocks: vec![twice(["10", "1"]), twice(["20", "2"])] };
        let (m, _) = merged(&page);
        let sass = &m.blocks[0].lines[0].sass;
        assert_eq!(sass.len(), 2);
        assert_eq!((sass[0].values[4].as_str(), sass[1].values[4].as_str()), ("30", "3"));
    }

    /// A SASS-only page repeats each launch's block; only launches are summed.
    #[test]
    fn a_sass_only_block_printed_twice_counts_once() {
        let sass_only = |samples: &str| {
            let mut b = block("k", samples);
            b.file_path.clear();
            b.sass = b.lines.remove(0).sass;
            b
        };
        let page =
            SourcePage { blocks: vec![sass_only("10"), sass_only("10"), sass_only("20"), sass_only("20")] };
        let (m, launches) = merged(&page);
        assert_eq!(launches, vec![("k".to_string(), 2)]);
        assert_eq!(m.blocks[0].sass[0].values[4], "30");
    }
}
