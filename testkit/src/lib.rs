//! The recordings under `fixtures/`, as the tests read them.
//!
//! Recordings are committed small: a recorded page, log or profile file over a few KiB is
//! stored as `NAME.gz`, the byte-exact gzip of what the tool wrote (`docs/development.md`
//! says how to add one). Tests should not care which files are compressed, so they read
//! the recordings through [`fixtures`]: a copy of `fixtures/` in the build's target
//! directory where every `NAME.gz` is `NAME` again, made once per state of the folder
//! (its file names, sizes and modification times) and shared by every test process.
//!
//! The copy is never written by the tests' product runs in place (a test copies what it
//! runs `report` on), and it is rebuilt, not patched, when a recording changes.

#![warn(missing_docs)]

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("testkit/ is in the repository").to_path_buf()
}

/// `fixtures/` as the tests read it: every `NAME.gz` of the repository's folder unpacked as
/// `NAME`, every other file as it is.
pub fn fixtures() -> &'static Path {
    static COPY: OnceLock<PathBuf> = OnceLock::new();
    COPY.get_or_init(|| {
        let source = repo().join("fixtures");
        unpacked(&source, &copies_root())
            .unwrap_or_else(|e| panic!("could not unpack {}: {e}", source.display()))
    })
}

/// `fixtures/h200`: the H200 recordings, unpacked (see [`fixtures`]).
pub fn recordings() -> PathBuf {
    fixtures().join("h200")
}

/// The variables of a job array (Slurm's, an indexed Kubernetes Job's) that choose a shard:
/// removed from the environment of a `cargo-kprof` the tests start, so that a suite run
/// inside such a job does not shard its cases.
pub const JOB_ARRAY_VARS: [&str; 4] =
    ["SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "JOB_COMPLETION_INDEX"];

/// The one profile directory of side `side` (`base` or `head`) of the A/B check recorded
/// as `fixtures/h200/ab-runs/<run>/`.
pub fn ab_run_profile(run: &str, side: &str) -> PathBuf {
    let root = recordings().join("ab-runs").join(run).join(side).join("profile");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{}", root.display());
    dirs.into_iter().next().unwrap()
}

/// The text of the recording `rel` (relative to `fixtures/h200`), whether it is committed
/// plain or as `rel.gz`.
pub fn recording(rel: &str) -> String {
    let path = recordings().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Reads `path`, unpacking it when its name ends in `.gz`.
pub fn read_maybe_gz(path: &Path) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(file).read_to_end(&mut bytes)?;
    } else {
        std::io::BufReader::new(file).read_to_end(&mut bytes)?;
    }
    Ok(bytes)
}

/// Where the unpacked copies live: beside the running test executable's `deps/` folder
/// (`target/debug/kprof-fixtures/`), so that `cargo clean` removes them; else the system's
/// temporary folder.
fn copies_root() -> PathBuf {
    let beside_deps = std::env::current_exe().ok().and_then(|exe| {
        let deps = exe.parent()?;
        (deps.file_name()? == "deps").then(|| deps.parent().map(|p| p.join("kprof-fixtures")))?
    });
    beside_deps.unwrap_or_else(|| std::env::temp_dir().join("kprof-fixtures"))
}

/// Every file under `dir`, relative to it, in path order.
fn files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for e in std::fs::read_dir(dir.join(&rel))? {
            let e = e?;
            let kind = e.file_type()?;
            let child = rel.join(e.file_name());
            if kind.is_dir() {
                stack.push(child);
            } else {
                out.push(child);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The state of `source`'s files: their names, sizes and modification times.
fn fingerprint(source: &Path, files: &[PathBuf]) -> std::io::Result<u64> {
    let mut h = DefaultHasher::new();
    for rel in files {
        let meta = std::fs::metadata(source.join(rel))?;
        rel.hash(&mut h);
        meta.len().hash(&mut h);
        meta.modified().ok().hash(&mut h);
    }
    Ok(h.finish())
}

/// The unpacked copy of `source` under `root`, made when this state of `source` has none:
/// built under a name of its own, then renamed into place, so concurrent test processes
/// either make it or find it whole.
fn unpacked(source: &Path, root: &Path) -> std::io::Result<PathBuf> {
    let files = files(source)?;
    let done = root.join(format!("{:016x}", fingerprint(source, &files)?));
    if done.is_dir() {
        return Ok(done);
    }
    std::fs::create_dir_all(root)?;
    let building = root.join(format!(".building-{}-{:?}", std::process::id(), std::thread::current().id()));
    if building.exists() {
        std::fs::remove_dir_all(&building)?;
    }
    let mut seen = std::collections::BTreeSet::new();
    for rel in &files {
        let from = source.join(rel);
        let plain = match rel.to_str().and_then(|s| s.strip_suffix(".gz")) {
            Some(p) => PathBuf::from(p),
            None => rel.clone(),
        };
        assert!(
            seen.insert(plain.clone()),
            "fixtures/{} is committed both plain and as .gz: keep one",
            plain.display()
        );
        let to = building.join(&plain);
        std::fs::create_dir_all(to.parent().expect("a file is in a folder"))?;
        std::fs::write(&to, read_maybe_gz(&from)?)?;
        std::fs::set_permissions(&to, std::fs::metadata(&from)?.permissions())?;
    }
    match std::fs::rename(&building, &done) {
        Ok(()) => Ok(done),
        // Another process renamed its copy first: use that one.
        Err(_) if done.is_dir() => {
            std::fs::remove_dir_all(&building).ok();
            Ok(done)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gz_file_is_unpacked_under_its_plain_name_and_others_copied() {
        let tmp = std::env::temp_dir().join(format!("kprof-testkit-{}", std::process::id()));
        let source = tmp.join("src");
        std::fs::create_dir_all(source.join("a")).unwrap();
        std::fs::write(source.join("a/plain.txt"), "as is\n").unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut gz, b"\"ID\",\"Kernel Name\"\n").unwrap();
        std::fs::write(source.join("a/page.csv.gz"), gz.finish().unwrap()).unwrap();
        let copy = unpacked(&source, &tmp.join("copies")).unwrap();
        assert_eq!(std::fs::read_to_string(copy.join("a/plain.txt")).unwrap(), "as is\n");
        assert_eq!(std::fs::read_to_string(copy.join("a/page.csv")).unwrap(), "\"ID\",\"Kernel Name\"\n");
        assert!(!copy.join("a/page.csv.gz").exists());
        // The same state finds the same copy; a changed file makes a new one.
        assert_eq!(unpacked(&source, &tmp.join("copies")).unwrap(), copy);
        std::fs::write(source.join("a/plain.txt"), "changed\n").unwrap();
        let again = unpacked(&source, &tmp.join("copies")).unwrap();
        assert_ne!(again, copy);
        assert_eq!(std::fs::read_to_string(again.join("a/plain.txt")).unwrap(), "changed\n");
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
