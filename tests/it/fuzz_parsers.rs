//! A bounded mutation fuzzer over every recorded ncu page, run by `cargo test` on stable:
//! what the nightly-only cargo-fuzz target (`fuzz/`) does, within a CI budget.
//!
//! Each case takes one recording under `fixtures/h200` (raw, details and source pages,
//! stdout captures, ncu logs) and damages it the ways files get damaged: bytes flipped,
//! inserted or cut, a truncated tail, lines dropped, doubled, swapped or borrowed from
//! another recording, one CSV cell replaced by a hostile value (an open quote, a bare
//! `","`, a number that overflows, NUL, a BOM, 4 KB of digits). Every page parser then
//! reads it. None may panic, and every error must name its origin (`<file>:<line>: ...`,
//! the line inside the input).
//!
//! The run is deterministic: a fixed seed and a fixed number of cases
//! ([`DEFAULT_CASES`]; `KPROF_FUZZ_CASES=N` for more), cut short after
//! [`DEFAULT_SECONDS`] of wall time (`KPROF_FUZZ_SECONDS`) so a slow machine stays within
//! the CI budget, but never before [`MIN_CASES`] ran; it prints how many cases ran. A
//! failure is shrunk by proptest and printed with the recording and the mutations that
//! broke it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cargo_kprof::ncu::parse::{
    parse_number, scan_log, DetailsPage, ParseError, RawPage, SourcePage, SourceText,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

use crate::support::recordings;

/// Cases per `cargo test` run (about 15 s in a debug build on one core).
const DEFAULT_CASES: u32 = 5000;
/// Wall-time cap of one run, seconds.
const DEFAULT_SECONDS: u64 = 25;
/// Cases that run whatever the wall time: a run that checks fewer fails.
const MIN_CASES: u32 = 500;
/// The seed: the same cases on every machine.
const SEED: [u8; 32] = *b"cargo-kprof fuzz the ncu pages!!";

/// Values a damaged or hostile CSV cell may hold.
const HOSTILE: [&str; 18] = [
    "\"",
    "\",\"",
    "\"\"",
    ",",
    "",
    "\r",
    "\0",
    "\u{feff}",
    "é漢🦀",
    "1e309",
    "-1",
    "nan",
    "inf",
    "18446744073709551616",
    "1,2,3,,4",
    "==PROF== ",
    "==ERROR== ",
    "==WARNING== No kernels were profiled.",
];

/// Every recorded page of the repository (CSV exports, logs, stdout captures), relative
/// to `fixtures/h200`, sorted so that indexes mean the same everywhere.
fn recorded_pages() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "csv" || x == "log" || x == "txt") {
                out.push(p);
            }
        }
    }
    let root = recordings();
    let mut paths = Vec::new();
    walk(&root, &mut paths);
    paths.sort();
    let pages: Vec<(String, String)> = paths
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            // Pages only: a CSV line, or ncu's own `==` lines.
            (text.contains("\",\"") || text.contains("==PROF==") || text.contains("==WARNING=="))
                .then(|| (p.strip_prefix(&root).unwrap().to_string_lossy().into_owned(), text))
        })
        .collect();
    assert!(pages.len() > 100, "only {} recorded pages under {}", pages.len(), root.display());
    pages
}

#[derive(Debug, Clone)]
enum Mutation {
    FlipByte(usize, u8),
    InsertHostile(usize, usize),
    CutRange(usize, u16),
    Truncate(usize),
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    /// A line of another recording, inserted before line `.2`.
    BorrowLine(usize, usize, usize),
    /// Cell `.1` of line `.0` replaced by hostile value `.2`.
    ReplaceCell(usize, usize, usize),
    /// A cell of 4 KB of digits.
    HugeCell(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = any::<usize>();
    prop_oneof![
        (at, 1u8..).prop_map(|(a, x)| Mutation::FlipByte(a, x)),
        (at, 0..HOSTILE.len()).prop_map(|(a, h)| Mutation::InsertHostile(a, h)),
        (at, any::<u16>()).prop_map(|(a, n)| Mutation::CutRange(a, n % 512)),
        at.prop_map(Mutation::Truncate),
        at.prop_map(Mutation::DeleteLine),
        at.prop_map(Mutation::DuplicateLine),
        (at, at).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        (at, at, at).prop_map(|(f, l, a)| Mutation::BorrowLine(f, l, a)),
        (at, at, 0..HOSTILE.len()).prop_map(|(l, c, h)| Mutation::ReplaceCell(l, c, h)),
        (at, at).prop_map(|(l, c)| Mutation::HugeCell(l, c)),
    ]
}

/// Line spans of `text`, each with its `\n`.
fn line_spans(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            spans.push(start..i + 1);
            start = i + 1;
        }
    }
    spans.push(start..bytes.len());
    spans
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation, pages: &[(String, String)]) {
    let len = bytes.len();
    let spans = line_spans(bytes);
    let line = |i: usize| spans[i % spans.len()].clone();
    let replace_cell = |bytes: &mut Vec<u8>, l: usize, c: usize, value: &[u8]| {
        let span = line(l);
        let text = &bytes[span.clone()];
        // Cells as ncu writes them: `"a","b",...`; the separators are the `","`s.
        let seps: Vec<usize> =
            text.windows(3).enumerate().filter(|(_, w)| w == b"\",\"").map(|(i, _)| i + 1).collect();
        if seps.is_empty() {
            return;
        }
        let k = c % seps.len();
        let from = span.start + seps[k] + 2;
        let to = seps.get(k + 1).map_or(from, |&s| span.start + s - 1).max(from);
        bytes.splice(from..to, value.iter().copied());
    };
    match *m {
        Mutation::FlipByte(at, x) if len > 0 => bytes[at % len] ^= x,
        Mutation::FlipByte(..) => {}
        Mutation::InsertHostile(at, h) => {
            let at = at % (len + 1);
            bytes.splice(at..at, HOSTILE[h].bytes());
        }
        Mutation::CutRange(at, n) => {
            let at = at % (len + 1);
            bytes.drain(at..(at + n as usize).min(len));
        }
        Mutation::Truncate(at) => bytes.truncate(at % (len + 1)),
        Mutation::DeleteLine(i) => {
            bytes.drain(line(i));
        }
        Mutation::DuplicateLine(i) => {
            let span = line(i);
            let copy = bytes[span.clone()].to_vec();
            bytes.splice(span.start..span.start, copy);
        }
        Mutation::SwapLines(a, b) => {
            let (a, b) = (line(a), line(b));
            let (first, second) = if a.start <= b.start { (a, b) } else { (b, a) };
            if first.end <= second.start {
                let (x, y) = (bytes[first.clone()].to_vec(), bytes[second.clone()].to_vec());
                bytes.splice(second, x);
                bytes.splice(first, y);
            }
        }
        Mutation::BorrowLine(f, l, at) => {
            let other = pages[f % pages.len()].1.as_bytes();
            let spans = line_spans(other);
            let mut borrowed = other[spans[l % spans.len()].clone()].to_vec();
            if !borrowed.ends_with(b"\n") {
                borrowed.push(b'\n');
            }
            let at = line(at).start;
            bytes.splice(at..at, borrowed);
        }
        Mutation::ReplaceCell(l, c, h) => replace_cell(bytes, l, c, HOSTILE[h].as_bytes()),
        Mutation::HugeCell(l, c) => replace_cell(bytes, l, c, "9".repeat(4096).as_bytes()),
    }
}

/// Every parser on `text`; an error must point into `text` and name `origin`.
fn parse_everything(text: &str, origin: &str) -> Result<(), TestCaseError> {
    let lines = text.split('\n').count();
    let check = |err: ParseError| -> Result<(), TestCaseError> {
        prop_assert_eq!(&err.origin, origin);
        prop_assert!((1..=lines).contains(&err.line), "line {} of {}: {}", err.line, lines, err);
        let shown = err.to_string();
        prop_assert!(shown.starts_with(&format!("{origin}:{}: ", err.line)), "{}", shown);
        Ok(())
    };
    let _ = scan_log(text);
    match RawPage::parse(text, origin) {
        Ok(page) => {
            for launch in page.launches() {
                let _ = (launch.kernel_name(), launch.id(), launch.number("gpu__time_duration.sum"));
            }
        }
        Err(e) => check(e)?,
    }
    match DetailsPage::parse(text, origin) {
        Ok(page) => {
            for rule in page.rules() {
                let _ = parse_number(&rule.metric_value);
            }
        }
        Err(e) => check(e)?,
    }
    if let Err(e) = SourcePage::parse(text, origin) {
        check(e)?;
    }
    // Cutting a source page keeps every byte, each line in at most one block.
    let cut = SourceText::cut(text);
    let whole: String = cut.lines.iter().map(|(l, _)| *l).collect();
    if whole != text || cut.lines.iter().any(|(_, b)| b.is_some_and(|b| b >= cut.functions.len())) {
        return Err(TestCaseError::fail("SourceText::cut lost or misplaced a line"));
    }
    for cell in text.split("\",\"").take(64) {
        let _ = parse_number(cell);
    }
    Ok(())
}

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn damaged_recordings_never_panic_and_errors_name_their_origin() {
    let pages = recorded_pages();
    let cases: u32 = env_number("KPROF_FUZZ_CASES", DEFAULT_CASES);
    let budget = Duration::from_secs(env_number("KPROF_FUZZ_SECONDS", DEFAULT_SECONDS));
    let config = Config { cases, failure_persistence: None, max_shrink_iters: 2000, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &SEED));
    let started = Instant::now();
    let ran = std::cell::Cell::new(0u32);
    let strategy = (0..pages.len(), prop::collection::vec(mutation(), 1..6));
    let result = runner.run(&strategy, |(which, mutations)| {
        // Over the budget, past the minimum: the remaining cases pass without running.
        if started.elapsed() > budget && ran.get() >= MIN_CASES {
            return Ok(());
        }
        ran.set(ran.get() + 1);
        let (name, text) = &pages[which];
        let mut bytes = text.clone().into_bytes();
        for m in &mutations {
            apply(&mut bytes, m, &pages);
        }
        parse_everything(&String::from_utf8_lossy(&bytes), &format!("{name} (damaged)"))
            .map_err(|e| TestCaseError::fail(format!("{name}, damaged: {e}")))
    });
    eprintln!(
        "fuzz_parsers: {} of {cases} cases over {} recordings in {:.1} s (KPROF_FUZZ_CASES / KPROF_FUZZ_SECONDS raise them)",
        ran.get(),
        pages.len(),
        started.elapsed().as_secs_f64()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(ran.get() >= MIN_CASES.min(cases), "only {} damaged pages were parsed", ran.get());
}

/// The recordings themselves, undamaged: errors (a log is not a raw page) name their
/// origin as well.
#[test]
fn undamaged_recordings_parse_or_name_their_origin() {
    for (name, text) in recorded_pages() {
        if let Err(e) = parse_everything(&text, &name) {
            panic!("{name}: {e}");
        }
    }
}
