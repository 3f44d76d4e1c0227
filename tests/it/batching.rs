//! Batching replayed from the H200: the zoo's seven compute kernels (one bench program)
//! and the demo's two hgemm kernels, each profiled batched (fixtures/h200/batch-bench/,
//! see its README). The fake ncu replays the batched pages the H200 run wrote; the replay
//! must issue one ncu run per stage with the alternations the H200 run used, split each
//! kernel's rows exactly as the H200 run did (byte for byte), keep each `commands.sh`
//! replayable for its kernel alone, and reach the same verdicts.

use std::path::{Path, PathBuf};

use crate::support::{recordings, text, Workspace};

fn dirs(root: &Path, hidden: bool) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.file_name().unwrap().to_string_lossy().starts_with('.') == hidden)
        .collect();
    out.sort();
    out
}

fn yaml(path: &Path) -> serde_yaml::Value {
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The `--kernel-name` values of a commands.sh's ncu lines, in order.
fn filters(script: &str) -> Vec<String> {
    script
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(" --kernel-name "))
        .map(|l| {
            let rest = &l[l.find(" --kernel-name ").unwrap() + 15..];
            let word = if let Some(q) = rest.strip_prefix('\'') {
                &q[..q.find('\'').unwrap()]
            } else {
                rest.split(' ').next().unwrap()
            };
            word.to_string()
        })
        .collect()
}

fn verdict(profile: &Path) -> (String, String) {
    let v: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(profile.join("details/bottleneck_decision.json")).unwrap(),
    )
    .unwrap();
    let k = &v["kernels"][0];
    (k["classification"].to_string(), k["limiter"]["id"].to_string())
}

fn replay(bench: &str) {
    replay_with(bench, &[]);
}

fn replay_with(bench: &str, extra: &[(&str, &str)]) -> Vec<Vec<String>> {
    let recorded = recordings().join("batch-bench").join(bench).join("batched");
    let batch = dirs(&recorded, true).pop().expect("the recorded .batch_ folder");
    let recorded_filters = filters(&std::fs::read_to_string(batch.join("commands.sh")).unwrap());
    // In the H200 run's order: the order of the alternation.
    let mut members = dirs(&recorded, false);
    let at = |m: &PathBuf| {
        let spec = yaml(&m.join("profile-target.yaml"));
        let f = format!("(?:{})", spec["kernel"]["filter"].as_str().unwrap());
        recorded_filters[0].find(&f).unwrap_or_else(|| panic!("{f} in {}", recorded_filters[0]))
    };
    members.sort_by_key(at);
    assert!(members.len() >= 2, "{members:?}");
    // The same kernels, filters and cases, on the test workspace's one harness program.
    let mut toml = String::new();
    let mut names = Vec::new();
    for m in &members {
        let spec = yaml(&m.join("profile-target.yaml"));
        let k = &spec["kernel"];
        let (name, filter, case) =
            (k["name"].as_str().unwrap(), k["filter"].as_str().unwrap(), k["case"].as_str().unwrap());
        names.push(name.to_string());
        toml.push_str(&format!(
            "[[package.metadata.kprof.kernels]]\nname = \"{name}\"\nbench = \"copy\"\nruntime = \"harness\"\n\
             regex = '{filter}'\ncase = '{case}'\n\n"
        ));
    }
    let ws = Workspace::with_harness(&toml);
    let tools = ws.root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let ncu = crate::support::fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let details = batch.join("details");
    let mut env = vec![
        ("NCU", ncu.to_str().unwrap()),
        ("KPROF_SKIP_GPU_CHECK", "1"),
        ("FAKE_NCU_ARGV", argv.to_str().unwrap()),
        ("FAKE_NCU_REPLAY", details.to_str().unwrap()),
    ];
    env.extend_from_slice(extra);
    let out = ws.kprof(&["--workspace", "--clock-control", "none"], &env);
    let stderr = text(&out.stderr);
    if !extra.is_empty() {
        assert!(!stderr.contains("Batching"), "{stderr}");
        return crate::support::fake_ncu::calls(&argv)
            .into_iter()
            .filter(|a| a.iter().any(|x| x == "--log-file"))
            .collect();
    }
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains(&format!("Batching {} kernels of", members.len())), "{stderr}");

    // One ncu run per batched stage, with the H200 run's alternation of filters.
    let calls: Vec<Vec<String>> = crate::support::fake_ncu::calls(&argv)
        .into_iter()
        .filter(|a| a.iter().any(|x| x == "--log-file"))
        .collect();
    let got_filters: Vec<String> =
        calls.iter().map(|a| a[a.iter().position(|x| x == "--kernel-name").unwrap() + 1].clone()).collect();
    assert_eq!(got_filters, recorded_filters, "{calls:?}");

    let ours: Vec<PathBuf> = ws
        .profiles()
        .into_iter()
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert_eq!(ours.len(), members.len(), "{ours:?}");
    for (name, theirs) in names.iter().zip(&members) {
        let mine = ours
            .iter()
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("{name}_2")))
            .unwrap_or_else(|| panic!("{name}: {ours:?}"));
        // Each kernel's pages: its rows of the batched page, split as on the H200.
        for page in std::fs::read_dir(theirs.join("details")).unwrap() {
            let page = page.unwrap().path();
            let file = page.file_name().unwrap().to_string_lossy().into_owned();
            if file.ends_with("_raw.csv")
                && file.as_bytes()[0].is_ascii_digit()
                && file != "00_environment.txt"
            {
                assert_eq!(
                    std::fs::read_to_string(mine.join("details").join(&file)).unwrap(),
                    std::fs::read_to_string(&page).unwrap(),
                    "{name}: {file}"
                );
            }
        }
        assert_eq!(verdict(mine), verdict(theirs), "{name}");
        // commands.sh replays the kernel alone: its own filter on every stage line.
        let script = std::fs::read_to_string(mine.join("commands.sh")).unwrap();
        let own = filters(&script);
        assert!(!own.is_empty() && own.iter().all(|f| !f.contains(")|(")), "{name}: {own:?}");
        assert!(script.contains("ran batched with"), "{script}");
        let manifest = std::fs::read_to_string(mine.join("run_manifest.yaml")).unwrap();
        assert!(manifest.contains("batched with") && manifest.contains("status: ok"), "{manifest}");
    }
    // The batch folder is hidden: not a profile of the index.
    let index = std::fs::read_to_string(ws.root().join("profile/index.json")).unwrap();
    assert!(!index.contains(".batch_"), "{index}");
    calls
}

/// `KPROF_NO_BATCH=1` (as `--no-batch`) keeps one ncu run per kernel and stage, each with
/// its own filter.
#[test]
fn no_batch_runs_each_kernel_alone() {
    let calls = replay_with("hgemm", &[("KPROF_NO_BATCH", "1")]);
    let filters: Vec<&str> = calls
        .iter()
        .filter_map(|a| a.iter().position(|x| x == "--kernel-name").map(|i| a[i + 1].as_str()))
        .collect();
    assert!(filters.len() >= 2 && filters.iter().all(|f| !f.contains(")|(")), "{filters:?}");
    assert!(
        filters.contains(&"regex:.*hgemm.*") && filters.contains(&"regex:.*hgemm_tiled.*"),
        "{filters:?}"
    );
}

#[test]
fn seven_compute_kernels_of_one_program_share_each_stage() {
    let calls = replay_with("compute", &[]);
    assert_eq!(calls.len(), 2, "basic and one compute follow-up for all seven: {calls:?}");
}

/// `.*hgemm.*` also matches `hgemm_tiled`: the tiled kernel's rows go to the narrower
/// filter, as each kernel's own case would have launched them.
#[test]
fn overlapping_filters_split_to_the_narrowest() {
    replay("hgemm");
}
