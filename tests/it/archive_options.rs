//! What an archive carries besides the executables (the files `include` globs match, the
//! build scripts' PTX), which manifests it reads, and `run --archive`'s options, each
//! checked in the ncu command line a fake ncu records (replaying an H200 recording of the
//! `copy` kernel) or in the `commands.sh` a dry run writes.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::tarball::{self, Entry};
use crate::support::{fake_ncu, recordings, text, write_script, Workspace};

/// The recorded `details/` of the `copy` kernel's auto run on the H200 (basic, memory).
fn copy_recording() -> PathBuf {
    let root = recordings().join("archive-runs/cost/auto-copy/workspace/profile");
    let dir = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).find(|p| p.is_dir()).unwrap();
    dir.join("details")
}

/// A `copy` kernel entry that runs as a plain program (runtime `cuda`).
fn copy_entry(extra: &str) -> String {
    format!("[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\n{extra}\n")
}

/// `cargo kprof archive ARGS -o <root>/k.tar`; the archive's path and the command's output.
fn archive(ws: &Workspace, args: &[&str]) -> (PathBuf, Output) {
    let path = ws.root().join("k.tar");
    let mut all = vec!["archive"];
    all.extend_from_slice(args);
    all.extend(["-o", path.to_str().unwrap()]);
    let out = ws.kprof(&all, &[]);
    (path, out)
}

fn archived(ws: &Workspace, args: &[&str]) -> PathBuf {
    let (path, out) = archive(ws, args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    path
}

/// A machine without cargo: a fake ncu that replays the copy recording, records its argv
/// and the variables `X` and `KPROF_LAUNCH_COUNT` it was started with.
struct There {
    dir: tempfile::TempDir,
}

impl There {
    fn new() -> There {
        let there = There { dir: tempfile::tempdir().unwrap() };
        let inner = fake_ncu::write(&there.dir.path().join("inner"));
        write_script(
            &there.tools().join("ncu"),
            &format!(
                "case \"$*\" in *--log-file*)\n  \
                 printf 'X=%s KPROF_LAUNCH_COUNT=%s\\n' \"${{X-unset}}\" \"${{KPROF_LAUNCH_COUNT-unset}}\" >> \"$FAKE_NCU_ENV\" ;;\n\
                 esac\nexec {} \"$@\"\n",
                inner.display()
            ),
        );
        there
    }

    fn tools(&self) -> PathBuf {
        self.dir.path().join("tools")
    }

    fn remap(&self) -> PathBuf {
        self.dir.path().join("unpacked")
    }

    /// `cargo-kprof kprof run --archive ARCHIVE --workspace-remap <remap> ARGS`, run in
    /// this machine's folder.
    fn run(&self, archive: &Path, args: &[&str]) -> Output {
        crate::support::kprof_bin()
            .args(["kprof", "run", "--archive"])
            .arg(archive)
            .arg("--workspace-remap")
            .arg(self.remap())
            .args(args)
            .current_dir(self.dir.path())
            .env("NCU", self.tools().join("ncu"))
            .env("KPROF_SKIP_GPU_CHECK", "1")
            .env("FAKE_NCU_ARGV", self.tools().join("argv.txt"))
            .env("FAKE_NCU_ENV", self.tools().join("env.txt"))
            .env("FAKE_NCU_REPLAY", copy_recording())
            .env("CARGO", "/nonexistent/cargo")
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    }

    /// The stage calls ncu got (not `--version`).
    fn stage_calls(&self) -> Vec<Vec<String>> {
        fake_ncu::calls(&self.tools().join("argv.txt"))
            .into_iter()
            .filter(|a| a.iter().any(|x| x == "--log-file"))
            .collect()
    }

    fn env_lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.tools().join("env.txt"))
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect()
    }

    /// The profile directories under the unpacked workspace's `profile/`.
    fn profiles(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(self.remap().join("workspace/profile"))
            .map(|rd| rd.map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect())
            .unwrap_or_default();
        dirs.sort();
        dirs
    }
}

/// The value after `flag` in an argv.
fn after<'a>(argv: &'a [String], flag: &str) -> Option<&'a str> {
    argv.iter().position(|a| a == flag).and_then(|i| argv.get(i + 1)).map(String::as_str)
}

/// A data file and a script matched by `include` globs at both levels, and a build script's
/// PTX: listed by `archive`, recorded in its manifest, and unpacked at the same relative
/// place, where the program (whose working directory is the remapped package) finds them.
#[test]
fn included_files_and_build_script_ptx_travel_with_the_archive() {
    let ws = Workspace::new(&format!(
        "[workspace.metadata.kprof]\ninclude = [\"scripts/*.py\"]\n\n\
         [package.metadata.kprof]\ninclude = [\"data/*.bin\", \"kernels/**/*.ptx\"]\n\n{}",
        copy_entry("")
    ));
    let root = ws.root();
    // A package that is its own workspace: both tables apply, from one root.
    let manifest =
        std::fs::read_to_string(ws.manifest()).unwrap().replacen("[package]", "[workspace]\n\n[package]", 1);
    std::fs::write(ws.manifest(), manifest).unwrap();
    for (file, body) in [
        ("data/input.bin", "input"),
        ("data/deeper/skip.bin", "`*` stays in one folder"),
        ("kernels/gen/a.ptx", "ptx"),
        ("scripts/check.py", "print()"),
        ("target/stale.bin", "never searched"),
        ("kernels/copy.cu", "__global__ void copy_kernel() {}"),
    ] {
        std::fs::create_dir_all(root.join(file).parent().unwrap()).unwrap();
        std::fs::write(root.join(file), body).unwrap();
    }
    std::fs::write(
        root.join("build.rs"),
        "fn main() {\n    let out = std::path::PathBuf::from(std::env::var(\"OUT_DIR\").unwrap());\n    \
         std::fs::write(out.join(\"copy.ptx\"), \"// ptx\").unwrap();\n    \
         std::fs::write(out.join(\"notes.txt\"), \"not a kernel image\").unwrap();\n}\n",
    )
    .unwrap();

    let (path, out) = archive(&ws, &["--kernel", "copy"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for line in [
        "Archive: ",
        "  sources        1 CUDA source file(s)",
        "  included       data/input.bin",
        "  included       kernels/gen/a.ptx",
        "  included       scripts/check.py",
        "  build output   target/kprof/release/build/demo-",
        "  executable     bin/copy-",
    ] {
        assert!(stdout.contains(line), "{line:?} in\n{stdout}");
    }
    assert!(!stdout.contains("skip.bin") && !stdout.contains("stale.bin"), "{stdout}");
    let entries = tarball::read(&path);
    let plan = tarball::manifest(&entries);
    assert_eq!(plan["schema_version"], 3);
    assert_eq!(
        plan["included"],
        serde_json::json!(["data/input.bin", "kernels/gen/a.ptx", "scripts/check.py"])
    );
    let ptx = plan["build_outputs"][0].as_str().expect("one build output").to_string();
    assert!(ptx.starts_with("target/kprof/release/build/demo-") && ptx.ends_with("/out/copy.ptx"), "{ptx}");
    assert_eq!(plan["build_outputs"].as_array().unwrap().len(), 1, "only kernel images: {plan}");
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    assert!(names.contains(&"workspace/data/input.bin"), "{names:?}");
    assert!(names.contains(&format!("workspace/{ptx}").as_str()), "{names:?}");

    let there = There::new();
    let out = there.run(&path, &["--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let unpacked = there.remap().join("workspace");
    assert_eq!(std::fs::read_to_string(unpacked.join("data/input.bin")).unwrap(), "input");
    assert_eq!(std::fs::read_to_string(unpacked.join("scripts/check.py")).unwrap(), "print()");
    assert_eq!(std::fs::read_to_string(unpacked.join(&ptx)).unwrap(), "// ptx");
    // The program runs in the remapped package directory: `data/input.bin` from there.
    let spec = std::fs::read_to_string(there.profiles()[0].join("profile-target.yaml")).unwrap();
    let cwd = unpacked.canonicalize().unwrap();
    assert!(spec.contains(&format!("cwd: {}", cwd.display())), "{spec}");
    assert!(there.stage_calls().is_empty(), "a dry run runs nothing");
}

/// Globs that cannot be packed: refused with exit 3 before anything is built, naming the
/// glob and its table; no archive is written.
#[test]
fn include_globs_that_cannot_be_packed_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "x").unwrap();
    let cases: Vec<(&str, &str, Vec<String>)> = vec![
        (
            "data/*.bin",
            "",
            vec![
                "`include` glob \"data/*.bin\" in [package.metadata.kprof]".into(),
                "matches no file".into(),
            ],
        ),
        ("../*.toml", "", vec!["glob \"../*.toml\" leaves its root through `..`".into()]),
        ("/etc/passwd", "", vec!["glob \"/etc/passwd\" is an absolute path".into()]),
        (
            "links/*",
            "links/secret.txt",
            vec!["matches links/secret.txt".into(), "outside the workspace".into()],
        ),
    ];
    for (glob, link, names) in cases {
        let ws = Workspace::new(&format!(
            "[package.metadata.kprof]\ninclude = [\"{glob}\"]\n\n{}",
            copy_entry("")
        ));
        if !link.is_empty() {
            std::fs::create_dir_all(ws.root().join("links")).unwrap();
            std::os::unix::fs::symlink(outside.path().join("secret.txt"), ws.root().join(link)).unwrap();
        }
        let (path, out) = archive(&ws, &["--kernel", "copy"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{glob}: {stderr}");
        for n in &names {
            assert!(stderr.contains(n.as_str()), "{glob}: {n:?} in\n{stderr}");
        }
        assert!(stderr.contains("help:"), "{glob}: {stderr}");
        assert!(!path.exists(), "{glob}: no archive");
        assert!(!ws.root().join("target/kprof").exists(), "{glob}: refused before the build");
    }
}

/// An archive of schema 1 (no `included`, no `build_outputs`) still runs; one of a newer
/// schema is refused, naming it, before anything is unpacked.
#[test]
fn schema_1_archives_still_read_and_newer_ones_are_refused() {
    let ws = Workspace::new(&copy_entry(""));
    let real = tarball::read(&archived(&ws, &["--kernel", "copy"]));
    let mut v1 = tarball::manifest(&real);
    v1["schema_version"] = 1.into();
    let fields = v1.as_object_mut().unwrap();
    fields.remove("included");
    fields.remove("build_outputs");
    let old = ws.root().join("v1.tar");
    tarball::write(&old, &tarball::with_manifest(&real, &v1));
    let there = There::new();
    let out = there.run(&old, &["--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(there.profiles().len(), 1);

    let mut v99 = v1.clone();
    v99["schema_version"] = 99.into();
    let newer = ws.root().join("v99.tar");
    tarball::write(&newer, &tarball::with_manifest(&real, &v99));
    let there = There::new();
    let out = there.run(&newer, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("schema_version 99") && stderr.contains("upgrade cargo-kprof on this machine"),
        "{stderr}"
    );
    assert!(!there.remap().exists(), "nothing unpacked");
}

/// `--kernel`, `--stages`, `--launch-skip`/`--launch-count`, `--env` and `--output-dir` on
/// the GPU machine: each reaches ncu's command line or the program's environment, and the
/// profile records the changed plan.
#[test]
fn run_options_change_the_archived_plan() {
    let ws = Workspace::new(&copy_entry("env = { X = \"archived\" }"));
    let path = archived(&ws, &["--kernel", "copy"]);
    let there = There::new();
    let out = there.run(
        &path,
        &[
            "--kernel",
            "copy_k",
            "--stages",
            "memory",
            "--launch-skip",
            "7",
            "--launch-count",
            "2",
            "--env",
            "X=1",
            "--output-dir",
            "mine/copy",
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let calls = there.stage_calls();
    assert_eq!(calls.len(), 1, "exactly the memory stage: {calls:?}");
    let argv = &calls[0];
    assert_eq!(after(argv, "--kernel-name"), Some("regex:.*copy_k.*"), "{argv:?}");
    assert_eq!(after(argv, "--launch-skip"), Some("7"), "{argv:?}");
    assert_eq!(after(argv, "--launch-count"), Some("2"), "{argv:?}");
    assert!(after(argv, "--log-file").unwrap().ends_with("mine/copy/details/03_memory_raw.csv"), "{argv:?}");
    assert_eq!(there.env_lines(), ["X=1 KPROF_LAUNCH_COUNT=unset"], "the program's environment");
    // The profile went to --output-dir, and records what ran.
    let profile = there.dir.path().join("mine/copy");
    let script = std::fs::read_to_string(profile.join("commands.sh")).unwrap();
    assert!(script.contains("# Stage 1: memory\n"), "{script}");
    assert!(!script.contains("follow-up"), "{script}");
    assert!(script.contains("--launch-skip 7 --launch-count 2 --kernel-name 'regex:.*copy_k.*'"), "{script}");
    let spec: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(profile.join("profile-target.yaml")).unwrap()).unwrap();
    assert_eq!(spec["target"]["env"]["X"], "1", "{spec:?}");
    assert_eq!(spec["kernel"]["filter"], ".*copy_k.*", "{spec:?}");
    assert!(there.profiles().is_empty(), "nothing under the unpacked profile/ but ncu_path");
}

/// A dry run writes the profile and its commands and runs nothing; a hint that names no
/// archived kernel turns a discovery archive (one program, no hint) into a filtered run.
#[test]
fn dry_run_and_a_hint_for_a_discovery_archive() {
    let ws = Workspace::new("");
    let path = archived(&ws, &["--bench", "copy"]);
    let there = There::new();
    let out = there.run(&path, &["--kernel", "copy_kernel", "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(there.stage_calls().is_empty(), "a dry run runs nothing");
    let profiles = there.profiles();
    assert_eq!(profiles.len(), 1);
    assert!(profiles[0].file_name().unwrap().to_string_lossy().starts_with("copy_kernel_"), "{profiles:?}");
    let script = std::fs::read_to_string(profiles[0].join("commands.sh")).unwrap();
    assert!(script.contains("--kernel-name 'regex:.*copy_kernel.*'"), "{script}");
    assert!(!script.contains("discovery"), "{script}");
    assert_eq!(text(&out.stdout).trim_end(), script.trim_end(), "stdout is commands.sh");
}

/// With several programs a hint must name an archived kernel: exit 3 listing them, and
/// nothing unpacked. A harness target ignores --launch-skip with the note the profile
/// command gives, and gets the count through the harness' variable.
#[test]
fn hints_among_several_programs_and_harness_windows() {
    let ws = Workspace::with_harness(&format!(
        "{}\n[[package.metadata.kprof.kernels]]\nname = \"fma\"\nbench = \"fma\"\n",
        copy_entry("")
    ));
    let path = archived(&ws, &["--workspace"]);
    let there = There::new();
    let out = there.run(&path, &["--kernel", "hgemm"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("kernel hint `hgemm` matches no archived kernel"), "{stderr}");
    assert!(stderr.contains("archived kernels: `copy` (bench copy), `fma` (bench fma)"), "{stderr}");
    assert!(!there.remap().exists(), "nothing unpacked");
    // `check --archive` takes the same selection.
    let remap = there.remap().with_extension("check");
    let out = crate::support::kprof_bin()
        .args(["kprof", "check", "--timing-only", "--baseline", "main", "--kernel", "hgemm", "--archive"])
        .arg(&path)
        .arg("--workspace-remap")
        .arg(&remap)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("kernel hint `hgemm` matches no archived kernel"), "{stderr}");
    assert!(!remap.exists(), "nothing unpacked");

    let out = there
        .run(&path, &["--kernel", "copy", "--stages", "basic", "--launch-skip", "3", "--launch-count", "4"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("copy: launch-skip is ignored for harness targets"), "{stderr}");
    let calls = there.stage_calls();
    assert_eq!(calls.len(), 1, "only copy, only basic: {calls:?}");
    assert_eq!(after(&calls[0], "--launch-skip"), None, "{:?}", calls[0]);
    assert_eq!(there.env_lines(), ["X=unset KPROF_LAUNCH_COUNT=4"]);
}

/// Hostile lists in the manifest are refused like hostile entries (see bad_input.rs); here,
/// only that a listed file must be one the archive holds.
#[test]
fn listed_files_must_be_packed() {
    let ws = Workspace::new(&copy_entry(""));
    let real = tarball::read(&archived(&ws, &["--kernel", "copy"]));
    let mut plan = tarball::manifest(&real);
    plan["included"] = serde_json::json!(["data/input.bin"]);
    let mut entries = tarball::with_manifest(&real, &plan);
    entries.push(Entry::file("workspace/data/other.bin", "x"));
    let bad = ws.root().join("bad.tar");
    tarball::write(&bad, &entries);
    let there = There::new();
    let out = there.run(&bad, &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("lists `data/input.bin` in `included`"), "{}", text(&out.stderr));
}

/// A build script's OUT_DIR outside the workspace (here: `CARGO_TARGET_DIR` elsewhere) is
/// not packed and the listing says so; `--message-format json` carries the same listing.
#[test]
fn out_dirs_outside_the_workspace_are_listed_as_not_packed() {
    let ws =
        Workspace::new(&format!("[package.metadata.kprof]\ninclude = [\"data/*\"]\n\n{}", copy_entry("")));
    std::fs::create_dir_all(ws.root().join("data")).unwrap();
    std::fs::write(ws.root().join("data/in.txt"), "x").unwrap();
    std::fs::write(
        ws.root().join("build.rs"),
        "fn main() { let out = std::env::var(\"OUT_DIR\").unwrap(); \
         std::fs::write(format!(\"{out}/k.ptx\"), \"\").unwrap(); }\n",
    )
    .unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let path = ws.root().join("k.tar");
    let args = ["archive", "--kernel", "copy", "--message-format", "json", "-o", path.to_str().unwrap()];
    let out = ws.kprof(&args, &[("CARGO_TARGET_DIR", elsewhere.path().to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let line: serde_json::Value = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["reason"] == "archive-written")
        .expect("an archive-written line");
    assert_eq!(line["included"], serde_json::json!(["data/in.txt"]), "{line}");
    assert_eq!(line["build_outputs"], serde_json::json!([]), "{line}");
    assert_eq!(line["sources"], 0, "{line}");
    assert_eq!(line["executables"][0]["name"], "copy", "{line}");
    let skipped = &line["skipped_out_dirs"][0];
    assert_eq!(skipped["package"], "demo", "{line}");
    assert!(Path::new(skipped["out_dir"].as_str().unwrap()).starts_with(elsewhere.path()), "{line}");

    let human = ws.root().join("k2.tar");
    let args = ["archive", "--kernel", "copy", "-o", human.to_str().unwrap()];
    let out = ws.kprof(&args, &[("CARGO_TARGET_DIR", elsewhere.path().to_str().unwrap())]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("  not packed     OUT_DIR of demo: ")
            && stdout.contains("lies outside the workspace"),
        "{stdout}"
    );
}

/// Where ncu is missing, `run --archive` stops with exit 5 and the help its message always
/// gave, `--dry-run`, which now exists there: it writes the commands without ncu.
#[test]
fn without_ncu_the_suggested_dry_run_works() {
    let ws = Workspace::new(&copy_entry(""));
    let path = archived(&ws, &["--kernel", "copy"]);
    let there = tempfile::tempdir().unwrap();
    let run = |remap: &str, extra: &[&str]| {
        crate::support::kprof_bin()
            .args(["kprof", "run", "--archive"])
            .arg(&path)
            .args(["--workspace-remap", remap])
            .args(extra)
            .current_dir(there.path())
            .env("NCU", "/nonexistent/ncu")
            .env("PATH", "/nonexistent")
            .env("CARGO", "/nonexistent/cargo")
            .env_remove("KPROF_SKIP_GPU_CHECK")
            .output()
            .unwrap()
    };
    let out = run("a", &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("`--dry-run`"), "{stderr}");
    let out = run("b", &["--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("# Stage 1: basic"), "{}", text(&out.stdout));
}

/// A project with two configured kernels packs both when nothing is selected: the GPU
/// machine picks from the archive later. Profiling still asks which one.
#[test]
fn an_archive_without_a_selection_packs_every_configured_kernel() {
    let ws = Workspace::with_harness(&format!(
        "{}\n[[package.metadata.kprof.kernels]]\nname = \"fma\"\nbench = \"fma\"\n",
        copy_entry("")
    ));
    let path = archived(&ws, &[]);
    let there = There::new();
    let out = there.run(&path, &["--kernel", "hgemm"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("archived kernels: `copy` (bench copy), `fma` (bench fma)"), "{stderr}");
    let out = ws.kprof(&["--dry-run"], &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no kernel selected"), "{}", text(&out.stderr));
}

/// #45 G15: an `include` glob matching a file whose name is not UTF-8 failed without
/// naming the file. It is refused before the build, naming the file as far as it can be
/// read and the glob that matched it.
#[test]
fn an_included_file_whose_name_is_not_utf8_is_named() {
    use std::os::unix::ffi::OsStrExt;
    let ws = Workspace::new(&format!(
        "[package.metadata.kprof]\ninclude = [\"data/*.bin\"]\n\n{}",
        copy_entry("")
    ));
    std::fs::create_dir_all(ws.root().join("data")).unwrap();
    std::fs::write(ws.root().join("data/ok.bin"), "x").unwrap();
    std::fs::write(ws.root().join("data").join(std::ffi::OsStr::from_bytes(b"w\xffrd.bin")), "x").unwrap();
    let (path, out) = archive(&ws, &["--kernel", "copy"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("data/w\u{fffd}rd.bin") && stderr.contains("data/*.bin"), "{stderr}");
    assert!(stderr.contains("not UTF-8") && stderr.contains("help:"), "{stderr}");
    assert!(!path.exists(), "no archive");
    assert!(!ws.root().join("target/kprof").exists(), "refused before the build");
}
