//! NVRTC's output kept between the runs of one `cargo kprof` invocation.
//!
//! Every run of a bench compiles its selected kernels with NVRTC again, and an A/B check
//! starts each side's bench dozens of times (every timing round, every ncu stage). On 26
//! small kernels NVRTC took 3.2 s in all, 1.8 s of it for one 64-way `switch`: per round
//! and side, that is most of a program's start-up. So when `KPROF_PTX_CACHE` names an
//! existing directory, a compile first looks there for the PTX of exactly the same input.
//!
//! The key is everything NVRTC was given that the harness knows of: the source text, the
//! program name (the file's absolute path), the options, the architecture and NVRTC's
//! version. It does not cover headers the source `#include`s, which is why `cargo kprof`
//! sets the variable only for the runs of one invocation, in a directory of its own that
//! it removes afterwards: sources do not change under a check that is running. Each entry
//! is two files named by a 64-bit hash of the key, `<hash>.key` (the whole key) and
//! `<hash>.ptx`; a hit needs the stored key to equal the key byte for byte, so a hash
//! collision is a miss, never a wrong module. Entries are written to a temporary name and
//! renamed, the key last, so concurrent runs never read half an entry. A cache that cannot
//! be written is no error: the run compiles as it would without one.

use std::path::{Path, PathBuf};

use anyhow::Result;

/// The cache directory `KPROF_PTX_CACHE` names, when it is an existing directory.
pub fn dir_from_env() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os(kprof_contract::env::PTX_CACHE)?);
    dir.is_dir().then_some(dir)
}

/// The key of a compile: what decides its output.
pub fn key(code: &str, program_name: &Path, arch: &str, options: &[String], nvrtc: (i32, i32)) -> String {
    format!(
        "kprof ptx cache 1\nnvrtc {}.{}\narch {arch}\nprogram {}\noptions {}\n\n{code}",
        nvrtc.0,
        nvrtc.1,
        program_name.display(),
        options.join("\u{1f}")
    )
}

/// 64-bit FNV-1a: stable across Rust versions and platforms, unlike `std`'s hasher.
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The PTX stored under `key` in `dir`, or what `compile` returns (then stored). Without a
/// directory, `compile` runs every time.
pub fn cached_or(dir: Option<&Path>, key: &str, compile: impl FnOnce() -> Result<String>) -> Result<String> {
    let Some(dir) = dir else { return compile() };
    let stem = format!("{:016x}", fnv1a64(key.as_bytes()));
    let (key_path, ptx_path) = (dir.join(format!("{stem}.key")), dir.join(format!("{stem}.ptx")));
    if std::fs::read(&key_path).is_ok_and(|k| k == key.as_bytes()) {
        if let Ok(ptx) = std::fs::read_to_string(&ptx_path) {
            return Ok(ptx);
        }
    }
    let ptx = compile()?;
    // The PTX first and the key last: a key present means its PTX is complete.
    let _ = write_renamed(&ptx_path, ptx.as_bytes()).and_then(|()| write_renamed(&key_path, key.as_bytes()));
    Ok(ptx)
}

/// Writes `bytes` to a temporary name beside `path`, then renames it into place.
fn write_renamed(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A fresh empty directory under the system's temporary directory.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("kprof-ptx-cache-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn key_of(code: &str, options: &[&str]) -> String {
        let options: Vec<String> = options.iter().map(|o| o.to_string()).collect();
        key(code, Path::new("/src/k.cu"), "compute_90", &options, (13, 0))
    }

    #[test]
    fn a_second_compile_of_the_same_input_is_served_from_the_directory() {
        let dir = scratch("hit");
        let calls = Cell::new(0);
        let compile = || {
            calls.set(calls.get() + 1);
            Ok(format!("// ptx {}", calls.get()))
        };
        let k = key_of("__global__ void k() {}", &["-DN=1"]);
        assert_eq!(cached_or(Some(dir.as_path()), &k, compile).unwrap(), "// ptx 1");
        assert_eq!(cached_or(Some(dir.as_path()), &k, compile).unwrap(), "// ptx 1");
        assert_eq!(calls.get(), 1, "the second compile was served from the cache");
        // Anything NVRTC is given differently is another entry.
        for other in
            [key_of("__global__ void k() { }", &["-DN=1"]), key_of("__global__ void k() {}", &["-DN=2"])]
        {
            let want = format!("// ptx {}", calls.get() + 1);
            assert_eq!(cached_or(Some(dir.as_path()), &other, compile).unwrap(), want);
        }
        assert_eq!(calls.get(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_ne!(
            key("c", Path::new("/a.cu"), "compute_90", &[], (13, 0)),
            key("c", Path::new("/a.cu"), "compute_90", &[], (12, 9)),
            "the NVRTC version is part of the key"
        );
    }

    #[test]
    fn a_stored_key_that_differs_is_a_miss_and_no_directory_means_no_cache() {
        let dir = scratch("miss");
        let k = key_of("code", &[]);
        cached_or(Some(dir.as_path()), &k, || Ok("first".into())).unwrap();
        // An entry whose key file holds another key (a hash collision, or a torn write) is
        // never served.
        let stem = format!("{:016x}", fnv1a64(k.as_bytes()));
        std::fs::write(dir.as_path().join(format!("{stem}.key")), "another key").unwrap();
        assert_eq!(cached_or(Some(dir.as_path()), &k, || Ok("second".into())).unwrap(), "second");
        assert_eq!(cached_or(None, &k, || Ok("third".into())).unwrap(), "third");
        // A failed compile is returned, and stores nothing.
        let bad = key_of("bad", &[]);
        assert!(cached_or(Some(dir.as_path()), &bad, || anyhow::bail!("no")).is_err());
        let left: Vec<_> =
            std::fs::read_dir(dir.as_path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 2, "only the one entry: {left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
