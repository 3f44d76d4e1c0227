//! Cases and the run: registration, listing, the profiling window, and measurement.
//!
//! Registration is cheap and needs no GPU: a case is a name, a few numbers, and a *setup*
//! closure that runs only when the case is selected. So `--list` (which `cargo kprof init`
//! runs to write an entry per case, often on machines without a GPU) prints names without
//! opening the device, and a filtered run only allocates what it measures.
//!
//! A setup closure receives the [`Gpu`], compiles or loads its module, allocates its inputs
//! and returns the *launch* closure, which enqueues one launch on the stream it is given.
//! The harness owns everything else: warm-up, the profiling window, timing, statistics and
//! output, so those are the same for every bench.
//!
//! Order of a measuring run, per selected case: the correctness check (if any), setup,
//! graph capture (for `.graph()` cases unless `NO_GRAPH=1`), one warm-up launch with a
//! synchronise, then cold and/or hot measurement. A failed check skips that case's timing;
//! the run still reports the others and fails at the end.
//!
//! Under `KPROF_PROFILE=1` the run sets up and warms up every selected case first, then
//! opens the profiler window (`cuProfilerStart`), launches each case `KPROF_LAUNCH_COUNT`
//! times, synchronises and closes it (`cuProfilerStop`): with
//! `ncu --profile-from-start off` exactly those launches are profiled.

use anyhow::{bail, Context, Result};
use cudarc::driver::{CudaEvent, CudaStream, DriverError};

use crate::config::{Options, USAGE};
use crate::device::Gpu;
use crate::report::{Report, Settings, SCHEMA_VERSION};
use crate::timing::{LaunchFn, Launcher, Timer};

/// What a launch closure may return: `()`, `anyhow::Result<()>`, or what cudarc's
/// `LaunchArgs::launch` returns, so a closure can end with the launch expression itself.
pub trait LaunchResult {
    /// Converts to `anyhow::Result<()>`.
    fn into_result(self) -> Result<()>;
}

impl LaunchResult for () {
    fn into_result(self) -> Result<()> {
        Ok(())
    }
}

impl LaunchResult for Result<()> {
    fn into_result(self) -> Result<()> {
        self
    }
}

impl LaunchResult for std::result::Result<(), DriverError> {
    fn into_result(self) -> Result<()> {
        self.context("kernel launch failed")
    }
}

impl LaunchResult for std::result::Result<Option<(CudaEvent, CudaEvent)>, DriverError> {
    fn into_result(self) -> Result<()> {
        self.map(|_| ()).context("kernel launch failed")
    }
}

type SetupFn = Box<dyn FnOnce(&Gpu) -> Result<LaunchFn>>;
type CheckFn = Box<dyn FnOnce(&Gpu) -> Result<()>>;

/// A registered case. Returned by [`Bench::case`] for the optional settings.
pub struct Case {
    name: String,
    bytes: Option<u64>,
    flops: Option<u64>,
    graph: bool,
    setup: Option<SetupFn>,
    check: Option<CheckFn>,
}

impl Case {
    /// Bytes the kernel must move per launch (reads plus writes), to report GB/s and the
    /// percentage of DRAM peak.
    pub fn bytes(&mut self, bytes: u64) -> &mut Case {
        self.bytes = Some(bytes);
        self
    }

    /// Floating-point operations per launch (an FMA counts 2), to report TFLOP/s and the
    /// percentage of FP32 peak.
    pub fn flops(&mut self, flops: u64) -> &mut Case {
        self.flops = Some(flops);
        self
    }

    /// Runs the case by replaying a CUDA graph captured from one call of the launch closure
    /// (`NO_GRAPH=1` turns this off). The closure must then only enqueue work on the stream.
    pub fn graph(&mut self) -> &mut Case {
        self.graph = true;
        self
    }

    /// A correctness check, run once before the case is timed (not under `KPROF_PROFILE`,
    /// nor with `KPROF_NO_CHECK=1`). It gets the [`Gpu`] and typically runs the kernel on a
    /// small problem and compares with a host reference using [`assert_close`].
    pub fn check<C>(&mut self, check: C) -> &mut Case
    where
        C: FnOnce(&Gpu) -> Result<()> + 'static,
    {
        self.check = Some(Box::new(check));
        self
    }

    /// The case's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A set of cases: what a bench target's `main` builds and runs.
///
/// ```no_run
/// use kprof_harness::{cuda_source, grid_1d, Bench};
///
/// const N: usize = 1 << 24;
/// let mut bench = Bench::new();
/// bench
///     .case("scale/n=16777216", |gpu| {
///         let f = gpu.compile(&cuda_source!("tests/kernels/axpy.cu"))?.function("kprof_test_axpy")?;
///         let x = gpu.random::<f32>(N)?;
///         let mut y = gpu.random::<f32>(N)?;
///         let cfg = grid_1d(N.div_ceil(256) as u32, 256);
///         Ok(move |s: &cudarc::driver::CudaStream| unsafe {
///             use cudarc::driver::PushKernelArg;
///             s.launch_builder(&f).arg(&x).arg(&mut y).arg(&2.0f32).arg(&(N as u64)).launch(cfg)
///         })
///     })
///     .bytes(3 * 4 * N as u64);
/// kprof_harness::main(bench);
/// ```
#[derive(Default)]
pub struct Bench {
    cases: Vec<Case>,
}

/// What a run did.
#[derive(Debug)]
pub enum Outcome {
    /// Printed usage.
    Help,
    /// Printed the case names.
    Listed(Vec<String>),
    /// Ran the profiling window over these cases.
    Profiled(Vec<String>),
    /// Measured; the report was printed and/or written.
    Measured(Box<Report>),
}

impl Bench {
    /// An empty bench.
    pub fn new() -> Bench {
        Bench::default()
    }

    /// Registers a case. `name` is `kernel/param=value,...`; `setup` runs only when the case
    /// is selected, gets the [`Gpu`], and returns the launch closure, which enqueues one
    /// launch on the stream it is given.
    pub fn case<S, L, R>(&mut self, name: impl Into<String>, setup: S) -> &mut Case
    where
        S: FnOnce(&Gpu) -> Result<L> + 'static,
        L: FnMut(&CudaStream) -> R + 'static,
        R: LaunchResult,
    {
        let setup: SetupFn = Box::new(move |gpu: &Gpu| {
            let mut launch = setup(gpu)?;
            let boxed: LaunchFn = Box::new(move |s: &CudaStream| launch(s).into_result());
            Ok(boxed)
        });
        self.cases.push(Case {
            name: name.into(),
            bytes: None,
            flops: None,
            graph: false,
            setup: Some(setup),
            check: None,
        });
        let last = self.cases.len() - 1;
        &mut self.cases[last]
    }

    /// The registered case names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.cases.iter().map(|c| c.name.as_str()).collect()
    }

    fn validate_names(&self) -> Result<()> {
        let mut seen = std::collections::HashSet::new();
        for name in self.names() {
            if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
                bail!(
                    "case name `{name}` is empty or contains whitespace; use \
                     `kernel/param=value,...`"
                );
            }
            if !seen.insert(name) {
                bail!("two cases are named `{name}`; case names must be unique");
            }
        }
        Ok(())
    }

    /// Runs with `options`: prints help or the list, runs the profiling window, or measures,
    /// prints the table (unless quiet) and writes the JSON (when a result path is set).
    pub fn run(self, options: &Options) -> Result<Outcome> {
        self.validate_names()?;
        if options.help {
            print!("{USAGE}");
            return Ok(Outcome::Help);
        }
        if options.list {
            let names: Vec<String> = self.names().iter().map(|s| s.to_string()).collect();
            let mut text = String::new();
            for n in &names {
                text.push_str(n);
                text.push('\n');
            }
            print!("{text}");
            return Ok(Outcome::Listed(names));
        }
        let selected = options.filter.select(&self.names())?;
        let mut cases = self.cases;
        let mut chosen: Vec<Case> = Vec::new();
        for (i, case) in cases.drain(..).enumerate() {
            if selected.contains(&i) {
                chosen.push(case);
            }
        }
        let gpu = Gpu::open(options.device, options.seed)?;
        match options.profile {
            Some(window) => profile(&gpu, chosen, window.launch_count, options),
            None => measure(&gpu, chosen, options),
        }
    }
}

fn prepare(gpu: &Gpu, case: &mut Case, options: &Options) -> Result<Launcher> {
    let setup = case.setup.take().with_context(|| format!("case `{}` was already set up", case.name))?;
    let launch = setup(gpu).with_context(|| format!("setting up case `{}` failed", case.name))?;
    let mut launcher = if case.graph && options.graphs {
        Launcher::capture(gpu, launch, &case.name)?
    } else {
        Launcher::Plain(launch)
    };
    // Warm-up: module load, JIT and first-launch costs happen here, outside measurement.
    launcher.launch(gpu.stream()).with_context(|| format!("case `{}`: warm-up launch failed", case.name))?;
    gpu.synchronize().with_context(|| format!("case `{}`: warm-up launch failed", case.name))?;
    Ok(launcher)
}

fn profile(gpu: &Gpu, mut cases: Vec<Case>, count: u32, options: &Options) -> Result<Outcome> {
    let mut launchers = Vec::with_capacity(cases.len());
    for case in &mut cases {
        launchers.push(prepare(gpu, case, options)?);
    }
    gpu.context().bind_to_thread()?;
    cudarc::driver::profiler_start().context("cuProfilerStart failed")?;
    let launched = (|| -> Result<()> {
        for (case, launcher) in cases.iter().zip(launchers.iter_mut()) {
            for _ in 0..count {
                launcher
                    .launch(gpu.stream())
                    .with_context(|| format!("case `{}`: launch failed", case.name))?;
            }
        }
        gpu.synchronize()
    })();
    let stopped = cudarc::driver::profiler_stop().context("cuProfilerStop failed");
    launched?;
    stopped?;
    let names: Vec<String> = cases.iter().map(|c| c.name.clone()).collect();
    eprintln!(
        "kprof: profiling window: {count} launch(es) of each of {} case(s): {}",
        names.len(),
        names.join(", ")
    );
    Ok(Outcome::Profiled(names))
}

fn measure(gpu: &Gpu, cases: Vec<Case>, options: &Options) -> Result<Outcome> {
    let mut timer = Timer::new(gpu)?;
    let mut results = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    for mut case in cases {
        let check = match case.check.take() {
            None => "none",
            Some(_) if !options.check => "skipped",
            Some(check) => match check(gpu) {
                Ok(()) => "passed",
                Err(e) => {
                    let msg = format!("case `{}` failed its correctness check: {e:#}", case.name);
                    eprintln!("kprof: {msg}");
                    failures.push(msg);
                    continue;
                }
            },
        };
        let mut launcher = prepare(gpu, &mut case, options)?;
        for &mode in options.modes.modes() {
            let m = timer
                .measure(gpu, &mut launcher, mode, &options.rule)
                .with_context(|| format!("case `{}`: {} measurement failed", case.name, mode.as_str()))?;
            results.push(crate::report::case_result(
                &case.name,
                &m,
                launcher.is_graph(),
                check,
                case.bytes,
                case.flops,
                gpu.info(),
            ));
        }
        drop(launcher);
        gpu.synchronize()?;
    }
    let report = Report {
        schema_version: SCHEMA_VERSION,
        harness_version: env!("CARGO_PKG_VERSION").to_string(),
        bench: bench_name(),
        device: gpu.info().clone(),
        settings: Settings::of(options),
        cases: results,
    };
    if !options.quiet {
        report.print_table()?;
    }
    if let Some(path) = &options.result_path {
        report.write_json(path)?;
    }
    if !failures.is_empty() {
        bail!("{}", failures.join("\n"));
    }
    Ok(Outcome::Measured(Box::new(report)))
}

/// The running executable's name without cargo's `-<16 hex digits>` suffix.
pub fn bench_name() -> String {
    let stem = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "bench".to_string());
    strip_hash(&stem).to_string()
}

fn strip_hash(stem: &str) -> &str {
    match stem.rsplit_once('-') {
        Some((base, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => base,
        _ => stem,
    }
}

/// Compares `got` with `want` element by element: `|got - want| <= atol + rtol * |want|`.
/// The error names the first mismatch, how many there are, and the largest difference.
pub fn assert_close(what: &str, got: &[f32], want: &[f32], rtol: f32, atol: f32) -> Result<()> {
    if got.len() != want.len() {
        bail!("{what}: {} values computed but {} expected", got.len(), want.len());
    }
    let mut first: Option<usize> = None;
    let mut bad = 0usize;
    let mut worst = 0f32;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let diff = (g - w).abs();
        let within = diff <= atol + rtol * w.abs(); // false for NaN
        if !within {
            bad += 1;
            first.get_or_insert(i);
        }
        if diff > worst || diff.is_nan() {
            worst = diff;
        }
    }
    if let Some(i) = first {
        bail!(
            "{what}: {bad} of {} values differ from the reference (rtol {rtol}, atol {atol}); \
             first at index {i}: got {}, expected {}; largest difference {worst}",
            got.len(),
            got[i],
            want[i]
        );
    }
    Ok(())
}

/// Runs `bench` with the options of this process (arguments and environment) and exits:
/// 0 on success, 1 with the error and its causes on stderr otherwise. Call it at the end of
/// a bench target's `main`.
pub fn main(bench: Bench) -> ! {
    let result = Options::from_process().and_then(|options| bench.run(&options));
    match result {
        Ok(_) => std::process::exit(0),
        Err(e) => {
            eprintln!("error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            std::process::exit(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Options;

    fn bench() -> Bench {
        let mut b = Bench::new();
        // Setups that would fail loudly if the run ever reached them.
        b.case("copy/n=1", |_gpu| -> Result<fn(&CudaStream)> { bail!("setup must not run") }).bytes(8);
        b.case("fma/n=1", |_gpu| -> Result<fn(&CudaStream)> { bail!("setup must not run") });
        b
    }

    fn opts(args: &[&str]) -> Options {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Options::parse(&args, |_| None).unwrap()
    }

    #[test]
    fn list_needs_no_gpu_and_runs_no_setup() {
        match bench().run(&opts(&["--bench", "--list"])).unwrap() {
            Outcome::Listed(names) => assert_eq!(names, ["copy/n=1", "fma/n=1"]),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn no_matching_case_fails_before_opening_the_device() {
        let e = bench().run(&opts(&["nothing"])).unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("no case matches the FILTER argument=`nothing`"), "{e}");
        assert!(e.contains("copy/n=1") && e.contains("fma/n=1"), "{e}");
    }

    #[test]
    fn duplicate_and_blank_names_are_rejected() {
        let mut b = bench();
        b.case("copy/n=1", |_gpu| Ok(|_s: &CudaStream| ()));
        let e = format!("{:#}", b.run(&opts(&["--list"])).unwrap_err());
        assert!(e.contains("two cases are named `copy/n=1`"), "{e}");
        let mut b = Bench::new();
        b.case("copy n=1", |_gpu| Ok(|_s: &CudaStream| ()));
        assert!(b.run(&opts(&["--list"])).is_err());
    }

    #[test]
    fn bench_name_strips_cargo_hash() {
        assert_eq!(strip_hash("copy-0123456789abcdef"), "copy");
        assert_eq!(strip_hash("hgemm_tiled"), "hgemm_tiled");
        assert_eq!(strip_hash("my-bench"), "my-bench");
    }

    #[test]
    fn assert_close_accepts_and_names_mismatches() {
        assert!(assert_close("c", &[1.0, 2.0], &[1.0, 2.0005], 1e-3, 0.0).is_ok());
        let e = assert_close("C", &[1.0, 5.0, 7.0], &[1.0, 2.0, 3.0], 1e-3, 1e-3).unwrap_err().to_string();
        assert!(e.contains("2 of 3 values differ"), "{e}");
        assert!(e.contains("first at index 1: got 5, expected 2"), "{e}");
        assert!(assert_close("c", &[f32::NAN], &[1.0], 1.0, 1.0).is_err());
        assert!(assert_close("c", &[1.0], &[1.0, 2.0], 1.0, 1.0).is_err());
    }
}
