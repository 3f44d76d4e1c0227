//! The source view of `report.html`: the hottest lines with their code and stall reasons,
//! then every line of each file in order, shaded by its share of the samples, with the
//! SASS under a hot line behind a `<details>`.
//!
//! The page must stay small for a source page of thousands of lines: each line is one
//! short row, and SASS is kept for the [`SASS_LINES`] hottest lines only, at most
//! [`SASS_PER_LINE`] instructions each (the page says when it cut).

use crate::units::value;

use super::load::HotRow;

/// How many of the hottest lines the hot-line table lists.
pub const HOT_LINES: usize = 10;
/// How many of the hottest lines keep their SASS in the page.
pub const SASS_LINES: usize = 100;
/// How many instructions (hottest first) a line keeps.
pub const SASS_PER_LINE: usize = 48;

/// The source view.
#[derive(Debug, Clone, Default)]
pub struct SourceView {
    /// Why there is nothing to show, or what was cut (empty when nothing).
    pub note: String,
    /// The hottest lines, hottest first.
    pub hot: Vec<HotLine>,
    /// Every line of each file, by function and file.
    pub files: Vec<SourceFile>,
    /// For a kernel without line info: its hottest instructions.
    pub sass_only: Vec<Instruction>,
}

/// One of the hottest lines.
#[derive(Debug, Clone)]
pub struct HotLine {
    /// The anchor of the line in the listing.
    pub anchor: String,
    /// `hgemm.cu:24`.
    pub location: String,
    /// Its share of the kernel's samples.
    pub pct: String,
    /// The share as a bar width, percent of the hottest line.
    pub width: String,
    /// The code.
    pub code: String,
    /// Its stall reasons, largest first (`lg=1409983`).
    pub stalls: Vec<String>,
}

/// A source file of one function.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The function.
    pub function: String,
    /// The file's path as the line info names it.
    pub path: String,
    /// Its lines, in order.
    pub lines: Vec<SourceLine>,
}

/// One line of a file.
#[derive(Debug, Clone)]
pub struct SourceLine {
    /// Its anchor (`L1-24`).
    pub anchor: String,
    /// The line number.
    pub number: u32,
    /// Its share of the samples (empty for none).
    pub pct: String,
    /// Its heat, 0 (no samples) to 5 (the hottest line's).
    pub heat: u8,
    /// The code.
    pub code: String,
    /// Its stall reasons.
    pub stalls: String,
    /// Its instructions, hottest first (empty when cut or none).
    pub sass: Vec<Instruction>,
    /// Instructions left out of `sass`.
    pub sass_cut: usize,
}

/// One SASS instruction.
#[derive(Debug, Clone)]
pub struct Instruction {
    /// Its address.
    pub address: String,
    /// The instruction.
    pub text: String,
    /// Its share of the kernel's samples.
    pub pct: String,
    /// Its stall reasons.
    pub stalls: String,
}

fn instruction(r: &HotRow) -> Instruction {
    Instruction {
        address: r.address.clone(),
        text: super::shown(&r.source),
        pct: if r.samples > 0.0 { format!("{} %", value(r.pct_of_kernel)) } else { String::new() },
        stalls: r.top_stalls.clone(),
    }
}

/// The file name of a path.
fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A line with its instructions, as the hotspots list them.
struct Group<'a> {
    line: &'a HotRow,
    sass: Vec<&'a HotRow>,
}

/// The source view of the hotspot rows (`source_collected`: whether a source page was
/// read; `library`: the closed library whose kernel the profile holds, if it does).
pub fn source_view(rows: &[HotRow], source_collected: bool, library: Option<&str>) -> SourceView {
    if rows.is_empty() {
        let note = if source_collected {
            "The source page held no lines for these kernels."
        } else {
            "No source page was collected (the `source` stage maps samples to lines)."
        };
        return SourceView { note: note.into(), ..SourceView::default() };
    }
    if rows.iter().all(|r| !r.is_line() && r.line == 0) {
        let note = match library {
            Some(lib) => format!(
                "No line info: the kernel is {lib}'s, which ships without it, so the hottest SASS \
                 instructions instead; there is nothing to rebuild."
            ),
            None => "No line info: the hottest SASS instructions instead. Build the kernel with line info \
                     (`-lineinfo`, NVRTC `--generate-line-info`) to see source lines."
                .into(),
        };
        return SourceView {
            note,
            sass_only: rows.iter().take(SASS_LINES).map(instruction).collect(),
            ..SourceView::default()
        };
    }
    let mut groups: Vec<Group> = Vec::new();
    for r in rows {
        if r.is_line() {
            groups.push(Group { line: r, sass: Vec::new() });
        } else if let Some(g) = groups.last_mut() {
            g.sass.push(r);
        }
    }
    let hottest = groups.first().map_or(0.0, |g| g.line.pct_of_kernel);
    let files = files(&groups, hottest);
    let anchor_of = |g: &Group| {
        let function = super::shown(&g.line.function);
        files
            .iter()
            .position(|f| f.function == function && f.path == g.line.file)
            .map(|i| format!("L{}-{}", i + 1, g.line.line))
            .unwrap_or_default()
    };
    let hot = groups
        .iter()
        .filter(|g| g.line.samples > 0.0)
        .take(HOT_LINES)
        .map(|g| HotLine {
            anchor: anchor_of(g),
            location: format!("{}:{}", base_name(&g.line.file), g.line.line),
            pct: format!("{} %", value(g.line.pct_of_kernel)),
            width: super::kernel::width(g.line.pct_of_kernel, hottest),
            code: super::shown(&g.line.source),
            stalls: g.line.top_stalls.split("; ").filter(|s| !s.is_empty()).map(String::from).collect(),
        })
        .collect();
    let sampled = groups.iter().filter(|g| g.line.samples > 0.0).count();
    let note = if sampled > SASS_LINES {
        format!("SASS is kept under the {SASS_LINES} hottest of the {sampled} lines with samples.")
    } else {
        String::new()
    };
    SourceView { note, hot, files, sass_only: Vec::new() }
}

/// Every line by function and file, in line order; the [`SASS_LINES`] hottest keep their
/// instructions.
fn files(groups: &[Group], hottest: f64) -> Vec<SourceFile> {
    let mut files: Vec<SourceFile> = Vec::new();
    for (rank, g) in groups.iter().enumerate() {
        let l = g.line;
        let function = super::shown(&l.function);
        let at = match files.iter().position(|f| f.function == function && f.path == l.file) {
            Some(i) => i,
            None => {
                files.push(SourceFile { function, path: l.file.clone(), lines: Vec::new() });
                files.len() - 1
            }
        };
        let keep = if rank < SASS_LINES && l.samples > 0.0 { SASS_PER_LINE } else { 0 };
        files[at].lines.push(SourceLine {
            anchor: format!("L{}-{}", at + 1, l.line),
            number: l.line,
            pct: if l.samples > 0.0 { format!("{} %", value(l.pct_of_kernel)) } else { String::new() },
            heat: heat(l.pct_of_kernel, hottest),
            code: super::shown(&l.source),
            stalls: l.top_stalls.clone(),
            sass: g.sass.iter().take(keep).map(|r| instruction(r)).collect(),
            sass_cut: if keep > 0 { g.sass.len().saturating_sub(keep) } else { 0 },
        });
    }
    files.sort_by(|a, b| (&a.function, &a.path).cmp(&(&b.function, &b.path)));
    for f in &mut files {
        f.lines.sort_by_key(|l| l.number);
    }
    // The anchors were numbered before sorting: number them again in the final order.
    for (i, f) in files.iter_mut().enumerate() {
        for l in &mut f.lines {
            l.anchor = format!("L{}-{}", i + 1, l.number);
        }
    }
    files
}

/// A line's heat: 0 without samples, else 1 to 5 by its share of the hottest line's.
fn heat(pct: f64, hottest: f64) -> u8 {
    if pct <= 0.0 || hottest <= 0.0 {
        0
    } else {
        (1.0 + 4.0 * (pct / hottest).clamp(0.0, 1.0)).floor().min(5.0) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: &str, line: u32, samples: f64, pct: f64, source: &str) -> HotRow {
        HotRow {
            kind: kind.into(),
            function: "k".into(),
            file: "/src/k.cu".into(),
            line,
            address: if kind == "sass" { format!("0x{line:x}") } else { String::new() },
            source: source.into(),
            samples,
            pct_of_kernel: pct,
            top_stalls: if samples > 0.0 { "long_sb=3; wait=1".into() } else { String::new() },
        }
    }

    #[test]
    fn lines_are_listed_in_order_with_their_sass_and_the_hottest_first() {
        let rows = vec![
            row("cuda", 9, 90.0, 90.0, "a[i] = b[i];"),
            row("sass", 9, 60.0, 60.0, "LDG.E R2, [R4]"),
            row("sass", 9, 30.0, 30.0, "STG.E [R6], R2"),
            row("cuda", 3, 10.0, 10.0, "int i = threadIdx.x;"),
            row("cuda", 5, 0.0, 0.0, "}"),
        ];
        let v = source_view(&rows, true, None);
        assert_eq!(v.hot.len(), 2);
        assert_eq!(v.hot[0].location, "k.cu:9");
        assert_eq!(v.hot[0].anchor, "L1-9");
        let lines = &v.files[0].lines;
        assert_eq!(lines.iter().map(|l| l.number).collect::<Vec<_>>(), [3, 5, 9]);
        assert_eq!(lines[2].sass.len(), 2);
        assert_eq!((lines[2].heat, lines[1].heat, lines[0].heat), (5, 0, 1));
        assert!(v.note.is_empty());
    }

    #[test]
    fn without_line_info_the_instructions_are_shown_and_without_a_page_why() {
        let rows = vec![row("sass", 0, 5.0, 50.0, "FFMA R1, R2, R3, R1")];
        let v = source_view(&rows, true, None);
        assert_eq!(v.sass_only.len(), 1);
        assert!(v.note.contains("No line info"));
        assert!(source_view(&[], false, None).note.contains("No source page"));
    }
}
