//! The shape of `src/`, kept by tests: the rooms of the pipeline do not import each other
//! in a circle, no file outgrows a reader, the names of a profile directory's files are
//! spelled only in `src/profile/`, and only the shell and the events print lines for people.
//!
//! A room is a top-level module (`collect`, `analyze`, `profile`, ...); an arrow is any
//! `crate::room` path in a room's code (tests and comments excluded).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::support::repo;

/// The non-test code of every `.rs` file under `src/`: (path relative to the repo, code).
fn sources() -> Vec<(String, String)> {
    let tests = regex::Regex::new(r"#\[cfg\(test\)\]\s*mod \w+ \{").unwrap();
    let mut out = Vec::new();
    for p in rs_files() {
        let text = std::fs::read_to_string(&p).unwrap();
        // The code before the file's own test module.
        let code = text[..tests.find(&text).map_or(text.len(), |m| m.start())].to_string();
        out.push((rel(&p), code));
    }
    // A file its parent declares under `#[cfg(test)]` is test code as a whole.
    let texts: BTreeMap<String, String> =
        out.iter().map(|(p, _)| (p.clone(), std::fs::read_to_string(repo().join(p)).unwrap())).collect();
    out.retain(|(p, _)| !is_test_module(p, &texts));
    out.sort();
    out
}

/// Every `.rs` file under `src/`.
fn rs_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![repo().join("src")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out
}

/// Whether `path`'s parent module declares it `#[cfg(test)] mod NAME;`.
fn is_test_module(path: &str, texts: &BTreeMap<String, String>) -> bool {
    let p = Path::new(path);
    let name = p.file_stem().unwrap().to_string_lossy().into_owned();
    let dir = p.parent().unwrap();
    let parents = [dir.join("mod.rs"), dir.with_extension("rs")];
    let decl =
        regex::Regex::new(&format!(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod {name};")).unwrap();
    parents.iter().any(|parent| {
        let parent = parent.to_string_lossy().into_owned();
        parent != path && texts.get(&parent).is_some_and(|t| decl.is_match(t))
    })
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
    let mut over = Vec::new();
    for (path, code) in sources() {
        let lines = code.lines().count();
        if lines > 500 {
            over.push(format!("{path}: {lines}"));
        }
    }
    assert!(
        over.is_empty(),
        "files over 500 lines of non-test code (split them by role):\n{}",
        over.join("\n")
    );
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
        "breakdown.json",
        "breakdown.md",
        "timing.json",
        "import.json",
        "00_environment.txt",
        "regression_report.md",
        "regression.json",
        "profile_summary.png",
        "census.png",
        "comparison.png",
        "index.md",
        "index.json",
        "ncu_path",
        "bisect.json",
        "bisect.md",
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
    for r in
        ["commands", "config", "plan", "build", "vcs", "collect", "analyze", "report", "compare", "profile"]
    {
        assert!(rooms.contains(r), "no src/{r}: {rooms:?}");
    }
    let _ = PathBuf::new();
}

/// A file's module path: `src/collect/batch.rs` -> `["collect", "batch"]`,
/// `src/ops/ab/mod.rs` -> `["ops", "ab"]`, `src/lib.rs` -> `[]`.
fn module_of(path: &str) -> Vec<String> {
    let inner = path.strip_prefix("src/").unwrap().trim_end_matches(".rs");
    let mut parts: Vec<String> = inner.split('/').map(str::to_string).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// `use` statements with their brace groups spelled out: `use a::{b, c::{d, e}};` ->
/// `a::b`, `a::c::d`, `a::c::e`.
fn expand_use(tree: &str, prefix: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(tree).trim();
        out.push(if prefix.is_empty() { path.to_string() } else { format!("{prefix}{path}") });
        return;
    };
    let head = format!("{prefix}{}", &tree[..open]);
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                expand_use(&inner[start..i], &head, out);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !inner[start..].trim().is_empty() {
        expand_use(&inner[start..], &head, out);
    }
}

/// The file-level import graph of `src/` (non-test code): an arrow from a file to every
/// other file whose module it names through `crate::`, `super::`, `self::` or a child
/// module's name, in `use` statements and in paths in code. A module's own children are
/// parts of it: a child naming its ancestor (`super::KernelRun` in `collect/adapt.rs`) is
/// no arrow, while the parent naming a child, and siblings naming each other, are.
fn file_arrows() -> BTreeMap<String, BTreeSet<String>> {
    let files = sources();
    let by_module: BTreeMap<Vec<String>, String> =
        files.iter().filter(|(p, _)| p != "src/main.rs").map(|(p, _)| (module_of(p), p.clone())).collect();
    let use_stmt = regex::Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);").unwrap();
    let path_expr =
        regex::Regex::new(r"\b(?:crate|super|self|[a-z_][a-z0-9_]*)(?:::[A-Za-z_][A-Za-z0-9_]*)+").unwrap();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, code) in &files {
        let here = module_of(path);
        let code = without_comments(code);
        let mut paths = Vec::new();
        for c in use_stmt.captures_iter(&code) {
            expand_use(&c[1], "", &mut paths);
        }
        let rest = use_stmt.replace_all(&code, "");
        paths.extend(path_expr.find_iter(&rest).map(|m| m.as_str().to_string()));
        for p in paths {
            let segs: Vec<&str> = p.split("::").map(str::trim).collect();
            let mut module: Vec<String> = match segs[0] {
                "crate" => Vec::new(),
                "self" => here.clone(),
                "super" => here[..here.len().saturating_sub(1)].to_vec(),
                child => {
                    let mut m = here.clone();
                    m.push(child.to_string());
                    if !by_module.contains_key(&m) {
                        continue;
                    }
                    m
                }
            };
            let mut rest = &segs[1..];
            if segs[0] == "super" {
                while rest.first() == Some(&"super") {
                    module.pop();
                    rest = &rest[1..];
                }
            }
            for s in rest {
                let mut deeper = module.clone();
                deeper.push(s.to_string());
                if !by_module.contains_key(&deeper) {
                    break;
                }
                module = deeper;
            }
            let Some(to) = by_module.get(&module) else { continue };
            // Itself, or an ancestor of it: the module it is a part of.
            if to == path || here.starts_with(&module) {
                continue;
            }
            edges.entry(path.clone()).or_default().insert(to.clone());
        }
    }
    edges
}

#[test]
fn the_files_of_src_import_each_other_in_no_circle() {
    let edges = file_arrows();
    let mut cycles = Vec::new();
    let mut done: BTreeSet<String> = BTreeSet::new();
    for start in edges.keys() {
        // Depth-first search from each file, reporting the first circle through it.
        let mut stack: Vec<(String, Vec<String>)> = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((u, path)) = stack.pop() {
            for v in edges.get(&u).into_iter().flatten() {
                if v == start {
                    let mut c = path.clone();
                    c.push(v.clone());
                    let key: BTreeSet<String> = c.iter().cloned().collect();
                    if !key.iter().any(|f| done.contains(f)) {
                        cycles.push(c.join(" -> "));
                    }
                } else if seen.insert(v.clone()) {
                    let mut p = path.clone();
                    p.push(v.clone());
                    stack.push((v.clone(), p));
                }
            }
        }
        done.insert(start.clone());
    }
    assert!(cycles.is_empty(), "files of src/ that import each other in a circle:\n{}", cycles.join("\n"));
}

#[test]
fn the_file_graph_sees_the_imports_it_should() {
    // A guard for the guard: arrows known to exist are found, and a child's use of its
    // parent is not one.
    let edges = file_arrows();
    let has = |from: &str, to: &str| edges.get(from).is_some_and(|t| t.contains(to));
    assert!(has("src/commands/profile.rs", "src/ops/profile/mod.rs"), "{edges:#?}");
    assert!(has("src/ops/ab/mod.rs", "src/ops/ab/rounds.rs"), "{edges:#?}");
    assert!(!has("src/collect/adapt.rs", "src/collect/mod.rs"), "{edges:#?}");
}

#[test]
fn command_files_are_thin_and_import_no_other_command() {
    let edges = file_arrows();
    for (path, code) in sources() {
        let Some(name) = path.strip_prefix("src/commands/") else { continue };
        let lines = code.lines().count();
        assert!(
            name == "mod.rs" || lines <= 200,
            "{path} has {lines} lines (at most 200): a command reads its arguments, builds options, calls \
             one driver in src/ops/ and returns; move the work there"
        );
        // `mod.rs` is the dispatcher: it names each command's file.
        for to in edges.get(&path).into_iter().flatten().filter(|_| name != "mod.rs") {
            assert!(
                !to.starts_with("src/commands/"),
                "{path} imports {to}: command files do not import each other; share through src/ops/"
            );
        }
    }
}

#[test]
fn json_is_built_in_the_events_module_and_one_helper_only() {
    // Messages are typed (src/events.rs); documents are Serialize structs. `json!` stays
    // in tests only, and in the few places listed here.
    let allowed = ["src/events/mod.rs"];
    let mut found = Vec::new();
    for (path, code) in sources() {
        if without_comments(&code).contains("json!(") {
            found.push(path);
        }
    }
    let extra: Vec<&String> = found.iter().filter(|p| !allowed.contains(&p.as_str())).collect();
    assert!(extra.is_empty() && found.len() <= 2, "json! outside tests in {found:?}");
}

#[test]
fn one_command_new_in_src_tests_included() {
    let count: usize =
        rs_files().iter().map(|p| std::fs::read_to_string(p).unwrap().matches("Command::new(").count()).sum();
    assert_eq!(count, 1, "child processes start in src/process.rs only; tests use its runner");
}

#[test]
fn only_the_shell_and_the_displayer_print_lines_for_people() {
    // Every line kprof prints is a typed message (src/events/): progress, a notice, a
    // result. A driver that called `shell.status("...")` would print a line that
    // `--message-format json` never carries. Other tools' lines go through `Shell::relay`.
    let printing = regex::Regex::new(
        r"(?:\bshell\s*\.\s*|\bShell::)(?:status|note|warn|warn_always)\s*\(|\bwarn_always\s*\(",
    )
    .unwrap();
    let mut found = Vec::new();
    for (path, code) in sources() {
        if path == "src/shell.rs" || path.starts_with("src/events/") {
            continue;
        }
        for (n, line) in code.lines().enumerate() {
            if !line.trim_start().starts_with("//") && printing.is_match(line) {
                found.push(format!("{path}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "lines for people printed outside the shell and the events (emit a typed Event instead):\n{}",
        found.join("\n")
    );
    // A guard for the guard: the pattern sees the calls it forbids, and not `emit`.
    for call in ["shell.status(x)", "self.shell.warn(w)", "shell.note(n)", "sh.warn_always(w)"] {
        assert!(printing.is_match(call), "{call}");
    }
    assert!(!printing.is_match("shell.emit(&Event::note(About::Plan, n))"));
}

/// Each non-comment line of non-test code under `src/`, with its file and line number.
fn code_lines() -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    for (path, code) in sources() {
        for (n, line) in code.lines().enumerate() {
            if !line.trim_start().starts_with("//") {
                out.push((path.clone(), n + 1, line.to_string()));
            }
        }
    }
    out
}

#[test]
fn an_archive_s_kind_is_told_in_one_function() {
    // Telling an archive's kind (one build, an A/B pair, a bisect bundle) is reading its
    // first entry and comparing that entry's name with the name of a bundle's manifest.
    // Textually: those names are spelled, as string literals, in `src/archive/outer.rs`
    // only, and the function there that reads the first entry, `sniff`, is called from one
    // place, `archive::open`, which every command that is handed an archive calls.
    let markers = ["\"kprof-ab.json\"", "\"kprof-bisect.json\""];
    let mut spelled = Vec::new();
    let mut calls = Vec::new();
    for (path, n, line) in code_lines() {
        if path != "src/archive/outer.rs" && markers.iter().any(|m| line.contains(m)) {
            spelled.push(format!("{path}:{n}: {}", line.trim()));
        }
        if line.contains("sniff(") && !line.contains("fn sniff(") {
            calls.push(format!("{path}:{n}: {}", line.trim()));
        }
    }
    assert!(
        spelled.is_empty(),
        "the names of a bundle's manifest spelled outside src/archive/outer.rs (tell an archive's kind \
         with archive::open):\n{}",
        spelled.join("\n")
    );
    assert!(
        calls.len() == 1 && calls[0].starts_with("src/archive/mod.rs:"),
        "an archive's first entry is read by archive::open only (call it, and match on what it holds):\n{}",
        calls.join("\n")
    );
}

/// The module-level import graph inside `room`: an arrow from one of its child modules
/// (`ops::ab`: `src/ops/ab.rs` or every file under `src/ops/ab/`) to another whose file it
/// imports (see [`file_arrows`]). The room's own `mod.rs` is no module of it.
fn module_arrows(room: &str) -> BTreeMap<String, BTreeSet<String>> {
    let child = |file: &str| -> Option<String> {
        let m = module_of(file);
        (m.len() >= 2 && m[0] == room).then(|| m[1].clone())
    };
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, tos) in file_arrows() {
        let Some(a) = child(&from) else { continue };
        for b in tos.iter().filter_map(|to| child(to)).filter(|b| *b != a) {
            edges.entry(a.clone()).or_default().insert(b);
        }
    }
    edges
}

/// A circle in `edges`, as a path that ends where it starts, if there is one.
fn a_circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    for start in edges.keys() {
        let mut stack = vec![vec![start.clone()]];
        let mut seen = BTreeSet::new();
        while let Some(path) = stack.pop() {
            for v in edges.get(path.last().unwrap()).into_iter().flatten() {
                let mut p = path.clone();
                p.push(v.clone());
                if v == start {
                    return Some(p);
                }
                if seen.insert(v.clone()) {
                    stack.push(p);
                }
            }
        }
    }
    None
}

#[test]
fn the_modules_of_each_room_import_each_other_in_no_circle() {
    // Files may import each other in no circle (above); neither may the modules a room is
    // made of, taken whole: `ops::ab` uses `ops::archive` and `ops::check`, so neither of
    // those uses anything of `ops::ab`, whichever of its files.
    let rooms: BTreeSet<String> = sources().iter().map(|(p, _)| room(p)).collect();
    let mut circles = Vec::new();
    for r in &rooms {
        if let Some(c) = a_circle(&module_arrows(r)) {
            circles.push(format!("{r}: {}", c.join(" -> ")));
        }
    }
    assert!(
        circles.is_empty(),
        "modules of a room of src/ that import each other in a circle:\n{}",
        circles.join("\n")
    );
    // A guard for the guard: arrows known to exist are found.
    let ops = module_arrows("ops");
    let has = |from: &str, to: &str| ops.get(from).is_some_and(|t| t.contains(to));
    assert!(has("ab", "archive") && has("ab", "check") && has("bisect", "ab"), "{ops:#?}");
}

#[test]
fn a_request_is_written_out_in_one_file() {
    // A `plan::Request` is made from the command line in `src/cli/request.rs`, and the
    // commands call it there; no other code writes one out as a struct literal
    // (`Request { .. }`; `BuildRequest` and `LauncherRequest` are other types, and a
    // return type, the definition and an `impl` are no literal). Tests make their own.
    let name = regex::Regex::new(r"\bRequest \{").unwrap();
    let mut found = Vec::new();
    for (path, n, line) in code_lines() {
        if path == "src/cli/request.rs" {
            continue;
        }
        for m in name.find_iter(&line) {
            let before = line[..m.start()].trim_end();
            let declared = ["->", "struct", "impl", "for"].iter().any(|w| before.ends_with(w));
            if !declared {
                found.push(format!("{path}:{n}: {}", line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a Request written out outside src/cli/request.rs (call KernelOptions::request, \
         ProfileArgs::request or ProfileArgs::archived_request, or set the field):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_kernel_hint_is_read_in_one_function() {
    // A `--kernel` hint is read once, where it enters, into a `KernelHint { name, exact }`
    // and carried typed. Reading one is looking at its leading `=` (`=NAME`: exactly that
    // function): that happens in `KernelHint::parse` only, which the command line's value
    // parser in `src/cli/` calls, and `import.json`'s reader beside it (the file keeps the
    // hint as it was given). Nothing else strips, or looks for, a leading `=`.
    let reads = regex::Regex::new(r#"(strip_prefix|starts_with|trim_start_matches)\((?:'='|"=")\)"#).unwrap();
    let mut found = Vec::new();
    let mut calls = Vec::new();
    for (path, n, line) in code_lines() {
        if reads.is_match(&line)
            && !(path == "src/model/filter.rs" && line.contains("text.strip_prefix('=')"))
        {
            found.push(format!("{path}:{n}: {}", line.trim()));
        }
        if line.contains("KernelHint::parse(") && !line.contains("fn parse(") {
            calls.push((path, format!("{n}: {}", line.trim())));
        }
    }
    assert!(found.is_empty(), "a kernel hint's `=` read outside KernelHint::parse:\n{}", found.join("\n"));
    let elsewhere: Vec<String> = calls
        .iter()
        .filter(|(p, _)| !p.starts_with("src/cli/") && p != "src/model/filter.rs")
        .map(|(p, l)| format!("{p}:{l}"))
        .collect();
    assert!(
        elsewhere.is_empty(),
        "a kernel hint read from text outside the command line (src/cli/) and import.json's reader; \
         carry the KernelHint instead:\n{}",
        elsewhere.join("\n")
    );
    assert!(calls.iter().any(|(p, _)| p.starts_with("src/cli/")), "the command line reads hints: {calls:?}");
}

#[test]
fn the_merge_base_sentinel_is_spelled_in_its_parser_only() {
    // Three things are called `auto`: the stage keyword (`--stages auto`, a manifest's
    // `stages`), the baseline (`compare --baseline auto`: the newest saved one), and what
    // clap is handed for `--base` given with no revision (the merge base). The last is
    // read into `BaseRev::MergeBase` by `--base`'s value parser in `src/cli/ab.rs` and is
    // spelled there only. Textually: the literal `"auto"` appears, outside tests, exactly
    // in these files, this many times, each for its own meaning.
    let expected: BTreeMap<&str, (usize, &str)> = [
        ("src/cli/ab.rs", (1, "the merge base: `--base` with no revision (MERGE_BASE)")),
        ("src/model/stage.rs", (2, "the stage keyword, read and shown")),
        ("src/config/table.rs", (1, "the stage keyword in a manifest's list")),
        ("src/compare/gate.rs", (1, "the baseline `auto`")),
        ("src/cli.rs", (1, "`compare --baseline`'s default, on its `auto|DIR|NAME` line")),
    ]
    .into_iter()
    .collect();
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, n, line) in code_lines() {
        for _ in line.matches("\"auto\"") {
            found.entry(path.clone()).or_default().push(format!("{path}:{n}: {}", line.trim()));
        }
    }
    let mut wrong = BTreeSet::new();
    for (path, lines) in &found {
        match expected.get(path.as_str()) {
            Some((count, _)) if *count == lines.len() => {}
            _ => wrong.extend(lines.iter().cloned()),
        }
        if path == "src/cli.rs" {
            wrong.extend(lines.iter().filter(|l| !l.contains("auto|DIR|NAME")).cloned());
        }
    }
    assert!(
        wrong.is_empty(),
        "`\"auto\"` spelled where it is not one of {expected:#?}\n(the merge base is \
         BaseRev::MergeBase past src/cli/ab.rs; use cli::ab::MERGE_BASE for clap):\n{}",
        wrong.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn archives_are_written_by_two_functions() {
    // An archive of one build is written through `archive::builder` (every file a plain
    // entry); the outer tar of an A/B pair or a bisect bundle, which holds such archives,
    // by `archive::outer::write` only, for both. No other code starts a tar writer.
    let mut found = Vec::new();
    for (path, n, line) in code_lines() {
        if line.contains("tar::Builder::new(") {
            found.push(format!("{path}:{n}"));
        }
    }
    let allowed = ["src/archive/mod.rs", "src/archive/outer.rs"];
    let (ours, others): (Vec<&String>, Vec<&String>) =
        found.iter().partition(|f| allowed.iter().any(|a| f.starts_with(&format!("{a}:"))));
    assert!(
        others.is_empty() && ours.len() == 2,
        "tar writers outside archive::builder and archive::outer::write (write a bundle with \
         outer::write):\n{}",
        found.join("\n")
    );
    for (file, f) in [("src/archive/mod.rs", "fn builder"), ("src/archive/outer.rs", "fn write")] {
        let code = sources().into_iter().find(|(p, _)| p == file).unwrap().1;
        let start = code.find(f).unwrap_or_else(|| panic!("no `{f}` in {file}"));
        let next = code[start + 2..]
            .find("\nfn ")
            .or(code[start + 2..].find("\npub"))
            .map_or(code.len(), |i| start + 2 + i);
        assert!(code[start..next].contains("tar::Builder::new("), "{file}: the tar writer is not in `{f}`");
    }
}
