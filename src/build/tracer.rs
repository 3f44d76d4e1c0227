//! The census tracer, built on the user's machine.
//!
//! cargo-kprof is installed with `cargo install`, which builds one package: the tracer's
//! cdylib (`tracer/`, a member of this workspace so that CI builds and tests it) does not
//! come with it. So the binary carries the tracer's sources ([`SOURCES`], embedded with
//! `include_str!`) and, the first time a census is traced, writes them with a manifest of
//! their own under the profiling target directory (`<target-dir>/kprof/tracer/<hash>/`,
//! the hash of the sources and the manifest) and builds them with the user's cargo:
//! `cargo build --release --offline`. The tracer has no dependency, so the build needs
//! no network and no registry, only the toolchain that built the program; it takes a few
//! seconds once, and each later run finds `libkprof_tracer.so` in that folder. A new
//! cargo-kprof with a changed tracer gets a new folder.
//!
//! Machines without cargo (`run --archive` on a GPU machine) name a tracer built elsewhere
//! with `KPROF_TRACER` (see `ops::profile::tracer`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use cargo_metadata::Message;
use sha2::{Digest, Sha256};

use crate::process::{self, Ending, ProcessBuilder, RunOptions};
use crate::shell::Shell;

/// The tracer's sources, as `tracer/` holds them, by their path in the crate.
pub const SOURCES: [(&str, &str); 2] = [
    ("src/lib.rs", include_str!("../../tracer/src/lib.rs")),
    ("src/tally.rs", include_str!("../../tracer/src/tally.rs")),
];

/// The manifest the tracer is built with: a cdylib alone, outside any workspace (the
/// folder lies inside the user's), nothing to download.
const MANIFEST: &str = "[package]\n\
name = \"kprof-tracer\"\n\
version = \"0.1.0\"\n\
edition = \"2021\"\n\
publish = false\n\
\n\
[lib]\n\
crate-type = [\"cdylib\"]\n\
\n\
# Packed into every archive of a traceable program: stripped, it is smaller still.\n\
[profile.release]\n\
strip = true\n\
\n\
# Not a member of the workspace this folder lies in.\n\
[workspace]\n";

/// The library's file name, in the tracer's folder once built.
pub const LIBRARY: &str = "libkprof_tracer.so";

/// The folder of this cargo-kprof's tracer under `target_dir` (the profiling target
/// directory, `<target-dir>/kprof`): named by the hash of what is built.
pub fn tracer_dir(target_dir: &Path) -> PathBuf {
    let mut h = Sha256::new();
    h.update(MANIFEST);
    for (path, text) in SOURCES {
        h.update(path);
        h.update([0]);
        h.update(text);
        h.update([0]);
    }
    let hex: String = h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
    target_dir.join("tracer").join(hex)
}

/// Whether this cargo-kprof's tracer is built under `target_dir` already.
pub fn built(target_dir: &Path) -> bool {
    tracer_dir(target_dir).join(LIBRARY).is_file()
}

/// The built tracer under `target_dir`, built now with `cargo` when it is not there yet;
/// why not, in words, when it cannot be built.
pub fn ensure(cargo: &OsString, target_dir: &Path, shell: &Shell) -> Result<PathBuf, String> {
    let dir = tracer_dir(target_dir);
    let library = dir.join(LIBRARY);
    if library.is_file() {
        return Ok(library);
    }
    write_sources(&dir)
        .map_err(|e| format!("could not write the tracer's sources into {}: {e}", dir.display()))?;
    let built = build(cargo, &dir, shell)?;
    let part = dir.join(format!("{LIBRARY}.part"));
    std::fs::copy(&built, &part).and_then(|_| std::fs::rename(&part, &library)).map_err(|e| {
        format!("could not copy the built tracer {} to {}: {e}", built.display(), library.display())
    })?;
    Ok(library)
}

/// Writes the manifest and the sources into `dir`.
fn write_sources(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("src"))?;
    std::fs::write(dir.join("Cargo.toml"), MANIFEST)?;
    for (path, text) in SOURCES {
        std::fs::write(dir.join(path), text)?;
    }
    Ok(())
}

/// The `cargo build` of the tracer in `dir`, as run.
pub fn command(cargo: &OsString, dir: &Path) -> ProcessBuilder {
    let mut p = ProcessBuilder::new(cargo);
    p.args(["build", "--release", "--offline", "--quiet", "--message-format=json"]);
    p.arg("--manifest-path").arg(dir.join("Cargo.toml"));
    p.arg("--target-dir").arg(dir.join("target"));
    p.cwd(dir);
    p
}

/// Builds the tracer in `dir`; the cdylib cargo reported, or why there is none.
fn build(cargo: &OsString, dir: &Path, shell: &Shell) -> Result<PathBuf, String> {
    let cmd = command(cargo, dir);
    let mut built: Option<PathBuf> = None;
    let mut on_line = |line: &str| {
        if let Ok(Message::CompilerArtifact(art)) = serde_json::from_str::<Message>(line) {
            let so = art.filenames.iter().find(|f| f.extension() == Some("so"));
            if let Some(f) = so {
                built = Some(f.clone().into());
            }
        }
    };
    let done =
        process::run(&cmd, RunOptions { stdout_lines: Some(&mut on_line), ..Default::default() }, shell);
    match &done.ending {
        Ending::Exited(s) if s.success() => {}
        Ending::NotStarted(msg) => {
            return Err(format!("cargo could not be started to build the tracer ({msg})"))
        }
        ending => {
            let tail = process::tail_lines(&String::from_utf8_lossy(&done.stderr), 3);
            return Err(format!("`{cmd}` failed ({ending}): {}", tail.trim().replace('\n', " / ")));
        }
    }
    built.ok_or_else(|| format!("`{cmd}` reported no {LIBRARY}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded sources are the workspace member's, file for file: the crate CI
    /// builds and tests is the one users build.
    #[test]
    fn the_embedded_sources_are_the_tracer_crate_s() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tracer");
        let mut on_disk: Vec<String> = std::fs::read_dir(root.join("src"))
            .unwrap()
            .map(|e| format!("src/{}", e.unwrap().file_name().to_string_lossy()))
            .collect();
        on_disk.sort();
        let mut embedded: Vec<String> = SOURCES.iter().map(|(p, _)| p.to_string()).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk, "a file added to tracer/src must be added to SOURCES");
        let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
        assert!(!manifest.contains("\n[dependencies]"), "the tracer must build offline, with no dependency");
    }

    /// The embedded sources build, offline, into a library that exports the entry point the
    /// CUDA driver calls; a second call finds it built.
    #[test]
    fn the_embedded_tracer_builds_and_exports_its_entry_point() {
        let target = tempfile::tempdir().unwrap();
        let shell = Shell::quiet();
        let library = ensure(&crate::build::cargo_binary(), target.path(), &shell).unwrap();
        assert_eq!(library, tracer_dir(target.path()).join(LIBRARY));
        let bytes = std::fs::read(&library).unwrap();
        let file = object::read::File::parse(bytes.as_slice()).unwrap();
        use object::{Object, ObjectSymbol};
        let exported: Vec<String> =
            file.dynamic_symbols().filter_map(|s| s.name().ok().map(String::from)).collect();
        assert!(exported.iter().any(|s| s == "InitializeInjection"), "{exported:?}");
        // Small (archives carry it): the workspace's release profile, with line tables,
        // makes it 4.5 MB; this build about 0.4 MB.
        assert!(bytes.len() < 1 << 20, "{} bytes", bytes.len());
        // Built once: the second call does not run cargo (its folder's target/ may go).
        std::fs::remove_dir_all(tracer_dir(target.path()).join("target")).unwrap();
        assert_eq!(ensure(&"/nonexistent/cargo".into(), target.path(), &shell).unwrap(), library);
    }

    #[test]
    fn the_folder_changes_with_the_sources_and_the_build_is_offline() {
        let dir = tracer_dir(Path::new("/t/kprof"));
        assert!(dir.starts_with("/t/kprof/tracer"), "{}", dir.display());
        assert_eq!(dir.file_name().unwrap().len(), 16);
        let line = command(&"cargo".into(), &dir).to_string();
        assert!(line.contains("--offline") && line.contains("--release"), "{line}");
    }
}
