//! What the tracer keeps of the launches it sees, and the file it writes: plain Rust, no
//! CUPTI, so that it is tested without a GPU and cargo-kprof's reader is tested against it.
//!
//! Memory stays bounded however long the program runs: one entry per distinct kernel name
//! (its launches, their total duration, the first and last launch's index and start, and
//! at most [`MAX_SHAPES`] grid and block shapes), never one per launch.
//!
//! The file (one per process, `<pid>.tsv` in the folder [`OUT_VAR`] names) is text, one
//! record per line, fields separated by tabs (shown as spaces here):
//!
//! ```text
//! kprof-trace 1
//! launches <launches counted>
//! capped <1 when launches after the cap were seen and not counted, else 0>
//! span <first start ns> <last end ns>                (only when a launch was counted)
//! error <why the trace is incomplete or empty>       (zero or more)
//! kernel <launches> <total ns> <first index> <last index> <first start ns> <last start ns> <grids> <blocks> <name>
//! ```
//!
//! Shapes are written as ncu prints them, `(256, 256, 1)`, several joined by `;`. The name
//! is the name CUPTI gives (mangled for C++ kernels), last so that nothing after it has to
//! be found; a tab, a newline or a backslash in it is escaped (`\t`, `\n`, `\\`). Indexes
//! count launches from 0 in the order CUPTI delivers their records, which is launch order
//! on one stream. Times are the GPU's timestamps, ns.

use std::collections::HashMap;
use std::io::{self, Write};

/// The variable that names the folder the tracer writes its file into; without it the
/// tracer does nothing. (`kprof_contract::tracer::OUT`, spelled here as well because this
/// crate has no dependency; a test of cargo-kprof holds the two equal.)
pub const OUT_VAR: &str = "KPROF_TRACE_OUT";
/// The variable that names the CUPTI library to open (else `libcupti.so`, as the loader
/// finds it).
pub const CUPTI_VAR: &str = "KPROF_CUPTI";
/// The variable that caps the launches counted (`--census-launches`); unset: every launch.
pub const LAUNCHES_VAR: &str = "KPROF_TRACE_LAUNCHES";
/// The first line of every trace file: the format and its version.
pub const HEADER: &str = "kprof-trace\t1";
/// The most distinct grid (and block) shapes kept per kernel.
pub const MAX_SHAPES: usize = 8;

/// One launch, as the tracer reads it from a CUPTI record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch<'a> {
    /// The kernel's name, as CUPTI gives it.
    pub name: &'a [u8],
    /// GPU start timestamp, ns.
    pub start: u64,
    /// GPU end timestamp, ns.
    pub end: u64,
    /// Grid size.
    pub grid: [i32; 3],
    /// Block size.
    pub block: [i32; 3],
}

/// One kernel's launches, summed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kernel {
    /// Launches counted.
    pub launches: u64,
    /// Their total duration (end - start), ns.
    pub total_ns: u64,
    /// The index of its first launch among all launches counted.
    pub first_index: u64,
    /// The index of its last.
    pub last_index: u64,
    /// Its first launch's start, ns.
    pub first_start: u64,
    /// Its last launch's start, ns.
    pub last_start: u64,
    /// Grid shapes, each once, in the order seen, at most [`MAX_SHAPES`].
    pub grids: Vec<[i32; 3]>,
    /// Block shapes, the same way.
    pub blocks: Vec<[i32; 3]>,
}

/// Every launch seen by one process, summed per kernel name.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    kernels: HashMap<Box<[u8]>, Kernel>,
    /// Launches counted.
    pub launches: u64,
    /// The most launches counted, if capped.
    pub cap: Option<u64>,
    /// Whether launches past the cap were seen (and not counted).
    pub capped: bool,
    /// The first start and the last end of the launches counted, ns.
    pub span: Option<(u64, u64)>,
    /// Why the trace is incomplete or empty, in words.
    pub errors: Vec<String>,
}

impl Tally {
    /// An empty tally counting at most `cap` launches.
    pub fn new(cap: Option<u64>) -> Tally {
        Tally { cap, ..Tally::default() }
    }

    /// Counts one launch (or, past the cap, notes that it was not counted).
    pub fn add(&mut self, l: &Launch<'_>) {
        if self.cap.is_some_and(|c| self.launches >= c) {
            self.capped = true;
            return;
        }
        let index = self.launches;
        self.launches += 1;
        let span = self.span.get_or_insert((l.start, l.end));
        *span = (span.0.min(l.start), span.1.max(l.end));
        let k = match self.kernels.get_mut(l.name) {
            Some(k) => k,
            None => self.kernels.entry(l.name.into()).or_insert(Kernel {
                first_index: index,
                first_start: l.start,
                last_start: l.start,
                ..Kernel::default()
            }),
        };
        k.launches += 1;
        k.total_ns += l.end.saturating_sub(l.start);
        k.last_index = index;
        k.first_start = k.first_start.min(l.start);
        k.last_start = k.last_start.max(l.start);
        for (seen, shape) in [(&mut k.grids, l.grid), (&mut k.blocks, l.block)] {
            if seen.len() < MAX_SHAPES && !seen.contains(&shape) {
                seen.push(shape);
            }
        }
    }

    /// The kernels counted, by name, in name order.
    pub fn kernels(&self) -> Vec<(&[u8], &Kernel)> {
        let mut out: Vec<(&[u8], &Kernel)> = self.kernels.iter().map(|(n, k)| (&**n, k)).collect();
        out.sort_by(|a, b| a.0.cmp(b.0));
        out
    }

    /// Writes the trace file's text (see the module's documentation).
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        writeln!(out, "{HEADER}")?;
        writeln!(out, "launches\t{}", self.launches)?;
        writeln!(out, "capped\t{}", u8::from(self.capped))?;
        if let Some((start, end)) = self.span {
            writeln!(out, "span\t{start}\t{end}")?;
        }
        for e in &self.errors {
            writeln!(out, "error\t{}", escape(e.as_bytes()))?;
        }
        for (name, k) in self.kernels() {
            writeln!(
                out,
                "kernel\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                k.launches,
                k.total_ns,
                k.first_index,
                k.last_index,
                k.first_start,
                k.last_start,
                shapes(&k.grids),
                shapes(&k.blocks),
                escape(name)
            )?;
        }
        Ok(())
    }
}

/// Shapes as ncu prints them, joined by `;`: `(256, 256, 1);(128, 1, 1)`.
pub fn shapes(s: &[[i32; 3]]) -> String {
    s.iter().map(|[x, y, z]| format!("({x}, {y}, {z})")).collect::<Vec<_>>().join(";")
}

/// `name` as one field: a tab, newline, carriage return or backslash escaped; bytes that
/// are not UTF-8 replaced.
pub fn escape(name: &[u8]) -> String {
    let text = String::from_utf8_lossy(name);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(name: &str, start: u64, ns: u64, grid: i32) -> Launch<'_> {
        Launch { name: name.as_bytes(), start, end: start + ns, grid: [grid, 1, 1], block: [128, 1, 1] }
    }

    #[test]
    fn launches_are_summed_per_name_with_their_first_and_last() {
        let mut t = Tally::new(None);
        t.add(&launch("b", 100, 10, 1));
        t.add(&launch("a", 200, 5, 2));
        t.add(&launch("b", 300, 30, 4));
        assert_eq!(t.launches, 3);
        assert_eq!(t.span, Some((100, 330)));
        let ks = t.kernels();
        assert_eq!(ks.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [b"a".as_slice(), b"b"]);
        let b = ks[1].1;
        assert_eq!((b.launches, b.total_ns, b.first_index, b.last_index), (2, 40, 0, 2));
        assert_eq!((b.first_start, b.last_start), (100, 300));
        assert_eq!(b.grids, [[1, 1, 1], [4, 1, 1]]);
        assert_eq!(b.blocks, [[128, 1, 1]]);
    }

    #[test]
    fn shapes_are_kept_up_to_the_bound() {
        let mut t = Tally::new(None);
        for g in 0..20 {
            t.add(&launch("k", g as u64, 1, g));
        }
        assert_eq!(t.kernels()[0].1.grids.len(), MAX_SHAPES);
    }

    #[test]
    fn the_cap_counts_the_first_launches_and_says_it_stopped() {
        let mut t = Tally::new(Some(2));
        for s in 0..3 {
            t.add(&launch("k", s * 10, 1, 1));
        }
        assert_eq!((t.launches, t.capped), (2, true));
        let mut exact = Tally::new(Some(3));
        for s in 0..3 {
            exact.add(&launch("k", s * 10, 1, 1));
        }
        assert_eq!((exact.launches, exact.capped), (3, false));
    }

    #[test]
    fn the_file_has_a_header_a_line_per_kernel_and_escaped_names() {
        let mut t = Tally::new(None);
        t.add(&launch("_Z1fv", 0, 7, 2));
        t.add(&launch("odd\tname\\", 10, 3, 1));
        t.errors.push("one\nline".into());
        let mut out = Vec::new();
        t.write(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], HEADER);
        assert_eq!(lines[1..4], ["launches\t2", "capped\t0", "span\t0\t13"]);
        assert_eq!(lines[4], "error\tone\\nline");
        assert_eq!(lines[5], "kernel\t1\t7\t0\t0\t0\t0\t(2, 1, 1)\t(128, 1, 1)\t_Z1fv");
        assert!(lines[6].ends_with("\todd\\tname\\\\"), "{}", lines[6]);
        assert_eq!(lines.len(), 7);
    }
}
