//! The page parsers on real ncu recordings (`fixtures/h200`), and property tests: no input,
//! arbitrary or a damaged recording, makes a parser panic.
//!
//! Expected values were read off the recordings with a text editor, not computed by the code
//! under test. Derived inputs (a recording with lines inserted or damaged) are built in the
//! tests themselves; the fixture files stay byte for byte as ncu wrote them.

use std::path::{Path, PathBuf};

use cargo_kprof::ncu::parse::{parse_number, scan_log, DetailsPage, ParseErrorKind, RawPage, SourcePage};
use proptest::prelude::*;

fn fixtures() -> PathBuf {
    crate::support::recordings()
}

fn read(rel: &str) -> String {
    let path = fixtures().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn all_fixtures() -> Vec<PathBuf> {
    let mut files = Vec::new();
    files_under(&fixtures(), &mut files);
    files.sort();
    files
}

fn name(path: &Path) -> &str {
    path.file_name().and_then(|n| n.to_str()).unwrap()
}

/// Every raw page recorded: `--set full` pages, the stages' `0N_*_raw.csv` (not the source
/// stage, whose file is a source page), and the two misc recordings. `metrics_raw.csv` is
/// kprof's own merge of a profile's stages, not an ncu page; the no-match recording has none.
fn raw_page_files() -> Vec<PathBuf> {
    all_fixtures()
        .into_iter()
        .filter(|p| {
            let n = name(p);
            (n.ends_with("_raw.csv") && !n.contains("source") && n != "metrics_raw.csv")
                // A miss: ncu's log without a page (its parse error is tested on its own).
                && !p.to_string_lossy().contains("/nomatch/")
                || n == "discovery_hgemm.csv"
                || n == "stdout_capture.txt"
        })
        .collect()
}

fn source_page_files() -> Vec<PathBuf> {
    all_fixtures()
        .into_iter()
        .filter(|p| {
            let n = name(p);
            n.ends_with("_source.csv") || n.ends_with("_source_raw.csv")
        })
        .collect()
}

fn details_page_files() -> Vec<PathBuf> {
    all_fixtures().into_iter().filter(|p| name(p).ends_with("_details.csv")).collect()
}

fn parse_raw(rel: &str) -> RawPage {
    RawPage::parse(&read(rel), rel).unwrap_or_else(|e| panic!("{e}"))
}

// ---------------------------------------------------------------------------------------
// raw pages
// ---------------------------------------------------------------------------------------

#[test]
fn every_recorded_raw_page_parses_with_aligned_columns_and_units() {
    let files = raw_page_files();
    // At least: 7 `--set full` demo pages, 6 raw stages x 7 demo kernels, discovery and the
    // stdout capture (more recordings may be added; each must parse).
    assert!(files.len() >= 7 + 42 + 2, "{files:?}");
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let origin = path.display().to_string();
        if text.contains("==WARNING== No kernels were profiled.") {
            // A stage whose filter matched nothing (a run that ended with exit 6): no page,
            // and the parser says why.
            let err = RawPage::parse(&text, &origin).unwrap_err();
            assert!(err.to_string().contains("no kernel was profiled"), "{err}");
            continue;
        }
        let page = RawPage::parse(&text, &origin).unwrap_or_else(|e| panic!("{e}"));
        // The header's width counted independently: ncu separates quoted cells by `","`.
        let header = text.lines().find(|l| l.starts_with("\"ID\",")).unwrap();
        let width = header.matches("\",\"").count() + 1;
        assert_eq!(page.columns.len(), width, "{origin}");
        assert_eq!(page.units.len(), width, "{origin}");
        assert!(page.rows.iter().all(|r| r.len() == width), "{origin}");
        assert_eq!(page.columns[..4], ["ID", "Process ID", "Process Name", "Host Name"], "{origin}");
        // Fifth, after the NVTX ranges' columns when the run filtered on one (`--nvtx-include`).
        let kernel_at = page.columns.iter().position(|c| c == "Kernel Name").unwrap();
        assert!(page.columns[4..kernel_at].iter().all(|c| c.contains("Domain:")), "{origin}");
        assert_eq!(page.row_lines.len(), page.rows.len());
        let data_rows = text.lines().filter(|l| l.starts_with("\"") && !l.starts_with("\"\"")).count() - 1;
        assert_eq!(page.rows.len(), data_rows, "{origin}");
        let expected_width = match name(&path) {
            n if n.ends_with("_full_raw.csv") => 2238,
            // Basic gained `l1tex__throughput.avg.pct_of_peak_sustained_elapsed` (and its
            // .max/.min/.sum) for the runs recorded from 2026-11-30 on.
            n if n.starts_with("01_basic") && origin.contains("_20261129_") => 301,
            // Basic's run that also collected the SourceCounters section, as ncu printed it.
            n if n.starts_with("01_basic") && origin.contains("source-import/with-report") => 422,
            n if n.starts_with("01_basic") => 305,
            n if n.starts_with("02_speed_of_light") => 559,
            "discovery_hgemm.csv" | "stdout_capture.txt" => 265,
            _ => width,
        };
        assert_eq!(width, expected_width, "{origin}");
        for launch in page.launches() {
            assert!(!launch.kernel_name().is_empty(), "{origin}");
            assert!(launch.number("gpu__time_duration.sum").is_some_and(|t| t > 0.0), "{origin}");
        }
    }
}

#[test]
fn copy_full_page_values_and_units() {
    let page = parse_raw("demo-full/copy_full_raw.csv");
    assert_eq!(page.columns.len(), 2238);
    assert_eq!(page.rows.len(), 1);
    let copy = page.launches().next().unwrap();
    assert_eq!(copy.id(), "0");
    assert_eq!(copy.kernel_name(), "copy_kernel");
    assert_eq!(copy.line(), 3);
    // In this page ncu scaled the duration to microseconds: "532.640000" us.
    assert_eq!(copy.get("gpu__time_duration.sum"), Some("532.640000"));
    assert_eq!(copy.unit("gpu__time_duration.sum"), Some("us"));
    assert_eq!(copy.number("gpu__time_duration.sum"), Some(532.64));
    // Thousands separators: "1,056" blocks.
    assert_eq!(copy.get("launch__grid_size"), Some("1,056"));
    assert_eq!(copy.number("launch__grid_size"), Some(1056.0));
    // Text values are not numbers.
    assert_eq!(copy.get("Block Size"), Some("(256, 1, 1)"));
    assert_eq!(copy.number("Block Size"), None);
    assert_eq!(copy.number("Device Name"), None);
    let col = page.column("gpu__time_duration.sum").unwrap();
    assert_eq!(copy.cell(col), Some("532.640000"));
}

#[test]
fn copy_basic_stage_duration_has_thousands_separators() {
    let page = parse_raw("demo-stages/copy_20261129_213211/details/01_basic_raw.csv");
    let copy = page.launches().next().unwrap();
    assert_eq!(page.header_line, 4, "after three ==WARNING==/==PROF== lines");
    assert_eq!(copy.get("gpu__time_duration.sum"), Some("532,448"));
    assert_eq!(copy.unit("gpu__time_duration.sum"), Some("ns"));
    assert_eq!(copy.number("gpu__time_duration.sum"), Some(532_448.0));
}

#[test]
fn percentages_above_one_hundred() {
    let page = parse_raw("demo-full/tiny_full_raw.csv");
    let tiny = page.launches().next().unwrap();
    assert_eq!(tiny.unit("l1tex__throughput.max.pct_of_peak_sustained_active"), Some("%"));
    assert_eq!(tiny.number("l1tex__throughput.max.pct_of_peak_sustained_active"), Some(381.130235));
}

#[test]
fn discovery_has_four_launches_of_two_kernels() {
    let page = parse_raw("misc/discovery_hgemm.csv");
    let launches: Vec<_> = page
        .launches()
        .map(|l| (l.id(), l.kernel_name(), l.number("gpu__time_duration.sum").unwrap()))
        .collect();
    assert_eq!(
        launches,
        vec![
            ("0", "hgemm_naive", 30_266_336.0),
            ("1", "hgemm_naive", 30_223_168.0),
            ("2", "hgemm_tiled", 15_240_480.0),
            ("3", "hgemm_tiled", 15_178_912.0),
        ]
    );
    assert_eq!(page.kernel_names(), vec!["hgemm_naive", "hgemm_tiled"]);
}

#[test]
fn stdout_capture_yields_its_launches() {
    let text = read("misc/stdout_capture.txt");
    let page = RawPage::parse(&text, "stdout_capture.txt").unwrap();
    assert_eq!(page.header_line, 5);
    assert_eq!(page.row_lines, vec![7, 8]);
    let durations: Vec<_> = page.launches().map(|l| l.number("gpu__time_duration.sum").unwrap()).collect();
    assert_eq!(durations, vec![532_128.0, 530_208.0]);
    assert!(page.launches().all(|l| l.kernel_name() == "copy_kernel"));

    // The same capture with the program and ncu writing between the CSV rows (a derived
    // input): the rows are still found, at their new lines.
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(7, "kprof: case copy/bytes=1073741824 done, 2 launch(es)");
    lines.insert(6, "==PROF== Disconnected from process 5425");
    lines.insert(6, "");
    let page = RawPage::parse(&lines.join("\n"), "interleaved").unwrap();
    assert_eq!(page.row_lines, vec![9, 11]);
    assert_eq!(page.rows.len(), 2);
}

#[test]
fn no_match_log_explains_the_miss() {
    let text = read("misc/no_match.log");
    let log = scan_log(&text);
    assert!(log.no_kernels_profiled);
    assert_eq!(log.available_kernels, vec!["copy_kernel"]);
    assert!(log.errors.is_empty() && !log.permission_denied && log.profiled.is_empty());
    assert_eq!(log.warnings.len(), 2);

    let err = RawPage::parse(&text, "no_match.log").unwrap_err();
    assert_eq!(err.kind, ParseErrorKind::NoKernelProfiled);
    assert_eq!(err.line, 4, "the line of ncu's warning");
    let shown = err.to_string();
    assert!(shown.starts_with("no_match.log:4: no kernel was profiled"), "{shown}");
    assert!(shown.contains("copy_kernel"), "{shown}");
    for err in [
        DetailsPage::parse(&text, "no_match.log").unwrap_err(),
        SourcePage::parse(&text, "no_match.log").unwrap_err(),
    ] {
        assert_eq!(err.kind, ParseErrorKind::NoKernelProfiled, "{err}");
    }
}

#[test]
fn collect_logs_give_kernels_and_passes() {
    for path in all_fixtures().into_iter().filter(|p| name(p).ends_with("_full_collect.log")) {
        let log = scan_log(&std::fs::read_to_string(&path).unwrap());
        assert_eq!(log.profiled.len(), 1, "{}", path.display());
        assert_eq!(log.profiled[0].1, Some(38), "{}", path.display());
        assert!(!log.no_kernels_profiled && !log.permission_denied, "{}", path.display());
    }
    // The profiled program itself failed its own check after the profiled launch.
    let log = scan_log(&read("heldout/small_grid_full_collect.log"));
    assert_eq!(log.errors, vec!["The application returned an error code (1)."]);
    assert!(scan_log(&read("demo-full/copy_full_collect.log")).errors.is_empty());
    // ncu wrote a warning in the middle of the progress line; the passes follow on the next.
    let log = scan_log(&read("demo-full/hgemm_naive_full_collect.log"));
    assert_eq!(log.profiled, vec![("hgemm_naive".to_string(), Some(38))]);
    assert!(log.warnings.iter().any(|w| w.starts_with("Launching the workload is taking more time")));
}

// ---------------------------------------------------------------------------------------
// details pages
// ---------------------------------------------------------------------------------------

#[test]
fn details_pages_have_metric_rows_and_rule_rows_with_speedups() {
    let files = details_page_files();
    assert!(files.len() >= 7, "{files:?}");
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let origin = path.display().to_string();
        let page = DetailsPage::parse(&text, &origin).unwrap_or_else(|e| panic!("{e}"));
        // A row a line starting as the first does (ID, process ID, process name): a rule's
        // description may hold line breaks, and an embedded table's rows start otherwise.
        let first = text.lines().nth(1).unwrap();
        let lead = first.splitn(4, "\",\"").take(3).collect::<Vec<_>>().join("\",\"") + "\",\"";
        assert_eq!(page.rows.len(), text.lines().filter(|l| l.starts_with(&lead)).count(), "{origin}");
        let kernel = &page.rows[0].kernel;
        assert!(page.rows.iter().all(|r| &r.kernel == kernel && r.id == "0"), "{origin}");
        assert!(page.rows.iter().any(|r| r.metric_name == "Duration"), "{origin}");
        let rules: Vec<_> = page.rules().collect();
        assert!(rules.iter().all(|r| !r.rule_type.is_empty() && !r.rule_description.is_empty()), "{origin}");
        assert!(rules.iter().any(|r| r.speedup.is_some_and(|s| s > 0.0)), "{origin}");
        for r in &rules {
            assert_eq!(r.speedup.is_some(), !r.speedup_type.is_empty(), "{origin}:{}", r.line);
        }
    }
}

#[test]
fn copy_details_values() {
    let page = DetailsPage::parse(&read("demo-full/copy_full_details.csv"), "copy").unwrap();
    let duration = page.rows.iter().find(|r| r.metric_name == "Duration").unwrap();
    assert_eq!(
        (duration.section.as_str(), duration.metric_unit.as_str(), duration.metric_value.as_str()),
        ("GPU Speed Of Light Throughput", "us", "532.64")
    );
    let cycles = page.rows.iter().find(|r| r.metric_name == "Elapsed Cycles").unwrap();
    assert_eq!(parse_number(&cycles.metric_value), Some(1_051_176.0));
    let pipe = page.rules().find(|r| r.rule_name == "HighPipeUtilization").unwrap();
    assert_eq!(pipe.section, "ComputeWorkloadAnalysis");
    assert_eq!((pipe.rule_type.as_str(), pipe.speedup_type.as_str()), ("OPT", "local"));
    assert_eq!(pipe.speedup, Some(93.19));
    assert_eq!(pipe.line, 22);
    assert!(pipe.rule_description.starts_with("All compute pipelines are under-utilized."));
    let sol = page.rules().find(|r| r.rule_name == "SOLBottleneck").unwrap();
    assert_eq!((sol.rule_type.as_str(), sol.speedup), ("INF", None));
}

// ---------------------------------------------------------------------------------------
// source pages
// ---------------------------------------------------------------------------------------

/// SASS rows in a source page's text: an empty "Line No" and "Source", then an address.
fn sass_rows_in(text: &str) -> usize {
    text.lines().filter(|l| l.starts_with("\"\",\"\",\"0x")).count()
}

#[test]
fn every_source_page_parses_and_every_sass_row_belongs_to_a_line() {
    let files = source_page_files();
    assert!(files.len() >= 7 + 7, "{files:?}");
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let origin = path.display().to_string();
        let page = SourcePage::parse(&text, &origin).unwrap_or_else(|e| panic!("{e}"));
        let (mut sass, mut sass_only) = (0, 0);
        for block in page.blocks.iter().filter(|b| b.is_sass_only()) {
            // `--print-source sass` (a kernel without line info): instructions only.
            assert_eq!(
                block.columns[..3],
                ["Address", "Source", "Warp Stall Sampling (All Samples)"],
                "{origin}"
            );
            assert!(block.file_path.is_empty() && block.lines.is_empty() && !block.function_name.is_empty());
            sass_only += block.sass.len();
            for row in &block.sass {
                assert!(row.address.starts_with("0x") && !row.instruction.is_empty(), "{origin}");
                assert_eq!(row.values.len(), block.columns.len(), "{origin}");
            }
        }
        for block in page.blocks.iter().filter(|b| !b.is_sass_only()) {
            assert_eq!(block.columns[..4], ["Line No", "Source", "Address", "Source"], "{origin}");
            assert!(block.column("# Samples").is_some() && block.column("Instructions Executed").is_some());
            assert!(!block.lines.is_empty(), "{origin}: {}", block.file_path);
            for line in &block.lines {
                assert!(line.line_no > 0);
                assert_eq!(line.values.len(), block.columns.len(), "{origin}:{}", line.page_line);
                assert_eq!(line.values[2], "-", "{origin}:{}: CUDA rows have no address", line.page_line);
                for row in &line.sass {
                    assert!(row.address.starts_with("0x") && !row.instruction.is_empty());
                    assert_eq!(row.values.len(), block.columns.len());
                }
                sass += line.sass.len();
            }
        }
        assert_eq!(sass, sass_rows_in(&text), "{origin}: every SASS row is under a source line");
        // A SASS-only page may print a block per launch profiled.
        let rows = text.lines().filter(|l| l.starts_with("\"0x")).count();
        assert_eq!(sass_only, rows, "{origin}: every instruction row is read");
    }
}

#[test]
fn hgemm_naive_hottest_line_is_the_inner_product() {
    for rel in
        ["demo-full/hgemm_naive_source.csv", "demo-stages/hgemm_20261129_213211/details/07_source_raw.csv"]
    {
        let page = SourcePage::parse(&read(rel), rel).unwrap();
        let block = page.blocks.iter().find(|b| b.file_path.ends_with("/hgemm.cu")).unwrap();
        assert_eq!(block.function_name, "hgemm_naive");
        let samples = block.column("# Samples").unwrap();
        let hottest = block
            .lines
            .iter()
            .max_by(|a, b| a.number(samples).unwrap_or(0.0).total_cmp(&b.number(samples).unwrap_or(0.0)))
            .unwrap();
        assert_eq!(hottest.line_no, 24, "{rel}");
        assert!(hottest.source.starts_with("acc += __half2float(A[(size_t)row * k + i])"), "{rel}");
        assert!(hottest.number(samples).unwrap() > 3_000_000.0, "{rel}");
        assert!(!hottest.sass.is_empty());
    }
}

#[test]
fn unescaped_quotes_in_source_text_stay_in_their_column() {
    // ncu prints `extern "C"` without escaping the quotes.
    let page = SourcePage::parse(&read("demo-full/hgemm_naive_source.csv"), "hgemm").unwrap();
    let line = &page.blocks[0].lines[0];
    assert_eq!(line.line_no, 13);
    assert_eq!(line.source, r#"extern "C" __global__ void hgemm_naive(const __half *__restrict__ A,"#);
    assert_eq!(line.values[2], "-");
    assert_eq!(line.values[4], "49");

    // Here the text holds commas too: a standard CSV reader splits it into 69 cells.
    let page = SourcePage::parse(&read("demo-full/fma_source.csv"), "fma").unwrap();
    let line = &page.blocks[0].lines[0];
    assert_eq!(line.line_no, 8);
    assert_eq!(
        line.source,
        r#"extern "C" __global__ void fma_kernel(float *__restrict__ out, float a, float b, int iters) {"#
    );
    assert_eq!(line.values.len(), 66);
}

#[test]
fn inlined_header_is_its_own_block() {
    let rel = "demo-stages/reduce_20261129_213211/details/07_source_raw.csv";
    let page = SourcePage::parse(&read(rel), rel).unwrap();
    let files: Vec<_> = page.blocks.iter().map(|b| b.file_path.rsplit('/').next().unwrap()).collect();
    assert_eq!(files, vec!["reduce.cu", "sm_30_intrinsics.hpp"]);
    assert!(page.blocks.iter().all(|b| b.function_name == "reduce_kernel"));
    assert!(!page.blocks[1].lines.is_empty());
}

#[test]
fn source_page_without_line_info_is_empty_and_explained() {
    let text = read("demo-full/reduce_source.csv");
    assert!(SourcePage::parse(&text, "reduce_source.csv").unwrap().blocks.is_empty());
    assert_eq!(scan_log(&text).no_line_info, vec!["reduce_kernel"]);
}

#[test]
fn pages_are_not_mistaken_for_each_other() {
    let raw = read("misc/discovery_hgemm.csv");
    let details = read("demo-full/copy_full_details.csv");
    let source = read("demo-full/copy_source.csv");
    assert!(RawPage::parse(&details, "d").unwrap_err().message.contains("details page"));
    assert!(RawPage::parse(&source, "s").is_err());
    assert!(DetailsPage::parse(&raw, "r").is_err());
    assert!(DetailsPage::parse(&source, "s").is_err());
    assert!(SourcePage::parse(&raw, "r").is_err());
    assert!(SourcePage::parse(&details, "d").is_err());
}

// ---------------------------------------------------------------------------------------
// properties: never panic, errors point into the input
// ---------------------------------------------------------------------------------------

/// Runs every parser; each error must name the origin and a line of the input.
fn parse_all(text: &str) {
    let lines = text.split('\n').count();
    let _ = scan_log(text);
    let results = [
        RawPage::parse(text, "in").err(),
        DetailsPage::parse(text, "in").err(),
        SourcePage::parse(text, "in").err(),
    ];
    for err in results.into_iter().flatten() {
        assert_eq!(err.origin, "in");
        assert!((1..=lines).contains(&err.line), "line {} of {lines}: {err}", err.line);
    }
}

/// Small recordings of every kind, to damage.
const MUTATED: [&str; 7] = [
    "misc/discovery_hgemm.csv",
    "misc/stdout_capture.txt",
    "misc/no_match.log",
    "demo-full/copy_full_details.csv",
    "demo-full/copy_source.csv",
    "demo-stages/reduce_20261129_213211/details/07_source_raw.csv",
    "demo-full/hgemm_naive_full_collect.log",
];

#[derive(Debug, Clone)]
enum Mutation {
    Truncate(usize),
    FlipByte(usize, u8),
    DuplicateLine(usize),
    DeleteLine(usize),
    InsertLine(usize, String),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 1..=255u8).prop_map(|(at, x)| Mutation::FlipByte(at, x)),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        any::<usize>().prop_map(Mutation::DeleteLine),
        (any::<usize>(), any::<String>()).prop_map(|(at, s)| Mutation::InsertLine(at, s)),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let line_spans = |b: &[u8]| {
        let mut spans = Vec::new();
        let mut start = 0;
        for (i, c) in b.iter().enumerate() {
            if *c == b'\n' {
                spans.push(start..i + 1);
                start = i + 1;
            }
        }
        spans.push(start..b.len());
        spans
    };
    match m {
        Mutation::Truncate(at) => bytes.truncate(at % (bytes.len() + 1)),
        Mutation::FlipByte(at, x) => {
            if !bytes.is_empty() {
                let i = at % bytes.len();
                bytes[i] ^= x;
            }
        }
        Mutation::DuplicateLine(i) | Mutation::DeleteLine(i) => {
            let spans = line_spans(bytes);
            let span = spans[i % spans.len()].clone();
            if matches!(m, Mutation::DeleteLine(_)) {
                bytes.drain(span);
            } else {
                let copy = bytes[span.clone()].to_vec();
                bytes.splice(span.start..span.start, copy);
            }
        }
        Mutation::InsertLine(i, s) => {
            let spans = line_spans(bytes);
            let at = spans[i % spans.len()].start;
            let mut line = s.clone().into_bytes();
            line.push(b'\n');
            bytes.splice(at..at, line);
        }
    }
}

/// Lines shaped like ncu's, so random documents reach deep into the parsers.
fn ncu_like_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(r#""ID","Process ID","Kernel Name","gpu__time_duration.sum""#.to_string()),
        Just(r#""","","","ns""#.to_string()),
        Just(r#""0","1","k(int, float)","1,234.5""#.to_string()),
        Just(r#""ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type","Rule Description","Estimated Speedup Type","Estimated Speedup""#.to_string()),
        Just(r#""0","k","SOL","Duration","us","1.5","#.to_string()),
        Just(r#""0","k","SpeedOfLight","","","","R","OPT","Do "this", then that.","local","12""#.to_string()),
        Just(r#""File Path","/a.cu""#.to_string()),
        Just(r#""Function Name","k""#.to_string()),
        Just(r##""Line No","Source","Address","Source","# Samples""##.to_string()),
        Just(r#""12","extern "C" f(a, b) {","-","-","3""#.to_string()),
        Just(r#""","","0x10","      @P0   EXIT","2""#.to_string()),
        Just(r#""","","...","...","-""#.to_string()),
        Just("==PROF== Profiling \"k\": 0%....50%....100% - 38 passes".to_string()),
        Just("==WARNING== No kernels were profiled.".to_string()),
        Just("Available Kernels:".to_string()),
        Just("1. k".to_string()),
        Just("==ERROR== ERR_NVGPUCTRPERM".to_string()),
        Just("==WARNING== No lineinfo available to show CUDA-C source related to 'k'.".to_string()),
        "[\",=a-z0-9 .\\-]{0,40}",
    ]
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        parse_all(&text);
        let _ = parse_number(&text);
    }

    #[test]
    fn ncu_shaped_documents_never_panic(lines in prop::collection::vec(ncu_like_line(), 0..24)) {
        parse_all(&lines.join("\n"));
    }

    #[test]
    fn damaged_recordings_never_panic(
        which in 0..MUTATED.len(),
        mutations in prop::collection::vec(mutation(), 1..5),
    ) {
        let mut bytes = read(MUTATED[which]).into_bytes();
        for m in &mutations {
            apply(&mut bytes, m);
        }
        parse_all(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn separated_integers_read_back(n in 0u64..1_000_000_000_000_000) {
        let digits = n.to_string();
        let mut grouped = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(c);
        }
        prop_assert_eq!(parse_number(&grouped), Some(n as f64));
    }
}

#[test]
fn truncating_a_raw_page_at_every_line_never_panics() {
    let text = read("misc/discovery_hgemm.csv");
    let ends: Vec<usize> = text.match_indices('\n').map(|(i, _)| i).collect();
    for end in ends {
        parse_all(&text[..end]);
    }
}

/// `--print-details all` prints the NUMA Affinity section's own table inside the details
/// page (a header `"GPU ID","GPU Name",...` and one row per GPU); every zoo recording has
/// one. The page parses, the table is kept apart, and the rows after it are read.
#[test]
fn details_pages_with_an_embedded_table_parse() {
    for kernel in ["stream_scale_f4", "hmma_loop", "code_switch_64"] {
        let rel = format!("zoo-full/{kernel}_full_details.csv");
        let page =
            DetailsPage::parse(&crate::support::recording(&rel), &rel).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(page.tables.len(), 1, "{kernel}");
        let t = &page.tables[0];
        assert_eq!(t.section, "NUMA Affinity");
        assert_eq!(
            t.columns,
            ["GPU ID", "GPU Name", "NUMA ID by CPU Affinity", "CPU Affinity", "NUMA ID by Memory Affinity"]
        );
        assert_eq!(t.rows.len(), 1);
        assert_eq!(t.rows[0][1], "NVIDIA H200");
        // The page goes on after the table: Launch Statistics and the source counters.
        let after: Vec<&str> =
            page.rows.iter().filter(|r| r.line > t.line).map(|r| r.section.as_str()).collect();
        assert!(after.contains(&"Launch Statistics"), "{kernel}: {after:?}");
        assert!(page.rows.iter().any(|r| r.metric_name == "Registers Per Thread"), "{kernel}");
        assert!(page.rules().count() > 0, "{kernel}");
    }
}

/// The same pages through `cargo kprof import --details`: accepted, and ncu's rule
/// findings reach the report. (Before embedded tables were read, every zoo page was
/// refused as "short row: 5 cell(s)".)
#[test]
fn import_reads_a_full_set_details_page_with_its_embedded_table() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = crate::support::recording_file("zoo-full/hmma_loop_full_raw.csv", tmp.path());
    let details = crate::support::recording_file("zoo-full/hmma_loop_full_details.csv", tmp.path());
    let out = crate::support::kprof_bin()
        .args(["kprof", "import", "--raw"])
        .arg(&raw)
        .arg("--details")
        .arg(&details)
        .arg("--output-dir")
        .arg(tmp.path().join("p"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report = std::fs::read_to_string(tmp.path().join("p/final_report.md")).unwrap();
    assert!(report.contains("details page ("), "{report}");
    assert!(report.contains("estimated speedup"), "{report}");
}

/// Two ncu processes at once on a two-GPU H200 host (fixtures/h200/multi-gpu): on two
/// GPUs, with or without a TMPDIR each, every counter that does not depend on timing
/// equals the lone run's; on one GPU with a TMPDIR each, the second gets no page and says
/// another session held the counters.
#[test]
fn two_ncu_processes_on_two_gpus_agree_with_a_lone_run() {
    let page = |f: &str| {
        let rel = format!("multi-gpu/{f}.csv");
        RawPage::parse(&crate::support::recording(&rel), &rel).unwrap_or_else(|e| panic!("{e}"))
    };
    let counts = |p: &RawPage| -> Vec<(f64, f64)> {
        p.launches()
            .map(|l| {
                (l.number("smsp__inst_executed.sum").unwrap(), l.number("profiler__replayer_passes").unwrap())
            })
            .collect()
    };
    let lone = counts(&page("lone0"));
    assert_eq!(lone.len(), 4);
    for f in ["lone1", "p0", "p1", "q0", "q1", "r0"] {
        assert_eq!(counts(&page(f)), lone, "{f}");
    }
    let busy = crate::support::recording("multi-gpu/r1.csv");
    assert!(RawPage::parse(&busy, "r1.csv").is_err());
    assert!(scan_log(&busy).counters_busy);
}

/// fixtures/README.md lists every recording set: each folder of `fixtures/` and of
/// `fixtures/h200/`, and each has its own README.
#[test]
fn the_fixtures_readme_lists_every_recording_set() {
    let root = crate::support::repo().join("fixtures");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut sets = Vec::new();
    for (dir, prefix) in [(root.clone(), ""), (root.join("h200"), "h200/")] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.path().is_dir() && name != "h200" {
                assert!(entry.path().join("README.md").is_file(), "fixtures/{prefix}{name} has no README.md");
                sets.push(format!("{prefix}{name}/"));
            }
        }
    }
    assert!(sets.len() >= 19, "{sets:?}");
    let missing: Vec<&String> = sets.iter().filter(|s| !readme.contains(&format!("| `{s}` |"))).collect();
    assert!(missing.is_empty(), "fixtures/README.md does not list {missing:?}");
}
