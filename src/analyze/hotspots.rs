//! `source_hotspots.csv`: source lines (and the SASS under them) ranked by warp samples.
//!
//! From ncu's source page (`--page source --print-source cuda,sass`). A kernel's total is
//! the sum over every file block of its function, inlined headers included, so the
//! percentages add up to the kernel. When ncu could not open a source file (NVRTC
//! programs, profiles taken on another machine), the caller's resolver reads the line
//! from the workspace instead. A kernel built without line info has a SASS-only page
//! (`--print-source sass`): its instructions are ranked on their own, with line 0.

use serde::Serialize;

use crate::ncu::parse::{SourceBlock, SourcePage};

/// How to get line info, for a kernel whose source page had none: the usual ways Rust
/// projects compile CUDA, each with its switch.
pub const LINE_INFO_ADVICE: &str = "build the kernel with line info: \
    NVRTC in the program (cudarc's `compile_ptx`): `compile_ptx_with_opts(src, CompileOptions { options: vec![\"--generate-line-info\".into()], ..Default::default() })`, \
    or compile through `kprof-harness`, which always does; \
    nvcc from build.rs: `-lineinfo` (kprof sets `NVCC_APPEND_FLAGS=-lineinfo` for its builds, which reaches every nvcc a build script runs; \
    a build script that skips nvcc when its outputs exist needs `cargo clean -p CRATE --target-dir target/kprof` once); \
    cc-rs (`.cuda(true)`): `.flag(\"-lineinfo\")`, or the same `NVCC_APPEND_FLAGS`";

/// The longest function name a row of `source_hotspots.csv` holds, in bytes: longer ones
/// (no real kernel's; C++ template names run to a few kilobytes) are cut there, saying how
/// many bytes were left out.
pub const LONGEST_FUNCTION: usize = 16 << 10;

/// The text ncu prints when it could not read the source file.
pub const UNABLE_TO_OPEN: &str = "<Unable to open source file>";

/// The file NVRTC names a program it was given no name for: the line info of kernels a
/// framework generates and compiles at run time (burn's CubeCL, seen on an H200 in
/// `fixtures/h200/census/burn-mlp/`) points into it, and it exists nowhere.
pub const NVRTC_DEFAULT_FILE: &str = "default_program";

/// Why some hot lines have no text, when their file is NVRTC's unnamed program: the
/// report's limitation, with how to see the generated source.
pub fn generated_source_note(hotspots: &[Hotspot]) -> Option<String> {
    // ncu writes the name resolved against the program's folder.
    let unnamed =
        |h: &Hotspot| std::path::Path::new(&h.file).file_name().is_some_and(|f| f == NVRTC_DEFAULT_FILE);
    hotspots.iter().any(|h| h.kind == SourceKind::Cuda && unnamed(h)).then(|| {
        format!(
            "Lines in `{NVRTC_DEFAULT_FILE}` are in source the program generated and compiled with NVRTC \
             at run time without a file name, so their text cannot be shown (the SASS beside them is \
             exact; lines of CUDA's own headers keep theirs). To read that source, have the program keep \
             it: burn/CubeCL write each kernel's CUDA to a file with `CUBECL_DEBUG_LOG=FILE` and \
             `CUBECL_DEBUG_OPTION=debug`; a program of your own can name it in `nvrtcCreateProgram`."
        )
    })
}

/// What a hotspot row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// A CUDA source line.
    Cuda,
    /// A SASS instruction under the source line before it.
    Sass,
}

/// One row of the hotspot table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hotspot {
    /// A source line, or an instruction under the line before it.
    pub kind: SourceKind,
    /// The kernel (function) name.
    pub function: String,
    /// The source file.
    pub file: String,
    /// The line number.
    pub line: u32,
    /// The SASS address (`sass` rows).
    pub address: String,
    /// The source text or the instruction.
    pub source: String,
    /// Warp samples.
    pub samples: f64,
    /// Share of the kernel's samples, percent.
    pub pct_of_kernel: f64,
    /// The largest stall reasons, `reason=samples` joined by `; `.
    pub top_stalls: String,
    /// Warp-level instructions executed.
    pub instructions_executed: Option<f64>,
    /// The largest stall reasons as numbers (source-page names, `long_sb`), largest first.
    #[serde(skip)]
    pub stalls: Vec<(String, f64)>,
}

fn number(block: &SourceBlock, values: &[String], names: &[&str]) -> Option<f64> {
    names
        .iter()
        .find_map(|n| block.column(n))
        .and_then(|i| values.get(i))
        .and_then(|v| crate::ncu::parse::parse_number(v))
}

fn top_stalls(block: &SourceBlock, values: &[String], n: usize) -> Vec<(String, f64)> {
    let mut stalls: Vec<(String, f64)> = block
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.starts_with("stall_") && !c.contains("(Not Issued)"))
        .filter_map(|(i, c)| {
            let v = crate::ncu::parse::parse_number(values.get(i)?)?;
            (v > 0.0).then(|| (c.trim_start_matches("stall_").to_string(), v))
        })
        .collect();
    stalls.sort_by(|a, b| b.1.total_cmp(&a.1));
    stalls.truncate(n);
    stalls
}

/// `reason=samples` joined by `; `, as the hotspot table writes stalls.
pub(crate) fn stalls_text(stalls: &[(String, f64)]) -> String {
    stalls.iter().map(|(r, v)| format!("{r}={}", crate::units::value(*v))).collect::<Vec<_>>().join("; ")
}

const SAMPLES: &[&str] = &["# Samples", "Warp Stall Sampling (All Samples)"];
const INSTRUCTIONS: &[&str] = &["Instructions Executed"];

/// Ranks the source lines of every kernel in `page`, hottest first; each line is followed
/// by its SASS instructions, hottest first. `resolve(file, line)` supplies source text ncu
/// could not read.
pub fn hotspots(page: &SourcePage, resolve: &dyn Fn(&str, u32) -> Option<String>) -> Vec<Hotspot> {
    // A window of several launches: one block per function and file, the launches summed.
    ranked(&super::source_launches::merged(page).0, resolve)
}

/// [`hotspots`] of a page whose launches are already summed
/// ([`super::source_launches::merged`]).
pub fn ranked(page: &SourcePage, resolve: &dyn Fn(&str, u32) -> Option<String>) -> Vec<Hotspot> {
    let mut totals: Vec<(String, f64)> = Vec::new();
    for b in &page.blocks {
        let sum: f64 = b.lines.iter().filter_map(|l| number(b, &l.values, SAMPLES)).sum::<f64>()
            + b.sass.iter().filter_map(|r| number(b, &r.values, SAMPLES)).sum::<f64>();
        match totals.iter_mut().find(|(f, _)| *f == b.function_name) {
            Some((_, t)) => *t += sum,
            None => totals.push((b.function_name.clone(), sum)),
        }
    }
    let total_of = |f: &str| totals.iter().find(|(n, _)| n == f).map(|(_, t)| *t).unwrap_or(0.0);
    let mut lines: Vec<(f64, Vec<Hotspot>)> = Vec::new();
    for b in &page.blocks {
        let total = total_of(&b.function_name);
        let pct = |s: f64| if total > 0.0 { 100.0 * s / total } else { 0.0 };
        // No line info: each instruction is ranked on its own.
        for r in &b.sass {
            let row = sass_row(b, r, 0, &pct);
            lines.push((row.samples, vec![row]));
        }
        for l in &b.lines {
            let samples = number(b, &l.values, SAMPLES).unwrap_or(0.0);
            let text = if l.source.trim().is_empty() || l.source.contains(UNABLE_TO_OPEN) {
                resolve(&b.file_path, l.line_no).unwrap_or_else(|| l.source.clone())
            } else {
                l.source.clone()
            };
            let mut rows = vec![Hotspot {
                kind: SourceKind::Cuda,
                function: b.function_name.clone(),
                file: b.file_path.clone(),
                line: l.line_no,
                address: String::new(),
                source: text.trim().to_string(),
                samples,
                pct_of_kernel: pct(samples),
                top_stalls: String::new(),
                instructions_executed: number(b, &l.values, INSTRUCTIONS),
                stalls: top_stalls(b, &l.values, 3),
            }];
            rows[0].top_stalls = stalls_text(&rows[0].stalls);
            let mut sass: Vec<Hotspot> = l
                .sass
                .iter()
                .filter(|s| s.address != "...")
                .map(|s| sass_row(b, s, l.line_no, &pct))
                .collect();
            sass.sort_by(|a, b| b.samples.total_cmp(&a.samples));
            rows.extend(sass);
            lines.push((samples, rows));
        }
    }
    lines.sort_by(|a, b| b.0.total_cmp(&a.0));
    lines.into_iter().flat_map(|(_, rows)| rows).collect()
}

/// One SASS instruction of block `b` as a hotspot row, under source line `line` (0 for a
/// kernel without line info, whose block has no file).
fn sass_row(b: &SourceBlock, s: &crate::ncu::parse::SassRow, line: u32, pct: &dyn Fn(f64) -> f64) -> Hotspot {
    let n = number(b, &s.values, SAMPLES).unwrap_or(0.0);
    let stalls = top_stalls(b, &s.values, 3);
    Hotspot {
        kind: SourceKind::Sass,
        function: b.function_name.clone(),
        file: b.file_path.clone(),
        line,
        address: s.address.clone(),
        source: s.instruction.trim().to_string(),
        samples: n,
        pct_of_kernel: pct(n),
        top_stalls: stalls_text(&stalls),
        instructions_executed: number(b, &s.values, INSTRUCTIONS),
        stalls,
    }
}

/// Writes the table as CSV.
pub fn to_csv(rows: &[Hotspot]) -> Result<String, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        if r.function.len() > LONGEST_FUNCTION {
            // Every row names its function: one name of a megabyte, from a page, would
            // make the file hundreds of megabytes. metrics_summary.json keeps it whole.
            let function = crate::shell::cut(&r.function, LONGEST_FUNCTION);
            w.serialize(Hotspot { function, ..r.clone() })?;
        } else {
            w.serialize(r)?;
        }
    }
    let bytes = w.into_inner().map_err(|e| csv::Error::from(e.into_error()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(kind: SourceKind, file: &str) -> Hotspot {
        Hotspot {
            kind,
            function: "kernel_binop_c_f32_n_4".into(),
            file: file.into(),
            line: 167,
            address: String::new(),
            source: UNABLE_TO_OPEN.into(),
            samples: 1.0,
            pct_of_kernel: 4.0,
            top_stalls: String::new(),
            instructions_executed: None,
            stalls: Vec::new(),
        }
    }

    /// burn's hot lines on the H200: a CUDA line in `default_program` gets the note, a
    /// line in a real file or a SASS row alone does not.
    #[test]
    fn lines_in_nvrtc_s_unnamed_program_are_explained() {
        let note = generated_source_note(&[line(SourceKind::Cuda, "/w/burn/default_program")]).unwrap();
        assert!(note.contains("CUBECL_DEBUG_LOG") && note.contains("nvrtcCreateProgram"), "{note}");
        assert_eq!(
            generated_source_note(&[line(SourceKind::Cuda, "/usr/local/cuda/include/crt/mma.hpp")]),
            None
        );
        assert_eq!(generated_source_note(&[line(SourceKind::Sass, "/w/burn/default_program")]), None);
        assert_eq!(generated_source_note(&[line(SourceKind::Cuda, "/w/burn/default_program.cu")]), None);
    }
}
