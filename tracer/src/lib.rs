//! kprof-tracer: a CUDA injection library that counts every kernel launch of a program
//! with CUPTI's activity API, for cargo-kprof's census at tracing speed.
//!
//! The CUDA driver loads the library named by `CUDA_INJECTION64_PATH` when the program
//! first calls `cuInit`, and calls its [`InitializeInjection`]. That opens CUPTI with
//! `dlopen` (the file [`tally::CUPTI_VAR`] names, else `libcupti.so`), subscribes (which
//! fails when another CUPTI client, a profiler or tracer, is attached), asks for
//! concurrent-kernel activity records and registers an `atexit` hook. CUPTI hands the
//! records over in buffers; each kernel record is summed into a [`tally::Tally`] and the
//! buffer freed, so memory stays bounded however many launches there are. At exit the
//! hook flushes CUPTI's buffers and writes the tally to `<pid>.tsv` in the folder
//! [`tally::OUT_VAR`] names (written beside and renamed, so a reader never sees half a
//! file). Whatever goes wrong is written to that file as an `error` line, and the program
//! runs on as it would without the tracer: the census then says why it fell back.
//!
//! Only the fields every CUDA 11-13 kernel record shares are read ([`KernelRecord`]: the
//! common prefix of `CUpti_ActivityKernel4` to `CUpti_ActivityKernel13`, up to the name),
//! so one build reads the records of any CUPTI version. A program killed by a signal, or
//! one that leaves with `_exit`, writes no file.
//!
//! This crate has no dependency (cargo-kprof builds it offline on the user's machine):
//! the few CUPTI functions are declared here and looked up with `dlsym`.

pub mod tally;

use std::alloc::{alloc, dealloc, Layout};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use tally::{Launch, Tally};

/// `CUPTI_ACTIVITY_KIND_KERNEL`.
const KIND_KERNEL: u32 = 3;
/// `CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`.
const KIND_CONCURRENT_KERNEL: u32 = 10;
/// `CUPTI_ACTIVITY_FLAG_FLUSH_FORCED`.
const FLUSH_FORCED: u32 = 1;
/// `CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED`.
const MULTIPLE_SUBSCRIBERS: u32 = 39;
/// The size of each activity buffer, and its alignment (CUPTI's samples use these).
const BUFFER_SIZE: usize = 8 << 20;
const BUFFER_ALIGN: usize = 8;
/// `RTLD_NOW`.
const RTLD_NOW: c_int = 2;

/// The fields every CUPTI kernel record (`CUpti_ActivityKernel4` and later) starts with,
/// as NVIDIA's headers lay them out; the tests hold the offsets to cudarc's bindings.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelRecord {
    pub kind: u32,
    pub cache_config: u8,
    pub shared_memory_config: u8,
    pub registers_per_thread: u16,
    pub partitioned_global_cache_requested: u32,
    pub partitioned_global_cache_executed: u32,
    pub start: u64,
    pub end: u64,
    pub completed: u64,
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u32,
    pub grid: [i32; 3],
    pub block: [i32; 3],
    pub static_shared_memory: i32,
    pub dynamic_shared_memory: i32,
    pub local_memory_per_thread: u32,
    pub local_memory_total: u32,
    pub correlation_id: u32,
    pub grid_id: i64,
    pub name: *const c_char,
}

type BufferRequested = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
type BufferCompleted = unsafe extern "C" fn(*mut c_void, u32, *mut u8, usize, usize);
type Callback = unsafe extern "C" fn(*mut c_void, u32, u32, *const c_void);
type Subscribe = unsafe extern "C" fn(*mut *mut c_void, Callback, *mut c_void) -> u32;
type Register = unsafe extern "C" fn(BufferRequested, BufferCompleted) -> u32;
type WithKind = unsafe extern "C" fn(u32) -> u32;
type NextRecord = unsafe extern "C" fn(*mut u8, usize, *mut *mut KernelRecord) -> u32;

/// The CUPTI functions the tracer calls.
struct Cupti {
    subscribe: Subscribe,
    register: Register,
    enable: WithKind,
    next_record: NextRecord,
    flush_all: WithKind,
}

extern "C" {
    fn dlopen(file: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *const c_char;
    fn atexit(hook: extern "C" fn()) -> c_int;
}

static CUPTI: OnceLock<Cupti> = OnceLock::new();
static TALLY: Mutex<Option<Tally>> = Mutex::new(None);
static OUT: OnceLock<PathBuf> = OnceLock::new();

/// Called by the CUDA driver (`CUDA_INJECTION64_PATH`) inside the program's first `cuInit`.
/// Always returns 1 (success): a tracer that cannot trace writes why and lets the program run.
#[no_mangle]
#[allow(non_snake_case)]
pub extern "C" fn InitializeInjection() -> c_int {
    let Some(dir) = std::env::var_os(tally::OUT_VAR).map(PathBuf::from) else { return 1 };
    if OUT.set(dir).is_err() {
        return 1;
    }
    let cap = std::env::var(tally::LAUNCHES_VAR).ok().and_then(|v| v.trim().parse().ok());
    *lock() = Some(Tally::new(cap));
    if let Err(why) = start() {
        with_tally(|t| t.errors.push(why));
        write_file();
        return 1;
    }
    // SAFETY: `at_exit` is a plain function that stays loaded until the process ends.
    if unsafe { atexit(at_exit) } != 0 {
        with_tally(|t| t.errors.push("could not register the exit hook".into()));
        write_file();
    }
    1
}

/// Opens CUPTI and starts the kernel records.
fn start() -> Result<(), String> {
    let cupti = open_cupti()?;
    let cupti = CUPTI.get_or_init(|| cupti);
    let mut subscriber: *mut c_void = std::ptr::null_mut();
    // SAFETY: the functions were looked up by their names in CUPTI, with these signatures.
    unsafe {
        match (cupti.subscribe)(&mut subscriber, on_callback, std::ptr::null_mut()) {
            0 => {}
            MULTIPLE_SUBSCRIBERS => {
                return Err("another CUPTI client (a profiler or tracer) is attached to the program".into())
            }
            e => return Err(format!("cuptiSubscribe failed (CUPTI error {e})")),
        }
        check((cupti.register)(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks")?;
        check((cupti.enable)(KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)")?;
    }
    Ok(())
}

fn check(result: u32, what: &str) -> Result<(), String> {
    match result {
        0 => Ok(()),
        e => Err(format!("{what} failed (CUPTI error {e})")),
    }
}

/// `dlopen` of the CUPTI library and `dlsym` of each function.
fn open_cupti() -> Result<Cupti, String> {
    let file = std::env::var(tally::CUPTI_VAR).unwrap_or_else(|_| "libcupti.so".into());
    let c_file = CString::new(file.clone()).map_err(|_| format!("{} holds a NUL byte", tally::CUPTI_VAR))?;
    // SAFETY: a NUL-terminated file name; the handle is never closed.
    let handle = unsafe { dlopen(c_file.as_ptr(), RTLD_NOW) };
    if handle.is_null() {
        return Err(format!("could not open CUPTI ({file}): {}", last_dl_error()));
    }
    let find = |name: &str| -> Result<*mut c_void, String> {
        let c_name = CString::new(name).unwrap_or_default();
        // SAFETY: a valid handle and a NUL-terminated symbol name.
        let f = unsafe { dlsym(handle, c_name.as_ptr()) };
        if f.is_null() {
            return Err(format!("{file} has no {name}"));
        }
        Ok(f)
    };
    // SAFETY: each symbol is the CUPTI function of that name, whose C signature the field's
    // type spells (cupti_activity.h, cupti_callbacks.h).
    unsafe {
        Ok(Cupti {
            subscribe: std::mem::transmute::<*mut c_void, Subscribe>(find("cuptiSubscribe")?),
            register: std::mem::transmute::<*mut c_void, Register>(find("cuptiActivityRegisterCallbacks")?),
            enable: std::mem::transmute::<*mut c_void, WithKind>(find("cuptiActivityEnable")?),
            next_record: std::mem::transmute::<*mut c_void, NextRecord>(find("cuptiActivityGetNextRecord")?),
            flush_all: std::mem::transmute::<*mut c_void, WithKind>(find("cuptiActivityFlushAll")?),
        })
    }
}

fn last_dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated message.
    let e = unsafe { dlerror() };
    if e.is_null() {
        return "no reason given".into();
    }
    // SAFETY: non-null, NUL-terminated, read before any other dl call.
    unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
}

/// The subscriber's callback: no callback domain is enabled, so it is never called.
unsafe extern "C" fn on_callback(_: *mut c_void, _: u32, _: u32, _: *const c_void) {}

fn buffer_layout() -> Layout {
    Layout::from_size_align(BUFFER_SIZE, BUFFER_ALIGN).unwrap_or(Layout::new::<u64>())
}

/// CUPTI asks for a buffer to fill with records.
unsafe extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    // SAFETY: a non-zero size; freed in `buffer_completed` with the same layout.
    let p = unsafe { alloc(buffer_layout()) };
    // SAFETY: CUPTI passes valid pointers to write the answer to.
    unsafe {
        *buffer = p;
        *size = if p.is_null() { 0 } else { BUFFER_SIZE };
        *max_records = 0;
    }
}

/// CUPTI hands back a filled buffer: its kernel records are summed and it is freed.
unsafe extern "C" fn buffer_completed(_: *mut c_void, _: u32, buffer: *mut u8, _: usize, valid: usize) {
    if buffer.is_null() {
        return;
    }
    if let Some(cupti) = CUPTI.get() {
        let mut guard = lock();
        let mut record: *mut KernelRecord = std::ptr::null_mut();
        // SAFETY: `buffer` holds `valid` bytes of records; each record CUPTI returns stays
        // valid until the buffer is freed, and kernel records start with `KernelRecord`.
        while unsafe { (cupti.next_record)(buffer, valid, &mut record) } == 0 && !record.is_null() {
            // Every record starts with its kind; only a kernel record is read whole (another
            // kind's record may be shorter than the kernel prefix).
            let kind = unsafe { record.cast::<u32>().read() };
            if kind != KIND_CONCURRENT_KERNEL && kind != KIND_KERNEL {
                continue;
            }
            let r = unsafe { *record };
            let name = if r.name.is_null() {
                &b"(unnamed)"[..]
            } else {
                unsafe { CStr::from_ptr(r.name) }.to_bytes()
            };
            if let Some(t) = guard.as_mut() {
                t.add(&Launch { name, start: r.start, end: r.end, grid: r.grid, block: r.block });
            }
        }
    }
    // SAFETY: allocated in `buffer_requested` with this layout.
    unsafe { dealloc(buffer, buffer_layout()) };
}

/// At exit: CUPTI's buffers flushed, then the file written.
extern "C" fn at_exit() {
    if let Some(cupti) = CUPTI.get() {
        // SAFETY: CUPTI's function; it calls `buffer_completed` for what it holds.
        let flushed = unsafe { (cupti.flush_all)(FLUSH_FORCED) };
        if flushed != 0 {
            with_tally(|t| t.errors.push(format!("cuptiActivityFlushAll failed (CUPTI error {flushed})")));
        }
    }
    write_file();
}

fn lock() -> std::sync::MutexGuard<'static, Option<Tally>> {
    TALLY.lock().unwrap_or_else(|e| e.into_inner())
}

fn with_tally(f: impl FnOnce(&mut Tally)) {
    if let Some(t) = lock().as_mut() {
        f(t);
    }
}

/// Writes the tally to `<pid>.tsv` in the output folder, through a file beside it.
fn write_file() {
    let Some(dir) = OUT.get() else { return };
    let guard = lock();
    let Some(t) = guard.as_ref() else { return };
    let pid = std::process::id();
    let (part, file) = (dir.join(format!("{pid}.tsv.part")), dir.join(format!("{pid}.tsv")));
    let mut text = Vec::new();
    if t.write(&mut text).is_ok() && std::fs::write(&part, &text).is_ok() {
        let _ = std::fs::rename(&part, &file);
    }
}

#[cfg(test)]
mod tests {
    use super::KernelRecord;
    use cudarc::cupti::sys as cupti;
    use std::mem::offset_of;

    /// The hand-declared prefix lies where NVIDIA's headers put these fields in every kernel
    /// record version of CUDA 13.0's headers (cudarc's bindgen output of them). The later
    /// versions (11 to 13, CUDA 13.1 to 13.4) start the same way; cudarc binds them only
    /// under their own CUDA features, which the workspace's single version does not enable.
    #[test]
    fn the_record_prefix_matches_every_kernel_record_version() {
        macro_rules! same_prefix {
            ($($t:ty),*) => {$(
                assert_eq!(offset_of!($t, start), offset_of!(KernelRecord, start), stringify!($t));
                assert_eq!(offset_of!($t, end), offset_of!(KernelRecord, end), stringify!($t));
                assert_eq!(offset_of!($t, gridX), offset_of!(KernelRecord, grid), stringify!($t));
                assert_eq!(offset_of!($t, gridZ), offset_of!(KernelRecord, grid) + 8, stringify!($t));
                assert_eq!(offset_of!($t, blockX), offset_of!(KernelRecord, block), stringify!($t));
                assert_eq!(offset_of!($t, blockZ), offset_of!(KernelRecord, block) + 8, stringify!($t));
                assert_eq!(offset_of!($t, name), offset_of!(KernelRecord, name), stringify!($t));
                assert_eq!(offset_of!($t, kind), 0, stringify!($t));
            )*};
        }
        same_prefix!(
            cupti::CUpti_ActivityKernel4,
            cupti::CUpti_ActivityKernel5,
            cupti::CUpti_ActivityKernel6,
            cupti::CUpti_ActivityKernel7,
            cupti::CUpti_ActivityKernel8,
            cupti::CUpti_ActivityKernel9,
            cupti::CUpti_ActivityKernel10
        );
    }

    #[test]
    fn the_kind_and_flag_numbers_are_cuptis() {
        assert_eq!(cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_KERNEL as u32, super::KIND_KERNEL);
        assert_eq!(
            cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL as u32,
            super::KIND_CONCURRENT_KERNEL
        );
        assert_eq!(
            cupti::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED as u32,
            super::MULTIPLE_SUBSCRIBERS
        );
        assert_eq!(cupti::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED as u32, super::FLUSH_FORCED);
    }
}
