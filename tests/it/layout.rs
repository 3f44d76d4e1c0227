//! The shape of `src/`, kept by tests: the rooms of the pipeline do not import each other
//! in a circle, no file outgrows a reader, and the names of a profile directory's files
//! are spelled only in `src/profile/`.
//!
//! A room is a top-level module (`collect`, `analyze`, `profile`, ...); an arrow is any
//! `crate::room` path in a room's code (tests and comments excluded).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::support::repo;

/// The non-test code of every `.rs` file under `src/`: (path relative to the repo, code).
fn sources() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![repo().join("src")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap().to_string();
                out.push((rel(&p), code));
            }
        }
    }
    out.sort();
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(repo()).unwrap().to_string_lossy().into_owned()
}

/// The room of a file: `src/collect/prepare.rs` -> `collect`.
fn room(path: &str) -> String {
    let inner = path.strip_prefix("src/").unwrap();
    inner.split('/').next().unwrap().trim_end_matches(".rs").to_string()
}

fn without_comments(code: &str) -> String {
    code.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

fn arrows() -> BTreeMap<String, BTreeSet<String>> {
    let re = regex::Regex::new(r"crate::([a-z_]+)").unwrap();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, code) in sources() {
        let from = room(&path);
        if from == "lib" || from == "main" {
            continue;
        }
        for c in re.captures_iter(&without_comments(&code)) {
            if c[1] != from {
                edges.entry(from.clone()).or_default().insert(c[1].to_string());
            }
        }
    }
    edges
}

#[test]
fn the_rooms_of_src_have_no_import_cycle() {
    let edges = arrows();
    // Depth-first search for a back edge; the cycle is reported as a path.
    fn visit(
        u: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(u.to_string(), 1);
        path.push(u.to_string());
        for v in edges.get(u).into_iter().flatten() {
            match state.get(v.as_str()) {
                Some(1) => {
                    let start = path.iter().position(|p| p == v).unwrap();
                    let mut cycle = path[start..].to_vec();
                    cycle.push(v.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(v, edges, state, path) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        state.insert(u.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for u in edges.keys() {
        if !state.contains_key(u.as_str()) {
            if let Some(cycle) = visit(u, &edges, &mut state, &mut Vec::new()) {
                panic!("import cycle between the rooms of src/: {}", cycle.join(" -> "));
            }
        }
    }
    // The ground floor imports nothing of the pipeline above it.
    for ground in ["model", "error", "units", "shell", "suggest", "process"] {
        for to in edges.get(ground).into_iter().flatten() {
            assert!(
                ["model", "error", "units", "shell", "suggest"].contains(&to.as_str()),
                "{ground} (ground floor) imports {to}"
            );
        }
    }
}

#[test]
fn no_file_outgrows_a_reader() {
    for (path, code) in sources() {
        let lines = code.lines().count();
        assert!(lines <= 600, "{path} has {lines} lines of non-test code (at most 600): split it by role");
    }
}

#[test]
fn every_subcommand_is_one_file_under_commands() {
    let commands: Vec<String> = sources()
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.starts_with("src/commands/") && !p.ends_with("mod.rs"))
        .collect();
    let cli = std::fs::read_to_string(repo().join("src/cli.rs")).unwrap();
    let names = regex::Regex::new(r#"Command::\w+\(_\) => "([a-z]+)""#).unwrap();
    for c in names.captures_iter(&cli) {
        let name = &c[1];
        let file = commands.iter().find(|f| {
            let stem = Path::new(f).file_stem().unwrap().to_string_lossy().into_owned();
            stem.split('_').any(|part| part == name)
        });
        assert!(file.is_some(), "`cargo kprof {name}` has no file under src/commands/ ({commands:?})");
    }
}

#[test]
fn profile_file_names_are_spelled_only_in_src_profile() {
    // The files of a profile directory and of the profiles root.
    let names = [
        "profile-target.yaml",
        "run_manifest.yaml",
        "commands.sh",
        "final_report.md",
        "metrics_summary.json",
        "metrics_raw.csv",
        "metrics_extracted.jsonl",
        "bottleneck_decision.json",
        "source_hotspots.csv",
        "kernel_candidates.json",
        "timing.json",
        "import.json",
        "00_environment.txt",
        "regression_report.md",
        "regression.json",
        "profile_summary.png",
        "comparison.png",
        "index.md",
        "index.json",
        "ncu_path",
    ];
    // A string literal that is a path (no spaces: messages and help text may name files).
    let literal = regex::Regex::new(r#""((?:[^"\\]|\\.)*)""#).unwrap();
    let mut found = Vec::new();
    for (path, code) in sources() {
        if path.starts_with("src/profile/") {
            continue;
        }
        for (n, line) in without_comments(&code).lines().enumerate() {
            // Files built into the binary are the repository's, not a profile's.
            if line.contains("include_str!(") || line.contains("include_bytes!(") {
                continue;
            }
            for c in literal.captures_iter(line) {
                let lit = &c[1];
                if lit.contains(char::is_whitespace) {
                    continue;
                }
                let file = lit.rsplit('/').next().unwrap_or(lit);
                let spelled = names.contains(&file)
                    || lit.ends_with("_raw.csv")
                    || ["details/", "comparison/", "visual/", "baselines/"]
                        .iter()
                        .any(|d| lit.starts_with(d));
                // `doctor` names its check after the file (a label, not a path).
                let label = path == "src/ncu/preflight.rs" && lit == "profile/ncu_path";
                if spelled && !label {
                    found.push(format!("{path}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "profile file names spelled outside src/profile/:\n{}", found.join("\n"));
}

#[test]
fn only_process_rs_starts_child_processes() {
    let starts = regex::Regex::new(
        r"std::process::Command|Command::new\(|\.spawn\(\)|MetadataCommand::new|\.exec\(\)",
    )
    .unwrap();
    for (path, code) in sources() {
        if path == "src/process.rs" {
            continue;
        }
        for (n, line) in without_comments(&code).lines().enumerate() {
            assert!(
                !starts.is_match(line),
                "{path}:{}: a child process started outside process.rs: {line}",
                n + 1
            );
        }
    }
}

#[test]
fn the_checks_of_this_file_see_the_whole_tree() {
    // A guard for the guards: the walk finds the rooms the layout names.
    let rooms: BTreeSet<String> = sources().iter().map(|(p, _)| room(p)).collect();
    for r in ["commands", "config", "plan", "build", "collect", "analyze", "report", "compare", "profile"] {
        assert!(rooms.contains(r), "no src/{r}: {rooms:?}");
    }
    let _ = PathBuf::new();
}
