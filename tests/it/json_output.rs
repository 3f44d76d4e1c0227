//! `--message-format json`: stdout is JSON lines and nothing else, as cargo's is, for every
//! command that takes the flag; text for people goes to stderr.

use std::path::Path;
use std::process::Output;

use crate::support::{copy_dir, fake_ncu, fixture_details, recordings, text, Workspace};

const COPY: &str =
    "[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\nruntime = \"harness\"\n";

/// Asserts that the run wrote at least one line to stdout and that every line is a JSON
/// object with a `reason` or a `kernels` field; returns the objects.
fn json_lines(what: &str, out: &Output, codes: &[i32]) -> Vec<serde_json::Value> {
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        codes.contains(&out.status.code().unwrap_or(-1)),
        "{what}: exit {:?}\n{stderr}",
        out.status.code()
    );
    assert!(!stdout.trim().is_empty(), "{what}: nothing on stdout\n{stderr}");
    stdout
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| {
                panic!("{what}: a stdout line is not JSON ({e}): {line:?}\nstderr:\n{stderr}")
            });
            assert!(
                v.is_object() && (v.get("reason").is_some() || v.get("kernels").is_some()),
                "{what}: {line}"
            );
            v
        })
        .collect()
}

fn kprof(args: &[&str], cwd: &Path, env: &[(&str, &Path)]) -> Output {
    let mut cmd = crate::support::kprof_bin();
    cmd.arg("kprof").args(args).current_dir(cwd).env_remove("NCU").env("KPROF_SKIP_GPU_CHECK", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn every_command_prints_only_json_lines_on_stdout() {
    let ws = Workspace::new(COPY);
    let root = ws.root();
    let manifest = ws.manifest();
    let manifest = manifest.to_str().unwrap();
    let tools = root.join("tools");
    let ncu = fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let replay = fixture_details("copy_20261129_213211");
    let target = root.join("target");
    let env: Vec<(&str, &Path)> = vec![
        ("NCU", &ncu),
        ("FAKE_NCU_ARGV", &argv),
        ("FAKE_NCU_REPLAY", &replay),
        ("CARGO_TARGET_DIR", &target),
    ];
    let json = ["--message-format", "json"];
    let with = |args: &[&str]| -> Vec<String> {
        args.iter()
            .chain(json.iter())
            .chain(["--manifest-path", manifest].iter())
            .map(|s| s.to_string())
            .collect()
    };
    let run = |what: &str, args: Vec<String>, codes: &[i32]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        json_lines(what, &kprof(&args, root, &env), codes)
    };

    let list = run("list", with(&["list"]), &[0]);
    assert_eq!(list[0]["kernels"][0]["name"], "copy");
    let dry = run("dry-run", with(&["--kernel", "copy", "--dry-run"]), &[0]);
    assert_eq!(dry.last().unwrap()["reason"], "dry-run", "{dry:?}");
    let profiled = run("profile", with(&["--kernel", "copy"]), &[0]);
    assert!(profiled.iter().any(|v| v["reason"] == "analysed"), "{profiled:?}");
    // The stages' progress comes as events too, each start before its end, in order.
    let stages: Vec<(&str, &str)> = profiled
        .iter()
        .filter(|v| v["reason"] == "stage-started" || v["reason"] == "stage-done")
        .map(|v| (v["reason"].as_str().unwrap(), v["stage"].as_str().unwrap()))
        .collect();
    assert_eq!(stages.first(), Some(&("stage-started", "basic")), "{profiled:?}");
    assert_eq!(stages.get(1), Some(&("stage-done", "basic")), "{profiled:?}");
    assert!(stages.len() >= 4 && stages.len() % 2 == 0, "{stages:?}");
    let done = profiled.iter().find(|v| v["reason"] == "stage-done").unwrap();
    assert_eq!(done["status"], "ok");
    assert!(done["passes"].as_u64().is_some_and(|p| p > 0), "{done}");
    // A failed run says so on stdout too: one error object with the exit code.
    let failed = run("a kernel nobody configured", with(&["--kernel", "nosuchkernel"]), &[3]);
    let error = failed.last().unwrap();
    assert_eq!(error["reason"], "error", "{failed:?}");
    assert_eq!(error["exit_code"], 3);
    assert!(error["message"].as_str().unwrap().contains("nosuchkernel"), "{error}");
    let archive = root.join("copy.tar");
    let packed =
        run("archive", with(&["archive", "--kernel", "copy", "-o", archive.to_str().unwrap()]), &[0]);
    assert!(packed.iter().any(|v| v["reason"] == "archive-written"), "{packed:?}");
    let remap = root.join("remote");
    let args = ["run", "--archive", archive.to_str().unwrap(), "--workspace-remap", remap.to_str().unwrap()];
    let ran = run("run", args.iter().chain(json.iter()).map(|s| s.to_string()).collect(), &[0]);
    assert!(ran.iter().any(|v| v["reason"] == "analysed"), "{ran:?}");
    // check: not a harness run here (runtime cuda has no timing), saved, then gated.
    let cuda = "[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\nruntime = \"cuda\"\n";
    let gate = Workspace::new(cuda);
    let gate_manifest = gate.manifest();
    let gated = |args: &[&str]| -> Vec<String> {
        args.iter()
            .chain(json.iter())
            .chain(["--manifest-path", gate_manifest.to_str().unwrap()].iter())
            .map(|s| s.to_string())
            .collect()
    };
    let gate_target = gate.root().join("target");
    let gate_env: Vec<(&str, &Path)> = vec![
        ("NCU", &ncu),
        ("FAKE_NCU_ARGV", &argv),
        ("FAKE_NCU_REPLAY", &replay),
        ("CARGO_TARGET_DIR", &gate_target),
    ];
    let check = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        json_lines("check", &kprof(&args, gate.root(), &gate_env), &[0])
    };
    check(gated(&["check", "--kernel", "copy", "--save-baseline", "main"]));
    let bmf = gate.root().join("bmf.json");
    let checked =
        check(gated(&["check", "--kernel", "copy", "--baseline", "main", "--bmf", bmf.to_str().unwrap()]));
    assert!(checked.iter().any(|v| v["reason"] == "check-finished"), "{checked:?}");
    // No harness timing: the latency is ncu's duration of the profiled launch, no bounds.
    let compared = checked.iter().find(|v| v["reason"] == "comparison").unwrap();
    let bmf: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&bmf).unwrap()).unwrap();
    let ncu_duration = &compared["duration"]["current_ns"];
    assert_eq!(
        bmf["demo::copy"],
        serde_json::json!({"latency": {"value": ncu_duration}, "ncu-duration": {"value": ncu_duration}})
    );

    // compare, import, report and doctor need no workspace.
    let tmp = tempfile::tempdir().unwrap();
    for (run, name) in [
        ("check-runs/rerun", "hgemm_tiled_20261129_231734"),
        ("check-runs/slow", "hgemm_tiled_20261129_231749"),
    ] {
        copy_dir(
            &recordings().join(run).join("workspace/profile").join(name),
            &tmp.path().join("profile").join(name),
        );
    }
    let slow = "profile/hgemm_tiled_20261129_231749";
    std::fs::remove_dir_all(tmp.path().join(slow).join("comparison")).ok();
    let compared =
        json_lines("compare", &kprof(&["compare", slow, "--message-format", "json"], tmp.path(), &[]), &[0]);
    assert_eq!(compared[0]["reason"], "comparison");
    let raw = replay.join("01_basic_raw.csv");
    let imported = json_lines(
        "import",
        &kprof(
            &[
                "import",
                "--raw",
                raw.to_str().unwrap(),
                "--output-dir",
                "imported",
                "--message-format",
                "json",
            ],
            tmp.path(),
            &[],
        ),
        &[0],
    );
    assert_eq!(imported[0]["reason"], "analysed");
    let reported = json_lines(
        "report",
        &kprof(&["report", "imported", "--message-format", "json"], tmp.path(), &[]),
        &[0],
    );
    // The files `report` rewrote, then its result.
    assert_eq!(reported[0]["reason"], "files-rewritten");
    assert_eq!(reported.last().unwrap()["reason"], "analysed");
    // doctor fails here (no GPU), and still prints only JSON.
    let doctor =
        json_lines("doctor", &kprof(&["doctor", "--message-format", "json"], tmp.path(), &[]), &[0, 5, 7]);
    assert!(doctor.iter().any(|v| v["reason"] == "doctor-check"), "{doctor:?}");
    assert_eq!(doctor.last().unwrap()["reason"], "doctor-finished");
}

#[test]
fn a_command_line_that_does_not_parse_still_ends_with_an_error_object() {
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        &["--frobnicate", "--message-format", "json"][..],
        &["list", "--message-format=json", "--kernel", "x"][..],
        &["check", "--message-format", "json"][..],
    ] {
        let out = kprof(args, tmp.path(), &[]);
        let lines = json_lines(&args.join(" "), &out, &[2]);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0]["reason"], "error");
        assert_eq!(lines[0]["exit_code"], 2);
    }
    // `check` alone names both things it can compare with.
    let out = kprof(&["check"], tmp.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    for needle in ["--baseline NAME", "--base [REV]", "cargo kprof check --base"] {
        assert!(stderr.contains(needle), "{needle:?} missing from:\n{stderr}");
    }
    assert!(text(&out.stdout).is_empty(), "human mode prints nothing on stdout");
}
