//! What an archive packs besides the executables and the plan, all under `workspace/` at
//! their path relative to the workspace root, so that the remapped package directory (the
//! program's working directory on the GPU machine) finds them by the same relative path:
//!
//! - the CUDA sources (`*.cu`, `*.cuh`), so hotspots can show their lines;
//! - the files the `include` globs of `[workspace.metadata.kprof]` and of the selected
//!   packages' `[package.metadata.kprof]` match (PTX, headers, scripts, inputs);
//! - what the selected packages' build scripts left in their `OUT_DIR` that a program
//!   may load at run time (`.ptx`, `.cubin`, `.fatbin`), when `OUT_DIR` lies inside the
//!   workspace (kprof's target directory does by default).
//!
//! One walk of the workspace serves the sources and the globs. It never enters
//! `target/`, `profile/` or `.git/`, nor a symbolic link to a folder. A symbolic link a
//! glob matches is packed as the file it points to only when that file lies inside the
//! workspace; anything else, a glob that matches no file, and a package root outside the
//! workspace are refused before anything is built (exit 3).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::build::BuildOutput;
use crate::config::IncludeGlob;
use crate::error::{ExitCode, Failure};
use crate::plan::{KernelPlan, Plan, PlannedTarget};

/// Source files packed so hotspots can show their lines on the other machine.
const SOURCE_EXTENSIONS: &[&str] = &["cu", "cuh"];
/// Build-script outputs a program may load at run time.
pub const BUILD_OUTPUT_EXTENSIONS: &[&str] = &["ptx", "cubin", "fatbin"];
/// Folders never searched: build output, profiles, version control.
const SKIPPED_DIRS: &[&str] = &["target", "profile", ".git"];

/// The files to pack from the workspace, relative to its root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Contents {
    /// CUDA sources.
    pub sources: Vec<PathBuf>,
    /// Files the `include` globs matched.
    pub included: Vec<PathBuf>,
    /// Build-script outputs from `OUT_DIR`s inside the workspace.
    pub build_outputs: Vec<PathBuf>,
    /// `OUT_DIR`s of selected packages that lie outside the workspace, not packed: (package, dir).
    pub skipped_out_dirs: Vec<(String, PathBuf)>,
}

impl Contents {
    /// Every packed file once, in order: sources, included files, build outputs.
    pub fn files(&self) -> Vec<&Path> {
        let mut seen = BTreeSet::new();
        self.sources
            .iter()
            .chain(&self.included)
            .chain(&self.build_outputs)
            .map(PathBuf::as_path)
            .filter(|p| seen.insert(*p))
            .collect()
    }
}

/// One file met by the walk.
struct Found {
    /// Relative to the workspace root.
    rel: PathBuf,
    /// For a symbolic link: what it resolves to, if it resolves.
    link_to: Option<Option<PathBuf>>,
}

/// Every file under `root` (plain files and symbolic links that are not folders),
/// skipping [`SKIPPED_DIRS`] at any depth; sorted.
fn walk(root: &Path) -> Vec<Found> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(kind) = e.file_type() else { continue };
            let Ok(rel) = p.strip_prefix(root).map(Path::to_path_buf) else { continue };
            if kind.is_dir() {
                if !e.file_name().to_str().is_some_and(|n| SKIPPED_DIRS.contains(&n)) {
                    stack.push(p);
                }
            } else if kind.is_symlink() {
                // A link to a folder is not entered: it could lead out, or round in a circle.
                if !p.is_dir() {
                    out.push(Found { rel, link_to: Some(p.canonicalize().ok()) });
                }
            } else if kind.is_file() {
                out.push(Found { rel, link_to: None });
            }
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    out
}

/// The globs that apply to a plan of `kernels`: the workspace table's, and those of the
/// packages whose kernels it profiles (a `command` kernel belongs to the package it runs
/// in).
pub fn applicable<'a>(kernels: &[KernelPlan], globs: &'a [IncludeGlob]) -> Vec<&'a IncludeGlob> {
    globs
        .iter()
        .filter(|g| match &g.package {
            None => true,
            Some(p) => kernels.iter().any(|k| k.package.as_ref() == Some(p) || k.cwd == g.root),
        })
        .collect()
}

/// The sources and the files `globs` match, checked as the module says.
pub fn from_workspace(root: &Path, globs: &[&IncludeGlob]) -> Result<Contents, Failure> {
    let canonical_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let groups = GlobGroups::new(root, globs)?;
    let mut contents = Contents::default();
    let mut matched = vec![false; globs.len()];
    for f in walk(root) {
        let hits = groups.matches(&f.rel);
        for &i in &hits {
            matched[i] = true;
        }
        let inside = f.is_inside(&canonical_root);
        if let (Some(&first), false) = (hits.first(), inside) {
            return Err(link_outside(globs[first], &f));
        }
        if !inside {
            continue;
        }
        if f.rel.to_str().is_none() && (!hits.is_empty() || f.is_source()) {
            return Err(not_utf8(hits.first().map(|&i| globs[i]), &f));
        }
        if f.is_source() {
            contents.sources.push(f.rel.clone());
        }
        if !hits.is_empty() {
            contents.included.push(f.rel);
        }
    }
    if let Some(i) = matched.iter().position(|m| !m) {
        return Err(matches_nothing(globs[i]));
    }
    Ok(contents)
}

impl Found {
    /// Whether it is a CUDA source ([`SOURCE_EXTENSIONS`]).
    fn is_source(&self) -> bool {
        self.rel.extension().and_then(|x| x.to_str()).is_some_and(|x| SOURCE_EXTENSIONS.contains(&x))
    }

    /// Whether it is a file of the workspace: a plain file, or a link to a file inside
    /// `canonical_root`.
    fn is_inside(&self, canonical_root: &Path) -> bool {
        match &self.link_to {
            None => true,
            Some(Some(to)) => to.starts_with(canonical_root) && to.is_file(),
            Some(None) => false,
        }
    }
}

/// The globs grouped by the folder they are relative to (a path under the workspace
/// root): one set per folder, and each set's glob indices in the caller's list.
struct GlobGroups(Vec<(PathBuf, GlobSet, Vec<usize>)>);

impl GlobGroups {
    /// Groups `globs`; refused when a package root lies outside `root` or a glob is invalid.
    fn new(root: &Path, globs: &[&IncludeGlob]) -> Result<Self, Failure> {
        let mut groups: Vec<(PathBuf, GlobSetBuilder, Vec<usize>)> = Vec::new();
        for (i, g) in globs.iter().enumerate() {
            let base = g.root.strip_prefix(root).map(Path::to_path_buf).map_err(|_| {
                Failure::new(
                    ExitCode::Config,
                    format!(
                        "`include` in {}: the package root {} lies outside the workspace {}",
                        g.source,
                        g.root.display(),
                        root.display()
                    ),
                )
                .help("an archive packs files at their path under the workspace root: move the globs to [workspace.metadata.kprof]")
            })?;
            // Checked when the manifest was read; `*` does not cross `/`, `**` does.
            let glob = GlobBuilder::new(&g.pattern).literal_separator(true).build().map_err(|e| {
                Failure::new(
                    ExitCode::Config,
                    format!("`include` in {}: glob {:?}: {e}", g.source, g.pattern),
                )
            })?;
            match groups.iter_mut().find(|(b, _, _)| *b == base) {
                Some((_, set, ids)) => {
                    set.add(glob);
                    ids.push(i);
                }
                None => {
                    let mut set = GlobSetBuilder::new();
                    set.add(glob);
                    groups.push((base, set, vec![i]));
                }
            }
        }
        let groups = groups
            .into_iter()
            .map(|(b, set, ids)| set.build().map(|s| (b, s, ids)))
            .collect::<Result<_, _>>()
            .map_err(|e| Failure::new(ExitCode::Config, format!("`include`: {e}")))?;
        Ok(GlobGroups(groups))
    }

    /// The indices of the globs that match `rel` (a path under the workspace root).
    fn matches(&self, rel: &Path) -> Vec<usize> {
        let mut hits = Vec::new();
        for (base, set, ids) in &self.0 {
            if let Ok(under) = rel.strip_prefix(base) {
                hits.extend(set.matches(under).into_iter().map(|n| ids[n]));
            }
        }
        hits
    }
}

/// The refusal of a glob that matches a symbolic link leading outside the workspace.
fn link_outside(g: &IncludeGlob, f: &Found) -> Failure {
    let to = match &f.link_to {
        Some(Some(to)) => format!("a symbolic link to {}, outside the workspace", to.display()),
        _ => "a symbolic link that leads nowhere".to_string(),
    };
    Failure::new(
        ExitCode::Config,
        format!("`include` glob {:?} in {} matches {}: {to}", g.pattern, g.source, f.rel.display()),
    )
    .help("an archive packs only files of the workspace: copy the file into it, or narrow the glob")
}

/// The refusal of a file to pack whose name is not UTF-8 (the archive's plan names every
/// file it holds in JSON): matched by the glob `g`, or a CUDA source when `None`.
fn not_utf8(g: Option<&IncludeGlob>, f: &Found) -> Failure {
    let what = match g {
        Some(g) => {
            format!("`include` glob {:?} in {} matches {}", g.pattern, g.source, f.rel.to_string_lossy())
        }
        None => format!("the CUDA source {}", f.rel.to_string_lossy()),
    };
    Failure::new(
        ExitCode::Config,
        format!("{what}, whose name is not UTF-8 (its unreadable bytes shown as \u{fffd})"),
    )
    .help("an archive's plan names each file it packs as text: rename the file, or narrow the glob")
}

/// The refusal of a glob that matches no file.
fn matches_nothing(g: &IncludeGlob) -> Failure {
    Failure::new(
        ExitCode::Config,
        format!("`include` glob {:?} in {} matches no file under {}", g.pattern, g.source, g.root.display()),
    )
    .help(format!(
        "globs match files relative to {} (`*` stays in one folder, `**` crosses folders; \
         target/, profile/ and .git/ are never searched): fix or remove it",
        g.root.display()
    ))
}

/// Adds the build-script outputs of the packages `plan` builds: the files with
/// [`BUILD_OUTPUT_EXTENSIONS`] in their `OUT_DIR`s that lie inside the workspace; the
/// others are listed as skipped.
pub fn add_build_outputs(contents: &mut Contents, plan: &Plan, built: Option<&BuildOutput>) {
    let Some(built) = built else { return };
    let packages: BTreeSet<&str> = plan
        .kernels
        .iter()
        .filter_map(|k| match &k.target {
            PlannedTarget::Cargo(t) => Some(t.package.as_str()),
            PlannedTarget::Command(_) => None,
        })
        .collect();
    let root = &plan.workspace_root;
    let mut dirs: Vec<&(String, PathBuf)> =
        built.build_script_out_dirs.iter().filter(|(p, _)| packages.contains(p.as_str())).collect();
    dirs.sort();
    dirs.dedup();
    let mut found = BTreeSet::new();
    for (package, out_dir) in dirs {
        let Ok(base) = out_dir.strip_prefix(root) else {
            contents.skipped_out_dirs.push((package.clone(), out_dir.clone()));
            continue;
        };
        for f in walk(out_dir) {
            let wanted = f
                .rel
                .extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| BUILD_OUTPUT_EXTENSIONS.iter().any(|e| e.eq_ignore_ascii_case(x)));
            if wanted && f.link_to.is_none() {
                found.insert(base.join(f.rel));
            }
        }
    }
    contents.build_outputs = found.into_iter().collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob(pattern: &str, root: &Path, package: Option<&str>) -> IncludeGlob {
        IncludeGlob {
            pattern: pattern.into(),
            root: root.to_path_buf(),
            source: format!("[table] of {}", root.join("Cargo.toml").display()),
            package: package.map(String::from),
        }
    }

    /// A package's globs apply to a plan with a kernel of that package, or a `command`
    /// kernel running in its folder; the workspace's always.
    #[test]
    fn a_package_s_globs_apply_to_its_kernels_and_its_commands() {
        use crate::model::kinds::Runtime;
        let (a, b) = (Path::new("/ws/a"), Path::new("/ws/b"));
        let globs =
            [glob("x/*", Path::new("/ws"), None), glob("a/*", a, Some("a")), glob("b/*", b, Some("b"))];
        let applied = |kernels: &[KernelPlan]| -> Vec<String> {
            applicable(kernels, &globs).iter().map(|g| g.pattern.clone()).collect()
        };
        let of_a = KernelPlan {
            package: Some("a".into()),
            cwd: "/elsewhere".into(),
            ..KernelPlan::synthetic("k", PlannedTarget::Command(vec!["/bin/k".into()]), Runtime::Cuda)
        };
        assert_eq!(applied(std::slice::from_ref(&of_a)), ["x/*", "a/*"]);
        let in_b = KernelPlan {
            package: None,
            cwd: b.to_path_buf(),
            ..KernelPlan::synthetic("k", PlannedTarget::Command(vec!["/bin/k".into()]), Runtime::Cuda)
        };
        assert_eq!(applied(&[in_b]), ["x/*", "b/*"]);
        assert_eq!(applied(&[]), ["x/*"]);
    }

    fn files(root: &Path, names: &[&str]) {
        for n in names {
            std::fs::create_dir_all(root.join(n).parent().unwrap()).unwrap();
            std::fs::write(root.join(n), n).unwrap();
        }
    }

    #[test]
    fn package_globs_are_relative_to_the_package_and_packed_relative_to_the_workspace() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path();
        files(
            ws,
            &["a.cu", "gemm/data/x.bin", "gemm/data/y.bin", "gemm/target/z.bin", ".git/k.cu", "data/w.bin"],
        );
        // A link to a folder is not entered, even when it stays inside.
        std::os::unix::fs::symlink(ws.join("gemm"), ws.join("loop")).unwrap();
        std::os::unix::fs::symlink(ws.join("gemm/data/x.bin"), ws.join("gemm/data/link.bin")).unwrap();
        let (a, b) = (glob("data/*.bin", &ws.join("gemm"), Some("gemm")), glob("gemm/data/x.bin", ws, None));
        let c = from_workspace(ws, &[&a, &b]).unwrap();
        assert_eq!(c.sources, [PathBuf::from("a.cu")]);
        let included: Vec<&str> = c.included.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(included, ["gemm/data/link.bin", "gemm/data/x.bin", "gemm/data/y.bin"], "once each");
        assert_eq!(c.files().len(), 4);
    }

    #[test]
    fn what_cannot_be_packed_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        files(&ws, &["data/x.bin"]);
        files(tmp.path(), &["secret.txt"]);
        std::os::unix::fs::symlink(tmp.path().join("secret.txt"), ws.join("data/out.bin")).unwrap();
        let err = from_workspace(&ws, &[&glob("data/*.bin", &ws, None)]).unwrap_err().to_string();
        assert!(
            err.contains("matches data/out.bin: a symbolic link to") && err.contains("outside the workspace"),
            "{err}"
        );
        let err = from_workspace(&ws, &[&glob("data/*.txt", &ws, None)]).unwrap_err();
        assert_eq!(err.code, ExitCode::Config);
        assert!(err.to_string().contains("`include` glob \"data/*.txt\" in [table] of"), "{err}");
        let err = from_workspace(&ws, &[&glob("*.txt", tmp.path(), Some("p"))]).unwrap_err().to_string();
        assert!(err.contains("lies outside the workspace"), "{err}");
    }
}
