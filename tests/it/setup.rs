//! Setting kprof up on a project: `.ci/install-cuda-tools.sh`'s exports and the note
//! kprof prints when it creates the workspace's `profile/` folder.

use std::path::Path;
use std::process::Command;

use crate::support::{repo, write_script, Workspace};

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
    assert!(root.join("ncu_path").is_file());

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
