//! What people read: a dry run's commands with their labels, error messages that say
//! `error:` once, carry no terminal escape sequences and no 100 KB words, the environment
//! record, and the refusals of values that make no sense (`--set` with `--sections`,
//! two different kernels compared, a tolerance that is not a number, a broken regex).

use crate::support::{fake_ncu, fixture_details, text, write_script, Workspace};

const TWO_KERNELS: &str = "[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\nruntime = \"harness\"\n\n\
                           [[package.metadata.kprof.kernels]]\nname = \"fma\"\nbench = \"fma\"\nruntime = \"cuda\"\n";

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
