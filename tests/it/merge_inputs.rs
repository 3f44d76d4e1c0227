//! What `merge` accepts: shard counts within bounds, missing shards named as ranges, only
//! indexes kprof wrote, an output outside every source, and nothing left behind by a merge
//! that fails. Every case asserts the exit code, a `help:` line and that nothing changed
//! on disk outside what the case allows.

use std::path::Path;

use crate::archive_unpacking::COPY;
use crate::bad_input::{assert_all, verify, Expect};
use crate::support::{kprof_env, text, Workspace};

/// A profile root as a shard leaves it, holding no profile: `index.json` naming
/// `partition` (as written, so it may be anything).
fn shard_root(dir: &Path, partition: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("index.json"),
        format!("{{\n  \"partition\": {partition},\n  \"profiles\": [],\n  \"schema_version\": 1\n}}\n"),
    )
    .unwrap();
}

/// F4: a shard count is at most 65,536, on the command line, from a job array's
/// variables and in a shard's index; before, `merge` listed every missing shard of
/// `count:1/20000000` in memory and in `index.json`.
#[test]
fn shard_counts_are_bounded() {
    let ws = Workspace::new(COPY);
    let root = ws.root();
    let manifest = ws.manifest().display().to_string();
    // cargo metadata writes the lock file once; the cases start after it.
    let first = kprof_env(root, &["list", "--manifest-path", &manifest], &[]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let slurm = [
        ("SLURM_ARRAY_TASK_ID", "0"),
        ("SLURM_ARRAY_TASK_MIN", "0"),
        ("SLURM_ARRAY_TASK_COUNT", "4000000000"),
    ];
    let k8s = [("JOB_COMPLETION_INDEX", "0"), ("KPROF_PARTITION_COUNT", "65537")];
    type Case<'a> = (&'a str, Vec<&'a str>, &'a [(&'a str, &'a str)], i32, Vec<&'a str>);
    let cases: Vec<Case<'_>> = vec![
        (
            "count of 2^32 - 1",
            vec!["--kernel", "copy", "--partition", "count:3/4294967295", "--dry-run"],
            &[],
            2,
            vec!["count:3/4294967295", "65536"],
        ),
        (
            "count past u32",
            vec!["--kernel", "copy", "--partition", "hash:1/99999999999", "--dry-run"],
            &[],
            2,
            vec!["hash:1/99999999999", "65536"],
        ),
        (
            "one past the bound",
            vec!["--kernel", "copy", "--partition", "count:1/65537", "--dry-run"],
            &[],
            2,
            vec!["count:1/65537", "65536"],
        ),
        (
            "a Slurm array of 4e9 tasks",
            vec!["--kernel", "copy", "--dry-run"],
            &slurm,
            3,
            vec!["SLURM_ARRAY_TASK_COUNT=4000000000", "65536"],
        ),
        (
            "an Indexed Job of 65537",
            vec!["--kernel", "copy", "--dry-run"],
            &k8s,
            3,
            vec!["KPROF_PARTITION_COUNT=65537", "65536"],
        ),
    ];
    let mut failures = Vec::new();
    let mut n = 0;
    for (case, mut args, env, code, names) in cases {
        n += 1;
        args.extend(["--manifest-path", &manifest]);
        let expect = Expect { code, names: &names, allowed: &[] };
        failures.extend(verify(case, root, expect, || kprof_env(root, &args, env)));
    }

    // Two shards whose indexes were edited to 20,000,000 shards: refused before anything
    // is created, naming the index and the count.
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    shard_root(&t.join("a"), r#"{"mode": "count", "index": 1, "total": 20000000}"#);
    shard_root(&t.join("b"), r#"{"mode": "count", "index": 2, "total": 20000000}"#);
    shard_root(&t.join("huge"), r#"{"mode": "hash", "index": 1, "total": 4294967295}"#);
    let merges: Vec<(&str, Vec<&str>, Vec<&str>)> = vec![
        ("merge of 20,000,000 shards", vec!["a", "b"], vec!["a/index.json", "20000000", "65536"]),
        ("merge of 2^32 - 1 shards", vec!["huge"], vec!["huge/index.json", "4294967295"]),
    ];
    for (case, dirs, names) in merges {
        n += 1;
        let mut args = vec!["merge"];
        args.extend(dirs);
        let out = format!("merged-{n}");
        args.extend(["--output-dir", &out]);
        let expect = Expect { code: 12, names: &names, allowed: &[] };
        failures.extend(verify(case, t, expect, || kprof_env(t, &args, &[])));
    }
    assert_all(failures, n);
}

/// F4: shards a merge lacks are named as ranges (`2-4, 6-9`), in the warning and in
/// `index.md`; `index.json` keeps the list of indices.
#[test]
fn missing_shards_are_named_as_ranges() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    shard_root(&t.join("s1"), r#"{"mode": "count", "index": 1, "total": 9}"#);
    shard_root(&t.join("s5"), r#"{"mode": "count", "index": 5, "total": 9}"#);
    let out = kprof_env(t, &["merge", "s1", "s5", "--output-dir", "merged"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("missing shards of count:I/9: 2-4, 6-9 "), "{stderr}");
    let md = std::fs::read_to_string(t.join("merged/index.md")).unwrap();
    assert!(md.contains("**Missing shards:** 2-4, 6-9."), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.join("merged/index.json")).unwrap()).unwrap();
    assert_eq!(json["merged"]["missing_shards"], serde_json::json!([2, 3, 4, 6, 7, 8, 9]));
}

/// F12: `merge` read any `index.json`: one of another schema, and one naming shard 7 of 2,
/// were merged. Both are refused (exit 12, as for any damaged index), naming the file.
#[test]
fn merge_refuses_an_index_it_did_not_write() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let write = |name: &str, text: &str| {
        std::fs::create_dir_all(t.join(name)).unwrap();
        std::fs::write(t.join(name).join("index.json"), text).unwrap();
        format!("{name}/index.json")
    };
    let schema = write("schema", "{\"schema_version\": 99, \"profiles\": []}");
    let unversioned = write("unversioned", "{\"profiles\": []}");
    let seven = write(
        "seven",
        "{\"schema_version\": 1, \"partition\": {\"mode\": \"count\", \"index\": 7, \"total\": 2}, \"profiles\": []}",
    );
    let zero = write(
        "zero",
        "{\"schema_version\": 1, \"partition\": {\"mode\": \"hash\", \"index\": 0, \"total\": 2}, \"profiles\": []}",
    );
    let cases: Vec<(&str, &str, Vec<&str>)> = vec![
        ("schema_version 99", "schema", vec![&schema, "schema_version 99"]),
        ("no schema_version", "unversioned", vec![&unversioned, "schema_version"]),
        ("shard 7 of 2", "seven", vec![&seven, "count:7/2"]),
        ("shard 0 of 2", "zero", vec![&zero, "hash:0/2"]),
    ];
    let n = cases.len();
    let mut failures = Vec::new();
    for (case, dir, names) in cases {
        let expect = Expect { code: 12, names: &names, allowed: &[] };
        failures
            .extend(verify(case, t, expect, || kprof_env(t, &["merge", dir, "--output-dir", "out"], &[])));
    }
    assert_all(failures, n);
}

/// The recorded `check` runs `rerun` and `slow` (`--workspace-remap` directories, one
/// profile each), copied under `root`.
fn two_shards(root: &Path) {
    for run in ["rerun", "slow"] {
        crate::support::copy_dir(&crate::support::recordings().join("check-runs").join(run), &root.join(run));
    }
}

/// F6: `merge` into a folder inside one of its sources copied into itself (about 146
/// nested copies, then "File name too long", 19 MB left inside the source). An output
/// inside a source is refused before anything is copied, naming both.
#[test]
fn merge_refuses_an_output_inside_a_source() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    two_shards(t);
    let profile = "rerun/workspace/profile/hgemm_tiled_20261129_231734";
    let inside_profile = format!("{profile}/merged");
    let cases: Vec<(&str, &str, Vec<&str>)> = vec![
        ("inside a profile it copies", &inside_profile, vec!["merged", "rerun"]),
        ("inside the source's profile root", "rerun/workspace/profile/merged", vec!["merged", "rerun"]),
        ("inside the source", "rerun/merged", vec!["rerun/merged", "rerun"]),
        ("the source itself, through ..", "slow/../rerun/x/..", vec!["rerun"]),
    ];
    let n = cases.len();
    let mut failures = Vec::new();
    for (case, out, names) in cases {
        let expect = Expect { code: 12, names: &names, allowed: &[] };
        failures.extend(verify(case, t, expect, || {
            kprof_env(t, &["merge", "rerun", "slow", "--output-dir", out], &[])
        }));
    }
    assert_all(failures, n);
}

/// F7b: a merge that failed on a symbolic link in a later shard left the earlier shard's
/// profiles in the output with no index, which blocked the corrected command. The output
/// is built in a hidden folder beside it and renamed into place when complete.
#[test]
fn a_failed_merge_leaves_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    two_shards(t);
    let slow_profile = std::fs::read_dir(t.join("slow/workspace/profile"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    let link = slow_profile.join("details/elsewhere.csv");
    std::os::unix::fs::symlink("/etc/passwd", &link).unwrap();
    let shown = link.strip_prefix(t).unwrap().display().to_string();
    let names = [shown.as_str(), "symbolic link"];
    let cases = [("a new output", "merged"), ("an output below missing folders", "new/deeper/merged")];
    let mut failures = Vec::new();
    for (case, out) in cases {
        let expect = Expect { code: 12, names: &names, allowed: &[] };
        failures.extend(verify(case, t, expect, || {
            kprof_env(t, &["merge", "rerun", "slow", "--output-dir", out], &[])
        }));
    }
    // An empty output folder that exists stays, empty.
    std::fs::create_dir(t.join("empty")).unwrap();
    let expect = Expect { code: 12, names: &names, allowed: &[] };
    failures.extend(verify("an empty output", t, expect, || {
        kprof_env(t, &["merge", "rerun", "slow", "--output-dir", "empty"], &[])
    }));
    assert_all(failures, cases.len() + 1);

    // Without the link, the same command succeeds.
    std::fs::remove_file(&link).unwrap();
    let out = kprof_env(t, &["merge", "rerun", "slow", "--output-dir", "merged"], &[]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out.stderr));
    assert!(t.join("merged/index.json").is_file());
    let hidden: Vec<String> = std::fs::read_dir(t)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
}
