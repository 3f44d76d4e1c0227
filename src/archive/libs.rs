//! The shared libraries an archived program loads, recorded when it is packed.
//!
//! Two kinds: the ELF `DT_NEEDED` list (the dynamic loader refuses to start the program
//! when one is missing), and the libraries cudarc opens itself with `dlopen` when it is
//! built with `dynamic-loading` (they never appear in `DT_NEEDED`; cudarc opens each only
//! when the program first uses it). The GPU machine checks both before profiling
//! (`archive::loader`).
//!
//! ELF files are read with the `object` crate: well kept (it is the reader behind the
//! standard library's backtraces), and with only its ELF reader enabled it adds no
//! dependency and little build time. Its `ReadCache` reads only the headers and the
//! dynamic section, so a 500 MB cuBLAS is not read whole.

use std::collections::BTreeSet;
use std::path::Path;

use cargo_metadata::Metadata;
use object::elf;
use object::read::elf::{Dyn, ElfFile64, SectionHeader};
use object::{Endianness, ReadCache};
use serde::{Deserialize, Serialize};

/// The cudarc features whose library cudarc opens itself, and the library's base name
/// (`libNAME.so...`).
const CUDARC_LIBRARIES: [(&str, &str); 15] = [
    ("driver", "cuda"),
    ("nvrtc", "nvrtc"),
    ("cublas", "cublas"),
    ("cublaslt", "cublasLt"),
    ("curand", "curand"),
    ("runtime", "cudart"),
    ("cufft", "cufft"),
    ("cusparse", "cusparse"),
    ("cusolver", "cusolver"),
    ("cusolvermg", "cusolverMg"),
    ("nccl", "nccl"),
    ("cupti", "cupti"),
    ("nvtx", "nvToolsExt"),
    ("cudnn", "cudnn"),
    ("cutensor", "cutensor"),
];

/// The version suffixes cudarc tries after `libNAME.so` on Linux (its
/// `get_lib_name_candidates`), newest CUDA first.
const CUDARC_SUFFIXES: [&str; 7] = ["", ".13", ".12", ".11", ".10", ".9", ".1"];

/// The file names of the CUPTI library kprof's tracing census opens, newest CUDA first.
pub const CUPTI_NAMES: [&str; 4] = ["libcupti.so", "libcupti.so.13", "libcupti.so.12", "libcupti.so.11.8"];

/// The CUDA toolkit's folders that hold CUPTI, which the loader does not search unless
/// `LD_LIBRARY_PATH` or the `ld.so` cache names them.
pub const CUPTI_DIRS: [&str; 2] = ["/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/lib64"];

/// The CUPTI library a program's traced census needs: any of [`CUPTI_NAMES`] the loader
/// finds, or one of them in [`CUPTI_DIRS`] (the census then takes the first it finds; see
/// `ops::profile::tracer`). Without it the census is ncu's pass, as before.
pub fn cupti_for_census() -> OpenedLibrary {
    let names = CUPTI_NAMES.iter().map(|n| n.to_string());
    let in_dirs = CUPTI_DIRS.iter().flat_map(|d| CUPTI_NAMES.iter().map(move |n| format!("{d}/{n}")));
    OpenedLibrary {
        by: "kprof's tracing census (without it, ncu's census)".into(),
        candidates: names.chain(in_dirs).collect(),
    }
}

/// Whether `kernel`'s census may be traced, so that its program needs CUPTI: a program
/// with no kernel named that is not a harness bench.
pub fn traces_census(kernel: &crate::plan::KernelPlan) -> bool {
    kernel.filter.is_none() && kernel.runtime != crate::model::kinds::Runtime::Harness
}

/// What one packed program needs of the machine that runs it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramLibraries {
    /// The program's file in the archive (`bin/NAME`).
    pub executable: String,
    /// Its `DT_NEEDED` entries, in order.
    pub needed: Vec<String>,
    /// Its `DT_RUNPATH` folders (`$ORIGIN` kept as written).
    #[serde(default)]
    pub runpath: Vec<String>,
    /// Its `DT_RPATH` folders (searched only when there is no `DT_RUNPATH`).
    #[serde(default)]
    pub rpath: Vec<String>,
    /// The libraries cudarc opens with `dlopen` (its `dynamic-loading`).
    #[serde(default)]
    pub opened: Vec<OpenedLibrary>,
    /// Libraries the needed ones need in turn, as found on the build machine: a record,
    /// the GPU machine follows the files it finds itself.
    #[serde(default)]
    pub below: Vec<String>,
}

/// A library a program opens itself rather than through the loader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenedLibrary {
    /// Who opens it and why (`cudarc feature `cublas``).
    pub by: String,
    /// The file names tried; any one that resolves will do.
    pub candidates: Vec<String>,
}

/// The dynamic section of one ELF file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dynamic {
    /// `DT_NEEDED` entries.
    pub needed: Vec<String>,
    /// `DT_RUNPATH` folders.
    pub runpath: Vec<String>,
    /// `DT_RPATH` folders.
    pub rpath: Vec<String>,
}

/// The largest dynamic section read (real ones are a few KiB).
const MAX_DYNAMIC_BYTES: u64 = 16 << 20;

/// Reads the dynamic section of a 64-bit ELF file; `Ok(None)` for a file that is not
/// one (a script, another format), an error when it cannot be read.
pub fn read_dynamic(path: &Path) -> std::io::Result<Option<Dynamic>> {
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let cache = ReadCache::new(file);
    let Ok(elf) = ElfFile64::<Endianness, _>::parse(&cache) else { return Ok(None) };
    let endian = elf.endian();
    let sections = elf.elf_section_table();
    // A header may claim any size: a dynamic section or string table larger than the file,
    // or than any real one, is not read (it would be read whole).
    let sane = |size: u64| size <= len.min(MAX_DYNAMIC_BYTES);
    if sections.iter().any(|h| h.sh_type(endian) == elf::SHT_DYNAMIC && !sane(h.sh_size(endian))) {
        return Ok(None);
    }
    if sections.iter().any(|h| h.sh_type(endian) == elf::SHT_STRTAB && h.sh_size(endian) > len) {
        return Ok(None);
    }
    let mut out = Dynamic::default();
    let Ok(Some((entries, link))) = sections.dynamic(endian, &cache) else { return Ok(Some(out)) };
    let Ok(strings) = sections.strings(endian, &cache, link) else { return Ok(Some(out)) };
    for d in entries {
        let (Some(tag), Some(at)) = (d.tag32(endian), d.val32(endian)) else { continue };
        let list = match tag {
            elf::DT_NEEDED => &mut out.needed,
            elf::DT_RUNPATH => &mut out.runpath,
            elf::DT_RPATH => &mut out.rpath,
            _ => continue,
        };
        let Ok(bytes) = strings.get(at) else { continue };
        let text = String::from_utf8_lossy(bytes).into_owned();
        if tag == elf::DT_NEEDED {
            list.push(text);
        } else {
            list.extend(text.split(':').filter(|s| !s.is_empty()).map(String::from));
        }
    }
    Ok(Some(out))
}

/// The libraries cudarc opens itself, from the features `cargo metadata`'s resolve
/// enabled for it: none unless it loads dynamically (`dynamic-loading`, or
/// `fallback-dynamic-loading` without `dynamic-linking` or `static-linking`, as its build
/// script decides).
pub fn cudarc_opened(metadata: &Metadata) -> Vec<OpenedLibrary> {
    let Some(resolve) = &metadata.resolve else { return Vec::new() };
    let mut features: BTreeSet<String> = BTreeSet::new();
    for node in &resolve.nodes {
        if metadata[&node.id].name.as_str() == "cudarc" {
            features.extend(node.features.iter().map(|f| f.to_string()));
        }
    }
    opened_for_features(&features)
}

/// [`cudarc_opened`] for a set of enabled cudarc features.
pub fn opened_for_features(features: &BTreeSet<String>) -> Vec<OpenedLibrary> {
    let has = |f: &str| features.contains(f);
    let loads = has("dynamic-loading")
        || (has("fallback-dynamic-loading") && !has("dynamic-linking") && !has("static-linking"));
    if !loads {
        return Vec::new();
    }
    CUDARC_LIBRARIES
        .iter()
        .filter(|(feature, _)| has(feature))
        .map(|(feature, lib)| OpenedLibrary {
            by: format!("cudarc feature `{feature}`"),
            candidates: CUDARC_SUFFIXES.iter().map(|s| format!("lib{lib}.so{s}")).collect(),
        })
        .collect()
}

/// The record of one program: its dynamic section, what cudarc opens, and the libraries
/// below the needed ones that `find` locates on this machine.
pub fn record(
    exe: &Path,
    in_archive: &str,
    opened: &[OpenedLibrary],
    find: &dyn Fn(&str, &Dynamic, &Path) -> Option<std::path::PathBuf>,
) -> ProgramLibraries {
    let dynamic = read_dynamic(exe).ok().flatten().unwrap_or_default();
    let mut below: Vec<String> = Vec::new();
    let mut seen: BTreeSet<String> = dynamic.needed.iter().cloned().collect();
    let mut queue: Vec<(String, Dynamic, std::path::PathBuf)> =
        dynamic.needed.iter().map(|n| (n.clone(), dynamic.clone(), exe.to_path_buf())).collect();
    let first: Vec<String> = opened.iter().filter_map(|o| o.candidates.first().cloned()).collect();
    queue.extend(first.into_iter().map(|n| (n, dynamic.clone(), exe.to_path_buf())));
    while let Some((name, parent, parent_file)) = queue.pop() {
        let Some(file) = find(&name, &parent, &parent_file) else { continue };
        let Some(d) = read_dynamic(&file).ok().flatten() else { continue };
        for n in &d.needed {
            if seen.insert(n.clone()) {
                below.push(n.clone());
                queue.push((n.clone(), d.clone(), file.clone()));
            }
        }
    }
    below.sort();
    ProgramLibraries {
        executable: in_archive.to_string(),
        needed: dynamic.needed,
        runpath: dynamic.runpath,
        rpath: dynamic.rpath,
        opened: opened.to_vec(),
        below,
    }
}

/// The first library name of `programs` that is neither one plain file name nor an
/// absolute path of plain components (a `DT_NEEDED` entry linked by its full path), with
/// its program: the GPU machine joins each name to the loader's folders and prints it, so
/// a relative `../` would look outside them and a newline would forge a line.
pub fn odd_name<'a>(programs: impl IntoIterator<Item = &'a ProgramLibraries>) -> Option<(&'a str, &'a str)> {
    programs.into_iter().find_map(|p| {
        let opened = p.opened.iter().flat_map(|o| o.candidates.iter());
        let mut names = p.needed.iter().chain(&p.below).chain(opened);
        names.find(|n| !is_library_name(n)).map(|n| (n.as_str(), p.executable.as_str()))
    })
}

/// Whether `name` is one plain file name (not `.` or `..`), or an absolute path of plain
/// components; never empty, no control character, at most 4096 bytes.
fn is_library_name(name: &str) -> bool {
    use std::path::Component;
    if name.is_empty() || name.len() > 4096 || name.chars().any(char::is_control) {
        return false;
    }
    let mut parts = Path::new(name).components();
    match parts.next() {
        Some(Component::RootDir) => parts.all(|c| matches!(c, Component::Normal(_))),
        Some(Component::Normal(_)) => parts.next().is_none() && !name.contains('/'),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    /// #45 G2: a dynamic section header claiming 3 GiB is not read whole: the file is not
    /// taken for a library (it was read, allocating what the header said).
    #[test]
    fn a_dynamic_section_larger_than_its_file_is_not_read() {
        let mut bytes = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]) as usize;
        let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize;
        let (size, count) = (u16_at(&bytes, 0x3a), u16_at(&bytes, 0x3c));
        let dynamic = (0..count)
            .map(|i| shoff + i * size)
            .find(|&h| u32::from_le_bytes(bytes[h + 4..h + 8].try_into().unwrap()) == elf::SHT_DYNAMIC)
            .expect("a dynamic section");
        bytes[dynamic + 32..dynamic + 40].copy_from_slice(&(3u64 << 30).to_le_bytes());
        let tmp = tempfile::tempdir().unwrap();
        let patched = tmp.path().join("libclaims3gib.so");
        std::fs::write(&patched, bytes).unwrap();
        assert_eq!(read_dynamic(&patched).unwrap(), None);
    }

    #[test]
    fn the_test_binary_has_a_needed_list() {
        let exe = std::env::current_exe().unwrap();
        let d = read_dynamic(&exe).unwrap().expect("an ELF file");
        assert!(d.needed.iter().any(|n| n.starts_with("libc.so")), "{d:?}");
    }

    /// `fixtures/elf/`: a library with a RUNPATH of two folders, one with an RPATH.
    #[test]
    fn runpath_and_rpath_are_read_apart() {
        let at = kprof_testkit::fixtures().join("elf");
        let d = read_dynamic(&at.join("runpath.so")).unwrap().expect("an ELF file");
        assert_eq!(d.runpath, ["$ORIGIN/lib", "/opt/cuda/lib64"], "{d:?}");
        assert!(d.rpath.is_empty(), "{d:?}");
        let d = read_dynamic(&at.join("rpath.so")).unwrap().expect("an ELF file");
        assert_eq!(
            (d.rpath.as_slice(), d.runpath.is_empty()),
            (["$ORIGIN/old".to_string()].as_slice(), true)
        );
    }

    #[test]
    fn a_file_that_is_not_elf_has_no_dynamic_section() {
        let tmp = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(tmp.path(), b"#!/bin/sh\necho hi\n").unwrap();
        assert_eq!(read_dynamic(tmp.path()).unwrap(), None);
    }

    #[test]
    fn a_traced_census_needs_cupti_by_name_or_in_cuda_s_folders() {
        let o = cupti_for_census();
        assert!(o.by.contains("tracing census"), "{}", o.by);
        assert_eq!(o.candidates[0], "libcupti.so");
        assert!(o.candidates.contains(&"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13".to_string()));
        // Every candidate passes the archive's name check.
        let p = ProgramLibraries { opened: vec![o], ..Default::default() };
        assert_eq!(odd_name([&p]), None);
    }

    #[test]
    fn cudarc_opens_its_libraries_only_when_it_loads_dynamically() {
        assert!(opened_for_features(&set(&["driver", "cublas", "dynamic-linking"])).is_empty());
        assert!(
            opened_for_features(&set(&["driver", "fallback-dynamic-loading", "dynamic-linking"])).is_empty()
        );
        let opened = opened_for_features(&set(&["driver", "nvrtc", "fallback-dynamic-loading"]));
        let by: Vec<&str> = opened.iter().map(|o| o.by.as_str()).collect();
        assert_eq!(by, ["cudarc feature `driver`", "cudarc feature `nvrtc`"]);
        assert_eq!(opened[0].candidates[0], "libcuda.so");
        assert!(opened[0].candidates.contains(&"libcuda.so.1".to_string()));
        assert_eq!(
            opened_for_features(&set(&["cublas", "dynamic-loading"]))[0].candidates[1],
            "libcublas.so.13"
        );
    }
}
