//! A census's batched picks name their windows as ranges of invocation numbers, so the
//! ncu command line stays short whatever the window (issue #45, G1): `--launch-count
//! 25000` listed every number in one argument, past Linux's 128 KiB, and the failure to
//! start ncu was blamed on the profiled program (exit 8).

use crate::census::{arg_after, burn_mlp_replay};
use crate::support::fake_ncu::calls;
use crate::support::{text, Workspace};

/// The H200 run of a burn program's census (`fixtures/h200/census/burn-mlp/`), replayed
/// with `extra` arguments: the console and the batched basic run's argv.
fn replay(extra: &[&str]) -> (Option<i32>, String, Vec<String>) {
    replay_with(extra, |page| page)
}

/// [`replay`] with the census page changed by `edit`.
fn replay_with(extra: &[&str], edit: impl Fn(String) -> String) -> (Option<i32>, String, Vec<String>) {
    let ws = Workspace::new("");
    let replay = burn_mlp_replay(&ws, edit);
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

/// #45 G9: the census took any duration: `1e308`, `nan`, `inf` and negative ones gave
/// "inf s", "NaN %" and a breakdown it could not read back. They are refused as the
/// import refuses them (exit 3), naming the kernel and the value.
#[test]
fn a_census_page_with_a_duration_ncu_cannot_measure_is_refused() {
    for value in ["1e308", "nan", "inf", "-5"] {
        let (code, stderr, _) =
            replay_with(&[], |page| crate::page_values::with_cell(&page, "gpu__time_duration.sum", value));
        assert_eq!(code, Some(3), "{value}: {stderr}");
        assert!(stderr.contains("gpu__time_duration.sum") && stderr.contains("help:"), "{value}: {stderr}");
        assert!(!stderr.contains("NaN %") && !stderr.contains("inf s"), "{value}: {stderr}");
    }
}
