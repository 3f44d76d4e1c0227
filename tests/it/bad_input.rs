//! The bad-input suite: one table per kind of input (manifests, the command line, imports,
//! archives), each row a hostile or careless input and what kprof must do with it.
//!
//! Every case asserts the exit code, that stderr names the input (the key, flag, file or
//! archive entry) and says how to fix it (a `help:` line), and that nothing changed on disk
//! outside what the case allows: a snapshot (paths, sizes, modification times and content
//! hashes) of the case's temporary root before and after. Damaged exports are made here
//! from the H200 recordings (cut short, spliced, overwritten with bytes) and are only ever
//! used as the broken inputs they are; hostile archives are built with the `tar` crate from
//! a real `cargo kprof archive`. A failing row does not stop the table: every mismatch is
//! reported at the end.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::snapshot;
use crate::support::tarball::{self, Entry};
use crate::support::{recordings, text, Workspace};

/// What a case must produce.
pub(crate) struct Expect<'a> {
    /// The exit code.
    pub code: i32,
    /// Text stderr must contain: what names the input.
    pub names: &'a [&'a str],
    /// Paths (relative to the case's root) that may change.
    pub allowed: &'a [&'a str],
}

/// Runs one case and returns what was wrong with it, if anything.
pub(crate) fn verify(
    case: &str,
    root: &Path,
    expect: Expect<'_>,
    run: impl FnOnce() -> Output,
) -> Option<String> {
    let before = snapshot::take(root);
    let out = run();
    let after = snapshot::take(root);
    let stderr = text(&out.stderr);
    if std::env::var_os("KPROF_SHOW_BAD_INPUT").is_some() {
        eprintln!("=== {case}: exit {:?}\n{stderr}", out.status.code());
    }
    let mut wrong = Vec::new();
    if out.status.code() != Some(expect.code) {
        wrong.push(format!("exit {:?}, expected {}", out.status.code(), expect.code));
    }
    for n in expect.names {
        if !stderr.contains(n) {
            wrong.push(format!("stderr does not name {n:?}"));
        }
    }
    if !stderr.contains("help:") {
        wrong.push("stderr has no `help:` line".to_string());
    }
    let changed = snapshot::changes(&before, &after, expect.allowed);
    if !changed.is_empty() {
        wrong.push(format!("changed on disk: {changed:?}"));
    }
    (!wrong.is_empty()).then(|| format!("{case}: {}\n--- stderr:\n{stderr}", wrong.join("; ")))
}

pub(crate) fn assert_all(failures: Vec<String>, cases: usize) {
    assert!(failures.is_empty(), "{} of {cases} cases failed:\n\n{}", failures.len(), failures.join("\n\n"));
}

/// `cargo-kprof kprof ARGS` in `cwd`, without ncu.
pub(crate) fn kprof_in(cwd: &Path, args: &[&str]) -> Output {
    crate::support::kprof_bin()
        .arg("kprof")
        .args(args)
        .current_dir(cwd)
        .env("NCU", "/nonexistent/ncu")
        .env("NO_COLOR", "1")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap()
}

/// A kernel entry of the `copy` bench with `extra` lines.
fn entry(extra: &str) -> String {
    format!("[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\n{extra}\n")
}

/// Invalid `[package.metadata.kprof]` tables: exit 3 before anything is built, naming the
/// manifest and the key, with the fix.
#[test]
fn manifests() {
    let two = "[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\n\n\
               [[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"fma\"\n";
    let cases: Vec<(&str, String, &str)> = vec![
        ("name missing", "[[package.metadata.kprof.kernels]]\nbench = \"copy\"\n".into(), "`name`"),
        ("name empty", "[[package.metadata.kprof.kernels]]\nname = \"\"\nbench = \"copy\"\n".into(), "`name`"),
        ("name a number", "[[package.metadata.kprof.kernels]]\nname = 3\nbench = \"copy\"\n".into(), "`name`"),
        (
            "name with a line break",
            "[[package.metadata.kprof.kernels]]\nname = \"copy\\nrm -rf ~\"\nbench = \"copy\"\n".into(),
            "U+000A",
        ),
        (
            "name with a tab",
            "[[package.metadata.kprof.kernels]]\nname = \"co\\tpy\"\nbench = \"copy\"\n".into(),
            "U+0009",
        ),
        (
            "name with an escape sequence",
            "[[package.metadata.kprof.kernels]]\nname = \"\\u001b[31mcopy\"\nbench = \"copy\"\n".into(),
            "U+001B",
        ),
        ("no target", "[[package.metadata.kprof.kernels]]\nname = \"copy\"\n".into(), "no target"),
        ("two targets", entry("example = \"copy\""), "2 targets"),
        ("missing bench", "[[package.metadata.kprof.kernels]]\nname = \"x\"\nbench = \"nope\"\n".into(), "nope"),
        ("missing example", "[[package.metadata.kprof.kernels]]\nname = \"x\"\nexample = \"nope\"\n".into(), "nope"),
        ("missing bin", "[[package.metadata.kprof.kernels]]\nname = \"x\"\nbin = \"nope\"\n".into(), "nope"),
        ("command a string", "[[package.metadata.kprof.kernels]]\nname = \"x\"\ncommand = \"python3 b.py\"\n".into(), "`command`"),
        ("command of numbers", "[[package.metadata.kprof.kernels]]\nname = \"x\"\ncommand = [1, 2]\n".into(), "`command`"),
        ("unknown runtime", entry("runtime = \"gpu\""), "`runtime`"),
        (
            "harness runtime on a command",
            "[[package.metadata.kprof.kernels]]\nname = \"x\"\ncommand = [\"python3\"]\nruntime = \"harness\"\n".into(),
            "`runtime",
        ),
        ("launch-count 0", entry("launch-count = 0"), "`launch-count`"),
        ("launch-count negative", entry("launch-count = -1"), "`launch-count`"),
        ("launch-count a string", entry("launch-count = \"3\""), "`launch-count`"),
        ("launch-skip a float", entry("launch-skip = 1.5"), "`launch-skip`"),
        ("unknown stage", entry("stages = \"bogus\""), "`stages`"),
        ("auto inside a list", entry("stages = [\"auto\", \"basic\"]"), "`stages`"),
        ("empty stage list", entry("stages = []"), "`stages`"),
        ("stages a number", entry("stages = 3"), "`stages`"),
        ("env a string", entry("env = \"X=1\""), "`env`"),
        ("env key an option", entry("env = { \"-i\" = \"x\" }"), "`env.-i`"),
        ("env key a digit first", entry("env = { \"1X\" = \"x\" }"), "`env.1X`"),
        ("env key with a space", entry("env = { \"A B\" = \"x\" }"), "`env.A B`"),
        ("env key with =", entry("env = { \"A=B\" = \"x\" }"), "`env.A=B`"),
        ("env value a number", entry("env = { X = 1 }"), "`env.X`"),
        ("env value a table", entry("env = { X = { y = 1 } }"), "`env.X`"),
        ("tolerance negative", entry("tolerance-pct = -1.0"), "`tolerance-pct`"),
        ("tolerance a string", entry("tolerance-pct = \"2\""), "`tolerance-pct`"),
        ("clock-control unknown", entry("clock-control = \"max\""), "`clock-control`"),
        ("privilege unknown", entry("privilege = \"root\""), "`privilege`"),
        ("invalid filter regex", entry("regex = \"(((\""), "`regex`"),
        ("invalid case regex", entry("case = \"[z-a]\""), "`case`"),
        ("args of numbers", entry("args = [1]"), "`args`"),
        ("duplicate names", two.into(), "copy"),
        ("kernels not an array", "[package.metadata.kprof]\nkernels = 3\n".into(), "`kernels`"),
        ("kernels of numbers", "[package.metadata.kprof]\nkernels = [1]\n".into(), "`kernels`"),
        ("package table a string", "[package.metadata]\nkprof = \"on\"\n".into(), "[package.metadata.kprof]"),
        (
            "workspace default invalid",
            format!("[workspace]\n\n[workspace.metadata.kprof]\nlaunch-count = 0\n\n{}", entry("")),
            "`launch-count`",
        ),
    ];
    let n = cases.len();
    let mut failures = Vec::new();
    for (case, toml, key) in cases {
        let ws = Workspace::new(&toml);
        let manifest = ws.manifest().display().to_string();
        let expect = Expect { code: 3, names: &[key, &manifest], allowed: &["Cargo.lock"] };
        failures.extend(verify(case, ws.root(), expect, || {
            kprof_in(ws.root(), &["--workspace", "--dry-run", "--manifest-path", &manifest])
        }));
    }
    assert_all(failures, n);
}

/// Command lines that cannot work: refused with the flag or value named, before building.
#[test]
fn command_lines() {
    let kernels = "[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\n\n\
                   [[package.metadata.kprof.kernels]]\nname = \"fma\"\nbench = \"fma\"\n";
    let ws = Workspace::new(kernels);
    let root = ws.root();
    std::fs::create_dir_all(root.join("busy")).unwrap();
    std::fs::write(root.join("busy/notes.txt"), "mine").unwrap();
    std::fs::write(root.join("a-file"), "x").unwrap();
    // cargo metadata writes the lock file once; the cases start after it.
    let first = kprof_in(root, &["list"]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let cases: Vec<(&str, Vec<&str>, i32, Vec<&str>)> = vec![
        ("unknown kernel", vec!["--kernel", "nope", "--dry-run"], 3, vec!["nope"]),
        ("index out of range", vec!["--index", "99", "--dry-run"], 3, vec!["99"]),
        ("no selection among two", vec!["--dry-run"], 3, vec!["no kernel selected"]),
        ("unknown bench", vec!["--bench", "nope", "--kernel", "x", "--dry-run"], 3, vec!["nope"]),
        ("unknown example", vec!["--example", "nope", "--kernel", "x", "--dry-run"], 3, vec!["nope"]),
        (
            "unknown stage",
            vec!["--kernel", "copy", "--stages", "bogus", "--dry-run"],
            3,
            vec!["--stages", "bogus"],
        ),
        (
            "auto in a stage list",
            vec!["--kernel", "copy", "--stages", "auto,basic", "--dry-run"],
            3,
            vec!["--stages"],
        ),
        (
            "invalid --kernel-regex",
            vec!["--kernel", "copy", "--kernel-regex", "(((", "--dry-run"],
            3,
            vec!["--kernel-regex", "((("],
        ),
        ("env without =", vec!["--kernel", "copy", "--env", "NOEQUALS", "--dry-run"], 2, vec!["NOEQUALS"]),
        ("env key a digit first", vec!["--kernel", "copy", "--env", "1BAD=x", "--dry-run"], 2, vec!["1BAD"]),
        ("env key an option", vec!["--kernel", "copy", "--env=-i=x", "--dry-run"], 2, vec!["-i"]),
        ("env key empty", vec!["--kernel", "copy", "--env", "=x", "--dry-run"], 2, vec!["--env"]),
        (
            "kernel with a line break",
            vec!["--bench", "copy", "--kernel", "copy\ntouch x", "--dry-run"],
            2,
            vec!["--kernel", "U+000A"],
        ),
        (
            "kernel with an escape",
            vec!["--bench", "copy", "--kernel", "\u{1b}[2J", "--dry-run"],
            2,
            vec!["--kernel", "U+001B"],
        ),
        (
            "output dir not empty",
            vec!["--kernel", "copy", "--output-dir", "busy", "--dry-run"],
            12,
            vec!["busy", "is not empty"],
        ),
        (
            "output dir a file",
            vec!["--kernel", "copy", "--output-dir", "a-file", "--dry-run"],
            12,
            vec!["a-file", "not a directory"],
        ),
        (
            "output dir under a file",
            vec!["--kernel", "copy", "--output-dir", "a-file/p", "--dry-run"],
            12,
            vec!["a-file"],
        ),
        (
            "several kernels into a file",
            vec!["--workspace", "--output-dir", "a-file", "--dry-run"],
            12,
            vec!["a-file", "not a directory"],
        ),
        (
            "manifest missing",
            vec!["--kernel", "copy", "--manifest-path", "nope/Cargo.toml", "--dry-run"],
            3,
            vec!["nope/Cargo.toml"],
        ),
        ("list index out of range", vec!["list", "--index", "7"], 3, vec!["7"]),
        ("unknown package", vec!["-p", "nope", "--workspace", "--dry-run"], 3, vec!["nope"]),
        (
            "baseline name with a slash",
            vec!["check", "--save-baseline", "a/b", "--kernel", "copy"],
            2,
            vec!["a/b"],
        ),
        ("baseline name ..", vec!["check", "--save-baseline", "..", "--kernel", "copy"], 2, vec!["`..`"]),
        (
            "check --bmf in a missing directory",
            vec!["check", "--save-baseline", "main", "--bmf", "nodir/b.json"],
            12,
            vec!["nodir/b.json"],
        ),
        (
            "check results twice in one file",
            vec!["check", "--save-baseline", "main", "--bmf", "r.json", "--github-benchmark", "r.json"],
            3,
            vec!["r.json"],
        ),
        ("compare a missing profile", vec!["compare", "nowhere"], 3, vec!["nowhere"]),
        ("report a missing profile", vec!["report", "nowhere"], 3, vec!["nowhere"]),
        ("report a file", vec!["report", "a-file"], 3, vec!["a-file"]),
        ("explain nonsense", vec!["explain", "nonsense"], 2, vec!["nonsense"]),
    ];
    let n = cases.len();
    let mut failures = Vec::new();
    for (case, args, code, names) in cases {
        let mut args = args;
        let manifest = ws.manifest().display().to_string();
        let profiling = !matches!(args[0], "list" | "compare" | "report" | "explain" | "check");
        if (profiling || args[0] == "list" || args[0] == "check") && !args.contains(&"--manifest-path") {
            args.extend(["--manifest-path", manifest.as_str()]);
        }
        let expect = Expect { code, names: &names, allowed: &[] };
        failures.extend(verify(case, root, expect, || kprof_in(root, &args)));
    }
    assert_all(failures, n);
}

/// A CSV export cut short, spliced or overwritten: each from a real recording.
fn damaged(dir: &Path, name: &str, bytes: Vec<u8>) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// `import` of exports that are not what they should be, and output directories that
/// cannot be used: exit 3 (6 for a hint that matches no kernel), the file named, and no
/// directory left behind.
#[test]
fn imports() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let inputs = root.join("inputs");
    std::fs::create_dir_all(&inputs).unwrap();
    let full = recordings().join("demo-full");
    let raw_text = std::fs::read(full.join("copy_full_raw.csv")).unwrap();
    let raw = full.join("copy_full_raw.csv").display().to_string();
    let source = full.join("copy_source.csv").display().to_string();
    let details = full.join("copy_full_details.csv").display().to_string();
    let lines: Vec<&[u8]> = raw_text.split(|b| *b == b'\n').collect();
    let d = |name: &str, bytes: Vec<u8>| damaged(&inputs, name, bytes).display().to_string();
    let empty = d("empty.csv", Vec::new());
    let binary = d("binary.csv", (0..=255u8).cycle().take(8192).collect());
    let half = d("half.csv", raw_text[..raw_text.len() / 2].to_vec());
    let header_only = d("header_only.csv", lines[0].to_vec());
    let no_data = d("no_data.csv", [lines[0], b"\n", lines[1], b"\n"].concat());
    let short_row = {
        let mut row = lines[2].to_vec();
        let cut = row.iter().rposition(|b| *b == b',').unwrap();
        row.truncate(cut);
        d("short_row.csv", [lines[0], b"\n", lines[1], b"\n", &row, b"\n"].concat())
    };
    let nul = {
        let mut b = raw_text.clone();
        let at = b.len() / 3;
        b.splice(at..at + 64, std::iter::repeat_n(0u8, 64));
        d("nul.csv", b)
    };
    let utf16: Vec<u8> = [0xff, 0xfe]
        .into_iter()
        .chain(String::from_utf8_lossy(&raw_text).encode_utf16().flat_map(|u| u.to_le_bytes()))
        .collect();
    let utf16 = d("utf16.csv", utf16);
    let open_quote = d("open_quote.csv", [&raw_text[..], b"\"unterminated,\"x\n"].concat());
    let one_line = d("one_line.csv", vec![b'a'; 4 << 20]);
    let rules = d("rules.yaml", b"rules: [this is: not, a rule".to_vec());
    let dir_input = inputs.join("a-directory");
    std::fs::create_dir_all(&dir_input).unwrap();
    let dir_input = dir_input.display().to_string();
    std::fs::create_dir_all(root.join("busy")).unwrap();
    std::fs::write(root.join("busy/keep.txt"), "mine").unwrap();
    std::fs::write(root.join("a-file"), "x").unwrap();
    let no_match = recordings().join("misc/no_match.log").display().to_string();

    let cases: Vec<(&str, Vec<&str>, i32, Vec<&str>)> = vec![
        ("raw missing", vec!["--raw", "inputs/missing.csv"], 12, vec!["inputs/missing.csv"]),
        ("raw a directory", vec!["--raw", &dir_input], 3, vec![&dir_input]),
        ("raw empty", vec!["--raw", &empty], 3, vec![&empty]),
        ("raw binary", vec!["--raw", &binary], 3, vec![&binary]),
        ("raw cut in half", vec!["--raw", &half], 3, vec![&half]),
        ("raw header only", vec!["--raw", &header_only], 3, vec![&header_only]),
        ("raw without launches", vec!["--raw", &no_data], 3, vec![&no_data]),
        ("raw with a short row", vec!["--raw", &short_row], 3, vec![&short_row]),
        ("raw with NUL bytes", vec!["--raw", &nul], 3, vec![&nul]),
        ("raw in UTF-16", vec!["--raw", &utf16], 3, vec![&utf16]),
        ("raw with an open quote", vec!["--raw", &open_quote], 3, vec![&open_quote]),
        ("raw one 4 MiB line", vec!["--raw", &one_line], 3, vec![&one_line]),
        ("raw a source page", vec!["--raw", &source], 3, vec![&source]),
        ("raw a details page", vec!["--raw", &details], 3, vec![&details]),
        ("raw where ncu matched nothing", vec!["--raw", &no_match], 3, vec![&no_match, "copy_kernel"]),
        ("second raw damaged", vec!["--raw", &raw, "--raw", &half], 3, vec![&half]),
        (
            "source missing",
            vec!["--raw", &raw, "--source", "inputs/missing.csv"],
            12,
            vec!["inputs/missing.csv"],
        ),
        ("source a raw page", vec!["--raw", &raw, "--source", &raw], 3, vec![&raw, "source"]),
        ("source empty", vec!["--raw", &raw, "--source", &empty], 3, vec![&empty]),
        ("source binary", vec!["--raw", &raw, "--source", &binary], 3, vec![&binary]),
        (
            "details missing",
            vec!["--raw", &raw, "--details", "inputs/missing.csv"],
            12,
            vec!["inputs/missing.csv"],
        ),
        ("details a raw page", vec!["--raw", &raw, "--details", &raw], 3, vec![&raw, "details"]),
        ("details empty", vec!["--raw", &raw, "--details", &empty], 3, vec![&empty]),
        (
            "rules missing",
            vec!["--raw", &raw, "--rules", "inputs/missing.yaml"],
            12,
            vec!["inputs/missing.yaml"],
        ),
        ("rules not YAML", vec!["--raw", &raw, "--rules", &rules], 3, vec![&rules]),
        (
            "template missing",
            vec!["--raw", &raw, "--template", "inputs/missing.md"],
            12,
            vec!["inputs/missing.md"],
        ),
        (
            "hint that matches no kernel",
            vec!["--raw", &raw, "--kernel", "gemm"],
            6,
            vec![".*gemm.*", "copy_kernel"],
        ),
        ("hint with a line break", vec!["--raw", &raw, "--kernel", "copy\nx"], 2, vec!["--kernel"]),
    ];
    let outputs: Vec<(&str, &str, Vec<&str>)> = vec![
        ("output dir not empty", "busy", vec!["busy", "not empty"]),
        ("output dir a file", "a-file", vec!["a-file", "not a directory"]),
        ("output dir under a file", "a-file/out", vec!["a-file", "not a directory"]),
    ];
    let n = cases.len() + outputs.len();
    let mut failures = Vec::new();
    for (case, mut args, code, names) in cases {
        args.extend(["--output-dir", "out/imported"]);
        let expect = Expect { code, names: &names, allowed: &[] };
        let mut all = vec!["import"];
        all.extend(args);
        failures.extend(verify(case, root, expect, || kprof_in(root, &all)));
    }
    for (case, out, names) in outputs {
        // An output path that is taken is a file-system refusal (12), not a bad input (3).
        let expect = Expect { code: 12, names: &names, allowed: &[] };
        failures.extend(verify(case, root, expect, || {
            kprof_in(root, &["import", "--raw", &raw, "--output-dir", out])
        }));
    }
    assert_all(failures, n);
}

/// `run --archive` of archives that are not what `cargo kprof archive` writes: exit 3, the
/// archive and the entry named, nothing written anywhere.
#[test]
fn archives() {
    let ws = Workspace::with_harness(&entry("runtime = \"harness\""));
    let real_path = ws.root().join("real.tar");
    let out = ws.kprof(&["archive", "--kernel", "copy", "-o", real_path.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let real = tarball::read(&real_path);
    let plan = tarball::manifest(&real);
    let exe = plan["executables"][0][1].as_str().unwrap().to_string();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let outside = root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("keep.txt"), "mine").unwrap();
    let out_s = outside.display().to_string();
    let ws_root = plan["workspace_root"].as_str().unwrap().to_string();

    let edited = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut m = plan.clone();
        f(&mut m);
        tarball::with_manifest(&real, &m)
    };
    let plus = |extra: Entry| {
        let mut e = real.clone();
        e.insert(0, extra);
        e
    };
    let replaced = |name: &str, by: Entry| -> Vec<Entry> {
        real.iter().map(|e| if e.name == name { by.clone() } else { e.clone() }).collect()
    };
    let without = |name: &str| -> Vec<Entry> { real.iter().filter(|e| e.name != name).cloned().collect() };
    let manifest_bytes =
        |bytes: Vec<u8>| replaced("kprof-archive.json", Entry::file("kprof-archive.json", bytes));

    // (case, entries, what stderr names)
    let cases: Vec<(&str, Vec<Entry>, &str)> = vec![
        ("symlink in the workspace", plus(Entry::symlink("workspace/link", "/etc")), "workspace/link"),
        (
            "symlink as workspace/profile",
            plus(Entry::symlink("workspace/profile", &out_s)),
            "workspace/profile",
        ),
        ("symlink to a relative ..", plus(Entry::symlink("bin/up", "../../..")), "bin/up"),
        ("hard link to /etc/passwd", plus(Entry::hard_link("bin/passwd", "/etc/passwd")), "bin/passwd"),
        ("hard link to the plan", plus(Entry::hard_link("bin/plan", "kprof-archive.json")), "bin/plan"),
        ("a .. entry", plus(Entry::file("../escape.txt", "x")), "../escape.txt"),
        ("a .. inside", plus(Entry::file("workspace/a/../../../escape.txt", "x")), "escape.txt"),
        ("an absolute entry", plus(Entry::file(&format!("{out_s}/abs.txt"), "x")), "abs.txt"),
        ("an absolute directory", plus(Entry::dir("/tmp/kprof-abs-dir/")), "kprof-abs-dir"),
        ("a named pipe", plus(Entry::fifo("workspace/pipe")), "workspace/pipe"),
        ("an unknown top-level entry", plus(Entry::file("etc/passwd", "x")), "etc/passwd"),
        ("a workspace/profile folder", plus(Entry::dir("workspace/profile/")), "workspace/profile"),
        (
            "a file in workspace/profile",
            plus(Entry::file("workspace/profile/index.md", "x")),
            "workspace/profile",
        ),
        ("the plan twice", plus(Entry::file("kprof-archive.json", "{}")), "kprof-archive.json"),
        ("an executable twice", plus(Entry::file(&exe, "x")), &exe),
        (
            "the plan as a symlink",
            replaced(
                "kprof-archive.json",
                Entry::symlink("kprof-archive.json", &format!("{out_s}/keep.txt")),
            ),
            "kprof-archive.json",
        ),
        (
            "the plan as a folder",
            replaced("kprof-archive.json", Entry::dir("kprof-archive.json/")),
            "kprof-archive.json",
        ),
        ("no plan", without("kprof-archive.json"), "kprof-archive.json"),
        ("an empty plan", manifest_bytes(Vec::new()), "kprof-archive.json"),
        ("a binary plan", manifest_bytes((0..=255u8).cycle().take(4096).collect()), "kprof-archive.json"),
        ("a plan that is an array", manifest_bytes(b"[1, 2, 3]".to_vec()), "kprof-archive.json"),
        ("a huge plan", manifest_bytes(vec![b' '; (16 << 20) + 1]), "kprof-archive.json"),
        ("schema_version 99", edited(&|m| m["schema_version"] = 99.into()), "schema_version 99"),
        (
            "an included file not packed",
            edited(&|m| m["included"] = serde_json::json!(["data/missing.bin"])),
            "data/missing.bin",
        ),
        (
            "a build output through ..",
            edited(&|m| m["build_outputs"] = serde_json::json!(["../../etc/passwd"])),
            "../../etc/passwd",
        ),
        ("schema_version 0", edited(&|m| m["schema_version"] = 0.into()), "schema_version 0"),
        ("schema_version a string", edited(&|m| m["schema_version"] = "1".into()), "schema_version"),
        (
            "no schema_version",
            edited(&|m| {
                m.as_object_mut().unwrap().remove("schema_version");
            }),
            "schema_version",
        ),
        (
            "no kernels field",
            edited(&|m| {
                m.as_object_mut().unwrap().remove("kernels");
            }),
            "kernels",
        ),
        ("no kernels", edited(&|m| m["kernels"] = serde_json::json!([])), "no kernel"),
        ("a relative workspace_root", edited(&|m| m["workspace_root"] = "ws".into()), "workspace_root"),
        ("a cwd outside", edited(&|m| m["kernels"][0]["cwd"] = out_s.clone().into()), "cwd"),
        (
            "a cwd through ..",
            edited(&|m| m["kernels"][0]["cwd"] = format!("{ws_root}/../../outside").into()),
            "cwd",
        ),
        ("an executable outside", edited(&|m| m["executables"][0][1] = "/bin/true".into()), "/bin/true"),
        (
            "an executable through ..",
            edited(&|m| m["executables"][0][1] = "bin/../kprof-archive.json".into()),
            "bin/../kprof-archive.json",
        ),
        (
            "an executable not packed",
            edited(&|m| m["executables"][0][1] = "bin/missing".into()),
            "bin/missing",
        ),
        ("no executables", edited(&|m| m["executables"] = serde_json::json!([])), "no executable"),
        (
            "a kernel name with a line break",
            edited(&|m| m["kernels"][0]["name"] = "copy\nrm -rf ~".into()),
            "U+000A",
        ),
        ("an env key that is an option", edited(&|m| m["kernels"][0]["env"]["-i"] = "x".into()), "`-i`"),
    ];
    let mut failures = Vec::new();
    let mut n = 0;
    for (i, (case, entries, named)) in cases.into_iter().enumerate() {
        n += 1;
        let archive = root.join(format!("case-{i:02}.tar"));
        tarball::write(&archive, &entries);
        let a = archive.display().to_string();
        let remap = format!("remap-{i:02}");
        let expect = Expect { code: 3, names: &[&a, named], allowed: &[] };
        failures.extend(verify(case, root, expect, || {
            kprof_in(root, &["run", "--archive", &a, "--workspace-remap", &remap])
        }));
    }

    // The archive file itself, and where it is unpacked.
    let real_s = real_path.display().to_string();
    let bytes = std::fs::read(&real_path).unwrap();
    let d = |name: &str, b: Vec<u8>| damaged(root, name, b).display().to_string();
    let garbage = d("garbage.tar", (0..=255u8).cycle().take(10_000).collect());
    let empty = d("empty.tar", Vec::new());
    let cut = d("cut.tar", bytes[..bytes.len() / 2].to_vec());
    std::fs::create_dir_all(root.join("full")).unwrap();
    std::fs::write(root.join("full/x"), "x").unwrap();
    std::fs::write(root.join("a-file"), "x").unwrap();
    // (case, archive, remap, named, exit): what the archive holds is refused with 3; a
    // file that is missing, or a remap path that is taken, with 12.
    let files: Vec<(&str, &str, &str, Vec<&str>, i32)> = vec![
        ("not a tar file", &garbage, "r1", vec![&garbage], 3),
        ("an empty file", &empty, "r2", vec![&empty, "kprof-archive.json"], 3),
        ("a tar cut in half", &cut, "r3", vec![&cut], 3),
        ("a missing archive", "missing.tar", "r4", vec!["missing.tar"], 12),
        ("an archive that is a folder", "outside", "r5", vec!["outside"], 3),
        ("a remap folder not empty", &real_s, "full", vec!["full", "not empty"], 12),
        ("a remap that is a file", &real_s, "a-file", vec!["a-file", "not a directory"], 12),
    ];
    for (case, archive, remap, names, code) in files {
        n += 1;
        let expect = Expect { code, names: &names, allowed: &[] };
        failures.extend(verify(case, root, expect, || {
            kprof_in(root, &["run", "--archive", archive, "--workspace-remap", remap])
        }));
    }
    assert_all(failures, n);
}
