//! CUDA C sources and their compilation with NVRTC.
//!
//! Two properties matter for profiling, and both are fixed here rather than left to each
//! bench: every compile passes `--generate-line-info` (so ncu can map SASS back to source
//! lines), and the NVRTC program name is the source file's canonical absolute path (ncu
//! reports the program name as the file path, joined to its working directory when
//! relative, so only an absolute name survives a change of directory).
//!
//! The source text is embedded in the binary at build time by [`cuda_source!`](crate::cuda_source), so a bench
//! binary copied to a GPU machine needs no source tree. [`compile_ptx`] needs no GPU, only
//! libnvrtc, so CI can check that kernels compile and carry line info.
//!
//! NVRTC 13.0 does not ship `cuda_fp16.h` as a built-in header (seen: "cannot open source
//! file"). So a compile that fails on a missing header is retried once with the toolkit's
//! include directories, found as [`toolkit_include_dirs`] says. The first attempt stays
//! header-free, so kernels that need no toolkit header never depend on one.

use std::borrow::Cow;
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use cudarc::nvrtc::{result as nvrtc, sys as nvrtc_sys};

/// A CUDA C source: its path (used as the NVRTC program name) and its text.
///
/// Usually made with [`cuda_source!`](crate::cuda_source), which embeds the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaSource {
    path: PathBuf,
    code: Cow<'static, str>,
    options: Vec<String>,
}

impl CudaSource {
    /// A source with the given path and text. `path` should be where the file really is, so
    /// that ncu and `cargo kprof` can show its lines.
    pub fn new(path: impl Into<PathBuf>, code: impl Into<Cow<'static, str>>) -> CudaSource {
        CudaSource { path: path.into(), code: code.into(), options: Vec::new() }
    }

    /// Reads a source file now (at run time).
    pub fn from_file(path: impl AsRef<Path>) -> Result<CudaSource> {
        let path = path.as_ref();
        let code = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read CUDA source {}", path.display()))?;
        Ok(CudaSource::new(path, code))
    }

    /// Adds an NVRTC option, e.g. `-DTILE=32` or `--use_fast_math`.
    pub fn option(mut self, option: impl Into<String>) -> CudaSource {
        self.options.push(option.into());
        self
    }

    /// Adds `-DNAME=VALUE`.
    pub fn define(self, name: &str, value: impl std::fmt::Display) -> CudaSource {
        self.option(format!("-D{name}={value}"))
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The source text.
    pub fn code(&self) -> &str {
        &self.code
    }

    /// Extra NVRTC options given with [`option`](Self::option) / [`define`](Self::define).
    pub fn options(&self) -> &[String] {
        &self.options
    }

    /// The NVRTC program name: the canonical path when the file exists here, else the path
    /// made absolute against the current directory.
    pub fn program_name(&self) -> PathBuf {
        program_name(&self.path)
    }
}

/// Embeds a CUDA C file of the calling crate, by path relative to its `Cargo.toml`, as a
/// [`CudaSource`]. The file's absolute path becomes the NVRTC program name, and cargo
/// rebuilds the bench when the file changes.
///
/// ```ignore
/// let module = gpu.compile(&cuda_source!("kernels/copy.cu"))?;
/// ```
#[macro_export]
macro_rules! cuda_source {
    ($path:literal) => {
        $crate::CudaSource::new(
            concat!(env!("CARGO_MANIFEST_DIR"), "/", $path),
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/", $path)),
        )
    };
}

/// The canonical absolute form of `path` (see [`CudaSource::program_name`]).
pub fn program_name(path: &Path) -> PathBuf {
    if let Ok(canonical) = std::fs::canonicalize(path) {
        return canonical;
    }
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map(|d| d.join(path)).unwrap_or_else(|_| path.to_path_buf())
    }
}

/// The NVRTC virtual architecture for a compute capability, e.g. `compute_90` for 9.0.
pub fn arch_for(major: u32, minor: u32) -> String {
    format!("compute_{major}{minor}")
}

/// Whether libnvrtc can be loaded (cudarc would panic on first use otherwise).
pub fn nvrtc_available() -> bool {
    // SAFETY: loads and unloads the library; no symbol is called.
    unsafe { nvrtc_sys::is_culib_present() }
}

/// The version of the loaded libnvrtc, e.g. `(13, 0)`.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    ensure_nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two valid out-pointers.
    unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| anyhow::anyhow!("nvrtcVersion failed: {e:?}"))?;
    Ok((major, minor))
}

fn ensure_nvrtc() -> Result<()> {
    if !nvrtc_available() {
        bail!(
            "libnvrtc could not be loaded, so CUDA C cannot be compiled at run time; install \
             the CUDA toolkit (or `pip install nvidia-cuda-nvrtc`) and put the directory \
             holding libnvrtc.so.* on LD_LIBRARY_PATH"
        );
    }
    Ok(())
}

/// The options [`compile_ptx`] passes to NVRTC: line info, the architecture, the source's own
/// directory as an include path, then `extra`. `arch` may be `compute_90` or `sm_90`; PTX is
/// always produced, so `sm_` is turned into `compute_`.
pub fn nvrtc_options(program_name: &Path, arch: &str, extra: &[String]) -> Vec<String> {
    let arch = match arch.strip_prefix("sm_") {
        Some(rest) => format!("compute_{rest}"),
        None => arch.to_string(),
    };
    let mut options = vec!["--generate-line-info".to_string(), format!("--gpu-architecture={arch}")];
    if let Some(dir) = program_name.parent() {
        if !dir.as_os_str().is_empty() {
            options.push(format!("--include-path={}", dir.display()));
        }
    }
    options.extend(extra.iter().cloned());
    options
}

/// Toolkit include directories that exist here, in the order they are tried: each of
/// `KPROF_CUDA_INCLUDE` (a path list), `$CUDA_HOME/include`, `$CUDA_PATH/include`, the
/// `../include` of every `LD_LIBRARY_PATH` directory that holds libnvrtc (the toolkit and
/// PyPI layouts), and `/usr/local/cuda/include`; each followed by its `cccl/` subdirectory
/// when present (CUDA 13 moved `<nv/target>`, which `cuda_fp16.h` needs, there).
pub fn toolkit_include_dirs() -> Vec<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(list) = std::env::var_os("KPROF_CUDA_INCLUDE") {
        candidates.extend(std::env::split_paths(&list));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = std::env::var_os(var) {
            candidates.push(PathBuf::from(root).join("include"));
        }
    }
    if let Some(list) = std::env::var_os("LD_LIBRARY_PATH") {
        for dir in std::env::split_paths(&list) {
            let has_nvrtc = std::fs::read_dir(&dir)
                .map(|entries| {
                    entries
                        .filter_map(|e| e.ok())
                        .any(|e| e.file_name().to_string_lossy().starts_with("libnvrtc.so"))
                })
                .unwrap_or(false);
            if has_nvrtc {
                candidates.push(dir.join("..").join("include"));
            }
        }
    }
    candidates.push(PathBuf::from("/usr/local/cuda/include"));
    let mut found: Vec<PathBuf> = Vec::new();
    for c in candidates {
        let c = std::fs::canonicalize(&c).unwrap_or(c);
        for dir in [c.clone(), c.join("cccl")] {
            if dir.is_dir() && !found.contains(&dir) {
                found.push(dir);
            }
        }
    }
    found
}

/// Compiles CUDA C to PTX with NVRTC, without a GPU: `--generate-line-info`, `arch` (e.g.
/// `compute_90`), and `path` (made canonical and absolute) as the program name.
pub fn compile_ptx(code: &str, path: &Path, arch: &str) -> Result<String> {
    compile_ptx_with(code, path, arch, &[])
}

/// [`compile_ptx`] with extra NVRTC options.
pub fn compile_ptx_with(code: &str, path: &Path, arch: &str, extra: &[String]) -> Result<String> {
    ensure_nvrtc()?;
    let name = program_name(path);
    let options = nvrtc_options(&name, arch, extra);
    match compile_once(code, &name, &options) {
        Ok(ptx) => Ok(ptx),
        Err(CompileFailure { log, .. })
            if log.contains("cannot open source file") && !toolkit_include_dirs().is_empty() =>
        {
            let mut retry = options.clone();
            for dir in toolkit_include_dirs() {
                retry.push(format!("--include-path={}", dir.display()));
            }
            compile_once(code, &name, &retry).map_err(|f| f.into_error(&name, &retry))
        }
        Err(f) => Err(f.into_error(&name, &options)),
    }
}

struct CompileFailure {
    what: String,
    log: String,
}

impl CompileFailure {
    fn into_error(self, name: &Path, options: &[String]) -> anyhow::Error {
        let mut msg = format!(
            "NVRTC could not compile {}: {}\n  options: {}",
            name.display(),
            self.what,
            options.join(" ")
        );
        if !self.log.trim().is_empty() {
            msg.push_str("\n--- NVRTC log\n");
            msg.push_str(self.log.trim_end());
        }
        if self.log.contains("cannot open source file") {
            msg.push_str(
                "\nhint: point KPROF_CUDA_INCLUDE (or CUDA_HOME) at a CUDA toolkit whose \
                 include/ has the missing header",
            );
        }
        anyhow::anyhow!(msg)
    }
}

/// An NVRTC program that is destroyed however compilation ends.
struct Program(nvrtc_sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram and destroyed once.
        let _ = unsafe { nvrtc::destroy_program(self.0) };
    }
}

fn c_string(bytes: Vec<std::ffi::c_char>) -> String {
    let bytes: Vec<u8> = bytes.into_iter().map(|c| c as u8).take_while(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn compile_once(code: &str, name: &Path, options: &[String]) -> std::result::Result<String, CompileFailure> {
    let fail = |what: String| CompileFailure { what, log: String::new() };
    let src = CString::new(code).map_err(|_| fail("the source contains a NUL byte".into()))?;
    let name_c = CString::new(name.to_string_lossy().as_bytes())
        .map_err(|_| fail("the path contains a NUL byte".into()))?;
    let program = Program(
        nvrtc::create_program(src.as_c_str(), Some(name_c.as_c_str() as &CStr))
            .map_err(|e| fail(format!("nvrtcCreateProgram failed: {e:?}")))?,
    );
    // cudarc turns options into C strings with a panicking CString::new: reject NULs first.
    if options.iter().any(|o| o.contains('\0')) {
        return Err(fail("an option contains a NUL byte".into()));
    }
    // SAFETY: `program.0` is a live program.
    let compiled = unsafe { nvrtc::compile_program(program.0, options) };
    if let Err(e) = compiled {
        // SAFETY: live program.
        let log = unsafe { nvrtc::get_program_log(program.0) }.map(c_string).unwrap_or_default();
        return Err(CompileFailure { what: format!("{:?}", e.0), log });
    }
    // SAFETY: live, successfully compiled program.
    let ptx = unsafe { nvrtc::get_ptx(program.0) }.map_err(|e| fail(format!("nvrtcGetPTX failed: {e:?}")))?;
    Ok(c_string(ptx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_always_have_line_info_arch_and_source_dir() {
        let opts = nvrtc_options(Path::new("/src/k/copy.cu"), "sm_90", &["-DX=1".into()]);
        assert_eq!(
            opts,
            vec!["--generate-line-info", "--gpu-architecture=compute_90", "--include-path=/src/k", "-DX=1",]
        );
        let opts = nvrtc_options(Path::new("/k.cu"), "compute_80", &[]);
        assert_eq!(opts[1], "--gpu-architecture=compute_80");
    }

    #[test]
    fn arch_from_compute_capability() {
        assert_eq!(arch_for(9, 0), "compute_90");
        assert_eq!(arch_for(8, 6), "compute_86");
    }

    #[test]
    fn program_name_is_absolute_and_canonical() {
        let here = program_name(Path::new("Cargo.toml"));
        assert!(here.is_absolute());
        assert_eq!(here, std::fs::canonicalize("Cargo.toml").unwrap());
        let missing = program_name(Path::new("no/such/file.cu"));
        assert!(missing.is_absolute() && missing.ends_with("no/such/file.cu"));
        let abs = program_name(Path::new("/no/such/abs.cu"));
        assert_eq!(abs, PathBuf::from("/no/such/abs.cu"));
    }

    #[test]
    fn cuda_source_macro_embeds_file_and_absolute_path() {
        let s = crate::cuda_source!("tests/kernels/axpy.cu");
        assert!(s.path().is_absolute());
        assert!(s.code().contains("kprof_test_axpy"));
        let s = s.define("N", 4).option("--use_fast_math");
        assert_eq!(s.options(), ["-DN=4", "--use_fast_math"]);
    }
}
