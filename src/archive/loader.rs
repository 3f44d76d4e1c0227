//! Whether the shared libraries an archived program loads resolve on this machine,
//! checked before any ncu run: the dynamic loader's search, followed through the files
//! it finds (a library's own `DT_NEEDED`, from its own `RUNPATH`).
//!
//! The search, as `ld.so` does it for a 64-bit program: a name with a `/` is a path;
//! else `DT_RPATH` (only when there is no `DT_RUNPATH`), `LD_LIBRARY_PATH` (the run's
//! `--env` value when given, else this process's), `DT_RUNPATH`, the `ld.so` cache
//! (`ldconfig -p`), then the standard folders. `$ORIGIN` is the folder of the file that
//! needs the library. A candidate counts only when it is a 64-bit ELF file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::libs::{read_dynamic, Dynamic, ProgramLibraries};
use crate::error::{ExitCode, Failure};
use crate::process::{self, ProcessBuilder, RunOptions};
use crate::shell::Shell;

/// The folders `ld.so` searches last, for 64-bit programs on the usual distributions.
const STANDARD_DIRS: [&str; 6] =
    ["/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"];

/// How long `ldconfig -p` may take.
const LDCONFIG_TIMEOUT: Duration = Duration::from_secs(10);

/// The command that prints where pip's NVIDIA wheels put their libraries.
pub const WHEELS_COMMAND: &str = "python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))'";

/// Where libraries are looked for on this machine.
#[derive(Debug, Clone, Default)]
pub struct Search {
    /// `LD_LIBRARY_PATH`'s folders.
    pub ld_library_path: Vec<PathBuf>,
    /// The `ld.so` cache: each name and its files.
    pub cache: BTreeMap<String, Vec<PathBuf>>,
    /// The standard folders.
    pub standard: Vec<PathBuf>,
}

impl Search {
    /// The search of this machine: `ld_library_path` (the run's value, else this
    /// process's), the `ld.so` cache read with `ldconfig -p`, the standard folders.
    pub fn here(ld_library_path: Option<&str>, shell: &Shell) -> Search {
        let from_env = std::env::var("LD_LIBRARY_PATH").ok();
        let value = ld_library_path.or(from_env.as_deref()).unwrap_or("");
        Search {
            ld_library_path: split_path(value),
            cache: ld_so_cache(shell),
            standard: STANDARD_DIRS.iter().map(PathBuf::from).collect(),
        }
    }

    /// The file `name` resolves to for an object with dynamic section `d` at `file`.
    pub fn find(&self, name: &str, d: &Dynamic, file: &Path) -> Option<PathBuf> {
        if name.contains('/') {
            let p = PathBuf::from(name);
            return is_elf64(&p).then_some(p);
        }
        let origin = file.parent().unwrap_or(Path::new("/"));
        let expand = |dirs: &[String]| -> Vec<PathBuf> {
            dirs.iter()
                .map(|s| {
                    PathBuf::from(
                        s.replace("${ORIGIN}", "$ORIGIN").replace("$ORIGIN", &origin.to_string_lossy()),
                    )
                })
                .collect()
        };
        let rpath = if d.runpath.is_empty() { expand(&d.rpath) } else { Vec::new() };
        let cached = self.cache.get(name).cloned().unwrap_or_default();
        rpath
            .iter()
            .chain(&self.ld_library_path)
            .chain(&expand(&d.runpath))
            .map(|dir| dir.join(name))
            .chain(cached)
            .chain(self.standard.iter().map(|dir| dir.join(name)))
            .find(|p| is_elf64(p))
    }
}

fn is_elf64(p: &Path) -> bool {
    p.is_file() && matches!(read_dynamic(p), Ok(Some(_)))
}

/// `LD_LIBRARY_PATH`'s folders; an empty entry is the current folder to `ld.so`, which a
/// profile never means.
pub fn split_path(value: &str) -> Vec<PathBuf> {
    value.split(':').filter(|s| !s.is_empty()).map(PathBuf::from).collect()
}

/// The `ld.so` cache, read with `ldconfig -p` (empty when it cannot be run).
fn ld_so_cache(shell: &Shell) -> BTreeMap<String, Vec<PathBuf>> {
    let program = ["/sbin/ldconfig", "/usr/sbin/ldconfig"].into_iter().find(|p| Path::new(p).is_file());
    let cmd = {
        let mut c = ProcessBuilder::new(program.unwrap_or("ldconfig"));
        c.arg("-p");
        c
    };
    let done =
        process::run(&cmd, RunOptions { timeout: Some(LDCONFIG_TIMEOUT), ..Default::default() }, shell);
    if !done.success() {
        return BTreeMap::new();
    }
    parse_ldconfig(&done.stdout_text())
}

/// `ldconfig -p`'s lines: `\tlibcublas.so.13 (libc6,x86-64) => /usr/lib/libcublas.so.13`.
pub fn parse_ldconfig(text: &str) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for line in text.lines() {
        let Some((left, path)) = line.split_once(" => ") else { continue };
        let Some(name) = left.split_whitespace().next() else { continue };
        out.entry(name.to_string()).or_default().push(PathBuf::from(path.trim()));
    }
    out
}

/// A library that does not resolve, and what needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved {
    /// The library's name (the first candidate, for one a program opens itself).
    pub name: String,
    /// What needs it: the program, a library, or a cudarc feature.
    pub by: String,
    /// Whether the program opens it itself: then it is needed only when used.
    pub opened: bool,
}

/// The libraries of one program that do not resolve: its needed ones and theirs, followed
/// through the files found, then those it opens itself.
pub fn unresolved(p: &ProgramLibraries, exe: &Path, search: &Search) -> Vec<Unresolved> {
    let top = Dynamic { needed: p.needed.clone(), runpath: p.runpath.clone(), rpath: p.rpath.clone() };
    let mut missing = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    // Each object read once, its queued names pointing at it by index: a queue entry does
    // not carry its parent's lists (20,000 names each carrying all 20,000 took gigabytes).
    let mut parents: Vec<(String, Dynamic, PathBuf)> =
        vec![(p.executable.clone(), top.clone(), exe.to_path_buf())];
    let mut queue: Vec<(String, usize)> = p.needed.iter().rev().map(|n| (n.clone(), 0)).collect();
    while let Some((name, parent)) = queue.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let (by, dynamic, parent_file) = &parents[parent];
        let Some(file) = search.find(&name, dynamic, parent_file) else {
            missing.push(Unresolved { name, by: by.clone(), opened: false });
            continue;
        };
        if let Ok(Some(d)) = read_dynamic(&file) {
            let at = parents.len();
            queue.extend(d.needed.iter().rev().filter(|n| !seen.contains(*n)).map(|n| (n.clone(), at)));
            parents.push((name, d, file));
        }
    }
    // Libraries the build machine found below the needed ones: those below a library not
    // found here are not reached by following files, so they are looked up as the program
    // would (its own search).
    for name in p.below.iter().filter(|n| !seen.contains(*n)) {
        if search.find(name, &top, exe).is_none() {
            missing.push(Unresolved {
                name: name.clone(),
                by: "a library above it (as packed)".into(),
                opened: false,
            });
        }
    }
    for o in &p.opened {
        if !o.candidates.iter().any(|c| seen.contains(c) || search.find(c, &top, exe).is_some()) {
            let name = o.candidates.iter().find(|c| c.matches('.').count() == 2).or(o.candidates.first());
            missing.push(Unresolved {
                name: name.cloned().unwrap_or_default(),
                by: o.by.clone(),
                opened: true,
            });
        }
    }
    missing
}

/// The failure for libraries the loader would not find (exit 5), with the fix.
pub fn failure(missing: &[&Unresolved], ld_library_path: Option<&str>) -> Failure {
    let names = bounded_list(missing.iter().map(|m| format!("{} (needed by {})", m.name, m.by)));
    let set = match ld_library_path {
        Some(v) => format!("LD_LIBRARY_PATH is `{v}`"),
        None => "LD_LIBRARY_PATH is not set".into(),
    };
    Failure::new(
        ExitCode::MissingTool,
        format!(
            "{} shared librar{} the profiled program loads could not be found here ({set}): {}",
            missing.len(),
            if missing.len() == 1 { "y" } else { "ies" },
            names
        ),
    )
    .help(fix_text())
    .help("or install the libraries (the CUDA toolkit's, or the distribution's packages), so that `ldconfig -p` lists them")
}

/// The names a message lists: the first [`LISTED`], then how many more.
pub fn bounded_list(names: impl Iterator<Item = String>) -> String {
    let names: Vec<String> = names.collect();
    let mut shown = names.iter().take(LISTED).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > LISTED {
        shown.push_str(&format!(" and {} more", names.len() - LISTED));
    }
    shown
}

/// How many names a library message lists.
const LISTED: usize = 20;

/// How to make pip's NVIDIA wheels' libraries visible to the loader.
pub fn fix_text() -> String {
    format!(
        "add the folders that hold them to LD_LIBRARY_PATH, here or with `--env LD_LIBRARY_PATH=...`; \
         for pip's NVIDIA wheels, add their nvidia/*/lib folders: `{WHEELS_COMMAND}` prints the folder \
         that holds nvidia/, e.g. export LD_LIBRARY_PATH=$(ls -d \"$({WHEELS_COMMAND})\"/nvidia/*/lib | paste -sd:)"
    )
}

/// The warning for libraries a program opens itself that are not found: needed only when
/// the program uses them.
pub fn warning(missing: &[&Unresolved]) -> String {
    let names = bounded_list(missing.iter().map(|m| format!("{} ({})", m.name, m.by)));
    format!(
        "not found here, though the program may open them when it uses them: {}; if it does, {}",
        names,
        fix_text()
    )
}

/// Checks, before any ncu run, that the libraries of the programs `kernels` run resolve
/// here, each with the kernel's `LD_LIBRARY_PATH` (from `--env` or its configuration)
/// when it sets one. Returns notes: an archive without the record (schema 2 and older)
/// skips the check, saying so; a library a program opens itself that is not found is a
/// warning, as it is needed only when used. A needed library that is not found is a
/// failure naming it and the fix (exit 5).
pub fn check_archived(
    manifest: &super::ArchiveManifest,
    kernels: &[crate::plan::KernelPlan],
    bin_root: &Path,
    shell: &Shell,
) -> Result<Vec<String>, Failure> {
    let Some(records) = &manifest.libraries else {
        return Ok(vec![format!(
            "the archive (schema_version {}) has no record of the shared libraries its programs load: \
             they are not checked before profiling",
            manifest.schema_version
        )]);
    };
    let mut searches: BTreeMap<Option<String>, Search> = BTreeMap::new();
    let mut failed: Vec<(Unresolved, Option<String>)> = Vec::new();
    let mut warned: Vec<Unresolved> = Vec::new();
    let mut checked: BTreeSet<(String, Option<String>)> = BTreeSet::new();
    for k in kernels {
        let crate::plan::PlannedTarget::Cargo(t) = &k.target else { continue };
        let Some((_, file)) = manifest.executables.iter().find(|(bt, _)| bt == t) else { continue };
        let Some(record) = records.iter().find(|r| &r.executable == file) else { continue };
        let ld = k.env.get("LD_LIBRARY_PATH").cloned();
        if !checked.insert((file.clone(), ld.clone())) {
            continue;
        }
        let search = searches.entry(ld.clone()).or_insert_with(|| Search::here(ld.as_deref(), shell));
        for m in unresolved(record, &bin_root.join(file), search) {
            if m.opened {
                warned.push(m);
            } else {
                failed.push((m, ld.clone()));
            }
        }
    }
    if let Some((_, ld)) = failed.first() {
        let ld = ld.clone().or_else(|| std::env::var("LD_LIBRARY_PATH").ok());
        let missing: Vec<&Unresolved> = failed.iter().map(|(m, _)| m).collect();
        return Err(failure(&missing, ld.as_deref()));
    }
    let mut notes = Vec::new();
    if !warned.is_empty() {
        notes.push(warning(&warned.iter().collect::<Vec<_>>()));
    }
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's own cache, as the check reads it: glibc's C library is in every
    /// glibc system's cache (where `ldconfig` exists: it is how `ld.so` finds libraries
    /// outside LD_LIBRARY_PATH).
    #[test]
    fn this_machine_s_cache_holds_its_c_library() {
        if !["/sbin/ldconfig", "/usr/sbin/ldconfig"].iter().any(|p| Path::new(p).is_file()) {
            eprintln!("skipped: no ldconfig on this machine");
            return;
        }
        let cache = ld_so_cache(&Shell::quiet());
        let libc =
            cache.get("libc.so.6").unwrap_or_else(|| panic!("no libc.so.6 in {} entries", cache.len()));
        assert!(libc.iter().all(|p| p.is_absolute() && p.exists()), "{libc:?}");
    }

    #[test]
    fn ldconfig_lines_name_their_files() {
        let text = "12 libs found in cache `/etc/ld.so.cache'\n\
            \tlibcublas.so.13 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcublas.so.13\n\
            \tlibc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libc.so.6\n";
        let cache = parse_ldconfig(text);
        assert_eq!(cache["libcublas.so.13"], [PathBuf::from("/usr/lib/x86_64-linux-gnu/libcublas.so.13")]);
        assert_eq!(cache["libc.so.6"], [PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6")]);
    }

    #[test]
    fn libraries_below_a_missing_one_are_named_from_the_record() {
        let exe = std::env::current_exe().unwrap();
        let p = ProgramLibraries {
            executable: "bin/x".into(),
            needed: vec!["libkprof-missing-top.so.1".into()],
            below: vec!["libkprof-missing-below.so.2".into()],
            ..Default::default()
        };
        let missing = unresolved(&p, &exe, &Search::default());
        let names: Vec<(&str, &str)> = missing.iter().map(|m| (m.name.as_str(), m.by.as_str())).collect();
        assert_eq!(
            names,
            [
                ("libkprof-missing-top.so.1", "bin/x"),
                ("libkprof-missing-below.so.2", "a library above it (as packed)")
            ]
        );
    }

    #[test]
    fn origin_is_the_folder_of_the_file_that_needs_the_library() {
        let exe = std::env::current_exe().unwrap();
        let dir = exe.parent().unwrap();
        let name = exe.file_name().unwrap().to_str().unwrap();
        let d = Dynamic { runpath: vec!["$ORIGIN".into()], ..Default::default() };
        let search = Search::default();
        assert_eq!(search.find(name, &d, &dir.join("other")), Some(exe.clone()));
        assert_eq!(search.find(name, &Dynamic::default(), &dir.join("other")), None);
        let search = Search { ld_library_path: vec![dir.to_path_buf()], ..Default::default() };
        assert_eq!(search.find(name, &Dynamic::default(), Path::new("/nowhere/x")), Some(exe));
    }
}
