//! One stage of a plan as one exact `ncu` command line.
//!
//! What each stage collects is defined in [`super::stages`]; this module adds the
//! filter, the launch window, clock control and the output file around it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::hot_lines::HotLines;
pub use super::hot_lines::SOURCE_SECTION;
use crate::model::filter::KernelFilter;
use crate::model::kinds::Privilege;
pub use crate::model::kinds::{ClockControl, LaunchWindow};
use crate::model::stage::Stage;
use crate::process::ProcessBuilder;

/// What a stage asks ncu to collect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum StageCollection {
    /// One cheap pass over every kernel (durations only), to find the kernel to profile
    /// when no hint was given.
    Discovery,
    /// One of our named stages.
    Named(Stage),
    /// A user's `--set`/`--sections` request, passed through as given.
    Custom {
        /// `--set NAME`, if any.
        set: Option<String>,
        /// `--section NAME` for each.
        sections: Vec<String>,
    },
    /// Several of our metric-list stages in one run (the planner's choice, see
    /// [`super::stages::merged::mergeable`]): the union of their metrics, one raw page that each
    /// kernel's stages are cut from by column ([`super::stages::merged::owns_column`]).
    Merged(Vec<Stage>),
}

impl StageCollection {
    /// Whether this run collects basic: basic's own run, or basic merged with follow-ups.
    pub fn collects_basic(&self) -> bool {
        match self {
            StageCollection::Named(s) => *s == Stage::Basic,
            StageCollection::Merged(stages) => stages.contains(&Stage::Basic),
            _ => false,
        }
    }

    /// The stages whose metrics this run collects (none for discovery and custom sets).
    pub fn stages(&self) -> Vec<Stage> {
        match self {
            StageCollection::Named(s) => vec![*s],
            StageCollection::Merged(stages) => stages.clone(),
            _ => Vec::new(),
        }
    }

    /// A short name for file names and messages.
    pub fn name(&self) -> &str {
        match self {
            StageCollection::Discovery => "discovery",
            StageCollection::Named(s) => s.name(),
            StageCollection::Custom { .. } => "custom",
            StageCollection::Merged(_) => "merged",
        }
    }

    /// How messages show it: the name, or a merged run's stages (`basic+memory`).
    pub fn label(&self) -> String {
        match self {
            StageCollection::Merged(stages) => stages.iter().map(|s| s.name()).collect::<Vec<_>>().join("+"),
            other => other.name().to_string(),
        }
    }

    /// The ncu options that select what is collected and how it is printed.
    pub fn ncu_args(&self) -> Vec<String> {
        match self {
            StageCollection::Discovery => {
                ["--metrics", "gpu__time_duration.sum", "--csv", "--page", "raw"].map(String::from).to_vec()
            }
            StageCollection::Named(stage) => super::stages::definition(*stage).ncu_args(),
            StageCollection::Merged(stages) => super::stages::merged::merged_args(stages),
            StageCollection::Custom { set, sections } => {
                let mut out = Vec::new();
                if let Some(set) = set {
                    out.extend(["--set".to_string(), set.clone()]);
                }
                for s in sections {
                    out.extend(["--section".to_string(), s.clone()]);
                }
                out.extend(["--csv".to_string(), "--page".to_string(), "raw".to_string()]);
                out
            }
        }
    }
}

/// The program being profiled: what it is, its arguments, environment and directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetCommand {
    /// The executable.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables (sorted; includes the harness' `KPROF_*` contract).
    pub env: std::collections::BTreeMap<String, String>,
    /// The working directory.
    pub cwd: PathBuf,
    /// The folder of NVRTC output the harness runs of this invocation share
    /// (`KPROF_PTX_CACHE`, see [`crate::profile::ptx_cache`]): given to the program when it
    /// runs as this user, and never shown in a command (it exists only while `cargo kprof`
    /// runs, and changes how fast the program starts, not what it does).
    #[serde(skip)]
    pub ptx_cache: Option<PathBuf>,
}

impl TargetCommand {
    /// Gives `cmd`, which starts this program as this user, the PTX cache (unshown).
    pub fn pass_ptx_cache(&self, cmd: &mut crate::process::ProcessBuilder) {
        if let Some(dir) = &self.ptx_cache {
            cmd.env_unshown(kprof_contract::env::PTX_CACHE, dir.to_string_lossy());
        }
    }
}

/// Everything needed to write one stage's ncu command.
#[derive(Debug, Clone)]
pub struct StageRun<'a> {
    /// What to collect.
    pub collection: &'a StageCollection,
    /// Which kernels; `None` profiles every kernel (discovery only).
    pub filter: Option<&'a KernelFilter>,
    /// Which launches.
    pub window: LaunchWindow,
    /// Clock control.
    pub clock_control: ClockControl,
    /// Where ncu writes its output (CSV preceded by its `==PROF==` lines).
    pub log_file: &'a Path,
    /// The profiled program.
    pub target: &'a TargetCommand,
    /// Directly, or through `sudo -n` (then `ncu` is the path from `profile/ncu_path`).
    pub privilege: Privilege,
    /// Ranges that bound every launch profiled (`--nvtx --nvtx-include R`,
    /// `--profile-from-start off`), as ncu options; empty for none.
    pub ranges: &'a [String],
    /// Where basic's report goes when the source page comes from it: basic's run adds the
    /// hot lines ([`HotLines`]) and writes this report beside its page, and the source
    /// stage imports it instead of running the program again. `None` for the rest.
    pub report: Option<&'a Path>,
}

/// How a census (every kernel's duration, one pass each, no filter) leaves the caches:
/// as the program left them. ncu's default flushes every cache before each profiled
/// launch, which makes small memory-bound kernels dearer than in the program: on the H200
/// a burn program's reduce kernels took 91 and 41 µs under ncu's census against 68 and
/// 27 µs traced, while its matmul took the same 377 µs in both, and their shares moved
/// by up to 7.6 points (`fixtures/h200/census/tracing/`). A census is about where the
/// program's time goes, so it keeps the program's caches; the stages, which compare a
/// kernel with the device's peaks, keep ncu's flush.
pub const CENSUS_CACHE_CONTROL: [&str; 2] = ["--cache-control", "none"];

/// The exact ncu invocation for one stage.
///
/// Directly: `env K=V ncu [options] program args`. Through sudo, which resets the
/// environment, the variables go on the target's side:
/// `sudo -n ncu [options] /usr/bin/env K=V program args`.
pub fn stage_command(ncu: &Path, run: &StageRun<'_>) -> ProcessBuilder {
    stage_command_with(ncu, run, HotLines::chosen())
}

/// [`stage_command`] with the hot lines collected as `hot_lines` says.
fn stage_command_with(ncu: &Path, run: &StageRun<'_>, hot_lines: HotLines) -> ProcessBuilder {
    let source = StageCollection::Named(Stage::Source);
    if let (true, Some(report)) = (*run.collection == source, run.report) {
        return import_command(ncu, report, run);
    }
    let sudo = run.privilege == Privilege::Sudo;
    let mut p = if sudo {
        let mut p = ProcessBuilder::new(super::privilege::SUDO);
        p.arg("-n").arg(ncu);
        p
    } else {
        ProcessBuilder::new(ncu)
    };
    p.args(["--clock-control", run.clock_control.name()]);
    let ranged = run.ranges.iter().any(|a| a == "--profile-from-start");
    match run.window {
        LaunchWindow::HarnessRange { .. } => {
            if !ranged {
                p.args(["--profile-from-start", "off"]);
            }
        }
        LaunchWindow::SkipCount { launch_skip, launch_count } => {
            p.args(["--launch-skip".to_string(), launch_skip.to_string()]);
            p.args(["--launch-count".to_string(), launch_count.to_string()]);
        }
    }
    p.args(run.ranges);
    if let Some(filter) = run.filter {
        p.args(filter.ncu_args());
    }
    if *run.collection == StageCollection::Discovery && run.filter.is_none() {
        p.args(CENSUS_CACHE_CONTROL);
    }
    let mut own = run.collection.ncu_args();
    if *run.collection == source {
        own = hot_lines.source_stage(own);
    }
    if let (true, Some(report)) = (run.collection.collects_basic(), run.report) {
        // Basic runs again when its window is fitted or its filter narrowed; the report
        // then replaces the one of the run before, in this profile's own folder.
        p.args(hot_lines.prefix()).arg("--export").arg(report).arg("--force-overwrite");
        own = hot_lines.joined(own);
    }
    p.args(own);
    p.arg("--log-file").arg(run.log_file);
    if sudo && !run.target.env.is_empty() {
        p.arg(super::privilege::ENV_PROGRAM);
        p.args(run.target.env.iter().map(|(k, v)| format!("{k}={v}")));
    }
    p.arg(&run.target.program);
    p.args(&run.target.args);
    if !sudo {
        for (k, v) in &run.target.env {
            p.env(k.clone(), v.clone());
        }
        // Under sudo the program runs as root: it would write root's files into the
        // user's cache, so it compiles as it would without one.
        run.target.pass_ptx_cache(&mut p);
    }
    p.cwd(&run.target.cwd);
    p
}

/// The source stage as an import of basic's report: `ncu --import REPORT --csv --page
/// source --print-source cuda,sass --log-file PAGE`, in the program's folder (relative
/// file names in line info resolve from there, as in a run). No program starts. Measured
/// side by side on the zoo's six programs on an H200
/// (`fixtures/h200/whole-programs/source-export-2/`): basic with SourceCounters and the
/// report took 4.4-7.5 s against 3.5-6.0 s for basic alone, the import 1.2-4.2 s against
/// 3.4-8.6 s for running the source stage: 52.0 s against 62.4 s for both stages, 0.83x.
fn import_command(ncu: &Path, report: &Path, run: &StageRun<'_>) -> ProcessBuilder {
    let mut p = if run.privilege == Privilege::Sudo {
        let mut p = ProcessBuilder::new(super::privilege::SUDO);
        p.arg("-n").arg(ncu);
        p
    } else {
        ProcessBuilder::new(ncu)
    };
    p.arg("--import").arg(report);
    let args = run.collection.ncu_args();
    // What is collected was decided by basic's run: only the printing options stay.
    let mut skip = false;
    for a in args {
        if std::mem::take(&mut skip) {
            continue;
        }
        if a == "--section" {
            skip = true;
            continue;
        }
        p.arg(a);
    }
    p.arg("--log-file").arg(run.log_file);
    p.cwd(&run.target.cwd);
    p
}

/// Whether the source page of a run of `collections` comes from basic's report: both are
/// collected, basic in a run of its own or in the first run the planner merged with last
/// time's follow-ups (that run then exports the report, and the source stage starts no
/// program of its own).
pub fn source_from_basic(collections: &[StageCollection]) -> bool {
    collections.iter().any(StageCollection::collects_basic)
        && collections.contains(&StageCollection::Named(Stage::Source))
}

/// Whether `cmd` writes a report besides its page (basic's run when the source page is
/// imported from it).
pub fn exports_report(cmd: &ProcessBuilder) -> bool {
    cmd.get_args().iter().any(|a| a == "--export")
}

/// Whether `cmd` imports a report rather than running a program (the source stage when
/// its page comes from basic's report).
pub fn is_import(cmd: &ProcessBuilder) -> bool {
    // `ncu --import ...`, or `sudo -n NCU --import ...`.
    let args = cmd.get_args();
    let first = if args.first().is_some_and(|a| a == "-n") { args.get(2) } else { args.first() };
    first.is_some_and(|a| a == "--import")
}

/// The same stage command printing the source page as SASS only (`--print-source sass`):
/// for a kernel without line info, whose `cuda,sass` page ncu leaves empty.
pub fn sass_only(cmd: &ProcessBuilder) -> ProcessBuilder {
    let mut p = ProcessBuilder::new(cmd.get_program().clone());
    p.args(cmd.get_args().iter().map(|a| if a == "cuda,sass" { "sass".into() } else { a.clone() }));
    for (k, v) in cmd.get_envs() {
        p.env(k.clone(), v.clone());
    }
    for (k, v) in cmd.get_unshown_envs() {
        p.env_unshown(k.clone(), v.clone());
    }
    if let Some(dir) = cmd.get_cwd() {
        p.cwd(dir);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> TargetCommand {
        let mut env = std::collections::BTreeMap::new();
        env.insert("KPROF_PROFILE".to_string(), "1".to_string());
        TargetCommand {
            program: "/ws/target/kprof/release/deps/copy-1234".into(),
            args: vec!["--size".into(), "1 GiB".into()],
            env,
            cwd: "/ws/demo".into(),
            ptx_cache: None,
        }
    }

    #[test]
    fn harness_stage_uses_profiler_range() {
        let t = target();
        let filter = KernelFilter::containing("copy");
        let c = StageCollection::Named(Stage::Basic);
        let cmd = stage_command(
            Path::new("/usr/local/cuda/bin/ncu"),
            &StageRun {
                collection: &c,
                filter: Some(&filter),
                window: LaunchWindow::HarnessRange { launch_count: 1 },
                clock_control: ClockControl::None,
                log_file: Path::new("/ws/profile/copy_1/details/01_basic_raw.csv"),
                target: &t,
                privilege: Privilege::None,
                ranges: &[],
                report: None,
            },
        );
        let expected = format!(
            "cd /ws/demo && env KPROF_PROFILE=1 /usr/local/cuda/bin/ncu --clock-control none \
             --profile-from-start off --kernel-name 'regex:.*copy.*' --metrics {} --csv --page raw \
             --log-file /ws/profile/copy_1/details/01_basic_raw.csv \
             /ws/target/kprof/release/deps/copy-1234 --size '1 GiB'",
            crate::ncu::stages::BASIC.join(",")
        );
        assert_eq!(cmd.to_string(), expected);
    }

    #[test]
    fn plain_program_uses_skip_and_count() {
        let t = target();
        let filter = KernelFilter::regex("^k$");
        let c = StageCollection::Custom { set: Some("full".into()), sections: vec!["SourceCounters".into()] };
        let cmd = stage_command(
            Path::new("ncu"),
            &StageRun {
                collection: &c,
                filter: Some(&filter),
                window: LaunchWindow::SkipCount { launch_skip: 5, launch_count: 3 },
                clock_control: ClockControl::Base,
                log_file: Path::new("out.csv"),
                target: &t,
                privilege: Privilege::None,
                ranges: &[],
                report: None,
            },
        );
        let line = cmd.command_line();
        assert!(line.contains("--clock-control base --launch-skip 5 --launch-count 3 --kernel-name 'regex:^k$' --set full --section SourceCounters --csv --page raw"), "{line}");
        assert!(!line.contains("--profile-from-start"));
    }

    /// A census (every kernel, durations only) keeps the program's caches; the same
    /// collection for one kernel (an A/B check's ncu rounds) and every stage keep ncu's
    /// flush before each launch.
    #[test]
    fn only_a_census_keeps_the_program_s_caches() {
        let t = target();
        let census = |filter: Option<&KernelFilter>| {
            stage_command(
                Path::new("ncu"),
                &StageRun {
                    collection: &StageCollection::Discovery,
                    filter,
                    window: LaunchWindow::SkipCount { launch_skip: 0, launch_count: 1000 },
                    clock_control: ClockControl::None,
                    log_file: Path::new("00_discovery_raw.csv"),
                    target: &t,
                    privilege: Privilege::None,
                    ranges: &[],
                    report: None,
                },
            )
            .command_line()
        };
        let line = census(None);
        assert!(
            line.contains("--launch-count 1000 --cache-control none --metrics gpu__time_duration.sum --csv"),
            "{line}"
        );
        let one = KernelFilter::containing("copy");
        assert!(!census(Some(&one)).contains("--cache-control"));
        let basic = copy_stage(&StageCollection::Named(Stage::Basic), &t, Privilege::None, "b.csv", None);
        assert!(!basic.command_line().contains("--cache-control"));
    }

    /// A stage of the harness kernel `copy` (one launch of its range, clocks as they are),
    /// run by `/opt/nvidia/ncu` into `log`.
    fn copy_stage(
        c: &StageCollection,
        t: &TargetCommand,
        privilege: Privilege,
        log: &str,
        report: Option<&Path>,
    ) -> ProcessBuilder {
        copy_stage_with(c, t, privilege, log, report, HotLines::Section)
    }

    fn copy_stage_with(
        c: &StageCollection,
        t: &TargetCommand,
        privilege: Privilege,
        log: &str,
        report: Option<&Path>,
        hot_lines: HotLines,
    ) -> ProcessBuilder {
        let filter = KernelFilter::containing("copy");
        let run = StageRun {
            collection: c,
            filter: Some(&filter),
            window: LaunchWindow::HarnessRange { launch_count: 1 },
            clock_control: ClockControl::None,
            log_file: Path::new(log),
            target: t,
            privilege,
            ranges: &[],
            report,
        };
        stage_command_with(Path::new("/opt/nvidia/ncu"), &run, hot_lines)
    }

    #[test]
    fn sudo_puts_the_environment_on_the_target_side() {
        let mut t = target();
        t.env.insert("KPROF_CASE".into(), "copy$".into());
        t.env.insert("NO_GRAPH".into(), "1".into());
        let c = StageCollection::Named(Stage::Basic);
        let run = |t: &TargetCommand, privilege| copy_stage(&c, t, privilege, "/ws/p/01_basic_raw.csv", None);
        let cmd = run(&t, Privilege::Sudo);
        let expected = format!(
            "cd /ws/demo && sudo -n /opt/nvidia/ncu --clock-control none --profile-from-start off \
             --kernel-name 'regex:.*copy.*' --metrics {} --csv --page raw --log-file /ws/p/01_basic_raw.csv \
             /usr/bin/env 'KPROF_CASE=copy$' KPROF_PROFILE=1 NO_GRAPH=1 \
             /ws/target/kprof/release/deps/copy-1234 --size '1 GiB'",
            crate::ncu::stages::BASIC.join(",")
        );
        assert_eq!(cmd.to_string(), expected);
        // Nothing is left for sudo to drop: the variables are arguments, not sudo's environment.
        assert!(cmd.get_envs().is_empty());
        assert_eq!(cmd.get_program(), "sudo");
        // The same program without variables needs no `env`.
        t.env.clear();
        let line = run(&t, Privilege::Sudo).to_string();
        assert!(
            line.ends_with(
                "--log-file /ws/p/01_basic_raw.csv /ws/target/kprof/release/deps/copy-1234 --size '1 GiB'"
            ),
            "{line}"
        );
        // Without sudo the form is unchanged: `env K=V ncu ...`.
        t.env.insert("NO_GRAPH".into(), "1".into());
        let line = run(&t, Privilege::None).to_string();
        assert!(
            line.starts_with("cd /ws/demo && env NO_GRAPH=1 /opt/nvidia/ncu --clock-control none"),
            "{line}"
        );
    }

    #[test]
    fn every_stage_prints_csv() {
        for s in Stage::ALL {
            let args = StageCollection::Named(s).ncu_args();
            assert!(args.contains(&"--csv".to_string()), "{s}");
            let page = args.iter().position(|a| a == "--page").map(|i| args[i + 1].as_str());
            assert_eq!(page, Some(if s == Stage::Source { "source" } else { "raw" }), "{s}");
        }
    }

    /// With basic's report: basic adds the source section and writes the report, and the
    /// source stage imports it (also through sudo), printing the same page with no program.
    #[test]
    fn the_source_page_is_imported_from_basic_s_report() {
        let t = target();
        let report = Path::new("/ws/p/details/01_basic.ncu-rep");
        let run = |stage, privilege| {
            copy_stage(&StageCollection::Named(stage), &t, privilege, "/ws/p/details/page.csv", Some(report))
        };
        let basic = run(Stage::Basic, Privilege::None).to_string();
        assert!(
            basic.contains(
                "--kernel-name 'regex:.*copy.*' --section SourceCounters --export /ws/p/details/01_basic.ncu-rep \
                 --force-overwrite --metrics gpu__time_duration.sum,"
            ),
            "{basic}"
        );
        let source = run(Stage::Source, Privilege::None);
        assert_eq!(
            source.to_string(),
            "cd /ws/demo && /opt/nvidia/ncu --import /ws/p/details/01_basic.ncu-rep --csv --page source \
             --print-source cuda,sass --log-file /ws/p/details/page.csv"
        );
        assert!(is_import(&source) && !is_import(&run(Stage::Basic, Privilege::None)));
        let sudo = run(Stage::Source, Privilege::Sudo);
        assert!(sudo.to_string().starts_with("cd /ws/demo && sudo -n /opt/nvidia/ncu --import "), "{sudo}");
        assert!(is_import(&sudo));
        // Other stages are as without a report.
        let memory = run(Stage::Memory, Privilege::None).to_string();
        assert!(!memory.contains("--export") && !memory.contains("--import"), "{memory}");
        assert!(source_from_basic(&[
            StageCollection::Named(Stage::Basic),
            StageCollection::Named(Stage::Source)
        ]));
        // A merged first run with basic exports the report too; follow-ups alone do not.
        assert!(source_from_basic(&[
            StageCollection::Merged(vec![Stage::Basic, Stage::Compute]),
            StageCollection::Named(Stage::Source)
        ]));
        assert!(!source_from_basic(&[
            StageCollection::Merged(vec![Stage::Compute, Stage::Occupancy]),
            StageCollection::Named(Stage::Source)
        ]));
    }

    /// `KPROF_HOT_LINES=sampling`: the sampling metrics join the metric list of the run
    /// that exports the report (basic alone or merged), no section anywhere; the source
    /// stage run on its own asks for them alone; the import is unchanged.
    #[test]
    fn sampling_hot_lines_join_the_report_run_s_metric_list() {
        let t = target();
        let report = Path::new("/ws/p/details/01_basic.ncu-rep");
        let sampling = super::super::hot_lines::SAMPLING_METRICS.join(",");
        let run = |c: StageCollection, report| {
            copy_stage_with(&c, &t, Privilege::None, "/ws/p/details/page.csv", report, HotLines::Sampling)
                .to_string()
        };
        for first in [
            StageCollection::Named(Stage::Basic),
            StageCollection::Merged(vec![Stage::Basic, Stage::Memory, Stage::Compute, Stage::Occupancy]),
        ] {
            let line = run(first, Some(report));
            assert!(!line.contains("--section"), "{line}");
            assert!(
                line.contains("--kernel-name 'regex:.*copy.*' --export /ws/p/details/01_basic.ncu-rep --force-overwrite --metrics gpu__time_duration.sum,"),
                "{line}"
            );
            assert!(line.contains(&format!(",{sampling} --csv --page raw --log-file")), "{line}");
            assert_eq!(line.matches("--metrics").count(), 1, "{line}");
        }
        let alone = run(StageCollection::Named(Stage::Source), None);
        assert!(
            alone.contains(&format!(
                "--kernel-name 'regex:.*copy.*' --metrics {sampling} --csv --page source --print-source cuda,sass"
            )),
            "{alone}"
        );
        assert!(run(StageCollection::Named(Stage::Source), Some(report)).contains("--import"));
        // Without a report, basic collects no hot lines.
        assert!(!run(StageCollection::Named(Stage::Basic), None).contains("pcsamp"));
    }
}
