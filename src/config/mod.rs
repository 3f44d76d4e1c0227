//! Reading `[workspace.metadata.kprof]` and `[package.metadata.kprof]`.
//!
//! Cargo already parses the manifests and hands us their `metadata` tables as JSON
//! through `cargo metadata`, so [`load`] is a pure function over a
//! [`cargo_metadata::Metadata`]: no I/O, no cargo invocation, and unit tests feed it a
//! JSON string. It validates everything once, up front (ripgrep's "parse, then
//! resolve" split): the planner receives resolved [`KernelEntry`] values and never sees
//! a raw table. Errors are [`Failure`]s with [`ExitCode::Config`] that name the
//! manifest, the entry and the key, and carry a `help:` line with the fix. The first
//! error wins, in a fixed order: the workspace table, then packages sorted by name,
//! then kernel entries in manifest order, then keys in the schema order below. Unknown
//! keys are warnings, with a suggestion when a known key is within two edits.
//!
//! `table.rs` reads the keys of one table; `entry.rs` reads a kernel entry.
//!
//! # Schema
//!
//! ```toml
//! [workspace.metadata.kprof]      # defaults for every kernel in the workspace
//! launch-skip = 0                 # integer >= 0: kernel launches to skip before profiling
//! launch-count = 1                # integer >= 1: launches to profile
//! stages = "auto"                 # "auto" | "all" | ["basic", "memory", ...] | "basic,memory"
//! env = { NO_GRAPH = "1" }        # environment for the target; values are strings
//! tolerance-pct = 2.0             # finite number >= 0: noise band for comparisons
//! clock-control = "none"          # "none" | "base": ncu --clock-control
//! privilege = "none"              # "none" | "sudo": run ncu as `sudo -n <profile/ncu_path>`
//! include = ["data/*.bin"]        # files an archive packs (globs relative to the workspace
//!                                 # root; this table and the package table only)
//!
//! [package.metadata.kprof]        # defaults for this package's kernels: the same keys
//!                                 # (`include` relative to the package root)
//!
//! [[package.metadata.kprof.kernels]]
//! name = "hgemm"                  # required, unique in the workspace: the kernel hint
//! bench = "hgemm"                 # the target: exactly one of bench / example / bin / command
//! # example = "gemm_demo"
//! # bin = "gemm"
//! # command = ["python3", "bench.py", "--n", "4096"]   # any program; implies runtime = "command"
//! case = "hgemm_naive"            # harness case regex (default: the name, regex-escaped)
//! args = ["--size", "4096"]       # extra arguments for the target
//! regex = ".*hgemm_naive.*"       # kernel-name regex (default: .*<escaped name>.*)
//! runtime = "harness"             # "harness" | "cuda" | "command" | "python-triton"
//! launch-skip = 0                 # ...and any of the default keys, overriding them
//! ```
//!
//! A value is resolved as kernel entry > package default > workspace default; what is
//! set nowhere stays `None` and the plan applies its built-in default. `env` tables
//! merge key by key instead (the nearer table wins per variable). The runtime defaults
//! to `command` when `command` is given, else `harness` when the package depends on
//! `kprof-harness`, else `cuda`. `python-triton` is a `command` runtime for Python
//! programs that launch Triton kernels; it also needs `command`.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::path::PathBuf;

use cargo_metadata::{Metadata, Package};

use crate::error::{ExitCode, Failure};
use crate::model::filter::KernelHint;
pub use crate::model::kinds::{CargoTargetKind, ClockControl, Privilege, Runtime};
use crate::model::stage::StageSelection;
mod entry;
mod table;
pub(crate) mod targets;

use crate::suggest::edit_distance;
use entry::read_kernel_entry;
use table::{Level, Table, INCLUDE_KEY, KERNELS_TABLE, PACKAGE_TABLE, SETTING_KEYS, WORKSPACE_TABLE};

/// The crate a package depends on when its benches use the kprof harness.
pub const HARNESS_CRATE: &str = "kprof-harness";

/// The kprof configuration of a workspace, validated and resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The workspace root directory; profiles go to `<root>/profile/`.
    pub workspace_root: PathBuf,
    /// The workspace root's `Cargo.toml`, which holds `[workspace.metadata.kprof]`.
    pub workspace_manifest_path: PathBuf,
    /// `[workspace.metadata.kprof]`.
    pub workspace_defaults: Settings,
    /// Every workspace member with a `[package.metadata.kprof]` table, sorted by name.
    pub packages: Vec<PackageDefaults>,
    /// Every configured kernel: packages sorted by name, entries in manifest order.
    /// A kernel's 1-based index (`--index N`) is its position here plus one.
    pub kernels: Vec<KernelEntry>,
    /// Problems worth telling the user that do not stop the run (unknown keys).
    pub warnings: Vec<ConfigWarning>,
    /// `include` globs: the workspace table's, then each package table's, in package order.
    pub include: Vec<IncludeGlob>,
}

/// One `include` glob: files a program reads at run time, which `cargo kprof archive`
/// packs beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncludeGlob {
    /// The glob as written (checked: valid, relative, no `..`).
    pub pattern: String,
    /// The directory it is relative to: the workspace root, or the package's root.
    pub root: PathBuf,
    /// Where it is written, for messages: `[package.metadata.kprof] of /ws/p/Cargo.toml`.
    pub source: String,
    /// The package whose table holds it; `None` for `[workspace.metadata.kprof]`.
    pub package: Option<String>,
}

/// The settings every kprof table may hold; `None` means "not set here".
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Settings {
    /// Kernel launches (matching the filter) to skip before profiling.
    pub launch_skip: Option<u32>,
    /// Kernel launches to profile; never 0.
    pub launch_count: Option<u32>,
    /// Which profiling stages to run.
    pub stages: Option<StageSelection>,
    /// Environment variables for the target process.
    pub env: BTreeMap<String, String>,
    /// Relative change (in percent) that comparisons treat as noise.
    pub tolerance_pct: Option<f64>,
    /// ncu's `--clock-control`.
    pub clock_control: Option<ClockControl>,
    /// How ncu is started: directly, or through `sudo -n`.
    pub privilege: Option<Privilege>,
}

impl Settings {
    /// These settings with `nearer` layered on top: each value `nearer` sets wins, and
    /// `env` merges variable by variable.
    pub fn overridden_by(&self, nearer: &Settings) -> Settings {
        let mut env = self.env.clone();
        env.extend(nearer.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        Settings {
            launch_skip: nearer.launch_skip.or(self.launch_skip),
            launch_count: nearer.launch_count.or(self.launch_count),
            stages: nearer.stages.clone().or_else(|| self.stages.clone()),
            env,
            tolerance_pct: nearer.tolerance_pct.or(self.tolerance_pct),
            clock_control: nearer.clock_control.or(self.clock_control),
            privilege: nearer.privilege.or(self.privilege),
        }
    }
}

/// What program a kernel entry runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelTarget {
    /// A cargo target of the kernel's package, built by kprof.
    Cargo {
        /// bench, example or bin.
        kind: CargoTargetKind,
        /// The target's name.
        name: String,
    },
    /// An arbitrary program: `command[0]` with `command[1..]` as arguments.
    Command(Vec<String>),
}

impl fmt::Display for KernelTarget {
    /// `bench hgemm`, or `command python3 bench.py`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelTarget::Cargo { kind, name } => write!(f, "{kind} {name}"),
            KernelTarget::Command(words) => write!(f, "command {}", words.join(" ")),
        }
    }
}

/// The defaults one package sets for its kernels.
#[derive(Debug, Clone, PartialEq)]
pub struct PackageDefaults {
    /// The package name.
    pub package: String,
    /// Its `Cargo.toml`.
    pub manifest_path: PathBuf,
    /// `[package.metadata.kprof]` without `kernels`.
    pub settings: Settings,
}

/// One `[[package.metadata.kprof.kernels]]` entry, validated and resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelEntry {
    /// The kernel hint, unique in the workspace.
    pub name: String,
    /// The package whose manifest declares it.
    pub package: String,
    /// That package's `Cargo.toml`.
    pub manifest_path: PathBuf,
    /// The entry's 1-based position among the package's `kernels` entries.
    pub entry_number: usize,
    /// The program to run.
    pub target: KernelTarget,
    /// Extra arguments for the target (after `command`'s own).
    pub args: Vec<String>,
    /// The harness case regex; the escaped name unless `case` was given.
    pub case: String,
    /// The kernel-name regex for ncu's filter; `.*<escaped name>.*` unless `regex` was given.
    /// Checked here: the plan makes it a [`crate::model::filter::KernelFilter`] as it is.
    pub kernel_regex: String,
    /// Whether `regex` was written in the manifest (rather than derived from the name).
    pub kernel_regex_explicit: bool,
    /// How the target launches the kernel.
    pub runtime: Runtime,
    /// Kernel > package > workspace settings, merged.
    pub settings: Settings,
}

impl KernelEntry {
    /// Where the entry is written, as messages show it:
    /// `[[package.metadata.kprof.kernels]] #2 (name = "hgemm")`.
    pub fn location(&self) -> String {
        entry_location(self.entry_number, Some(&self.name))
    }
}

/// A problem in the configuration that does not stop the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning {
    /// The manifest the problem is in.
    pub manifest_path: PathBuf,
    /// The key concerned.
    pub key: String,
    /// A known key the user probably meant, for unknown keys.
    pub suggestion: Option<String>,
    /// The complete message, naming key, table and manifest.
    pub message: String,
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// One row of `cargo kprof list`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ListedKernel<'a> {
    /// The 1-based index `--index N` accepts; the same with or without `-p`.
    pub index: usize,
    /// The kernel.
    pub kernel: &'a KernelEntry,
}

/// Validates and resolves the kprof tables of every workspace member.
///
/// Returns the first error, in manifest order, as a [`Failure`] with
/// [`ExitCode::Config`].
pub fn load(metadata: &Metadata) -> Result<Config, Failure> {
    let workspace_root = PathBuf::from(metadata.workspace_root.as_std_path());
    let workspace_manifest_path = workspace_root.join("Cargo.toml");
    let mut warnings = Vec::new();
    let mut include = Vec::new();

    let workspace_defaults = match metadata.workspace_metadata.get("kprof") {
        None => Settings::default(),
        Some(value) => {
            let table = Table::new(&workspace_manifest_path, WORKSPACE_TABLE.to_string(), value)?;
            let mut keys = SETTING_KEYS.to_vec();
            keys.push(INCLUDE_KEY);
            table.warn_unknown_keys(&keys, Level::Workspace, &mut warnings);
            let settings = table.settings()?;
            include.extend(table.include(&workspace_root, None)?);
            settings
        }
    };

    let members: HashSet<_> = metadata.workspace_members.iter().collect();
    let mut packages: Vec<&Package> = metadata.packages.iter().filter(|p| members.contains(&p.id)).collect();
    packages.sort_by(|a, b| (a.name.as_str(), &a.manifest_path).cmp(&(b.name.as_str(), &b.manifest_path)));

    let mut package_defaults = Vec::new();
    let mut kernels: Vec<KernelEntry> = Vec::new();
    for package in packages {
        let Some(value) = package.metadata.get("kprof") else {
            continue;
        };
        let manifest_path = PathBuf::from(package.manifest_path.as_std_path());
        let table = Table::new(&manifest_path, PACKAGE_TABLE.to_string(), value)?;
        let mut package_keys = SETTING_KEYS.to_vec();
        package_keys.extend(["kernels", INCLUDE_KEY]);
        table.warn_unknown_keys(&package_keys, Level::Package, &mut warnings);
        let settings = table.settings()?;
        let package_root = manifest_path.parent().map(PathBuf::from).unwrap_or_default();
        include.extend(table.include(&package_root, Some(package.name.as_str()))?);
        let inherited = workspace_defaults.overridden_by(&settings);

        for (position, entry_value) in table.kernel_entries()?.iter().enumerate() {
            let entry = read_kernel_entry(
                package,
                &manifest_path,
                position + 1,
                entry_value,
                &inherited,
                &mut warnings,
            )?;
            if let Some(first) = kernels.iter().find(|k| k.name == entry.name) {
                return Err(duplicate_name_error(first, &entry));
            }
            kernels.push(entry);
        }
        package_defaults.push(PackageDefaults { package: package.name.to_string(), manifest_path, settings });
    }

    Ok(Config {
        workspace_root,
        workspace_manifest_path,
        workspace_defaults,
        packages: package_defaults,
        kernels,
        warnings,
        include,
    })
}

impl Config {
    /// Whether any table or kernel asks for `privilege = "sudo"` (what `doctor` checks for).
    pub fn uses_sudo(&self) -> bool {
        let sudo = |s: &Settings| s.privilege == Some(Privilege::Sudo);
        sudo(&self.workspace_defaults)
            || self.packages.iter().any(|p| sudo(&p.settings))
            || self.kernels.iter().any(|k| sudo(&k.settings))
    }

    /// The kernels of `packages` (all when empty) with their 1-based indices, in
    /// configuration order. An unknown package name is an error.
    pub fn listing(&self, packages: &[String]) -> Result<Vec<ListedKernel<'_>>, Failure> {
        self.check_package_names(packages)?;
        Ok(self
            .kernels
            .iter()
            .enumerate()
            .map(|(i, kernel)| ListedKernel { index: i + 1, kernel })
            .filter(|listed| packages.is_empty() || packages.contains(&listed.kernel.package))
            .collect())
    }

    /// The kernel a hint selects among those of `packages` (all when empty): an exact
    /// name match wins, else the only name containing the hint (ignoring case).
    pub fn select_by_hint(&self, hint: &KernelHint, packages: &[String]) -> Result<&KernelEntry, Failure> {
        let candidates = self.listing(packages)?;
        if candidates.is_empty() {
            return Err(self.nothing_configured(packages));
        }
        let (hint, exact_only) = (hint.name.as_str(), hint.exact);
        if let Some(exact) = candidates.iter().find(|c| c.kernel.name == hint) {
            return Ok(exact.kernel);
        }
        if exact_only {
            let names: Vec<String> = candidates.iter().map(|c| format!("`{}`", c.kernel.name)).collect();
            return Err(Failure::new(
                ExitCode::Config,
                format!("no configured kernel is named exactly `{hint}`{}", scope(packages)),
            )
            .help(format!("configured kernels: {}", names.join(", ")))
            .help(format!("drop the `=` to match `{hint}` as part of a name")));
        }
        let needle = hint.to_lowercase();
        let matching: Vec<&ListedKernel<'_>> =
            candidates.iter().filter(|c| c.kernel.name.to_lowercase().contains(&needle)).collect();
        match matching.as_slice() {
            [only] => Ok(only.kernel),
            [] => {
                let mut ranked: Vec<&ListedKernel<'_>> = candidates.iter().collect();
                ranked.sort_by_key(|c| edit_distance(&needle, &c.kernel.name.to_lowercase()));
                let names: Vec<String> = ranked.iter().map(|c| format!("`{}`", c.kernel.name)).collect();
                let mut failure = Failure::new(
                    ExitCode::Config,
                    format!("no configured kernel matches `{hint}`{}", scope(packages)),
                )
                .help(format!("configured kernels, closest first: {}", names.join(", ")));
                if let Some(closest) = ranked.first() {
                    if edit_distance(&needle, &closest.kernel.name.to_lowercase()) <= 2 {
                        failure = failure.help(format!("did you mean `{}`?", closest.kernel.name));
                    }
                }
                Err(failure.help(format!(
                    "to profile a kernel that is not listed, add a {KERNELS_TABLE} entry for it; \
                     `cargo kprof list` shows what is configured"
                )))
            }
            several => {
                let mut failure = Failure::new(
                    ExitCode::Config,
                    format!(
                        "kernel hint `{hint}` matches {} configured kernels{}",
                        several.len(),
                        scope(packages)
                    ),
                );
                for c in several {
                    failure = failure.help(format!(
                        "#{} `{}` (package `{}`, {})",
                        c.index, c.kernel.name, c.kernel.package, c.kernel.target
                    ));
                }
                let first = several[0];
                Err(failure.help(format!(
                    "pass an exact name (`--kernel {}`) or an index (`--index {}`)",
                    first.kernel.name, first.index
                )))
            }
        }
    }

    /// The kernel with 1-based index `index` (as `cargo kprof list` prints it), which
    /// must belong to `packages` when any are given.
    pub fn select_by_index(&self, index: usize, packages: &[String]) -> Result<&KernelEntry, Failure> {
        let candidates = self.listing(packages)?;
        if candidates.is_empty() {
            return Err(self.nothing_configured(packages));
        }
        candidates.iter().find(|c| c.index == index).map(|c| c.kernel).ok_or_else(|| {
            let indices: Vec<String> = candidates.iter().map(|c| c.index.to_string()).collect();
            Failure::new(
                ExitCode::Config,
                format!("no configured kernel has index {index}{}", scope(packages)),
            )
            .help(format!("valid indices: {}; `cargo kprof list` shows them", indices.join(", ")))
        })
    }

    fn check_package_names(&self, packages: &[String]) -> Result<(), Failure> {
        for wanted in packages {
            if !self.packages.iter().any(|p| &p.package == wanted) {
                let known: Vec<String> = self.packages.iter().map(|p| format!("`{}`", p.package)).collect();
                let help = if known.is_empty() {
                    format!("no workspace member has a {PACKAGE_TABLE} table yet")
                } else {
                    format!("packages with kprof configuration: {}", known.join(", "))
                };
                return Err(Failure::new(
                    ExitCode::Config,
                    format!(
                        "package `{wanted}` has no {PACKAGE_TABLE} table \
                         (or is not a workspace member)"
                    ),
                )
                .help(help));
            }
        }
        Ok(())
    }

    /// The failure of a selection that finds no configured kernel among `packages`.
    pub(crate) fn nothing_configured(&self, packages: &[String]) -> Failure {
        let message = format!("no kernels are configured{}", scope(packages));
        Failure::new(ExitCode::Config, message)
            .help("to configure them, `cargo kprof init` writes an entry for each harness case and each other bench, example and bin target")
            .help(format!(
                "or add an entry by hand to the Cargo.toml of the package with the program:\n\n    \
                 {KERNELS_TABLE}\n    name = \"hgemm\"\n    bench = \"hgemm\"\n"
            ))
    }
}

fn scope(packages: &[String]) -> String {
    match packages {
        [] => " in this workspace".to_string(),
        [one] => format!(" in package `{one}`"),
        many => {
            format!(" in packages {}", many.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", "))
        }
    }
}

fn entry_location(number: usize, name: Option<&str>) -> String {
    match name {
        Some(name) => format!("{KERNELS_TABLE} #{number} (name = {name:?})"),
        None => format!("{KERNELS_TABLE} #{number}"),
    }
}

fn duplicate_name_error(first: &KernelEntry, second: &KernelEntry) -> Failure {
    Failure::new(
        ExitCode::Config,
        format!(
            "`name` in {} of {}: kernel name {:?} is already used by {} of {}",
            second.location(),
            second.manifest_path.display(),
            second.name,
            first.location(),
            first.manifest_path.display()
        ),
    )
    .help(
        "kernel names must be unique in the workspace; rename one of them \
         (the `regex` key keeps the ncu filter if the kernel itself has the same name)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::stage::Stage;
    use serde_json::json;
    use serde_json::Value;
    use std::path::Path;
    use table::closest_key;

    /// A package for [`metadata`]: name, `[package.metadata]`, targets as
    /// `(kind, name)`, dependency names.
    fn package(name: &str, metadata: Value, targets: &[(&str, &str)], deps: &[&str]) -> Value {
        let targets: Vec<Value> = std::iter::once(("lib", name))
            .chain(targets.iter().copied())
            .map(|(kind, target)| json!({"name": target, "kind": [kind], "src_path": format!("/ws/{name}/src/{target}.rs")}))
            .collect();
        let dependencies: Vec<Value> = deps
            .iter()
            .map(|d| json!({"name": d, "req": "*", "kind": null, "optional": false, "uses_default_features": true, "features": []}))
            .collect();
        json!({
            "name": name,
            "version": "0.1.0",
            "id": format!("path+file:///ws/{name}#0.1.0"),
            "dependencies": dependencies,
            "targets": targets,
            "features": {},
            "manifest_path": format!("/ws/{name}/Cargo.toml"),
            "metadata": metadata,
        })
    }

    fn metadata(workspace: Value, packages: Vec<Value>) -> Metadata {
        let members: Vec<Value> = packages.iter().map(|p| p["id"].clone()).collect();
        let doc = json!({
            "packages": packages,
            "workspace_members": members,
            "resolve": null,
            "workspace_root": "/ws",
            "target_directory": "/ws/target",
            "metadata": workspace,
            "version": 1,
        });
        serde_json::from_value(doc).unwrap()
    }

    fn one_package(kprof: Value) -> Metadata {
        metadata(
            Value::Null,
            vec![package("gemm", json!({ "kprof": kprof }), &[("bench", "hgemm"), ("bench", "sgemm")], &[])],
        )
    }

    fn error_of(kprof: Value) -> String {
        let failure = load(&one_package(kprof)).unwrap_err();
        assert_eq!(failure.code, ExitCode::Config);
        failure.to_string()
    }

    #[test]
    fn reads_every_key() {
        let config = load(&one_package(json!({ "kernels": [{
            "name": "hgemm",
            "bench": "hgemm",
            "case": "hgemm_naive",
            "args": ["--size", "4096"],
            "regex": ".*hgemm_naive.*",
            "launch-skip": 2,
            "launch-count": 3,
            "stages": ["memory", "basic"],
            "env": { "NO_GRAPH": "1" },
            "tolerance-pct": 1,
            "clock-control": "base",
            "runtime": "cuda",
        }]})))
        .unwrap();
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
        let k = &config.kernels[0];
        assert_eq!(k.name, "hgemm");
        assert_eq!(k.package, "gemm");
        assert_eq!(k.manifest_path, Path::new("/ws/gemm/Cargo.toml"));
        assert_eq!(k.target, KernelTarget::Cargo { kind: CargoTargetKind::Bench, name: "hgemm".into() });
        assert_eq!(k.case, "hgemm_naive");
        assert_eq!(k.args, ["--size", "4096"]);
        assert_eq!(k.kernel_regex, ".*hgemm_naive.*");
        assert!(k.kernel_regex_explicit);
        assert_eq!(k.runtime, Runtime::Cuda);
        let s = &k.settings;
        assert_eq!((s.launch_skip, s.launch_count), (Some(2), Some(3)));
        assert_eq!(s.stages, Some(StageSelection::List(vec![Stage::Basic, Stage::Memory])));
        assert_eq!(s.env.get("NO_GRAPH").map(String::as_str), Some("1"));
        assert_eq!(s.tolerance_pct, Some(1.0));
        assert_eq!(s.clock_control, Some(ClockControl::Base));
        assert_eq!(config.workspace_root, Path::new("/ws"));
        assert_eq!(config.workspace_manifest_path, Path::new("/ws/Cargo.toml"));
    }

    #[test]
    fn defaults_come_from_the_name() {
        let config =
            load(&one_package(json!({ "kernels": [{ "name": "gemm<128, 64>::run", "bench": "hgemm" }] })))
                .unwrap();
        let k = &config.kernels[0];
        assert_eq!(k.kernel_regex, r".*gemm<128, 64>::run.*");
        assert_eq!(k.case, "gemm<128, 64>::run");
        assert!(!k.kernel_regex_explicit);
        assert_eq!(k.settings, Settings::default());
    }

    #[test]
    fn stages_accept_strings_and_lists() {
        for (written, expected) in [
            (json!("auto"), StageSelection::Auto),
            (json!("all"), StageSelection::All),
            (json!("memory,basic"), StageSelection::List(vec![Stage::Basic, Stage::Memory])),
            (json!(["sol"]), StageSelection::List(vec![Stage::SpeedOfLight])),
        ] {
            let config = load(&one_package(json!({ "stages": written }))).unwrap();
            assert_eq!(config.packages[0].settings.stages, Some(expected));
        }
    }

    #[test]
    fn kernel_beats_package_beats_workspace() {
        let ws = json!({ "kprof": {
            "launch-skip": 10, "launch-count": 2, "stages": "all", "tolerance-pct": 5.0,
            "env": { "A": "ws", "B": "ws" },
        }});
        let pkg = json!({ "kprof": {
            "launch-count": 4, "env": { "B": "pkg", "C": "pkg" }, "clock-control": "none",
            "kernels": [
                { "name": "hgemm", "bench": "hgemm", "launch-count": 7, "env": { "C": "kernel" } },
                { "name": "sgemm", "bench": "sgemm" },
            ],
        }});
        let config =
            load(&metadata(ws, vec![package("gemm", pkg, &[("bench", "hgemm"), ("bench", "sgemm")], &[])]))
                .unwrap();
        let [hgemm, sgemm] = &config.kernels[..] else { panic!("{:?}", config.kernels) };
        assert_eq!(hgemm.settings.launch_skip, Some(10));
        assert_eq!(hgemm.settings.launch_count, Some(7));
        assert_eq!(sgemm.settings.launch_count, Some(4));
        assert_eq!(hgemm.settings.stages, Some(StageSelection::All));
        assert_eq!(hgemm.settings.tolerance_pct, Some(5.0));
        assert_eq!(hgemm.settings.clock_control, Some(ClockControl::None));
        let env =
            |k: &KernelEntry| k.settings.env.iter().map(|(a, b)| format!("{a}={b}")).collect::<Vec<_>>();
        assert_eq!(env(hgemm), ["A=ws", "B=pkg", "C=kernel"]);
        assert_eq!(env(sgemm), ["A=ws", "B=pkg", "C=pkg"]);
        assert_eq!(config.workspace_defaults.launch_skip, Some(10));
        assert_eq!(config.packages[0].settings.launch_count, Some(4));
        assert!(!config.uses_sudo());
    }

    #[test]
    fn privilege_is_a_setting_like_the_others() {
        let ws = json!({ "kprof": { "privilege": "sudo" } });
        let pkg = |privilege: Value| {
            package(
                "gemm",
                json!({ "kprof": { "privilege": privilege, "kernels": [{ "name": "h", "bench": "hgemm" }] } }),
                &[("bench", "hgemm")],
                &[],
            )
        };
        let config = load(&metadata(ws.clone(), vec![pkg(json!("none"))])).unwrap();
        assert_eq!(config.workspace_defaults.privilege, Some(Privilege::Sudo));
        assert_eq!(config.kernels[0].settings.privilege, Some(Privilege::None), "the package table wins");
        assert!(config.uses_sudo());
        let config = load(&metadata(ws, vec![pkg(json!("sudo"))])).unwrap();
        assert_eq!(config.kernels[0].settings.privilege, Some(Privilege::Sudo));
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
        let msg = error_of(json!({ "privilege": "full_sudo" }));
        assert!(msg.contains("`privilege` in [package.metadata.kprof]"), "{msg}");
        assert!(msg.contains("expected \"none\" or \"sudo\", found \"full_sudo\""), "{msg}");
        assert!(msg.contains("for example: `privilege = \"none\"`"), "{msg}");
        let msg = error_of(json!({ "privilege": true }));
        assert!(msg.contains("expected \"none\" or \"sudo\", found the boolean true"), "{msg}");
    }

    #[test]
    fn runtime_defaults() {
        let kernels = json!({ "kprof": { "kernels": [
            { "name": "a", "bench": "hgemm" },
            { "name": "b", "command": ["python3", "bench.py"] },
            { "name": "c", "command": ["python3", "t.py"], "runtime": "python-triton" },
        ]}});
        let with = load(&metadata(
            Value::Null,
            vec![package("p", kernels.clone(), &[("bench", "hgemm")], &["kprof-harness"])],
        ))
        .unwrap();
        let runtimes: Vec<Runtime> = with.kernels.iter().map(|k| k.runtime).collect();
        assert_eq!(runtimes, [Runtime::Harness, Runtime::Command, Runtime::PythonTriton]);
        assert_eq!(with.kernels[1].target, KernelTarget::Command(vec!["python3".into(), "bench.py".into()]));
        assert_eq!(with.kernels[1].target.to_string(), "command python3 bench.py");
        let without =
            load(&metadata(Value::Null, vec![package("p", kernels, &[("bench", "hgemm")], &["cudarc"])]))
                .unwrap();
        assert_eq!(without.kernels[0].runtime, Runtime::Cuda);
        assert!(without.warnings.is_empty());
    }

    #[test]
    fn harness_runtime_without_the_dependency_warns() {
        let config = load(&one_package(
            json!({ "kernels": [{ "name": "h", "bench": "hgemm", "runtime": "harness" }] }),
        ))
        .unwrap();
        assert_eq!(config.warnings.len(), 1);
        assert!(
            config.warnings[0].message.contains("does not depend on `kprof-harness`"),
            "{}",
            config.warnings[0]
        );
    }

    #[test]
    fn runtime_and_target_must_agree() {
        let msg = error_of(json!({ "kernels": [{ "name": "h", "bench": "hgemm", "runtime": "command" }] }));
        assert!(
            msg.contains("`runtime = \"command\"` needs a `command`, but the entry names bench hgemm"),
            "{msg}"
        );
        let msg = error_of(json!({ "kernels": [{ "name": "h", "command": ["x"], "runtime": "cuda" }] }));
        assert!(msg.contains("needs a cargo target"), "{msg}");
    }

    #[test]
    fn unknown_keys_warn_with_suggestions() {
        let ws = json!({ "kprof": { "launch_count": 3, "kernels": [] } });
        let pkg = json!({ "kprof": {
            "lauch-skip": 1, "colour": "red", "bench": "x",
            "kernels": [{ "name": "h", "bench": "hgemm", "Stages": "all", "regx": ".*" }],
        }});
        let config = load(&metadata(ws, vec![package("gemm", pkg, &[("bench", "hgemm")], &[])])).unwrap();
        let found: Vec<(&str, Option<&str>)> =
            config.warnings.iter().map(|w| (w.key.as_str(), w.suggestion.as_deref())).collect();
        assert_eq!(
            found,
            [
                ("kernels", None),
                ("launch_count", Some("launch-count")),
                ("bench", None),
                ("colour", None),
                ("lauch-skip", Some("launch-skip")),
                ("Stages", Some("stages")),
                ("regx", Some("regex")),
            ]
        );
        let messages: Vec<String> = config.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(
            messages[1],
            "unknown key `launch_count` in [workspace.metadata.kprof] of /ws/Cargo.toml is ignored; did you mean `launch-count`?"
        );
        assert_eq!(
            messages[0],
            "key `kernels` in [workspace.metadata.kprof] of /ws/Cargo.toml is ignored: it belongs in [package.metadata.kprof]"
        );
        assert!(messages[6]
            .contains("in [[package.metadata.kprof.kernels]] #1 (name = \"h\") of /ws/gemm/Cargo.toml"));
        assert_eq!(
            messages[3],
            "unknown key `colour` in [package.metadata.kprof] of /ws/gemm/Cargo.toml is ignored"
        );
    }

    #[test]
    fn include_globs_at_both_levels() {
        let ws = json!({ "kprof": { "include": ["data/*.bin"] } });
        let pkg = json!({ "kprof": {
            "include": ["kernels/**/*.ptx", "bench.py"],
            "kernels": [{ "name": "h", "bench": "hgemm", "include": ["x"] }],
        }});
        let config = load(&metadata(ws, vec![package("gemm", pkg, &[("bench", "hgemm")], &[])])).unwrap();
        let globs: Vec<(&str, &Path, Option<&str>)> = config
            .include
            .iter()
            .map(|g| (g.pattern.as_str(), g.root.as_path(), g.package.as_deref()))
            .collect();
        assert_eq!(
            globs,
            [
                ("data/*.bin", Path::new("/ws"), None),
                ("kernels/**/*.ptx", Path::new("/ws/gemm"), Some("gemm")),
                ("bench.py", Path::new("/ws/gemm"), Some("gemm")),
            ]
        );
        assert_eq!(config.include[0].source, "[workspace.metadata.kprof] of /ws/Cargo.toml");
        // In a kernel entry it is a warning that says where it belongs.
        let messages: Vec<String> = config.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].contains("key `include` in [[package.metadata.kprof.kernels]] #1 (name = \"h\")")
                && messages[0]
                    .contains("it belongs in [package.metadata.kprof] or [workspace.metadata.kprof]"),
            "{}",
            messages[0]
        );
        let near = load(&one_package(json!({ "includes": ["a"] }))).unwrap();
        assert_eq!(near.warnings[0].suggestion.as_deref(), Some("include"));
    }

    #[test]
    fn include_globs_that_leave_their_root_are_refused() {
        let msg = error_of(json!({ "include": ["../secrets/*"] }));
        assert!(
            msg.starts_with("`include` in [package.metadata.kprof] of /ws/gemm/Cargo.toml: glob \"../secrets/*\" leaves its root through `..`"),
            "{msg}"
        );
        assert!(msg.contains("globs are relative to /ws/gemm"), "{msg}");
        let msg = error_of(json!({ "include": ["data/../../x"] }));
        assert!(msg.contains("leaves its root"), "{msg}");
        let msg = error_of(json!({ "include": ["/etc/passwd"] }));
        assert!(msg.contains("glob \"/etc/passwd\" is an absolute path"), "{msg}");
        let msg = error_of(json!({ "include": ["data/[a-"] }));
        assert!(msg.contains("is not a valid glob"), "{msg}");
        assert!(error_of(json!({ "include": [""] })).contains("is empty"));
        assert!(error_of(json!({ "include": "data/*" })).contains("expected an array of strings"));
        let ws = json!({ "kprof": { "include": ["/abs"] } });
        let failure = load(&metadata(ws, vec![])).unwrap_err().to_string();
        assert!(
            failure.starts_with("`include` in [workspace.metadata.kprof] of /ws/Cargo.toml"),
            "{failure}"
        );
    }

    #[test]
    fn type_errors_name_the_key_and_entry() {
        let msg =
            error_of(json!({ "kernels": [{ "name": "hgemm", "bench": "hgemm", "launch-count": "ten" }] }));
        assert_eq!(
            msg,
            "`launch-count` in [[package.metadata.kprof.kernels]] #1 (name = \"hgemm\") of /ws/gemm/Cargo.toml: \
             expected an integer >= 1, found the string \"ten\"\n  help: for example: `launch-count = 3`"
        );
        let msg = error_of(json!({ "launch-skip": -1 }));
        assert!(
            msg.starts_with(
                "`launch-skip` in [package.metadata.kprof] of /ws/gemm/Cargo.toml: must not be negative"
            ),
            "{msg}"
        );
        let msg = error_of(json!({ "launch-count": 0 }));
        assert!(msg.contains("must be at least 1, found 0"), "{msg}");
        let msg = error_of(json!({ "launch-skip": 1.5 }));
        assert!(msg.contains("found the number 1.5"), "{msg}");
        let msg = error_of(json!({ "tolerance-pct": -2.0 }));
        assert!(msg.contains("must be a finite number >= 0, found -2"), "{msg}");
        // `tolerance-pct = nan` (or inf) reaches us as null through cargo metadata.
        let msg = error_of(json!({ "tolerance-pct": null }));
        assert!(msg.contains("found a number that is not finite (`nan` or `inf`)"), "{msg}");
        let msg = error_of(json!({ "clock-control": "max" }));
        assert!(msg.contains("expected \"none\" or \"base\", found \"max\""), "{msg}");
        let msg = error_of(json!({ "env": { "NO_GRAPH": 1 } }));
        assert!(msg.contains("`env.NO_GRAPH` in [package.metadata.kprof]"), "{msg}");
        assert!(msg.contains("quote it: `NO_GRAPH = \"1\"`"), "{msg}");
        let msg = error_of(json!({ "kernels": [{ "name": "h", "bench": "hgemm", "args": "--size 4096" }] }));
        assert!(msg.contains("`args` in [[package.metadata.kprof.kernels]] #1 (name = \"h\")"), "{msg}");
        assert!(msg.contains("expected an array of strings"), "{msg}");
    }

    #[test]
    fn stage_errors() {
        let msg = error_of(json!({ "stages": ["basic", "memroy"] }));
        assert!(msg.contains("unknown stage `memroy`"), "{msg}");
        assert!(msg.contains("did you mean `memory`?"), "{msg}");
        assert!(error_of(json!({ "stages": ["auto", "basic"] })).contains("`auto` cannot be part of a list"));
        assert!(error_of(json!({ "stages": [] })).contains("the list is empty"));
        assert!(error_of(json!({ "stages": 3 })).contains("found the integer 3"));
    }

    #[test]
    fn entry_shape_errors() {
        let msg = error_of(json!({ "kernels": [{ "name": "a", "bench": "hgemm" }, { "bench": "hgemm" }] }));
        assert!(
            msg.starts_with(
                "[[package.metadata.kprof.kernels]] #2 of /ws/gemm/Cargo.toml: missing required key `name`"
            ),
            "{msg}"
        );
        assert!(error_of(json!({ "kernels": [{ "name": "" , "bench": "hgemm" }] }))
            .contains("`name` in [[package.metadata.kprof.kernels]] #1 of"));
        let msg = error_of(json!({ "kernels": [{ "name": "a" }] }));
        assert!(msg.contains("the entry names no target"), "{msg}");
        let msg = error_of(json!({ "kernels": [{ "name": "a", "bench": "hgemm", "bin": "x" }] }));
        assert!(msg.contains("`bin` in [[package.metadata.kprof.kernels]] #1 (name = \"a\")"), "{msg}");
        assert!(msg.contains("names 2 targets (`bench` and `bin`)"), "{msg}");
        let msg = error_of(json!({ "kernels": [{ "name": "a", "bench": "hgemm", "command": ["x"] }] }));
        assert!(msg.contains("`command` in") && msg.contains("(`bench` and `command`)"), "{msg}");
        let msg = error_of(json!({ "kernels": { "name": "a" } }));
        assert!(
            msg.contains("`kernels` in [package.metadata.kprof]")
                && msg.contains("expected an array of tables"),
            "{msg}"
        );
        assert!(error_of(json!({ "kernels": ["a"] })).contains("entry #1 is the string \"a\", not a table"));
        let msg = error_of(json!("hgemm"));
        assert!(
            msg.starts_with(
                "[package.metadata.kprof] of /ws/gemm/Cargo.toml: expected a table, found the string"
            ),
            "{msg}"
        );
        assert!(error_of(json!({ "kernels": [{ "name": "a", "command": [] }] }))
            .contains("the first element must be the program"));
    }

    #[test]
    fn missing_targets_list_what_exists() {
        let msg = error_of(json!({ "kernels": [{ "name": "a", "bench": "hgem" }] }));
        assert!(msg.contains("package `gemm` has no bench target named `hgem`"), "{msg}");
        assert!(msg.contains("did you mean `bench = \"hgemm\"`?"), "{msg}");
        assert!(msg.contains("the bench targets of package `gemm` are: `hgemm`, `sgemm`"), "{msg}");
        let msg = error_of(json!({ "kernels": [{ "name": "a", "example": "demo" }] }));
        assert!(msg.contains("package `gemm` has no example targets"), "{msg}");
    }

    #[test]
    fn invalid_regexes() {
        let msg = error_of(json!({ "kernels": [{ "name": "a", "bench": "hgemm", "regex": "hgemm(" }] }));
        assert!(msg.starts_with("`regex` in [[package.metadata.kprof.kernels]] #1 (name = \"a\") of /ws/gemm/Cargo.toml: invalid regex \"hgemm(\""), "{msg}");
        assert!(error_of(json!({ "kernels": [{ "name": "a", "bench": "hgemm", "case": "[" }] }))
            .contains("`case` in"));
    }

    #[test]
    fn duplicate_names_across_packages() {
        let a = json!({ "kprof": { "kernels": [{ "name": "hgemm", "bench": "hgemm" }] } });
        let b = json!({ "kprof": { "kernels": [{ "name": "other", "bench": "hgemm" }, { "name": "hgemm", "bench": "hgemm" }] } });
        let failure = load(&metadata(
            Value::Null,
            vec![package("b", b, &[("bench", "hgemm")], &[]), package("a", a, &[("bench", "hgemm")], &[])],
        ))
        .unwrap_err();
        assert_eq!(
            failure.message,
            "`name` in [[package.metadata.kprof.kernels]] #2 (name = \"hgemm\") of /ws/b/Cargo.toml: kernel name \"hgemm\" \
             is already used by [[package.metadata.kprof.kernels]] #1 (name = \"hgemm\") of /ws/a/Cargo.toml"
        );
        assert!(failure.help[0].contains("rename one of them"));
    }

    #[test]
    fn non_members_are_ignored() {
        let mut meta = one_package(json!({ "kernels": [{ "name": "a", "bench": "hgemm" }] }));
        let dep = package("dep", json!({ "kprof": "broken" }), &[], &[]);
        meta.packages.push(serde_json::from_value(dep).unwrap());
        assert_eq!(load(&meta).unwrap().kernels.len(), 1);
    }

    fn selection_config() -> Config {
        let a = json!({ "kprof": { "kernels": [
            { "name": "hgemm", "bench": "g" }, { "name": "hgemm_tiled", "bench": "g" }, { "name": "sgemm", "bench": "g" },
        ]}});
        let b = json!({ "kprof": { "kernels": [{ "name": "Softmax", "bench": "s" }] } });
        load(&metadata(
            Value::Null,
            vec![package("b", b, &[("bench", "s")], &[]), package("a", a, &[("bench", "g")], &[])],
        ))
        .unwrap()
    }

    #[test]
    fn listing_is_stable_and_filtered() {
        let config = selection_config();
        let all: Vec<(usize, &str)> =
            config.listing(&[]).unwrap().iter().map(|l| (l.index, l.kernel.name.as_str())).collect();
        assert_eq!(all, [(1, "hgemm"), (2, "hgemm_tiled"), (3, "sgemm"), (4, "Softmax")]);
        let only_b: Vec<usize> = config.listing(&["b".into()]).unwrap().iter().map(|l| l.index).collect();
        assert_eq!(only_b, [4]);
        let err = config.listing(&["c".into()]).unwrap_err().to_string();
        assert!(
            err.contains("package `c` has no [package.metadata.kprof] table") && err.contains("`a`, `b`"),
            "{err}"
        );
    }

    #[test]
    fn selection_by_hint() {
        let config = selection_config();
        assert_eq!(config.select_by_hint(&KernelHint::parse("hgemm"), &[]).unwrap().name, "hgemm");
        assert_eq!(config.select_by_hint(&KernelHint::parse("TILED"), &[]).unwrap().name, "hgemm_tiled");
        assert_eq!(config.select_by_hint(&KernelHint::parse("softmax"), &[]).unwrap().name, "Softmax");
        assert!(config.select_by_hint(&KernelHint::parse("gemm"), &["b".into(), "a".into()]).is_err());

        let ambiguous = config.select_by_hint(&KernelHint::parse("gemm"), &[]).unwrap_err();
        assert_eq!(ambiguous.code, ExitCode::Config);
        let text = ambiguous.to_string();
        assert!(
            text.starts_with("kernel hint `gemm` matches 3 configured kernels in this workspace"),
            "{text}"
        );
        assert!(text.contains("#2 `hgemm_tiled` (package `a`, bench g)"), "{text}");
        assert!(text.contains("`--kernel hgemm`") && text.contains("`--index 1`"), "{text}");

        let none = config.select_by_hint(&KernelHint::parse("sgem_"), &[]).unwrap_err().to_string();
        assert!(none.starts_with("no configured kernel matches `sgem_`"), "{none}");
        assert!(none.contains("closest first: `sgemm`, `hgemm`"), "{none}");
        assert!(none.contains("did you mean `sgemm`?"), "{none}");

        let scoped =
            config.select_by_hint(&KernelHint::parse("hgemm"), &["b".into()]).unwrap_err().to_string();
        assert!(scoped.starts_with("no configured kernel matches `hgemm` in package `b`"), "{scoped}");
    }

    #[test]
    fn selection_by_index() {
        let config = selection_config();
        assert_eq!(config.select_by_index(3, &[]).unwrap().name, "sgemm");
        assert_eq!(config.select_by_index(4, &["b".into()]).unwrap().name, "Softmax");
        let err = config.select_by_index(1, &["b".into()]).unwrap_err().to_string();
        assert!(
            err.contains("no configured kernel has index 1 in package `b`")
                && err.contains("valid indices: 4"),
            "{err}"
        );
        let empty = load(&metadata(Value::Null, vec![])).unwrap();
        assert!(empty
            .select_by_hint(&KernelHint::parse("x"), &[])
            .unwrap_err()
            .to_string()
            .contains("no kernels are configured"));
    }

    #[test]
    fn closest_keys() {
        assert_eq!(closest_key("launch_count", SETTING_KEYS), Some("launch-count"));
        assert_eq!(closest_key("colour", SETTING_KEYS), None);
    }
}
