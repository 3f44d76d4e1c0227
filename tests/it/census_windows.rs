//! A census's batched picks name their windows as ranges of invocation numbers, so the
//! ncu command line stays short whatever the window (issue #45, G1): `--launch-count
//! 25000` listed every number in one argument, past Linux's 128 KiB, and the failure to
//! start ncu was blamed on the profiled program (exit 8).

use crate::census::arg_after;
use crate::support::fake_ncu::calls;
use crate::support::{text, Workspace};

/// The H200 run of a burn program's census (`fixtures/h200/census/burn-mlp/`), replayed
/// with `extra` arguments: the console and the batched basic run's argv.
fn replay(extra: &[&str]) -> (Option<i32>, String, Vec<String>) {
    let ws = Workspace::new("");
    let at = "census/burn-mlp";
    let replay = ws.root().join("replay");
    std::fs::create_dir_all(&replay).unwrap();
    for (from, page) in
        [("census", "00_discovery_raw.csv"), ("batch", "01_basic_raw.csv"), ("batch", "07_source_raw.csv")]
    {
        std::fs::write(replay.join(page), crate::support::recording(&format!("{at}/{from}/{page}"))).unwrap();
    }
    let tools = ws.root().join("tools");
    let ncu = crate::support::fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let mut args =
        vec!["--bench", "copy", "--top", "5", "--stages", "basic,source", "--clock-control", "none"];
    args.extend_from_slice(extra);
    let out = ws.kprof_replaying(&args, &ncu, &argv, &replay);
    let runs: Vec<Vec<String>> =
        calls(&argv).into_iter().filter(|a| a.iter().any(|x| x == "--log-file")).collect();
    let batched = runs.into_iter().find(|r| r.iter().any(|a| a == "--kernel-id")).unwrap_or_default();
    (out.status.code(), text(&out.stderr), batched)
}

#[test]
fn a_window_of_tens_of_thousands_of_launches_is_one_short_argument() {
    let (code, stderr, batched) = replay(&["--launch-count", "25000"]);
    assert_eq!(code, Some(0), "{stderr}");
    let id = arg_after(&batched, "--kernel-id").expect("a batched run");
    assert!(id.len() < 2048, "{} bytes: {id}", id.len());
    let longest = batched.iter().map(String::len).max().unwrap();
    assert!(longest < 4096, "an argument of {longest} bytes");
}
