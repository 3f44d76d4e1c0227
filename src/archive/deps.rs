//! Dependency kernel sources: the CUDA files a program's line info names that live
//! outside the workspace, in the cargo registry, a git checkout or a build script's
//! `OUT_DIR`, packed under `deps/` so hot lines in a dependency's kernels (candle's
//! `candle-kernels`, for one) show their text on the GPU machine.
//!
//! The names come from the line info itself: the `.file` directives of PTX (files the
//! build scripts left in their `OUT_DIR`s, and PTX embedded in the executable as text,
//! as `include_str!` of a build output does), the file names in the line tables of the
//! cubins in the executable's `.nv_fatbin` section (found when the fat binary is not
//! compressed), and the CUDA files build scripts say they compiled (`rerun-if-changed`).
//!
//! Each is packed at `deps/<its path below the prefix>`: `registry/...` and `git/...`
//! for `$CARGO_HOME`'s folders, `build/<package-hash>/out/...` for an `OUT_DIR`, which is
//! the tail of the file's own path, so the unpacked `deps/` folder answers the same
//! search by path suffix that finds workspace sources.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use regex::bytes::Regex;
use serde::{Deserialize, Serialize};

use crate::build::BuildOutput;

/// The extensions of the CUDA source files a line table names.
const SOURCE_EXTENSIONS: [&str; 5] = ["cu", "cuh", "h", "hpp", "inl"];

/// The largest executable or PTX file read for line info.
const MAX_READ: u64 = 2 << 30;

/// The largest dependency source packed: a line table may name any file, and a
/// generated header of gigabytes has no line worth showing.
pub const LARGEST_SOURCE: u64 = 64 << 20;

/// One packed dependency source.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct DependencySource {
    /// The file as the line info names it on the build machine.
    pub file: PathBuf,
    /// Its entry below `deps/`.
    pub entry: PathBuf,
    /// The other names the line info gives it: relative ones (`src/reduce.cu`, as a build
    /// script handed it to nvcc from its package folder).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
}

/// A dependency source the line info names that is not packed, and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RefusedSource {
    /// The file as the line info names it.
    pub file: PathBuf,
    /// Why it is not packed.
    pub why: String,
}

/// What the build's line info named outside the workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// The files to pack.
    pub sources: Vec<DependencySource>,
    /// Files named under a dependency folder that do not exist here.
    pub missing: Vec<PathBuf>,
    /// Files named under a dependency folder that are not packed: a link that leads out
    /// of the folder (the archive would carry whatever it points at), or a file over
    /// [`LARGEST_SOURCE`].
    pub refused: Vec<RefusedSource>,
}

/// Where dependency sources live on this machine, and the folders of the packages whose
/// build scripts compile them (by package name; a relative name in their line info is
/// relative to it, the build script's working folder).
#[derive(Debug, Clone)]
pub struct Prefixes {
    /// Each package's folder.
    pub package_roots: std::collections::BTreeMap<String, PathBuf>,
    /// `$CARGO_HOME` (default `~/.cargo`).
    pub cargo_home: Option<PathBuf>,
    /// The workspace root: files under it are packed as workspace sources instead.
    pub workspace_root: PathBuf,
    /// The build scripts' `OUT_DIR`s of this build: a file is packed from one of these,
    /// never from any path that merely looks like `build/<hash>/out/`.
    pub out_dirs: Vec<PathBuf>,
}

impl Prefixes {
    /// This machine's: `$CARGO_HOME`, else `$HOME/.cargo`.
    pub fn here(workspace_root: &Path) -> Prefixes {
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
        Prefixes {
            package_roots: Default::default(),
            cargo_home,
            workspace_root: workspace_root.to_path_buf(),
            out_dirs: Vec::new(),
        }
    }

    /// The entry below `deps/` for `file`, when it lies in a dependency folder.
    #[cfg(test)]
    pub fn entry(&self, file: &Path) -> Option<PathBuf> {
        self.place(file).map(|(entry, _)| entry)
    }

    /// The entry below `deps/` for `file` and the dependency folder it lies in
    /// (`$CARGO_HOME/registry`, `$CARGO_HOME/git` or one of [`Prefixes::out_dirs`]).
    fn place(&self, file: &Path) -> Option<(PathBuf, PathBuf)> {
        if !file.is_absolute() || file.starts_with(&self.workspace_root) {
            return None;
        }
        let in_home = self.cargo_home.as_ref().and_then(|home| {
            ["registry", "git"].iter().find_map(|d| {
                let folder = home.join(d);
                file.strip_prefix(&folder).ok().map(|r| (Path::new(d).join(r), folder))
            })
        });
        let (tail, folder) = in_home.or_else(|| {
            let dir = self.out_dirs.iter().find(|d| file.starts_with(d))?;
            Some((out_dir_tail(file)?, dir.clone()))
        })?;
        Some((super::entry::entry_path(&tail).ok()?, folder))
    }
}

/// Why `file`, found in the dependency folder `folder` (resolved: `real_folder`), is not
/// packed: it is a link (or lies below one) that leads out of the folder, or it is over
/// [`LARGEST_SOURCE`].
fn refusal(file: &Path, folder: &Path, real_folder: Option<&Path>) -> Option<String> {
    let (Ok(real), Some(real_folder)) = (std::fs::canonicalize(file), real_folder) else {
        return Some("it cannot be resolved".into());
    };
    if !real.starts_with(real_folder) {
        return Some(format!("a link out of {} (to {})", folder.display(), real.display()));
    }
    let size = std::fs::metadata(&real).map(|m| m.len()).unwrap_or(0);
    (size > LARGEST_SOURCE).then(|| {
        format!("{} MiB, over the {} MiB a dependency source may be", size >> 20, LARGEST_SOURCE >> 20)
    })
}

/// `build/<package-hash>/out/<rest>` for a file inside a build script's `OUT_DIR`.
fn out_dir_tail(file: &Path) -> Option<PathBuf> {
    let parts: Vec<_> = file.components().collect();
    let at = parts.windows(3).rposition(|w| {
        w[0].as_os_str() == "build" && w[2].as_os_str() == "out" && !w[1].as_os_str().is_empty()
    })?;
    Some(parts[at..].iter().collect())
}

/// The file names in PTX `.file` directives (`.file 1 "/path/x.cu"`, with or without a
/// timestamp and size after the name).
pub fn ptx_files(bytes: &[u8]) -> Vec<String> {
    static FILE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = FILE.get_or_init(|| Regex::new(r#"\.file\s+\d+\s+"([^"\x00\n]+)""#).expect("valid regex"));
    re.captures_iter(bytes).filter_map(|c| std::str::from_utf8(&c[1]).ok().map(String::from)).collect()
}

/// Absolute paths of CUDA sources stored as NUL-terminated strings (a cubin's line table
/// and string tables).
pub fn path_strings(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|b| *b == 0)
        .filter(|s| s.first() == Some(&b'/') && s.len() < 4096)
        .filter_map(|s| std::str::from_utf8(s).ok())
        .filter(|s| is_source(Path::new(s)) && !s.contains(['\n', '"']))
        .map(String::from)
        .collect()
}

fn is_source(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| SOURCE_EXTENSIONS.iter().any(|x| x.eq_ignore_ascii_case(e)))
}

/// The `.nv_fatbin` section of an ELF executable, when it has one.
fn fatbin_section(bytes: &[u8]) -> Option<&[u8]> {
    use object::{Object, ObjectSection};
    let file = object::File::parse(bytes).ok()?;
    let section = file.section_by_name(".nv_fatbin")?;
    section.data().ok()
}

/// The CUDA files build scripts said they compiled: `rerun-if-changed` lines with a CUDA
/// extension in each `OUT_DIR`'s sibling `output` file.
fn build_script_sources(out_dir: &Path) -> Vec<String> {
    let Some(output) = out_dir.parent().map(|d| d.join("output")) else { return Vec::new() };
    let Ok(text) = std::fs::read_to_string(output) else { return Vec::new() };
    text.lines()
        .filter_map(|l| {
            l.strip_prefix("cargo:rerun-if-changed=").or_else(|| l.strip_prefix("cargo::rerun-if-changed="))
        })
        .filter(|p| is_source(Path::new(p)))
        .map(String::from)
        .collect()
}

fn read_limited(path: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::metadata(path).ok()?;
    (meta.is_file() && meta.len() <= MAX_READ).then(|| std::fs::read(path).ok()).flatten()
}

/// The dependency sources the line info of `executables` and the build's `OUT_DIR`s names.
pub fn find(executables: &[&Path], built: Option<&BuildOutput>, prefixes: &Prefixes) -> Found {
    // Each name as the line info gives it, and the file it is on this machine.
    let mut names: BTreeSet<(String, PathBuf)> = BTreeSet::new();
    let mut embedded: BTreeSet<String> = BTreeSet::new();
    for exe in executables {
        let Some(bytes) = read_limited(exe) else { continue };
        embedded.extend(ptx_files(&bytes));
        if let Some(fatbin) = fatbin_section(&bytes) {
            embedded.extend(path_strings(fatbin));
        }
    }
    let mut out_dirs: Vec<&(String, PathBuf)> =
        built.map(|b| b.build_script_out_dirs.iter().collect()).unwrap_or_default();
    out_dirs.sort();
    out_dirs.dedup();
    let prefixes = &Prefixes {
        out_dirs: prefixes.out_dirs.iter().cloned().chain(out_dirs.iter().map(|(_, d)| d.clone())).collect(),
        ..prefixes.clone()
    };
    let mut roots: Vec<&Path> = Vec::new();
    for (package, dir) in out_dirs {
        let root = prefixes.package_roots.get(package).map(PathBuf::as_path);
        roots.extend(root);
        let mut here = build_script_sources(dir);
        for ptx in ptx_files_in(dir) {
            here.extend(read_limited(&ptx).map(|b| ptx_files(&b)).unwrap_or_default());
        }
        for n in here {
            let file = match (Path::new(&n).is_absolute(), root) {
                (true, _) => PathBuf::from(&n),
                (false, Some(r)) => r.join(&n),
                (false, None) => continue,
            };
            names.insert((n, file));
        }
    }
    for n in embedded {
        if Path::new(&n).is_absolute() {
            names.insert((n.clone(), PathBuf::from(&n)));
        } else if let Some(r) = roots.iter().find(|r| r.join(&n).is_file()) {
            names.insert((n.clone(), r.join(&n)));
        }
    }
    let mut found = Found::default();
    // Each dependency folder resolved once, however many of its files are named.
    let mut real_folders: std::collections::BTreeMap<PathBuf, Option<PathBuf>> = Default::default();
    for (name, file) in names {
        let Some((entry, folder)) = prefixes.place(&file) else { continue };
        if !file.is_file() {
            if !found.missing.contains(&file) {
                found.missing.push(file);
            }
            continue;
        }
        let real_folder =
            real_folders.entry(folder.clone()).or_insert_with(|| std::fs::canonicalize(&folder).ok());
        if let Some(why) = refusal(&file, &folder, real_folder.as_deref()) {
            if !found.refused.iter().any(|r| r.file == file) {
                found.refused.push(RefusedSource { file, why });
            }
            continue;
        }
        let other = (Path::new(&name) != file).then_some(name);
        match found.sources.iter_mut().find(|s| s.file == file) {
            Some(s) => s.names.extend(other),
            None => found.sources.push(DependencySource { file, entry, names: other.into_iter().collect() }),
        }
    }
    found
}

/// The `.ptx` files directly in `dir` and one level below.
fn ptx_files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let Ok(kind) = e.file_type() else { continue };
            let p = e.path();
            if kind.is_dir() && depth < 1 {
                stack.push((p, depth + 1));
            } else if kind.is_file() && p.extension().is_some_and(|x| x.eq_ignore_ascii_case("ptx")) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefixes() -> Prefixes {
        Prefixes {
            package_roots: Default::default(),
            cargo_home: Some("/home/u/.cargo".into()),
            workspace_root: "/home/u/ws".into(),
            out_dirs: vec!["/tmp/t/release/build/k-0123/out".into()],
        }
    }

    #[test]
    fn ptx_file_directives_name_their_sources() {
        let ptx = b".version 8.0\n.file\t1 \"/home/u/.cargo/registry/src/idx/k-0.1.0/src/reduce.cu\"\n\
            .file 2 \"/usr/local/cuda/include/cuda_fp16.hpp\", 1700000000, 1234\n";
        assert_eq!(
            ptx_files(ptx),
            [
                "/home/u/.cargo/registry/src/idx/k-0.1.0/src/reduce.cu",
                "/usr/local/cuda/include/cuda_fp16.hpp"
            ]
        );
    }

    #[test]
    fn dependency_folders_map_to_entries_and_others_do_not() {
        let p = prefixes();
        let entry = |s: &str| p.entry(Path::new(s)).map(|e| e.to_string_lossy().into_owned());
        assert_eq!(
            entry("/home/u/.cargo/registry/src/idx/k-0.1.0/src/reduce.cu").as_deref(),
            Some("registry/src/idx/k-0.1.0/src/reduce.cu")
        );
        assert_eq!(
            entry("/home/u/.cargo/git/checkouts/k-1/abc/x.cu").as_deref(),
            Some("git/checkouts/k-1/abc/x.cu")
        );
        assert_eq!(
            entry("/tmp/t/release/build/k-0123/out/gen.cu").as_deref(),
            Some("build/k-0123/out/gen.cu")
        );
        assert_eq!(entry("/tmp/evil/build/k-0123/out/gen.cu"), None, "not one of this build's OUT_DIRs");
        assert_eq!(entry("/home/u/ws/kernels/a.cu"), None, "workspace sources are packed as such");
        assert_eq!(entry("/usr/local/cuda/include/cuda_fp16.hpp"), None);
        assert_eq!(entry("/home/u/.cargo/registry/../../etc/passwd.h"), None, "sanitised");
        assert_eq!(entry("src/reduce.cu"), None);
        // A build script's output below the workspace (its own target/) is the workspace's,
        // and a relative name is nobody's, however much it looks like a build folder.
        assert_eq!(entry("/home/u/ws/target/release/build/k-0123/out/gen.cu"), None);
        assert_eq!(entry("target/release/build/k-0123/out/gen.cu"), None);
    }

    #[test]
    fn ptx_files_are_looked_for_one_level_down_and_no_deeper() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::create_dir_all(d.join("sub/deeper")).unwrap();
        for f in ["a.ptx", "b.PTX", "c.cu", "sub/d.ptx", "sub/deeper/e.ptx"] {
            std::fs::write(d.join(f), "x").unwrap();
        }
        let found: Vec<PathBuf> =
            ptx_files_in(d).iter().map(|p| p.strip_prefix(d).unwrap().to_path_buf()).collect();
        assert_eq!(found, [PathBuf::from("a.ptx"), "b.PTX".into(), "sub/d.ptx".into()]);
    }

    #[test]
    fn a_build_script_s_cuda_sources_are_its_rerun_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("k-0123/out");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(
            tmp.path().join("k-0123/output"),
            "cargo:rerun-if-changed=src/reduce.cu\ncargo::rerun-if-changed=src/affine.cuh\n\
             cargo:rerun-if-changed=build.rs\ncargo:rustc-link-lib=cuda\n",
        )
        .unwrap();
        assert_eq!(build_script_sources(&out), ["src/reduce.cu", "src/affine.cuh"]);
        assert!(build_script_sources(&tmp.path().join("none/out")).is_empty());
    }

    #[test]
    fn relative_names_in_a_build_scripts_ptx_start_at_its_package() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("cargo");
        let root = home.join("registry/src/idx/k-0.1.0");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/reduce.cu"), "x").unwrap();
        let out = tmp.path().join("target/release/build/k-0123/out");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("reduce.ptx"), ".file 1 \"src/reduce.cu\"\n.file 2 \"src/gone.cu\"\n")
            .unwrap();
        let built = BuildOutput { executables: Vec::new(), build_script_out_dirs: vec![("k".into(), out)] };
        let prefixes = Prefixes {
            package_roots: [("k".to_string(), root.clone())].into(),
            cargo_home: Some(home),
            workspace_root: tmp.path().join("ws"),
            out_dirs: Vec::new(),
        };
        let found = find(&[], Some(&built), &prefixes);
        assert_eq!(
            found.sources,
            [DependencySource {
                file: root.join("src/reduce.cu"),
                entry: "registry/src/idx/k-0.1.0/src/reduce.cu".into(),
                names: vec!["src/reduce.cu".into()],
            }]
        );
        assert_eq!(found.missing, [root.join("src/gone.cu")]);
    }

    #[test]
    fn path_strings_are_nul_terminated_absolute_cuda_files() {
        let bytes = b"\0/a/b/k.cu\0rel/x.cu\0/a/b/notes.txt\0/c/d.cuh\0";
        assert_eq!(path_strings(bytes), ["/a/b/k.cu", "/c/d.cuh"]);
    }

    /// #45 G14: a link in a dependency folder that leads out of it was packed (the archive
    /// carried a system file), and so was a header of gigabytes. Both are refused, naming
    /// the file and why; a link that stays inside the folder is packed.
    #[test]
    fn links_out_of_a_dependency_folder_and_huge_files_are_not_packed() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("cargo");
        let pkg = home.join("registry/src/idx/k-0.1.0/src");
        std::fs::create_dir_all(&pkg).unwrap();
        let secret = tmp.path().join("secret.h");
        std::fs::write(&secret, "a private file").unwrap();
        std::os::unix::fs::symlink(&secret, pkg.join("leak.cuh")).unwrap();
        std::fs::write(pkg.join("real.cu"), "x").unwrap();
        std::os::unix::fs::symlink(pkg.join("real.cu"), pkg.join("alias.cu")).unwrap();
        // Sparse: 65 MiB on paper, nothing on disk.
        std::fs::File::create(pkg.join("huge.h")).unwrap().set_len(LARGEST_SOURCE + (1 << 20)).unwrap();
        let prefixes = Prefixes {
            package_roots: Default::default(),
            cargo_home: Some(home.clone()),
            workspace_root: tmp.path().join("ws"),
            out_dirs: Vec::new(),
        };
        let mut exe = Vec::new();
        for f in ["leak.cuh", "real.cu", "alias.cu", "huge.h"] {
            exe.extend_from_slice(format!(".file 1 \"{}\"\n", pkg.join(f).display()).as_bytes());
        }
        let bin = tmp.path().join("bench");
        std::fs::write(&bin, exe).unwrap();
        let found = find(&[&bin], None, &prefixes);
        let packed: Vec<&Path> = found.sources.iter().map(|s| s.file.as_path()).collect();
        assert_eq!(packed, [pkg.join("alias.cu"), pkg.join("real.cu")]);
        let refused: Vec<(&Path, &str)> =
            found.refused.iter().map(|r| (r.file.as_path(), r.why.as_str())).collect();
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert_eq!(refused[0].0, pkg.join("huge.h"));
        assert!(refused[0].1.contains("65 MiB, over the 64 MiB"), "{refused:?}");
        assert_eq!(refused[1].0, pkg.join("leak.cuh"));
        assert!(
            refused[1].1.starts_with("a link out of ") && refused[1].1.contains("secret.h"),
            "{refused:?}"
        );
    }
}
