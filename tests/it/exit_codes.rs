//! docs/reference.md's table of exit codes is the code's: `ExitCode::ALL` in `src/error.rs`, code
//! by code, in order, with the same meaning.

use cargo_kprof::error::ExitCode;

use crate::support::repo;

/// The rows of the table under `## Exit codes` in docs/reference.md: (code, meaning).
fn readme_table() -> Vec<(i32, String)> {
    let readme = std::fs::read_to_string(repo().join("docs/reference.md")).unwrap();
    let section = readme.split("\n## Exit codes\n").nth(1).expect("a `## Exit codes` section");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(2) // the header and its rule
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').splitn(2, '|').map(str::trim).collect();
            let code = cells[0].parse().unwrap_or_else(|_| panic!("not a code: {l}"));
            (code, cells[1].to_string())
        })
        .collect()
}

#[test]
fn the_reference_table_is_exit_code_all() {
    let documented = readme_table();
    let code: Vec<(i32, String)> =
        ExitCode::ALL.iter().map(|c| (c.code(), c.meaning().to_string())).collect();
    assert_eq!(documented, code, "docs/reference.md's exit codes and ExitCode::ALL differ");
}

#[test]
fn codes_are_distinct_and_one_is_only_for_bugs() {
    let mut seen = std::collections::BTreeSet::new();
    for c in ExitCode::ALL {
        assert!(seen.insert(c.code()), "{} twice", c.code());
        assert!((0..=255).contains(&c.code()));
    }
    assert_eq!(ExitCode::Failure.code(), 1);
    assert!(ExitCode::Failure.meaning().starts_with("a bug"));
}

/// A damaged file kprof reads (here a profile's summary) is not a bug: exit 12, the file
/// named (before: exit 1).
#[test]
fn a_damaged_file_exits_12_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let from =
        crate::support::recordings().join("check-runs/rerun/workspace/profile/hgemm_tiled_20261129_231734");
    let dir = tmp.path().join("profile/hgemm_tiled_20261129_231734");
    crate::support::copy_dir(&from, &dir);
    std::fs::write(dir.join("details/metrics_summary.json"), "{ \"kernels\": [ truncated").unwrap();
    let out = crate::support::kprof_bin()
        .args(["kprof", "compare", "profile/hgemm_tiled_20261129_231734", "--baseline", "main"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let stderr = crate::support::text(&out.stderr);
    assert_eq!(out.status.code(), Some(12), "{stderr}");
    assert!(stderr.contains("details/metrics_summary.json"), "{stderr}");
}
