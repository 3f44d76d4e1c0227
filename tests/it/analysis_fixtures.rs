//! The analysis on real H200 recordings: verdicts, evidence, hypotheses, hotspots, and
//! the `import` / `report` subcommands.

use std::path::Path;

use cargo_kprof::analyze::rules::{BottleneckDecision, Classification};
use cargo_kprof::analyze::AnalyzeOptions;
use cargo_kprof::profile::dir::ProfileDir;
use cargo_kprof::report;

use crate::support::{copy_dir, recordings, text};

fn import_demo(kernel: &str, out: &Path) -> BottleneckDecision {
    let full = recordings().join("demo-full");
    let dir = report::import(
        &[full.join(format!("{kernel}_full_raw.csv"))],
        Some(&full.join(format!("{kernel}_source.csv"))),
        Some(&full.join(format!("{kernel}_full_details.csv"))),
        None,
        out,
        &AnalyzeOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{kernel}: {e:#}"))
    .0;
    serde_json::from_str(&std::fs::read_to_string(dir.bottleneck_decision_path()).unwrap()).unwrap()
}

#[test]
fn demo_kernels_get_their_known_verdicts() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        ("copy", Classification::MemoryBound, "DRAM runs at"),
        ("fma", Classification::ComputeBound, "FMA pipe"),
        ("tiny", Classification::LatencyBound, "block(s) of 32 threads"),
        ("hgemm_naive", Classification::MemoryBound, "L1/TEX runs at"),
        ("occupancy", Classification::OccupancyLimited, "because of 200 KiB of shared memory per block"),
        ("reduce", Classification::MemoryBound, ""),
    ];
    for (kernel, class, hypothesis) in cases {
        let d = import_demo(kernel, &tmp.path().join(kernel));
        assert_eq!(d.kernels.len(), 1, "{kernel}");
        let v = &d.kernels[0];
        assert_eq!(v.classification, class, "{kernel}: {v:#?}");
        assert!(!v.evidence.is_empty(), "{kernel}: no evidence");
        assert!(
            v.evidence.iter().all(|e| !e.metric.is_empty() && !e.rule.is_empty() && !e.threshold.is_empty()),
            "{kernel}: {:?}",
            v.evidence
        );
        assert!(
            v.hypotheses.iter().any(|h| h.text.contains(hypothesis) && !h.evidence.is_empty()),
            "{kernel}: no hypothesis containing {hypothesis:?}: {:#?}",
            v.hypotheses
        );
    }
}

#[test]
fn naive_hgemm_hottest_line_is_its_inner_product() {
    let tmp = tempfile::tempdir().unwrap();
    import_demo("hgemm_naive", &tmp.path().join("h"));
    let csv = std::fs::read_to_string(tmp.path().join("h/details/source_hotspots.csv")).unwrap();
    let first = csv.lines().nth(1).unwrap();
    assert!(first.starts_with("cuda,hgemm_naive,"), "{first}");
    assert!(
        first.contains(
            ",24,,acc += __half2float(A[(size_t)row * k + i]) * __half2float(B[(size_t)i * n + col]);,"
        ),
        "{first}"
    );
    let report = std::fs::read_to_string(tmp.path().join("h/final_report.md")).unwrap();
    assert!(report.contains("| hgemm.cu:24 | `acc += __half2float"), "{report}");
    // ncu's own rules from the details page, with the caveat that their speedups are bounds.
    assert!(report.contains("`MemoryCacheAccessPattern`") && report.contains("upper bounds"), "{report}");
    // Summary fields: units are normalised (the export printed ms and Gbyte).
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("h/details/metrics_summary.json")).unwrap(),
    )
    .unwrap();
    let k = &summary["kernels"][0];
    assert_eq!(summary["schema_version"], 1);
    assert!((k["duration_ns"].as_f64().unwrap() - 30_249_184.0).abs() < 1.0, "{k}");
    assert!(k["dram_read_bytes"].as_f64().unwrap() > 1.7e9, "{k}");
    for field in [
        "sm_throughput_pct",
        "memory_throughput_pct",
        "achieved_occupancy_pct",
        "registers_per_thread",
        "grid_size",
    ] {
        assert!(k[field].is_number(), "{field} missing: {k}");
    }
}

#[test]
fn missing_metrics_are_null_not_zero() {
    // The basic stage alone has no memory-stage metrics.
    let tmp = tempfile::tempdir().unwrap();
    let basic = recordings().join("demo-stages/copy_20261129_213211/details/01_basic_raw.csv");
    let (dir, _) =
        report::import(&[basic], None, None, None, &tmp.path().join("p"), &AnalyzeOptions::default())
            .unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.metrics_summary_path()).unwrap()).unwrap();
    let k = &summary["kernels"][0];
    assert!(k["dram_read_bytes"].is_null(), "{k}");
    assert!(k["sm_throughput_pct"].is_number(), "{k}");
    let report = std::fs::read_to_string(dir.final_report_path()).unwrap();
    assert!(report.contains("the memory stage was not collected"), "{report}");
    assert!(report.contains("No source page"), "{report}");
}

#[test]
fn report_reanalyses_a_profile_directory_from_its_stage_pages() {
    // A profile directory as cargo kprof wrote it and the stages filled it on the H200.
    let tmp = tempfile::tempdir().unwrap();
    let src = recordings().join("demo-stages/hgemm_20261129_213211");
    let dst = tmp.path().join("hgemm");
    copy_dir(&src, &dst);
    let a = report::refresh(&ProfileDir::at(&dst), &AnalyzeOptions::default()).unwrap();
    let (summary, decision) = (a.summary, a.decision);
    assert_eq!(summary.kernels.len(), 1);
    let v = &decision.kernels[0];
    assert_eq!(v.kernel, "hgemm_naive");
    assert_eq!(v.classification, Classification::MemoryBound);
    // Every stage's metrics meet in one summary: basic, memory and compute.
    let k = &summary.kernels[0];
    for f in ["sm_throughput_pct", "dram_read_bytes", "fma_pipe_pct", "sectors_per_request"] {
        assert!(k.get(f).is_some(), "{f} missing");
    }
    assert!(!k.top_stalls.is_empty());
    let report = std::fs::read_to_string(dst.join("final_report.md")).unwrap();
    assert!(report.contains("regex:.*hgemm.*"), "{report}");
    assert!(report.contains("privilege mode | none"), "{report}");
    assert!(report.contains("hgemm.cu:24"), "{report}");
    // Its follow-up stage (memory) is already in the directory: no advice to collect it again.
    assert!(report.contains("the `memory` stage's metrics are here"), "{report}");
    // The raw pages were not touched.
    for f in ["01_basic_raw.csv", "03_memory_raw.csv", "07_source_raw.csv"] {
        assert_eq!(
            std::fs::read(dst.join("details").join(f)).unwrap(),
            std::fs::read(src.join("details").join(f)).unwrap()
        );
    }
    let merged = std::fs::read_to_string(dst.join("details/metrics_raw.csv")).unwrap();
    assert_eq!(merged.lines().count(), 3, "header, units, one launch: {}", &merged[..200]);
    let jsonl = std::fs::read_to_string(dst.join("details/metrics_extracted.jsonl")).unwrap();
    let mut lines = jsonl.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap());
    let header = lines.next().unwrap();
    assert_eq!(header["schema_version"], 2, "{header}");
    let kernels = header["kernels"].as_array().unwrap();
    let first = lines.next().unwrap();
    for key in ["kernel", "launch", "stage", "metric", "value", "unit"] {
        assert!(first.get(key).is_some(), "{key} missing in {first}");
    }
    assert!(kernels[first["kernel"].as_u64().unwrap() as usize].is_string(), "{first}");
}

fn kprof(args: &[&str]) -> std::process::Output {
    crate::support::kprof_bin().arg("kprof").args(args).output().unwrap()
}

#[test]
fn import_cli_errors_name_the_input_and_lose_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let misc = recordings().join("misc");
    // A run where the filter matched nothing: the error says so and lists what ncu saw.
    let out_dir = tmp.path().join("a");
    let out = kprof(&[
        "import",
        "--raw",
        misc.join("no_match.log").to_str().unwrap(),
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("no_match.log") && stderr.contains("copy_kernel"), "{stderr}");
    assert!(!out_dir.exists(), "nothing may be created for bad input");

    // A non-empty output directory is refused and left alone.
    let busy = tmp.path().join("busy");
    std::fs::create_dir_all(&busy).unwrap();
    std::fs::write(busy.join("keep.txt"), "mine").unwrap();
    let raw = recordings().join("demo-full/copy_full_raw.csv");
    let out = kprof(&["import", "--raw", raw.to_str().unwrap(), "--output-dir", busy.to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out.stderr).contains("not empty"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_dir(&busy).unwrap().count(), 1);

    // A kernel hint that matches nothing: exit 6 with the kernels that are there.
    let out = kprof(&[
        "import",
        "--raw",
        raw.to_str().unwrap(),
        "--kernel",
        "gemm",
        "--output-dir",
        tmp.path().join("c").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(6), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("copy_kernel"), "{}", text(&out.stderr));

    // Several kernels in one file, filtered by --kernel.
    let disc = misc.join("discovery_hgemm.csv");
    let out = kprof(&[
        "import",
        "--raw",
        disc.to_str().unwrap(),
        "--kernel",
        "tiled",
        "--output-dir",
        tmp.path().join("d").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("hgemm_tiled") && !stdout.contains("hgemm_naive"), "{stdout}");

    // report on something that is not a profile directory.
    let out = kprof(&["report", tmp.path().join("nope").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).contains("is not a profile directory"), "{}", text(&out.stderr));
}

#[test]
fn user_rules_override_the_builtin_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let rules = tmp.path().join("rules.yaml");
    std::fs::write(
        &rules,
        "schema_version: 1\nrules:\n  - id: everything-is-balanced\n    classification: balanced\n    confidence: low\n    follow_up_stage: speed-of-light\n    when: [sm_throughput_pct >= 0]\n",
    )
    .unwrap();
    let raw = recordings().join("demo-full/copy_full_raw.csv");
    let opts = AnalyzeOptions { rules: Some(rules.clone()), ..Default::default() };
    let (dir, _) = report::import(&[raw], None, None, None, &tmp.path().join("p"), &opts).unwrap();
    let d: BottleneckDecision =
        serde_json::from_str(&std::fs::read_to_string(dir.bottleneck_decision_path()).unwrap()).unwrap();
    assert_eq!(d.kernels[0].classification, Classification::Balanced);
    assert_eq!(d.rules, rules.display().to_string());
}

/// Kernels the rules were not tuned on (see fixtures/h200/heldout/README.md): the verdicts
/// a kernel engineer expects.
#[test]
fn held_out_kernels_get_the_verdicts_an_engineer_expects() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = recordings().join("heldout");
    let cases = [
        ("reduction", "reduce_sum_kernel", Classification::MemoryBound),
        ("transpose", "transpose_naive_kernel", Classification::MemoryBound),
        ("tc_gemm", "wmma_gemm_kernel", Classification::MemoryBound),
        ("small_grid", "dependent_fma_kernel", Classification::LatencyBound),
        ("atomics", "histogram_atomic_kernel", Classification::LatencyBound),
    ];
    for (file, kernel, class) in cases {
        let out = report::import(
            &[dir.join(format!("{file}_full_raw.csv"))],
            None,
            Some(&dir.join(format!("{file}_full_details.csv"))),
            None,
            &tmp.path().join(file),
            &AnalyzeOptions::default(),
        )
        .unwrap()
        .0;
        let d: BottleneckDecision =
            serde_json::from_str(&std::fs::read_to_string(out.bottleneck_decision_path()).unwrap()).unwrap();
        let v = &d.kernels[0];
        assert!(v.kernel.starts_with(kernel), "{}", v.kernel);
        assert_eq!(v.classification, class, "{file}: {v:#?}");
        assert!(!v.hypotheses.is_empty(), "{file}: no hypothesis");
    }
    // The naive transpose's evidence names its uncoalesced stores.
    let d: BottleneckDecision = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("transpose/details/bottleneck_decision.json")).unwrap(),
    )
    .unwrap();
    assert!(
        d.kernels[0]
            .hypotheses
            .iter()
            .any(|h| h.text.contains("Global stores need 32.00 sectors per request")),
        "{:#?}",
        d.kernels[0]
    );
}

/// Device limits come from gpu_specs.yaml, matched by the device ncu names: the FP32
/// roofline of the fma kernel (its compute and roofline stages count FLOPs).
#[test]
fn report_places_kernels_against_the_device_limits() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("fma");
    copy_dir(&recordings().join("demo-stages/fma_20261129_213211"), &dst);
    report::refresh(&ProfileDir::at(&dst), &AnalyzeOptions::default()).unwrap();
    let report = std::fs::read_to_string(dst.join("final_report.md")).unwrap();
    assert!(report.contains("NVIDIA H200 (gpu_specs.yaml): 132 SMs"), "{report}");
    assert!(report.contains("compute side of the ridge"), "{report}");
    assert!(report.contains("achieved 61.68 TFLOP/s (92.20 % of attainable)"), "{report}");
}

/// profile/index.md and index.json list every analysed profile under a root.
#[test]
fn index_lists_every_analysed_profile() {
    let tmp = tempfile::tempdir().unwrap();
    for p in ["copy_20261129_213211", "fma_20261129_213211"] {
        let dst = tmp.path().join(p);
        copy_dir(&recordings().join("demo-stages").join(p), &dst);
        report::refresh(&ProfileDir::at(&dst), &AnalyzeOptions::default()).unwrap();
    }
    std::fs::create_dir_all(tmp.path().join("not_a_profile")).unwrap();
    cargo_kprof::report::index::write(tmp.path()).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("index.json")).unwrap()).unwrap();
    let rows = json["profiles"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{json}");
    let verdicts: Vec<(&str, &str)> =
        rows.iter().map(|r| (r["kernel"].as_str().unwrap(), r["classification"].as_str().unwrap())).collect();
    assert!(
        verdicts.contains(&("copy_kernel", "memory-bound"))
            && verdicts.contains(&("fma_kernel", "compute-bound")),
        "{verdicts:?}"
    );
    let md = std::fs::read_to_string(tmp.path().join("index.md")).unwrap();
    assert!(md.contains("[copy_20261129_213211](copy_20261129_213211/final_report.md)"), "{md}");
}

/// `metrics_extracted.jsonl` lists the metrics the analysis reads, not every cell of the
/// page; `metrics_raw.csv` keeps every metric. (Before, a `--set full` page gave one JSON
/// object per numeric cell: 2,238 columns per launch.)
#[test]
fn extracted_metrics_are_the_ones_the_analysis_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = recordings().join("demo-full/hgemm_naive_full_raw.csv");
    let (dir, _) =
        report::import(&[raw], None, None, None, &tmp.path().join("p"), &AnalyzeOptions::default()).unwrap();
    let jsonl = std::fs::read_to_string(dir.metrics_extracted_path()).unwrap();
    let metrics: std::collections::BTreeSet<String> = jsonl
        .lines()
        .skip(1)
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["metric"].as_str().unwrap().to_string()
        })
        .collect();
    assert!(metrics.iter().all(|m| cargo_kprof::analyze::summary::is_read_metric(m)), "{metrics:?}");
    assert!(metrics.contains("gpu__time_duration.sum"));
    assert!(jsonl.lines().count() < 300, "{} lines", jsonl.lines().count());
    // A metric nobody reads: in metrics_raw.csv, not in the JSONL.
    let unread = "dram__cycles_elapsed.avg.per_second";
    assert!(!metrics.contains(unread));
    let header = std::fs::read_to_string(dir.metrics_raw_path()).unwrap().lines().next().unwrap().to_string();
    assert!(header.contains(unread), "metrics_raw.csv keeps every metric");
    assert_eq!(header.split(',').count(), 2 + 2238 - 11, "Kernel Name, Launch and every metric column");
}

/// A raw page of 1-2 MiB built from a real recording (`demo-full/copy_full_raw.csv`) by
/// repeating its launch row, IDs renumbered.
fn big_page() -> String {
    let text = std::fs::read_to_string(recordings().join("demo-full/copy_full_raw.csv")).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with('"')).collect();
    let rest = lines[2].strip_prefix("\"0\",").unwrap();
    let mut big = format!("{}\n{}\n", lines[0], lines[1]);
    for id in 0..80 {
        big.push_str(&format!("\"{id}\",{rest}\n"));
    }
    big
}

/// A raw page over `--max-input-mb` is refused before anything is created, naming the file
/// and the flag that raises the limit. The page is built from a real recording by repeating
/// its launch row until it passes 1 MiB.
#[test]
fn an_import_over_the_size_limit_says_so_and_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let big = big_page();
    let page = tmp.path().join("big_raw.csv");
    std::fs::write(&page, &big).unwrap();
    assert!(big.len() > 1 << 20 && big.len() < 2 << 20, "{} bytes", big.len());
    let out = tmp.path().join("p");
    let run = kprof(&[
        "import",
        "--raw",
        page.to_str().unwrap(),
        "--output-dir",
        out.to_str().unwrap(),
        "--max-input-mb",
        "1",
    ]);
    let stderr = text_of(&run.stderr);
    assert_eq!(run.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("big_raw.csv is 2 MiB, over the input limit of 1 MiB"), "{stderr}");
    assert!(stderr.contains("help: raise the limit with --max-input-mb 3"), "{stderr}");
    assert!(!out.exists(), "nothing is created");
    let ok = kprof(&[
        "import",
        "--raw",
        page.to_str().unwrap(),
        "--output-dir",
        out.to_str().unwrap(),
        "--max-input-mb",
        "3",
    ]);
    assert_eq!(ok.status.code(), Some(0), "{}", text_of(&ok.stderr));
}

/// Writes the gzip of `bytes` to `path`, as `gzip` would.
fn gzip_to(path: &Path, bytes: &[u8]) {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, bytes).unwrap();
    std::fs::write(path, gz.finish().unwrap()).unwrap();
}

/// Pages kept gzip-compressed import as the plain pages do: the same verdict and report,
/// and the profile directory holds the unpacked pages, byte for byte.
#[test]
fn a_gzip_compressed_page_imports_as_the_plain_one() {
    let tmp = tempfile::tempdir().unwrap();
    let full = recordings().join("demo-full");
    let pages = ["hgemm_naive_full_raw.csv", "hgemm_naive_source.csv", "hgemm_naive_full_details.csv"];
    for p in pages {
        gzip_to(&tmp.path().join(format!("{p}.gz")), &std::fs::read(full.join(p)).unwrap());
    }
    let run = |dir: &Path, suffix: &str, out: &str| {
        let page = |p: &str| dir.join(format!("{p}{suffix}")).to_str().unwrap().to_string();
        let out = tmp.path().join(out);
        let (raw, source, details) = (page(pages[0]), page(pages[1]), page(pages[2]));
        let args = ["import", "--raw", &raw, "--source", &source, "--details", &details, "--output-dir"];
        let run = kprof(&[&args[..], &[out.to_str().unwrap()]].concat());
        assert_eq!(run.status.code(), Some(0), "{}", text_of(&run.stderr));
        out
    };
    let (plain, packed) = (run(&full, "", "plain"), run(tmp.path(), ".gz", "packed"));
    for f in ["details/bottleneck_decision.json", "final_report.md"] {
        // The same but for the inputs' and the output's paths.
        let read = |d: &Path, inputs: &Path| {
            let text = std::fs::read_to_string(d.join(f)).unwrap();
            text.replace(d.to_str().unwrap(), "<OUT>")
                .replace(inputs.to_str().unwrap(), "<IN>")
                .replace(".gz", "")
        };
        let (a, b) = (read(&plain, &full), read(&packed, tmp.path()));
        let differ = a.lines().zip(b.lines()).find(|(x, y)| x != y);
        assert!(a == b, "{f}: first difference {differ:?}");
    }
    let copied: Vec<_> = std::fs::read_dir(packed.join("details"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("imported_"))
        .collect();
    assert_eq!(copied.len(), 3, "{copied:?}");
    for copy in copied {
        let bytes = std::fs::read(&copy).unwrap();
        assert!(pages.iter().any(|p| std::fs::read(full.join(p)).unwrap() == bytes), "{}", copy.display());
    }
}

/// The input limit applies to what a compressed page unpacks to: a small file that
/// unpacks past it is refused by name, with the option that raises it, and nothing is made.
#[test]
fn a_compressed_page_that_unpacks_past_the_limit_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let big = big_page();
    let page = tmp.path().join("big_raw.csv.gz");
    gzip_to(&page, big.as_bytes());
    assert!(std::fs::metadata(&page).unwrap().len() < 1 << 20 && big.len() > 1 << 20);
    let out = tmp.path().join("p");
    let args = ["import", "--raw", page.to_str().unwrap(), "--output-dir", out.to_str().unwrap()];
    let run = kprof(&[&args[..], &["--max-input-mb", "1"]].concat());
    let stderr = text_of(&run.stderr);
    assert_eq!(run.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("big_raw.csv.gz unpacks to more than the input limit of 1 MiB"), "{stderr}");
    assert!(stderr.contains("--max-input-mb"), "{stderr}");
    assert!(!out.exists(), "nothing is created");
    let ok = kprof(&[&args[..], &["--max-input-mb", "2"]].concat());
    assert_eq!(ok.status.code(), Some(0), "{}", text_of(&ok.stderr));
}

fn text_of(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
