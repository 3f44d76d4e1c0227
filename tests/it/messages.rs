//! What people read: a dry run's commands with their labels, error messages that say
//! `error:` once, carry no terminal escape sequences and no 100 KB words, the environment
//! record, and the refusals of values that make no sense (`--set` with `--sections`,
//! two different kernels compared, a tolerance that is not a number, a broken regex).

use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::{copy_dir, fake_ncu, fixture_details, recordings, text, write_script, Workspace};

const TWO_KERNELS: &str = "[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\nruntime = \"harness\"\n\n\
                           [[package.metadata.kprof.kernels]]\nname = \"fma\"\nbench = \"fma\"\nruntime = \"cuda\"\n";

fn kprof_in(cwd: &Path, args: &[&str]) -> std::process::Output {
    crate::support::kprof_bin().arg("kprof").args(args).current_dir(cwd).output().unwrap()
}

/// `00_environment.txt` says how a probe failed once: "(exit code 3)", not "(exit exit
/// status: 3)".
#[test]
fn the_environment_record_says_how_a_probe_failed() {
    let ws = Workspace::new(TWO_KERNELS);
    let tools = ws.root().join("tools");
    let ncu = fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let out = ws.kprof(
        &["--kernel", "copy"],
        &[
            ("NCU", ncu.to_str().unwrap()),
            ("KPROF_SKIP_GPU_CHECK", "1"),
            ("FAKE_NCU_ARGV", argv.to_str().unwrap()),
            ("FAKE_NCU_REPLAY", fixture_details("copy_20261129_213211").to_str().unwrap()),
            ("FAKE_NCU_VERSION_EXIT", "3"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let env = std::fs::read_to_string(ws.profiles()[0].join("details/00_environment.txt")).unwrap();
    assert!(env.contains("\n(exit code 3) ncu: no license\n"), "{env}");
    assert!(!env.contains("exit exit") && !env.contains("exit status"), "{env}");
}

/// cargo's own `error:` prefixes are dropped from its message: the line says `error:`
/// once (before: "error: `cargo metadata` failed: warning: ...\nerror: failed to parse"), and
/// what cargo warned about comes after its error.
#[test]
fn a_cargo_metadata_failure_says_error_once() {
    let ws = Workspace::new(TWO_KERNELS);
    let cargo = write_script(
        &ws.root().join("tools/cargo"),
        "printf 'warning: unused manifest key: package.foo\\nerror: failed to parse manifest at `Cargo.toml`\\n\\nCaused by:\\n  TOML parse error at line 3\\n' >&2\nexit 101\n",
    );
    let out = ws.kprof(&["list"], &[("CARGO", cargo.to_str().unwrap())]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("cargo metadata").count(), 1, "{stderr}");
    assert!(
        stderr.contains("error: `cargo metadata` says: failed to parse manifest at `Cargo.toml`\n"),
        "{stderr}"
    );
    assert!(stderr.contains("TOML parse error at line 3"), "{stderr}");
    assert!(stderr.contains("TOML parse error at line 3\n\nwarning: unused manifest key"), "{stderr}");
}

/// What a failing program printed under ncu reaches the terminal without its escape
/// sequences (a title change, a screen clear, a bell, carriage returns), and its 100 KB
/// line is cut, saying how much.
#[test]
fn child_output_in_an_error_has_no_control_characters() {
    let ws = Workspace::new(TWO_KERNELS);
    let tools = ws.root().join("tools");
    let ncu = fake_ncu::write_misbehaving(&tools);
    let pids = tools.join("pids");
    let out = ws.kprof(
        &["--kernel", "copy"],
        &[
            ("NCU", ncu.to_str().unwrap()),
            ("KPROF_SKIP_GPU_CHECK", "1"),
            ("FAKE_NCU_MODE", "escapes"),
            ("FAKE_NCU_PIDS", pids.to_str().unwrap()),
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(8), "{stderr}");
    assert!(stderr.contains("program says [2J]0;pwned boom"), "{stderr}");
    for c in ['\x1b', '\x07', '\r'] {
        assert!(!stderr.contains(c), "{c:?} reached the terminal: {stderr:?}");
    }
    assert!(stderr.contains("... (99800 more bytes)"), "{stderr}");
    assert!(stderr.len() < 20_000, "{} bytes of error", stderr.len());
    let manifest = std::fs::read_to_string(ws.profiles()[0].join("run_manifest.yaml")).unwrap();
    assert!(!manifest.contains("\\e") && !manifest.contains('\x1b'), "{manifest}");
}

/// A 100 KB argument echoed in a message is cut to 200 bytes, with the count of the rest.
#[test]
fn a_100_kb_argument_is_not_echoed_whole() {
    let ws = Workspace::new(TWO_KERNELS);
    let big = "k".repeat(100_000);
    let cut = regex::Regex::new(r"k\.\.\. \(99\d{3} more bytes\)").unwrap();
    for args in [vec!["--kernel", big.as_str()], vec!["--stages", big.as_str()], vec!["report", big.as_str()]]
    {
        let out = if args[0] == "report" { kprof_in(ws.root(), &args) } else { ws.kprof(&args, &[]) };
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{}", &stderr[..stderr.len().min(500)]);
        assert!(stderr.len() < 5_000, "{:?}: {} bytes of error", &args[0], stderr.len());
        assert!(cut.is_match(&stderr), "{stderr}");
    }
}

/// A dry run's stdout is the replayable script, `commands.sh` as written: each ncu command
/// under its `# Stage N: name` comment, so redirecting stdout keeps labels and commands
/// together (before, the labels went to stderr and the commands to stdout).
#[test]
fn a_dry_run_prints_its_commands_with_their_labels_on_stdout() {
    let ws = Workspace::new(TWO_KERNELS);
    let out = ws.kprof(&["--kernel", "copy", "--dry-run"], &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let dir = &ws.profiles()[0];
    let script = std::fs::read_to_string(dir.join("commands.sh")).unwrap();
    assert_eq!(stdout.trim_end(), script.trim_end());
    let stage = stdout.lines().position(|l| l == "# Stage 1: basic").expect(&stdout);
    assert!(stdout.lines().nth(stage + 1).unwrap().contains("--log-file"), "{stdout}");
    assert!(
        !stderr.contains("ncu command") && !stderr.contains("Follow-up"),
        "labels left on stderr: {stderr}"
    );
    assert!(stderr.contains(&format!("Profile directory: {}", dir.display())), "{stderr}");
    // A POSIX shell can read it.
    let mut sh = Command::new("sh").arg("-n").stdin(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(sh.stdin.as_mut().unwrap(), stdout.as_bytes()).unwrap();
    assert!(sh.wait().unwrap().success(), "sh -n rejects:\n{stdout}");
}

/// `--set` and `--sections` together: ncu collects both (the set's sections plus the
/// listed ones), and kprof says so rather than leaving the user to guess.
#[test]
fn set_and_sections_both_apply_and_kprof_says_so() {
    let ws = Workspace::new(TWO_KERNELS);
    let out = ws.kprof(
        &["--kernel", "copy", "--set", "basic", "--sections", "SourceCounters,Occupancy", "--dry-run"],
        &[],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("--set basic --section SourceCounters --section Occupancy"), "{stdout}");
    assert!(
        stderr.contains("note: --set basic and --sections SourceCounters,Occupancy both apply: ncu collects the set's sections and these"),
        "{stderr}"
    );
}

/// Two different kernels are compared only with `--force`: exit 3 and nothing written
/// without it (before: a warning, and the reports written).
#[test]
fn comparing_two_different_kernels_needs_force() {
    let tmp = tempfile::tempdir().unwrap();
    let pair = recordings().join("check-runs/pair/workspace/profile");
    for name in ["hgemm_20261129_231810", "hgemm_tiled_20261129_231810"] {
        copy_dir(&pair.join(name), &tmp.path().join("profile").join(name));
    }
    let current = "profile/hgemm_tiled_20261129_231810";
    std::fs::remove_dir_all(tmp.path().join(current).join("comparison")).unwrap();
    let args = ["compare", current, "--baseline", "profile/hgemm_20261129_231810", "--save-baseline", "main"];
    let out = kprof_in(tmp.path(), &args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("different kernels or arguments: `hgemm (case hgemm_naive)` (baseline) vs `hgemm_tiled (case hgemm_tiled)` (current)"), "{stderr}");
    assert!(stderr.contains("pass --force"), "{stderr}");
    assert!(!tmp.path().join(current).join("comparison").exists(), "a refused comparison wrote its reports");
    assert!(!tmp.path().join("profile/baselines").exists(), "a refused comparison saved a baseline");

    let out = kprof_in(tmp.path(), &[&args[..], &["--force"]].concat());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warning: different kernels or arguments"), "{stderr}");
    assert!(tmp.path().join(current).join("comparison/regression_report.md").is_file());
}

/// A tolerance must be a finite number >= 0, wherever it comes from: `nan`, `inf` and
/// negative values are refused with the value named (before: `tolerance-pct = nan` in a
/// manifest said "found nothing", and `--tolerance-pct -1` "unexpected argument").
#[test]
fn a_tolerance_that_is_not_a_finite_number_is_refused_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    for value in ["nan", "NaN", "inf", "-inf", "-1", "-0.5"] {
        for command in ["compare", "check"] {
            let out = kprof_in(tmp.path(), &[command, "--tolerance-pct", value, "--baseline", "main"]);
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{command} {value}: {stderr}");
            assert!(
                stderr.contains(&format!("`{value}` is not a tolerance: give a finite percentage >= 0")),
                "{command} {value}: {stderr}"
            );
        }
    }
    for value in ["nan", "inf", "-inf"] {
        let ws =
            Workspace::new(&format!("[package.metadata.kprof]\ntolerance-pct = {value}\n\n{TWO_KERNELS}"));
        let out = ws.kprof(&["list"], &[]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{value}: {stderr}");
        assert!(stderr.contains("`tolerance-pct` in [package.metadata.kprof]"), "{value}: {stderr}");
        assert!(stderr.contains("found a number that is not finite (`nan` or `inf`)"), "{value}: {stderr}");
        assert!(!stderr.contains("found nothing"), "{value}: {stderr}");
    }
}

/// A broken `--kernel-regex` is named first, even when no kernel is selected (before:
/// "no kernel selected" hid it).
#[test]
fn a_broken_kernel_regex_is_named_before_the_selection() {
    let ws = Workspace::new(TWO_KERNELS);
    let out = ws.kprof(&["--kernel-regex", "((("], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("--kernel-regex `(((` is not a valid regex"), "{stderr}");
    assert!(!stderr.contains("no kernel selected"), "{stderr}");
}

/// #45 G15: `doctor --archive` called a bisect or an A/B archive "not a cargo kprof
/// archive"; it says what the archive is and what runs it.
#[test]
fn doctor_names_a_bisect_or_an_a_b_archive_for_what_it_is() {
    use crate::support::tarball::{self, Entry};
    let tmp = tempfile::tempdir().unwrap();
    for (manifest, what, verb) in [
        ("kprof-bisect.json", "is a bisect archive", "bisect --archive"),
        ("kprof-ab.json", "is an A/B archive", "check --archive"),
    ] {
        let archive = tmp.path().join(format!("{manifest}.tar"));
        tarball::write(&archive, &[Entry::file(manifest, "{}")]);
        let out = kprof_in(tmp.path(), &["doctor", "--archive", archive.to_str().unwrap()]);
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert!(all.contains(what) && all.contains(verb), "{manifest}: {all}");
        assert!(!all.contains("not a cargo kprof archive"), "{manifest}: {all}");
    }
}
