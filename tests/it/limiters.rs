//! What a user reads about a limiter: the report leads with the cause and the advice, shows
//! where its stall reasons weigh in the source, what ncu's own rules say, and which causes
//! ranked above it were not checked; `explain` prints any limiter a report names. All on
//! H200 recordings of the zoo.

use std::path::{Path, PathBuf};

use crate::support::{copy_dir, recording, recording_file, recordings, text};

/// `cargo kprof import` of a zoo kernel's raw, details and source pages.
fn import_zoo(kernel: &str, tmp: &Path) -> (PathBuf, String) {
    let inputs = tmp.join(format!("in-{kernel}"));
    std::fs::create_dir_all(&inputs).unwrap();
    let page = |p: &str| recording_file(&format!("zoo-full/{kernel}_{p}.csv"), &inputs);
    let (raw, details, source) = (page("full_raw"), page("full_details"), page("source"));
    let out = tmp.join(kernel);
    let run = crate::support::kprof_bin()
        .args(["kprof", "import", "--raw"])
        .arg(&raw)
        .arg("--details")
        .arg(&details)
        .arg("--source")
        .arg(&source)
        .arg("--output-dir")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{kernel}: {}", text(&run.stderr));
    (out, text(&run.stdout))
}

fn limiter(dir: &Path) -> serde_json::Value {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("details/bottleneck_decision.json")).unwrap())
            .unwrap();
    doc["kernels"][0]["limiter"].clone()
}

#[test]
fn the_report_leads_with_the_cause_its_lines_and_ncus_agreement() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, stdout) = import_zoo("aos_field_gather", tmp.path());
    assert!(
        stdout.starts_with(
            "aos_field_gather: memory-bound, uncoalesced-global (high confidence, fixing it could save up to 71.44 %): Global loads use 4 of every 32 bytes fetched"
        ),
        "{stdout}"
    );
    let report = std::fs::read_to_string(dir.join("final_report.md")).unwrap();
    let cause = report.find("**Cause: `uncoalesced-global`**").expect(&report);
    let evidence = report.find("Evidence (the deciding conditions").unwrap();
    assert!(cause < evidence, "the cause comes before the evidence table");
    assert!(
        report.contains("**Advice** (`coalesce-accesses`): Global loads use 4 of every 32 bytes"),
        "{report}"
    );
    // The one line of the kernel that loads the struct field, with its long-scoreboard stalls.
    assert!(report.contains("| aos_field_gather.cu:20 | `out[i] = p[i].x * scale;` | long_sb="), "{report}");
    assert!(
        report.contains("ncu's rules agree: `MemoryCacheAccessPattern`, `UncoalescedGlobalAccess` fired"),
        "{report}"
    );
    // The cause's own rows lead the evidence table.
    let table = &report[evidence..];
    let first_row = table.lines().nth(4).unwrap();
    assert!(first_row.ends_with("| uncoalesced-global |"), "{first_row}");
    let l = limiter(&dir);
    assert_eq!(l["lines"][0]["line"], 20);
    assert_eq!(
        l["ncu"]["agreeing"],
        serde_json::json!(["MemoryCacheAccessPattern", "UncoalescedGlobalAccess"])
    );
}

#[test]
fn a_kernel_at_its_roof_says_so_and_reports_ncus_silence() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, _) = import_zoo("fp32_fma_chains", tmp.path());
    let report = std::fs::read_to_string(dir.join("final_report.md")).unwrap();
    assert!(report.contains("**Cause: `pipe-fma`**"), "{report}");
    assert!(report.contains("The unit is at its roof: nothing in the kernel is wrong"), "{report}");
    // ncu raises none of the rules that would name an FP32 limit; its largest finding is
    // about the launch, and the report says both.
    assert!(
        report.contains(
            "ncu's rules: none of those that name this cause (`SOLFPRoofline`, `FPInstructions`) fired; \
             ncu's largest estimated speedup is `LaunchConfiguration`"
        ),
        "{report}"
    );
    assert_eq!(limiter(&dir)["at_roof"], true);
}

#[test]
fn causes_the_stages_could_not_check_are_named_with_the_stage_that_would() {
    // smem_byte_sum's auto run took the compute stage, which cannot rule out the memory
    // limiters ranked above pipe-lsu.
    let root = recordings().join("zoo-auto");
    let recorded = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("smem_byte_sum_"))
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    copy_dir(&recorded, &dir);
    let out = crate::support::kprof_bin().args(["kprof", "report"]).arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = std::fs::read_to_string(dir.join("final_report.md")).unwrap();
    assert!(
        report.contains(
            "Ranked above this cause and not checked, because their metrics were not collected: \
             `local-memory-spills`, `uncoalesced-global`, `shared-bank-conflicts` (the `memory` stage \
             collects what they need)."
        ),
        "{report}"
    );
    assert!(report.contains("confidence medium"), "{report}");
}

#[test]
fn explain_prints_every_limiter_a_report_can_name() {
    let rules = cargo_kprof::analyze::rules::Rules::builtin();
    for id in rules.limiter_ids() {
        let out = crate::support::kprof_bin().args(["kprof", "explain", id]).output().unwrap();
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{id}: {}", text(&out.stderr));
        assert!(stdout.starts_with(&format!("{id} (limiter)\n")), "{stdout}");
        assert!(stdout.contains("Named when all hold: ") && stdout.contains("Advice `"), "{stdout}");
        assert!(stdout.lines().all(|l| l.chars().count() <= 100), "{stdout}");
        // Advice is shown once per text, its numbers as N, never as `{placeholders}`.
        assert!(!stdout.contains('{') && !stdout.contains('}'), "{stdout}");
        let advice: Vec<&str> =
            stdout.split("\nAdvice `").skip(1).map(|a| a.split("\nStall").next().unwrap()).collect();
        for (i, a) in advice.iter().enumerate() {
            let text = a.split_once(": ").map(|(_, t)| t.split("\nAdvice").next().unwrap()).unwrap_or(a);
            assert!(!advice[..i].iter().any(|b| b.contains(text)), "{id}: advice repeated: {stdout}");
        }
        // A limiter id must not hide an entry of the metric map.
        assert!(cargo_kprof::references::explain(id).is_err(), "`{id}` is also a metric-map topic");
    }
}

#[test]
fn every_stall_reason_has_its_column_on_the_source_page() {
    // The limiter's source lines are found by the source page's column of each stall reason.
    let page = recording("zoo-full/atomic_bins_source.csv");
    let header = page.lines().find(|l| l.contains("\"stall_long_sb\"")).expect("a source header");
    for reason in cargo_kprof::analyze::summary::STALL_REASONS {
        let column = format!("\"stall_{}\"", cargo_kprof::analyze::summary::stall_source_name(reason));
        assert!(header.contains(&column), "{reason}: no {column} column");
    }
}

#[test]
fn kprofs_own_source_stage_leads_to_the_line_that_causes_the_limiter() {
    // Recorded on the H200 by `cargo kprof` with --stages basic,memory,source.
    let cases = [
        ("aos_field_gather_", "uncoalesced-global", 20, "out[i] = p[i].x * scale;"),
        ("smem_column_read_", "shared-bank-conflicts", 24, "acc += tile[lane][(c0 + c) & (TILE - 1)];"),
    ];
    let tmp = tempfile::tempdir().unwrap();
    for (prefix, id, line, source) in cases {
        let recorded = std::fs::read_dir(recordings().join("zoo-source"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
            .unwrap();
        let dir = tmp.path().join(prefix);
        copy_dir(&recorded, &dir);
        let out = crate::support::kprof_bin().args(["kprof", "report"]).arg(&dir).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let l = limiter(&dir);
        assert_eq!(l["id"], id);
        assert_eq!(l["lines"][0]["line"], line, "{l}");
        assert_eq!(l["lines"][0]["source"], source, "{l}");
        assert!(l["lines"][0]["pct_of_kernel"].as_f64().unwrap() > 99.0, "{l}");
    }
}

/// Every raw page recorded on the H200, grouped by the folder it is in (one profile's
/// stages together), analysed with today's rules: nothing printed is contradicted by the
/// metrics it rests on.
#[test]
fn no_recording_gets_a_verdict_its_own_metrics_contradict() {
    use cargo_kprof::analyze::rules;
    let rules = rules::Rules::builtin();
    let (mut checked, mut with_limiter, mut problems) = (0, 0, Vec::new());
    for (dir, summary) in crate::support::recorded_summaries() {
        for k in &summary.kernels {
            let v = rules.decide(k);
            checked += 1;
            with_limiter += usize::from(v.limiter.is_some());
            for c in rules.contradictions(k, &v) {
                problems.push(format!("{} / {}: {c}", dir.display(), k.kernel));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked >= 60 && with_limiter >= 50, "{checked} verdicts, {with_limiter} with a limiter");
}
