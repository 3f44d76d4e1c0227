//! The folders of NVRTC output that the harness runs of one invocation share
//! (`KPROF_PTX_CACHE`, read by `kprof_harness::ptx_cache`).
//!
//! A harness bench compiles its selected kernels with NVRTC every time it starts, and one
//! invocation starts it many times: each ncu stage, each timing run, and for an A/B check
//! each round on each side. NVRTC was most of a start (1.8 s for one zoo kernel of 26
//! small ones that took 3.2 s in all), so the starts after the first load the PTX the
//! first one compiled. A folder lives as long as its [`PtxCache`]: it is made before the
//! first run and removed when the invocation's work ends, however it ends, so sources
//! that change between two invocations are always compiled again. The program is given
//! the folder without the command showing it ([`crate::process::ProcessBuilder::env_unshown`]):
//! `commands.sh` replays the same work without it.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::error::{ExitCode, Failure};

/// Folders of NVRTC output, removed when dropped.
#[derive(Debug)]
pub struct PtxCache {
    dirs: Vec<PathBuf>,
}

impl PtxCache {
    /// One folder in each profiles root of `roots` ([`super::root::ptx_cache_dir`]), not
    /// made yet.
    pub fn for_roots<'p>(roots: impl IntoIterator<Item = &'p Path>) -> PtxCache {
        PtxCache { dirs: roots.into_iter().map(super::root::ptx_cache_dir).collect() }
    }

    /// The folders, in the order of the roots.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Makes the folders; a profiles root that cannot hold one is refused (exit 12).
    pub fn create(&self) -> Result<()> {
        for d in &self.dirs {
            std::fs::create_dir_all(d).map_err(|e| {
                Failure::new(ExitCode::Filesystem, format!("could not create {}: {e}", d.display()))
                    .help("check that the profiles folder is writable")
            })?;
        }
        Ok(())
    }
}

impl Drop for PtxCache {
    fn drop(&mut self) {
        for d in &self.dirs {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folders_exist_while_the_cache_lives_and_are_gone_after() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let cache = PtxCache::for_roots([a.path(), b.path()]);
        let dirs = cache.dirs().to_vec();
        assert_eq!(dirs.len(), 2);
        assert!(dirs[0].starts_with(a.path()) && dirs[1].starts_with(b.path()));
        cache.create().unwrap();
        std::fs::write(dirs[0].join("x.ptx"), "ptx").unwrap();
        assert!(dirs.iter().all(|d| d.is_dir()));
        drop(cache);
        assert!(dirs.iter().all(|d| !d.exists()), "{dirs:?}");
    }
}
