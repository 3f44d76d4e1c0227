//! Feeds arbitrary bytes as the `kprof-archive.json` of an archive to the plan checks:
//! each must refuse (exit 3, naming the archive) or accept a plan whose kernels all run
//! in the packed workspace, with at least one launch.
//!
//! Run with `cargo +nightly fuzz run archive_manifest` from the repository root; the
//! corpus starts with `fuzz/corpus/archive_manifest/` (kept inputs, replayed by
//! `cargo test`) and the recorded plans, e.g.
//! `cp fixtures/h200/archive-runs/*/kprof-archive.json fuzz/corpus/archive_manifest/`.
#![no_main]

use std::path::{Component, Path};

use cargo_kprof::error::ExitCode;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let label = Path::new("fuzz.tar");
    match cargo_kprof::inputs::check_plan(label, data) {
        Err(f) => {
            assert_eq!(f.code, ExitCode::Config, "{f}");
            assert!(f.message.starts_with("fuzz.tar"), "{f}");
        }
        Ok((_, kernels)) => {
            for (k, cwd) in kernels {
                assert!(cwd.components().all(|c| matches!(c, Component::Normal(_))), "{cwd:?}");
                assert!(k.tolerance_pct.is_finite() && k.tolerance_pct >= 0.0);
            }
        }
    }
});
