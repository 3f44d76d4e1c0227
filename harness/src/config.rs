//! Run options from the command line and the environment.
//!
//! Parsing is a pure function over the argument list and an environment lookup
//! ([`Options::parse`]), so every rule here is unit-tested without touching the process
//! environment. A bad value is an error that names the variable or flag and says what
//! would be accepted; nothing is silently defaulted. Command-line flags win over variables.
//!
//! | flag | variable | meaning (default) |
//! |---|---|---|
//! | `--list` | | print case names, one per line; needs no GPU |
//! | `FILTER` (positional) | `KPROF_CASE` | unanchored regex over case names; both must match when both are given |
//! | | `KPROF_PROFILE` | `1`: profiling window for `ncu --profile-from-start off`, no timing (0) |
//! | | `KPROF_LAUNCH_COUNT` | launches per case inside the profiling window (1) |
//! | | `KPROF_DEVICE` | device ordinal (0) |
//! | `--result PATH` | `KPROF_RESULT` | write the JSON result there |
//! | `--mode M` | `KPROF_MODE` | `hot`, `cold` or `both` (both) |
//! | `--max-noise P` | `KPROF_MAX_NOISE` | target relative noise in percent, `%` optional (0.5) |
//! | `--min-samples N` | `KPROF_MIN_SAMPLES` | minimum samples per measurement (10) |
//! | `--min-time T` | `KPROF_MIN_TIME` | minimum GPU time per measurement: `0.5`, `0.5s`, `500ms` (0.5 s) |
//! | `--timeout T` | `KPROF_TIMEOUT` | wall-time limit per measurement (10 s) |
//! | `--no-graph` | `NO_GRAPH` | `1`: plain launches even for cases registered with `.graph()` |
//! | `--no-check` | `KPROF_NO_CHECK` | `1`: skip the correctness checks |
//! | `--quiet` | `KPROF_QUIET` | `1`: no table on stdout |
//! | | `KPROF_SEED` | seed of the random inputs (a fixed default) |
//! | `--bench` | | ignored (`cargo bench` passes it) |

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use regex::Regex;

use crate::stats::StoppingRule;

/// The default seed of random inputs.
pub const DEFAULT_SEED: u64 = 0x6b70_726f_665f_7365;

/// Which timing modes to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModeSelection {
    /// Back-to-back launches with warm caches.
    Hot,
    /// L2 flushed before every sample.
    Cold,
    /// Both, cold first.
    Both,
}

use kprof_contract::env;
pub use kprof_contract::Mode;

impl ModeSelection {
    /// The modes to run, in order.
    pub fn modes(self) -> &'static [Mode] {
        match self {
            ModeSelection::Hot => &[Mode::Hot],
            ModeSelection::Cold => &[Mode::Cold],
            ModeSelection::Both => &[Mode::Cold, Mode::Hot],
        }
    }
}

/// A set of case-name patterns that must all match (unanchored regexes).
#[derive(Debug, Clone, Default)]
pub struct CaseFilter {
    patterns: Vec<(String, Regex)>,
}

impl CaseFilter {
    /// Adds a pattern; `origin` names where it came from (`KPROF_CASE`, `the FILTER argument`)
    /// in error messages.
    pub fn add(&mut self, origin: &str, pattern: &str) -> Result<()> {
        let regex = Regex::new(pattern).with_context(|| {
            format!("{origin}=`{pattern}` is not a valid regular expression (regex crate syntax)")
        })?;
        self.patterns.push((format!("{origin}=`{pattern}`"), regex));
        Ok(())
    }

    /// Whether no pattern was given (everything matches).
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether `name` matches every pattern.
    pub fn matches(&self, name: &str) -> bool {
        self.patterns.iter().all(|(_, re)| re.is_match(name))
    }

    /// Indices of the names that match, in order. No match is an error that lists every name,
    /// so a typo is fixed from the message alone.
    pub fn select(&self, names: &[&str]) -> Result<Vec<usize>> {
        let chosen: Vec<usize> = (0..names.len()).filter(|&i| self.matches(names[i])).collect();
        if chosen.is_empty() {
            let what = if self.patterns.is_empty() {
                "this bench registers no cases".to_string()
            } else {
                let given: Vec<&str> = self.patterns.iter().map(|(o, _)| o.as_str()).collect();
                format!("no case matches {}", given.join(" and "))
            };
            let mut msg = what;
            if !names.is_empty() {
                msg.push_str("; the cases are:");
                for n in names {
                    msg.push_str("\n  ");
                    msg.push_str(n);
                }
            }
            bail!(msg);
        }
        Ok(chosen)
    }
}

/// The profiling window requested by `cargo kprof` (`KPROF_PROFILE=1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfileWindow {
    /// Launches of each selected case inside the window.
    pub launch_count: u32,
}

/// Everything a bench run needs to know, resolved once before any device work.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--help`: print usage and exit.
    pub help: bool,
    /// `--list`: print case names and exit.
    pub list: bool,
    /// Which cases to run.
    pub filter: CaseFilter,
    /// `Some` in profiling mode: warm up, open the window, launch, close it, no timing.
    pub profile: Option<ProfileWindow>,
    /// CUDA device ordinal.
    pub device: usize,
    /// Where to write the JSON result.
    pub result_path: Option<PathBuf>,
    /// Suppress the table on stdout.
    pub quiet: bool,
    /// Timing modes.
    pub modes: ModeSelection,
    /// The stopping rule of every measurement.
    pub rule: StoppingRule,
    /// Whether cases registered with `.graph()` run through a CUDA graph (`NO_GRAPH` unset).
    pub graphs: bool,
    /// Whether to run correctness checks before timing.
    pub check: bool,
    /// Seed of the random inputs.
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            help: false,
            list: false,
            filter: CaseFilter::default(),
            profile: None,
            device: 0,
            result_path: None,
            quiet: false,
            modes: ModeSelection::Both,
            rule: StoppingRule::default(),
            graphs: true,
            check: true,
            seed: DEFAULT_SEED,
        }
    }
}

/// The usage text printed by `--help`.
pub const USAGE: &str = "\
usage: BENCH [--list] [FILTER] [--mode hot|cold|both] [--max-noise PCT] [--min-samples N]
             [--min-time T] [--timeout T] [--result PATH] [--no-graph] [--no-check] [--quiet]

  --list          print the case names, one per line (needs no GPU)
  FILTER          unanchored regex over case names (like KPROF_CASE)
  --mode M        hot (back to back), cold (L2 flushed per sample) or both [both]
  --max-noise P   target relative noise in percent [0.5]
  --min-samples N minimum samples per measurement [10]
  --min-time T    minimum measured GPU time, e.g. 0.5, 0.5s, 500ms [0.5s]
  --timeout T     wall-time limit per measurement [10s]
  --result PATH   write the JSON result to PATH (or KPROF_RESULT)
  --no-graph      plain launches for graph cases (or NO_GRAPH=1)
  --no-check      skip correctness checks (or KPROF_NO_CHECK=1)
  --quiet         no table on stdout (or KPROF_QUIET=1)

environment: KPROF_DEVICE, KPROF_CASE, KPROF_PROFILE, KPROF_LAUNCH_COUNT, KPROF_RESULT,
KPROF_MODE, KPROF_MAX_NOISE, KPROF_MIN_SAMPLES, KPROF_MIN_TIME, KPROF_TIMEOUT, KPROF_SEED,
KPROF_NO_CHECK, KPROF_QUIET, NO_GRAPH.
";

impl Options {
    /// Options of this process: `std::env::args()` (without the program name) and the
    /// environment.
    pub fn from_process() -> Result<Options> {
        let args: Vec<String> =
            std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
        Options::parse(&args, |name| match std::env::var(name) {
            Ok(v) => Some(v),
            Err(std::env::VarError::NotPresent) => None,
            Err(std::env::VarError::NotUnicode(v)) => Some(v.to_string_lossy().into_owned()),
        })
    }

    /// Parses `args` (without the program name) and variables from `env`.
    pub fn parse(args: &[String], env: impl Fn(&str) -> Option<String>) -> Result<Options> {
        let mut o = Options::default();
        // Environment first; flags override.
        o.apply_env(&env)?;
        o.apply_args(args)?;
        Ok(o)
    }

    /// Sets what the `KPROF_*` variables (and `NO_GRAPH`) say; a blank variable is unset.
    fn apply_env(&mut self, env: &impl Fn(&str) -> Option<String>) -> Result<()> {
        let o = self;
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if let Some(v) = var(env::DEVICE) {
            o.device = parse_count(env::DEVICE, &v, "a device ordinal such as 0", 0)?;
        }
        let profile = match var(env::PROFILE) {
            Some(v) => parse_bool(env::PROFILE, &v)?,
            None => false,
        };
        let launch_count = match var(env::LAUNCH_COUNT) {
            Some(v) => parse_count(env::LAUNCH_COUNT, &v, "a launch count of 1 or more", 1)?,
            None => 1,
        };
        let launch_count = u32::try_from(launch_count)
            .map_err(|_| anyhow::anyhow!("KPROF_LAUNCH_COUNT={launch_count} is too large"))?;
        if profile {
            o.profile = Some(ProfileWindow { launch_count });
        }
        if let Some(v) = var(env::CASE) {
            o.filter.add(env::CASE, &v)?;
        }
        if let Some(v) = var(env::RESULT) {
            o.result_path = Some(PathBuf::from(v));
        }
        if let Some(v) = var(env::MODE) {
            o.modes = parse_mode(env::MODE, &v)?;
        }
        if let Some(v) = var(env::MAX_NOISE) {
            o.rule.max_noise = parse_noise(env::MAX_NOISE, &v)?;
        }
        if let Some(v) = var(env::MIN_SAMPLES) {
            o.rule.min_samples = parse_count(env::MIN_SAMPLES, &v, "a sample count", 1)?;
        }
        if let Some(v) = var(env::MIN_TIME) {
            o.rule.min_time = parse_duration(env::MIN_TIME, &v)?;
        }
        if let Some(v) = var(env::TIMEOUT) {
            o.rule.timeout = parse_duration(env::TIMEOUT, &v)?;
        }
        if let Some(v) = env("NO_GRAPH") {
            o.graphs = !parse_bool("NO_GRAPH", &v)?;
        }
        if let Some(v) = var(env::NO_CHECK) {
            o.check = !parse_bool(env::NO_CHECK, &v)?;
        }
        if let Some(v) = var(env::QUIET) {
            o.quiet = parse_bool(env::QUIET, &v)?;
        }
        if let Some(v) = var(env::SEED) {
            o.seed = parse_seed(env::SEED, &v)?;
        }
        Ok(())
    }

    /// Sets what the command-line flags and the FILTER argument say.
    fn apply_args(&mut self, args: &[String]) -> Result<()> {
        let o = self;
        let mut positional: Option<String> = None;
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg.as_str(), None),
            };
            let mut value = |name: &str| -> Result<String> {
                match &inline {
                    Some(v) => Ok(v.clone()),
                    None => it.next().cloned().with_context(|| format!("{name} needs a value; see --help")),
                }
            };
            match flag {
                "--bench" => {}
                "--list" => o.list = true,
                "-h" | "--help" => o.help = true,
                "-q" | "--quiet" => o.quiet = true,
                "--no-graph" => o.graphs = false,
                "--no-check" => o.check = false,
                "--mode" => o.modes = parse_mode("--mode", &value("--mode")?)?,
                "--max-noise" => o.rule.max_noise = parse_noise("--max-noise", &value("--max-noise")?)?,
                "--min-samples" => {
                    o.rule.min_samples =
                        parse_count("--min-samples", &value("--min-samples")?, "a sample count", 1)?
                }
                "--min-time" => o.rule.min_time = parse_duration("--min-time", &value("--min-time")?)?,
                "--timeout" => o.rule.timeout = parse_duration("--timeout", &value("--timeout")?)?,
                "--result" => o.result_path = Some(PathBuf::from(value("--result")?)),
                f if f.starts_with('-') => {
                    bail!("unknown option `{arg}`; see --help for the options this bench accepts")
                }
                _ => {
                    if let Some(first) = &positional {
                        bail!(
                            "two FILTER arguments (`{first}` and `{arg}`); give one regex, \
                             e.g. `{first}|{arg}`"
                        );
                    }
                    positional = Some(arg.clone());
                }
            }
        }
        if let Some(p) = positional {
            o.filter.add("the FILTER argument", &p)?;
        }
        Ok(())
    }
}

fn parse_bool(name: &str, v: &str) -> Result<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => bail!("{name}=`{v}` is not a boolean; use 1 or 0"),
    }
}

fn parse_count(name: &str, v: &str, what: &str, min: usize) -> Result<usize> {
    match v.trim().parse::<usize>() {
        Ok(n) if n >= min => Ok(n),
        Ok(n) => bail!("{name}={n} is too small; expected {what} (at least {min})"),
        Err(_) => bail!("{name}=`{v}` is not a whole number; expected {what}"),
    }
}

fn parse_seed(name: &str, v: &str) -> Result<u64> {
    let t = v.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse::<u64>(),
    };
    parsed.map_err(|_| anyhow::anyhow!("{name}=`{v}` is not a seed; use a decimal or 0x-hex u64"))
}

fn parse_mode(name: &str, v: &str) -> Result<ModeSelection> {
    match v.trim().to_ascii_lowercase().as_str() {
        "hot" => Ok(ModeSelection::Hot),
        "cold" => Ok(ModeSelection::Cold),
        "both" => Ok(ModeSelection::Both),
        _ => bail!("{name}=`{v}` is not a timing mode; use hot, cold or both"),
    }
}

/// Percent, as nvbench's `--max-noise`: `0.5` and `0.5%` both mean 0.005.
fn parse_noise(name: &str, v: &str) -> Result<f64> {
    let t = v.trim();
    let t = t.strip_suffix('%').unwrap_or(t).trim();
    match t.parse::<f64>() {
        Ok(p) if p > 0.0 && p.is_finite() => Ok(p / 100.0),
        _ => bail!("{name}=`{v}` is not a noise target; give percent above 0, e.g. 0.5 or 2%"),
    }
}

fn parse_duration(name: &str, v: &str) -> Result<Duration> {
    let t = v.trim();
    let (num, scale) = if let Some(ms) = t.strip_suffix("ms") {
        (ms, 1e-3)
    } else if let Some(s) = t.strip_suffix('s') {
        (s, 1.0)
    } else {
        (t, 1.0)
    };
    match num.trim().parse::<f64>() {
        Ok(x) if x >= 0.0 && x.is_finite() => Ok(Duration::from_secs_f64(x * scale)),
        _ => bail!("{name}=`{v}` is not a duration; use seconds (2.5, 2.5s) or milliseconds (500ms)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(args: &[&str], env: &[(&str, &str)]) -> Result<Options> {
        let env: HashMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Options::parse(&args, |k| env.get(k).cloned())
    }

    fn err(args: &[&str], env: &[(&str, &str)]) -> String {
        format!("{:#}", parse(args, env).unwrap_err())
    }

    #[test]
    fn defaults_without_args_or_env() {
        let o = parse(&[], &[]).unwrap();
        assert!(!o.list && !o.help && !o.quiet);
        assert!(o.profile.is_none());
        assert!(o.filter.is_empty());
        assert_eq!(o.device, 0);
        assert_eq!(o.modes, ModeSelection::Both);
        assert_eq!(o.rule, StoppingRule::default());
        assert!(o.graphs && o.check);
        assert_eq!(o.seed, DEFAULT_SEED);
    }

    #[test]
    fn profile_window_from_env() {
        let o =
            parse(&[], &[("KPROF_PROFILE", "1"), ("KPROF_CASE", "hgemm_naive"), ("KPROF_LAUNCH_COUNT", "3")])
                .unwrap();
        assert_eq!(o.profile, Some(ProfileWindow { launch_count: 3 }));
        assert!(o.filter.matches("hgemm_naive/m=4096,n=4096,k=4096"));
        assert!(!o.filter.matches("hgemm_tiled/m=4096,n=4096,k=4096"));
    }

    #[test]
    fn launch_count_defaults_to_one_and_profile_zero_is_off() {
        let o = parse(&[], &[("KPROF_PROFILE", "1")]).unwrap();
        assert_eq!(o.profile, Some(ProfileWindow { launch_count: 1 }));
        let o = parse(&[], &[("KPROF_PROFILE", "0"), ("KPROF_LAUNCH_COUNT", "4")]).unwrap();
        assert_eq!(o.profile, None);
        let o = parse(&[], &[("KPROF_PROFILE", "")]).unwrap();
        assert_eq!(o.profile, None);
    }

    #[test]
    fn bad_values_name_the_variable() {
        let e = err(&[], &[("KPROF_PROFILE", "maybe")]);
        assert!(e.contains("KPROF_PROFILE") && e.contains("use 1 or 0"), "{e}");
        let e = err(&[], &[("KPROF_LAUNCH_COUNT", "three")]);
        assert!(e.contains("KPROF_LAUNCH_COUNT") && e.contains("whole number"), "{e}");
        let e = err(&[], &[("KPROF_LAUNCH_COUNT", "0")]);
        assert!(e.contains("KPROF_LAUNCH_COUNT") && e.contains("at least 1"), "{e}");
        let e = err(&[], &[("KPROF_LAUNCH_COUNT", "-2")]);
        assert!(e.contains("KPROF_LAUNCH_COUNT"), "{e}");
        let e = err(&[], &[("KPROF_CASE", "hgemm_(naive")]);
        assert!(e.contains("KPROF_CASE") && e.contains("regular expression"), "{e}");
        let e = err(&[], &[("KPROF_DEVICE", "gpu0")]);
        assert!(e.contains("KPROF_DEVICE"), "{e}");
        let e = err(&[], &[("KPROF_MODE", "warm")]);
        assert!(e.contains("KPROF_MODE") && e.contains("hot, cold or both"), "{e}");
        let e = err(&[], &[("KPROF_MAX_NOISE", "-1")]);
        assert!(e.contains("KPROF_MAX_NOISE"), "{e}");
        let e = err(&[], &[("KPROF_TIMEOUT", "soon")]);
        assert!(e.contains("KPROF_TIMEOUT"), "{e}");
        let e = err(&[], &[("NO_GRAPH", "please")]);
        assert!(e.contains("NO_GRAPH"), "{e}");
    }

    #[test]
    fn bench_flag_is_ignored_and_positional_filters() {
        let o = parse(&["--bench", "tiled"], &[]).unwrap();
        assert!(o.filter.matches("hgemm_tiled/m=1"));
        assert!(!o.filter.matches("hgemm_naive/m=1"));
    }

    #[test]
    fn positional_and_kprof_case_must_both_match() {
        let o = parse(&["m=4096"], &[("KPROF_CASE", "naive")]).unwrap();
        assert!(o.filter.matches("hgemm_naive/m=4096"));
        assert!(!o.filter.matches("hgemm_naive/m=256"));
        assert!(!o.filter.matches("hgemm_tiled/m=4096"));
    }

    #[test]
    fn flags_override_env_and_accept_inline_values() {
        let o = parse(
            &["--mode=hot", "--max-noise", "2%", "--min-samples", "5"],
            &[("KPROF_MODE", "cold"), ("KPROF_MAX_NOISE", "0.1")],
        )
        .unwrap();
        assert_eq!(o.modes, ModeSelection::Hot);
        assert!((o.rule.max_noise - 0.02).abs() < 1e-12);
        assert_eq!(o.rule.min_samples, 5);
    }

    #[test]
    fn noise_is_percent_like_nvbench() {
        let o = parse(&[], &[("KPROF_MAX_NOISE", "0.5")]).unwrap();
        assert!((o.rule.max_noise - 0.005).abs() < 1e-12);
    }

    #[test]
    fn durations_accept_seconds_and_milliseconds() {
        let o = parse(&["--min-time", "250ms", "--timeout", "2.5s"], &[]).unwrap();
        assert_eq!(o.rule.min_time, Duration::from_millis(250));
        assert_eq!(o.rule.timeout, Duration::from_millis(2500));
        let o = parse(&[], &[("KPROF_MIN_TIME", "1")]).unwrap();
        assert_eq!(o.rule.min_time, Duration::from_secs(1));
    }

    #[test]
    fn switches_from_env() {
        let o = parse(
            &[],
            &[
                ("NO_GRAPH", "1"),
                ("KPROF_NO_CHECK", "true"),
                ("KPROF_QUIET", "1"),
                ("KPROF_DEVICE", "2"),
                ("KPROF_RESULT", "/tmp/r.json"),
                ("KPROF_SEED", "0x10"),
            ],
        )
        .unwrap();
        assert!(!o.graphs && !o.check && o.quiet);
        assert_eq!(o.device, 2);
        assert_eq!(o.result_path, Some(PathBuf::from("/tmp/r.json")));
        assert_eq!(o.seed, 16);
    }

    #[test]
    fn unknown_flags_and_missing_values_are_errors() {
        assert!(err(&["--frobnicate"], &[]).contains("unknown option `--frobnicate`"));
        assert!(err(&["--mode"], &[]).contains("--mode needs a value"));
        assert!(err(&["a", "b"], &[]).contains("two FILTER arguments"));
    }

    #[test]
    fn list_and_help() {
        assert!(parse(&["--list"], &[]).unwrap().list);
        assert!(parse(&["--bench", "--list"], &[]).unwrap().list);
        assert!(parse(&["-h"], &[]).unwrap().help);
    }

    #[test]
    fn select_lists_cases_when_nothing_matches() {
        let mut f = CaseFilter::default();
        f.add("KPROF_CASE", "nope").unwrap();
        let names = ["copy/n=1", "fma/iters=8"];
        let e = format!("{:#}", f.select(&names).unwrap_err());
        assert!(e.contains("no case matches KPROF_CASE=`nope`"), "{e}");
        assert!(e.contains("\n  copy/n=1\n  fma/iters=8"), "{e}");
    }

    #[test]
    fn select_is_unanchored_and_keeps_registration_order() {
        let mut f = CaseFilter::default();
        f.add("KPROF_CASE", "gemm").unwrap();
        let names = ["hgemm_tiled/m=1", "copy/n=1", "hgemm_naive/m=1"];
        assert_eq!(f.select(&names).unwrap(), vec![0, 2]);
        assert_eq!(CaseFilter::default().select(&names).unwrap(), vec![0, 1, 2]);
    }

    #[test]
    fn escaped_kernel_names_match_literally() {
        // cargo kprof's default case regex is the regex-escaped kernel name.
        let mut f = CaseFilter::default();
        f.add("KPROF_CASE", &regex::escape("a.b")).unwrap();
        assert_eq!(f.select(&["a.b/n=1", "axb/n=1"]).unwrap(), vec![0]);
    }
}
