//! The ncu argv a recorded run used, read from its `commands.sh`: what a replay's fake ncu
//! must be given, written by kprof on the GPU machine rather than computed by the code
//! under test.

use std::path::Path;

use super::shell_words;

/// The ncu arguments of each stage line of a commands.sh, in order.
pub fn recorded_ncu_argv(commands_sh: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(commands_sh)
        .unwrap()
        .lines()
        .filter(|l| l.contains("--log-file"))
        .map(|l| {
            let words = shell_words(l);
            let at = words.iter().position(|w| w == "ncu" || w.ends_with("/ncu")).expect("an ncu word");
            words[at + 1..].to_vec()
        })
        .collect()
}

/// `argv` without the census's `--cache-control none` and with the metrics added since the
/// recorded runs left out of its `--metrics`
/// ([`super::fake_ncu::ADDED_SINCE_THE_RECORDED_ARGV`]).
pub fn without_later_additions(argv: &[String]) -> Vec<String> {
    let added = super::fake_ncu::ADDED_SINCE_THE_RECORDED_ARGV;
    let mut out = Vec::new();
    for (i, a) in argv.iter().enumerate() {
        // The census's `--cache-control none` (December 2026), which the recordings predate.
        let census_cache = |j: usize| {
            argv.get(j).is_some_and(|x| x == "--cache-control")
                && argv.get(j + 1).is_some_and(|x| x == "none")
        };
        if census_cache(i) || (i > 0 && census_cache(i - 1)) {
            continue;
        }
        if i > 0 && argv[i - 1] == "--metrics" {
            out.push(a.split(',').filter(|m| !added.contains(m)).collect::<Vec<_>>().join(","));
        } else {
            out.push(a.clone());
        }
    }
    out
}

/// What may differ between two machines: the log file's directory and the program; and
/// what the stages ask for that the recorded runs predate (see [`without_later_additions`]).
pub fn normalised(argv: &[String]) -> Vec<String> {
    let argv = without_later_additions(argv);
    let mut out = Vec::new();
    let mut prev = "";
    for (i, a) in argv.iter().enumerate() {
        let last = i + 1 == argv.len();
        let a = if prev == "--log-file" {
            format!(".../{}", Path::new(a).file_name().unwrap().to_string_lossy())
        } else if last {
            // The program: the replays run a stand-in built here.
            "<program>".to_string()
        } else {
            a.clone()
        };
        out.push(a);
        prev = &argv[i];
    }
    out
}

/// kprof's ncu calls (each an argv after `ncu`) in the form of the recordings made before
/// the source page was imported from basic's report: basic's `--section SourceCounters
/// --export REPORT --force-overwrite` left out, and each `--import REPORT` call written as
/// the source run it replaces: basic's options before `--metrics` (clock control, window,
/// filter), `--section SourceCounters`, the import's page options and log file, then
/// basic's program. The recorded calls are compared with these: both ask ncu for the same
/// page of the same launches.
pub fn as_before_import(calls: &[Vec<String>]) -> Vec<Vec<String>> {
    let mut basic: Option<&Vec<String>> = None;
    calls
        .iter()
        .map(|call| {
            if call.iter().any(|a| a == "--export") {
                basic = Some(call);
                let at = call.iter().position(|a| a == "--export").unwrap();
                assert_eq!(call[at - 2..at], ["--section", "SourceCounters"], "{call:?}");
                assert_eq!(call[at + 2], "--force-overwrite", "{call:?}");
                assert_eq!(call[at + 3], "--metrics", "{call:?}");
                return [&call[..at - 2], &call[at + 3..]].concat();
            }
            if call.first().map(String::as_str) != Some("--import") {
                return call.clone();
            }
            let b = basic.expect("an import after the basic run that wrote its report");
            let report = b.iter().position(|a| a == "--export").map(|i| &b[i + 1]);
            assert_eq!(report, Some(&call[1]), "the import reads basic's report: {call:?}");
            let metrics = b.iter().position(|a| a == "--section").unwrap();
            let program = b.iter().position(|a| a == "--log-file").unwrap() + 2;
            let section = ["--section".to_string(), "SourceCounters".to_string()];
            [&b[..metrics], &section[..], &call[2..], &b[program..]].concat()
        })
        .collect()
}
