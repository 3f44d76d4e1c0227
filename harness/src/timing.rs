//! Timing launches with CUDA events.
//!
//! - A sample is the GPU time between two timing-enabled events around one launch (or a
//!   batch of launches). cudarc's `record_event(None)` makes events with
//!   `CU_EVENT_DISABLE_TIMING`, which cannot be timed, so events here are created with
//!   `CU_EVENT_DEFAULT` and reused for every sample.
//! - Before any sample the case has been launched and synchronised (the warm-up), so module
//!   load, JIT compilation and first-launch costs are outside every measurement.
//! - Hot mode times batches of back-to-back launches. A batch is sized so that it lasts at
//!   least [`BATCH_TARGET_NS`]: event resolution is about half a microsecond, so a single
//!   launch of a 2 us kernel would be mostly resolution. The sample is the batch time
//!   divided by its length.
//! - Cold mode flushes L2 before every sample, then times a single launch: what ncu, which
//!   flushes caches before each profiled launch, also measures. The flush *reads* a buffer
//!   twice the L2 size (allocated once per run) with a small hand-written PTX kernel
//!   (`l2_flush.ptx`, so no NVRTC is needed). A write-based flush (a memset, as first
//!   tried) leaves L2 full of dirty lines whose write-back then lands inside the timed
//!   launch: on the H200 it made a 105 us DRAM-bound kernel measure 115 us.
//! - Graph cases are captured once into a CUDA graph, and each launch replays it.
//! - After a measurement's last sample a one-thread probe kernel (`clock_probe.ptx`) spins
//!   for [`CLOCK_PROBE_CYCLES`] SM cycles (`%clock64`) and times them with `%globaltimer`
//!   (ns); their ratio is the SM clock the GPU ran at when the measurement ended
//!   ([`Measurement::sm_clock_mhz`]). cudarc has no NVML, and with unlocked clocks an A/B
//!   check needs it to drop rounds run at a throttled clock. `%globaltimer` moves in steps of
//!   about a microsecond, so over about 1 ms the error is about 0.1 %. The probe never fails a
//!   measurement: when it cannot run, the clock is `None`.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use cudarc::driver::sys::{CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaEvent, CudaFunction, CudaGraph, CudaSlice, CudaStream, PushKernelArg};

use crate::config::Mode;
use crate::device::Gpu;
use crate::stats::{Running, StopReason, StoppingRule, Summary};

/// The shortest sample hot mode aims for, in nanoseconds.
pub const BATCH_TARGET_NS: f64 = 50_000.0;
/// The longest batch hot mode uses.
pub const MAX_BATCH: u32 = 10_000;

/// The type-erased launch closure of a case.
pub(crate) type LaunchFn = Box<dyn FnMut(&CudaStream) -> Result<()>>;

/// How a case is launched: directly, or by replaying a captured graph.
pub(crate) enum Launcher {
    Plain(LaunchFn),
    Graph {
        graph: CudaGraph,
        // Owns the buffers and functions the graph's nodes point to.
        _launch: LaunchFn,
    },
}

impl Launcher {
    /// Captures one call of `launch` on the stream into a graph.
    pub(crate) fn capture(gpu: &Gpu, mut launch: LaunchFn, case: &str) -> Result<Launcher> {
        let stream = gpu.stream();
        gpu.synchronize()?;
        stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .with_context(|| format!("{case}: cannot begin stream capture"))?;
        let launched = launch(stream);
        // End the capture whatever happened, so the stream is usable again.
        let ended = stream.end_capture(CUgraphInstantiate_flags(0));
        launched.with_context(|| {
            format!(
                "{case}: the launch closure failed during graph capture; a graph case may only \
                 enqueue work on the stream it is given (no synchronisation, allocation or \
                 host copies). Set NO_GRAPH=1 to run it without a graph"
            )
        })?;
        let graph = ended
            .with_context(|| format!("{case}: stream capture failed"))?
            .with_context(|| format!("{case}: the launch closure enqueued no work to capture"))?;
        graph.upload().with_context(|| format!("{case}: cannot upload the graph"))?;
        Ok(Launcher::Graph { graph, _launch: launch })
    }

    /// Enqueues one launch of the case.
    pub(crate) fn launch(&mut self, stream: &CudaStream) -> Result<()> {
        match self {
            Launcher::Plain(f) => f(stream),
            Launcher::Graph { graph, .. } => graph.launch().context("graph launch failed"),
        }
    }

    /// Whether launches replay a graph.
    pub(crate) fn is_graph(&self) -> bool {
        matches!(self, Launcher::Graph { .. })
    }
}

/// One finished measurement.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// Mode of the samples.
    pub mode: Mode,
    /// Launches per sample.
    pub batch: u32,
    /// Per-launch time of every sample, in nanoseconds.
    pub samples: Vec<f64>,
    /// Their summary.
    pub summary: Summary,
    /// Why sampling stopped.
    pub stop: StopReason,
    /// The SM clock in MHz, measured by the clock probe right after the last sample; `None`
    /// when the probe could not run or gave an implausible value.
    pub sm_clock_mhz: Option<f64>,
}

/// SM cycles the clock probe spins for: about 1 ms at 2 GHz.
pub const CLOCK_PROBE_CYCLES: u64 = 2_000_000;

/// The SM clocks, in MHz, that a probe may report; anything outside is taken as a failed
/// probe.
pub const SM_CLOCK_MHZ_RANGE: std::ops::Range<f64> = 100.0..10_000.0;

/// The SM clock in MHz of a probe that counted `delta_cycles` SM cycles in `delta_ns`
/// nanoseconds, or `None` when that is outside [`SM_CLOCK_MHZ_RANGE`] (no time elapsed, a
/// timer that did not move, a kernel that did not run).
pub fn sm_clock_mhz(delta_cycles: u64, delta_ns: u64) -> Option<f64> {
    if delta_ns == 0 {
        return None;
    }
    let mhz = delta_cycles as f64 / delta_ns as f64 * 1000.0;
    SM_CLOCK_MHZ_RANGE.contains(&mhz).then_some(mhz)
}

/// The PTX of the L2 flush kernel.
const L2_FLUSH_PTX: &str = include_str!("l2_flush.ptx");

/// The read-based L2 flush: its kernel, a buffer twice the L2 size, and a sink word.
struct L2Flush {
    kernel: CudaFunction,
    buf: CudaSlice<u8>,
    sink: CudaSlice<u32>,
    blocks: u32,
}

impl L2Flush {
    fn new(gpu: &Gpu) -> Result<L2Flush> {
        let kernel =
            gpu.load_ptx(L2_FLUSH_PTX, "the harness' L2 flush kernel")?.function("kprof_l2_flush")?;
        let bytes = (2 * gpu.info().l2_bytes as usize).max(32 << 20);
        let buf = gpu.zeros::<u8>(bytes).context("cannot allocate the L2 flush buffer")?;
        let sink = gpu.zeros::<u32>(1)?;
        Ok(L2Flush { kernel, buf, sink, blocks: gpu.info().sm_count * 8 })
    }

    fn enqueue(&mut self, stream: &CudaStream) -> Result<()> {
        let words = (self.buf.len() / 16) as u64;
        let cfg = crate::grid_1d(self.blocks, 256);
        // SAFETY: the kernel reads `words` 16-byte words of `buf` and may write one u32 to
        // `sink`; both buffers outlive the launch (freed stream-ordered after it).
        unsafe {
            stream.launch_builder(&self.kernel).arg(&self.buf).arg(&words).arg(&mut self.sink).launch(cfg)
        }
        .context("the L2 flush kernel failed to launch")?;
        Ok(())
    }
}

/// The PTX of the SM clock probe kernel.
const CLOCK_PROBE_PTX: &str = include_str!("clock_probe.ptx");

/// The SM clock probe: its kernel and the two words it writes (cycles, nanoseconds).
struct ClockProbe {
    kernel: CudaFunction,
    out: CudaSlice<u64>,
}

impl ClockProbe {
    fn new(gpu: &Gpu) -> Result<ClockProbe> {
        let kernel = gpu
            .load_ptx(CLOCK_PROBE_PTX, "the harness' SM clock probe kernel")?
            .function("kprof_clock_probe")?;
        let out = gpu.zeros::<u64>(2).context("cannot allocate the clock probe's output")?;
        Ok(ClockProbe { kernel, out })
    }

    /// Runs the probe once and waits for it; returns the SM cycles and nanoseconds it counted.
    fn run(&mut self, gpu: &Gpu) -> Result<(u64, u64)> {
        let stream = gpu.stream();
        // Zeros read back as "no time elapsed", so a probe that did not write gives no clock.
        stream.memset_zeros(&mut self.out).context("cannot clear the clock probe's output")?;
        let cycles = CLOCK_PROBE_CYCLES;
        // SAFETY: one thread writes two u64 to `out`, which holds two and outlives the
        // launch; `cycles` is passed by value.
        unsafe {
            stream.launch_builder(&self.kernel).arg(&mut self.out).arg(&cycles).launch(crate::grid_1d(1, 1))
        }
        .context("the clock probe kernel failed to launch")?;
        gpu.synchronize().context("the clock probe kernel failed")?;
        let words = gpu.download(&self.out)?;
        match words[..] {
            [delta_cycles, delta_ns] => Ok((delta_cycles, delta_ns)),
            _ => anyhow::bail!("the clock probe returned {} words, not 2", words.len()),
        }
    }
}

/// The clock probe of a run: loaded on first use, and given up on after its first failure
/// so that a broken probe costs one attempt and one warning.
enum Probe {
    NotLoaded,
    Ready(ClockProbe),
    Failed,
}

/// Says on stderr why a measurement has no SM clock.
fn warn_no_clock(why: &str) {
    eprintln!("kprof: warning: {why}; the result carries no sm_clock_mhz");
}

/// Timing-enabled events, the L2 flush and the clock probe, made once per run.
pub(crate) struct Timer {
    start: CudaEvent,
    end: CudaEvent,
    flush: Option<L2Flush>,
    probe: Probe,
    /// Whether an implausible probe reading has been warned about.
    implausible_clock_seen: bool,
}

impl Timer {
    pub(crate) fn new(gpu: &Gpu) -> Result<Timer> {
        let event = || {
            gpu.context()
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .context("cannot create a timing CUDA event")
        };
        Ok(Timer {
            start: event()?,
            end: event()?,
            flush: None,
            probe: Probe::NotLoaded,
            implausible_clock_seen: false,
        })
    }

    /// Evicts everything from L2 by reading a buffer of twice its size.
    fn flush_l2(&mut self, gpu: &Gpu) -> Result<()> {
        if self.flush.is_none() {
            self.flush = Some(L2Flush::new(gpu)?);
        }
        match self.flush.as_mut() {
            Some(flush) => flush.enqueue(gpu.stream()),
            None => anyhow::bail!("the L2 flush was not set up"),
        }
    }

    /// The SM clock now, in MHz, from the clock probe; `None` when the probe cannot be loaded
    /// or run (then it is not tried again this run) or reads an implausible value, each with
    /// one warning on stderr per run, so that it never fails a measurement.
    fn sm_clock_mhz(&mut self, gpu: &Gpu) -> Option<f64> {
        if matches!(self.probe, Probe::NotLoaded) {
            self.probe = match ClockProbe::new(gpu) {
                Ok(probe) => Probe::Ready(probe),
                Err(e) => {
                    warn_no_clock(&format!("the SM clock probe cannot be loaded: {e:#}"));
                    Probe::Failed
                }
            };
        }
        let Probe::Ready(probe) = &mut self.probe else {
            return None;
        };
        match probe.run(gpu) {
            Ok((delta_cycles, delta_ns)) => {
                let mhz = sm_clock_mhz(delta_cycles, delta_ns);
                if mhz.is_none() && !self.implausible_clock_seen {
                    self.implausible_clock_seen = true;
                    warn_no_clock(&format!(
                        "the SM clock probe counted {delta_cycles} cycles in {delta_ns} ns, outside \
                         {SM_CLOCK_MHZ_RANGE:?} MHz"
                    ));
                }
                mhz
            }
            Err(e) => {
                warn_no_clock(&format!("the SM clock probe failed: {e:#}"));
                self.probe = Probe::Failed;
                None
            }
        }
    }

    /// Times `batch` launches (after an L2 flush when `cold`); returns nanoseconds for the
    /// whole batch.
    fn sample(&mut self, gpu: &Gpu, launcher: &mut Launcher, batch: u32, cold: bool) -> Result<f64> {
        if cold {
            self.flush_l2(gpu)?;
        }
        let stream = gpu.stream();
        self.start.record(stream).context("cannot record a CUDA event")?;
        for _ in 0..batch {
            launcher.launch(stream)?;
        }
        self.end.record(stream).context("cannot record a CUDA event")?;
        let ms = self
            .start
            .elapsed_ms(&self.end)
            .context("the launch failed, or its events could not be timed")?;
        Ok(ms as f64 * 1e6)
    }

    /// Measures one case in one mode until `rule` says stop. The case must be warmed up.
    pub(crate) fn measure(
        &mut self,
        gpu: &Gpu,
        launcher: &mut Launcher,
        mode: Mode,
        rule: &StoppingRule,
    ) -> Result<Measurement> {
        let cold = mode == Mode::Cold;
        let batch = match mode {
            Mode::Cold => 1,
            Mode::Hot => {
                let single = self.sample(gpu, launcher, 1, false)?;
                batch_size(single)
            }
        };
        let began = Instant::now();
        let mut running = Running::default();
        let mut measured = Duration::ZERO;
        let mut samples = Vec::new();
        let stop = loop {
            let total = self.sample(gpu, launcher, batch, cold)?;
            measured += Duration::from_nanos(total as u64);
            let per_launch = total / batch as f64;
            samples.push(per_launch);
            running.push(per_launch);
            if let Some(stop) = rule.decide(&running, measured, began.elapsed()) {
                break stop;
            }
        };
        let summary = Summary::of(&samples).context("no valid timing samples")?;
        let sm_clock_mhz = self.sm_clock_mhz(gpu);
        Ok(Measurement { mode, batch, samples, summary, stop, sm_clock_mhz })
    }
}

/// Launches per hot sample for a kernel whose single launch took `single_ns`.
pub fn batch_size(single_ns: f64) -> u32 {
    if single_ns.is_nan() || single_ns <= 0.0 {
        return MAX_BATCH;
    }
    ((BATCH_TARGET_NS / single_ns).ceil() as u32).clamp(1, MAX_BATCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_kernels_are_not_batched() {
        assert_eq!(batch_size(50_000.0), 1);
        assert_eq!(batch_size(2_000_000.0), 1);
    }

    #[test]
    fn short_kernels_are_batched_to_the_target() {
        assert_eq!(batch_size(2_000.0), 25);
        assert_eq!(batch_size(30_000.0), 2);
        assert_eq!(batch_size(0.0), MAX_BATCH);
        assert_eq!(batch_size(1.0), MAX_BATCH);
    }

    #[test]
    fn sm_clock_is_cycles_per_microsecond() {
        // 2e6 cycles in 1.0101 ms: 1980 MHz.
        let mhz = sm_clock_mhz(2_000_000, 1_010_101).unwrap();
        assert!((mhz - 1980.0).abs() < 0.01, "{mhz}");
        assert_eq!(sm_clock_mhz(2_000_000, 2_000_000), Some(1000.0));
    }

    #[test]
    fn implausible_sm_clocks_are_none() {
        assert_eq!(sm_clock_mhz(0, 0), None);
        assert_eq!(sm_clock_mhz(2_000_000, 0), None);
        assert_eq!(sm_clock_mhz(0, 1_000_000), None);
        // 20 GHz and 50 MHz.
        assert_eq!(sm_clock_mhz(2_000_000, 100_000), None);
        assert_eq!(sm_clock_mhz(2_000_000, 40_000_000), None);
        assert_eq!(sm_clock_mhz(u64::MAX, 1), None);
    }

    #[test]
    fn the_clock_probe_ptx_has_the_entry_the_harness_launches() {
        assert!(CLOCK_PROBE_PTX.contains(".visible .entry kprof_clock_probe("));
        assert!(CLOCK_PROBE_PTX.contains("%clock64") && CLOCK_PROBE_PTX.contains("%globaltimer"));
        assert!(!CLOCK_PROBE_PTX.contains('\0'));
    }
}
