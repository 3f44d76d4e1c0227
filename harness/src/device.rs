//! The device: opening it safely, what it is, and the few things a bench does with it.
//!
//! [`Gpu::open`] checks for libcuda before touching cudarc, whose dynamic loader panics
//! when the library is missing; a machine without a driver or a device gets a [`NoGpu`]
//! error that callers (and tests that must skip) can recognise with `downcast_ref`.
//!
//! Everything runs on one non-blocking stream owned by the [`Gpu`]. Because nothing else
//! touches the context, cudarc's per-buffer event tracking is turned off: it would add an
//! event record and a stream wait per kernel argument per launch, host work that shows up
//! in the timing of short kernels and that stream capture does not want.
//!
//! Peak numbers are derived, not looked up: DRAM peak = memory clock x bus width x 2 (DDR),
//! FP32 peak = SMs x FP32 lanes per SM x 2 (FMA) x SM clock, with the lanes known only for
//! compute capabilities listed in [`fp32_lanes_per_sm`]; others report "unknown".

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use cudarc::driver::sys::{self, CUdevice_attribute as Attr};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;

use crate::nvrtc::{arch_for, compile_ptx_with, CudaSource};
use crate::rng::{mix64, random_vec, RandomValue};

/// There is no usable GPU here: no driver library, no device, or the driver refused to
/// start. Tests that need a GPU skip on this error.
#[derive(Debug, Clone)]
pub struct NoGpu {
    /// What is missing, and what to do about it.
    pub reason: String,
}

impl std::fmt::Display for NoGpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for NoGpu {}

/// Whether libcuda can be loaded here.
pub fn driver_available() -> bool {
    // SAFETY: loads and unloads the library; no symbol is called.
    unsafe { sys::is_culib_present() }
}

/// What the harness knows about a device: identity, size and clocks.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DeviceInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Marketing name, e.g. `NVIDIA H200`.
    pub name: String,
    /// Compute capability, e.g. `9.0`.
    pub compute_capability: String,
    /// Compute capability major.
    #[serde(skip)]
    pub cc_major: u32,
    /// Compute capability minor.
    #[serde(skip)]
    pub cc_minor: u32,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// L2 cache size in bytes.
    pub l2_bytes: u64,
    /// Global memory in bytes.
    pub memory_bytes: u64,
    /// Peak SM clock in kHz (`None` if the driver does not say).
    pub sm_clock_khz: Option<u32>,
    /// Peak memory clock in kHz.
    pub memory_clock_khz: Option<u32>,
    /// Memory bus width in bits.
    pub memory_bus_width_bits: Option<u32>,
    /// Largest dynamic shared memory a block may opt in to, in bytes.
    pub max_shared_memory_per_block_optin: u32,
    /// Driver version, e.g. `13.0`.
    pub driver_version: String,
    /// Theoretical DRAM bandwidth in GB/s (1e9 bytes/s), when known.
    pub dram_peak_gbps: Option<f64>,
    /// Theoretical FP32 throughput in TFLOP/s, when known.
    pub fp32_peak_tflops: Option<f64>,
}

/// FP32 lanes (CUDA cores) per SM for the compute capabilities we are sure of; `None` for
/// the rest, so that no percentage of peak is made up.
pub fn fp32_lanes_per_sm(major: u32, minor: u32) -> Option<u32> {
    match (major, minor) {
        (6, 0) => Some(64),
        (6, 1) | (6, 2) => Some(128),
        (7, 0) | (7, 2) | (7, 5) => Some(64),
        (8, 0) => Some(64),
        (8, 6) | (8, 7) | (8, 9) => Some(128),
        (9, 0) => Some(128),
        _ => None,
    }
}

/// DRAM peak in GB/s: memory clock (kHz) x bus width (bits) x 2 (double data rate) / 8.
pub fn dram_peak_gbps(memory_clock_khz: u32, bus_width_bits: u32) -> f64 {
    memory_clock_khz as f64 * 1e3 * bus_width_bits as f64 * 2.0 / 8.0 / 1e9
}

/// FP32 peak in TFLOP/s: SMs x lanes x 2 (an FMA is two FLOPs) x clock.
pub fn fp32_peak_tflops(sm_count: u32, lanes_per_sm: u32, sm_clock_khz: u32) -> f64 {
    sm_count as f64 * lanes_per_sm as f64 * 2.0 * sm_clock_khz as f64 * 1e3 / 1e12
}

impl DeviceInfo {
    /// The NVRTC architecture for this device, e.g. `compute_90`.
    pub fn nvrtc_arch(&self) -> String {
        arch_for(self.cc_major, self.cc_minor)
    }

    /// Fills in the derived peaks from the raw attributes.
    pub fn with_peaks(mut self) -> DeviceInfo {
        self.dram_peak_gbps = match (self.memory_clock_khz, self.memory_bus_width_bits) {
            (Some(clock), Some(width)) => Some(dram_peak_gbps(clock, width)),
            _ => None,
        };
        self.fp32_peak_tflops = match (fp32_lanes_per_sm(self.cc_major, self.cc_minor), self.sm_clock_khz) {
            (Some(lanes), Some(clock)) => Some(fp32_peak_tflops(self.sm_count, lanes, clock)),
            _ => None,
        };
        self
    }
}

/// A compiled or loaded module; [`function`](Self::function) looks kernels up by name.
#[derive(Debug, Clone)]
pub struct Module {
    inner: Arc<CudaModule>,
    label: String,
}

impl Module {
    /// The kernel `name` (an `extern "C"` name, or a mangled C++ one).
    pub fn function(&self, name: &str) -> Result<CudaFunction> {
        self.inner.load_function(name).map_err(|e| {
            anyhow::anyhow!(
                "kernel `{name}` is not in {}: {e}; declare it `extern \"C\" __global__` so \
                 its name is not mangled, and check the spelling",
                self.label
            )
        })
    }

    /// Where the module came from (a path or a label), for messages.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The cudarc module.
    pub fn cuda_module(&self) -> &Arc<CudaModule> {
        &self.inner
    }
}

/// The opened device, its stream, and methods for modules and buffers. Passed to every
/// case's setup closure.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    seed: u64,
    buffers: Cell<u64>,
    modules: RefCell<HashMap<String, Module>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("info", &self.info).finish()
    }
}

fn no_gpu(reason: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(NoGpu { reason: reason.into() })
}

/// Runs a cudarc call that may panic (a symbol missing from an old driver, say) as an error.
fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .map_err(|_| anyhow::anyhow!("{what} panicked inside cudarc (see the message above)"))
}

impl Gpu {
    /// Opens device `ordinal` with `seed` for its random buffers.
    pub fn open(ordinal: usize, seed: u64) -> Result<Gpu> {
        if !driver_available() {
            return Err(no_gpu(
                "no CUDA driver: libcuda.so could not be loaded. Run on a machine with an \
                 NVIDIA GPU and driver, or put the directory holding libcuda.so.1 on \
                 LD_LIBRARY_PATH",
            ));
        }
        let count = match guarded("cuDeviceGetCount", CudaContext::device_count)? {
            Ok(n) => n,
            Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_NO_DEVICE => 0,
            Err(e) => {
                return Err(no_gpu(format!(
                    "the CUDA driver did not start: {e}. Check `nvidia-smi`; a driver older \
                     than the CUDA version this bench was built for also fails here"
                )))
            }
        };
        if count == 0 {
            return Err(no_gpu("no CUDA device: the driver loaded but sees no GPU"));
        }
        if ordinal >= count as usize {
            bail!("KPROF_DEVICE={ordinal} but this machine has {count} CUDA device(s); use 0..{}", count - 1);
        }
        let ctx = guarded("cuDevicePrimaryCtxRetain", || CudaContext::new(ordinal))?
            .with_context(|| format!("cannot create a CUDA context on device {ordinal}"))?;
        // SAFETY: every buffer and launch of this harness uses the one stream below, so no
        // cross-stream synchronisation is needed; see the module docs.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().context("cannot create a CUDA stream")?;
        let info = query_info(&ctx)?;
        Ok(Gpu { ctx, stream, info, seed, buffers: Cell::new(0), modules: RefCell::new(HashMap::new()) })
    }

    /// What the device is.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The cudarc context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream every launch, copy and allocation of the harness uses.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Waits for all work on the stream.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().context("a kernel or copy on the bench stream failed")
    }

    /// Compiles `source` with NVRTC for this device (line info, `compute_XY` of its compute
    /// capability, the program named by the file's absolute path) and loads it. Compiling the
    /// same source with the same options twice returns the first module. Under
    /// `KPROF_PTX_CACHE` the PTX of an earlier run of the same input is loaded instead of
    /// compiling again ([`crate::ptx_cache`]).
    pub fn compile(&self, source: &CudaSource) -> Result<Module> {
        let name = source.program_name();
        let key = format!("{}\0{}", name.display(), source.options().join("\0"));
        if let Some(m) = self.modules.borrow().get(&key) {
            return Ok(m.clone());
        }
        let arch = self.info.nvrtc_arch();
        let compile = || compile_ptx_with(source.code(), source.path(), &arch, source.options());
        let ptx = match (crate::ptx_cache::dir_from_env(), crate::nvrtc::nvrtc_version()) {
            (Some(dir), Ok(version)) => {
                let key = crate::ptx_cache::key(source.code(), &name, &arch, source.options(), version);
                crate::ptx_cache::cached_or(Some(&dir), &key, compile)?
            }
            _ => compile()?,
        };
        let module = self.load_ptx(&ptx, &name.display().to_string())?;
        self.modules.borrow_mut().insert(key, module.clone());
        Ok(module)
    }

    /// Loads PTX text (e.g. made by `nvcc --ptx` in a build script), as given. `label` names
    /// it in messages.
    pub fn load_ptx(&self, ptx: &str, label: &str) -> Result<Module> {
        if ptx.contains('\0') {
            bail!("the PTX of {label} contains a NUL byte; is it a cubin? use load_cubin");
        }
        let inner = self.ctx.load_module(Ptx::from_src(ptx)).map_err(|e| self.load_error(label, e))?;
        Ok(Module { inner, label: label.to_string() })
    }

    /// Loads a cubin or fatbin image, as given.
    pub fn load_cubin(&self, image: Vec<u8>, label: &str) -> Result<Module> {
        let inner = self.ctx.load_module(Ptx::from_binary(image)).map_err(|e| self.load_error(label, e))?;
        Ok(Module { inner, label: label.to_string() })
    }

    /// Loads a `.ptx`, `.cubin` or `.fatbin` file, as given.
    pub fn load_file(&self, path: impl AsRef<Path>) -> Result<Module> {
        let path = path.as_ref();
        let label = path.display().to_string();
        let bytes = std::fs::read(path).with_context(|| {
            format!("cannot read module {label}; was it built (see the build script's warnings)?")
        })?;
        if path.extension().is_some_and(|e| e == "ptx") {
            let text =
                String::from_utf8(bytes).with_context(|| format!("{label} is not UTF-8 text, so not PTX"))?;
            self.load_ptx(&text, &label)
        } else {
            self.load_cubin(bytes, &label)
        }
    }

    fn load_error(&self, label: &str, e: cudarc::driver::DriverError) -> anyhow::Error {
        let mut msg = format!("the driver could not load the module {label}: {e}");
        if e.0 == sys::cudaError_enum::CUDA_ERROR_UNSUPPORTED_PTX_VERSION {
            msg.push_str(&format!(
                "\nhint: the PTX was made by a newer compiler than driver {} supports; use an \
                 NVRTC/nvcc no newer than the driver, or ship a cubin",
                self.info.driver_version
            ));
        }
        anyhow::anyhow!(msg)
    }

    /// Lets `function` use up to `bytes` of dynamic shared memory per block
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`); needed above 48 KiB.
    pub fn set_max_dynamic_shared_memory(&self, function: &CudaFunction, bytes: u32) -> Result<()> {
        let max = self.info.max_shared_memory_per_block_optin;
        if bytes > max {
            bail!(
                "{bytes} bytes of dynamic shared memory asked for, but {} allows at most {max} \
                 per block",
                self.info.name
            );
        }
        self.ctx.bind_to_thread()?;
        function
            .set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
            .with_context(|| format!("cannot allow {bytes} bytes of dynamic shared memory"))
    }

    /// The seed of the next random buffer; each call gives a new one, the same sequence on
    /// every run with the same `KPROF_SEED`.
    pub fn next_seed(&self) -> u64 {
        let n = self.buffers.get();
        self.buffers.set(n + 1);
        mix64(self.seed ^ mix64(n.wrapping_add(1)))
    }

    /// `n` seeded random values on the host (see [`crate::rng`]); for inputs that a
    /// correctness check also needs on the host. Upload them with [`upload`](Self::upload).
    pub fn random_host<T: RandomValue>(&self, n: usize) -> Vec<T> {
        random_vec(n, self.next_seed())
    }

    /// A device buffer of `n` seeded random values: floats in (-1, 1) and never 0, integers
    /// over their whole range.
    pub fn random<T: RandomValue + DeviceRepr>(&self, n: usize) -> Result<CudaSlice<T>> {
        let host: Vec<T> = self.random_host(n);
        self.upload(&host)
    }

    /// Copies host data to a new device buffer.
    pub fn upload<T: DeviceRepr>(&self, host: &[T]) -> Result<CudaSlice<T>> {
        let bytes = std::mem::size_of_val(host);
        self.stream.clone_htod(host).with_context(|| format!("cannot allocate and upload {bytes} bytes"))
    }

    /// Copies a device buffer back to the host (synchronising the stream).
    pub fn download<T: DeviceRepr + Default + Clone>(&self, device: &CudaSlice<T>) -> Result<Vec<T>> {
        self.stream.clone_dtoh(device).context("cannot copy a device buffer to the host")
    }

    /// A zero-filled device buffer of `n` elements, for outputs. Inputs should be
    /// [`random`](Self::random): kernels are not to be timed on zeros.
    pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(&self, n: usize) -> Result<CudaSlice<T>> {
        let bytes = n.saturating_mul(std::mem::size_of::<T>());
        self.stream.alloc_zeros(n).with_context(|| format!("cannot allocate {bytes} bytes of device memory"))
    }
}

fn query_info(ctx: &Arc<CudaContext>) -> Result<DeviceInfo> {
    let attr = |a: Attr| -> Result<i32> {
        ctx.attribute(a).with_context(|| format!("cannot read device attribute {a:?}"))
    };
    // Clock attributes are deprecated in recent CUDA; a failure or 0 means "unknown".
    let optional = |a: Attr| -> Option<u32> {
        ctx.attribute(a).ok().and_then(|v| u32::try_from(v).ok()).filter(|&v| v > 0)
    };
    let (major, minor) = ctx.compute_capability().context("cannot read the compute capability")?;
    let mut driver = 0i32;
    // SAFETY: valid out-pointer; the driver is loaded (a context exists).
    let _ = unsafe { sys::cuDriverGetVersion(&mut driver) };
    let info = DeviceInfo {
        ordinal: ctx.ordinal(),
        name: ctx.name().context("cannot read the device name")?,
        compute_capability: format!("{major}.{minor}"),
        cc_major: major as u32,
        cc_minor: minor as u32,
        sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
        memory_bytes: ctx.total_mem().context("cannot read the memory size")? as u64,
        sm_clock_khz: optional(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
        memory_clock_khz: optional(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
        memory_bus_width_bits: optional(Attr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
        max_shared_memory_per_block_optin: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?
            as u32,
        driver_version: format!("{}.{}", driver / 1000, (driver % 1000) / 10),
        dram_peak_gbps: None,
        fp32_peak_tflops: None,
    };
    Ok(info.with_peaks())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An H200 as `DeviceInfo::query` reports it, without peaks; shared with other modules' tests.
    pub(crate) fn h200_like() -> DeviceInfo {
        DeviceInfo {
            ordinal: 0,
            name: "NVIDIA H200".into(),
            compute_capability: "9.0".into(),
            cc_major: 9,
            cc_minor: 0,
            sm_count: 132,
            l2_bytes: 60 << 20,
            memory_bytes: 141 << 30,
            sm_clock_khz: Some(1_980_000),
            memory_clock_khz: Some(3_201_000),
            memory_bus_width_bits: Some(6144),
            max_shared_memory_per_block_optin: 232_448,
            driver_version: "13.0".into(),
            dram_peak_gbps: None,
            fp32_peak_tflops: None,
        }
    }

    #[test]
    fn peaks_follow_the_formulas() {
        let info = h200_like().with_peaks();
        // 3.201 GHz x 6144 bits x 2 / 8 = 4916.7 GB/s
        assert!((info.dram_peak_gbps.unwrap() - 4916.736).abs() < 0.01);
        // 132 x 128 x 2 x 1.98 GHz = 66.9 TFLOP/s
        assert!((info.fp32_peak_tflops.unwrap() - 66.908_16).abs() < 1e-6);
        assert_eq!(info.nvrtc_arch(), "compute_90");
    }

    #[test]
    fn unknown_compute_capability_or_clock_gives_unknown_peak() {
        let mut info = h200_like();
        info.cc_major = 12;
        info.cc_minor = 1;
        let info = info.with_peaks();
        assert!(info.fp32_peak_tflops.is_none());
        assert!(info.dram_peak_gbps.is_some());
        let mut info = h200_like();
        info.memory_clock_khz = None;
        assert!(info.with_peaks().dram_peak_gbps.is_none());
    }

    #[test]
    fn lanes_for_known_architectures() {
        assert_eq!(fp32_lanes_per_sm(8, 0), Some(64));
        assert_eq!(fp32_lanes_per_sm(8, 6), Some(128));
        assert_eq!(fp32_lanes_per_sm(9, 0), Some(128));
        assert_eq!(fp32_lanes_per_sm(10, 0), None);
    }

    #[test]
    fn open_without_a_driver_is_a_no_gpu_error_not_a_panic() {
        if driver_available() {
            println!("skipped: a CUDA driver is present; this test covers machines without one");
            return;
        }
        let err = Gpu::open(0, 1).unwrap_err();
        let no_gpu = err.downcast_ref::<NoGpu>().expect("a NoGpu error");
        assert!(no_gpu.reason.contains("libcuda"), "{no_gpu}");
    }
}
