//! Every command kprof prints as advice runs: each `cargo kprof ...` in the text kprof
//! writes (messages, helps, the report's next actions, the picture's captions, the rules'
//! advice) is parsed as the command line is, and those that profile are planned against
//! the demo workspace, without a GPU.
//!
//! Two sources: the string literals of `src/` (helps and messages written as text), and
//! what is rendered from data (the report's next actions of each recorded demo profile,
//! cut down to the basic stage so that every suggestion appears, and the picture's
//! captions). Placeholders (`NAME`, `DIR`, `REV`, ...) take
//! demo values by the flag before them. A command for a target kind the demo has none of
//! (`--example`, `--bin`: cudarc's examples in the help of an unconfigured workspace) is
//! parsed, not planned; a line with a format placeholder (`{name}`) is covered by its
//! rendering.

use std::path::{Path, PathBuf};

use crate::cli::{self, Command, KprofArgs};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The lines of `code` outside comments and test modules, each string's `\` line
/// continuations joined: where the text of its string literals is.
fn literals(code: &str) -> Vec<String> {
    let code = code.split("#[cfg(test)]").next().unwrap_or(code);
    let code: String =
        code.lines().filter(|l| !l.trim_start().starts_with("//")).map(|l| format!("{l}\n")).collect();
    let continuation = regex::Regex::new(r"\\\n\s*").unwrap();
    continuation.replace_all(&code, "").lines().map(|l| l.replace("\\n", "\n")).collect()
}

/// A command: from `cargo kprof` or `cargo-kprof kprof` up to the end of its line, a
/// backtick, a quote or a bracket.
static COMMAND: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r#"cargo(?: |-kprof )kprof(?: [^`'"\\\n()\]]*)?"#).unwrap()
});

/// Commands the text names rather than advises running: `pass the file `cargo kprof
/// archive --base` wrote`.
const MENTIONS: &[&str] = &["cargo kprof archive --base"];

/// Flags that select kernels: a command with none is advice for whatever the user selects,
/// and is planned with `--kernel hgemm`.
const SELECTIONS: &[&str] = &["--kernel", "-k", "--index", "--workspace", "--kernel-regex", "--bench", "-p"];

/// The commands in `text`: from `cargo kprof` or `cargo-kprof kprof` up to the end of
/// its line, a backtick, a quote or a closing bracket. Only those that go on with a flag
/// or a subcommand (not the tool's name in a sentence) and hold no format placeholder
/// or usage syntax.
fn commands_in(text: &str) -> Vec<String> {
    let subcommands = [
        "list", "init", "import", "report", "compare", "check", "doctor", "explain", "archive", "run",
        "merge",
    ];
    COMMAND
        .find_iter(text)
        .map(|m| m.as_str().trim_end_matches(['.', ',', ':', ';', ' ']).to_string())
        .filter(|c| {
            let words: Vec<&str> = c.split_whitespace().collect();
            let next = words.get(2).copied().unwrap_or("");
            // `cargo kprof import` alone names the subcommand.
            let named_only = words.len() == 3 && subcommands.contains(&next);
            (next.starts_with('-') || subcommands.contains(&next))
                && !named_only
                && !MENTIONS.contains(&c.as_str())
                && !c.contains(['{', '[', '|', '<', '"'])
                && !c.contains("...")
        })
        .collect()
}

/// `words` with each placeholder given a demo value, by the flag before it.
fn filled(words: &[&str], tmp: &Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let flag = if i > 0 { words[i - 1] } else { "" };
        let value = match (*w, flag) {
            ("NAME", "--baseline" | "--save-baseline") => "main".to_string(),
            ("NAME", "explain") => "dram-bandwidth".to_string(),
            ("NAME" | "HINT", _) => "hgemm".to_string(),
            ("REV", _) => "HEAD".to_string(),
            ("PACKAGE" | "PKG", _) => "kprof-demo".to_string(),
            ("N", _) => "2".to_string(),
            ("FILE", "-o" | "--archive") => tmp.join("k.tar").display().to_string(),
            ("FILE", _) => tmp.join("page.csv").display().to_string(),
            ("DIR", _) => tmp.join("dir").display().to_string(),
            (w, _) if w.contains("I/N") => w.replace("I/N", "1/2"),
            (w, _) => w.to_string(),
        };
        out.push(value);
    }
    out
}

/// The demo workspace, read as `cargo kprof` reads it (no dependency is resolved).
fn demo() -> (cargo_metadata::Metadata, crate::config::Config) {
    let manifest = repo().join("examples/demo/Cargo.toml");
    let shell = crate::shell::Shell::quiet();
    let metadata = crate::build::metadata(&crate::build::cargo_binary(), Some(&manifest), &shell).unwrap();
    let config = crate::config::load(&metadata).unwrap();
    (metadata, config)
}

/// Parses `command` (its placeholders filled) and, when it profiles a demo target, plans
/// it against the demo; the problem, if any.
fn check_command(
    command: &str,
    demo: &(cargo_metadata::Metadata, crate::config::Config),
    tmp: &Path,
) -> Result<(), String> {
    let words: Vec<&str> = command.split_whitespace().skip(2).collect();
    let mut argv = vec!["cargo-kprof".to_string(), "kprof".to_string()];
    argv.extend(filled(&words, tmp));
    let profiles = matches!(words.first().copied(), None | Some("check" | "archive"))
        || words.first().is_some_and(|w| w.starts_with('-'));
    if profiles && !words.iter().any(|w| SELECTIONS.contains(w)) {
        argv.extend(["--kernel".to_string(), "hgemm".to_string()]);
    }
    let args: KprofArgs = match cli::parse_from(&argv) {
        Ok(args) => args,
        // `cargo kprof --help` (or `-h`, or a command's): clap shows the help and stops.
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => return Ok(()),
        Err(e) => return Err(format!("does not parse: {e}")),
    };
    let profile = match &args.command {
        None => Some(&args.profile),
        Some(Command::Check(c)) if c.archive.is_none() => Some(&c.profile),
        Some(Command::Archive(a)) => Some(&a.profile),
        Some(Command::Explain(e)) => {
            let topic = e.topic.as_deref().unwrap_or_default();
            let known = topic.is_empty()
                || crate::analyze::rules::Rules::builtin().describe_limiter(topic).is_some()
                || crate::references::explain(topic).is_ok();
            return if known { Ok(()) } else { Err(format!("explain knows no `{topic}`")) };
        }
        _ => None,
    };
    let Some(profile) = profile else { return Ok(()) };
    if profile.example.is_some() || profile.bin.is_some() {
        return Ok(());
    }
    let request = profile.request().map_err(|e| format!("refused: {e}"))?;
    crate::plan::resolve(&request, &demo.0, &demo.1, crate::build::cargo_binary())
        .map(|_| ())
        .map_err(|e| format!("does not plan against the demo: {e:#}"))
}

/// The commands the report suggests for each recorded demo profile with only its basic
/// page (every other stage then missing, so every suggestion is made).
fn report_suggestions(tmp: &Path) -> Vec<String> {
    let stages = kprof_testkit::recordings().join("demo-stages");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&stages).unwrap() {
        let recorded = entry.unwrap().path();
        if !recorded.is_dir() {
            continue;
        }
        let name = recorded.file_name().unwrap().to_string_lossy().into_owned();
        for (suffix, pages) in [("basic", &["01_basic_raw.csv"][..])] {
            let dir = tmp.join(format!("{name}_{suffix}"));
            std::fs::create_dir_all(dir.join("details")).unwrap();
            std::fs::copy(recorded.join("profile-target.yaml"), dir.join("profile-target.yaml")).unwrap();
            for page in std::fs::read_dir(recorded.join("details")).unwrap() {
                let page = page.unwrap().path();
                let file = page.file_name().unwrap().to_string_lossy().into_owned();
                if pages.is_empty() || pages.contains(&file.as_str()) {
                    std::fs::copy(&page, dir.join("details").join(&file)).unwrap();
                }
            }
            let profile = crate::profile::ProfileDir::at(&dir);
            crate::report::refresh(&profile, &crate::analyze::AnalyzeOptions::default()).unwrap();
            let report = std::fs::read_to_string(profile.final_report_path()).unwrap();
            let next = report.split("## Next profiling actions").nth(1).unwrap_or_default();
            let next = next.split("\n## ").next().unwrap_or_default();
            out.extend(commands_in(next));
        }
    }
    out
}

#[test]
fn every_command_kprof_prints_as_advice_parses_and_plans_against_the_demo() {
    let tmp = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    rust_files(&repo().join("src"), &mut files);
    let mut commands: Vec<(String, String)> = Vec::new();
    for file in &files {
        let code = std::fs::read_to_string(file).unwrap();
        let origin = file.strip_prefix(repo()).unwrap().display().to_string();
        for text in literals(&code) {
            commands.extend(commands_in(&text).into_iter().map(|c| (origin.clone(), c)));
        }
    }
    let rules = std::fs::read_to_string(repo().join("rules/bottleneck.yaml")).unwrap();
    commands.extend(commands_in(&rules).into_iter().map(|c| ("rules/bottleneck.yaml".to_string(), c)));
    let from_source = commands.len();
    // What is rendered from data.
    let reports = report_suggestions(tmp.path());
    assert!(
        reports.iter().any(|c| c.contains("--kernel hgemm ") && c.contains("--stages basic,memory,source")),
        "{reports:?}"
    );
    assert!(!reports.iter().any(|c| c.contains("hgemm_naive")), "the entry, not the function: {reports:?}");
    commands.extend(reports.into_iter().map(|c| ("final_report.md".to_string(), c)));
    for caption in [crate::report::visual::ROOFLINE_ADVICE, crate::report::visual::HOT_LINES_ADVICE] {
        let stages =
            caption.split("--stages ").nth(1).expect("a --stages list").split_whitespace().next().unwrap();
        commands.push(("the picture".into(), format!("cargo kprof --kernel hgemm --stages {stages}")));
    }
    let note = crate::ncu::stages::auto_choice(true);
    assert!(!note.contains("cargo kprof"), "{note}");
    assert!(from_source >= 12, "the scan found only {from_source} commands: {commands:#?}");

    let demo = demo();
    let failed: Vec<String> = commands
        .iter()
        .filter_map(|(origin, c)| {
            check_command(c, &demo, tmp.path()).err().map(|e| format!("{origin}: `{c}`: {e}"))
        })
        .collect();
    assert!(failed.is_empty(), "advice that does not run:\n{}", failed.join("\n"));
}

#[test]
fn the_scan_finds_commands_and_leaves_prose_alone() {
    let text = "save one first: `cargo kprof check --save-baseline main`; cargo kprof never stores \
                passwords; see cargo kprof --kernel {name} and `cargo-kprof kprof run --archive FILE`.";
    assert_eq!(
        commands_in(text),
        ["cargo kprof check --save-baseline main", "cargo-kprof kprof run --archive FILE"]
    );
    let tmp = Path::new("/t");
    assert_eq!(
        filled(&["--baseline", "NAME", "--kernel", "NAME"], tmp),
        ["--baseline", "main", "--kernel", "hgemm"]
    );
}
