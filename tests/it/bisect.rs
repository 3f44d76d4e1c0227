//! `cargo kprof bisect` without a GPU, on a generated git history: each commit's bench is
//! the stand-in of `ab.rs`, replaying the rounds of a side of an A/B check recorded on the
//! H200 (`aa-13`'s two sides for revisions as fast as `--good`, `bank`'s head, +428 %,
//! for the regressed ones, `slow3`'s head, about +3 %, for a small slowdown). Commits that
//! change nothing else edit a notes file; one commit's bench does not compile.

use std::path::Path;
use std::process::{Command, Output};

use crate::ab::{bench, recorded_rounds};
use crate::support::{text, Workspace};

const KERNEL: &str =
    "[[package.metadata.kprof.kernels]]\nname = \"hgemm_tiled\"\nbench = \"copy\"\ncase = \"hgemm_tiled\"\n";

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    text(&out.stdout).trim().to_string()
}

/// What one commit of the generated history does.
pub(crate) enum Change {
    /// The bench replays this side's rounds (`FAKE_ROUNDS_<SIDE>`).
    Bench(&'static str),
    /// The bench no longer compiles.
    Broken,
    /// Only the notes file changes.
    Notes,
}

/// Commits `changes` on top of the checked-out branch, one each, subject `c<N>` from
/// `first`; returns their hashes.
pub(crate) fn commit_all(ws: &Workspace, first: usize, changes: &[Change]) -> Vec<String> {
    let mut hashes = Vec::new();
    for (n, change) in changes.iter().enumerate() {
        let n = first + n;
        match change {
            Change::Bench(side) => std::fs::write(ws.root().join("benches/copy.rs"), bench(side)).unwrap(),
            Change::Broken => {
                let broken = bench("head") + "\ncompile_error!(\"this revision does not build\");\n";
                std::fs::write(ws.root().join("benches/copy.rs"), broken).unwrap()
            }
            Change::Notes => std::fs::write(ws.root().join("NOTES.txt"), format!("note {n}\n")).unwrap(),
        }
        git(ws.root(), &["add", "-A"]);
        git(ws.root(), &["commit", "-qm", &format!("c{n}")]);
        hashes.push(git(ws.root(), &["rev-parse", "HEAD"]));
    }
    hashes
}

/// The history: c0 is the good revision (`aa-13`'s base), c1 names the bench's side
/// `head` (`aa-13`'s head: an A/A partner, unchanged), c5 does not build, c6 mends it,
/// c7 plants the regression (`bank`), c8 to c10 keep it. `None` without git.
pub(crate) fn history() -> Option<(Workspace, Vec<String>)> {
    use Change::*;
    let changes = [
        Bench("base"),
        Bench("head"),
        Notes,
        Notes,
        Notes,
        Broken,
        Bench("head"),
        Bench("bank"),
        Notes,
        Notes,
        Notes,
    ];
    history_of(&changes)
}

/// A git repository of the harness package whose commits make `changes`, one each; their
/// hashes. `None` without git.
pub(crate) fn history_of(changes: &[Change]) -> Option<(Workspace, Vec<String>)> {
    Command::new("git").arg("--version").output().ok()?;
    let ws = Workspace::with_harness(KERNEL);
    std::fs::write(ws.root().join(".gitignore"), "/target/\n/profile/\n").unwrap();
    git(ws.root(), &["init", "-q", "-b", "main"]);
    for (k, v) in [("user.email", "t@example.com"), ("user.name", "t"), ("commit.gpgsign", "false")] {
        git(ws.root(), &["config", k, v]);
    }
    let hashes = commit_all(&ws, 0, changes);
    Some((ws, hashes))
}

/// `cargo-kprof kprof bisect --timing-only ARGS --message-format json`, the benches
/// replaying their recorded rounds; the JSON lines and the output.
fn bisect(ws: &Workspace, args: &[&str], log: &Path) -> (Output, Vec<serde_json::Value>) {
    let out = bisect_as(ws, &[args, &["--message-format", "json"]].concat(), log);
    let lines = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (out, lines)
}

/// `cargo-kprof kprof bisect --timing-only -k hgemm_tiled ARGS`, the benches replaying
/// their recorded rounds, appending their side to `log`.
fn bisect_as(ws: &Workspace, args: &[&str], log: &Path) -> Output {
    let state = tempfile::tempdir().unwrap();
    bisect_command(ws, args, state.path(), log).output().unwrap()
}

/// The command [`bisect_as`] runs, the benches keeping their places in `state`.
pub(crate) fn bisect_command(ws: &Workspace, args: &[&str], state: &Path, log: &Path) -> Command {
    let mut cmd = crate::support::kprof_bin();
    cmd.args(["kprof", "bisect", "--timing-only", "-k", "hgemm_tiled"]).args(args);
    cmd.arg("--manifest-path").arg(ws.manifest()).current_dir(ws.root());
    cmd.env("CARGO_TARGET_DIR", ws.root().join("target"));
    replaying(&mut cmd, state, log);
    cmd
}

/// The environment of a bisect whose benches replay their recorded rounds, keeping their
/// places in `state` and appending their side to `log`.
pub(crate) fn replaying(cmd: &mut Command, state: &Path, log: &Path) {
    cmd.env("KPROF_SKIP_GPU_CHECK", "1")
        .env("FAKE_ROUNDS_BASE", recorded_rounds("aa-13", "base"))
        .env("FAKE_ROUNDS_HEAD", recorded_rounds("aa-13", "head"))
        .env("FAKE_ROUNDS_BANK", recorded_rounds("bank", "head"))
        .env("FAKE_ROUNDS_SLOW", recorded_rounds("slow3", "head"))
        .env("FAKE_STATE", state)
        .env("FAKE_LOG", log)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_BASE_REF")
        .env_remove("NCU");
}

/// `ceil(log2 n) + 1`.
pub(crate) fn bound(n: usize) -> usize {
    (n as f64).log2().ceil() as usize + 1
}

pub(crate) fn short(hash: &str) -> &str {
    &hash[..12]
}

/// Each step's outcome and rounds at `commit`, in order.
pub(crate) fn outcomes_at<'l>(steps: &[&'l serde_json::Value], commit: &str) -> Vec<(&'l str, u64)> {
    steps
        .iter()
        .filter(|s| s["commit"] == short(commit))
        .map(|s| (s["outcome"].as_str().unwrap(), s["rounds"].as_u64().unwrap()))
        .collect()
}

pub(crate) fn with_reason<'l>(lines: &'l [serde_json::Value], reason: &str) -> Vec<&'l serde_json::Value> {
    lines.iter().filter(|l| l["reason"] == reason).collect()
}

/// A bisect of `good..bad` names `planted` within `ceil(log2 n) + 1` checks and exits 10;
/// returns its steps.
fn names_the_planted_commit(
    ws: &Workspace,
    c: &[String],
    (good, bad, planted): (usize, usize, usize),
) -> Vec<serde_json::Value> {
    let log = ws.root().join(format!("runs-{good}-{bad}.log"));
    let (out, lines) = bisect(ws, &["--good", &c[good], "--bad", &c[bad]], &log);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "c{good}..c{bad}: {stderr}\n{lines:?}");
    let end = with_reason(&lines, "bisect-finished");
    let end = end.last().unwrap();
    assert_eq!(end["result"], "first-bad", "{end}");
    assert_eq!(end["commit"], short(&c[planted]), "c{good}..c{bad}: {end}");
    assert_eq!(end["subject"], format!("c{planted}"));
    assert!(end["evidence"][0].as_str().unwrap().starts_with("hgemm_tiled: regressed, +4"), "{end}");
    let steps: Vec<serde_json::Value> = with_reason(&lines, "bisect-step").into_iter().cloned().collect();
    let checks = steps.iter().filter(|s| s["outcome"] != "skipped").count();
    let n = bad - good;
    assert!(checks <= bound(n), "c{good}..c{bad}: {checks} checks for {n} revisions: {steps:?}");
    assert_eq!(end["checks"], checks);
    assert_eq!(end["check_bound"], bound(n));
    // `--bad` first.
    assert_eq!(steps[0]["commit"], short(&c[bad]));
    assert_eq!(steps[0]["outcome"], "regressed");
    steps
}

/// The regression planted at c7 is named from several windows of the history (k = 6 of
/// 10, 7 of 7, 1 of 4, 3 of 3), each within `ceil(log2 n) + 1` checks; where the search
/// meets the revision that does not build, it skips it, names it, and goes around it.
/// Every step reuses `--good`'s worktree and build, and `bisect.json` and `bisect.md`
/// record the steps.
#[test]
fn bisect_names_the_planted_commit_and_skips_a_broken_build() {
    let Some((ws, c)) = history() else { return };
    // c0..c10: the first check past --bad (c5, the middle) does not build.
    let steps = names_the_planted_commit(&ws, &c, (0, 10, 7));
    let skipped: Vec<&serde_json::Value> = steps.iter().filter(|s| s["outcome"] == "skipped").collect();
    assert_eq!(skipped.len(), 1, "{steps:?}");
    assert_eq!(skipped[0]["commit"], short(&c[5]));
    let why = skipped[0]["why_skipped"].as_str().unwrap();
    assert!(why.starts_with("does not build: cargo build failed"), "{why}");
    let root = ws.root().join("profile");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("bisect.json")).unwrap()).unwrap();
    assert_eq!(doc["result"]["kind"], "first-bad");
    assert_eq!(doc["history"][doc["result"]["index"].as_u64().unwrap() as usize]["commit"], c[7]);
    assert_eq!(doc["steps"].as_array().unwrap().len(), steps.len());
    let md = std::fs::read_to_string(root.join("bisect.md")).unwrap();
    assert!(md.contains(&format!("First regressed revision: {} c7", short(&c[7]))), "{md}");
    assert!(md.contains("skipped: does not build"), "{md}");
    // Each checked revision's profiles are kept under its own root.
    assert!(root.join(format!("rev-{}", short(&c[10]))).is_dir());
    // Again, to the last revision: c5 is met again and skipped again.
    let steps = names_the_planted_commit(&ws, &c, (0, 7, 7));
    assert!(steps.iter().any(|s| s["commit"] == short(&c[5]) && s["outcome"] == "skipped"), "{steps:?}");
    // From later good revisions (aa-13's head side): k = 1 of 4, and 3 of 3 past the
    // broken one.
    names_the_planted_commit(&ws, &c, (6, 10, 7));
    names_the_planted_commit(&ws, &c, (4, 7, 7));
    // The words for people: each step with its interval, then the commit and its evidence.
    let out = bisect_as(&ws, &["--good", &c[0], "--bad", &c[10]], &ws.root().join("human.log"));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(10), "{stderr}");
    let (c5, c7, c10) = (short(&c[5]), short(&c[7]), short(&c[10]));
    assert!(
        stdout.contains(&format!("Bisect step 1: {c10} c10: regressed (12 rounds); now between ")),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("Bisect step 2: {c5} c5: skipped (does not build: ")), "{stdout}");
    assert!(stderr.contains(&format!("bisect: the first regressed revision is {c7} c7 (")), "{stderr}");
    assert!(stderr.contains("\n  hgemm_tiled: regressed, +428.1 % [+427.8, +428.4]"), "{stderr}");
    assert!(stderr.contains(&format!("\n  skipped {c5}: does not build")), "{stderr}");
    // An edit in kprof's worktree of the revisions ends the bisect, naming the file: no
    // revision is skipped for it, and nothing is discarded.
    let edited = ws.root().join("target/kprof-bisect/NOTES.txt");
    std::fs::write(&edited, "mine\n").unwrap();
    let (out, lines) = bisect(&ws, &["--good", &c[0], "--bad", &c[10]], &ws.root().join("edited.log"));
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("holds edits: NOTES.txt"), "{}", text(&out.stderr));
    assert!(with_reason(&lines, "bisect-step").is_empty(), "{lines:?}");
    assert_eq!(std::fs::read_to_string(&edited).unwrap(), "mine\n");
}

/// c6 -> a1 (notes) -> a2 (about +3 %) -> a3 (+428 %), at a tolerance of 3.1 %: a2's
/// interval straddles it, so its check runs again with twice the rounds, is ambiguous
/// again, and the answer is the range between a1 and a3, naming a2. The bench log shows
/// the retry's 24 rounds. At 2 %, the kernel got slower twice: a2 is named, a3 too for
/// the follow-up.
#[test]
fn an_ambiguous_step_is_retried_with_twice_the_rounds_then_reported_as_a_range() {
    let Some((ws, c)) = history() else { return };
    git(ws.root(), &["checkout", "-q", "-b", "slow", &c[6]]);
    use Change::*;
    let a = commit_all(&ws, 11, &[Notes, Bench("slow"), Bench("bank")]);
    let log = ws.root().join("runs.log");
    let (out, lines) = bisect(&ws, &["--good", &c[6], "--bad", &a[2], "--tolerance-pct", "3.1"], &log);
    assert_eq!(out.status.code(), Some(10), "{}\n{lines:?}", text(&out.stderr));
    let steps = with_reason(&lines, "bisect-step");
    assert_eq!(outcomes_at(&steps, &a[1]), [("ambiguous", 12), ("ambiguous", 24)], "{steps:?}");
    let end = with_reason(&lines, "bisect-finished");
    let end = end.last().unwrap();
    assert_eq!(end["result"], "range", "{end}");
    assert_eq!(end["after"], short(&a[0]));
    assert_eq!(end["commit"], short(&a[2]));
    assert_eq!(end["hidden"], serde_json::json!([short(&a[1])]));
    let runs = std::fs::read_to_string(&log).unwrap();
    assert_eq!(runs.lines().filter(|l| l.starts_with("slow ")).count(), 12 + 24, "{runs}");
    // At the default tolerance (2 %) a2 is the first step past it, and a3, slower by far
    // more than both intervals, is named for a follow-up bisect.
    let (out, lines) = bisect(&ws, &["--good", &c[6], "--bad", &a[2]], &ws.root().join("again.log"));
    assert_eq!(out.status.code(), Some(10), "{}", text(&out.stderr));
    let end = with_reason(&lines, "bisect-finished");
    let end = end.last().unwrap();
    assert_eq!(
        (&end["result"], &end["commit"], &end["second"]),
        (&"first-bad".into(), &short(&a[1]).into(), &short(&a[2]).into()),
        "{end}"
    );
}

/// c6 -> b1, whose manifest no longer configures the kernel -> b2, which configures it
/// again and plants the regression: b1 is skipped, named with why, and the answer is the
/// range it hides.
#[test]
fn a_revision_without_the_kernel_is_skipped_and_named() {
    let Some((ws, c)) = history() else { return };
    git(ws.root(), &["checkout", "-q", "-b", "unconfigured", &c[6]]);
    let manifest = std::fs::read_to_string(ws.manifest()).unwrap();
    let without = manifest.replace(KERNEL, "");
    assert_ne!(without, manifest);
    std::fs::write(ws.manifest(), &without).unwrap();
    git(ws.root(), &["commit", "-qam", "b1"]);
    std::fs::write(ws.manifest(), &manifest).unwrap();
    std::fs::write(ws.root().join("benches/copy.rs"), bench("bank")).unwrap();
    git(ws.root(), &["commit", "-qam", "b2"]);
    let b = [git(ws.root(), &["rev-parse", "HEAD~1"]), git(ws.root(), &["rev-parse", "HEAD"])];
    let (out, lines) = bisect(&ws, &["--good", &c[6], "--bad", &b[1]], &ws.root().join("runs.log"));
    assert_eq!(out.status.code(), Some(10), "{}\n{lines:?}", text(&out.stderr));
    let steps = with_reason(&lines, "bisect-step");
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert_eq!((&steps[1]["commit"], &steps[1]["outcome"]), (&short(&b[0]).into(), &"skipped".into()));
    let why = steps[1]["why_skipped"].as_str().unwrap();
    assert!(why.starts_with("cannot be checked: planning the revision "), "{why}");
    assert!(why.ends_with("no kernels are configured in this workspace"), "{why}");
    let end = with_reason(&lines, "bisect-finished");
    let end = end.last().unwrap();
    assert_eq!(
        (&end["result"], &end["after"], &end["commit"]),
        (&"range".into(), &short(&c[6]).into(), &short(&b[1]).into()),
        "{end}"
    );
    assert_eq!(end["hidden"], serde_json::json!([short(&b[0])]));
    assert_eq!(end["skipped"][0][0], short(&b[0]));
}

/// Without -k, or with a --good that is not behind --bad on its first-parent path, the
/// bisect is refused naming the input and the fix, before anything is built.
#[test]
fn a_bisect_without_its_inputs_is_refused_naming_them() {
    let Some((ws, c)) = history() else { return };
    let run = |args: &[&str]| {
        let mut cmd = crate::support::kprof_bin();
        cmd.args(["kprof", "bisect"]).args(args).arg("--manifest-path").arg(ws.manifest());
        cmd.env("KPROF_SKIP_GPU_CHECK", "1").env("CARGO_TARGET_DIR", ws.root().join("target"));
        cmd.output().unwrap()
    };
    let out = run(&["--good", &c[0]]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("-k KERNEL"), "{}", text(&out.stderr));
    let out = run(&["--good", &c[7], "--bad", &c[3], "-k", "hgemm_tiled", "--timing-only"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&format!("--good {} ({}) is not an ancestor", c[7], short(&c[7]))), "{stderr}");
    let out = run(&["--good", "no-such-tag", "-k", "hgemm_tiled", "--timing-only"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--good no-such-tag: not a commit"), "{}", text(&out.stderr));
    assert!(!ws.root().join("target/kprof-base").exists(), "nothing is checked out before the inputs are");
}
