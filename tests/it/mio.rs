//! The MIO causes and the pointer chase that flipped, on their H200 recordings
//! (`fixtures/h200/zoo-fixes/ncu/`, `--set full` of the zoo's `mio` bench): each import
//! names what `examples/zoo/EXPECTED.md`'s `mio` table expects, prices it, and shows
//! ncu's own estimate beside the prediction.

use std::path::Path;

use crate::support::{repo, text};

/// The `mio` table of EXPECTED.md: (kernel, limiter, class, advice).
fn expected() -> Vec<(String, String, String, String)> {
    let doc = std::fs::read_to_string(repo().join("examples/zoo/EXPECTED.md")).unwrap();
    let ticked = |cell: &str| cell.split('`').nth(1).unwrap_or("").to_string();
    let rows: Vec<_> = doc
        .lines()
        .skip_while(|l| !l.starts_with("| kernel (mio bench)"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            (ticked(cells[0]), ticked(cells[3]), cells[4].to_string(), ticked(cells[5]))
        })
        .collect();
    assert_eq!(rows.len(), 3, "EXPECTED.md's mio table changed shape");
    rows
}

/// `cargo kprof import` of a kernel's recorded raw and details pages: its verdict.
fn import(kernel: &str, tmp: &Path) -> (serde_json::Value, String) {
    let inputs = tmp.join(format!("in-{kernel}"));
    let out = tmp.join(kernel);
    let run = crate::support::fs::import_full(&format!("zoo-fixes/ncu/{kernel}"), &inputs, &out);
    assert_eq!(run.status.code(), Some(0), "{kernel}: {}", text(&run.stderr));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("details/bottleneck_decision.json")).unwrap())
            .unwrap();
    let report = std::fs::read_to_string(out.join("final_report.md")).unwrap();
    (doc["kernels"][0].clone(), report)
}

#[test]
fn the_mio_kernels_get_the_expected_cause_priced() {
    let tmp = tempfile::tempdir().unwrap();
    for (kernel, limiter, class, advice) in expected() {
        let (v, report) = import(&kernel, tmp.path());
        let l = &v["limiter"];
        assert_eq!(
            (l["id"].as_str(), v["classification"].as_str(), l["advice_id"].as_str()),
            (Some(limiter.as_str()), Some(class.as_str()), Some(advice.as_str())),
            "{kernel}: {v:#}"
        );
        assert_eq!(v["confidence"], "high", "{kernel}");
        let saving = l["predicted_saving_pct"].as_f64().expect("priced");
        assert!(saving >= 10.0, "{kernel}: {saving}");
        assert!(report.contains("Fixing it could save up to"), "{kernel}: {report}");
        // More evidence than auto's stages: they name the same cause.
        assert!(v.get("refines").is_none(), "{kernel}: {}", v["refines"]);
    }
}

#[test]
fn the_divergent_constant_lookup_names_the_adu_and_ncus_estimate() {
    let tmp = tempfile::tempdir().unwrap();
    let (v, report) = import("const_table_divergent", tmp.path());
    let advice = v["limiter"]["advice"].as_str().unwrap();
    assert!(advice.starts_with("The ADU pipe is 75.98 % busy"), "{advice}");
    assert!(advice.contains("shared memory") && advice.contains("__ldg"), "{advice}");
    // ncu's MIO-throttle finding (CPIStall) agrees, and its estimate is printed beside ours.
    assert_eq!(v["limiter"]["ncu"]["agreeing"], serde_json::json!(["CPIStall"]));
    assert!(v["limiter"]["ncu"]["agreeing_speedup_pct"].as_f64().is_some());
    assert!(report.contains("ncu's own estimate (CPIStall): up to"), "{report}");
}

#[test]
fn shared_atomics_on_a_few_addresses_are_not_bank_conflicts() {
    let tmp = tempfile::tempdir().unwrap();
    let (v, _) = import("smem_atomics_hot", tmp.path());
    assert_eq!(v["limiter"]["id"], "shared-atomics-contention");
    // ncu counts the same-address replays as conflicts (91 % of the wavefronts): the
    // conflicts' limiter is ruled out by the atomics' share of the wavefronts.
    let conflicts = v["evidence"].as_array().unwrap().iter().find(|e| e["field"] == "shared_conflict_pct");
    assert!(conflicts.is_some_and(|e| e["value"].as_f64().unwrap() > 90.0), "{v:#}");
    assert!(!v["other_causes"].as_array().into_iter().flatten().any(|o| o["id"] == "shared-bank-conflicts"));
}

#[test]
fn the_pointer_chase_is_the_occupancy_whatever_was_collected() {
    let tmp = tempfile::tempdir().unwrap();
    let (v, _) = import("pointer_chase_smem200k", tmp.path());
    assert_eq!(v["limiter"]["id"], "occupancy-shared-memory");
    // The scattered 4-byte loads hold too, and are priced lower: memory is not busy.
    let others = v["other_causes"].as_array().unwrap();
    let uncoalesced = others.iter().find(|o| o["id"] == "uncoalesced-global").expect("listed");
    let (mine, theirs) = (
        v["limiter"]["predicted_saving_pct"].as_f64().unwrap(),
        uncoalesced["predicted_saving_pct"].as_f64().unwrap(),
    );
    assert!(mine > theirs + 5.0, "occupancy {mine} % against coalescing {theirs} %");
}
