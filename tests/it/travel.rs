//! Real programs travel whole: an archived program's shared libraries are checked on the
//! GPU machine before any ncu run, and the dependency kernel sources its line info names
//! travel under `deps/`.
//!
//! The fixture is built in the test: a package whose build script compiles a tiny C
//! shared library with `cc` (skipped cleanly without one) that the bench links, and
//! writes a PTX file whose `.file` directives point into a fake `CARGO_HOME` registry.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::tarball::{self, Kind};
use crate::support::Workspace;

/// The registry source the fixture's PTX names, below the fake `CARGO_HOME`.
const REGISTRY_SOURCE: &str = "registry/src/index.example-0123/fake-kernels-0.1.0/src/reduce.cu";
/// A registry source the PTX names that does not exist.
const GONE_SOURCE: &str = "registry/src/index.example-0123/fake-kernels-0.1.0/src/gone.cu";

const BUILD_RS: &str = r#"fn main() {
    let out = std::env::var("OUT_DIR").unwrap();
    let lib = format!("{out}/libkprofdep.so");
    let ok = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-Wl,-soname,libkprofdep.so", "-o", &lib, "native/dep.c"])
        .status()
        .unwrap()
        .success();
    assert!(ok, "cc failed");
    println!("cargo:rustc-link-search=native={out}");
    println!("cargo:rustc-link-lib=dylib=kprofdep");
    println!("cargo:rerun-if-changed=native/dep.c");
    println!("cargo:rerun-if-env-changed=FIXTURE_PTX_FILES");
    let mut ptx = String::from(".version 8.0\n.target sm_90\n");
    for (i, f) in std::env::var("FIXTURE_PTX_FILES").unwrap().split(':').enumerate() {
        ptx.push_str(&format!(".file\t{} \"{f}\"\n", i + 1));
    }
    std::fs::write(format!("{out}/kernels.ptx"), ptx).unwrap();
}
"#;

fn has_cc() -> bool {
    std::process::Command::new("cc").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// The fixture package, its fake `CARGO_HOME` (holding [`REGISTRY_SOURCE`]) and its archive.
struct Fixture {
    ws: Workspace,
    /// Outside the workspace, as a real one is.
    _home: tempfile::TempDir,
    cargo_home: PathBuf,
    archive: PathBuf,
    packed: Output,
}

fn fixture() -> Fixture {
    let ws = Workspace::new("[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\n");
    let root = ws.root();
    std::fs::create_dir_all(root.join("native")).unwrap();
    std::fs::write(root.join("native/dep.c"), "int kprof_dep(void) { return 7; }\n").unwrap();
    std::fs::write(root.join("build.rs"), BUILD_RS).unwrap();
    std::fs::write(
        root.join("src/lib.rs"),
        "extern \"C\" {\n    fn kprof_dep() -> i32;\n}\n\npub fn dep() -> i32 {\n    unsafe { kprof_dep() }\n}\n",
    )
    .unwrap();
    std::fs::write(root.join("benches/copy.rs"), "fn main() {\n    assert_eq!(demo::dep(), 7);\n}\n")
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let cargo_home = home.path().join("cargo-home");
    let source = cargo_home.join(REGISTRY_SOURCE);
    std::fs::create_dir_all(source.parent().unwrap()).unwrap();
    std::fs::write(&source, "// reduce\n__global__ void reduce() {}\n").unwrap();
    let files = format!("{}:{}", source.display(), cargo_home.join(GONE_SOURCE).display());
    let archive = root.join("k.tar");
    let home_var = cargo_home.to_str().unwrap().to_string();
    let packed = ws.kprof(
        &["archive", "-o", archive.to_str().unwrap()],
        &[("FIXTURE_PTX_FILES", files.as_str()), ("CARGO_HOME", home_var.as_str())],
    );
    Fixture { ws, _home: home, cargo_home, archive, packed }
}

/// The folder that holds the fixture's `libkprofdep.so` (its build script's `OUT_DIR`).
fn library_dir(root: &Path) -> PathBuf {
    let mut stack = vec![root.join("target")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.file_name().is_some_and(|n| n == "libkprofdep.so") {
                return dir;
            }
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
    panic!("no libkprofdep.so under {}", root.display());
}

/// `run --archive` of the fixture into a new folder, with the fake ncu and `extra` options.
fn run_archive(f: &Fixture, remap: &Path, extra: &[&str]) -> (Output, String) {
    let tools = remap.with_extension("tools");
    let ncu = crate::support::fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let out = crate::support::kprof_bin()
        .args(["kprof", "run", "--archive"])
        .arg(&f.archive)
        .arg("--workspace-remap")
        .arg(remap)
        .args(extra)
        .env("NCU", &ncu)
        .env("KPROF_SKIP_GPU_CHECK", "1")
        .env("FAKE_NCU_ARGV", &argv)
        .env_remove("LD_LIBRARY_PATH")
        .env("CARGO", "/nonexistent/cargo")
        .output()
        .unwrap();
    (out, std::fs::read_to_string(&argv).unwrap_or_default())
}

/// A library the program needs that this machine cannot find is named, with the fix,
/// before any ncu run and before anything is unpacked; once `--env LD_LIBRARY_PATH=...`
/// points at it, the run goes on to ncu and the run's commands record the value.
#[test]
fn a_missing_library_is_named_before_ncu_and_found_through_env() {
    if !has_cc() {
        eprintln!("skipped: no `cc` to build the fixture's shared library");
        return;
    }
    let f = fixture();
    assert_eq!(f.packed.status.code(), Some(0), "{}", String::from_utf8_lossy(&f.packed.stderr));
    let manifest = tarball::read(&f.archive).into_iter().find(|e| e.name == "kprof-archive.json").unwrap();
    let Kind::File(json) = manifest.kind else { panic!("the plan is a file") };
    let manifest: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(manifest["schema_version"], 3);
    let needed = manifest["libraries"][0]["needed"].as_array().unwrap();
    assert!(needed.iter().any(|n| n == "libkprofdep.so"), "{needed:?}");

    let there = tempfile::tempdir().unwrap();
    let remap = there.path().join("unpacked");
    let (out, calls) = run_archive(&f, &remap, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("libkprofdep.so (needed by bin/copy"), "{stderr}");
    assert!(stderr.contains("LD_LIBRARY_PATH is not set"), "{stderr}");
    assert!(stderr.contains("import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))"), "{stderr}");
    assert!(!calls.contains("--log-file"), "ncu profiled before the library check:\n{calls}");
    assert!(!remap.exists(), "{} was unpacked", remap.display());

    let lib_dir = library_dir(f.ws.root());
    let env = format!("LD_LIBRARY_PATH={}", lib_dir.display());
    let remap = there.path().join("unpacked2");
    let (out, calls) = run_archive(&f, &remap, &["--env", &env, "--stages", "basic"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("could not be found here"), "{stderr}");
    assert!(calls.contains("--log-file"), "ncu did not run:\n{stderr}");
    let commands = walk_find(&remap.join("workspace/profile"), "commands.sh");
    let text = std::fs::read_to_string(&commands).unwrap();
    assert!(text.contains(&lib_dir.display().to_string()), "{text}");
    let manifest = std::fs::read_to_string(commands.with_file_name("run_manifest.yaml")).unwrap();
    assert!(manifest.contains(&format!("ld_library_path: {}", lib_dir.display())), "{manifest}");
}

/// The dependency source the PTX names is packed under `deps/`, counted in the listing
/// (the one it names that does not exist is named), and unpacked where the analysis looks.
#[test]
fn a_registry_source_named_by_the_line_info_travels_under_deps() {
    if !has_cc() {
        eprintln!("skipped: no `cc` to build the fixture");
        return;
    }
    let f = fixture();
    let listing =
        String::from_utf8_lossy(&f.packed.stdout).into_owned() + &String::from_utf8_lossy(&f.packed.stderr);
    assert_eq!(f.packed.status.code(), Some(0), "{listing}");
    assert!(listing.contains("1 dependency source file(s)"), "{listing}");
    assert!(
        listing.contains(&format!("not found      {}", f.cargo_home.join(GONE_SOURCE).display())),
        "{listing}"
    );
    let entries = tarball::read(&f.archive);
    let packed = entries.iter().find(|e| e.name == format!("deps/{REGISTRY_SOURCE}"));
    assert!(packed.is_some(), "{:?}", entries.iter().map(|e| &e.name).collect::<Vec<_>>());

    let there = tempfile::tempdir().unwrap();
    let remap = there.path().join("unpacked");
    let lib_dir = library_dir(f.ws.root());
    let env = format!("LD_LIBRARY_PATH={}", lib_dir.display());
    let (out, _) = run_archive(&f, &remap, &["--env", &env, "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let unpacked = std::fs::read_to_string(remap.join("deps").join(REGISTRY_SOURCE)).unwrap();
    assert!(unpacked.contains("__global__ void reduce()"), "{unpacked}");
}

/// An archive whose plan lists no dependency source may not carry a file under `deps/`.
#[test]
fn a_deps_entry_the_plan_does_not_list_is_refused() {
    if !has_cc() {
        eprintln!("skipped: no `cc` to build the fixture");
        return;
    }
    let f = fixture();
    assert_eq!(f.packed.status.code(), Some(0), "{}", String::from_utf8_lossy(&f.packed.stderr));
    let mut entries = tarball::read(&f.archive);
    entries.push(tarball::Entry::file("deps/registry/extra.cu", "x"));
    let tampered = f.ws.root().join("tampered.tar");
    tarball::write(&tampered, &entries);
    let there = tempfile::tempdir().unwrap();
    let (out, _) = run_archive(&Fixture { archive: tampered, ..f }, &there.path().join("u"), &["--dry-run"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("entry `deps/registry/extra.cu` is not listed"), "{stderr}");
}

fn walk_find(root: &Path, name: &str) -> PathBuf {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.file_name().is_some_and(|n| n == name) {
                return p;
            }
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
    panic!("no {name} under {}", root.display());
}

/// `doctor --archive FILE` names the library a packed program needs that this shell's
/// `LD_LIBRARY_PATH` does not reach, with the fix, and finds it once it does.
#[test]
fn doctor_checks_an_archives_libraries() {
    if !has_cc() {
        eprintln!("skipped: no `cc` to build the fixture");
        return;
    }
    let f = fixture();
    assert_eq!(f.packed.status.code(), Some(0), "{}", String::from_utf8_lossy(&f.packed.stderr));
    let doctor = |ld: Option<&Path>| {
        let mut cmd = crate::support::kprof_bin();
        cmd.args(["kprof", "doctor", "--archive"]).arg(&f.archive).current_dir(f.ws.root());
        match ld {
            Some(dir) => cmd.env("LD_LIBRARY_PATH", dir),
            None => cmd.env_remove("LD_LIBRARY_PATH"),
        };
        let out = cmd.output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let text = doctor(None);
    let line = text.lines().find(|l| l.contains("shared libraries:")).unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.starts_with("FAIL") && line.contains("not found: libkprofdep.so (needed by bin/copy"),
        "{text}"
    );
    assert!(text.contains("import nvidia, os"), "{text}");
    let text = doctor(Some(&library_dir(f.ws.root())));
    let line = text.lines().find(|l| l.contains("shared libraries:")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.starts_with("ok") && line.contains("needed libraries resolve"), "{text}");
}
