//! Lints what the tests write: `shellcheck` on every `commands.sh` and Slurm launcher,
//! `zizmor` on every GitHub Actions launcher, found under a test's workspace when it ends.
//!
//! The linters are `$KPROF_SHELLCHECK` and `$KPROF_ZIZMOR` (CI installs them with
//! `.ci/install-lint-tools.sh`). Without them nothing is linted, unless `KPROF_REQUIRE_LINT=1`,
//! which makes their absence fail the test.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The two linters, when both are configured.
fn linters() -> Option<(PathBuf, PathBuf)> {
    let shellcheck = std::env::var_os("KPROF_SHELLCHECK").map(PathBuf::from);
    let zizmor = std::env::var_os("KPROF_ZIZMOR").map(PathBuf::from);
    match (shellcheck, zizmor) {
        (Some(s), Some(z)) => Some((s, z)),
        _ => {
            assert!(
                std::env::var("KPROF_REQUIRE_LINT").as_deref() != Ok("1"),
                "KPROF_REQUIRE_LINT=1 but KPROF_SHELLCHECK or KPROF_ZIZMOR is unset: \
                 run `eval \"$(.ci/install-lint-tools.sh DIR)\"`"
            );
            None
        }
    }
}

/// Every file under `root` (symlinks not followed) whose name `keep` accepts.
fn files_under(root: &Path, keep: &dyn Fn(&str) -> bool, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else { continue };
        let path = entry.path();
        if kind.is_dir() {
            // Build outputs hold no scripts of ours, and are large.
            if entry.file_name() != "target" {
                files_under(&path, keep, found);
            }
        } else if kind.is_file() && entry.file_name().to_str().is_some_and(keep) {
            found.push(path);
        }
    }
}

/// Shell scripts and workflows kprof wrote under `root`.
pub fn written_under(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut shell = Vec::new();
    let mut workflows = Vec::new();
    files_under(root, &|n| n == "commands.sh" || n.ends_with(".slurm.sh"), &mut shell);
    files_under(root, &|n| n.ends_with(".github.yml"), &mut workflows);
    (shell, workflows)
}

/// Runs `program args files` and panics with its output unless it exits 0.
fn clean(program: &Path, args: &[&str], files: &[PathBuf]) {
    if files.is_empty() {
        return;
    }
    let out = Command::new(program).args(args).args(files).output().unwrap();
    assert!(
        out.status.success(),
        "{} finds problems in {files:?}:\n{}{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Lints every `commands.sh`, Slurm launcher and GitHub launcher under `root`: no finding
/// may remain. A no-op without the linters (see the module's note).
pub fn lint_written(root: &Path) {
    let (shell, workflows) = written_under(root);
    if shell.is_empty() && workflows.is_empty() {
        return;
    }
    let Some((shellcheck, zizmor)) = linters() else { return };
    clean(&shellcheck, &[], &shell);
    clean(&zizmor, &["--offline", "--no-progress", "--quiet"], &workflows);
}
