//! `cargo kprof check --base REV` without a GPU: the worktree of the base, both sides
//! built, the interleaved rounds, the verdict and its exit code, replayed from harness
//! results recorded on the H200.
//!
//! The package's bench stands in for the harness: each run copies the next recorded round
//! of its side (`base` or `head`, a constant that the two revisions spell differently) to
//! `$KPROF_RESULT`, as the real bench wrote it during the recorded A/B check (past the
//! last recorded round, from the first again), and appends its side and `KPROF_CASE` to
//! `$FAKE_LOG` when that is set.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{fake_ncu, recordings, text, Workspace};

/// The stand-in bench of side `side`.
pub(crate) fn bench(side: &str) -> String {
    format!(
        r#"const SIDE: &str = "{side}";
fn main() {{
    assert!(std::env::var_os("KPROF_PROFILE").is_none(), "a timing run has no profiling window");
    let result = std::env::var("KPROF_RESULT").expect("KPROF_RESULT");
    let rounds = std::path::PathBuf::from(std::env::var(format!("FAKE_ROUNDS_{{}}", SIDE.to_uppercase())).expect("FAKE_ROUNDS_<SIDE>"));
    let state = std::path::PathBuf::from(std::env::var("FAKE_STATE").expect("FAKE_STATE"));
    if let Some(log) = std::env::var_os("FAKE_LOG") {{
        use std::io::Write;
        let case = std::env::var("KPROF_CASE").unwrap_or_default();
        let mut log = std::fs::OpenOptions::new().append(true).create(true).open(log).expect("FAKE_LOG");
        writeln!(log, "{{SIDE}} {{case}}").expect("FAKE_LOG");
    }}
    if let Some(log) = std::env::var_os("FAKE_PTX_LOG") {{
        use std::io::Write;
        let dir = std::env::var("KPROF_PTX_CACHE").unwrap_or_default();
        let is_dir = std::path::Path::new(&dir).is_dir();
        let mut log = std::fs::OpenOptions::new().append(true).create(true).open(log).expect("FAKE_PTX_LOG");
        writeln!(log, "{{SIDE}} {{is_dir}} {{dir}}").expect("FAKE_PTX_LOG");
    }}
    for n in 0..1000 {{
        let marker = state.join(format!("{{SIDE}}_{{n:02}}"));
        if std::fs::OpenOptions::new().write(true).create_new(true).open(&marker).is_ok() {{
            // Rounds past the recorded ones (an undecided kernel's extra rounds) replay
            // the recording again from its first round.
            let recorded = (0..1000).map(|m| rounds.join(format!("round_{{m:02}}.json"))).take_while(|p| p.is_file()).count().max(1);
            let recorded = rounds.join(format!("round_{{:02}}.json", n % recorded));
            std::fs::copy(&recorded, &result).unwrap_or_else(|e| panic!("{{}}: {{e}}", recorded.display()));
            return;
        }}
    }}
}}
"#
    )
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
}

/// A package whose committed bench is the base's stand-in and whose working tree holds
/// the head's (uncommitted: the working tree is what a check checks). `None` without git.
pub(crate) fn repository() -> Option<Workspace> {
    repository_with(KERNEL)
}

const KERNEL: &str =
    "[[package.metadata.kprof.kernels]]\nname = \"hgemm_tiled\"\nbench = \"copy\"\ncase = \"hgemm_tiled\"\n";

/// [`repository`] with these kernel entries.
fn repository_with(kernels: &str) -> Option<Workspace> {
    Command::new("git").arg("--version").output().ok()?;
    let ws = Workspace::with_harness(kernels);
    std::fs::write(ws.root().join(".gitignore"), "/target/\n/profile/\n").unwrap();
    std::fs::write(ws.root().join("benches/copy.rs"), bench("base")).unwrap();
    git(ws.root(), &["init", "-q"]);
    for (k, v) in [("user.email", "t@example.com"), ("user.name", "t"), ("commit.gpgsign", "false")] {
        git(ws.root(), &["config", k, v]);
    }
    git(ws.root(), &["add", "-A"]);
    git(ws.root(), &["commit", "-qm", "base"]);
    std::fs::write(ws.root().join("benches/copy.rs"), bench("head")).unwrap();
    Some(ws)
}

/// `cargo-kprof kprof check --base HEAD ARGS` on `ws`, with nothing of the caller's CI
/// (step summary, base branch) or ncu leaking in.
pub(crate) fn check_base(ws: &Workspace, args: &[&str]) -> Command {
    let mut cmd = crate::support::kprof_bin();
    // Stand-in benches: no GPU needed.
    cmd.env("KPROF_SKIP_GPU_CHECK", "1");
    cmd.args(["kprof", "check", "--base", "HEAD"]).args(args);
    cmd.arg("--manifest-path").arg(ws.manifest()).current_dir(ws.root());
    cmd.env("CARGO_TARGET_DIR", ws.root().join("target"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_BASE_REF")
        .env_remove("NCU");
    cmd
}

/// The fake ncu at `ncu`, recording its calls in `argv` and replaying the pages in `replay`.
fn with_fake_ncu<'c>(cmd: &'c mut Command, ncu: &Path, argv: &Path, replay: &Path) -> &'c mut Command {
    cmd.env("NCU", ncu)
        .env("KPROF_SKIP_GPU_CHECK", "1")
        .env("FAKE_NCU_ARGV", argv)
        .env("FAKE_NCU_REPLAY", replay)
}

/// The stand-in bench of each side replays its rounds of the recorded A/B check `run`
/// (`fixtures/h200/ab-runs/<run>/<side>/profile/*/details/rounds/`), keeping its place in
/// `state`.
pub(crate) fn with_rounds<'c>(cmd: &'c mut Command, run: &str, state: &Path) -> &'c mut Command {
    cmd.env("FAKE_ROUNDS_BASE", recorded_rounds(run, "base"))
        .env("FAKE_ROUNDS_HEAD", recorded_rounds(run, "head"))
        .env("FAKE_STATE", state)
}

/// `check --base HEAD --timing-only ARGS`, each side replaying its rounds of `run`.
pub(crate) fn check(ws: &Workspace, run: &str, args: &[&str]) -> Output {
    let state = tempfile::tempdir().unwrap();
    let mut cmd = check_base(ws, &[&["--timing-only"], args].concat());
    with_rounds(&mut cmd, run, state.path()).output().unwrap()
}

pub(crate) fn recorded_rounds(run: &str, side: &str) -> PathBuf {
    only(&recordings().join("ab-runs").join(run).join(side).join("profile"), "").join("details/rounds")
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The one directory under `root` whose name starts with `prefix`.
fn only(root: &Path, prefix: &str) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    assert_eq!(found.len(), 1, "{prefix}* under {}: {found:?}", root.display());
    found.into_iter().next().unwrap()
}

#[test]
fn a_change_against_its_base_revision_is_timed_in_interleaved_rounds_and_judged() {
    let Some(ws) = repository() else { return };
    let out = check(&ws, "bank", &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(10), "{stdout}\n{stderr}");
    // The verdict the H200 run printed from the same rounds.
    assert!(
        stdout.contains("hgemm_tiled: regressed, +428.1 % [+427.8, +428.5] (96 %, 12 rounds"),
        "{stdout}"
    );
    // Both sides ran in every round, the first side alternating.
    let profiles = ws.root().join("profile");
    let head = only(&profiles, "hgemm_tiled_");
    let base = only(&only(&profiles, "base-"), "hgemm_tiled_");
    for n in 0..12 {
        assert!(head.join(format!("details/rounds/round_{n:02}.json")).is_file());
        assert!(base.join(format!("details/rounds/round_{n:02}.json")).is_file());
    }
    let rounds = json(&head.join("comparison/ab_rounds.json"));
    let firsts: Vec<&str> =
        rounds["rounds"].as_array().unwrap().iter().map(|r| r["first"].as_str().unwrap()).collect();
    assert_eq!(firsts[..4], ["base", "head", "base", "head"]);
    let ab = json(&head.join("comparison/ab.json"));
    assert_eq!(ab["result"]["verdict"], "regressed");
    // kprof's worktree of the base sits beside its line-info builds, at the base commit.
    let wt = ws.root().join("target/kprof-base");
    assert!(std::fs::read_to_string(wt.join("benches/copy.rs")).unwrap().contains("\"base\""));
    let report = std::fs::read_to_string(head.join("comparison/regression_report.md")).unwrap();
    assert!(report.starts_with("# A/B check: `hgemm_tiled` against base"), "{report}");
    assert!(report.contains("## Decision rule"), "{report}");
}

/// A/A rounds pass, inside the tolerance after 8 of the 12 rounds (the early look);
/// a second check reuses the base's worktree and build; `--bmf` carries the head's
/// median over the rounds run.
#[test]
fn an_a_a_check_passes_and_the_base_worktree_is_reused() {
    let Some(ws) = repository() else { return };
    let (bmf, gh) = (ws.root().join("bmf.json"), ws.root().join("gh.json"));
    let out =
        check(&ws, "aa-13", &["--bmf", bmf.to_str().unwrap(), "--github-benchmark", gh.to_str().unwrap()]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("hgemm_tiled: unchanged, +0.1 % [-0.0, +0.2] (96 %, 8 rounds"), "{stdout}");
    assert!(
        stderr.contains(
            "Timing `hgemm_tiled`: inside the tolerance after 8 of 12 rounds; no more rounds for it"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("a worktree at"), "{stderr}");
    let b = json(&bmf);
    let latency = &b["demo::hgemm_tiled"]["latency"];
    let mut medians: Vec<f64> = (0..8)
        .map(|n| {
            let round = recorded_rounds("aa-13", "head").join(format!("round_{n:02}.json"));
            json(&round)["cases"][0]["median_ns"].as_f64().unwrap()
        })
        .collect();
    medians.sort_by(f64::total_cmp);
    let v = latency["value"].as_f64().unwrap();
    assert!((v - (medians[3] + medians[4]) / 2.0).abs() < 1e-6, "{b}");
    assert!(latency["lower_value"].as_f64().unwrap() < v && v < latency["upper_value"].as_f64().unwrap());
    // github-action-benchmark's `extra` is the reviewer's line.
    let g = json(&gh);
    assert!(g[0]["extra"].as_str().unwrap().starts_with("hgemm_tiled: unchanged, +0.1 %"), "{g}");
    // Again: the worktree is at the base already, and nothing is rebuilt there.
    let out = check(&ws, "aa-13", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("reusing"), "{}", text(&out.stderr));
}

/// The 3 % slowdown's recorded rounds ([+2.8, +3.0] %) at a tolerance of 2.9 %: the
/// interval straddles it, so the run cannot tell: exit 14, or 0 with `--ambiguous pass`.
#[test]
fn an_interval_across_the_tolerance_is_ambiguous_and_exits_14_unless_allowed() {
    let Some(ws) = repository() else { return };
    let out = check(&ws, "slow3", &["--tolerance-pct", "2.9", "--message-format", "json"]);
    assert_eq!(out.status.code(), Some(14), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> =
        text(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("JSON lines only")).collect();
    let last = lines.last().unwrap();
    assert_eq!(last["reason"], "check-finished");
    assert_eq!(last["verdict"], "ambiguous");
    assert_eq!(last["exit_code"], 14);
    assert_eq!(last["ambiguous"], serde_json::json!(["hgemm_tiled"]));
    let kernel = lines.iter().find(|l| l["reason"] == "ab-comparison").unwrap();
    assert!(kernel["line"].as_str().unwrap().contains("cannot tell at ±2.9 %"), "{kernel}");
    let out = check(&ws, "slow3", &["--tolerance-pct", "2.9", "--ambiguous", "pass"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("cannot tell hgemm_tiled from noise"), "{}", text(&out.stderr));
    // At the default tolerance the same rounds are a regression.
    assert_eq!(check(&ws, "slow3", &[]).status.code(), Some(10));
}

/// Build here, check there: `archive --base` packs both sides into one file, and `check
/// --archive` unpacks them under `--workspace-remap` (`head/`, `base/`) and runs the same
/// A/B check, without cargo.
#[test]
fn an_a_b_archive_carries_both_sides_and_checks_without_cargo() {
    let Some(ws) = repository() else { return };
    let tar = ws.root().join("ab.tar");
    let out = ws.kprof(&["archive", "--base", "HEAD", "-o", tar.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("(A/B: this tree and base "), "{}", text(&out.stdout));
    // No temporary side archive is left beside it.
    let left: Vec<_> = std::fs::read_dir(ws.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // A one-sided check of it needs nothing else; a pair is refused as a one-sided archive.
    let state = tempfile::tempdir().unwrap();
    let remap = ws.root().join("there");
    let mut cmd = crate::support::kprof_bin();
    // Stand-in benches: no GPU needed.
    cmd.env("KPROF_SKIP_GPU_CHECK", "1");
    cmd.args(["kprof", "check", "--timing-only", "--archive"]).arg(&tar).arg("--workspace-remap").arg(&remap);
    cmd.env("FAKE_ROUNDS_BASE", recorded_rounds("bank", "base"))
        .env("FAKE_ROUNDS_HEAD", recorded_rounds("bank", "head"))
        .env("FAKE_STATE", state.path())
        .env("PATH", "/usr/bin:/bin")
        .env_remove("GITHUB_STEP_SUMMARY");
    let out = cmd.output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(10), "{stdout}\n{stderr}");
    assert!(stdout.contains("hgemm_tiled: regressed, +428.1 %"), "{stdout}");
    let head = only(&remap.join("head/workspace/profile"), "hgemm_tiled_");
    let base = only(&remap.join("base/workspace/profile"), "hgemm_tiled_");
    assert!(head.join("comparison/ab.json").is_file());
    assert!(base.join("details/rounds/round_11.json").is_file());
    assert!(!remap.join(".kprof-ab-archives").exists(), "the inner archives are removed once unpacked");
    // The same remap directory again: refused, nothing overwritten.
    let again = cmd.output().unwrap();
    assert_eq!(again.status.code(), Some(12), "{}", text(&again.stderr));
    assert!(text(&again.stderr).contains("is not empty"), "{}", text(&again.stderr));
}

/// A one-sided archive has nothing to compare with unless a baseline is named.
#[test]
fn a_one_sided_archive_without_a_baseline_is_refused_with_the_way_out() {
    let Some(ws) = repository() else { return };
    let tar = ws.root().join("one.tar");
    let out = ws.kprof(&["archive", "-o", tar.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = crate::support::kprof_bin()
        .env("KPROF_SKIP_GPU_CHECK", "1")
        .args(["kprof", "check", "--archive"])
        .arg(&tar)
        .arg("--workspace-remap")
        .arg(ws.root().join("there"))
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("holds one side only") && stderr.contains("archive --base REV"), "{stderr}");
    assert!(!ws.root().join("there").exists(), "nothing unpacked");
}

/// The pages of the recorded run `run`, as the fake ncu replays them call by call: the
/// head's stages first (basic, counters, source, then the follow-up the rules chose), then
/// the base's, as `check --base` runs them.
fn replay_pages(run: &str, into: &Path) {
    replay_these_pages(
        run,
        &["01_basic_raw.csv", "09_counters_raw.csv", "07_source_raw.csv", "03_memory_raw.csv"],
        into,
    );
}

/// [`replay_pages`] for a check whose stages are `pages`, in order.
fn replay_these_pages(run: &str, pages: &[&str], into: &Path) {
    for (side, first) in [("head", 1), ("base", 1 + pages.len())] {
        let details =
            only(&recordings().join("ab-runs").join(run).join(side).join("profile"), "").join("details");
        for (n, page) in pages.iter().enumerate() {
            let call = into.join(format!("call-{}", first + n));
            std::fs::create_dir_all(&call).unwrap();
            std::fs::copy(details.join(page), call.join(page)).unwrap();
        }
    }
}

/// The whole check with ncu: both sides profiled with the same stages plus counters and
/// source (the fake ncu replays the H200's pages and records its calls), the rounds, and
/// a verdict with the counters and hot line as evidence, as the H200 run printed it.
/// `merge` of the profile root then carries the verdict and the exit code.
#[test]
fn a_profiled_check_has_the_counters_and_hot_line_as_evidence_and_merges() {
    let Some(ws) = repository() else { return };
    let tools = ws.root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let ncu = fake_ncu::write(&tools);
    let (argv, replay) = (tools.join("argv.txt"), tools.join("replay"));
    replay_pages("bank", &replay);
    let state = tempfile::tempdir().unwrap();
    let mut cmd = check_base(&ws, &["--clock-control", "none"]);
    with_fake_ncu(&mut cmd, &ncu, &argv, &replay);
    let out = with_rounds(&mut cmd, "bank", state.path()).output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(10), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("hgemm_tiled: regressed, +428.1 % [+427.8, +428.5] (96 %, 12 rounds, resolution ±0.3 %); counters: +141676.4 % bank conflicts (430.7 % of the base's time at shared-memory bandwidth), +507.3 % shared wavefronts (430.7 % of the base's time at shared-memory bandwidth)"),
        "{stdout}"
    );
    assert!(stdout.contains("hotspot: hgemm.cu:48 (72.1 % -> 74.7 %)"), "{stdout}");
    // Each side: basic, then counters and source, then the follow-up; the same filter.
    let calls: Vec<Vec<String>> =
        fake_ncu::calls(&argv).into_iter().filter(|a| a.iter().any(|x| x == "--log-file")).collect();
    assert_eq!(calls.len(), 8, "{calls:?}");
    let metrics = |a: &Vec<String>| a.iter().position(|x| x == "--metrics").map(|i| a[i + 1].clone());
    assert!(metrics(&calls[1]).unwrap().contains("smsp__inst_executed.sum"), "{:?}", calls[1]);
    // Basic's run writes the report the source page is imported from.
    assert!(calls[0].windows(2).any(|w| w == ["--section", "SourceCounters"]), "{:?}", calls[0]);
    let report = &calls[0][calls[0].iter().position(|x| x == "--export").unwrap() + 1];
    assert_eq!(calls[2][..2], ["--import".to_string(), report.clone()], "{:?}", calls[2]);
    for (h, b) in calls[..4].iter().zip(&calls[4..]) {
        let args = |a: &Vec<String>| a.iter().filter(|x| !x.contains('/')).cloned().collect::<Vec<_>>();
        assert_eq!(args(h), args(b), "both sides are profiled alike");
    }
    // The pages: the A/B check of the root, and the head's report with its interval and
    // the two profiled launches side by side.
    let ab_page = std::fs::read_to_string(ws.root().join("profile/ab.html")).unwrap();
    assert!(ab_page.contains("hgemm_tiled") && ab_page.contains("+428.1 % [+427.8, +428.5]"), "{ab_page}");
    let head = only(&ws.root().join("profile"), "hgemm_tiled_");
    let report = std::fs::read_to_string(head.join("report.html")).unwrap();
    for shown in
        ["class=\"ab-interval\"", "bank conflicts", "Hot lines, side by side", "samples on hgemm.cu:48"]
    {
        assert!(report.contains(shown), "report.html lacks {shown}");
    }
    assert!(std::fs::read_to_string(ws.root().join("profile/index.html"))
        .unwrap()
        .contains("regressed +428.1 %"));
    let merged = ws.root().join("merged");
    let out = crate::support::kprof_bin()
        .env("KPROF_SKIP_GPU_CHECK", "1")
        .args(["kprof", "merge"])
        .arg(ws.root().join("profile"))
        .arg("--output-dir")
        .arg(&merged)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(10), "{stdout}\n{stderr}");
    assert!(stdout.contains("hgemm_tiled: regressed, +428.1 %"), "{stdout}");
    assert!(stderr.contains("merge: regression in hgemm_tiled"), "{stderr}");
    assert!(std::fs::read_to_string(merged.join("ab.html")).unwrap().contains("+428.1 % [+427.8, +428.5]"));
}

/// A program that is not a harness bench (a `command` target: PyTorch's layer norm) gets
/// rounds of ncu durations: each round runs both sides under ncu, durations only, with the
/// kernel's filter and window, the first side alternating. The fake ncu replays the H200's
/// pages of that kernel (its memory and source stages, and a basic page, which carries the
/// duration, for every round), the same on both sides: no change.
#[test]
fn a_command_target_is_timed_by_interleaved_ncu_rounds() {
    let entry = "[[package.metadata.kprof.kernels]]\nname = \"torch_layernorm\"\ncommand = [\"python3\", \"torch_layernorm.py\"]\nruntime = \"command\"\nregex = \"layer_norm|LayerNorm\"\nlaunch-skip = 10\nlaunch-count = 1\n";
    let Some(ws) = repository_with(entry) else { return };
    let tools = ws.root().join("tools");
    let replay = tools.join("replay");
    std::fs::create_dir_all(&replay).unwrap();
    let ncu = fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let third = recordings().join("third-party");
    let pages = only(&third.join("torch_layernorm-source/profile"), "torch_layernorm_").join("details");
    for page in ["03_memory_raw.csv", "07_source_raw.csv"] {
        std::fs::copy(pages.join(page), replay.join(page)).unwrap();
    }
    let basic =
        only(&third.join("torch_layernorm/profile"), "torch_layernorm_").join("details/01_basic_raw.csv");
    for n in 0..6 {
        std::fs::copy(&basic, replay.join(format!("round_{n:02}_raw.csv"))).unwrap();
    }
    // Only harness benches can be timed without ncu: refused before anything is built.
    let refused = check_base(&ws, &["--timing-only"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(3), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("--timing-only needs harness targets"),
        "{}",
        text(&refused.stderr)
    );
    assert!(!ws.root().join("target/kprof-base").exists(), "no worktree made");
    let mut cmd = check_base(&ws, &["--gate", "time", "--stages", "memory,source", "--rounds", "6"]);
    let out = with_fake_ncu(&mut cmd, &ncu, &argv, &replay).output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("its rounds are ncu's durations"), "{stderr}");
    assert!(stdout.contains("torch_layernorm: unchanged, +0.0 % [+0.0, +0.0] (97 %, 6 rounds"), "{stdout}");
    // Two stages per side, then six rounds per side: durations only, the kernel's filter
    // and window, alternating sides.
    let calls: Vec<Vec<String>> =
        fake_ncu::calls(&argv).into_iter().filter(|a| a.iter().any(|x| x == "--log-file")).collect();
    assert_eq!(calls.len(), 4 + 12, "{calls:?}");
    let log_of = |a: &Vec<String>| a[a.iter().position(|x| x == "--log-file").unwrap() + 1].clone();
    for (n, call) in calls[4..].iter().enumerate() {
        let joined = call.join(" ");
        assert!(joined.contains("--metrics gpu__time_duration.sum --csv --page raw"), "{joined}");
        assert!(
            joined.contains("--launch-skip 10 --launch-count 1 --kernel-name regex:layer_norm|LayerNorm"),
            "{joined}"
        );
        let round = n / 2;
        let base_first = round % 2 == 0;
        let is_base = log_of(call).contains("/base-");
        assert_eq!(is_base, (n % 2 == 0) == base_first, "call {n}: {}", log_of(call));
        assert!(log_of(call).ends_with(&format!("details/rounds/round_{round:02}_raw.csv")));
    }
    let head = only(&ws.root().join("profile"), "torch_layernorm_");
    let rounds = json(&head.join("comparison/ab_rounds.json"));
    assert_eq!(rounds["source"], "ncu");
    assert_eq!(rounds["mode"], "cold");
    let script = std::fs::read_to_string(head.join("commands.sh")).unwrap();
    assert!(script.contains("# A/B timing rounds (ncu durations)"), "{script}");
}

/// Rounds of two kernels of one program for the stand-in bench, `count` per side: each
/// result holds the `bank` run's case (`hgemm_tiled`, +428 %) and the `aa-13` run's case
/// of the same round renamed `vector_copy` (an A/A: unchanged), as one harness run times
/// both. Returns the directories to replay as the base's and the head's rounds.
fn two_case_rounds(into: &Path, count: usize) -> (PathBuf, PathBuf) {
    let dirs = (into.join("base"), into.join("head"));
    for (side, dir) in [("base", &dirs.0), ("head", &dirs.1)] {
        std::fs::create_dir_all(dir).unwrap();
        for n in 0..count {
            let name = format!("round_{:02}.json", n % 12);
            let mut doc = json(&recorded_rounds("bank", side).join(&name));
            let mut other = json(&recorded_rounds("aa-13", side).join(&name))["cases"][0].clone();
            other["name"] = "vector_copy/m=4096,n=4096,k=4096".into();
            doc["cases"].as_array_mut().unwrap().push(other);
            std::fs::write(dir.join(format!("round_{n:02}.json")), doc.to_string()).unwrap();
        }
    }
    dirs
}

/// `check --base HEAD --timing-only --workspace ARGS` of `ws` (every kernel), replaying `rounds` (base, head) and
/// logging each bench start to `log`.
fn check_logged(ws: &Workspace, rounds: &(PathBuf, PathBuf), log: &Path, args: &[&str]) -> Output {
    let state = tempfile::tempdir().unwrap();
    let mut cmd = check_base(ws, &[&["--timing-only", "--workspace"], args].concat());
    cmd.env("FAKE_ROUNDS_BASE", &rounds.0)
        .env("FAKE_ROUNDS_HEAD", &rounds.1)
        .env("FAKE_STATE", state.path())
        .env("FAKE_LOG", log)
        .env_remove("KPROF_NO_BATCH");
    cmd.output().unwrap()
}

/// Two harness kernels of one bench: each round starts each side's bench once, selecting
/// both cases, and each kernel gets its own verdict out of the shared results, the same
/// as it gets from rounds of its own. `--no-batch` times them one at a time again.
#[test]
fn the_kernels_of_one_program_share_each_rounds_runs_and_keep_their_own_verdicts() {
    let kernels = format!(
        "{KERNEL}\n[[package.metadata.kprof.kernels]]\nname = \"vector_copy\"\nbench = \"copy\"\ncase = \"vector_copy\"\n"
    );
    let Some(ws) = repository_with(&kernels) else { return };
    let rounds = two_case_rounds(&ws.root().join("recorded"), 24);
    let log = ws.root().join("starts.log");
    let out = check_logged(&ws, &rounds, &log, &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(10), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("Timing 2 kernels of `copy`: 12 interleaved rounds of base and head"),
        "{stderr}"
    );
    // The verdicts the H200 runs printed, each from rounds of its own.
    assert!(
        stdout.contains("hgemm_tiled: regressed, +428.1 % [+427.8, +428.5] (96 %, 12 rounds"),
        "{stdout}"
    );
    assert!(stdout.contains("vector_copy: unchanged, +0.1 % [-0.0, +0.2] (96 %, 8 rounds"), "{stdout}");
    assert!(stderr.contains("Timing `vector_copy`: inside the tolerance after 8 of 12 rounds"), "{stderr}");
    // Each round's line names its kernel: one program's rounds time both.
    for kernel in ["hgemm_tiled", "vector_copy"] {
        assert!(stderr.contains(&format!("  round  1 `{kernel}`: base ")), "{stderr}");
    }
    // One start per side and round, base first in even rounds, both cases selected until
    // `vector_copy` stops after 8 rounds; then `hgemm_tiled`'s case alone.
    let starts = std::fs::read_to_string(&log).unwrap();
    let starts: Vec<&str> = starts.lines().collect();
    assert_eq!(starts.len(), 24, "{starts:?}");
    for (n, start) in starts.iter().enumerate() {
        let base_first = (n / 2) % 2 == 0;
        let side = if (n % 2 == 0) == base_first { "base" } else { "head" };
        let cases = if n < 16 { "(?:hgemm_tiled)|(?:vector_copy)" } else { "hgemm_tiled" };
        assert_eq!(*start, format!("{side} {cases}"), "start {n}");
    }
    let profiles = ws.root().join("profile");
    let base_root = only(&profiles, "base-");
    for (kernel, ran) in [("hgemm_tiled_", 12), ("vector_copy_", 8)] {
        let (head, base) = (only(&profiles, kernel), only(&base_root, kernel));
        assert!(!head.join(format!("details/rounds/round_{ran:02}.json")).exists(), "{kernel}");
        for n in 0..ran {
            assert!(head.join(format!("details/rounds/round_{n:02}.json")).is_file(), "{kernel} {n}");
            assert!(base.join(format!("details/rounds/round_{n:02}.json")).is_file(), "{kernel} {n}");
        }
        let rounds = json(&head.join("comparison/ab_rounds.json"));
        assert_eq!(rounds["rounds"].as_array().unwrap().len(), ran);
        assert!(rounds["case"].as_str().unwrap().starts_with(kernel.trim_end_matches('_')), "{rounds}");
        let script = std::fs::read_to_string(head.join("commands.sh")).unwrap();
        let (other, result) = match kernel {
            "hgemm_tiled_" => ("`vector_copy`", "written here and copied to theirs"),
            _ => ("`hgemm_tiled`", "written to `hgemm_tiled`'s details/rounds and copied here"),
        };
        assert!(script.contains(&format!("shared with {other}")) && script.contains(result), "{script}");
    }
    // `--no-batch`: a start per kernel, side and round, each selecting its own case.
    std::fs::remove_file(&log).unwrap();
    let out = check_logged(&ws, &rounds, &log, &["--no-batch"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("vector_copy: unchanged, +0.1 %"), "{}", text(&out.stdout));
    let starts = std::fs::read_to_string(&log).unwrap();
    let cases: Vec<&str> = starts.lines().map(|l| l.split_once(' ').unwrap().1).collect();
    assert_eq!(cases.len(), 24 + 16, "{starts}");
    assert!(
        cases[..24].iter().all(|c| *c == "hgemm_tiled") && cases[24..].iter().all(|c| *c == "vector_copy"),
        "{starts}"
    );
}

/// A kernel the rounds leave ambiguous gets as many rounds again, once, when those could
/// decide it (an A/A run's ±0.1 % interval at a tolerance of 0.1 %), and none when they
/// could not (the same interval at 0.06 %: exit 14 after 12 rounds). In a program's
/// shared rounds only the undecided kernel's case runs again.
#[test]
fn an_undecided_kernel_gets_more_rounds_only_when_they_could_decide_it() {
    let Some(ws) = repository() else { return };
    let out = check(&ws, "aa-13", &["--tolerance-pct", "0.1"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "Timing `hgemm_tiled`: undecided after 12 rounds, where 12 more could decide; running them"
        ),
        "{stderr}"
    );
    assert!(stdout.contains("hgemm_tiled: unchanged, +0.0 % [-0.0, +0.1] (95 %, 24 rounds"), "{stdout}");
    let head = only(&ws.root().join("profile"), "hgemm_tiled_");
    assert!(head.join("details/rounds/round_23.json").is_file());
    assert_eq!(json(&head.join("comparison/ab_rounds.json"))["rounds"].as_array().unwrap().len(), 24);
    let script = std::fs::read_to_string(head.join("commands.sh")).unwrap();
    assert!(
        script.contains("# A/B timing rounds 13-24, run because the first 12 could not decide"),
        "{script}"
    );

    let out = check(&ws, "aa-13", &["--tolerance-pct", "0.06"]);
    assert_eq!(out.status.code(), Some(14), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("undecided after"), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("(96 %, 12 rounds"), "{}", text(&out.stdout));
}

/// Of two kernels timed by one program's rounds, only the undecided one runs again, and
/// its program then selects its case alone.
#[test]
fn only_the_undecided_kernel_of_a_program_runs_again() {
    let kernels = format!(
        "{KERNEL}\n[[package.metadata.kprof.kernels]]\nname = \"vector_copy\"\nbench = \"copy\"\ncase = \"vector_copy\"\n"
    );
    let Some(ws) = repository_with(&kernels) else { return };
    let rounds = two_case_rounds(&ws.root().join("recorded"), 24);
    let log = ws.root().join("starts.log");
    let out = check_logged(&ws, &rounds, &log, &["--tolerance-pct", "0.1"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(10), "{stdout}\n{stderr}");
    assert!(stderr.contains("Timing `vector_copy`: undecided after 12 rounds"), "{stderr}");
    assert!(
        stdout.contains("hgemm_tiled: regressed, +428.1 % [+427.8, +428.5] (96 %, 12 rounds"),
        "{stdout}"
    );
    assert!(stdout.contains("vector_copy: unchanged"), "{stdout}");
    let starts = std::fs::read_to_string(&log).unwrap();
    let cases: Vec<&str> = starts.lines().map(|l| l.split_once(' ').unwrap().1).collect();
    assert_eq!(cases.len(), 48, "{starts}");
    assert!(cases[..24].iter().all(|c| *c == "(?:hgemm_tiled)|(?:vector_copy)"), "{starts}");
    assert!(cases[24..].iter().all(|c| *c == "vector_copy"), "{starts}");
}

/// Each side's harness runs share a folder of NVRTC output (`KPROF_PTX_CACHE`): one per
/// side, present while the check runs, beside the side's profiles, and gone after it.
#[test]
fn each_side_compiles_into_its_own_ptx_cache_that_the_check_removes() {
    let Some(ws) = repository() else { return };
    let state = tempfile::tempdir().unwrap();
    let log = ws.root().join("ptx.log");
    let mut cmd = check_base(&ws, &["--timing-only"]);
    let out = with_rounds(&mut cmd, "aa-13", state.path()).env("FAKE_PTX_LOG", &log).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines = std::fs::read_to_string(&log).unwrap();
    let mut dirs = std::collections::BTreeMap::new();
    for line in lines.lines() {
        let mut words = line.splitn(3, ' ');
        let (side, is_dir, dir) = (words.next().unwrap(), words.next().unwrap(), words.next().unwrap());
        assert_eq!(is_dir, "true", "the folder exists while the bench runs: {line}");
        assert_eq!(dirs.entry(side.to_string()).or_insert(dir.to_string()), dir, "one folder per side");
    }
    // 8 rounds of each side: the A/A rounds are inside the tolerance at the first look.
    assert_eq!(lines.lines().count(), 16, "{lines}");
    let (base, head) = (Path::new(&dirs["base"]), Path::new(&dirs["head"]));
    assert_ne!(base, head);
    assert!(head.starts_with(ws.root().join("profile")), "{}", head.display());
    assert!(head.file_name().unwrap().to_str().unwrap().starts_with(".ptx-cache-"), "{}", head.display());
    assert!(!base.exists() && !head.exists(), "removed when the check ended");
}

/// The recorded instruction-count change (`fixtures/h200/ab-runs/insts`: `copy` runs 46 %
/// more instructions at the same speed). The interleaved rounds call it unchanged; the
/// counters alone fail the check, exit 10. With `--gate time` the same replay passes: the
/// counters were what decided.
#[test]
fn a_change_only_the_counters_see_fails_the_check_with_exit_10() {
    let copy = "[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\ncase = \"copy\"\n";
    let with_counters = ["01_basic_raw.csv", "09_counters_raw.csv", "07_source_raw.csv", "03_memory_raw.csv"];
    let without = ["01_basic_raw.csv", "07_source_raw.csv", "03_memory_raw.csv"];
    for (gate, code, pages) in [("both", 10, &with_counters[..]), ("time", 0, &without[..])] {
        let Some(ws) = repository_with(copy) else { return };
        let tools = ws.root().join("tools");
        std::fs::create_dir_all(&tools).unwrap();
        let ncu = fake_ncu::write(&tools);
        let (argv, replay) = (tools.join("argv.txt"), tools.join("replay"));
        replay_these_pages("insts", pages, &replay);
        let state = tempfile::tempdir().unwrap();
        let mut cmd = check_base(&ws, &["--clock-control", "none", "--gate", gate]);
        with_fake_ncu(&mut cmd, &ncu, &argv, &replay);
        let out = with_rounds(&mut cmd, "insts", state.path()).output().unwrap();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(code), "--gate {gate}: {stdout}\n{stderr}");
        let says = if gate == "both" {
            "copy: regressed (timing calls it unchanged, counters moved), +0.0 % [-0.3, +0.4] (96 %, 8 rounds, \
             resolution ±0.4 %); counters: +45.9 % instructions"
        } else {
            "copy: unchanged, +0.0 % [-0.3, +0.4] (96 %, 8 rounds, resolution ±0.4 %)"
        };
        assert!(stdout.contains(says), "--gate {gate}: {stdout}");
    }
}

/// #43: with the planner on, each side's first run collects the counters with basic and
/// the likely follow-ups (one program start per side fewer than a counters run of their
/// own); the hot lines are still imported from that run's report. The dry run shows both
/// sides' plans.
#[test]
fn with_the_planner_the_counters_join_each_side_s_first_run() {
    let Some(ws) = repository() else { return };
    let history = ws.root().join("no-history.jsonl");
    let mut cmd = check_base(&ws, &["--dry-run"]);
    let out = cmd.env("KPROF_PLAN", "auto").env("KPROF_COST_HISTORY", &history).output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let merged = "# Stage basic+memory+compute+occupancy+counters (batched: hgemm_tiled; about ";
    assert_eq!(stdout.matches(merged).count(), 2, "{stdout}");
    assert!(!stdout.contains("# Stage counters (batched"), "{stdout}");
    assert_eq!(stdout.matches("# Stage source (batched: hgemm_tiled").count(), 2, "{stdout}");
    let cost = stdout.lines().find(|l| l.starts_with("# Cost: about ")).unwrap();
    assert!(cost.contains("then a follow-up run and a counters run;"), "{cost}");
    // KPROF_PLAN=fixed: each side's counters get a run of their own.
    let out = check_base(&ws, &["--dry-run"]).env("KPROF_COST_HISTORY", &history).output().unwrap();
    let stdout = text(&out.stdout);
    assert!(!stdout.contains("+counters") && stdout.contains("counters"), "{stdout}");
}
