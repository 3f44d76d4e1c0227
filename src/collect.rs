//! Running the stages: one ncu run per stage, `basic` first, then (for `auto`) the one
//! follow-up the rules choose from basic's metrics.
//!
//! Each run writes its CSV through `--log-file` into `details/`; the target's own output
//! is kept only when a stage fails, in `run_manifest.yaml`. ncu exits 0 when the filter
//! matches nothing, so every log is read for that, and for the counter-permission error,
//! before the next stage starts. Under `--sudo` the output is also read for sudo's
//! refusal (`sudo: a password is required`), which stops the run the same way, with
//! exit code 7. The manifest is written whatever happens, so a failed or partial run
//! still says what ran, why, and how it ended.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::analysis::{rules::Rules, summary};
use crate::error::{ExitCode, Failure};
use crate::filter::KernelFilter;
use crate::ncu::command::{stage_command, StageCollection, StageRun, TargetCommand};
use crate::ncu::parse::{scan_log, RawPage};
use crate::ncu::privilege::{self, Privilege};
use crate::plan::{KernelPlan, StagePlan};
use crate::process::{tail_lines, ProcessBuilder};
use crate::profile_dir::ProfileDir;
use crate::stage::{Stage, StageSelection};

/// One stage as it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageOutcome {
    /// The stage name.
    pub stage: String,
    /// Why it ran.
    pub why: String,
    /// The exact command.
    pub command: String,
    /// ncu's exit status (`None` when it was killed by a signal or did not start).
    pub exit_code: Option<i32>,
    /// Wall time of the ncu process, milliseconds.
    pub wall_ms: u64,
    /// Replay passes per profiled launch, as ncu reported them.
    pub passes: Vec<u32>,
    /// Launches profiled.
    pub launches: usize,
    /// `ok`, `no-match`, `permission`, `target-failed`, `timeout` or `interrupted`.
    pub status: String,
    /// The raw CSV, relative to the profile directory.
    pub output: String,
    /// The last lines of ncu's and the target's output, for a failed stage only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

/// `run_manifest.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunManifest {
    /// Always 1.
    pub schema_version: u32,
    /// The cargo-kprof version that ran.
    pub kprof_version: String,
    /// The kernel (hint).
    pub kernel: String,
    /// `none`, or `sudo` when ncu ran as `sudo -n <profile/ncu_path>`.
    #[serde(default)]
    pub privilege: Privilege,
    /// `ok`, or the status of the stage that stopped the run.
    pub status: String,
    /// The stages, in order.
    pub stages: Vec<StageOutcome>,
    /// Wall time of kprof's own work between ncu runs (run total minus ncu), milliseconds.
    pub kprof_overhead_ms: u64,
}

/// The NOPASSWD guide, in our words, printed when ncu may not read the counters.
pub use crate::ncu::privilege::PERMISSION_GUIDE;

/// One kernel's collection: where it goes and what it runs.
pub struct KernelRun<'a> {
    /// The profile directory.
    pub dir: &'a ProfileDir,
    /// The kernel's plan.
    pub kernel: &'a KernelPlan,
    /// The profiled program.
    pub target: &'a TargetCommand,
    /// The ncu binary (under sudo, the one named in `profile/ncu_path`).
    pub ncu: &'a Path,
    /// The stage commands already written to `commands.sh` (for `auto`, only basic).
    pub first: &'a [(StageCollection, ProcessBuilder)],
    /// `--timeout`: the longest one ncu run may take.
    pub timeout: Option<Duration>,
    /// Show a progress spinner while a stage runs (a terminal, not `-q`, not JSON).
    pub progress: bool,
}

/// Set by the Ctrl-C handler; the running stage's process group is then killed.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Makes Ctrl-C stop the running ncu and its target (which run in their own process
/// group, so the terminal's signal does not reach them) and end the run as `interrupted`.
pub fn install_interrupt_handler() {
    // A second install (several kernels in one run) is refused by ctrlc; the first stays.
    let _ = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst));
}

/// How a child process ended.
pub(crate) enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut,
    Interrupted,
    NotStarted(String),
}

/// Runs `cmd` in its own process group, draining its output on threads so it never
/// blocks; kills the whole group on timeout or Ctrl-C. Under sudo, ncu and the program
/// run as root, out of reach of our SIGKILL: sudo is first sent SIGTERM, which it relays
/// to them, and output still held open by them is not waited for.
pub(crate) fn run_process(
    cmd: &ProcessBuilder,
    timeout: Option<Duration>,
    privilege: Privilege,
) -> (Ending, String) {
    let mut c = cmd.command();
    c.stdout(Stdio::piped()).stderr(Stdio::piped()).stdin(Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        c.process_group(0);
    }
    let mut child = match c.spawn() {
        Ok(child) => child,
        Err(e) => {
            let program = cmd.get_program().to_string_lossy().into_owned();
            return (Ending::NotStarted(format!("could not start {program}: {e}")), String::new());
        }
    };
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            let _ = tx.send(buf);
        });
        rx
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let started = Instant::now();
    let ending = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ending::Exited(status),
            Ok(None) => {}
            Err(e) => break Ending::NotStarted(format!("waiting for ncu: {e}")),
        }
        let interrupted = INTERRUPTED.load(Ordering::SeqCst);
        if interrupted || timeout.is_some_and(|t| started.elapsed() >= t) {
            kill_group(&mut child, privilege == Privilege::Sudo);
            break if interrupted { Ending::Interrupted } else { Ending::TimedOut };
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stopped = !matches!(ending, Ending::Exited(_));
    let read = |rx: std::sync::mpsc::Receiver<Vec<u8>>| {
        let bytes = if stopped { rx.recv_timeout(Duration::from_secs(2)).ok() } else { rx.recv().ok() };
        String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned()
    };
    let text = format!("{}{}", read(out), read(err));
    (ending, text)
}

/// Kills the child's process group; `graceful` (sudo) sends SIGTERM first and gives
/// the group five seconds to end.
fn kill_group(child: &mut std::process::Child, graceful: bool) {
    #[cfg(unix)]
    {
        let group = child.id() as libc::pid_t;
        if graceful {
            // SAFETY: killpg only sends a signal; the group is the child's own (process_group(0)).
            unsafe {
                libc::killpg(group, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline && !matches!(child.try_wait(), Ok(Some(_))) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        // SAFETY: as above.
        unsafe {
            libc::killpg(group, libc::SIGKILL);
        }
    }
    #[cfg(not(unix))]
    let _ = graceful;
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs the stages of one kernel; `say` gets one line per step.
pub fn collect(run: &KernelRun<'_>, rules: &Rules, say: &dyn Fn(&str)) -> Result<RunManifest> {
    let KernelRun { dir, kernel, target, ncu, first, timeout, progress } = *run;
    // The filter is the plan's, or the one discovery chooses.
    let mut filter: Option<KernelFilter> = kernel.filter.clone();
    let started = Instant::now();
    let mut manifest = RunManifest {
        schema_version: 1,
        kprof_version: env!("CARGO_PKG_VERSION").to_string(),
        kernel: kernel.name.clone(),
        privilege: kernel.privilege,
        status: "ok".into(),
        stages: Vec::new(),
        kprof_overhead_ms: 0,
    };
    let auto = matches!(kernel.stages, StagePlan::Stages(StageSelection::Auto));
    let mut queue: Vec<(StageCollection, ProcessBuilder, String)> = first
        .iter()
        .map(|(c, p)| {
            (c.clone(), p.clone(), if auto { "auto: always first".into() } else { "requested".into() })
        })
        .collect();
    let mut ncu_ms = 0u64;
    let mut i = 0;
    while i < queue.len() {
        let (collection, cmd, why) = queue[i].clone();
        i += 1;
        say(&format!("Profiling `{}`: stage {} ({})", kernel.name, collection.name(), why));
        let bar =
            if progress { indicatif::ProgressBar::new_spinner() } else { indicatif::ProgressBar::hidden() };
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        let passes_hint = match &collection {
            StageCollection::Named(s) => crate::ncu::stages::definition(*s)
                .passes_h200
                .map(|p| format!(", about {p} passes per launch"))
                .unwrap_or_default(),
            _ => String::new(),
        };
        bar.set_message(format!("ncu: stage {} of `{}`{passes_hint}", collection.name(), kernel.name));
        bar.enable_steady_tick(Duration::from_millis(120));
        let (outcome, page) = run_stage(dir, &collection, &cmd, why, timeout, kernel.privilege);
        bar.finish_and_clear();
        ncu_ms += outcome.wall_ms;
        let status = outcome.status.clone();
        let log = outcome.log.clone();
        manifest.stages.push(outcome);
        if status != "ok" {
            manifest.status = status.clone();
            manifest.kprof_overhead_ms = (started.elapsed().as_millis() as u64).saturating_sub(ncu_ms);
            write_manifest(dir, &manifest)?;
            let everything = KernelFilter::regex(".*");
            let f = filter.as_ref().unwrap_or(&everything);
            return Err(stage_failure(&status, kernel, f, log.as_deref().unwrap_or(""), &cmd).into());
        }
        let passes = manifest.stages.last().map(|s| s.passes.clone()).unwrap_or_default();
        // The source page has no pass column: say only that it finished.
        say(&match passes.first() {
            Some(p) => format!("  done: {p} pass(es) per launch"),
            None => "  done".to_string(),
        });
        let stage_cmd = |collection: &StageCollection, filter: &KernelFilter| {
            let log = dir.details_dir().join(collection.raw_file_name());
            stage_command(
                ncu,
                &StageRun {
                    collection,
                    filter: Some(filter),
                    window: kernel.window,
                    clock_control: kernel.clock_control,
                    log_file: &log,
                    target,
                    privilege: kernel.privilege,
                },
            )
        };
        if collection == StageCollection::Discovery {
            let chosen = discover(dir, page)?;
            say(&format!("Discovery: profiling `{}` ({})", chosen.0, chosen.1));
            let f = KernelFilter::from_hint(&chosen.0);
            for (n, c) in kernel.stage_collections().into_iter().enumerate() {
                let cmd = stage_cmd(&c, &f);
                append_command(
                    dir,
                    &format!("# Stage {}: {} (kernel chosen by discovery)\n{cmd}\n", n + 1, c.name()),
                )?;
                queue.push((c, cmd, format!("for `{}`, chosen by discovery", chosen.0)));
            }
            filter = Some(f);
            continue;
        }
        let Some(filter) = filter.as_ref() else { continue };
        if auto && collection == StageCollection::Named(Stage::Basic) {
            let (stage, reason) = follow_up(page, rules, filter)?;
            say(&format!("Follow-up: {stage} ({reason})"));
            let follow = StageCollection::Named(stage);
            let cmd = stage_cmd(&follow, filter);
            append_command(dir, &format!("# Stage 2: {stage}, chosen: {reason}\n{cmd}\n"))?;
            queue.push((follow, cmd, format!("auto follow-up: {reason}")));
        }
    }
    manifest.kprof_overhead_ms = (started.elapsed().as_millis() as u64).saturating_sub(ncu_ms);
    write_manifest(dir, &manifest)?;
    Ok(manifest)
}

fn run_stage(
    dir: &ProfileDir,
    collection: &StageCollection,
    cmd: &ProcessBuilder,
    why: String,
    timeout: Option<Duration>,
    privilege: Privilege,
) -> (StageOutcome, Result<RawPage, String>) {
    let output_rel = format!("details/{}", collection.raw_file_name());
    let t0 = Instant::now();
    let (ending, console) = run_process(cmd, timeout, privilege);
    let wall_ms = t0.elapsed().as_millis() as u64;
    let (exit_code, ended) = match &ending {
        Ending::Exited(status) => (status.code(), None),
        Ending::TimedOut => (None, Some("timeout")),
        Ending::Interrupted => (None, Some("interrupted")),
        Ending::NotStarted(_) => (None, Some("target-failed")),
    };
    let console = match &ending {
        Ending::NotStarted(msg) => format!("{msg}\n{console}"),
        _ => console,
    };
    let log_text =
        std::fs::read(dir.path().join(&output_rel)).map(|b| String::from_utf8_lossy(&b).into_owned());
    let log_text = log_text.unwrap_or_default();
    let scan = scan_log(&format!("{log_text}\n{console}"));
    let parsed = RawPage::parse(&log_text, &output_rel).map_err(|e| e.to_string());
    let page = parsed.as_ref().ok();
    let passes: Vec<u32> = page
        .map(|p| {
            p.launches().filter_map(|l| l.number("profiler__replayer_passes")).map(|v| v as u32).collect()
        })
        .unwrap_or_default();
    let launches = page.map(|p| p.launches().count()).unwrap_or(0);
    let sudo_refused = privilege == Privilege::Sudo && privilege::sudo_refusal(&console).is_some();
    let status = if let Some(ended) = ended {
        ended
    } else if scan.permission_denied || sudo_refused {
        "permission"
    } else if scan.no_kernels_profiled {
        "no-match"
    } else if exit_code != Some(0) {
        "target-failed"
    } else {
        "ok"
    };
    let log = (status != "ok").then(|| {
        let mut t = tail_lines(&console, 20);
        if status == "no-match" {
            // A blank line ends the list: the program's own output follows it.
            t = format!("{}\n\n{}", scan.available_kernels.join("\n"), t);
        }
        t
    });
    let outcome = StageOutcome {
        stage: collection.name().to_string(),
        why,
        command: cmd.to_string(),
        exit_code,
        wall_ms,
        passes,
        launches,
        status: status.to_string(),
        output: output_rel,
        log,
    };
    (outcome, parsed)
}

/// One kernel seen by discovery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// The kernel name as ncu printed it.
    pub kernel: String,
    /// The function name used for the filter (without parameters and return type).
    pub function: String,
    /// Launches seen.
    pub launches: usize,
    /// Their total duration, ns.
    pub total_duration_ns: f64,
}

/// `details/kernel_candidates.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidates {
    /// Always 1.
    pub schema_version: u32,
    /// How they are ranked.
    pub ranking: String,
    /// The kernel profiled.
    pub chosen: String,
    /// Every kernel, costliest first.
    pub candidates: Vec<Candidate>,
}

/// The function name of a demangled kernel name: `void ns::f<int>(float *)` -> `f`.
pub fn function_name(kernel: &str) -> String {
    let head = kernel.split('(').next().unwrap_or(kernel);
    let head = head.split('<').next().unwrap_or(head).trim();
    let last = head.rsplit(' ').next().unwrap_or(head);
    last.rsplit("::").next().unwrap_or(last).to_string()
}

/// Ranks the kernels of a discovery pass (its parsed page) (total duration, then launches) and writes
/// `kernel_candidates.json`; returns the costliest kernel's function name and why.
fn discover(dir: &ProfileDir, page: Result<RawPage, String>) -> Result<(String, String)> {
    let page = page.map_err(|e| Failure::new(ExitCode::NoKernelMatched, e))?;
    let mut candidates: Vec<Candidate> = Vec::new();
    for l in page.launches() {
        let d = l.number("gpu__time_duration.sum").unwrap_or(0.0)
            * summary::unit_scale(l.unit("gpu__time_duration.sum").unwrap_or(""));
        match candidates.iter_mut().find(|c| c.kernel == l.kernel_name()) {
            Some(c) => {
                c.launches += 1;
                c.total_duration_ns += d;
            }
            None => candidates.push(Candidate {
                kernel: l.kernel_name().to_string(),
                function: function_name(l.kernel_name()),
                launches: 1,
                total_duration_ns: d,
            }),
        }
    }
    candidates.sort_by(|a, b| {
        b.total_duration_ns.total_cmp(&a.total_duration_ns).then(b.launches.cmp(&a.launches))
    });
    let Some(top) = candidates.first().cloned() else {
        return Err(Failure::new(ExitCode::NoKernelMatched, "discovery saw no kernel launch").into());
    };
    let record = Candidates {
        schema_version: 1,
        ranking: "total duration, then launch count (no hint was given)".into(),
        chosen: top.function.clone(),
        candidates: candidates.clone(),
    };
    crate::analyze::write_atomic(
        &dir.kernel_candidates_path(),
        &(serde_json::to_string_pretty(&record).context("kernel_candidates.json")? + "\n"),
    )?;
    let others: Vec<String> = candidates.iter().skip(1).map(|c| c.function.clone()).collect();
    let why = format!(
        "costliest of {}: {} launch(es), {} us in all{}",
        candidates.len(),
        top.launches,
        crate::analysis::rules::format_value(top.total_duration_ns / 1000.0),
        if others.is_empty() { String::new() } else { format!("; also seen: {}", others.join(", ")) }
    );
    Ok((top.function, why))
}

/// The follow-up stage and why, from the rules over basic's metrics (its parsed page).
fn follow_up(page: Result<RawPage, String>, rules: &Rules, filter: &KernelFilter) -> Result<(Stage, String)> {
    let page = page.map_err(|e| Failure::new(ExitCode::Failure, e))?;
    let re = regex::Regex::new(&filter.pattern).ok();
    let summary = summary::summarize(std::slice::from_ref(&page), re.as_ref());
    let Some(k) = summary.kernels.first() else {
        return Ok((Stage::SpeedOfLight, "basic gave no metrics for the filtered kernel".into()));
    };
    let v = rules.decide(k);
    let stage: Stage = v.follow_up_stage.parse().unwrap_or(Stage::SpeedOfLight);
    let evidence: Vec<String> = v
        .evidence
        .iter()
        .filter(|e| e.threshold != "-")
        .map(|e| format!("{} = {} ({})", e.field, crate::analysis::rules::format_value(e.value), e.threshold))
        .collect();
    let reason = match &v.rule {
        Some(rule) => format!("rule `{rule}` ({}): {}", v.classification.name(), evidence.join(", ")),
        None => format!("no rule decided (missing: {})", v.missing.join(", ")),
    };
    Ok((stage, reason))
}

fn stage_failure(
    status: &str,
    kernel: &KernelPlan,
    filter: &KernelFilter,
    log: &str,
    cmd: &ProcessBuilder,
) -> Failure {
    match status {
        "no-match" => {
            let mut seen: Vec<&str> = log.lines().take_while(|l| !l.trim().is_empty()).collect();
            seen.retain(|l| !l.starts_with("=="));
            let hint = kernel.name.to_lowercase();
            seen.sort_by_key(|k| closeness(&hint, &k.to_lowercase()));
            let mut f = Failure::new(
                ExitCode::NoKernelMatched,
                format!(
                    "the kernel filter `{}` matched no kernel launched by `{}`",
                    filter.to_ncu_arg(),
                    kernel.name
                ),
            );
            f = if seen.is_empty() {
                f.help("ncu listed no kernels: the program launched none inside the profiling window")
            } else {
                f.help(format!("kernels ncu saw, closest first: {}", seen.join(", ")))
            };
            f.help("pass --kernel with part of one of those names, or --kernel-regex")
        }
        "permission" => match privilege::sudo_refusal(log).filter(|_| kernel.privilege == Privilege::Sudo) {
            Some(line) => privilege::sudo_refused(line),
            None => Failure::new(ExitCode::Permission, PERMISSION_GUIDE),
        },
        "timeout" => {
            Failure::new(ExitCode::Timeout, format!("ncu ran past --timeout and was stopped:\n{log}"))
                .help("raise --timeout, or profile fewer launches (--launch-count)")
        }
        "interrupted" => {
            Failure::new(ExitCode::Interrupted, "interrupted; the stages that finished stay on disk")
        }
        _ => Failure::new(ExitCode::TargetFailed, format!("the profiled program failed under ncu:\n{log}"))
            .help(format!("the command was: {cmd}")),
    }
}

/// Smaller is closer: 0 for a substring match, else one more than the edit distance.
fn closeness(hint: &str, name: &str) -> usize {
    if name.contains(hint) {
        0
    } else {
        1 + crate::suggest::edit_distance(hint, name)
    }
}

/// `details/00_environment.txt`: what the numbers depend on. Tools that are missing are
/// noted as such; nothing here stops a run. (`ncu --version` needs no privilege, so it
/// runs without sudo even when the stages run through it.)
pub fn write_environment(
    dir: &ProfileDir,
    ncu: &Path,
    privilege: Privilege,
    workspace_root: &Path,
) -> Result<()> {
    fn run(program: &Path, args: &[&str], cwd: Option<&Path>) -> String {
        let mut c = std::process::Command::new(program);
        c.args(args);
        if let Some(d) = cwd {
            c.current_dir(d);
        }
        match c.output() {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
            Ok(o) => format!("(exit {}) {}", o.status, String::from_utf8_lossy(&o.stderr).trim()),
            Err(e) => format!("(not available: {e})"),
        }
    }
    let git = Path::new("git");
    let dirty = run(git, &["status", "--porcelain"], Some(workspace_root));
    let privilege_line = match privilege {
        Privilege::None => "none (ncu runs as this user)".to_string(),
        Privilege::Sudo => {
            format!("sudo (sudo -n {}, as root)", crate::process::shell_quote(&ncu.to_string_lossy()))
        }
    };
    let text = format!(
        "kprof version: {}\nncu: {}\n{}\nprivilege: {}\nGPU (nvidia-smi): {}\nrustc: {}\nworkspace: {}\ngit commit: {}\ngit dirty: {}\n",
        env!("CARGO_PKG_VERSION"),
        ncu.display(),
        run(ncu, &["--version"], None),
        privilege_line,
        run(
            Path::new("nvidia-smi"),
            &[
                "--query-gpu=name,driver_version,compute_cap,clocks.sm,clocks.max.sm,clocks.mem",
                "--format=csv,noheader"
            ],
            None
        ),
        run(Path::new("rustc"), &["--version"], None),
        workspace_root.display(),
        run(git, &["rev-parse", "HEAD"], Some(workspace_root)),
        if dirty.starts_with('(') { dirty } else { (!dirty.is_empty()).to_string() },
    );
    crate::analyze::write_atomic(&dir.environment_path(), &text)
}

fn append_command(dir: &ProfileDir, text: &str) -> Result<()> {
    use std::io::Write;
    let path = dir.commands_script_path();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .with_context(|| format!("could not open {}", path.display()))?;
    f.write_all(text.as_bytes()).with_context(|| format!("could not write {}", path.display()))
}

fn write_manifest(dir: &ProfileDir, m: &RunManifest) -> Result<()> {
    let text = serde_yaml::to_string(m).context("could not serialise run_manifest.yaml")?;
    crate::analyze::write_atomic(&dir.run_manifest_path(), &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_names_from_demangled_kernels() {
        assert_eq!(function_name("hgemm_naive"), "hgemm_naive");
        assert_eq!(
            function_name("reduce_sum_kernel(const float4 *, unsigned long, double *)"),
            "reduce_sum_kernel"
        );
        assert_eq!(function_name("void ns::gemm<float, 128>(const float *, float *)"), "gemm");
    }

    #[test]
    fn closest_kernels_first() {
        let mut names = ["transpose_kernel", "hgemm_tiled", "copy_kernel"];
        names.sort_by_key(|n| closeness("hgemm", n));
        assert_eq!(names[0], "hgemm_tiled");
    }
}
