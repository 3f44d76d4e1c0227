//! Feeds arbitrary bytes as a shard's `index.json` to `merge`: it must refuse (exit 3 or
//! 12) and leave nothing behind, or merge into the output folder only. The shard's
//! folder holds no profile, so an index that lists one is refused; a listing of none
//! reaches the coverage of shards (missing shards reported as ranges, whatever the
//! counts).
//!
//! Run with `cargo +nightly fuzz run merge_index` from the repository root; the corpus
//! starts with `fuzz/corpus/merge_index/` (kept inputs, replayed by `cargo test`).
#![no_main]

use cargo_kprof::error::{exit_code_of, ExitCode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("kprof-fuzz-merge-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let shard = dir.join("shard");
    std::fs::create_dir_all(&shard).unwrap();
    std::fs::write(shard.join("index.json"), data).unwrap();
    let out = dir.join("merged");
    match cargo_kprof::inputs::merge(&[shard], &out, false) {
        Err(e) => {
            let code = exit_code_of(&e);
            assert!(matches!(code, ExitCode::Config | ExitCode::Filesystem), "{code:?}: {e:#}");
            assert!(!out.exists(), "a refused merge left its output");
            assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "a refused merge left a sibling");
        }
        Ok(_) => assert!(out.join("index.json").is_file()),
    }
    std::fs::remove_dir_all(&dir).unwrap();
});
