//! Setting kprof up on a project: `.ci/install-cuda-tools.sh`'s exports and the note
//! kprof prints when it creates the workspace's `profile/` folder.

use std::path::Path;
use std::process::Command;

use crate::support::{repo, write_script};

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
