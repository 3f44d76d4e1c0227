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

/// Timing-enabled events and the L2 flush, made once per run.
pub(crate) struct Timer {
    start: CudaEvent,
    end: CudaEvent,
    flush: Option<L2Flush>,
}

impl Timer {
    pub(crate) fn new(gpu: &Gpu) -> Result<Timer> {
        let event = || {
            gpu.context()
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .context("cannot create a timing CUDA event")
        };
        Ok(Timer { start: event()?, end: event()?, flush: None })
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
        Ok(Measurement { mode, batch, samples, summary, stop })
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
}
