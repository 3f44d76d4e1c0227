//! `cargo kprof` on the bundled demo workspace: listing, a dry run, and line info in the
//! PTX that demo-nvcc's build script compiles with nvcc.
//!
//! The line-info test needs nvcc. Without one it prints "skipped: ..." and passes, unless
//! `KPROF_REQUIRE_NVCC=1` (CI sets it after `.ci/install-cuda-tools.sh`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::text;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn demo_manifest() -> PathBuf {
    repo().join("examples/demo/Cargo.toml")
}

/// One target directory for every build of the demo here, so cudarc compiles once per mode.
fn demo_target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("demo-target")
}

fn kprof(args: &[&str]) -> Output {
    crate::support::kprof_bin().arg("kprof").args(args).env_remove("NVCC_APPEND_FLAGS").output().unwrap()
}

#[test]
fn list_shows_the_demo_kernels() {
    let out = kprof(&["list", "--manifest-path", demo_manifest().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let kernels: Vec<String> =
        stdout.lines().skip(1).map(|l| l.split_whitespace().nth(4).unwrap_or_default().to_string()).collect();
    for want in ["copy", "fma", "tiny", "hgemm", "hgemm_tiled", "occupancy", "reduce"] {
        assert!(kernels.iter().any(|k| k == want), "{want} missing from:\n{stdout}");
    }
}

fn count_loc(ptx: &Path) -> usize {
    std::fs::read_to_string(ptx).unwrap().lines().filter(|l| l.trim_start().starts_with(".loc")).count()
}

fn nvcc_or_skip() -> bool {
    let found = std::env::var_os("NVCC").map(PathBuf::from).filter(|p| p.is_file()).is_some()
        || std::env::var_os("CUDA_HOME").map(|h| Path::new(&h).join("bin/nvcc")).is_some_and(|p| p.is_file())
        || std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("nvcc").is_file()));
    if !found {
        assert!(
            std::env::var("KPROF_REQUIRE_NVCC").as_deref() != Ok("1"),
            "KPROF_REQUIRE_NVCC=1 but no nvcc: run `eval \"$(.ci/install-cuda-tools.sh DIR)\"`"
        );
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "skipped: line info in nvcc PTX: nvcc not found (set NVCC)");
    }
    found
}

/// The demo's dry run (the README's example) and, with nvcc, the `-lineinfo` injection:
/// PTX built by `cargo kprof` has `.loc` lines, PTX built by a plain `cargo build` has none.
#[test]
fn dry_run_on_the_demo_and_line_info_in_nvcc_ptx() {
    let target = demo_target_dir();
    let profile_root = repo().join("examples/demo/profile");
    let dir = profile_root.join("hgemm_dry-run");
    let ours = !dir.exists();
    let out = kprof(&[
        "--manifest-path",
        demo_manifest().to_str().unwrap(),
        "--kernel",
        "hgemm",
        "--dry-run",
        "--target-dir",
        target.to_str().unwrap(),
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Dry runs write into one folder per kernel, rewritten each time.
    assert!(dir.join("commands.sh").is_file(), "{stderr}");
    let yaml = std::fs::read_to_string(dir.join("profile-target.yaml")).unwrap();
    assert!(yaml.contains("  filter_mode: regex\n  filter: .*hgemm.*\n"), "{yaml}");
    assert!(yaml.contains("  case: hgemm_naive\n"), "{yaml}");
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("--kernel-name 'regex:.*hgemm.*'") && stdout.contains("KPROF_CASE=hgemm_naive"),
        "{stdout}"
    );
    assert!(std::fs::read_to_string(dir.join("commands.sh")).unwrap().contains(stdout.trim()), "{stdout}");
    // A folder this test made is removed; one an earlier dry run made stays.
    if ours {
        std::fs::remove_dir_all(&dir).unwrap();
    }

    if !nvcc_or_skip() {
        return;
    }
    let out_dir = tempfile::tempdir().unwrap();
    let out = kprof(&[
        "--manifest-path",
        demo_manifest().to_str().unwrap(),
        "--kernel",
        "reduce",
        "--dry-run",
        "--target-dir",
        target.to_str().unwrap(),
        "--output-dir",
        out_dir.path().join("p").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let kprof_ptx = find_ptx(&target.join("kprof/release/build"));
    let with = count_loc(&kprof_ptx);

    let plain = Command::new(env!("CARGO"))
        .args(["build", "--release", "-p", "demo-nvcc", "--message-format=json", "--manifest-path"])
        .arg(demo_manifest())
        .arg("--target-dir")
        .arg(&target)
        .env_remove("NVCC_APPEND_FLAGS")
        .env_remove("KPROF_LINEINFO")
        .output()
        .unwrap();
    assert!(plain.status.success(), "{}", text(&plain.stderr));
    let plain_ptx = find_ptx(&target.join("release/build"));
    let without = count_loc(&plain_ptx);
    assert!(with > 0, "cargo kprof's nvcc PTX has no .loc lines: {}", kprof_ptx.display());
    assert_eq!(without, 0, "a plain build's PTX has .loc lines: {}", plain_ptx.display());
}

fn list_dirs(root: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(root)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect())
        .unwrap_or_default()
}

/// The newest `demo-nvcc-*/out/reduce.ptx` under a `build/` directory.
fn find_ptx(build: &Path) -> PathBuf {
    list_dirs(build)
        .into_iter()
        .filter(|d| d.file_name().unwrap().to_string_lossy().starts_with("demo-nvcc-"))
        .map(|d| d.join("out/reduce.ptx"))
        .filter(|p| p.is_file())
        .max_by_key(|p| p.metadata().unwrap().modified().unwrap())
        .unwrap_or_else(|| panic!("no demo-nvcc reduce.ptx under {}", build.display()))
}
