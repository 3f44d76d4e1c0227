//! The command line: `cargo kprof [OPTIONS] [-- BENCH_ARGS]` and its subcommands.
//!
//! Parsing is pure (clap derive, no I/O). The structs here stop at [`crate::commands`]:
//! each turns into typed values ([`ProfileArgs::request`], [`OutputArgs::shell`]) that
//! [`crate::plan::resolve`] and the rest of the pipeline take, the way ripgrep separates
//! its low-level and high-level arguments. Target selection flags are cargo's own, with
//! cargo's wording.

use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};

use crate::config::ClockControl;
use crate::shell::Shell;
pub use crate::shell::{ColorChoice, MessageFormat};
pub use ab::AbArgs;
pub use bisect::BisectArgs;
pub use check::{parse_tolerance, CheckArgs};
pub use exports::ExportArgs;
pub use init::InitArgs;
pub use kernel::KernelOptions;
pub use launchers::LauncherArgs;
pub use merge::MergeArgs;

mod ab;
mod bisect;
mod check;
mod exports;
mod init;
mod kernel;
mod launchers;
mod merge;
mod request;

/// `cargo` as clap sees it: cargo runs us as `cargo-kprof kprof ...`.
#[derive(Debug, Parser)]
#[command(name = "cargo", bin_name = "cargo", styles = clap_cargo_styles())]
pub enum CargoCli {
    /// Profile CUDA kernels with Nsight Compute: build with line info, collect in stages, diagnose.
    Kprof(KprofArgs),
}

/// `cargo kprof`.
#[derive(Debug, Args)]
#[command(
    version,
    about = "Profile CUDA kernels of Rust projects with Nsight Compute, evidence first",
    args_conflicts_with_subcommands = true,
    after_help = "`cargo kprof --help` shows every option. `cargo kprof list` lists the configured kernels, `cargo kprof init` \
                  configures a project. Exit codes: docs/reference.md (3: configuration, 5: ncu/GPU missing, 6: no kernel matched)."
)]
pub struct KprofArgs {
    /// What to do; without a subcommand, profile the selected kernels.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Profiling options.
    #[command(flatten)]
    pub profile: ProfileArgs,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the configured kernels with their index
    List(ListArgs),
    /// Write a first configuration: an entry per harness case and per other bench, example or bin
    Init(InitArgs),
    /// Build a profile directory from existing ncu CSV exports and analyse them
    Import(ImportArgs),
    /// Re-analyse a profile directory: summaries, verdict, hotspots, final_report.md
    Report(ReportArgs),
    /// Compare a profile with a baseline: comparison/regression_report.md and regression.json
    Compare(CompareArgs),
    /// Profile (or only time) the selected kernels and fail on regressions against a baseline, for CI
    Check(Box<CheckArgs>),
    /// Find the first revision where a kernel got slower: A/B checks along the history from --good
    Bisect(Box<BisectArgs>),
    /// Check what profiling needs on this machine, and say how to fix what is missing
    Doctor(DoctorArgs),
    /// Explain a limiter, metric, section, stage or classification; without a name, list them
    Explain(ExplainArgs),
    /// Build and pack the selected targets and their plan, to profile on another machine
    Archive(Box<ArchiveArgs>),
    /// Profile from an archive, on a machine without cargo
    Run(RunArgs),
    /// Merge the profile roots of shards into one directory with one index
    Merge(MergeArgs),
}

impl KprofArgs {
    /// The output options of the command line, when its subcommand has them.
    pub fn output(&self) -> Option<&OutputArgs> {
        match &self.command {
            None => Some(&self.profile.output),
            Some(Command::List(a)) => Some(&a.output),
            Some(Command::Init(a)) => Some(&a.output),
            Some(Command::Compare(a)) => Some(&a.output),
            Some(Command::Check(a)) => Some(&a.profile.output),
            Some(Command::Bisect(a)) => Some(&a.profile.output),
            Some(Command::Archive(a)) => Some(&a.profile.output),
            Some(Command::Run(a)) => Some(&a.output),
            Some(Command::Import(a)) => Some(&a.output),
            Some(Command::Report(a)) => Some(&a.output),
            Some(Command::Doctor(a)) => Some(&a.output),
            Some(Command::Merge(a)) => Some(&a.output),
            Some(Command::Explain(_)) => None,
        }
    }
}

impl Command {
    /// The subcommand's name.
    pub fn name(&self) -> &'static str {
        match self {
            Command::List(_) => "list",
            Command::Init(_) => "init",
            Command::Import(_) => "import",
            Command::Report(_) => "report",
            Command::Compare(_) => "compare",
            Command::Check(_) => "check",
            Command::Bisect(_) => "bisect",
            Command::Doctor(_) => "doctor",
            Command::Explain(_) => "explain",
            Command::Archive(_) => "archive",
            Command::Run(_) => "run",
            Command::Merge(_) => "merge",
        }
    }
}

/// `cargo kprof compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The profile directory to compare (default: the workspace's newest profile)
    #[arg(value_name = "CURRENT_DIR")]
    pub current: Option<PathBuf>,
    /// What to compare against: `auto` (the newest earlier profile of the same kernel,
    /// arguments and GPU), a profile directory, or a baseline saved with --save-baseline
    #[arg(long, value_name = "auto|DIR|NAME", default_value = "auto")]
    pub baseline: String,
    /// Changes within this many percent count as unchanged (default: the kernel's
    /// `tolerance-pct`, else 2.0)
    // Values starting with `-` are values here, so that `-1` gets parse_tolerance's message.
    #[arg(long, value_name = "PCT", value_parser = parse_tolerance, allow_hyphen_values = true)]
    pub tolerance_pct: Option<f64>,
    /// Exit with code 10 when the duration regressed beyond the tolerance (after writing the reports)
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Compare even when the kernel or its arguments, the GPU, the ncu version or the clock
    /// control differ (the report warns)
    #[arg(long)]
    pub force: bool,
    /// Also save CURRENT_DIR's summaries as baseline NAME (profile/baselines/NAME/)
    #[arg(long, value_name = "NAME")]
    pub save_baseline: Option<String>,
    /// Also draw comparison/comparison.png: before and after side by side
    #[arg(long)]
    pub visual: bool,
    /// Path to Cargo.toml (to find the newest profile when CURRENT_DIR is not given)
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Output and verbosity.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Analysis options shared by `import` and `report`.
#[derive(Debug, Args, Clone, Default)]
pub struct AnalysisArgs {
    /// Bottleneck rules to use instead of the built-in rules/bottleneck.yaml
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// Report template to use instead of the built-in templates/final_report.md
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// The largest raw page to read, in MiB (default 512)
    #[arg(long, value_name = "MB", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_input_mb: Option<u64>,
}

/// `cargo kprof import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// An ncu raw-page CSV export (`--csv --page raw`), plain or gzip-compressed; several: `--raw a.csv b.csv.gz`
    #[arg(long = "raw", value_name = "FILE", required = true, num_args = 1..)]
    pub raw: Vec<PathBuf>,
    /// An ncu source-page export (`--csv --page source --print-source cuda,sass`), plain or gzip-compressed
    #[arg(long, value_name = "FILE")]
    pub source: Option<PathBuf>,
    /// An ncu details-page export (`--csv --page details`), plain or gzip-compressed
    #[arg(long, value_name = "FILE")]
    pub details: Option<PathBuf>,
    /// Analyse only kernels matching this hint (regex `.*HINT.*`); default: every kernel
    #[arg(long, value_name = "HINT", value_parser = kernel::parse_kernel_hint)]
    pub kernel: Option<crate::model::filter::KernelHint>,
    /// The profile directory to create (must not exist or be empty)
    #[arg(long, value_name = "DIR", required = true)]
    pub output_dir: PathBuf,
    /// Rules and template.
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// Output and verbosity.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `cargo kprof report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The profile directory
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Open the profile's report.html in a browser once written ($BROWSER when set, else
    /// the desktop's default)
    #[arg(long)]
    pub open: bool,
    /// Rules and template.
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// Output and verbosity.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `cargo kprof archive`.
#[derive(Debug, Args)]
pub struct ArchiveArgs {
    /// The archive to write (a tar file; must not exist)
    #[arg(short = 'o', long = "output", value_name = "FILE", required = true)]
    pub output: PathBuf,
    /// Also build and pack git revision REV, for `check --archive` to compare with (no REV:
    /// the merge base with the upstream branch, or with origin/$GITHUB_BASE_REF in GitHub Actions)
    #[arg(long, value_name = "REV", num_args = 0..=1, default_missing_value = ab::MERGE_BASE, value_parser = ab::parse_base)]
    pub base: Option<crate::model::ab::BaseRev>,
    /// Build and pack every first-parent revision of GOOD..BAD (GOOD alone: up to HEAD),
    /// identical builds once, for `bisect --archive` to search (needs -k KERNEL)
    #[arg(long, value_name = "GOOD..BAD", conflicts_with = "base")]
    pub bisect: Option<String>,
    /// Launchers to write next to the archive.
    #[command(flatten)]
    pub launchers: LauncherArgs,
    /// What to profile, as for `cargo kprof`.
    #[command(flatten)]
    pub profile: ProfileArgs,
}

/// `cargo-kprof kprof run --archive`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// An archive written by `cargo kprof archive`
    #[arg(long, value_name = "FILE", required = true)]
    pub archive: PathBuf,
    /// Where to unpack it and write the profiles (must not exist or be empty)
    #[arg(long, value_name = "DIR", default_value = "kprof-archive")]
    pub workspace_remap: PathBuf,
    /// Stop a stage's ncu (and the program) after this many seconds
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: Option<u64>,
    /// Run ncu as `sudo -n "$(cat profile/ncu_path)"` (needs a NOPASSWD rule for that ncu)
    #[arg(hide_short_help = true, long)]
    pub sudo: bool,
    /// Which archived kernels, and what to change in their plans, as for `cargo kprof`.
    #[command(flatten)]
    pub kernel: KernelOptions,
    /// Output and verbosity.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `cargo kprof doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Path to Cargo.toml (its workspace's profile/ncu_path is checked)
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Check the `--sudo` setup: profile/ncu_path and a passwordless `sudo -n <ncu> --version`
    #[arg(long)]
    pub sudo: bool,
    /// Also check that the shared libraries the programs of this archive load resolve here
    /// (with this shell's LD_LIBRARY_PATH)
    #[arg(long, value_name = "FILE")]
    pub archive: Option<PathBuf>,
    /// Output and verbosity.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `cargo kprof explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A limiter the reports name (`uncoalesced-global`), a metric
    /// (`sm__throughput.avg.pct_of_peak_sustained_elapsed`), section (`Occupancy`), stage
    /// (`memory`), classification (`memory-bound`) or question; without NAME, every topic.
    /// Case, `_` and `-` do not matter, and the start of one name is enough (`uncoalesced`);
    /// anything else suggests the closest names
    #[arg(value_name = "NAME")]
    pub topic: Option<String>,
}

/// `cargo kprof list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Which packages.
    #[command(flatten)]
    pub packages: PackageSelection,
    /// Show only the kernel with this index
    #[arg(long, value_name = "N")]
    pub index: Option<usize>,
    /// Output and verbosity.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Manifest and package selection, as cargo spells it.
#[derive(Debug, Args, Default, Clone)]
pub struct PackageSelection {
    /// Path to Cargo.toml
    #[arg(long, value_name = "PATH", help_heading = "Manifest Options")]
    pub manifest_path: Option<PathBuf>,
    /// Package(s) to profile
    #[arg(short = 'p', long = "package", value_name = "SPEC", help_heading = "Package Selection")]
    pub packages: Vec<String>,
    /// Profile every configured kernel of the workspace
    #[arg(long, help_heading = "Package Selection")]
    pub workspace: bool,
}

/// Output format and verbosity.
#[derive(Debug, Args, Clone)]
pub struct OutputArgs {
    /// Output format
    #[arg(long, value_enum, value_name = "FMT", default_value_t = MessageFormat::Human)]
    pub message_format: MessageFormat,
    /// Use verbose output (-vv very verbose)
    #[arg(short, long, action = clap::ArgAction::Count, conflicts_with = "quiet")]
    pub verbose: u8,
    /// Do not print progress and notes
    #[arg(short, long)]
    pub quiet: bool,
    /// Coloring
    #[arg(hide_short_help = true, long, value_enum, value_name = "WHEN", default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

impl Default for OutputArgs {
    fn default() -> Self {
        OutputArgs {
            message_format: MessageFormat::Human,
            verbose: 0,
            quiet: false,
            color: ColorChoice::Auto,
        }
    }
}

impl OutputArgs {
    /// The [`Shell`] these options ask for.
    pub fn shell(&self) -> Shell {
        Shell::new(self.message_format, self.quiet, self.verbose, self.color.resolve())
            .with_stdout_color(self.color.resolve_stdout())
    }
}

/// `--clock-control`: the values and what they mean, parsed into [`ClockControl`].
fn clock_control_parser() -> impl TypedValueParser<Value = ClockControl> {
    PossibleValuesParser::new([
        PossibleValue::new("none").help("Leave the GPU clocks alone (default)"),
        PossibleValue::new("base").help("Lock the clocks to base during profiling"),
    ])
    .map(|s| if s == "base" { ClockControl::Base } else { ClockControl::None })
}

/// Options of the default action: profile.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// Packages and manifest.
    #[command(flatten)]
    pub packages: PackageSelection,

    /// Profile only the named bench target
    #[arg(long, value_name = "NAME", help_heading = "Target Selection", group = "target")]
    pub bench: Option<String>,
    /// Profile only the named example
    #[arg(long, value_name = "NAME", help_heading = "Target Selection", group = "target")]
    pub example: Option<String>,
    /// Profile only the named binary
    #[arg(long, value_name = "NAME", help_heading = "Target Selection", group = "target")]
    pub bin: Option<String>,

    /// Space or comma separated list of features to activate
    #[arg(
        hide_short_help = true,
        short = 'F',
        long,
        value_name = "FEATURES",
        help_heading = "Feature Selection"
    )]
    pub features: Vec<String>,
    /// Activate all available features
    #[arg(hide_short_help = true, long, help_heading = "Feature Selection")]
    pub all_features: bool,
    /// Do not activate the `default` feature
    #[arg(hide_short_help = true, long, help_heading = "Feature Selection")]
    pub no_default_features: bool,

    /// Build artifacts with the specified profile
    #[arg(
        hide_short_help = true,
        long,
        value_name = "PROFILE-NAME",
        default_value = "release",
        help_heading = "Compilation Options"
    )]
    pub profile: String,
    /// Directory for all generated artifacts (kprof builds in its `kprof/` subdirectory)
    #[arg(hide_short_help = true, long, value_name = "DIRECTORY", help_heading = "Compilation Options")]
    pub target_dir: Option<PathBuf>,

    /// Which kernels, their launch window, stages, environment and profile directory.
    #[command(flatten)]
    pub kernel: KernelOptions,
    /// Profile the configured kernel with this index (see `cargo kprof list`)
    #[arg(hide_short_help = true, long, value_name = "N", help_heading = "Profiling Options", conflicts_with_all = ["kernels", "workspace"])]
    pub index: Option<usize>,
    /// Collect this ncu section set in one stage instead of kprof's stages
    #[arg(long, value_name = "NAME", help_heading = "Profiling Options", conflicts_with = "stages")]
    pub set: Option<String>,
    /// Collect these ncu sections in one stage instead of kprof's stages (with --set: the
    /// set's sections plus these, as ncu does)
    #[arg(
        hide_short_help = true,
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Profiling Options",
        conflicts_with = "stages"
    )]
    pub sections: Vec<String>,
    /// GPU clock control during profiling
    #[arg(long, value_name = "MODE", value_parser = clock_control_parser(), help_heading = "Profiling Options")]
    pub clock_control: Option<ClockControl>,
    /// Stop a stage's ncu (and the program) after this many seconds
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Profiling Options")]
    pub timeout: Option<u64>,
    /// Run ncu as `sudo -n "$(cat profile/ncu_path)"` (needs a NOPASSWD rule for that ncu)
    #[arg(hide_short_help = true, long, help_heading = "Profiling Options")]
    pub sudo: bool,

    /// Output and verbosity.
    #[command(flatten)]
    pub output: OutputArgs,

    /// Arguments passed to the profiled program
    #[arg(last = true, value_name = "BENCH_ARGS")]
    pub bench_args: Vec<String>,
}

fn clap_cargo_styles() -> clap::builder::Styles {
    use clap::builder::styling::{AnsiColor, Effects};
    clap::builder::Styles::styled()
        .header(AnsiColor::Green.on_default().effects(Effects::BOLD))
        .usage(AnsiColor::Green.on_default().effects(Effects::BOLD))
        .literal(AnsiColor::Cyan.on_default().effects(Effects::BOLD))
        .placeholder(AnsiColor::Cyan.on_default())
        .error(AnsiColor::Red.on_default().effects(Effects::BOLD))
        .valid(AnsiColor::Cyan.on_default().effects(Effects::BOLD))
        .invalid(AnsiColor::Yellow.on_default().effects(Effects::BOLD))
}

/// Parses the process arguments, accepting both `cargo-kprof kprof ...` (how cargo
/// runs us) and `cargo-kprof ...` (run directly).
pub fn parse_from<I, T>(args: I) -> Result<KprofArgs, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    if args.get(1).map(|a| a != "kprof").unwrap_or(true) {
        args.insert(1.min(args.len()), "kprof".into());
    }
    CargoCli::try_parse_from(args).map(|CargoCli::Kprof(a)| a)
}

#[cfg(test)]
mod tests {
    use super::kernel::StagesArg;
    use super::*;
    use crate::model::filter::KernelHint;
    use crate::model::stage::{Stage, StageSelection};

    fn parse(line: &str) -> Result<KprofArgs, clap::Error> {
        parse_from(std::iter::once("cargo-kprof").chain(line.split_whitespace()))
    }

    #[test]
    fn valid_command_lines() {
        let a = parse("kprof --kernel hgemm --dry-run").unwrap();
        assert_eq!(a.profile.kernel.kernels, [KernelHint::parse("hgemm")]);
        assert!(a.profile.kernel.dry_run);
        assert_eq!(a.profile.profile, "release");

        // Run directly, without cargo's `kprof` word.
        let a = parse("--kernel copy --manifest-path demo/Cargo.toml").unwrap();
        assert_eq!(
            a.profile.packages.manifest_path.as_deref(),
            Some(std::path::Path::new("demo/Cargo.toml"))
        );

        let a = parse("kprof -p demo --bench hgemm -k hgemm -k copy --stages basic,memory --launch-count 3 --env NO_GRAPH=1 -- --m 4096").unwrap();
        assert_eq!(a.profile.packages.packages, ["demo"]);
        assert_eq!(a.profile.bench.as_deref(), Some("hgemm"));
        assert_eq!(a.profile.kernel.kernels, [KernelHint::parse("hgemm"), KernelHint::parse("copy")]);
        let basic_memory = StageSelection::List(vec![Stage::Basic, Stage::Memory]);
        assert_eq!(a.profile.kernel.stages, Some(StagesArg(Ok(basic_memory))));
        assert_eq!(a.profile.kernel.launch_count, Some(3));
        assert_eq!(a.profile.kernel.envs, [("NO_GRAPH".to_string(), "1".to_string())]);
        assert_eq!(a.profile.bench_args, ["--m", "4096"]);

        let a = parse("kprof --set full --sections LaunchStats,Occupancy --index 2").unwrap();
        assert_eq!(a.profile.sections, ["LaunchStats", "Occupancy"]);
        assert_eq!(a.profile.index, Some(2));

        let a = parse("kprof list --manifest-path x/Cargo.toml --message-format json").unwrap();
        match a.command {
            Some(Command::List(l)) => {
                assert_eq!(l.output.message_format, MessageFormat::Json);
                assert!(l.packages.manifest_path.is_some());
            }
            other => panic!("expected list, got {other:?}"),
        }
        let a = parse("kprof --workspace --clock-control base -vv --color never").unwrap();
        assert!(!a.profile.sudo);
        assert!(a.profile.packages.workspace);
        assert_eq!(a.profile.clock_control, Some(ClockControl::Base));
        assert_eq!(a.profile.output.verbose, 2);
        // Several files after one --raw, as the usage line `--raw FILE...` says.
        match parse("kprof import --raw a.csv b.csv --output-dir out").unwrap().command {
            Some(Command::Import(i)) => assert_eq!(i.raw, [PathBuf::from("a.csv"), PathBuf::from("b.csv")]),
            other => panic!("{other:?}"),
        }
        match parse("kprof import --raw a.csv --raw b.csv --output-dir out --kernel gemm").unwrap().command {
            Some(Command::Import(i)) => {
                assert_eq!(i.raw.len(), 2);
                assert_eq!(i.kernel, Some(KernelHint::parse("gemm")));
            }
            other => panic!("expected import, got {other:?}"),
        }
        assert!(parse("kprof --kernel copy --sudo").unwrap().profile.sudo);
        match parse("kprof doctor --sudo").unwrap().command {
            Some(Command::Doctor(d)) => assert!(d.sudo),
            other => panic!("expected doctor, got {other:?}"),
        }
        match parse("kprof run --archive a.tar --sudo").unwrap().command {
            Some(Command::Run(r)) => assert!(r.sudo),
            other => panic!("expected run, got {other:?}"),
        }
        let line = "kprof run --archive a.tar -k copy --kernel-regex c.py --stages memory --launch-skip 2 \
                    --launch-count 2 --env X=1 --output-dir out --dry-run";
        match parse(line).unwrap().command {
            Some(Command::Run(r)) => {
                let k = &r.kernel;
                assert_eq!(
                    (k.kernels.as_slice(), k.kernel_regex.as_deref()),
                    (&[KernelHint::parse("copy")][..], Some("c.py"))
                );
                let memory = StagesArg(Ok(StageSelection::List(vec![Stage::Memory])));
                assert_eq!(
                    (k.stages.as_ref(), k.launch_skip, k.launch_count),
                    (Some(&memory), Some(2), Some(2))
                );
                assert_eq!(k.envs, [("X".to_string(), "1".to_string())]);
                assert!(k.dry_run && k.output_dir.is_some());
            }
            other => panic!("expected run, got {other:?}"),
        }
        match parse("kprof explain memory-bound").unwrap().command {
            Some(Command::Explain(e)) => assert_eq!(e.topic.as_deref(), Some("memory-bound")),
            other => panic!("expected explain, got {other:?}"),
        }
    }

    #[test]
    fn init_command_lines() {
        match parse("kprof init -p gpu --stdout").unwrap().command {
            Some(Command::Init(i)) => {
                assert!(i.dry_run && i.packages == ["gpu"] && i.manifest_path.is_none())
            }
            other => panic!("expected init, got {other:?}"),
        }
        assert!(parse("kprof init --kernel x").is_err());
    }

    #[test]
    fn invalid_command_lines() {
        let cases: &[(&str, &str)] = &[
            ("kprof --bench a --example b", "cannot be used with"),
            ("kprof --index 1 --kernel x", "cannot be used with"),
            ("kprof --index 1 --workspace", "cannot be used with"),
            ("kprof --stages auto --set full", "cannot be used with"),
            ("kprof --launch-count 0", "0 is not in 1.."),
            ("kprof --launch-skip -1", "unexpected argument"),
            ("kprof --env NOEQUALS", "is not KEY=VAL"),
            ("kprof --env 1BAD=x", "not a valid environment variable name"),
            ("kprof -v -q", "cannot be used with"),
            ("kprof --message-format xml", "invalid value 'xml'"),
            ("kprof --clock-control max", "invalid value 'max'"),
            ("kprof --frobnicate", "unexpected argument '--frobnicate'"),
            ("kprof list --kernel x", "unexpected argument '--kernel'"),
            ("kprof import --output-dir d", "--raw <FILE>"),
            ("kprof import --raw a.csv", "--output-dir <DIR>"),
            ("kprof compare --tolerance-pct nan", "`nan` is not a tolerance"),
            ("kprof compare --tolerance-pct -1", "`-1` is not a tolerance"),
            ("kprof check --baseline b --tolerance-pct inf", "`inf` is not a tolerance"),
            // The archive run parses these as the profile command does.
            ("kprof run --archive a.tar --launch-count 0", "0 is not in 1.."),
            ("kprof run --archive a.tar --env NOEQUALS", "is not KEY=VAL"),
            ("kprof run --archive a.tar --set full", "unexpected argument '--set'"),
        ];
        for (line, needle) in cases {
            let err = parse(line).expect_err(line).to_string();
            assert!(err.contains(needle), "{line}: expected {needle:?} in\n{err}");
        }
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        CargoCli::command().debug_assert();
    }
}
