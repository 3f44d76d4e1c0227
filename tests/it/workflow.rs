//! `docs/ci/github-gpu-runner.yml`, the pre-merge GPU gate users copy: its jobs, the
//! archive `build` writes being the one `check` reads, and every kprof command in its
//! scripts using only flags (and values) that the built binary's `--help` lists, so that
//! a renamed or misspelt flag fails here rather than on a user's GPU runner.

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;
use serde_yaml::Value;

use crate::support::{repo, text};

const WORKFLOW: &str = "docs/ci/github-gpu-runner.yml";

fn workflow() -> Value {
    let path = repo().join(WORKFLOW);
    serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What `cargo-kprof kprof [SUB] --help` lists: the long and short flags, and the values
/// of those that take one of a fixed set.
#[derive(Debug, Default)]
struct Help {
    flags: BTreeSet<String>,
    values: BTreeMap<String, BTreeSet<String>>,
}

fn help(sub: Option<&str>) -> Help {
    let mut cmd = crate::support::kprof_bin();
    cmd.arg("kprof").args(sub).arg("--help").env("NO_COLOR", "1");
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "kprof {sub:?} --help: {}", text(&out.stderr));
    parse_help(&text(&out.stdout))
}

/// An option's first line is indented by 2 (`  -o, --output <FILE>`) or 6 (`      --base
/// [<REV>]`) spaces; its description, by more.
fn parse_help(help: &str) -> Help {
    let option = Regex::new(r"^(?: {2}(-[A-Za-z0-9]), | {6})(--[a-z0-9][a-z0-9-]*)").unwrap();
    let listed_value = Regex::new(r"^ {10,}- ([A-Za-z0-9][A-Za-z0-9_-]*):").unwrap();
    let inline_values = Regex::new(r"\[possible values: ([^\]]+)\]").unwrap();
    let mut parsed = Help::default();
    let mut current: Option<Vec<String>> = None;
    for line in help.lines() {
        if let Some(c) = option.captures(line) {
            let names: Vec<String> =
                [c.get(1), c.get(2)].into_iter().flatten().map(|m| m.as_str().into()).collect();
            parsed.flags.extend(names.iter().cloned());
            current = Some(names);
        } else if !line.starts_with("      ") && !line.trim().is_empty() {
            current = None; // a section heading
        }
        let Some(names) = &current else { continue };
        let mut found: Vec<String> = Vec::new();
        if let Some(c) = listed_value.captures(line) {
            found.push(c[1].to_string());
        }
        if let Some(c) = inline_values.captures(line) {
            found.extend(c[1].split(',').map(|v| v.trim().to_string()));
        }
        for name in names {
            parsed.values.entry(name.clone()).or_default().extend(found.iter().cloned());
        }
    }
    parsed.values.retain(|_, v| !v.is_empty());
    parsed
}

/// The words of a `run:` script, split into commands at newlines and `|`, `&`, `;` (as a
/// shell would, for the scripts a workflow holds): quotes removed, `\` line continuations
/// joined, comments dropped, and `${{ ... }}` kept whole.
fn commands(script: &str) -> Vec<Vec<String>> {
    let script = script.replace("\\\n", " ");
    let mut out = vec![Vec::new()];
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = script.chars().peekable();
    let end_word = |out: &mut Vec<Vec<String>>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            out.last_mut().unwrap().push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek() == Some(&'{') {
            // `${{ expr }}` (or `${VAR}`) as one piece of the word.
            word.push(c);
            for d in chars.by_ref() {
                word.push(d);
                if d == '}' && (!word.contains("${{") || word.ends_with("}}")) {
                    break;
                }
            }
            in_word = true;
            continue;
        }
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '#') if !in_word => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        break;
                    }
                }
                out.push(Vec::new());
            }
            (None, ' ' | '\t') => end_word(&mut out, &mut word, &mut in_word),
            (None, '\n' | '|' | '&' | ';') => {
                end_word(&mut out, &mut word, &mut in_word);
                out.push(Vec::new());
            }
            (None, _) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    end_word(&mut out, &mut word, &mut in_word);
    out.retain(|c| !c.is_empty());
    out
}

/// One kprof command of a script: `cargo kprof SUB ARGS` or `[./]cargo-kprof kprof SUB
/// ARGS`, with the job it is in and the program as written.
#[derive(Debug, Clone)]
struct Invocation {
    job: String,
    program: String,
    sub: Option<String>,
    args: Vec<String>,
}

impl Invocation {
    fn line(&self) -> String {
        format!(
            "{}: {} kprof {} {}",
            self.job,
            self.program,
            self.sub.as_deref().unwrap_or(""),
            self.args.join(" ")
        )
    }

    /// The value given to `flag` (`--flag VALUE` or `--flag=VALUE`).
    fn value(&self, flag: &str) -> Option<&str> {
        let mut words = self.args.iter();
        while let Some(w) = words.next() {
            if w == flag {
                return words.next().map(String::as_str);
            }
            if let Some(v) = w.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
                return Some(v);
            }
        }
        None
    }
}

fn invocations(script: &str, job: &str) -> Vec<Invocation> {
    let mut found = Vec::new();
    for words in commands(script) {
        for i in 0..words.len() {
            let program = &words[i];
            let is_kprof = (program == "cargo" || program.ends_with("cargo-kprof"))
                && words.get(i + 1).is_some_and(|w| w == "kprof");
            if !is_kprof {
                continue;
            }
            let rest = &words[i + 2..];
            let (sub, args) = match rest.first() {
                Some(s) if !s.starts_with('-') => (Some(s.clone()), rest[1..].to_vec()),
                _ => (None, rest.to_vec()),
            };
            found.push(Invocation { job: job.into(), program: program.clone(), sub, args });
            break;
        }
    }
    found
}

fn jobs(wf: &Value) -> &serde_yaml::Mapping {
    wf["jobs"].as_mapping().expect("jobs")
}

fn steps<'a>(wf: &'a Value, job: &str) -> &'a Vec<Value> {
    wf["jobs"][job]["steps"].as_sequence().unwrap_or_else(|| panic!("jobs.{job}.steps"))
}

fn every_invocation(wf: &Value) -> Vec<Invocation> {
    let mut all = Vec::new();
    for (name, _) in jobs(wf) {
        let name = name.as_str().unwrap();
        for step in steps(wf, name) {
            if let Some(script) = step["run"].as_str() {
                all.extend(invocations(script, name));
            }
        }
    }
    all
}

/// The flags (and fixed-set values) of `inv` that its subcommand's `--help` does not list.
fn unknown_flags(inv: &Invocation, help: &Help) -> Vec<String> {
    let mut wrong = Vec::new();
    let mut words = inv.args.iter().peekable();
    while let Some(w) = words.next() {
        if w == "--" {
            break; // the profiled program's arguments
        }
        let (flag, inline) = match w.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (w.clone(), None),
        };
        let flags: Vec<String> = if flag.starts_with("--") {
            vec![flag]
        } else if flag.len() > 1 && flag.starts_with('-') {
            flag[1..].chars().map(|c| format!("-{c}")).collect()
        } else {
            continue;
        };
        for f in &flags {
            if !help.flags.contains(f) {
                wrong.push(format!("`{f}` is not an option of `kprof {}`", inv.sub.as_deref().unwrap_or("")));
            } else if let Some(allowed) = help.values.get(f) {
                let value = inline.clone().or_else(|| words.next().cloned()).unwrap_or_default();
                if !allowed.contains(&value) {
                    wrong.push(format!("`{f} {value}`: `{f}` takes one of {allowed:?}"));
                }
            }
        }
    }
    wrong
}

#[test]
fn the_help_parser_finds_flags_values_and_short_forms() {
    let check = help(Some("check"));
    for flag in
        ["--archive", "--workspace-remap", "--base", "--gate", "--ambiguous", "--bmf", "-k", "--kernel"]
    {
        assert!(check.flags.contains(flag), "{flag}: {:?}", check.flags);
    }
    assert_eq!(check.values["--gate"], ["both", "counters", "time"].map(String::from).into());
    assert_eq!(check.values["--ambiguous"], ["fail", "pass"].map(String::from).into());
    assert_eq!(check.values["--message-format"], ["human", "json"].map(String::from).into());
    assert!(!check.values.contains_key("--base"), "{:?}", check.values);
    let archive = help(Some("archive"));
    assert!(archive.flags.contains("-o") && archive.flags.contains("--output"), "{:?}", archive.flags);
    // A flag a description mentions (`check --archive` in `--base`'s) is not an option.
    assert!(!archive.flags.contains("--archive"), "{:?}", archive.flags);
    assert_eq!(archive.values["--emit"], ["github", "k8s", "slurm"].map(String::from).into());
}

#[test]
fn the_script_parser_splits_commands_and_keeps_expressions_whole() {
    let script = "chmod +x cargo-kprof # comment with cargo kprof --nope\n\
                  ./cargo-kprof kprof check --archive \"a b.tar\" \\\n  --gate=both | tee out.jsonl\n\
                  cargo kprof archive --base \"origin/${{ github.base_ref }}\" -o k.tar && echo done\n\
                  cargo install --locked cargo-kprof";
    let found = invocations(script, "j");
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].program, "./cargo-kprof");
    assert_eq!(found[0].sub.as_deref(), Some("check"));
    assert_eq!(found[0].args, ["--archive", "a b.tar", "--gate=both"]);
    assert_eq!(found[0].value("--gate"), Some("both"));
    assert_eq!(found[1].value("--base"), Some("origin/${{ github.base_ref }}"));
    assert_eq!(found[1].value("-o"), Some("k.tar"));
}

/// The test that guards the workflow: a misspelt flag or value in any kprof command of
/// it fails here, naming the command.
#[test]
fn every_kprof_command_in_the_workflow_uses_only_flags_its_help_lists() {
    let wf = workflow();
    let all = every_invocation(&wf);
    let seen: BTreeSet<(String, Option<String>)> =
        all.iter().map(|i| (i.job.clone(), i.sub.clone())).collect();
    for (job, sub) in [("build", "archive"), ("check", "doctor"), ("check", "check")] {
        assert!(
            seen.contains(&(job.to_string(), Some(sub.to_string()))),
            "no `kprof {sub}` in {job}: {all:#?}"
        );
    }
    let mut helps: BTreeMap<Option<String>, Help> = BTreeMap::new();
    let mut wrong = Vec::new();
    for inv in &all {
        let help = helps.entry(inv.sub.clone()).or_insert_with(|| help(inv.sub.as_deref()));
        for w in unknown_flags(inv, help) {
            wrong.push(format!("{w}\n    in {}", inv.line()));
        }
    }
    assert!(wrong.is_empty(), "{WORKFLOW}:\n{}", wrong.join("\n"));
}

#[test]
fn a_misspelt_flag_or_value_is_caught() {
    let check = help(Some("check"));
    let inv = |args: &[&str]| Invocation {
        job: "check".into(),
        program: "./cargo-kprof".into(),
        sub: Some("check".into()),
        args: args.iter().map(|s| s.to_string()).collect(),
    };
    assert!(unknown_flags(
        &inv(&["--archive", "a.tar", "--gate", "both", "-vv", "--", "--anything"]),
        &check
    )
    .is_empty());
    let wrong = unknown_flags(&inv(&["--archve", "a.tar"]), &check);
    assert_eq!(wrong, ["`--archve` is not an option of `kprof check`"]);
    let wrong = unknown_flags(&inv(&["--gate", "timing"]), &check);
    assert_eq!(wrong.len(), 1, "{wrong:?}");
    assert!(wrong[0].starts_with("`--gate timing`"), "{wrong:?}");
    assert_eq!(unknown_flags(&inv(&["--ambiguous=maybe"]), &check).len(), 1);
    assert_eq!(unknown_flags(&inv(&["-x"]), &check), ["`-x` is not an option of `kprof check`"]);
}

fn as_strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Sequence(s) => s.iter().filter_map(|v| v.as_str().map(String::from)).collect(),
        _ => Vec::new(),
    }
}

/// The steps of `job` that use `action` (`actions/upload-artifact`), in order.
fn uses<'a>(wf: &'a Value, job: &str, action: &str) -> Vec<&'a Value> {
    steps(wf, job).iter().filter(|s| s["uses"].as_str().is_some_and(|u| u.starts_with(action))).collect()
}

/// The `path:` lines of an upload step.
fn paths(step: &Value) -> Vec<String> {
    step["with"]["path"]
        .as_str()
        .unwrap_or("")
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn build_packs_on_a_hosted_runner_and_check_runs_on_the_gpu_runner_after_it() {
    let wf = workflow();
    assert!(wf["on"]["pull_request"].is_null() || wf["on"]["pull_request"].is_mapping(), "{:?}", wf["on"]);
    assert!(wf["on"].as_mapping().unwrap().contains_key("pull_request"), "{:?}", wf["on"]);
    let names: Vec<&str> = jobs(&wf).keys().map(|k| k.as_str().unwrap()).collect();
    assert_eq!(names, ["build", "check"]);
    let (build, check) = (&wf["jobs"]["build"], &wf["jobs"]["check"]);
    assert_eq!(build["runs-on"], "ubuntu-latest");
    assert_eq!(as_strings(&check["needs"]), ["build"]);
    let labels = as_strings(&check["runs-on"]);
    assert!(labels.iter().any(|l| l == "self-hosted") && labels.iter().any(|l| l == "gpu"), "{labels:?}");
    for job in [build, check] {
        assert!(job["timeout-minutes"].as_u64().is_some_and(|m| m > 0), "{job:?}");
    }
    // One check at a time on the GPU runner: a fixed group, never cancelling a running check.
    let group = check["concurrency"]["group"].as_str().unwrap();
    assert!(!group.contains("${{"), "one group for the runner, not per run: {group}");
    assert_eq!(check["concurrency"]["cancel-in-progress"], false);
    // The base revision must be reachable in the build's checkout.
    let checkout = uses(&wf, "build", "actions/checkout");
    assert_eq!(checkout.len(), 1);
    assert_eq!(checkout[0]["with"]["fetch-depth"], 0);
}

/// What zizmor asks of the workflow, checked here also where zizmor is not installed (CI
/// runs it too): actions pinned to a commit, no credentials left in the checkout, no
/// `${{ }}` expanded into a script.
#[test]
fn the_workflow_pins_its_actions_keeps_no_credentials_and_expands_nothing_into_scripts() {
    let wf = workflow();
    let mut actions = 0;
    for (job, _) in jobs(&wf) {
        for step in steps(&wf, job.as_str().unwrap()) {
            if let Some(uses) = step["uses"].as_str() {
                actions += 1;
                let (_, rev) = uses.split_once('@').unwrap_or_else(|| panic!("{uses}: no @"));
                assert!(
                    rev.len() == 40 && rev.chars().all(|c| c.is_ascii_hexdigit()),
                    "{uses}: not a commit"
                );
                if uses.starts_with("actions/checkout@") {
                    assert_eq!(step["with"]["persist-credentials"], false, "{uses}");
                }
            }
            if let Some(run) = step["run"].as_str() {
                assert!(!run.contains("${{"), "an expression expanded into a script: {run}");
            }
        }
    }
    assert_eq!(actions, 4, "checkout, upload, download, upload");
    assert_eq!(wf["permissions"]["contents"], "read");
}

#[test]
fn the_archive_build_writes_is_the_one_check_reads() {
    let wf = workflow();
    let all = every_invocation(&wf);
    let one = |job: &str, sub: &str| -> Invocation {
        let found: Vec<&Invocation> =
            all.iter().filter(|i| i.job == job && i.sub.as_deref() == Some(sub)).collect();
        assert_eq!(found.len(), 1, "one `kprof {sub}` in {job}: {found:#?}");
        found[0].clone()
    };
    let archive = one("build", "archive");
    let tar = archive.value("-o").or(archive.value("--output")).expect("archive -o FILE").to_string();
    let base = archive.value("--base").expect("archive --base REV");
    assert_eq!(base, "origin/$GITHUB_BASE_REF");
    assert_eq!(archive.program, "cargo");

    // build uploads the archive and the binary; check downloads that artifact.
    let uploads = uses(&wf, "build", "actions/upload-artifact");
    assert_eq!(uploads.len(), 1);
    let uploaded = paths(uploads[0]);
    assert!(uploaded.contains(&tar) && uploaded.iter().any(|p| p == "cargo-kprof"), "{uploaded:?}");
    let copies_binary = steps(&wf, "build")
        .iter()
        .filter_map(|s| s["run"].as_str())
        .any(|r| r.contains("~/.cargo/bin/cargo-kprof"));
    assert!(copies_binary, "the installed binary is taken along");
    let artifact = uploads[0]["with"]["name"].as_str().unwrap();
    let downloads = uses(&wf, "check", "actions/download-artifact");
    assert_eq!(downloads.len(), 1);
    assert_eq!(downloads[0]["with"]["name"].as_str(), Some(artifact));

    // check runs that binary on that archive, after the doctor.
    let doctor = one("check", "doctor");
    let checked = one("check", "check");
    for inv in [&doctor, &checked] {
        assert_eq!(inv.program, "./cargo-kprof", "{}", inv.line());
    }
    let scripts: Vec<&str> = steps(&wf, "check").iter().filter_map(|s| s["run"].as_str()).collect();
    assert!(scripts.iter().any(|s| s.contains("chmod +x cargo-kprof")), "{scripts:?}");
    let at = |sub: &str| scripts.iter().position(|s| s.contains(&format!("kprof {sub}"))).unwrap();
    assert!(at("doctor") < at("check"), "doctor first");
    assert_eq!(checked.value("--archive"), Some(tar.as_str()));
    let remap = checked.value("--workspace-remap").expect("--workspace-remap DIR");
    let bmf = checked.value("--bmf").expect("--bmf FILE");

    // The reports are kept whatever the verdict: the comparisons and the BMF file.
    let uploads = uses(&wf, "check", "actions/upload-artifact");
    assert_eq!(uploads.len(), 1);
    assert_eq!(uploads[0]["if"], "always()");
    let kept = paths(uploads[0]);
    assert!(kept.iter().any(|p| p.starts_with(&format!("{remap}/")) && p.contains("comparison")), "{kept:?}");
    assert!(kept.iter().any(|p| p == bmf), "{kept:?}");
    // Clearing what a previous check left covers every path kprof writes.
    let clear = scripts.iter().find(|s| s.starts_with("rm -rf")).expect("a step clearing the previous check");
    for path in [remap, bmf, tar.as_str()] {
        assert!(clear.split_whitespace().any(|w| w == path), "{path} not cleared: {clear}");
    }
}
