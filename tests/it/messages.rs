//! What people read: a dry run's commands with their labels, error messages that say
//! `error:` once, carry no terminal escape sequences and no 100 KB words, the environment
//! record, and the refusals of values that make no sense (`--set` with `--sections`,
//! two different kernels compared, a tolerance that is not a number, a broken regex).

use crate::support::{fake_ncu, fixture_details, text, Workspace};

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
