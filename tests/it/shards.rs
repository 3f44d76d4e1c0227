//! Shards: `--partition`, the shard a cluster engine's array index names, and
//! `cargo kprof merge`.
//!
//! The end-to-end runs profile a three-kernel workspace with the fake ncu replaying the
//! H200 recordings of the demo's `copy`, `fma` and `tiny` kernels
//! (fixtures/h200/demo-stages/), once whole and once per shard, and merge the shards;
//! the gate's verdict over merged `check` shards uses the recorded check runs
//! (fixtures/h200/check-runs/).

use std::path::{Path, PathBuf};
use std::process::Output;

use cargo_kprof::model::partition::{
    fnv1a64, from_env, identity_hash, KernelIdentity, Partition, PartitionMode, Shard,
};
use serde_json::Value;

use crate::support::fake_ncu::filter_key;
use crate::support::{copy_dir, fixture_details, recordings, text, Workspace};

const KERNELS: [&str; 3] = ["copy", "fma", "tiny"];

fn id<'a>(bench: &'a str, kernel: &'a str) -> KernelIdentity<'a> {
    KernelIdentity { package: "demo", kind: "bench", target: vec![bench], kernel }
}

fn p(s: &str) -> Partition {
    s.parse().unwrap()
}

#[test]
fn count_deals_kernels_by_position() {
    let items: Vec<usize> = (0..7).collect();
    let shard = |s: &str| p(s).select(items.clone(), |_| id("b", "k"));
    assert_eq!(shard("count:1/3"), [0, 3, 6]);
    assert_eq!(shard("count:2/3"), [1, 4]);
    assert_eq!(shard("count:3/3"), [2, 5]);
    assert_eq!(shard("count:1/1"), items);
    // More shards than kernels: the last ones are empty.
    assert_eq!(p("count:9/9").select(vec![0, 1], |_| id("b", "k")), Vec::<usize>::new());
}

/// The hash is fixed: these values were computed by a separate implementation of FNV-1a
/// over the documented bytes, and must never change (shards would move between versions).
#[test]
fn hash_values_are_pinned() {
    assert_eq!(fnv1a64(b"demo\0bench\0copy\0copy\0"), 0x147b_1289_3158_f34a);
    assert_eq!(identity_hash(&id("copy", "copy")), 0x147b_1289_3158_f34a);
    assert_eq!(identity_hash(&id("fma", "fma")), 0x2ba0_b937_0d52_4690);
    assert_eq!(identity_hash(&id("tiny", "tiny")), 0xdffa_740c_0505_8f34);
    let command = KernelIdentity {
        package: "",
        kind: "command",
        target: vec!["python3", "bench.py"],
        kernel: "softmax",
    };
    assert_eq!(identity_hash(&command), 0x6521_f758_c9a3_2a04);
    // A field boundary is part of the identity: `ab`+`c` is not `a`+`bc`.
    assert_ne!(identity_hash(&id("ab", "c")), identity_hash(&id("a", "bc")));
}

#[test]
fn hash_deals_kernels_by_identity_whatever_else_is_selected() {
    let names = ["copy", "fma", "tiny", "reduce", "hgemm", "hgemm_tiled", "occupancy"];
    let of = |s: &str, list: &[&'static str]| p(s).select(list.to_vec(), |n| id(n, n));
    // Every kernel in exactly one shard.
    let all: Vec<Vec<&str>> = (1..=3).map(|i| of(&format!("hash:{i}/3"), &names)).collect();
    let mut union: Vec<&str> = all.concat();
    union.sort();
    let mut sorted = names.to_vec();
    sorted.sort();
    assert_eq!(union, sorted);
    // The three demo kernels all hash to shard 1 of 2 (h % 2 == 0 for each pinned value).
    assert_eq!(of("hash:1/2", &KERNELS), KERNELS);
    assert!(of("hash:2/2", &KERNELS).is_empty());
    // A kernel's shard does not depend on its neighbours.
    for i in 1..=3 {
        let spec = format!("hash:{i}/3");
        for n in of(&spec, &names) {
            assert_eq!(of(&spec, &[n]), [n], "{n} moved when alone");
        }
    }
}

fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
}

#[test]
fn engines_name_their_shard() {
    let shard = |vars: &[(&str, &str)]| from_env(env(vars)).unwrap().unwrap();
    // Slurm, --array=0-3 and --array=1-4: the same four shards.
    let zero = shard(&[
        ("SLURM_ARRAY_TASK_ID", "1"),
        ("SLURM_ARRAY_TASK_MIN", "0"),
        ("SLURM_ARRAY_TASK_COUNT", "4"),
    ]);
    assert_eq!(zero.partition, p("count:2/4"));
    assert_eq!(zero.describe(), "shard 2/4 (count, from SLURM_ARRAY_TASK_ID=1 of --array=0-3)");
    let one = shard(&[
        ("SLURM_ARRAY_TASK_ID", "2"),
        ("SLURM_ARRAY_TASK_MIN", "1"),
        ("SLURM_ARRAY_TASK_COUNT", "4"),
    ]);
    assert_eq!(one.partition, p("count:2/4"));
    assert_eq!(one.origin, "SLURM_ARRAY_TASK_ID=2 of --array=1-4");
    let last = shard(&[
        ("SLURM_ARRAY_TASK_ID", "4"),
        ("SLURM_ARRAY_TASK_MIN", "1"),
        ("SLURM_ARRAY_TASK_COUNT", "4"),
    ]);
    assert_eq!(last.partition, p("count:4/4"));
    // Kubernetes Indexed Jobs: 0-based, with the count the generated manifest sets.
    let k8s = shard(&[("JOB_COMPLETION_INDEX", "0"), ("KPROF_PARTITION_COUNT", "3")]);
    assert_eq!(k8s.partition, Partition { mode: PartitionMode::Count, index: 1, total: 3 });
    assert_eq!(k8s.describe(), "shard 1/3 (count, from JOB_COMPLETION_INDEX=0 of KPROF_PARTITION_COUNT=3)");
    // Neither: no shard.
    assert_eq!(from_env(env(&[("PATH", "/bin")])).unwrap(), None);
    assert_eq!(Shard::from_flag(p("hash:1/2")).describe(), "shard 1/2 (hash, from --partition)");
}

#[test]
fn inconsistent_engine_variables_are_refused_naming_them() {
    type Vars<'a> = &'a [(&'a str, &'a str)];
    let cases: &[(Vars, &[&str])] = &[
        (
            &[("SLURM_ARRAY_TASK_ID", "4"), ("SLURM_ARRAY_TASK_MIN", "0"), ("SLURM_ARRAY_TASK_COUNT", "4")],
            &["SLURM_ARRAY_TASK_ID=4", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_COUNT=4"],
        ),
        (
            &[("SLURM_ARRAY_TASK_ID", "0"), ("SLURM_ARRAY_TASK_MIN", "1"), ("SLURM_ARRAY_TASK_COUNT", "4")],
            &["SLURM_ARRAY_TASK_ID=0", "SLURM_ARRAY_TASK_MIN=1"],
        ),
        (
            &[("SLURM_ARRAY_TASK_ID", "0"), ("SLURM_ARRAY_TASK_MIN", "0"), ("SLURM_ARRAY_TASK_COUNT", "0")],
            &["SLURM_ARRAY_TASK_COUNT=0"],
        ),
        (
            &[("SLURM_ARRAY_TASK_ID", "x"), ("SLURM_ARRAY_TASK_MIN", "0")],
            &["SLURM_ARRAY_TASK_ID=x is not a number"],
        ),
        (
            &[("SLURM_ARRAY_TASK_ID", "1"), ("SLURM_ARRAY_TASK_MIN", "0")],
            &["SLURM_ARRAY_TASK_COUNT is not set"],
        ),
        (
            &[("JOB_COMPLETION_INDEX", "3"), ("KPROF_PARTITION_COUNT", "3")],
            &["JOB_COMPLETION_INDEX=3", "KPROF_PARTITION_COUNT=3"],
        ),
        (&[("JOB_COMPLETION_INDEX", "0"), ("KPROF_PARTITION_COUNT", "0")], &["KPROF_PARTITION_COUNT=0"]),
        (&[("JOB_COMPLETION_INDEX", "0")], &["KPROF_PARTITION_COUNT is not set"]),
        (
            &[("JOB_COMPLETION_INDEX", "-1"), ("KPROF_PARTITION_COUNT", "2")],
            &["JOB_COMPLETION_INDEX=-1 is not a number"],
        ),
        (
            &[("JOB_COMPLETION_INDEX", "0"), ("SLURM_ARRAY_TASK_ID", "0")],
            &["SLURM_ARRAY_TASK_ID=0", "JOB_COMPLETION_INDEX=0"],
        ),
    ];
    for (vars, needles) in cases {
        let f = from_env(env(vars)).expect_err(&format!("{vars:?}"));
        assert_eq!(f.code, cargo_kprof::error::ExitCode::Config, "{vars:?}");
        let all = format!("{}\n{}", f.message, f.help.join("\n"));
        for n in *needles {
            assert!(all.contains(n), "{vars:?}: expected {n:?} in\n{all}");
        }
        assert!(all.contains("--partition"), "{all}");
    }
}

/// A workspace of three harness kernels on three benches, and the fake ncu's replays of
/// the demo's recordings of each, found by the kernel's filter.
struct Shop {
    ws: Workspace,
    tools: PathBuf,
}

impl Shop {
    fn new() -> Shop {
        let mut toml = String::from("[[bench]]\nname = \"tiny\"\nharness = false\n\n");
        for k in KERNELS {
            toml.push_str(&format!(
                "[[package.metadata.kprof.kernels]]\nname = \"{k}\"\nbench = \"{k}\"\nruntime = \"harness\"\n\n"
            ));
        }
        let ws = Workspace::new(&toml);
        std::fs::write(ws.root().join("benches/tiny.rs"), "fn main() {}\n").unwrap();
        let tools = ws.root().join("tools");
        crate::support::fake_ncu::write(&tools);
        for k in KERNELS {
            let dir = tools.join("replay/by-filter").join(filter_key(&format!("regex:.*{k}.*")));
            copy_dir(&fixture_details(&format!("{k}_20261129_213211")), &dir);
        }
        Shop { ws, tools }
    }

    /// Runs `cargo kprof ARGS` with the fake ncu (and `env`), then moves `profile/` to
    /// `<tmp>/<name>` so that the next run starts without one; returns the output and
    /// where the profile root went.
    fn run(&self, name: &str, args: &[&str], env: &[(&str, &str)]) -> (Output, PathBuf) {
        let argv = self.tools.join(format!("{name}.argv"));
        let mut all = vec![
            ("NCU", self.tools.join("ncu").to_string_lossy().into_owned()),
            ("KPROF_SKIP_GPU_CHECK", "1".into()),
            ("FAKE_NCU_ARGV", argv.to_string_lossy().into_owned()),
            ("FAKE_NCU_REPLAY", self.tools.join("replay").to_string_lossy().into_owned()),
        ];
        all.extend(env.iter().map(|(k, v)| (*k, v.to_string())));
        let pairs: Vec<(&str, &str)> = all.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let out = self.ws.kprof(args, &pairs);
        let moved = self.ws.root().join("roots").join(name);
        std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
        if self.ws.root().join("profile").exists() {
            std::fs::rename(self.ws.root().join("profile"), &moved).unwrap();
        }
        (out, moved)
    }

    /// The stages ncu ran (calls that wrote a page; `--version` is not one).
    fn ncu_calls(&self, name: &str) -> usize {
        let calls = crate::support::fake_ncu::calls(&self.tools.join(format!("{name}.argv")));
        calls.iter().filter(|c| c.iter().any(|a| a == "--log-file")).count()
    }
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap()
}

/// The index's rows with the timestamps taken out of the ids, in a fixed order.
fn normalised(index: &Value) -> Vec<Value> {
    let re = regex::Regex::new(r"_\d{8}_\d{6}(_\d+)?$").unwrap();
    let mut rows: Vec<Value> = index["profiles"].as_array().unwrap().clone();
    for r in &mut rows {
        let id = r["profile"].as_str().unwrap().to_string();
        r["profile"] = Value::from(re.replace(&id, "").into_owned());
    }
    rows.sort_by_key(|r| r.to_string());
    rows
}

fn merge(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = crate::support::kprof_bin();
    cmd.arg("kprof").arg("merge").args(args).env_remove("GITHUB_STEP_SUMMARY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// The whole selection, then its count shards and its hash shards, each merged: the
/// merged index lists what the whole run listed. Each shard builds and profiles only its
/// own kernels, and records its shard; an empty shard runs nothing and says so.
#[test]
fn shards_merged_equal_the_whole_run() {
    let shop = Shop::new();
    let (out, whole) = shop.run("whole", &["--workspace"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let whole_index = json(&whole.join("index.json"));
    let mut whole_ids: Vec<String> =
        normalised(&whole_index).iter().map(|r| r["profile"].as_str().unwrap().to_string()).collect();
    whole_ids.sort();
    assert_eq!(whole_ids, KERNELS, "{whole_index}");
    assert!(whole_index.get("partition").is_none(), "{whole_index}");

    let (out, c1) = shop.run("c1", &["--workspace", "--partition", "count:1/2"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("shard 1/2 (count, from --partition): 2 of the 3 selected kernels: copy, tiny"),
        "{stderr}"
    );
    let (out, c2) = shop.run("c2", &["--workspace", "--partition", "count:2/2"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Shard 1 ran copy and tiny (basic, source and a follow-up each), built without fma's bench.
    assert_eq!(shop.ncu_calls("c1"), 6);
    let ids = |root: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let c1_ids = ids(&c1);
    assert!(
        c1_ids.len() == 2 && c1_ids[0].starts_with("copy_") && c1_ids[1].starts_with("tiny_"),
        "{c1_ids:?}"
    );
    let script = std::fs::read_to_string(c1.join(&c1_ids[0]).join("commands.sh")).unwrap();
    assert!(script.contains("--bench copy --bench tiny") && !script.contains("--bench fma"), "{script}");
    let manifest = std::fs::read_to_string(c1.join(&c1_ids[0]).join("run_manifest.yaml")).unwrap();
    assert!(manifest.contains("partition:\n  mode: count\n  index: 1\n  total: 2\n"), "{manifest}");
    let c1_index = json(&c1.join("index.json"));
    assert_eq!(c1_index["partition"], serde_json::json!({"mode": "count", "index": 1, "total": 2}));
    let md = std::fs::read_to_string(c1.join("index.md")).unwrap();
    assert!(md.contains("Made by shard 1/2 (count)."), "{md}");

    // Merged: one root read directly, one as a --workspace-remap directory would hold it.
    let remap = shop.ws.root().join("remap-c2");
    std::fs::create_dir_all(remap.join("workspace")).unwrap();
    std::fs::rename(&c2, remap.join("workspace/profile")).unwrap();
    let merged = shop.ws.root().join("merged-count");
    let out = merge(
        &[c1.to_str().unwrap(), remap.to_str().unwrap(), "--output-dir", merged.to_str().unwrap()],
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("(shard 2/2 (count)): the profile root of the --workspace-remap directory"),
        "{stderr}"
    );
    assert!(!stderr.contains("missing shards"), "{stderr}");
    let merged_index = json(&merged.join("index.json"));
    assert_eq!(normalised(&merged_index), normalised(&whole_index));
    assert_eq!(merged_index["merged"]["shards"].as_array().unwrap().len(), 2);
    assert_eq!(merged_index["merged"]["missing_shards"], serde_json::json!([]));
    for id in &c1_ids {
        assert!(merged.join(id).join("final_report.md").is_file(), "{id}");
    }
    // The sources are left as they were.
    assert_eq!(ids(&c1), c1_ids);

    // Hash shards: the three kernels all fall in shard 1; shard 2 runs nothing.
    let (out, h1) = shop.run("h1", &["--workspace", "--partition", "hash:1/2"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (out, h2) = shop.run("h2", &["--workspace", "--partition", "hash:2/2"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("shard 2/2 (hash, from --partition) holds no kernel of the 3 selected"),
        "{stderr}"
    );
    assert_eq!(shop.ncu_calls("h2"), 0, "an empty shard runs nothing");
    let h2_index = json(&h2.join("index.json"));
    assert_eq!(h2_index["partition"], serde_json::json!({"mode": "hash", "index": 2, "total": 2}));
    assert_eq!(h2_index["profiles"], serde_json::json!([]));
    let merged = shop.ws.root().join("merged-hash");
    let out = merge(
        &[
            h1.to_str().unwrap(),
            h2.to_str().unwrap(),
            "--output-dir",
            merged.to_str().unwrap(),
            "--message-format",
            "json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.iter().filter(|l| l["reason"] == "profile-merged").count(), 3, "{lines:?}");
    let last = lines.last().unwrap();
    assert_eq!(last["reason"], "merge-finished");
    assert_eq!(last["shards"], serde_json::json!(["hash:1/2", "hash:2/2"]));
    assert_eq!(normalised(&json(&merged.join("index.json"))), normalised(&whole_index));

    // A shard left out is named.
    let partial = shop.ws.root().join("merged-partial");
    let out = merge(&[c1.to_str().unwrap(), "--output-dir", partial.to_str().unwrap()], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warning: missing shards of count:I/2: 2"), "{stderr}");
    assert_eq!(json(&partial.join("index.json"))["merged"]["missing_shards"], serde_json::json!([2]));
    assert!(std::fs::read_to_string(partial.join("index.md")).unwrap().contains("**Missing shards:** 2."));

    // Different clock control: refused, naming the values and profiles; nothing written.
    let spec = c1.join(&c1_ids[1]).join("profile-target.yaml");
    let changed =
        std::fs::read_to_string(&spec).unwrap().replace("clock_control: none", "clock_control: base");
    std::fs::write(&spec, changed).unwrap();
    let mixed = shop.ws.root().join("merged-mixed");
    let args = [c1.to_str().unwrap(), h2.to_str().unwrap(), "--output-dir", mixed.to_str().unwrap()];
    let out = merge(&args, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(&format!("clock control differs: `base` ({}) vs `none` ({})", c1_ids[1], c1_ids[0])),
        "{stderr}"
    );
    assert!(stderr.contains("pass --force"), "{stderr}");
    assert!(!mixed.exists(), "a refused merge writes nothing");
    let out = merge(&[&args[..], &["--force"]].concat(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let forced = json(&mixed.join("index.json"));
    assert!(forced["merged"]["forced"][0].as_str().unwrap().starts_with("clock control differs"), "{forced}");
    assert!(std::fs::read_to_string(mixed.join("index.md")).unwrap().contains("Merged with --force"));
}

/// The engines' variables choose the shard when `--partition` is not given; the flag
/// wins; inconsistent values stop the run before anything is built.
#[test]
fn the_environment_names_the_shard_and_the_flag_wins() {
    let shop = Shop::new();
    let slurm =
        [("SLURM_ARRAY_TASK_ID", "2"), ("SLURM_ARRAY_TASK_MIN", "1"), ("SLURM_ARRAY_TASK_COUNT", "2")];
    let (out, _) = shop.run("slurm", &["--workspace", "--dry-run"], &slurm);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "shard 2/2 (count, from SLURM_ARRAY_TASK_ID=2 of --array=1-2): 1 of the 3 selected kernels: fma"
        ),
        "{stderr}"
    );
    let (out, _) = shop.run("flag", &["--workspace", "--dry-run", "--partition", "count:1/2"], &slurm);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("shard 1/2 (count, from --partition): 2 of the 3 selected kernels"), "{stderr}");
    let k8s = [("JOB_COMPLETION_INDEX", "0"), ("KPROF_PARTITION_COUNT", "3")];
    let (out, _) = shop.run("k8s", &["--workspace", "--dry-run"], &k8s);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("shard 1/3 (count, from JOB_COMPLETION_INDEX=0 of KPROF_PARTITION_COUNT=3): 1 of the 3 selected kernels: copy"),
        "{stderr}"
    );
    let (out, _) =
        shop.run("bad", &["--workspace"], &[("JOB_COMPLETION_INDEX", "3"), ("KPROF_PARTITION_COUNT", "3")]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("JOB_COMPLETION_INDEX=3, KPROF_PARTITION_COUNT=3"), "{stderr}");
    assert!(!stderr.contains("Building"), "nothing was built: {stderr}");
    // A bad SPEC is a usage error naming the value and both forms.
    let (out, _) = shop.run("spec", &["--workspace", "--partition", "count:0/2"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`count:0/2` is not a partition") && stderr.contains("hash:I/N"), "{stderr}");
    // An archive holds the whole selection: the shard is taken where it runs.
    let (out, _) =
        shop.run("archive", &["archive", "-o", "a.tar", "--workspace", "--partition", "count:1/2"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("run --archive FILE --partition count:1/2"), "{stderr}");
}

fn check_run(run: &str) -> PathBuf {
    recordings().join("check-runs").join(run)
}

/// The recorded check runs as two shards (`--workspace-remap` directories): one verdict
/// table, the step summary, exit 10 for the regressed kernel.
#[test]
fn merged_check_shards_give_one_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let (out_dir, summary) = (tmp.path().join("merged"), tmp.path().join("step_summary.md"));
    let (rerun, slow) = (check_run("rerun"), check_run("slow"));
    let out = merge(
        &[rerun.to_str().unwrap(), slow.to_str().unwrap(), "--output-dir", out_dir.to_str().unwrap()],
        &[("GITHUB_STEP_SUMMARY", &summary)],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(10), "{stderr}");
    assert!(stdout.contains("hgemm_tiled: duration -0.1 % (unchanged)"), "{stdout}");
    assert!(stdout.contains("hgemm_tiled: duration +428.4 % (regressed)"), "{stdout}");
    assert!(stderr.contains("error: merge: regression in hgemm_tiled"), "{stderr}");
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.contains("## cargo kprof check: 1 regression(s) beyond 2 %"), "{md}");
    assert_eq!(md.matches("| `hgemm_tiled` |").count(), 2, "{md}");

    // Without the regressed shard: exit 0.
    let out = merge(&[rerun.to_str().unwrap(), "--output-dir", tmp.path().join("ok").to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // The same shard twice: refused before anything is copied, naming both sources.
    let twice = tmp.path().join("twice");
    let out = merge(
        &[rerun.to_str().unwrap(), rerun.to_str().unwrap(), "--output-dir", twice.to_str().unwrap()],
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(12), "{stderr}");
    assert!(stderr.contains("profile `hgemm_tiled_20261129_231734` is in two shards"), "{stderr}");
    assert_eq!(stderr.matches("rerun/workspace/profile/hgemm_tiled_20261129_231734").count(), 2, "{stderr}");
    assert!(!twice.exists());

    // An output directory that is taken, and a directory that is no shard: exit 12.
    let out = merge(&[rerun.to_str().unwrap(), "--output-dir", out_dir.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(12), "{}", text(&out.stderr));
    let out =
        merge(&[tmp.path().to_str().unwrap(), "--output-dir", tmp.path().join("x").to_str().unwrap()], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(12), "{stderr}");
    assert!(stderr.contains("no profile index here"), "{stderr}");
}
