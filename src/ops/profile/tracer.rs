//! Which way a run's censuses are taken, decided once per run before any program starts:
//! by tracing (`collect::traced`) when CUPTI and the tracer library are both here, else by
//! ncu's durations-only pass with the reason, which each census then says in one line.
//!
//! - `KPROF_CENSUS=ncu` chooses ncu's pass without a word (any other value, or none: the
//!   tracer where it can be used).
//! - CUPTI: the file `KPROF_CUPTI` names; else `libcupti.so` (or `.so.13`, `.so.12`,
//!   `.so.11.8`) in `$CUDA_HOME` or `$CUDA_PATH` (`extras/CUPTI/lib64`, `lib64`,
//!   `targets/x86_64-linux/lib`), then as the loader finds it (`LD_LIBRARY_PATH`, the
//!   `ld.so` cache, the standard folders), then in `/usr/local/cuda`'s two folders: the
//!   same names `run --archive` checks (`archive::libs::cupti_for_census`).
//! - The tracer: the file `KPROF_TRACER` names (a `libkprof_tracer.so` built elsewhere),
//!   else the one an unpacked archive carries (`cargo kprof archive` builds and packs it),
//!   else the one `build::tracer` builds with cargo into the profiling target directory on
//!   first use.
//!
//! `doctor` reports the same decision, without building anything.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::Extras;
use crate::archive::libs::{cupti_for_census, traces_census, CUPTI_NAMES};
use crate::archive::loader::Search;
use crate::collect::traced::{CensusWay, Tracer};
use crate::events::{BuildPurpose, BuildStarted, Event};
use crate::plan::Plan;
use crate::shell::Shell;

/// `KPROF_CENSUS`: `ncu` for ncu's pass; otherwise the tracer where it can be used.
pub const CENSUS_VAR: &str = "KPROF_CENSUS";
/// `KPROF_TRACER`: a built tracer library to use instead of building one.
pub const LIBRARY_VAR: &str = "KPROF_TRACER";

/// The folders of a CUDA toolkit at `root` that may hold CUPTI.
const CUDA_SUBDIRS: [&str; 3] = ["extras/CUPTI/lib64", "lib64", "targets/x86_64-linux/lib"];

/// How the censuses of `plan` are taken (only worked out when the run takes one).
pub fn census_way(plan: &Plan, extras: Extras, shell: &Shell) -> CensusWay {
    if plan.dry_run || !extras.runs_ncu() || !plan.kernels.iter().any(traces_census) {
        return CensusWay::Ncu(None);
    }
    if ncu_chosen() {
        return CensusWay::Ncu(None);
    }
    let cupti = match locate_cupti(&Probe::here(shell)) {
        Ok(p) => p,
        Err(why) => return CensusWay::Ncu(Some(why)),
    };
    let library = match (std::env::var_os(LIBRARY_VAR), &plan.tracer) {
        (Some(v), _) => named_file(LIBRARY_VAR, Path::new(&v)),
        (None, Some(packed)) => Ok(packed.clone()),
        (None, None) => {
            let (cargo, target_dir) = match &plan.build {
                Some(b) => (b.cargo.clone(), b.target_dir.clone()),
                None => (crate::build::cargo_binary(), plan.workspace_root.join("target").join("kprof")),
            };
            built_tracer(&cargo, &target_dir, shell)
                .map_err(|e| format!("{e} (set {LIBRARY_VAR} to a built libkprof_tracer.so)"))
        }
    };
    match library {
        Ok(library) => CensusWay::Trace(Tracer { library, cupti }),
        Err(why) => CensusWay::Ncu(Some(why)),
    }
}

/// The tracer built under `target_dir` with `cargo` (see `build::tracer`), said first
/// when it is not built yet: the build takes a few seconds, once.
pub fn built_tracer(cargo: &OsString, target_dir: &Path, shell: &Shell) -> Result<PathBuf, String> {
    if !crate::build::tracer::built(target_dir) {
        shell.emit(&Event::BuildStarted(BuildStarted {
            side: None,
            build: crate::build::tracer::tracer_dir(target_dir).display().to_string(),
            targets: 1,
            purpose: BuildPurpose::CensusTracer,
        }));
    }
    crate::build::tracer::ensure(cargo, target_dir, shell)
}

/// What `doctor` says of the census: the way a run would take it, and why.
pub fn describe(shell: &Shell) -> Result<String, String> {
    if ncu_chosen() {
        return Ok(format!("ncu's durations-only pass ({CENSUS_VAR}=ncu)"));
    }
    let cupti =
        locate_cupti(&Probe::here(shell)).map_err(|why| format!("ncu's durations-only pass: {why}"))?;
    let tracer = match std::env::var_os(LIBRARY_VAR) {
        Some(v) => named_file(LIBRARY_VAR, Path::new(&v))
            .map(|p| format!("the tracer {}", p.display()))
            .map_err(|why| format!("ncu's durations-only pass: {why}"))?,
        None => "the tracer, built with cargo on first use".to_string(),
    };
    Ok(format!(
        "tracing (CUPTI {}, {tracer}); ncu's pass where a census is bounded by a range",
        cupti.display()
    ))
}

/// Whether `KPROF_CENSUS=ncu` chose ncu's pass.
fn ncu_chosen() -> bool {
    std::env::var(CENSUS_VAR).is_ok_and(|v| v == "ncu")
}

/// Where CUPTI is looked for: the variables read and the loader's search.
pub struct Probe {
    /// `KPROF_CUPTI`.
    pub explicit: Option<PathBuf>,
    /// `$CUDA_HOME`, `$CUDA_PATH`.
    pub cuda_roots: Vec<PathBuf>,
    /// The loader's search (`LD_LIBRARY_PATH`, the `ld.so` cache, the standard folders).
    pub search: Search,
}

impl Probe {
    /// This machine's.
    pub fn here(shell: &Shell) -> Probe {
        Probe {
            explicit: std::env::var_os(kprof_contract::tracer::CUPTI).map(PathBuf::from),
            cuda_roots: ["CUDA_HOME", "CUDA_PATH"]
                .iter()
                .filter_map(|v| std::env::var_os(v).map(PathBuf::from))
                .collect(),
            search: Search::here(None, shell),
        }
    }
}

/// The CUPTI library the tracer opens, or why there is none (see the module's order).
pub fn locate_cupti(p: &Probe) -> Result<PathBuf, String> {
    if let Some(file) = &p.explicit {
        return named_file(kprof_contract::tracer::CUPTI, file);
    }
    let in_roots = p.cuda_roots.iter().flat_map(|r| {
        CUDA_SUBDIRS.iter().flat_map(move |d| CUPTI_NAMES.iter().map(move |n| r.join(d).join(n)))
    });
    let none = crate::archive::libs::Dynamic::default();
    let found = in_roots.clone().find(|f| f.is_file()).or_else(|| {
        cupti_for_census().candidates.iter().find_map(|c| p.search.find(c, &none, Path::new("/")))
    });
    found.ok_or_else(|| {
        format!(
            "no CUPTI library was found ({} in $CUDA_HOME, $CUDA_PATH, LD_LIBRARY_PATH, the ld.so cache or \
             /usr/local/cuda); set {} to its file",
            CUPTI_NAMES[0],
            kprof_contract::tracer::CUPTI
        )
    })
}

/// The file the variable `var` names, or why it is not one.
fn named_file(var: &str, file: &Path) -> Result<PathBuf, String> {
    match file.is_file() {
        true => Ok(file.to_path_buf()),
        false => Err(format!("{var} names {}, which is not a file", file.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(explicit: Option<&Path>, roots: &[&Path]) -> Probe {
        Probe {
            explicit: explicit.map(Path::to_path_buf),
            cuda_roots: roots.iter().map(|r| r.to_path_buf()).collect(),
            search: Search::default(),
        }
    }

    #[test]
    fn kprof_cupti_names_the_file_or_says_it_is_not_one() {
        let nothing = Path::new("/nonexistent/libcupti.so");
        let e = locate_cupti(&probe(Some(nothing), &[])).unwrap_err();
        assert_eq!(e, "KPROF_CUPTI names /nonexistent/libcupti.so, which is not a file");
        let exe = std::env::current_exe().unwrap();
        assert_eq!(locate_cupti(&probe(Some(&exe), &[])).unwrap(), exe);
    }

    #[test]
    fn cupti_is_found_under_a_cuda_root_s_extras() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("extras/CUPTI/lib64");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("libcupti.so.13"), b"").unwrap();
        assert_eq!(locate_cupti(&probe(None, &[root.path()])).unwrap(), dir.join("libcupti.so.13"));
        let empty = tempfile::tempdir().unwrap();
        if !Path::new(crate::archive::libs::CUPTI_DIRS[0]).exists()
            && !Path::new(crate::archive::libs::CUPTI_DIRS[1]).join("libcupti.so").exists()
        {
            let e = locate_cupti(&probe(None, &[empty.path()])).unwrap_err();
            assert!(e.starts_with("no CUPTI library was found") && e.contains("KPROF_CUPTI"), "{e}");
        }
    }
}
