//! One output language: every line kprof prints for people is a typed message, which
//! `--message-format json` carries too. Three runs replayed without a GPU, each once for
//! people and once as JSON: the demo's `copy` kernel profiled with the fake ncu replaying
//! the H200's pages (`fixtures/h200/demo-stages/`), an A/B check replaying the rounds of
//! `ab-runs/bank`, and a bisect over a generated history replaying those of `ab-runs/`.
//!
//! Under JSON the run's stdout and stderr are read as one stream: a message prints its
//! words for people, then its JSON line, so the lines before each JSON line are that
//! message's, and must read as it (a notice word for word, any other by the prefix of its
//! kind, [`KINDS`]). A line of kprof's own with no message after it, or one that reads as
//! another message, fails. For people, each line is read as one kind of message, and the
//! kinds must follow each other as the JSON run's messages that speak to people do.
//! Cargo's own lines (`Compiling`, `Finished`) are cargo's and are left out.

use std::io::{Read, Seek};
use std::process::Command;

use serde_json::Value;

use crate::support::{fake_ncu, fixture_details, Workspace};

/// The first line of each kind of message that speaks to people on stderr, by `reason`:
/// the more particular first. `None` of them: a line no message accounts for.
const KINDS: &[(&str, &str)] = &[
    ("check-finished", r"^(error: |warning: )?check: "),
    ("bisect-finished", r"^(error: |warning: )?bisect: "),
    ("merge-finished", r"^(error: |warning: )?merge: "),
    ("profiles-root-created", r"^note: created .*: it holds this workspace's local profiles"),
    ("no-line-info", r"^warning: no line info in `"),
    ("library-kernels", r"^note: `.*` is .*'s.*: closed libraries"),
    ("hint-narrowed", r"^warning: `[^`]*` matches \d+ kernels: "),
    ("hot-lines-missing", r"^warning: `[^`]*`: the source stage failed"),
    ("no-timing", r"^note: `[^`]*` has no harness: no timing"),
    ("revision-not-packed", r"^warning: \S+ .* is not packed: it "),
    ("notice", r"^(warning|note): "),
    ("stage-started", r"^Profiling `"),
    ("stage-done", r"^Profiled `"),
    ("profile-prepared", r"^Profile directory: "),
    ("batch-started", r"^Batching \d+ kernels of `"),
    ("runs-alone", r"^`[^`]*` runs on its own: "),
    ("follow-ups-planned", r"^Planned the follow-ups of `"),
    ("follow-up-chosen", r"^Follow-up( for `[^`]*`)?: "),
    ("window-fitted", r"^Window: "),
    ("census-taken", r"^Census of `"),
    ("kernel-discovered", r"^Census: profiling \d+ kernel"),
    ("timing-started", r"^Timing `[^`]*` \(harness, no ncu\)$"),
    ("timing-done", r"^  \S.*: .* median \("),
    ("round-done", r"^  round +\d+ `"),
    ("base-worktree", r"^Base: "),
    ("profile-merged", r"^Copied .* -> "),
    ("build-started", r"^Building "),
    ("build-done", r"^  built .* in [\d.]+ s$"),
    ("index-written", r"^Index: "),
    ("baseline-saved", r"^Baseline `"),
    ("results-written", r"^Results for --"),
    ("archive-unpacked", r"^Unpacked both sides of "),
    ("ab-started", r"^A/B: head \(this tree\) against base "),
    ("ab-measured", r"^A/B: both sides' profiles and the rounds of "),
    (
        "timing-stopped",
        r"^Timing .*: inside the tolerance after \d+ of \d+ rounds; no more rounds for (it|them)$",
    ),
    ("timing-extended", r"^Timing .*: undecided after \d+ rounds"),
    ("timing-planned", r"^Timing .*: \d+ interleaved rounds of base and head$"),
    ("bisect-started", r"^Bisect: \d+ first-parent revision"),
    ("bisect-checking", r"^Bisect: checking "),
    ("bisect-same-build", r"^Bisect: .* has (--good's build|the build of .*, checked already)$"),
    ("bisect-archive-started", r"^Archive for bisect: "),
    ("revision-packed", r"^  \S+ .*: build \d+$"),
    ("merge-reading", r"^Reading .* \(.*\): "),
    ("launch-shapes", r"^`[^`]*`: the launches profiled have \d+ shapes: "),
    ("files-rewritten", r"^Rewrote \d+ file\(s\) in "),
    ("page-shown", r"^(Opening .* in a browser|No browser here)"),
    ("no-kernels-configured", r"^no kernels are configured; "),
    ("init-written", r"^Appended \d+ kernel entr"),
    ("init-skipped", r"^Skipped package `"),
    ("init-finished", r"^(Nothing was written; |Next: narrow each )"),
];

/// The messages whose words for people run over several lines.
const SEVERAL_LINES: &[&str] = &["notice", "census-taken", "bisect-finished"];

/// The closing verdicts: for people a line on stderr, under JSON only their JSON line.
const SUMMARIES: &[&str] = &["check-finished", "bisect-finished", "merge-finished"];

/// The kind of message `line` reads as, if any.
fn kind_of(line: &str) -> Option<&'static str> {
    KINDS.iter().find(|(_, p)| regex::Regex::new(p).unwrap().is_match(line)).map(|(r, _)| *r)
}

/// A status line of cargo's own (right-aligned: `   Compiling demo v0.1.0`).
fn is_cargo(line: &str) -> bool {
    regex::Regex::new(r"^\s{3,}[A-Z][a-z]+ ").unwrap().is_match(line)
}

/// Runs `cmd` with stdout and stderr into one file: its exit code and what it printed, in
/// order.
fn one_stream(cmd: &mut Command) -> (Option<i32>, String) {
    let mut file = tempfile::tempfile().unwrap();
    cmd.stdout(file.try_clone().unwrap()).stderr(file.try_clone().unwrap());
    let code = cmd.status().unwrap().code();
    file.rewind().unwrap();
    let mut text = String::new();
    file.read_to_string(&mut text).unwrap();
    (code, text)
}

/// Holds a JSON run's stream to its messages (see the module's comment); the reasons of
/// its messages that speak to people, in order, with the closing verdicts.
fn spoken_in_json(what: &str, stream: &str) -> Vec<String> {
    let mut lines: Vec<&str> = Vec::new();
    let mut spoken = Vec::new();
    for line in stream.lines().filter(|l| !is_cargo(l)) {
        if !line.starts_with('{') {
            lines.push(line);
            continue;
        }
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{what}: {e}: {line}"));
        let reason = v["reason"].as_str().unwrap_or("kernel-list").to_string();
        if let Some(first) = lines.first() {
            let words = lines.join("\n");
            if reason == "notice" {
                let want = format!("{}: {}", v["level"].as_str().unwrap(), v["message"].as_str().unwrap());
                assert_eq!(words, want, "{what}: the words before a notice are not its own\n{stream}");
            } else {
                assert_eq!(
                    kind_of(first),
                    Some(reason.as_str()),
                    "{what}: {first:?} before a `{reason}` message\n{stream}"
                );
                assert!(
                    lines.len() == 1 || SEVERAL_LINES.contains(&reason.as_str()),
                    "{what}: lines printed with no message of their own, before `{reason}`:\n{words}\n\n{stream}"
                );
            }
        }
        if !lines.is_empty() || SUMMARIES.contains(&reason.as_str()) {
            spoken.push(reason);
        }
        lines.clear();
    }
    assert!(lines.is_empty(), "{what}: lines printed with no message after them: {lines:?}\n{stream}");
    spoken
}

/// The kinds of message a run for people printed on stderr, in order; each line is one
/// kind's first line, or the next line of one that runs over several.
fn spoken_to_people(what: &str, stderr: &str) -> Vec<String> {
    let mut spoken: Vec<String> = Vec::new();
    for line in stderr.lines().filter(|l| !is_cargo(l)) {
        match kind_of(line) {
            Some(reason) => spoken.push(reason.to_string()),
            None if spoken.last().is_some_and(|r| SEVERAL_LINES.contains(&r.as_str())) => {}
            None => panic!("{what}: a line of kprof's own that no message accounts for: {line:?}\n{stderr}"),
        }
    }
    spoken
}

/// What a run needs kept until it ends (its workspace, the benches' state).
type Kept = Vec<Box<dyn std::any::Any>>;

/// Runs `command` (made fresh for each run, with what it needs kept) once for people and
/// once with `--message-format json`, and holds both to the messages; returns what the
/// JSON run said to people.
fn both_ways(what: &str, code: i32, command: impl Fn(&[&str]) -> (Command, Kept)) -> Vec<String> {
    let (mut cmd, _kept) = command(&[]);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{what}, for people:\n{stderr}");
    let people = spoken_to_people(what, &stderr);
    let (mut cmd, _kept) = command(&["--message-format", "json"]);
    let (json_code, stream) = one_stream(&mut cmd);
    assert_eq!(json_code, Some(code), "{what}, as JSON:\n{stream}");
    let json = spoken_in_json(what, &stream);
    assert_eq!(
        people, json,
        "{what}: what people read is not what the JSON run's messages say\n{stderr}\n\n{stream}"
    );
    json
}

#[test]
fn the_demo_kernel_profiled_speaks_only_in_messages() {
    let entry =
        "[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\nruntime = \"harness\"\n";
    let replay = fixture_details("copy_20261129_213211");
    let spoken = both_ways("the demo's copy", 0, |extra| {
        // A fresh workspace each time: the same first run, the profiles root created.
        let ws = Workspace::new(entry);
        let tools = ws.root().join("tools");
        let ncu = fake_ncu::write(&tools);
        let argv = tools.join("argv.txt");
        let env = [
            ("NCU", ncu.to_str().unwrap()),
            ("KPROF_SKIP_GPU_CHECK", "1"),
            ("FAKE_NCU_ARGV", argv.to_str().unwrap()),
            ("FAKE_NCU_REPLAY", replay.to_str().unwrap()),
        ];
        let cmd = ws.command(&[&["--kernel", "copy"], extra].concat(), &env);
        (cmd, vec![Box::new(ws) as Box<dyn std::any::Any>])
    });
    for reason in [
        "notice",
        "profiles-root-created",
        "build-started",
        "profile-prepared",
        "stage-done",
        "index-written",
    ] {
        assert!(spoken.iter().any(|r| r == reason), "no `{reason}` in {spoken:?}");
    }
}

#[test]
fn an_a_b_check_speaks_only_in_messages() {
    if crate::ab::repository().is_none() {
        return;
    }
    let spoken = both_ways("an A/B check", 10, |extra| {
        let ws = crate::ab::repository().unwrap();
        let state = tempfile::tempdir().unwrap();
        let mut cmd = crate::ab::check_base(&ws, &[&["--timing-only"], extra].concat());
        crate::ab::with_rounds(&mut cmd, "bank", state.path());
        (cmd, vec![Box::new(ws) as Box<dyn std::any::Any>, Box::new(state)])
    });
    let want = [
        "ab-started",
        "base-worktree",
        "build-started",
        "build-done",
        "timing-planned",
        "round-done",
        "ab-measured",
    ];
    for reason in want {
        assert!(spoken.iter().any(|r| r == reason), "no `{reason}` in {spoken:?}");
    }
    assert_eq!(spoken.last().map(String::as_str), Some("check-finished"), "{spoken:?}");
}

#[test]
fn a_bisect_speaks_only_in_messages() {
    use crate::bisect::Change::*;
    // c0 is --good, c3 plants the regression; no revision fails to build (rustc's own
    // diagnostics would be on stderr, and they are cargo's).
    let changes = [Bench("base"), Bench("head"), Notes, Bench("bank"), Notes];
    if crate::bisect::history_of(&changes).is_none() {
        return;
    }
    let spoken = both_ways("a bisect", 10, |extra| {
        let (ws, c) = crate::bisect::history_of(&changes).unwrap();
        let state = tempfile::tempdir().unwrap();
        let log = ws.root().join("runs.log");
        let args = [&["--good", c[0].as_str(), "--bad", c[4].as_str()][..], extra].concat();
        let cmd = crate::bisect::bisect_command(&ws, &args, state.path(), &log);
        (cmd, vec![Box::new(ws) as Box<dyn std::any::Any>, Box::new(state)])
    });
    for reason in ["bisect-started", "bisect-checking", "build-started", "round-done"] {
        assert!(spoken.iter().any(|r| r == reason), "no `{reason}` in {spoken:?}");
    }
    assert_eq!(spoken.last().map(String::as_str), Some("bisect-finished"), "{spoken:?}");
}

#[test]
fn the_reading_of_the_stream_fails_on_a_line_without_a_message() {
    // A guard for the guard: a line printed raw, before a message or after the last one,
    // and a notice whose words are not its own, are each refused.
    let notice = r#"{"reason":"notice","level":"warning","about":"index","message":"w"}"#;
    let index = r#"{"reason":"index-written","index":"i"}"#;
    let ok = format!("warning: w\n{notice}\n   Compiling demo v0.1.0\nIndex: i\n{index}\n");
    assert_eq!(spoken_in_json("ok", &ok), ["notice", "index-written"]);
    for bad in [
        format!("Merging\n{index}\n"),
        format!("Merging\nIndex: i\n{index}\n"),
        format!("Index: i\n{index}\nMerging\n"),
        format!("warning: x\n{notice}\n"),
    ] {
        let caught = std::panic::catch_unwind(|| spoken_in_json("bad", &bad));
        assert!(caught.is_err(), "{bad}");
    }
    let caught = std::panic::catch_unwind(|| spoken_to_people("bad", "Index: i\nMerging\n"));
    assert!(caught.is_err());
}
