//! End-to-end tests of the `cargo-kprof` binary on small crates written to temp dirs.
//!
//! They need cargo (to read metadata and build the tiny bench) but no GPU and no ncu.

use std::path::Path;

use crate::support::{text, Workspace};

const TWO_KERNELS: &str = r#"
[package.metadata.kprof]
launch-count = 2

[[package.metadata.kprof.kernels]]
name = "copy"
bench = "copy"
runtime = "harness"
args = ["--n", "1 << 20"]

[[package.metadata.kprof.kernels]]
name = "fma"
bench = "fma"
runtime = "cuda"
"#;

#[test]
fn list_shows_configured_kernels_with_index() {
    let ws = Workspace::new(TWO_KERNELS);
    let out = ws.kprof(&["list"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["INDEX", "PACKAGE", "TARGET", "KERNEL", "ARGS"]
    );
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["1", "demo", "bench", "copy", "copy", "--n", "'1", "<<", "20'"]
    );
    assert_eq!(lines[2].split_whitespace().collect::<Vec<_>>(), ["2", "demo", "bench", "fma", "fma"]);

    let out = ws.kprof(&["list", "--index", "2", "--message-format", "json"], &[]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kernels"].as_array().unwrap().len(), 1);
    assert_eq!(v["kernels"][0]["name"], "fma");
    assert_eq!(v["kernels"][0]["filter"], "regex:.*fma.*");

    let out = ws.kprof(&["list", "--index", "7"], &[]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).contains("no configured kernel has index 7"), "{}", text(&out.stderr));
}

#[test]
fn dry_run_writes_profile_dir_and_prints_the_ncu_command() {
    let ws = Workspace::new(TWO_KERNELS);
    let out = ws.kprof(&["--kernel", "copy", "--dry-run", "--env", "NO_GRAPH=1"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let dirs = ws.profiles();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let id = dirs[0].file_name().unwrap().to_str().unwrap().to_string();
    assert_eq!(id, "copy_dry-run");

    // The printed command is exactly the one in commands.sh.
    let stdout = text(&out.stdout);
    let ncu_line = stdout.lines().find(|l| l.contains("--kernel-name")).expect("an ncu command on stdout");
    let script = std::fs::read_to_string(dirs[0].join("commands.sh")).unwrap();
    assert!(script.lines().any(|l| l == ncu_line), "{script}");
    for needle in [
        "KPROF_CASE=copy",
        "KPROF_LAUNCH_COUNT=2",
        "KPROF_PROFILE=1",
        "NO_GRAPH=1",
        "--clock-control none",
        "--profile-from-start off",
        "--kernel-name 'regex:.*copy.*'",
        "--csv --page raw --log-file",
        "details/01_basic_raw.csv",
        "--n '1 << 20'",
    ] {
        assert!(ncu_line.contains(needle), "missing {needle:?} in {ncu_line}");
    }
    assert!(script.contains("NVCC_APPEND_FLAGS=-lineinfo"), "{script}");
    assert!(script.contains("cargo build --message-format=json-render-diagnostics"), "{script}");

    let yaml = std::fs::read_to_string(dirs[0].join("profile-target.yaml")).unwrap();
    assert!(yaml.contains("kernel:\n  name: copy\n  filter_mode: regex\n  filter: .*copy.*\n  allow_discovery_fallback: true\n"), "{yaml}");
    assert!(yaml.contains("password_storage: forbidden"), "{yaml}");
    assert!(yaml.contains("window: harness-range"), "{yaml}");
    let spec = cargo_kprof::profile::target_spec::TargetSpec::read_from(&dirs[0].join("profile-target.yaml"))
        .unwrap();
    assert!(
        spec.target.executable.contains("kprof"),
        "built into <target>/kprof: {}",
        spec.target.executable
    );
    assert!(Path::new(&spec.target.executable).is_file());

    // No ncu was found here: profile/ncu_path would name one that does not exist.
    assert!(!ws.root().join("profile/ncu_path").exists());
    // The harness runtime was forced on a crate that does not use the harness: warned.
    assert!(stderr.contains("kprof-harness"), "{stderr}");
}

/// Dry runs write into one folder per kernel, `<kernel>_dry-run`, rewritten each time:
/// four leave one. A profile and a folder of that name that is not a dry run's are never
/// touched.
#[test]
fn dry_runs_reuse_one_folder_and_touch_nothing_else() {
    let ws = Workspace::new(TWO_KERNELS);
    std::fs::create_dir_all(ws.root().join("profile/fma_20261204_120000")).unwrap();
    std::fs::write(ws.root().join("profile/fma_20261204_120000/final_report.md"), "mine\n").unwrap();
    std::fs::write(ws.root().join("profile/ncu_path"), "/opt/ncu/bin/ncu\n").unwrap();
    for launches in ["1", "2", "3", "4"] {
        let out = ws.kprof(&["--kernel", "fma", "--dry-run", "--launch-count", launches], &[]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("fma_dry-run (the kernel's next dry run reuses it)"),
            "{}",
            text(&out.stderr)
        );
    }
    let dirs = ws.profiles();
    let names: Vec<&str> = dirs.iter().map(|d| d.file_name().unwrap().to_str().unwrap()).collect();
    assert_eq!(names, ["fma_20261204_120000", "fma_dry-run"], "{dirs:?}");
    let dry = &dirs[1];
    assert!(dry.join("commands.sh").is_file() && dry.join("profile-target.yaml").is_file());
    // A plain program gets the microbenchmark window, not a harness range: the last run's.
    let script = std::fs::read_to_string(dry.join("commands.sh")).unwrap();
    assert!(script.contains("--launch-skip 5 --launch-count 4"), "{script}");
    assert_eq!(std::fs::read_to_string(dirs[0].join("final_report.md")).unwrap(), "mine\n");
    // A folder of that name that kprof did not make is refused and left as it is.
    std::fs::create_dir_all(ws.root().join("profile/copy_dry-run")).unwrap();
    // (A script of the user's own, which the shell lint of the tests' workspaces accepts.)
    let mine = "#!/bin/sh\necho mine\n";
    std::fs::write(ws.root().join("profile/copy_dry-run/commands.sh"), mine).unwrap();
    let out = ws.kprof(&["--kernel", "copy", "--dry-run"], &[]);
    assert_eq!(out.status.code(), Some(12), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("is not a folder of kprof's dry runs"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(ws.root().join("profile/copy_dry-run/commands.sh")).unwrap(), mine);
    // A user's ncu_path is never overwritten.
    assert_eq!(std::fs::read_to_string(ws.root().join("profile/ncu_path")).unwrap(), "/opt/ncu/bin/ncu\n");
}

#[test]
fn missing_ncu_is_named_before_anything_is_built() {
    let ws = Workspace::new(TWO_KERNELS);
    let out = ws.kprof(&["--kernel", "copy"], &[("NCU", "/nonexistent/ncu")]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    // It leads with what is missing: no note about what a run would cost comes first.
    let error = stderr.find("error: cannot profile on this machine").expect("the error");
    assert!(!stderr[..error].contains("note:") && !stderr.contains("stages auto"), "{stderr}");
    assert!(stderr.contains("NCU=/nonexistent/ncu is not an executable file"), "{stderr}");
    // The two ways on: what to install here, or build here and profile there.
    assert!(
        stderr.contains("`cargo kprof archive -o FILE`") && stderr.contains("run --archive FILE"),
        "{stderr}"
    );
    assert!(stderr.contains("--dry-run"), "{stderr}");
    assert!(!ws.root().join("target/kprof").exists(), "nothing may be built when profiling cannot run");
    // Nor written: no profile/, no profile/ncu_path naming an ncu that is not there.
    assert!(!ws.root().join("profile").exists(), "a failed preflight wrote profile/");
    assert!(!stderr.contains("note: created"), "{stderr}");
}

#[test]
fn without_ncu_on_path_every_place_looked_at_is_named() {
    let ws = Workspace::new(TWO_KERNELS);
    std::fs::create_dir_all(ws.root().join("profile")).unwrap();
    std::fs::write(ws.root().join("profile/ncu_path"), "/nonexistent/cuda/bin/ncu\n").unwrap();
    let cargo_dir = Path::new(env!("CARGO")).parent().unwrap().to_str().unwrap().to_string();
    let out = ws.kprof(&["--kernel", "copy"], &[("PATH", &cargo_dir)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    for needle in
        ["NCU is not set", "`ncu` is not on PATH", "/nonexistent/cuda/bin/ncu (from", "profile/ncu_path"]
    {
        assert!(stderr.contains(needle), "missing {needle:?} in {stderr}");
    }
}

#[test]
fn a_non_empty_output_dir_is_refused_and_left_alone() {
    let ws = Workspace::new(TWO_KERNELS);
    let out_dir = ws.root().join("mine");
    std::fs::create_dir_all(&out_dir).unwrap();
    std::fs::write(out_dir.join("notes.txt"), "keep me").unwrap();
    let out = ws.kprof(&["--kernel", "copy", "--dry-run", "--output-dir", out_dir.to_str().unwrap()], &[]);
    let stderr = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("is not empty"), "{stderr}");
    assert_eq!(std::fs::read_to_string(out_dir.join("notes.txt")).unwrap(), "keep me");
    assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 1);
}

#[test]
fn selection_errors_name_the_way_out() {
    let ws = Workspace::new(TWO_KERNELS);
    let out = ws.kprof(&["--dry-run"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("no kernel selected") && stderr.contains("#1 copy, #2 fma"), "{stderr}");
    assert!(stderr.contains("--workspace"), "{stderr}");

    let out = ws.kprof(&["--kernel", "gemm", "--dry-run"], &[]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).contains("no configured kernel matches `gemm`"), "{}", text(&out.stderr));

    let out = ws.kprof(&["--bench", "nope", "--kernel", "x", "--dry-run"], &[]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("available bench targets: copy (demo), fma (demo)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn compare_without_profiles_says_what_to_do() {
    let ws = Workspace::new(TWO_KERNELS);
    let out = ws.kprof(&["compare"], &[]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no analysed profile to compare under"), "{stderr}");
    assert!(stderr.contains("help: profile a kernel first (`cargo kprof --kernel NAME`)"), "{stderr}");
}

#[test]
fn usage_errors_exit_2() {
    let out = crate::support::kprof_bin().args(["kprof", "--launch-count", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--launch-count"), "{}", text(&out.stderr));
}

#[test]
fn explain_prints_meaning_and_fixes_or_suggests() {
    let run = |topic: &str| crate::support::kprof_bin().args(["kprof", "explain", topic]).output().unwrap();
    let out = run("sm__throughput");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("Meaning:") && stdout.contains("Usual fixes:"), "{stdout}");
    let out = run("ocupancy-limited");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("did you mean `occupancy-limited`"), "{}", text(&out.stderr));
}

/// A name written another way (case, `_` for `-`, the start of one name) shows that
/// entry with a note; a misspelling or a part of several names suggests them, limiters
/// included, and the error names no file an installed user lacks.
#[test]
fn explain_finds_names_written_loosely() {
    let run = |topic: &str| crate::support::kprof_bin().args(["kprof", "explain", topic]).output().unwrap();
    for (query, shown) in
        [("uncoalesced", "uncoalesced-global (limiter)"), ("DRAM-bandwidth", "dram-bandwidth (limiter)")]
    {
        let out = run(query);
        assert_eq!(out.status.code(), Some(0), "{query}: {}", text(&out.stderr));
        assert!(text(&out.stdout).starts_with(&format!("{shown}\n")), "{query}: {}", text(&out.stdout));
        assert!(
            text(&out.stderr).contains(&format!("no topic is called `{query}`")),
            "{}",
            text(&out.stderr)
        );
    }
    for (query, suggested) in [
        ("coalesced", &["`uncoalesced-global`", "`coalescing`"][..]),
        ("dram_bandwith", &["did you mean `dram-bandwidth`"][..]),
    ] {
        let out = run(query);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{query}: {stderr}");
        assert!(suggested.iter().all(|s| stderr.contains(s)), "{query}: {stderr}");
        assert!(!stderr.contains(".md") && !stderr.contains(".yaml"), "{query}: {stderr}");
    }
}

/// `explain` without a name lists what it can explain, the limiters the reports name first.
#[test]
fn explain_without_a_name_lists_its_topics() {
    let out = crate::support::kprof_bin().args(["kprof", "explain"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let first = stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("limiters (the causes reports name): ") && first.contains("uncoalesced-global"),
        "{stdout}"
    );
    for line in
        ["questions: memory-or-compute", "stages: basic, speed-of-light", "classifications: memory-bound"]
    {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }
    let help = crate::support::kprof_bin().args(["kprof", "explain", "--help"]).output().unwrap();
    assert!(text(&help.stdout).contains("A limiter the reports name"), "{}", text(&help.stdout));
}

/// Runs `kprof doctor` in `ws` with `env`.
fn doctor(ws: &Workspace, env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = crate::support::kprof_bin();
    cmd.args(["kprof", "doctor", "--manifest-path"]).arg(ws.manifest()).env_remove("NCU");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// A workspace with an `ncu` that only answers `--version`, as a 2025.3.1 ncu does.
fn workspace_with_version_only_ncu() -> (Workspace, std::path::PathBuf) {
    let ws = Workspace::new(TWO_KERNELS);
    let ncu = crate::support::write_script(
        &ws.root().join("bin/ncu"),
        "echo 'Version 2025.3.1.0 (build 36398880) (public-release)'\n",
    );
    (ws, ncu)
}

/// Whether this machine's driver closes the counters to this user, read here without kprof:
/// `RmProfilingAdminOnly: 1` and not root.
fn counters_closed_here() -> bool {
    let admin_only = std::fs::read_to_string("/proc/driver/nvidia/params")
        .is_ok_and(|p| p.lines().any(|l| l.replace(' ', "") == "RmProfilingAdminOnly:1"));
    let root = std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|s| s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0")));
    admin_only && !root
}

#[test]
fn doctor_names_a_missing_ncu() {
    let ws = Workspace::new(TWO_KERNELS);
    let out = doctor(&ws, &[("NCU", "/nonexistent/ncu")]);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("FAIL    ncu: Nsight Compute's `ncu` was not found"),
        "{}",
        text(&out.stdout)
    );
}

/// Where the counters are open (or nothing says they are closed): every check passes, exit 0.
#[test]
fn doctor_passes_when_all_is_there() {
    if counters_closed_here() {
        eprintln!("skipped: this machine closes the counters to this user (doctor_exits_7_… covers it)");
        return;
    }
    let (ws, ncu) = workspace_with_version_only_ncu();
    let out = doctor(&ws, &[("NCU", ncu.to_str().unwrap()), ("KPROF_SKIP_GPU_CHECK", "1")]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("ok      ncu version: Version 2025.3.1.0 (build 36398880)"), "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
    // What it did not check is `unknown`, never `ok`.
    assert!(stdout.contains("unknown GPU: not checked (KPROF_SKIP_GPU_CHECK=1)"), "{stdout}");
    if !Path::new("/proc/driver/nvidia/params").exists() {
        assert!(stdout.contains("unknown counter permission: no /proc/driver/nvidia/params"), "{stdout}");
    }
    assert!(stdout.contains("profiling can work here"), "{stdout}");
}

/// Where the driver closes the counters to this user: exit 7, naming the driver option.
#[test]
fn doctor_exits_7_where_the_counters_are_closed() {
    if !counters_closed_here() {
        eprintln!("skipped: the counters are not closed to this user here (doctor_passes_… covers it)");
        return;
    }
    let (ws, ncu) = workspace_with_version_only_ncu();
    let out = doctor(&ws, &[("NCU", ncu.to_str().unwrap()), ("KPROF_SKIP_GPU_CHECK", "1")]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(7), "{stdout}");
    assert!(stdout.contains("RmProfilingAdminOnly: 1"), "{stdout}");
    assert!(stdout.contains("NVreg_RestrictProfilingToAdminUsers=0"), "{stdout}");
}

/// `doctor` never says `ok` of a path it also reports missing: a `profile/ncu_path` that
/// names an ncu that is not there fails with the ncu check, and `--color always` colours
/// the words.
#[test]
fn doctor_agrees_with_itself_and_colours_when_asked() {
    let ws = Workspace::new(TWO_KERNELS);
    std::fs::create_dir_all(ws.root().join("profile")).unwrap();
    std::fs::write(ws.root().join("profile/ncu_path"), "/nonexistent/cuda/bin/ncu\n").unwrap();
    let cargo_dir = Path::new(env!("CARGO")).parent().unwrap().to_str().unwrap().to_string();
    let run = |extra: &[&str]| {
        crate::support::kprof_bin()
            .args(["kprof", "doctor", "--manifest-path"])
            .arg(ws.manifest())
            .args(extra)
            .env_remove("NCU")
            .env("PATH", &cargo_dir)
            .output()
            .unwrap()
    };
    let out = run(&["--color", "never"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(5), "{stdout}");
    assert!(
        stdout.contains("FAIL    ncu: ") && stdout.contains("/nonexistent/cuda/bin/ncu (from"),
        "{stdout}"
    );
    assert!(
        stdout.contains("FAIL    profile/ncu_path: ") && stdout.contains("which does not exist"),
        "{stdout}"
    );
    assert!(!stdout.contains("ok      profile/ncu_path"), "{stdout}");
    assert!(!stdout.contains("--sudo runs `sudo -n"), "no sudo guide without --sudo: {stdout}");
    assert!(!stdout.contains('\x1b'), "{stdout}");
    let coloured = text(&run(&["--color", "always"]).stdout);
    assert!(coloured.contains("\x1b[1;31mFAIL\x1b[0m    ncu: "), "{coloured}");
}

/// `-h` is a summary that fits a screen; `--help` has every option.
#[test]
fn short_help_fits_a_screen_and_long_help_has_every_option() {
    let run = |flag: &str| {
        let out = crate::support::kprof_bin().args(["kprof", flag]).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        text(&out.stdout)
    };
    let (short, long) = (run("-h"), run("--help"));
    assert!(short.lines().count() <= 60, "{} lines:\n{short}", short.lines().count());
    assert!(
        short.contains("--kernel")
            && short.contains("--dry-run")
            && short.contains("--help` shows every option")
    );
    for option in
        ["--nvtx-include", "--partition", "--sudo", "--features", "--kernel-regex", "--census-launches"]
    {
        assert!(long.contains(option) && !short.contains(option), "{option}");
    }
}

/// `-q` silences kprof's notes and cargo's own lines: a successful dry run prints nothing
/// on stderr.
#[test]
fn quiet_dry_run_prints_nothing_on_stderr() {
    let ws = Workspace::new(TWO_KERNELS);
    let out = ws.kprof(&["-q", "--kernel", "copy", "--dry-run"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    let loud = ws.kprof(&["--kernel", "fma", "--dry-run"], &[]);
    assert!(text(&loud.stderr).contains("Finished"), "{}", text(&loud.stderr));
}
