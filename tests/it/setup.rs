//! Setting kprof up on a project: `cargo kprof init` and the help of a workspace with no
//! configuration, `.ci/install-cuda-tools.sh`'s exports, and the note kprof prints when it
//! creates the workspace's `profile/` folder.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{repo, text, write_script, Workspace};

/// A tree as the CUDA wheels leave it, so that the script finds everything installed and
/// runs no pip.
fn installed_tree(dir: &Path) {
    let cu = dir.join("nvidia/cu13");
    write_script(&cu.join("bin/nvcc"), "echo fake nvcc\n");
    for f in ["include/crt/host_config.h", "lib/libnvrtc.so.13", "include/cuda_fp16.h"] {
        std::fs::create_dir_all(cu.join(f).parent().unwrap()).unwrap();
        std::fs::write(cu.join(f), "").unwrap();
    }
    std::fs::create_dir_all(cu.join("include/cccl/nv/target")).unwrap();
}

#[test]
fn install_cuda_tools_puts_nvcc_first_on_path() {
    let tmp = tempfile::tempdir().unwrap();
    installed_tree(tmp.path());
    let script = repo().join(".ci/install-cuda-tools.sh");
    // build.rs scripts run `nvcc` by name: after the eval, the name must find the wheel's
    // nvcc even where another nvcc is first on PATH; a second eval changes nothing that matters.
    let other = tmp.path().join("other");
    write_script(&other.join("nvcc"), "echo other nvcc\n");
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -euo pipefail; export PATH=\"$1:$PATH\"; \
             eval \"$(bash {0} \"$2\")\"; eval \"$(bash {0} \"$2\")\"; \
             nvcc; \"$NVCC\"; test -d \"$CUDA_HOME\"; echo \"$LD_LIBRARY_PATH\"",
            script.display()
        ))
        .arg("bash")
        .arg(&other)
        .arg(tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[..2], ["fake nvcc", "fake nvcc"], "{stdout}");
    assert!(lines[2].starts_with(&format!("{}/nvidia/cu13/lib", tmp.path().display())), "{stdout}");
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_first_run_that_creates_profile_says_so_once() {
    let ws = Workspace::new("");
    let root = ws.root().canonicalize().unwrap().join("profile");
    let note = format!("note: created {}: it holds this workspace's local profiles", root.display());

    // doctor only reads: it creates nothing and has nothing to say about it.
    let doctor = ws.kprof(&["doctor", "--color", "never"], &[]);
    assert!(!stderr(&doctor).contains("created"), "{}", stderr(&doctor));
    assert!(!root.exists(), "doctor created {}", root.display());

    // A refused selection creates nothing either.
    let refused = ws.kprof(&["--kernel", "copy", "--dry-run"], &[]);
    assert_eq!(refused.status.code(), Some(3), "{}", stderr(&refused));
    assert!(!root.exists());

    let dry = ["--bench", "copy", "--kernel", "copy", "--dry-run", "--color", "never"];
    let first = ws.kprof(&dry, &[]);
    assert!(first.status.success(), "{}", stderr(&first));
    let text = stderr(&first);
    assert_eq!(text.matches(&note).count(), 1, "{text}");
    assert!(
        text.contains("add `profile/` to .gitignore") && text.contains("commit only `profile/baselines/`")
    );
    // No ncu here: no ncu_path naming one that does not exist.
    assert!(!root.join("ncu_path").exists());

    let second = ws.kprof(&dry, &[]);
    assert!(second.status.success(), "{}", stderr(&second));
    assert!(!stderr(&second).contains("note: created"), "{}", stderr(&second));
}

#[test]
fn the_profile_note_respects_quiet() {
    let ws = Workspace::new("");
    let out = ws.kprof(&["--bench", "copy", "--dry-run", "-q"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(ws.root().join("profile").is_dir());
    assert!(!stderr(&out).contains("created"), "{}", stderr(&out));
}

/// Runs `cargo-kprof kprof ARGS --manifest-path MANIFEST`.
fn kprof_at(manifest: &Path, args: &[&str]) -> Output {
    crate::support::kprof_bin()
        .arg("kprof")
        .args(args)
        .arg("--manifest-path")
        .arg(manifest)
        .args(["--color", "never"])
        .env_remove("NCU")
        .output()
        .unwrap()
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn package_toml(name: &str, rest: &str) -> String {
    format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n{rest}")
}

/// A workspace as users bring it: `gpu` (a build script, an example and a bin `app`),
/// `kern` (a `.cu` file, a bin also named `app`, a CRLF manifest), `hb` (benches on the
/// kprof harness), `util` (a bin, no sign of GPU code), `conf` (configured already) and the
/// harness stand-in (a library only).
fn users_workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(
        &root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"gpu\", \"kern\", \"hb\", \"util\", \"conf\"]\nresolver = \"2\"\n",
    );
    write(&root, "gpu/Cargo.toml", &package_toml("gpu", "\n# keep this comment   \n[dependencies]\n"));
    write(&root, "gpu/build.rs", "fn main() {}\n");
    write(&root, "gpu/examples/matmul-kernel.rs", "fn main() {}\n");
    write(&root, "gpu/src/bin/app.rs", "fn main() {}\n");
    write(&root, "kern/Cargo.toml", &package_toml("kern", "").replace('\n', "\r\n"));
    write(&root, "kern/kernels/k.cu", "__global__ void k() {}\n");
    write(&root, "kern/src/bin/app.rs", "fn main() {}\n");
    write(
        &root,
        "hb/Cargo.toml",
        &package_toml(
            "hb",
            "\n[dependencies]\nkprof-harness = { path = \"../kprof-harness\" }\n\n[[bench]]\nname = \"hgemm\"\nharness = false\n",
        ),
    );
    // Uses the harness (in name), but its `--list` prints nothing: it cannot be listed.
    write(&root, "hb/benches/hgemm.rs", "// kprof_harness\nfn main() {}\n");
    write(&root, "kprof-harness/Cargo.toml", &package_toml("kprof-harness", ""));
    write(&root, "util/Cargo.toml", package_toml("util", "").trim_end()); // no final newline
    write(&root, "util/src/bin/tool.rs", "fn main() {}\n");
    write(
        &root,
        "conf/Cargo.toml",
        &package_toml(
            "conf",
            "\n[[bench]]\nname = \"copy\"\nharness = false\n\n[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\n",
        ),
    );
    write(&root, "conf/benches/copy.rs", "fn main() {}\n");
    for p in ["gpu", "kern", "hb", "kprof-harness", "util", "conf"] {
        write(&root, &format!("{p}/src/lib.rs"), "");
    }
    (dir, root)
}

fn listed(manifest: &Path) -> Vec<(String, String, String, String)> {
    let out = kprof_at(manifest, &["list", "--message-format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            let s = |key: &str| k[key].as_str().unwrap().to_string();
            (s("name"), s("target"), s("runtime"), s("filter"))
        })
        .collect()
}

#[test]
fn init_writes_entries_that_list_reads() {
    let (_dir, root) = users_workspace();
    let manifest = root.join("Cargo.toml");
    let manifests = ["gpu", "kern", "hb", "util", "conf"].map(|p| root.join(p).join("Cargo.toml"));
    let before: Vec<Vec<u8>> = manifests.iter().map(|m| std::fs::read(m).unwrap()).collect();

    let dry = kprof_at(&manifest, &["init", "--dry-run"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    let after: Vec<Vec<u8>> = manifests.iter().map(|m| std::fs::read(m).unwrap()).collect();
    assert_eq!(before, after, "--dry-run wrote");
    let printed = String::from_utf8_lossy(&dry.stdout);
    assert!(printed.contains(&format!("# would be appended to {}:", manifests[0].display())), "{printed}");
    assert!(printed.contains("name = \"kern-app\""), "{printed}");

    let out = kprof_at(&manifest, &["init"]);
    let text = stderr(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("Appended 2 kernel entries to") && text.contains("matmul-kernel (example), app (bin)"),
        "{text}"
    );
    assert!(text.contains("Skipped package `conf`: it already has [package.metadata.kprof]"), "{text}");
    assert!(
        text.contains(
            "note: bench `hgemm` of `hb`: one entry for all its cases (`case = \".*\"`), which could not be \
             listed: its `--list` printed no cases"
        ),
        "{text}"
    );
    assert!(text.contains("Skipped package `util`: no sign of GPU code"), "{text}");
    assert!(
        text.contains("Skipped package `kprof-harness`: it has no bench, example or bin target"),
        "{text}"
    );
    assert!(
        text.contains("`cargo kprof list`") && text.contains("`cargo kprof --kernel matmul-kernel`"),
        "{text}"
    );

    // Appended: every byte that was there is still there, in place.
    for (m, old) in manifests.iter().zip(&before) {
        let new = std::fs::read(m).unwrap();
        assert!(new.starts_with(old), "{} was not only appended to", m.display());
    }
    let kern = String::from_utf8(std::fs::read(&manifests[1]).unwrap()).unwrap();
    assert!(
        kern.contains("[[package.metadata.kprof.kernels]]\r\nname = \"kern-app\""),
        "CRLF kept: {kern:?}"
    );
    assert_eq!(std::fs::read(&manifests[3]).unwrap(), before[3], "util has no GPU code");
    assert_eq!(std::fs::read(&manifests[4]).unwrap(), before[4], "conf was configured");

    let row =
        |n: &str, t: &str, r: &str| (n.to_string(), t.to_string(), r.to_string(), "regex:.*".to_string());
    let mut rows = listed(&manifest);
    assert_eq!(rows.remove(0).0, "copy");
    assert_eq!(
        rows,
        [
            row("matmul-kernel", "example matmul-kernel", "cuda"),
            row("app", "bin app", "cuda"),
            row("hgemm", "bench hgemm", "harness"),
            row("kern-app", "bin app", "cuda"),
        ]
    );

    let again = kprof_at(&manifest, &["init", "-p", "gpu", "-p", "conf"]);
    assert_eq!(again.status.code(), Some(3), "{}", stderr(&again));
    assert!(
        stderr(&again)
            .contains("error: nothing to write: every package already has [package.metadata.kprof]"),
        "{}",
        stderr(&again)
    );
}

/// A crate whose bench answers `--list` as a kprof-harness bench does, and a plain bin.
fn two_case_workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(&root, "Cargo.toml", "[workspace]\nmembers = [\"app\", \"kprof-harness\"]\nresolver = \"2\"\n");
    write(
        &root,
        "app/Cargo.toml",
        &package_toml(
            "app",
            "\n[dependencies]\nkprof-harness = { path = \"../kprof-harness\" }\n\n[[bench]]\nname = \"kernels\"\nharness = false\n",
        ),
    );
    // What a `kprof_harness::Bench` with two cases prints for `--list`, without a GPU.
    write(
        &root,
        "app/benches/kernels.rs",
        "// Stands in for a kprof_harness bench with the cases saxpy and matmul_naive.\n\
         fn main() {\n    if std::env::args().any(|a| a == \"--list\") {\n        \
         println!(\"saxpy/n=16777216\");\n        println!(\"matmul_naive/n=1024\");\n    } else {\n        \
         std::process::exit(3);\n    }\n}\n",
    );
    write(&root, "app/src/bin/plain.rs", "fn main() {}\n");
    write(&root, "app/src/lib.rs", "");
    write(&root, "kprof-harness/Cargo.toml", &package_toml("kprof-harness", ""));
    write(&root, "kprof-harness/src/lib.rs", "");
    (dir, root)
}

#[test]
fn init_writes_one_entry_per_harness_case_and_each_selects_its_case() {
    let (_dir, root) = two_case_workspace();
    let manifest = root.join("Cargo.toml");
    let out = kprof_at(&manifest, &["init"]);
    let text = stderr(&out);
    assert!(out.status.success(), "{text}");
    // It says why it builds, and why the plain program keeps one entry.
    assert!(
        text.contains("to list its cases (a build like a profile's, reused by it; no GPU needed)"),
        "{text}"
    );
    assert!(
        text.contains(
            "note: bin `plain` of `app`: one entry as a plain program (`runtime = \"cuda\"`): src/bin/plain.rs \
             does not use kprof_harness"
        ),
        "{text}"
    );
    let toml = std::fs::read_to_string(root.join("app/Cargo.toml")).unwrap();
    assert!(toml.contains("name = \"saxpy\"") && toml.contains("case = \"^saxpy/n=16777216$\""), "{toml}");
    assert!(toml.contains("case = \"^matmul_naive/n=1024$\""), "{toml}");
    let names: Vec<String> = listed(&manifest).into_iter().map(|r| r.0).collect();
    assert_eq!(names, ["saxpy", "matmul_naive", "plain"]);
    // Each entry, as written, selects its case alone.
    for (kernel, case) in [("saxpy", "saxpy/n=16777216"), ("matmul_naive", "matmul_naive/n=1024")] {
        let dry = kprof_at(&manifest, &["--kernel", kernel, "--dry-run", "-q"]);
        let script = String::from_utf8_lossy(&dry.stdout);
        assert!(dry.status.success(), "{}", stderr(&dry));
        let selected: Vec<&str> = script.split_whitespace().filter(|w| w.contains("KPROF_CASE=")).collect();
        assert!(!selected.is_empty(), "{script}");
        for w in selected {
            let regex = w.trim_matches('\'').trim_start_matches("KPROF_CASE=");
            let re = regex::Regex::new(regex).unwrap();
            assert!(re.is_match(case), "{kernel}: {w}");
            assert!(
                ["saxpy/n=16777216", "matmul_naive/n=1024"].iter().filter(|c| re.is_match(c)).count() == 1,
                "{kernel}: {w} selects more than its case"
            );
        }
    }
}

#[test]
fn init_p_limits_the_packages() {
    let (_dir, root) = users_workspace();
    let manifest = root.join("Cargo.toml");
    // Asked for by name, a package without GPU signs gets its entries, with a note.
    let out = kprof_at(&manifest, &["init", "-p", "util"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("note: no package shows a sign of GPU code"), "{}", stderr(&out));
    let names: Vec<String> = listed(&manifest).into_iter().map(|r| r.0).collect();
    assert_eq!(names, ["copy", "tool"]);
    let util = std::fs::read_to_string(root.join("util/Cargo.toml")).unwrap();
    assert!(util.contains("edition = \"2021\"\n\n# The kernels `cargo kprof` profiles"), "{util}");
    assert!(!std::fs::read_to_string(root.join("gpu/Cargo.toml")).unwrap().contains("kprof"));

    let unknown = kprof_at(&manifest, &["init", "-p", "nope"]);
    assert_eq!(unknown.status.code(), Some(3));
    assert!(
        stderr(&unknown).contains("package `nope` is not a member of this workspace"),
        "{}",
        stderr(&unknown)
    );
    let lib_only = kprof_at(&manifest, &["init", "-p", "kprof-harness"]);
    assert_eq!(lib_only.status.code(), Some(3));
    assert!(stderr(&lib_only).contains("nothing to write: no package has a bench, example or bin target"));
}

#[test]
fn an_unconfigured_workspace_is_offered_its_real_targets() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", &package_toml("matmul", ""));
    write(root, "src/lib.rs", "");
    write(root, "examples/matmul-kernel.rs", "fn main() {}\n");
    let manifest = root.join("Cargo.toml");

    let hinted = kprof_at(&manifest, &["--kernel", "matmul"]);
    assert_eq!(hinted.status.code(), Some(3));
    let text = stderr(&hinted);
    assert!(text.starts_with("error: no kernels are configured in this workspace\n"), "{text}");
    assert!(
        text.contains("help: profile the one target here directly: `cargo kprof --example matmul-kernel --kernel matmul`"),
        "{text}"
    );
    assert!(text.contains("`cargo kprof init` writes an entry"), "{text}");

    let all = kprof_at(&manifest, &["--workspace"]);
    assert_eq!(all.status.code(), Some(3));
    assert!(
        stderr(&all).contains("costliest kernel): `cargo kprof --example matmul-kernel`\n"),
        "{}",
        stderr(&all)
    );
    assert!(!root.join("profile").exists());

    // The command offered is one kprof accepts: it plans a profile of that example.
    let direct =
        kprof_at(&manifest, &["--example", "matmul-kernel", "--kernel", "matmul", "--dry-run", "-q"]);
    assert!(direct.status.success(), "{}", stderr(&direct));
    assert!(String::from_utf8_lossy(&direct.stdout).contains("--kernel-name 'regex:.*matmul.*'"));
}

#[test]
fn many_targets_are_listed_benches_first_with_p_where_names_clash() {
    let (_dir, root) = users_workspace();
    let out = kprof_at(&root.join("Cargo.toml"), &["-p", "gpu", "-p", "kern", "--kernel", "mm"]);
    assert_eq!(out.status.code(), Some(3));
    let text = stderr(&out);
    let expected = "help: profile one of the targets here directly:\n          \
                    cargo kprof --example matmul-kernel --kernel mm\n          \
                    cargo kprof -p gpu --bin app --kernel mm\n          \
                    cargo kprof -p kern --bin app --kernel mm\n";
    assert!(text.contains(expected), "{text}");
}

#[test]
fn init_speaks_json_lines() {
    let (_dir, root) = users_workspace();
    let out = kprof_at(&root.join("Cargo.toml"), &["init", "--dry-run", "--message-format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let reasons: Vec<&str> = lines.iter().map(|v| v["reason"].as_str().unwrap()).collect();
    // The build that lists the cases, the additions, the note on what could not be listed,
    // the packages skipped and what to do next.
    assert_eq!(
        reasons,
        [
            "build-started",
            "init-dry-run",
            "init-dry-run",
            "init-dry-run",
            "notice",
            "init-skipped",
            "init-skipped",
            "init-skipped",
            "init-finished"
        ]
    );
    let hb = &lines[2];
    assert_eq!(hb["package"], "hb");
    assert_eq!(hb["runtime"], "harness");
    assert_eq!(hb["kernels"][0], serde_json::json!({ "name": "hgemm", "target": "bench hgemm" }));
    assert!(hb["text"].as_str().unwrap().contains("case = \".*\""));
    assert_eq!(lines[0]["purpose"], "list-cases");
    assert_eq!((&lines[4]["level"], &lines[4]["about"]), (&"note".into(), &"init".into()));
    assert_eq!(lines[8]["dry_run"], true);
    assert!(!std::fs::read_to_string(root.join("hb/Cargo.toml")).unwrap().contains("kprof.kernels"));
}

#[test]
fn check_says_it_created_profile_too() {
    let ws = Workspace::new("");
    let args = ["check", "--bench", "copy", "--kernel", "copy", "--save-baseline", "main", "--dry-run"];
    let first = ws.kprof(&args, &[]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(stderr(&first).matches("note: created ").count(), 1, "{}", stderr(&first));
    let second = ws.kprof(&args, &[]);
    assert!(second.status.success(), "{}", stderr(&second));
    assert!(!stderr(&second).contains("note: created "), "{}", stderr(&second));
}

#[test]
fn init_refuses_a_manifest_it_cannot_append_to_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // `[package.metadata.kprof]` cannot extend a `metadata` written inline.
    let manifest_text = package_toml("gpu", "metadata = { docs = \"x\" }\n\n[dependencies]\n");
    write(root, "Cargo.toml", &manifest_text);
    write(root, "src/lib.rs", "");
    write(root, "examples/matmul-kernel.rs", "fn main() {}\n");
    let out = kprof_at(&root.join("Cargo.toml"), &["init"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(
        text.contains("would not be valid TOML with a [package.metadata.kprof] table appended"),
        "{text}"
    );
    assert!(text.contains("cargo kprof init --dry-run -p PACKAGE"), "{text}");
    assert_eq!(std::fs::read_to_string(root.join("Cargo.toml")).unwrap(), manifest_text);
    // The dry run the help names prints the table to merge by hand.
    let dry = kprof_at(&root.join("Cargo.toml"), &["init", "--dry-run", "-p", "gpu"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert!(String::from_utf8_lossy(&dry.stdout).contains("example = \"matmul-kernel\""));
    assert_eq!(std::fs::read_to_string(root.join("Cargo.toml")).unwrap(), manifest_text);
}

/// cudarc's own examples, as a user has them (`examples/third-party/cudarc` without its
/// kprof table): `init` writes one entry per example, `list` reads them, and the second
/// `init` finds nothing to write.
#[test]
fn init_on_cudarcs_examples_writes_a_table_that_list_reads() {
    let dir = tempfile::tempdir().unwrap();
    let from = crate::support::repo().join("examples/third-party/cudarc");
    for f in ["Cargo.toml", "Cargo.lock", "examples/matmul-kernel.rs", "examples/03-launch-kernel.rs"] {
        write(dir.path(), f, &std::fs::read_to_string(from.join(f)).unwrap());
    }
    let manifest = dir.path().join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let table = text.find("[package.metadata.kprof]").expect("the copy's own table");
    let end = text[table + 1..].find("\n[").map_or(text.len(), |i| table + 2 + i);
    let fresh = format!("{}{}", &text[..table], &text[end..]);
    assert!(!fresh.contains("[package.metadata.kprof]"), "{fresh}");
    std::fs::write(&manifest, &fresh).unwrap();

    let out = kprof_at(&manifest, &["--kernel", "matmul", "--dry-run"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("cargo kprof --example matmul-kernel --kernel matmul"), "{}", stderr(&out));

    let out = kprof_at(&manifest, &["init"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let written = std::fs::read_to_string(&manifest).unwrap();
    assert!(written.starts_with(&fresh), "init only appends");
    assert_eq!(
        listed(&manifest),
        [
            ("03-launch-kernel", "example 03-launch-kernel", "cuda", "regex:.*"),
            ("matmul-kernel", "example matmul-kernel", "cuda", "regex:.*"),
        ]
        .map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), d.to_string()))
    );
    let again = kprof_at(&manifest, &["init"]);
    assert_eq!(again.status.code(), Some(3), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), written);
}

/// A program whose GPU code is two dependencies down (`app` -> `model` -> `cudarc`, as a
/// candle program reaches cudarc through candle-core) shows a sign of GPU code: `init`
/// writes its entry, names the path, and skips a tool with none. The dependencies are
/// path crates, so the graph resolves offline.
#[test]
fn init_sees_gpu_code_two_dependencies_down() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(&root, "Cargo.toml", "[workspace]\nmembers = [\"app\", \"tool\"]\nresolver = \"2\"\n");
    write(
        &root,
        "app/Cargo.toml",
        &package_toml("app", "\n[dependencies]\nmodel = { path = \"../model\" }\n"),
    );
    write(&root, "app/src/main.rs", "fn main() {}\n");
    write(
        &root,
        "model/Cargo.toml",
        &package_toml("model", "\n[dependencies]\ncudarc = { path = \"../cudarc\" }\n"),
    );
    write(&root, "model/src/lib.rs", "");
    // A stand-in named like the real crate: only its name matters to init.
    write(&root, "cudarc/Cargo.toml", &package_toml("cudarc", ""));
    write(&root, "cudarc/src/lib.rs", "");
    write(&root, "tool/Cargo.toml", &package_toml("tool", ""));
    write(&root, "tool/src/main.rs", "fn main() {}\n");
    let out = kprof_at(&root.join("Cargo.toml"), &["init", "--dry-run", "--message-format", "json"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let added: Vec<&str> = lines
        .iter()
        .filter(|l| l["reason"] == "init-dry-run")
        .map(|l| l["package"].as_str().unwrap())
        .collect();
    assert_eq!(added, ["app"], "{stdout}");
    let skipped = lines.iter().find(|l| l["reason"] == "init-skipped" && l["package"] == "tool").unwrap();
    assert!(skipped["why"].as_str().unwrap().starts_with("no sign of GPU code"), "{stdout}");
    assert!(stdout.contains("depends on cudarc through model"), "{stdout}");
}
