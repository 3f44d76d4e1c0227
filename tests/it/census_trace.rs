//! The census by tracing, without a GPU: the same plain program as `census.rs` (the fake
//! ncu replaying the recorded census and stage pages), with the tracer chosen.
//!
//! - Where the tracer cannot be used (`KPROF_CUPTI` naming nothing, a traced run that left
//!   no trace), one note says why and the census is ncu's pass, as recorded.
//! - A traced run: the program itself stands in for the CUDA driver loading the tracer. It
//!   copies a trace the test wrote with the tracer's own writer (`kprof_tracer::tally`, the
//!   recorded census launches) into the folder kprof named, and records the variables kprof
//!   gave it. The census is then the trace's: no ncu census pass, the same breakdown, the
//!   same picks profiled.
//! - `doctor` says which census a run would take, and why.

use std::path::Path;

use kprof_tracer::tally::{Launch, Tally};

use crate::census::arg_after;
use crate::census::{census_in, census_of, Census, NAIVE, TILED, TILED_FILTER};
use crate::support::{text, Workspace};

/// The note of a census that could not be traced, up to its reason.
const FALLBACK: &str = "note: the census of `copy` is ncu's durations-only pass, not a trace: ";

/// The `copy` bench as a program that stands in for the driver loading the tracer: with
/// `KPROF_TRACE_OUT` and `FAKE_TRACE` set, it copies `FAKE_TRACE` there as its process's
/// trace and writes the tracer's variables to `FAKE_TRACE_SEEN`.
const STAND_IN: &str = r#"fn main() {
    let (Ok(out), Ok(trace)) = (std::env::var("KPROF_TRACE_OUT"), std::env::var("FAKE_TRACE")) else { return };
    std::fs::copy(trace, format!("{out}/{}.tsv", std::process::id())).unwrap();
    let seen: Vec<String> = ["CUDA_INJECTION64_PATH", "KPROF_CUPTI", "KPROF_TRACE_LAUNCHES"]
        .iter()
        .map(|v| format!("{v}={}", std::env::var(v).unwrap_or_default()))
        .collect();
    std::fs::write(std::env::var("FAKE_TRACE_SEEN").unwrap(), seen.join("\n")).unwrap();
}
"#;

fn stand_in() -> Workspace {
    let ws = Workspace::new("");
    std::fs::write(ws.root().join("benches/copy.rs"), STAND_IN).unwrap();
    ws
}

/// The recorded census' launches (`hgemm_naive`'s two, then `hgemm_tiled`'s), as the
/// tracer would write them, 5 µs apart on the GPU.
fn recorded_launches_traced() -> Vec<u8> {
    let mut tally = Tally::new(None);
    let mut start = 1_000_000_000u64;
    let shapes = [("hgemm_naive", [256, 256, 1], [16, 16, 1]), ("hgemm_tiled", [128, 128, 1], [32, 32, 1])];
    for ((name, grid, block), durations) in shapes.iter().zip([NAIVE, TILED]) {
        for ns in durations {
            tally.add(&Launch {
                name: name.as_bytes(),
                start,
                end: start + ns as u64,
                grid: *grid,
                block: *block,
            });
            start += ns as u64 + 5_000;
        }
    }
    let mut out = Vec::new();
    tally.write(&mut out).unwrap();
    out
}

/// A file that exists, for `KPROF_CUPTI` and `KPROF_TRACER` (nothing loads them here).
fn some_file(ws: &Workspace, name: &str) -> String {
    let p = ws.root().join(name);
    std::fs::write(&p, b"").unwrap();
    p.to_str().unwrap().to_string()
}

fn ncu_census_ran(run: &Census) -> bool {
    run.calls.iter().any(|c| arg_after(c, "--metrics").as_deref() == Some("gpu__time_duration.sum"))
}

#[test]
fn without_cupti_one_note_says_why_and_the_census_is_ncus() {
    let missing = "/nonexistent/kprof/libcupti.so";
    let env = [("KPROF_CENSUS", "trace"), ("KPROF_CUPTI", missing)];
    let run = census_in(Workspace::new(""), "misc/discovery_hgemm.csv", &["--no-batch"], &env);
    let stderr = run.stderr();
    assert_eq!(run.out.status.code(), Some(0), "{stderr}");
    let note = format!("{FALLBACK}KPROF_CUPTI names {missing}, which is not a file\n");
    assert!(stderr.contains(&note), "{stderr}");
    assert_eq!(stderr.matches("not a trace").count(), 1, "{stderr}");
    assert!(ncu_census_ran(&run), "{:?}", run.calls);
    let b = run.breakdown();
    assert_eq!((b["launches"].as_u64(), b.get("by")), (Some(4), None), "{b}");
    assert!(stderr.contains("Census of `copy`: 4 launches of 2 kernels"), "{stderr}");
}

/// The tracer library and CUPTI are there, but the program never loaded the tracer (no
/// CUDA here, as a driver without injection support): no trace, one note, ncu's census.
#[test]
fn a_traced_run_that_leaves_no_trace_falls_back_to_ncus_census() {
    let ws = stand_in();
    let (cupti, tracer) = (some_file(&ws, "libcupti.so"), some_file(&ws, "libkprof_tracer.so"));
    let env = [("KPROF_CENSUS", "trace"), ("KPROF_CUPTI", cupti.as_str()), ("KPROF_TRACER", tracer.as_str())];
    let run = census_in(ws, "misc/discovery_hgemm.csv", &["--no-batch"], &env);
    let stderr = run.stderr();
    assert_eq!(run.out.status.code(), Some(0), "{stderr}");
    let note = format!("{FALLBACK}the program wrote no trace: the CUDA driver did not load the tracer\n");
    assert!(stderr.contains(&note), "{stderr}");
    assert!(ncu_census_ran(&run), "{:?}", run.calls);
    // commands.sh keeps both: the traced run that was tried, and ncu's census that ran.
    let script = std::fs::read_to_string(run.profiles()[0].join("commands.sh")).unwrap();
    assert!(script.contains("# The census by tracing") && script.contains("CUDA_INJECTION64_PATH="));
}

#[test]
fn a_traced_census_replaces_ncus_pass_with_the_same_breakdown_and_picks() {
    let ws = stand_in();
    let (cupti, tracer) = (some_file(&ws, "libcupti.so"), some_file(&ws, "libkprof_tracer.so"));
    let trace = ws.root().join("trace.tsv");
    std::fs::write(&trace, recorded_launches_traced()).unwrap();
    let seen = ws.root().join("seen.txt");
    let env = [
        ("KPROF_CENSUS", "trace"),
        ("KPROF_CUPTI", cupti.as_str()),
        ("KPROF_TRACER", tracer.as_str()),
        ("FAKE_TRACE", trace.to_str().unwrap()),
        ("FAKE_TRACE_SEEN", seen.to_str().unwrap()),
    ];
    let run = census_in(ws, "misc/discovery_hgemm.csv", &["--no-batch"], &env);
    let stderr = run.stderr();
    assert_eq!(run.out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("not a trace"), "{stderr}");

    // The program ran with the tracer injected, told where to write and which CUPTI to
    // open, and no launch cap (none was asked).
    let seen = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(seen, format!("CUDA_INJECTION64_PATH={tracer}\nKPROF_CUPTI={cupti}\nKPROF_TRACE_LAUNCHES="));

    // The census is the trace's, and ncu's pass never ran.
    assert!(!ncu_census_ran(&run), "{:?}", run.calls);
    assert!(
        stderr.contains("Census of `copy` (traced): 4 launches of 2 kernels, 90.909 ms of GPU time"),
        "{stderr}"
    );
    let b = run.breakdown();
    assert_eq!(b["by"], "trace");
    assert_eq!((b["launches"].as_u64(), b["capped"].as_bool()), (Some(4), Some(false)));
    let rows = b["kernels"].as_array().unwrap();
    let functions: Vec<&str> = rows.iter().map(|r| r["function"].as_str().unwrap()).collect();
    assert_eq!(functions, ["hgemm_naive", "hgemm_tiled"]);
    assert_eq!(rows[0]["grid"], serde_json::json!(["(256, 256, 1)"]));
    assert_eq!(b["chosen"], serde_json::json!(["hgemm_naive", "hgemm_tiled"]));

    // The picks are profiled as after ncu's census: each exactly, the window fitted to its
    // 2 traced launches.
    let filters: Vec<Option<String>> = run.calls.iter().map(|c| arg_after(c, "--kernel-name")).collect();
    assert!(filters.iter().any(|f| f.as_deref() == Some(TILED_FILTER)), "{filters:?}");
    for c in &run.calls {
        assert_eq!(arg_after(c, "--launch-count").as_deref(), Some("2"), "{c:?}");
    }
    let census_dir = &run.profiles()[0];
    assert!(census_dir.join("final_report.md").is_file());
    let manifest = std::fs::read_to_string(census_dir.join("run_manifest.yaml")).unwrap();
    assert!(manifest.contains("output: details/census_trace"), "{manifest}");
    assert!(census_dir.join("details/census_trace").read_dir().unwrap().count() == 1);
}

/// #44: an archive of a program whose census may be traced carries the tracer, built on
/// the machine that packs it; `run --archive` injects the packed one, so a GPU machine
/// without cargo (and without `KPROF_TRACER`) traces the census too.
#[test]
fn an_archive_carries_the_tracer_that_run_archive_injects() {
    let ws = stand_in();
    let archive = ws.root().join("copy.tar");
    let out = ws.kprof(&["archive", "--bench", "copy", "-o", archive.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (packed, manifest) = packed_entries(&archive);
    assert!(packed.iter().any(|n| n == "bin/libkprof_tracer.so"), "{packed:?}");
    assert_eq!(manifest["tracer"], "bin/libkprof_tracer.so");

    let cupti = some_file(&ws, "libcupti.so");
    let trace = ws.root().join("trace.tsv");
    std::fs::write(&trace, recorded_launches_traced()).unwrap();
    let seen = ws.root().join("seen.txt");
    let remap = ws.root().join("gpu");
    let env = [
        ("KPROF_CENSUS", "trace"),
        ("KPROF_CUPTI", cupti.as_str()),
        ("FAKE_TRACE", trace.to_str().unwrap()),
        ("FAKE_TRACE_SEEN", seen.to_str().unwrap()),
        // The recorded stage pages are one run per stage.
        ("KPROF_PLAN", "fixed"),
    ];
    let args = ["run", "--archive", archive.to_str().unwrap(), "--workspace-remap", remap.to_str().unwrap()];
    let root = ws.root().to_path_buf();
    let run = census_of(ws, "misc/discovery_hgemm.csv", &env, |_, vars| {
        crate::support::kprof_env(&root, &args, vars)
    });
    let stderr = run.stderr();
    assert_eq!(run.out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("not a trace") && stderr.contains("(traced)"), "{stderr}");
    let seen = std::fs::read_to_string(&seen).unwrap();
    let injected = remap.canonicalize().unwrap().join("bin/libkprof_tracer.so");
    assert!(seen.starts_with(&format!("CUDA_INJECTION64_PATH={}\n", injected.display())), "{seen}");
    assert!(!ncu_census_ran(&run), "{:?}", run.calls);
}

/// An archive's entries, and its manifest.
fn packed_entries(archive: &Path) -> (Vec<String>, serde_json::Value) {
    let mut packed = Vec::new();
    let mut manifest = String::new();
    for entry in tar::Archive::new(std::fs::File::open(archive).unwrap()).entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        if name == "kprof-archive.json" {
            std::io::Read::read_to_string(&mut entry, &mut manifest).unwrap();
        }
        packed.push(name);
    }
    (packed, serde_json::from_str(&manifest).unwrap())
}

/// #44: when the tracer cannot be built where the archive is packed, the archive is still
/// written, without it, and a warning says why and what the GPU machine does instead (it
/// used to be left out without a word, and the census there took ncu's pass unexplained
/// until the run).
#[test]
fn an_archive_whose_tracer_cannot_be_built_says_so_and_packs_the_rest() {
    let ws = stand_in();
    // The tracer's folder cannot be made: a file stands where it goes.
    let blocker = ws.root().join("target/kprof/tracer");
    std::fs::create_dir_all(blocker.parent().unwrap()).unwrap();
    std::fs::write(&blocker, "not a folder").unwrap();
    let archive = ws.root().join("copy.tar");
    let out = ws.kprof(&["archive", "--bench", "copy", "-o", archive.to_str().unwrap()], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let warning = stderr
        .lines()
        .find(|l| l.contains("the census tracer is not packed"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        warning.starts_with(
            "warning: the census tracer is not packed: could not write the tracer's sources into "
        ),
        "{warning}"
    );
    assert!(
        warning.ends_with("a census takes ncu's pass, one per launch, unless KPROF_TRACER names a built libkprof_tracer.so there"),
        "{warning}"
    );
    let (packed, manifest) = packed_entries(&archive);
    assert!(packed.iter().any(|n| n.starts_with("bin/")), "{packed:?}");
    assert!(!packed.iter().any(|n| n.ends_with("libkprof_tracer.so")), "{packed:?}");
    assert!(manifest["tracer"].is_null(), "{manifest}");
}

/// The first traced census builds the tracer with the user's cargo, under the profiling
/// target directory, and says so; the next one finds it built and says nothing.
#[test]
fn the_first_traced_census_builds_the_tracer_and_says_so() {
    let ws = stand_in();
    let cupti = some_file(&ws, "libcupti.so");
    let trace = ws.root().join("trace.tsv");
    std::fs::write(&trace, recorded_launches_traced()).unwrap();
    let seen = ws.root().join("seen.txt");
    let root = ws.root().to_path_buf();
    let env = [
        ("KPROF_CENSUS", "trace"),
        ("KPROF_CUPTI", cupti.as_str()),
        ("FAKE_TRACE", trace.to_str().unwrap()),
        ("FAKE_TRACE_SEEN", seen.to_str().unwrap()),
    ];
    let building = "Building the census tracer, once for this cargo-kprof: ";
    let run = census_in(ws, "misc/discovery_hgemm.csv", &["--no-batch"], &env);
    let stderr = run.stderr();
    assert_eq!(run.out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches(building).count(), 1, "{stderr}");
    let injected = std::fs::read_to_string(&seen).unwrap();
    let library = injected.lines().next().unwrap().trim_start_matches("CUDA_INJECTION64_PATH=").to_string();
    assert!(library.starts_with(root.join("target").to_str().unwrap()), "{library}");
    assert!(library.ends_with("/libkprof_tracer.so") && Path::new(&library).is_file(), "{library}");
    let again = census_in(run.ws, "misc/discovery_hgemm.csv", &["--no-batch"], &env);
    let stderr = again.stderr();
    assert_eq!(again.out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains(building) && stderr.contains("(traced)"), "{stderr}");
}

fn doctor(ws: &Workspace, env: &[(&str, &str)]) -> String {
    let mut all = vec![("KPROF_CENSUS", "trace")];
    all.extend_from_slice(env);
    let out = ws.kprof(&["doctor", "--color", "never"], &all);
    text(&out.stdout)
}

/// The line of `doctor` about the census: which way, and why.
fn census_line(stdout: &str) -> String {
    stdout
        .lines()
        .find(|l| l.contains("census:"))
        .unwrap_or_else(|| panic!("no census line: {stdout}"))
        .to_string()
}

#[test]
fn doctor_says_which_census_a_run_takes_and_why() {
    let ws = Workspace::new("");
    let missing = census_line(&doctor(&ws, &[("KPROF_CUPTI", "/nonexistent/libcupti.so")]));
    assert!(
        missing.ends_with("census: ncu's durations-only pass: KPROF_CUPTI names /nonexistent/libcupti.so, which is not a file"),
        "{missing}"
    );
    let cupti = some_file(&ws, "libcupti.so.13");
    let no_tracer = census_line(&doctor(
        &ws,
        &[("KPROF_CUPTI", &cupti), ("KPROF_TRACER", "/nonexistent/libkprof_tracer.so")],
    ));
    assert!(
        no_tracer.contains("KPROF_TRACER names /nonexistent/libkprof_tracer.so, which is not a file"),
        "{no_tracer}"
    );
    let tracing = census_line(&doctor(&ws, &[("KPROF_CUPTI", &cupti)]));
    assert!(
        tracing
            .contains(&format!("census: tracing (CUPTI {cupti}, the tracer, built with cargo on first use)")),
        "{tracing}"
    );
    assert!(tracing.starts_with("ok"), "{tracing}");
    let chosen = census_line(&doctor(&ws, &[("KPROF_CENSUS", "ncu")]));
    assert!(chosen.ends_with("census: ncu's durations-only pass (KPROF_CENSUS=ncu)"), "{chosen}");
    assert!(Path::new(&cupti).is_file());
}
