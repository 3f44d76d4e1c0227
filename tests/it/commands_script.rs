//! `commands.sh` stays a script of kprof's own lines: a configured name, a kernel hint or
//! an environment key cannot add a line to it (each is refused, naming the input). Each
//! test failed on the commit before its fix.

use std::path::Path;

use crate::support::{text, Workspace};

/// Every line of every `commands.sh` under `root` that is neither a comment, blank, nor a
/// command kprof writes (`set -e`, the build, ncu): what would run on replay and should not.
fn stray_script_lines(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let Ok(script) = std::fs::read_to_string(dir.path().join("commands.sh")) else { continue };
        for line in script.lines() {
            let known = line.is_empty()
                || line.starts_with('#')
                || line == "set -e"
                || line.starts_with("env KPROF_LINEINFO=1")
                || line.starts_with("cd ");
            if !known {
                out.push(line.to_string());
            }
        }
    }
    out
}

/// #12 item 4: a kernel `name` with a newline broke out of the comment at the top of
/// `commands.sh` and ran when the script was replayed. Control characters in names are
/// refused, naming the key.
#[test]
fn a_configured_name_with_a_newline_is_refused() {
    let ws = Workspace::new(
        "[[package.metadata.kprof.kernels]]\nname = \"copy\\ntouch pwned\"\nbench = \"copy\"\n",
    );
    let out = ws.kprof(&["--workspace", "--dry-run"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("`name`") && stderr.contains("control character"), "{stderr}");
    assert!(stderr.contains("help:"), "{stderr}");
    assert!(stray_script_lines(&ws.root().join("profile")).is_empty());
    assert!(ws.profiles().is_empty());
}

/// #12 item 4: the same through `--kernel`, which names an ad-hoc kernel.
#[test]
fn a_kernel_hint_with_a_newline_is_refused() {
    let ws = Workspace::new("");
    let out = ws.kprof(&["--bench", "copy", "--kernel", "copy\ntouch pwned", "--dry-run"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--kernel") && stderr.contains("control character"), "{stderr}");
    assert!(stray_script_lines(&ws.root().join("profile")).is_empty());
    assert!(ws.profiles().is_empty());
}

/// #12 item 4: an env key such as `-i` became `env -i=x` in the ncu command line: keys
/// must be `[A-Za-z_][A-Za-z0-9_]*` in the manifests too.
#[test]
fn an_env_key_that_is_not_a_name_is_refused() {
    for key in ["-i", "A-B", "1X", "A B", "É"] {
        let ws = Workspace::new(&format!(
            "[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\nenv = {{ \"{key}\" = \"x\" }}\n"
        ));
        let out = ws.kprof(&["--kernel", "copy", "--dry-run"], &[]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{key}: {stderr}");
        assert!(stderr.contains(&format!("`env.{key}`")) && stderr.contains("help:"), "{stderr}");
        assert!(ws.profiles().is_empty(), "{key}");
    }
}
