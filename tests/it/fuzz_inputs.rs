//! A bounded mutation fuzzer over the two other inputs kprof reads from elsewhere:
//! archive plans (`kprof-archive.json`, inside a tar) and shard indexes (`index.json`,
//! read by `merge`). `fuzz_parsers.rs` does the same for ncu's pages; the unbounded
//! versions are the cargo-fuzz targets `archive_manifest` and `merge_index` in `fuzz/`.
//!
//! Each case takes one recorded file (every `kprof-archive.json` and `index.json` under
//! `fixtures/h200`, written by kprof on the H200) and damages it: a JSON value replaced by
//! a hostile one (a path with `..`, an absolute path, a huge or negative number, a
//! control character, another type), a key removed, an array element doubled, or the
//! bytes flipped, cut or truncated. Then:
//!
//! - **plans**: the damaged plan is packed into a tar beside the files the undamaged plan
//!   lists, and the archive check runs. It may refuse (exit 3, the message naming the
//!   archive) but never panic, and what it accepts only ever names plain relative paths
//!   and launches it can run;
//! - **indexes**: the damaged index becomes the index of a shard whose listed profiles
//!   exist, merged with an undamaged shard. The merge may refuse (exit 3 or 12, naming a
//!   path) but never panics, and a refused merge leaves no output and no half-built
//!   sibling behind.
//!
//! Files kept in `fuzz/corpus/<target>/` (inputs worth keeping: past findings, hostile
//! shapes) are replayed by the same checks on every run.
//!
//! Deterministic: a fixed seed and case count ([`DEFAULT_CASES`], `KPROF_FUZZ_CASES`),
//! cut after [`DEFAULT_SECONDS`] (`KPROF_FUZZ_SECONDS`) but never before [`MIN_CASES`].

use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use cargo_kprof::error::{exit_code_of, ExitCode};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::Value;

use crate::support::recordings;

thread_local! {
    /// Cases accepted and refused in this thread's current run: a run that only ever
    /// refuses (or only accepts) tests one side of the check.
    static OUTCOMES: std::cell::Cell<(u32, u32)> = const { std::cell::Cell::new((0, 0)) };
}

fn outcome(accepted: bool) {
    OUTCOMES.with(|o| {
        let (a, r) = o.get();
        o.set(if accepted { (a + 1, r) } else { (a, r + 1) });
    });
}

/// Cases per target and `cargo test` run.
const DEFAULT_CASES: u32 = 1500;
/// Wall-time cap of one target's run, seconds.
const DEFAULT_SECONDS: u64 = 12;
/// Cases that run whatever the wall time.
const MIN_CASES: u32 = 200;
/// The seed: the same cases on every machine.
const SEED: [u8; 32] = *b"cargo-kprof fuzz plans & indexes";

/// JSON values a damaged field may take.
const HOSTILE: [&str; 24] = [
    "null",
    "true",
    "0",
    "-1",
    "4294967295",
    "18446744073709551615",
    "1e300",
    "-0.5",
    "\"\"",
    "\"..\"",
    "\"../../etc\"",
    "\"/etc/passwd\"",
    "\"/\"",
    "\"a/../../b\"",
    "\"\\u0000\"",
    "\"\\u001b]0;title\\u0007\"",
    "\"(((\"",
    "\"bin/../../x\"",
    "\"workspace/../../x\"",
    "[]",
    "{}",
    "[null]",
    "{\"List\": [\"basic\"]}",
    "99",
];

fn recorded(name: &str) -> Vec<(String, Vec<u8>)> {
    fn walk(dir: &Path, name: &str, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, name, out);
            } else if p.file_name().is_some_and(|f| f == name) {
                out.push(p);
            }
        }
    }
    let root = recordings();
    let mut paths = Vec::new();
    walk(&root, name, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|p| (p.strip_prefix(&root).unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect()
}

/// The inputs kept in `fuzz/corpus/<target>/`, by file name.
fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    files.sort();
    files
}

#[derive(Debug, Clone)]
enum Mutation {
    /// The `.0`-th value of the document (depth first) replaced by `HOSTILE[.1]`.
    Replace(usize, usize),
    /// The `.0`-th object of the document loses one of its keys.
    RemoveKey(usize, usize),
    /// The `.0`-th array of the document gets its first element twice.
    DoubleElement(usize),
    FlipByte(usize, u8),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = any::<usize>();
    prop_oneof![
        4 => (at, 0..HOSTILE.len()).prop_map(|(a, h)| Mutation::Replace(a, h)),
        2 => (at, at).prop_map(|(a, k)| Mutation::RemoveKey(a, k)),
        1 => at.prop_map(Mutation::DoubleElement),
        1 => (at, 1u8..).prop_map(|(a, x)| Mutation::FlipByte(a, x)),
        1 => at.prop_map(Mutation::Truncate),
    ]
}

/// The nodes of `v`, depth first: (is object, is array).
fn count_nodes(v: &Value, pick: &mut dyn FnMut(&Value)) {
    pick(v);
    match v {
        Value::Object(m) => m.values().for_each(|c| count_nodes(c, pick)),
        Value::Array(a) => a.iter().for_each(|c| count_nodes(c, pick)),
        _ => {}
    }
}

/// Calls `f` on the `n`-th node of `v` (depth first) that `keep` accepts.
fn with_node(v: &mut Value, n: usize, keep: &dyn Fn(&Value) -> bool, f: &mut dyn FnMut(&mut Value)) {
    fn go(
        v: &mut Value,
        left: &mut usize,
        keep: &dyn Fn(&Value) -> bool,
        f: &mut dyn FnMut(&mut Value),
    ) -> bool {
        if keep(v) {
            if *left == 0 {
                f(v);
                return true;
            }
            *left -= 1;
        }
        match v {
            Value::Object(m) => m.values_mut().any(|c| go(c, left, keep, f)),
            Value::Array(a) => a.iter_mut().any(|c| go(c, left, keep, f)),
            _ => false,
        }
    }
    let mut total = 0;
    count_nodes(v, &mut |x| total += usize::from(keep(x)));
    if total > 0 {
        let mut left = n % total;
        go(v, &mut left, keep, f);
    }
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let structured = |bytes: &mut Vec<u8>, edit: &mut dyn FnMut(&mut Value)| {
        if let Ok(mut v) = serde_json::from_slice::<Value>(bytes) {
            edit(&mut v);
            *bytes = serde_json::to_vec_pretty(&v).unwrap();
        }
    };
    match *m {
        Mutation::Replace(at, h) => structured(bytes, &mut |v| {
            let hostile: Value = serde_json::from_str(HOSTILE[h]).unwrap();
            with_node(v, at, &|_| true, &mut |node| *node = hostile.clone());
        }),
        Mutation::RemoveKey(at, k) => structured(bytes, &mut |v| {
            with_node(v, at, &|x| x.as_object().is_some_and(|m| !m.is_empty()), &mut |node| {
                let m = node.as_object_mut().unwrap();
                let key = m.keys().nth(k % m.len()).unwrap().clone();
                m.remove(&key);
            });
        }),
        Mutation::DoubleElement(at) => structured(bytes, &mut |v| {
            with_node(v, at, &|x| x.as_array().is_some_and(|a| !a.is_empty()), &mut |node| {
                let a = node.as_array_mut().unwrap();
                a.push(a[0].clone());
            });
        }),
        Mutation::FlipByte(at, x) if !bytes.is_empty() => {
            let n = bytes.len();
            bytes[at % n] ^= x;
        }
        Mutation::FlipByte(..) => {}
        Mutation::Truncate(at) => {
            let n = bytes.len();
            bytes.truncate(at % (n + 1));
        }
    }
}

fn plain_relative(p: &Path) -> bool {
    !p.as_os_str().is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)))
}

/// Packs `plan` beside the files `original` (an undamaged plan) lists, as `archive
/// -o` would, and runs the archive check on it.
fn check_archive(dir: &Path, plan: &[u8], original: &Value) -> Result<(), TestCaseError> {
    let path = dir.join("case.tar");
    let mut tar = tar::Builder::new(std::fs::File::create(&path).unwrap());
    let mut add = |name: &str, data: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o755);
        header.set_cksum();
        tar.append_data(&mut header, name, data).unwrap();
    };
    add("kprof-archive.json", plan);
    for exe in original["executables"].as_array().into_iter().flatten() {
        add(exe[1].as_str().unwrap(), b"\x7fELF");
    }
    for list in ["sources", "included", "build_outputs"] {
        for p in original[list].as_array().into_iter().flatten() {
            add(&format!("workspace/{}", p.as_str().unwrap()), b"packed");
        }
    }
    tar.into_inner().unwrap();
    let result = cargo_kprof::inputs::check_archive(&path);
    outcome(result.is_ok());
    match result {
        Err(f) => {
            prop_assert_eq!(f.code, ExitCode::Config, "{}", f);
            prop_assert!(f.to_string().starts_with(&path.display().to_string()), "{}", f);
        }
        Ok(checked) => {
            for (k, cwd) in &checked.kernels {
                prop_assert!(cwd.as_os_str().is_empty() || plain_relative(cwd), "cwd {:?}", cwd);
                prop_assert!(k.tolerance_pct.is_finite() && k.tolerance_pct >= 0.0);
            }
            for p in checked.executables.iter().chain(checked.entries.keys()) {
                prop_assert!(plain_relative(p), "entry {:?}", p);
            }
        }
    }
    Ok(())
}

/// Writes a shard whose index is `index` and whose listed profiles (those `original`
/// lists) exist, merges it with `other` into a new folder, and checks what is left.
fn check_merge(dir: &Path, index: &[u8], original: &Value, other: &Path) -> Result<(), TestCaseError> {
    let shard = dir.join("shard");
    std::fs::create_dir_all(&shard).unwrap();
    for row in original["profiles"].as_array().into_iter().flatten() {
        if let Some(id) = row["profile"].as_str() {
            std::fs::create_dir_all(shard.join(id)).unwrap();
            std::fs::write(shard.join(id).join("final_report.md"), "# a profile\n").unwrap();
        }
    }
    std::fs::write(shard.join("index.json"), index).unwrap();
    let out = dir.join("merged");
    let result = cargo_kprof::inputs::merge(&[shard.clone(), other.to_path_buf()], &out, false);
    outcome(result.is_ok());
    match result {
        Err(e) => {
            let code = exit_code_of(&e);
            prop_assert!(matches!(code, ExitCode::Config | ExitCode::Filesystem), "{:?}: {:#}", code, e);
            let left: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect();
            prop_assert!(!out.exists(), "a refused merge left {}", out.display());
            prop_assert_eq!(left.len(), 1, "a refused merge left {:?}", left);
        }
        Ok(merged) => {
            let text = std::fs::read_to_string(out.join("index.json")).unwrap();
            let v: Value = serde_json::from_str(&text).unwrap();
            prop_assert!(v["schema_version"].is_u64());
            prop_assert!(merged.copied.iter().all(|c| c.to.starts_with(&out)));
        }
    }
    std::fs::remove_dir_all(&shard).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    Ok(())
}

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One check of a damaged input: the scratch folder, the damaged bytes, the recording.
type Case<'a> = &'a dyn Fn(&Path, &[u8], &Value) -> Result<(), TestCaseError>;

/// Runs `case` on damaged versions of `inputs`, within the budget.
fn fuzz(what: &str, inputs: &[(String, Vec<u8>)], case: Case<'_>) {
    let cases: u32 = env_number("KPROF_FUZZ_CASES", DEFAULT_CASES);
    let budget = Duration::from_secs(env_number("KPROF_FUZZ_SECONDS", DEFAULT_SECONDS));
    let config = Config { cases, failure_persistence: None, max_shrink_iters: 500, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &SEED));
    let started = Instant::now();
    let ran = std::cell::Cell::new(0u32);
    OUTCOMES.with(|o| o.set((0, 0)));
    let strategy = (0..inputs.len(), prop::collection::vec(mutation(), 1..4));
    let result = runner.run(&strategy, |(which, mutations)| {
        if started.elapsed() > budget && ran.get() >= MIN_CASES {
            return Ok(());
        }
        ran.set(ran.get() + 1);
        let (name, bytes) = &inputs[which];
        let original: Value = serde_json::from_slice(bytes).unwrap();
        let mut damaged = bytes.clone();
        for m in &mutations {
            apply(&mut damaged, m);
        }
        let dir = tempfile::tempdir().unwrap();
        case(dir.path(), &damaged, &original)
            .map_err(|e| TestCaseError::fail(format!("{name}, damaged: {e}")))
    });
    let (accepted, refused) = OUTCOMES.with(std::cell::Cell::get);
    eprintln!(
        "fuzz_inputs ({what}): {} of {cases} cases over {} recordings in {:.1} s: {accepted} accepted, {refused} refused",
        ran.get(),
        inputs.len(),
        started.elapsed().as_secs_f64()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(ran.get() >= MIN_CASES.min(cases), "only {} damaged {what} were checked", ran.get());
    assert!(accepted > 0 && refused > 0, "{what}: {accepted} accepted, {refused} refused: one side untested");
}

/// A shard with one undamaged recorded index and its profiles, to merge the damaged one with.
fn other_shard(dir: &Path) -> PathBuf {
    let (_, bytes) = recorded("index.json").into_iter().find(|(n, _)| n.starts_with("multi-gpu")).unwrap();
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    for row in v["profiles"].as_array().unwrap() {
        std::fs::create_dir_all(other.join(row["profile"].as_str().unwrap())).unwrap();
    }
    std::fs::write(other.join("index.json"), &bytes).unwrap();
    other
}

#[test]
fn damaged_archive_plans_are_refused_by_name_or_stay_inside() {
    let plans = recorded("kprof-archive.json");
    assert!(plans.len() >= 10, "only {} recorded plans", plans.len());
    fuzz("archive plans", &plans, &check_archive);
}

#[test]
fn damaged_shard_indexes_are_refused_by_name_and_leave_nothing() {
    let indexes = recorded("index.json");
    assert!(indexes.len() >= 20, "only {} recorded indexes", indexes.len());
    let keep = tempfile::tempdir().unwrap();
    let other = other_shard(keep.path());
    fuzz("shard indexes", &indexes, &|dir, damaged, original| check_merge(dir, damaged, original, &other));
}

/// The recordings as they are pass both checks whole: the damage is what the fuzzing adds.
#[test]
fn undamaged_plans_and_indexes_pass() {
    for (name, bytes) in recorded("kprof-archive.json") {
        let dir = tempfile::tempdir().unwrap();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        check_archive(dir.path(), &bytes, &v).unwrap_or_else(|e| panic!("{name}: {e}"));
        let checked = cargo_kprof::inputs::check_archive(&dir.path().join("case.tar"));
        assert!(checked.is_ok(), "{name}: {:?}", checked.err().map(|f| f.to_string()));
    }
}

/// Every input kept in `fuzz/corpus/`, through the same checks: plans beside the files of
/// the recorded `pair` plan, indexes as the damaged shard of a merge.
#[test]
fn the_kept_corpora_replay() {
    let pair: Value = serde_json::from_slice(
        &std::fs::read(recordings().join("archive-runs/pair/kprof-archive.json")).unwrap(),
    )
    .unwrap();
    let plans = corpus("archive_manifest");
    let indexes = corpus("merge_index");
    assert!(!plans.is_empty() && !indexes.is_empty(), "the corpora are empty");
    for (name, bytes) in &plans {
        let dir = tempfile::tempdir().unwrap();
        check_archive(dir.path(), bytes, &pair).unwrap_or_else(|e| panic!("archive_manifest/{name}: {e}"));
    }
    let keep = tempfile::tempdir().unwrap();
    let other = other_shard(keep.path());
    for (name, bytes) in &indexes {
        let dir = tempfile::tempdir().unwrap();
        let original = serde_json::from_slice(bytes).unwrap_or(Value::Null);
        check_merge(dir.path(), bytes, &original, &other)
            .unwrap_or_else(|e| panic!("merge_index/{name}: {e}"));
    }
}
