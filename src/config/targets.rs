//! The programs a workspace could be profiled with, before anything is configured: its
//! members' bench, example and bin targets, and the signs that a package holds GPU code.
//!
//! Read from the `cargo metadata` kprof already loads, plus one bounded walk of a
//! package's folder for `.cu` files. Two users: the help of a selection that finds no
//! configured kernel, which offers the direct form (`cargo kprof --example matmul-kernel
//! --kernel matmul`) with the workspace's real targets, and `cargo kprof init`, which
//! writes an entry per target (per case for the harness's).

use std::path::Path;

use cargo_metadata::{Metadata, Package, TargetKind};

use super::{CargoTargetKind, HARNESS_CRATE};
use crate::error::Failure;
use crate::process::shell_quote;

/// The most targets a help message lists.
pub const MAX_LISTED: usize = 8;

/// Crates whose users launch CUDA kernels from Rust (besides the kprof harness).
const GPU_CRATES: [&str; 3] = ["cudarc", "cust", "cubecl"];

/// Folders never searched for `.cu` files: build output, profiles, hidden folders.
const SKIPPED_DIRS: [&str; 3] = ["target", "profile", "node_modules"];

/// The most directory entries one package's walk looks at: a huge vendored tree is not
/// worth a slow `init`.
const MAX_WALKED: usize = 20_000;

/// One bench, example or bin target of a workspace member.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RunnableTarget {
    /// The member that has it.
    pub package: String,
    /// bench, example or bin.
    pub kind: CargoTargetKind,
    /// The target's name.
    pub name: String,
}

/// The workspace members among `packages` (all when empty), sorted by name.
pub fn members<'a>(metadata: &'a Metadata, packages: &[String]) -> Vec<&'a Package> {
    let mut members: Vec<&Package> = metadata
        .workspace_packages()
        .into_iter()
        .filter(|p| packages.is_empty() || packages.iter().any(|w| w == p.name.as_str()))
        .collect();
    members.sort_by(|a, b| (a.name.as_str(), &a.manifest_path).cmp(&(b.name.as_str(), &b.manifest_path)));
    members
}

/// The bench, example and bin targets of one package, in that order (manifest order
/// within a kind).
pub fn package_targets(package: &Package) -> Vec<RunnableTarget> {
    CargoTargetKind::ALL
        .into_iter()
        .flat_map(|kind| {
            package.targets.iter().filter(move |t| t.kind.contains(&kind.cargo_kind())).map(move |t| {
                RunnableTarget { package: package.name.to_string(), kind, name: t.name.clone() }
            })
        })
        .collect()
}

/// The runnable targets of the members among `packages` (all when empty): benches first,
/// then examples, then bins, each kind by package name.
pub fn runnable_targets(metadata: &Metadata, packages: &[String]) -> Vec<RunnableTarget> {
    let mut all: Vec<RunnableTarget> =
        members(metadata, packages).into_iter().flat_map(package_targets).collect();
    // A stable sort keeps the package order within each kind.
    all.sort_by_key(|t| t.kind);
    all
}

/// Whether the package runs its programs on the kprof harness.
pub fn uses_harness(package: &Package) -> bool {
    package.dependencies.iter().any(|d| d.name == HARNESS_CRATE)
}

/// Why a package looks like it holds GPU code: a dependency on cudarc, cust, cubecl or
/// the kprof harness, a build script (which typically runs nvcc), or `.cu` files. Empty
/// when there is no sign at all.
pub fn gpu_signs(package: &Package) -> Vec<String> {
    let mut signs: Vec<String> = package
        .dependencies
        .iter()
        .filter(|d| d.name == HARNESS_CRATE || GPU_CRATES.iter().any(|g| d.name.starts_with(g)))
        .map(|d| format!("depends on {}", d.name))
        .collect();
    signs.sort();
    signs.dedup();
    if package.targets.iter().any(|t| t.kind.contains(&TargetKind::CustomBuild)) {
        signs.push("has a build script".to_string());
    }
    if let Some(cu) = package.manifest_path.parent().and_then(|dir| first_cu_file(dir.as_std_path())) {
        signs.push(format!("has CUDA sources ({cu})"));
    }
    signs
}

/// GPU crates that `package` reaches only through other dependencies, in the resolved
/// graph `full` (`cargo metadata` without `--no-deps`): `depends on cudarc through
/// candle-core`. A candle, burn or CubeCL program names none of the GPU crates itself. The
/// first path found (breadth first, dependencies in name order) is the one named; direct
/// dependencies are [`gpu_signs`]' business. Empty without a graph or a GPU crate below.
pub fn gpu_deps_below(full: &Metadata, package: &cargo_metadata::PackageId) -> Vec<String> {
    let Some(resolve) = &full.resolve else { return Vec::new() };
    let name_of = |id: &cargo_metadata::PackageId| {
        full.packages.iter().find(|p| &p.id == id).map(|p| p.name.to_string())
    };
    let is_gpu = |name: &str| name == HARNESS_CRATE || GPU_CRATES.iter().any(|g| name.starts_with(g));
    let deps_of = |id: &cargo_metadata::PackageId| -> Vec<cargo_metadata::PackageId> {
        let mut deps: Vec<cargo_metadata::PackageId> = resolve
            .nodes
            .iter()
            .find(|n| &n.id == id)
            .map(|n| n.deps.iter().map(|d| d.pkg.clone()).collect())
            .unwrap_or_default();
        deps.sort_by_key(|d| name_of(d));
        deps
    };
    // Breadth first from each direct dependency, remembering which one led there.
    let mut seen: std::collections::HashSet<cargo_metadata::PackageId> = [package.clone()].into();
    let mut queue: std::collections::VecDeque<(cargo_metadata::PackageId, String)> =
        std::collections::VecDeque::new();
    for direct in deps_of(package) {
        if seen.insert(direct.clone()) {
            let via = name_of(&direct).unwrap_or_default();
            queue.push_back((direct, via));
        }
    }
    let mut signs = Vec::new();
    while let Some((id, via)) = queue.pop_front() {
        for dep in deps_of(&id) {
            if !seen.insert(dep.clone()) {
                continue;
            }
            let name = name_of(&dep).unwrap_or_default();
            if is_gpu(&name) {
                signs.push(format!("depends on {name} through {via}"));
            }
            queue.push_back((dep, via.clone()));
        }
    }
    signs.sort();
    signs.dedup();
    signs
}

/// The first `.cu` file under `dir` (relative to it), in a bounded walk that follows no
/// links and skips build output and hidden folders.
fn first_cu_file(dir: &Path) -> Option<String> {
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0;
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            seen += 1;
            if seen > MAX_WALKED {
                return None;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                if !name.starts_with('.') && !SKIPPED_DIRS.contains(&name.as_str()) {
                    stack.push(e.path());
                }
            } else if kind.is_file() && name.ends_with(".cu") {
                let path = e.path();
                return Some(path.strip_prefix(dir).unwrap_or(&path).display().to_string());
            }
        }
    }
    None
}

/// What the direct form offered by [`offer_direct_forms`] does with a target.
#[derive(Debug, Clone, Copy)]
pub enum DirectVerb<'a> {
    /// `cargo kprof --bin NAME`.
    Profile,
    /// `cargo kprof archive --bin NAME -o FILE`.
    Pack(&'a Path),
}

impl DirectVerb<'_> {
    fn word(self) -> &'static str {
        match self {
            DirectVerb::Profile => "profile",
            DirectVerb::Pack(_) => "pack",
        }
    }
}

/// `cargo kprof [-p PKG] --example NAME [--kernel HINT]`: the direct form that profiles
/// `target` with no configuration (`cargo kprof archive ... -o FILE` packs it instead);
/// `-p` only when another member has a target of the same kind and name.
pub fn direct_command(
    target: &RunnableTarget,
    hint: Option<&str>,
    all: &[RunnableTarget],
    verb: DirectVerb<'_>,
) -> String {
    let mut words = vec!["cargo".to_string(), "kprof".to_string()];
    if let DirectVerb::Pack(_) = verb {
        words.push("archive".to_string());
    }
    if all.iter().any(|t| t.kind == target.kind && t.name == target.name && t.package != target.package) {
        words.extend(["-p".to_string(), shell_quote(&target.package)]);
    }
    words.extend([target.kind.cargo_flag().to_string(), shell_quote(&target.name)]);
    if let Some(hint) = hint {
        words.extend(["--kernel".to_string(), shell_quote(hint)]);
    }
    if let DirectVerb::Pack(out) = verb {
        words.extend(["-o".to_string(), shell_quote(&out.to_string_lossy())]);
    }
    words.join(" ")
}

/// `failure` (a selection that found no configured kernel among `packages`) with help
/// lines in front that offer the direct form for the real targets there: the exact
/// command when there is one target, else up to [`MAX_LISTED`] of them.
pub fn offer_direct_forms(
    mut failure: Failure,
    metadata: &Metadata,
    packages: &[String],
    hint: Option<&str>,
    verb: DirectVerb<'_>,
) -> Failure {
    let targets = runnable_targets(metadata, packages);
    let all = runnable_targets(metadata, &[]);
    let discovery = match (hint, verb) {
        (Some(_), _) => "",
        (None, DirectVerb::Profile) => " (kprof then profiles its costliest kernel)",
        (None, DirectVerb::Pack(_)) => " (kprof then profiles its costliest kernel where the archive runs)",
    };
    let word = verb.word();
    let help = match targets.as_slice() {
        [] if members(metadata, packages).len() < packages.len() => return failure,
        [] => "there is no bench, example or bin target to profile here: add a program that launches \
               the kernel, or profile any program through a `command = [...]` entry"
            .to_string(),
        [one] => {
            format!(
                "{word} the one target here directly{discovery}: `{}`",
                direct_command(one, hint, &all, verb)
            )
        }
        many => {
            let mut text = format!("{word} one of the targets here directly{discovery}:");
            for t in many.iter().take(MAX_LISTED) {
                text.push_str(&format!("\n          {}", direct_command(t, hint, &all, verb)));
            }
            if many.len() > MAX_LISTED {
                text.push_str(&format!("\n          ... and {} more", many.len() - MAX_LISTED));
            }
            text
        }
    };
    failure.help.insert(0, help);
    failure
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ExitCode;
    use serde_json::json;

    fn package(name: &str, targets: &[(&str, &str)], deps: &[&str]) -> serde_json::Value {
        let targets: Vec<_> = std::iter::once(("lib", name))
            .chain(targets.iter().copied())
            .map(|(kind, t)| json!({"name": t, "kind": [kind], "src_path": format!("/nonexistent/{name}/src/{t}.rs")}))
            .collect();
        let deps: Vec<_> = deps
            .iter()
            .map(|d| json!({"name": d, "req": "*", "kind": null, "optional": false, "uses_default_features": true, "features": []}))
            .collect();
        json!({
            "name": name, "version": "0.1.0", "id": format!("path+file:///nonexistent/{name}#0.1.0"),
            "dependencies": deps, "targets": targets, "features": {},
            "manifest_path": format!("/nonexistent/{name}/Cargo.toml"), "metadata": null,
        })
    }

    fn metadata(packages: Vec<serde_json::Value>) -> Metadata {
        let ids: Vec<_> = packages.iter().map(|p| p["id"].clone()).collect();
        serde_json::from_value(json!({
            "packages": packages, "workspace_members": ids, "resolve": null,
            "target_directory": "/nonexistent/target", "version": 1, "workspace_root": "/nonexistent",
        }))
        .unwrap()
    }

    #[test]
    fn targets_are_listed_benches_first() {
        let meta = metadata(vec![
            package("b", &[("bin", "app"), ("example", "matmul-kernel"), ("bench", "sgemm")], &["cudarc"]),
            package(
                "a",
                &[("example", "demo"), ("bench", "hgemm"), ("custom-build", "build-script-build")],
                &[],
            ),
        ]);
        let names: Vec<String> = runnable_targets(&meta, &[])
            .iter()
            .map(|t| format!("{} {} ({})", t.kind, t.name, t.package))
            .collect();
        assert_eq!(
            names,
            [
                "bench hgemm (a)",
                "bench sgemm (b)",
                "example demo (a)",
                "example matmul-kernel (b)",
                "bin app (b)"
            ]
        );
        assert_eq!(runnable_targets(&meta, &["b".into()]).len(), 3);
        let a = meta.packages.iter().find(|p| p.name.as_str() == "a").unwrap();
        let b = meta.packages.iter().find(|p| p.name.as_str() == "b").unwrap();
        assert_eq!(gpu_signs(a), ["has a build script"]);
        assert_eq!(gpu_signs(b), ["depends on cudarc"]);
    }

    #[test]
    fn direct_forms_name_real_targets() {
        let one = metadata(vec![package("m", &[("example", "matmul-kernel")], &[])]);
        let f = offer_direct_forms(
            Failure::new(ExitCode::Config, "no kernels are configured").help("old"),
            &one,
            &[],
            Some("matmul"),
            DirectVerb::Profile,
        );
        assert_eq!(
            f.help,
            [
                "profile the one target here directly: `cargo kprof --example matmul-kernel --kernel matmul`",
                "old"
            ]
        );

        let targets: Vec<(&str, String)> = (0..10).map(|i| ("bin", format!("b{i}"))).collect();
        let targets: Vec<(&str, &str)> = targets.iter().map(|(k, n)| (*k, n.as_str())).collect();
        let many = metadata(vec![package("x", &targets, &[]), package("y", &[("bin", "b0")], &[])]);
        let f =
            offer_direct_forms(Failure::new(ExitCode::Config, "none"), &many, &[], None, DirectVerb::Profile);
        let help = &f.help[0];
        assert!(help.starts_with(
            "profile one of the targets here directly (kprof then profiles its costliest kernel):"
        ));
        assert!(
            help.contains("\n          cargo kprof -p x --bin b0\n          cargo kprof --bin b1\n"),
            "{help}"
        );
        assert!(help.ends_with("... and 3 more"), "{help}");
        assert_eq!(help.lines().count(), 1 + MAX_LISTED + 1);

        let empty = metadata(vec![package("lib-only", &[], &[])]);
        let f = offer_direct_forms(
            Failure::new(ExitCode::Config, "none"),
            &empty,
            &[],
            None,
            DirectVerb::Profile,
        );
        assert!(f.help[0].starts_with("there is no bench, example or bin target"), "{:?}", f.help);
        let f = offer_direct_forms(
            Failure::new(ExitCode::Config, "none"),
            &empty,
            &["nope".into()],
            None,
            DirectVerb::Profile,
        );
        assert!(f.help.is_empty());
    }

    #[test]
    fn an_archive_offers_to_pack_the_target() {
        let one = metadata(vec![package("m", &[("bin", "app")], &[])]);
        let f = offer_direct_forms(
            Failure::new(ExitCode::Config, "none"),
            &one,
            &[],
            None,
            DirectVerb::Pack(Path::new("k.tar")),
        );
        assert_eq!(
            f.help[0],
            "pack the one target here directly (kprof then profiles its costliest kernel where the archive \
             runs): `cargo kprof archive --bin app -o k.tar`"
        );
    }
}
