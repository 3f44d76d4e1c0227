//! A first configuration for a project that has none (`cargo kprof init`).
//!
//! For each workspace member it appends a commented `[package.metadata.kprof]` table with
//! one `[[package.metadata.kprof.kernels]]` entry per case of each kprof-harness program
//! (listed by building it and running `--list`, see [`cases`]) and one per other bench,
//! example and bin target, and the keys worth knowing as comments. It never edits what is there: a package that
//! already has a kprof table is skipped and named, and the text is appended to the
//! manifest, whose bytes stay as they were, through a temporary file and a rename. Before
//! anything is written, the appended tables are checked by the same loader every other
//! command uses, and each whole manifest must still parse.
//!
//! Packages with no sign of GPU code (no cudarc, cust, cubecl or kprof-harness
//! dependency, direct or through other dependencies as the offline dependency graph shows,
//! no build script, no `.cu` file) get entries only when no package shows one.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use cargo_metadata::{Metadata, Package};

use super::opening::load_workspace;
use cases::Listing;

mod cases;
use crate::config::targets::{self, RunnableTarget};
use crate::config::{self, Runtime};
use crate::error::{ExitCode, Failure};
use crate::events::{About, Event, InitAddition, InitEntry, InitFinished};
use crate::shell::Shell;

/// What `init` appends to one manifest.
struct Addition {
    package: String,
    /// The package's id in the metadata.
    id: cargo_metadata::PackageId,
    manifest: PathBuf,
    /// The entries, in the order written.
    entries: Vec<Entry>,
    /// The package's targets with one entry whose cases were not listed: the target,
    /// whether it runs on the harness, and why.
    unlisted: Vec<(RunnableTarget, bool, String)>,
    runtime: Runtime,
    /// The appended text, blank-line separated from what is there.
    text: String,
    /// The manifest's bytes as read; a manifest that changes before the write is refused.
    original: Vec<u8>,
    /// Why the package looks like it holds GPU code (empty when none does).
    signs: Vec<String>,
}

/// One kernel entry init writes.
struct Entry {
    /// The kernel name, unique in the workspace.
    name: String,
    target: RunnableTarget,
    /// The harness case it selects alone; `None`: every case of the target.
    case: Option<String>,
    runtime: Runtime,
}

/// What `cargo kprof init` is asked to do.
pub struct InitOptions<'a> {
    /// `--manifest-path`.
    pub manifest_path: Option<&'a Path>,
    /// `-p`: the packages to configure (all members when empty).
    pub packages: &'a [String],
    /// `--dry-run`: print the tables, write nothing.
    pub dry_run: bool,
}

/// Adds, to each candidate without a sign of GPU code of its own, the GPU crates it
/// reaches through other dependencies (a candle program depends on cudarc only through
/// candle-core). The graph is read offline; without it, a note says how to let init look.
fn look_below(
    candidates: &mut [(&Package, Vec<RunnableTarget>, Vec<String>)],
    manifest_path: Option<&Path>,
    shell: &Shell,
) {
    let cargo = crate::build::cargo_binary();
    match crate::build::metadata_with_graph(&cargo, manifest_path, shell) {
        Ok(full) => {
            for (package, _, signs) in candidates.iter_mut().filter(|(_, _, s)| s.is_empty()) {
                signs.extend(targets::gpu_deps_below(&full, &package.id));
            }
        }
        Err(e) => shell.emit(&Event::note(
            About::DependencyGraph,
            format!(
                "only direct dependencies were looked at for GPU code: the dependency graph could not be \
                 read offline ({e:#}); `cargo fetch` first lets init look below them"
            ),
        )),
    }
}

/// `cargo kprof init`.
pub fn init(a: InitOptions<'_>, shell: &Shell) -> Result<ExitCode> {
    let ws = load_workspace(a.manifest_path, shell)?;
    let (metadata, config) = (ws.metadata, ws.config);
    let members = targets::members(&metadata, a.packages);
    if let Some(unknown) = a.packages.iter().find(|p| !members.iter().any(|m| m.name.as_str() == *p)) {
        let all: Vec<String> =
            targets::members(&metadata, &[]).iter().map(|m| format!("`{}`", m.name)).collect();
        return Err(Failure::new(
            ExitCode::Config,
            format!("package `{unknown}` is not a member of this workspace"),
        )
        .help(format!("members: {}", all.join(", ")))
        .into());
    }

    let mut skipped: Vec<(String, String)> = Vec::new();
    let mut candidates: Vec<(&Package, Vec<RunnableTarget>, Vec<String>)> = Vec::new();
    for package in members {
        if package.metadata.get("kprof").is_some() {
            skipped.push((package.name.to_string(), "it already has [package.metadata.kprof]".into()));
        } else {
            let found = targets::package_targets(package);
            if found.is_empty() {
                skipped.push((package.name.to_string(), "it has no bench, example or bin target".into()));
            } else {
                candidates.push((package, found, targets::gpu_signs(package)));
            }
        }
    }
    if candidates.iter().any(|(_, _, signs)| signs.is_empty()) {
        look_below(&mut candidates, a.manifest_path, shell);
    }
    let any_gpu = candidates.iter().any(|(_, _, signs)| !signs.is_empty());
    if any_gpu {
        for (package, _, _) in candidates.iter().filter(|(_, _, signs)| signs.is_empty()) {
            skipped.push((
                package.name.to_string(),
                "no sign of GPU code (no cudarc, cust, cubecl or kprof-harness dependency, direct or below, no build \
                 script, no .cu file) while other packages have some"
                    .into(),
            ));
        }
        candidates.retain(|(_, _, signs)| !signs.is_empty());
    }
    if candidates.is_empty() {
        return Err(nothing_to_write(&skipped).into());
    }

    let harness: Vec<(&Package, Vec<RunnableTarget>)> = candidates
        .iter()
        .filter(|(package, _, _)| targets::uses_harness(package))
        .map(|(package, found, _)| (*package, found.clone()))
        .collect();
    let listings = if harness.is_empty() { BTreeMap::new() } else { cases::list(&metadata, &harness, shell) };

    let mut taken: HashSet<String> = config.kernels.iter().map(|k| k.name.clone()).collect();
    let mut additions = Vec::new();
    for (package, found, signs) in &candidates {
        let mut add = addition(package, found, &listings, &mut taken)?;
        add.signs = signs.clone();
        additions.push(add);
    }
    check_loads(&metadata, &additions, !a.dry_run)?;

    if a.dry_run {
        for add in &additions {
            shell.emit(&Event::InitDryRun(message(add)));
        }
    } else {
        for add in &additions {
            write(add)?;
            shell.emit(&Event::InitWritten(message(add)));
        }
    }
    summarise(&additions, &skipped, any_gpu, a.dry_run, shell);
    Ok(ExitCode::Success)
}

/// The failure when no package gets entries, with each package's reason.
fn nothing_to_write(skipped: &[(String, String)]) -> Failure {
    let all_configured = !skipped.is_empty() && skipped.iter().all(|(_, why)| why.contains("already has"));
    let message = if all_configured {
        "nothing to write: every package already has [package.metadata.kprof]".to_string()
    } else {
        "nothing to write: no package has a bench, example or bin target kprof could configure".to_string()
    };
    let mut failure = Failure::new(ExitCode::Config, message);
    for (package, why) in skipped {
        failure = failure.help(format!("package `{package}`: {why}"));
    }
    failure.help(if all_configured {
        "`cargo kprof list` shows the configured kernels; edit the tables to add more"
    } else {
        "add a program that launches the kernel (an example or a bench), or configure any program \
         by hand with a `command = [...]` entry (see \"Configuration\" in docs/reference.md)"
    })
}

/// A name not in `taken` (then taken): `name`, else `<package>-<name>`, else that with a
/// number.
fn unique_name(name: &str, package: &str, taken: &mut HashSet<String>) -> String {
    let mut name = name.to_string();
    if taken.contains(&name) {
        name = format!("{package}-{name}");
    }
    let base = name.clone();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{base}-{n}");
        n += 1;
    }
    taken.insert(name.clone());
    name
}

/// The entries and text for one package: one per listed harness case (named after the
/// case), one per other target (named after the target), made unique in the workspace
/// with the package's name when needed.
fn addition(
    package: &Package,
    found: &[RunnableTarget],
    listings: &BTreeMap<RunnableTarget, Listing>,
    taken: &mut HashSet<String>,
) -> Result<Addition> {
    let manifest = PathBuf::from(package.manifest_path.as_std_path());
    // Write through a link to the file it names, not over the link.
    let manifest = manifest.canonicalize().unwrap_or(manifest);
    let original =
        std::fs::read(&manifest).with_context(|| format!("could not read {}", manifest.display()))?;
    let runtime = if targets::uses_harness(package) { Runtime::Harness } else { Runtime::Cuda };
    let mut entries = Vec::new();
    let mut unlisted = Vec::new();
    for t in found {
        let (listed, whole_runtime) = match listings.get(t) {
            Some(Listing::Cases(cases)) => {
                for (case, name) in cases.iter().zip(cases::entry_names(cases)) {
                    let name = unique_name(&name, &t.package, taken);
                    entries.push(Entry { name, target: t.clone(), case: Some(case.clone()), runtime });
                }
                continue;
            }
            Some(Listing::Unlisted(why)) => (Some((true, why)), Runtime::Harness),
            Some(Listing::Plain(why)) => (Some((false, why)), Runtime::Cuda),
            None => (None, runtime),
        };
        if let Some((harness, why)) = listed {
            unlisted.push((t.clone(), harness, why.clone()));
        }
        let name = unique_name(&t.name, &t.package, taken);
        entries.push(Entry { name, target: t.clone(), case: None, runtime: whole_runtime });
    }
    let mut text = render(&entries);
    if original.windows(2).any(|w| w == b"\r\n") {
        text = text.replace('\n', "\r\n");
    }
    let newline: &[u8] = if original.windows(2).any(|w| w == b"\r\n") { b"\r\n" } else { b"\n" };
    let separator = match (original.is_empty(), original.ends_with(newline)) {
        (true, _) => String::new(),
        (false, true) => String::from_utf8_lossy(newline).into_owned(),
        (false, false) => String::from_utf8_lossy(newline).repeat(2),
    };
    Ok(Addition {
        package: package.name.to_string(),
        id: package.id.clone(),
        manifest,
        entries,
        unlisted,
        runtime,
        text: separator + &text,
        original,
        signs: Vec::new(),
    })
}

/// The commented table for one package.
fn render(entries: &[Entry]) -> String {
    let mut t = String::new();
    t.push_str("# The kernels `cargo kprof` profiles, written by `cargo kprof init`: edit freely.\n");
    t.push_str("# `cargo kprof list` shows them; `cargo kprof --kernel NAME` profiles one.\n");
    t.push_str("[package.metadata.kprof]\n");
    t.push_str("# Defaults for every entry below (an entry may override them):\n");
    t.push_str("# stages = \"auto\"                # \"auto\" | \"all\" | [\"basic\", \"memory\"]\n");
    t.push_str("# include = [\"kernels/*.ptx\"]    # files the program reads at run time, packed by `cargo kprof archive`\n");
    for Entry { name, target, case, runtime } in entries {
        let pad = |code: String, comment: &str| format!("{code:<32} # {comment}\n");
        t.push_str("\n[[package.metadata.kprof.kernels]]\n");
        t.push_str(&pad(
            format!("name = {}", quote(name)),
            &format!("the hint: `cargo kprof --kernel {name}`"),
        ));
        t.push_str(&format!("{} = {}\n", target.kind.name(), quote(&target.name)));
        match *runtime {
            Runtime::Harness => {
                t.push_str(&pad(
                    "runtime = \"harness\"".into(),
                    "a kprof-harness bench: it marks the launches to profile",
                ));
                match case {
                    Some(case) => t.push_str(&pad(
                        format!("case = {}", quote(&cases::exact_case(case))),
                        "this case alone (a regex over the names `--list` prints)",
                    )),
                    None => t.push_str(&pad(
                        "case = \".*\"".into(),
                        "every case of the bench: narrow it to one (a regex over case names)",
                    )),
                }
            }
            _ => t.push_str(&pad(
                "runtime = \"cuda\"".into(),
                "a Rust program that launches its kernels itself",
            )),
        }
        t.push_str(&pad(
            "regex = \".*\"".into(),
            "every kernel: narrow it to the kernel's function name, e.g. \".*matmul.*\"",
        ));
        t.push_str(&pad("# args = [\"--size\", \"4096\"]".into(), "arguments for the program"));
        if *runtime == Runtime::Harness {
            t.push_str(&pad("# launch-count = 1".into(), "launches per case to profile"));
        } else {
            t.push_str(&pad(
                "# launch-skip = 5".into(),
                "matching launches to skip (unset: kprof's default, fitted if it skips them all)",
            ));
            t.push_str(&pad("# launch-count = 3".into(), "matching launches to profile"));
        }
        t.push_str(&pad(
            "# stages = [\"basic\", \"memory\"]".into(),
            "instead of auto: basic and source, then one follow-up",
        ));
    }
    t
}

/// A TOML basic string.
fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Checks, before anything is written, that the configuration loader accepts the tables
/// as every command reads them and (when `appending`) that each manifest still parses with
/// its text appended; a dry run prints tables to merge by hand even where appending cannot work.
fn check_loads(metadata: &Metadata, additions: &[Addition], appending: bool) -> Result<()> {
    let mut changed = metadata.clone();
    for add in additions {
        let whole = String::from_utf8_lossy(&add.original).into_owned() + &add.text;
        let parsed = if appending { whole.parse::<toml::Table>().map(drop) } else { Ok(()) };
        if let Err(e) = parsed {
            return Err(Failure::new(
                ExitCode::Config,
                format!(
                    "{} would not be valid TOML with a [package.metadata.kprof] table appended: {}",
                    add.manifest.display(),
                    e.message()
                ),
            )
            .help(
                "`[package] metadata` is probably written inline; print the table with \
                   `cargo kprof init --dry-run -p PACKAGE` and merge it by hand",
            )
            .into());
        }
        let table: toml::Table = add.text.parse().context("the table init writes does not parse")?;
        let kprof = serde_json::to_value(&table["package"]["metadata"]["kprof"])?;
        let package = changed
            .packages
            .iter_mut()
            .find(|p| p.id == add.id)
            .context("the package init writes for is not in the metadata")?;
        match &mut package.metadata {
            serde_json::Value::Object(map) => {
                map.insert("kprof".into(), kprof);
            }
            other => {
                *other = serde_json::Value::Object(serde_json::Map::from_iter([("kprof".into(), kprof)]))
            }
        }
    }
    config::load(&changed).context("the configuration init would write does not load (a bug in init)")?;
    Ok(())
}

/// Appends through a temporary file and a rename, keeping the manifest's permissions.
fn write(add: &Addition) -> Result<()> {
    let path: &Path = &add.manifest;
    let now = std::fs::read(path).with_context(|| format!("could not read {}", path.display()))?;
    if now != add.original {
        return Err(Failure::new(ExitCode::Filesystem, format!("{} changed while init ran", path.display()))
            .help("run `cargo kprof init` again")
            .into());
    }
    let permissions = std::fs::metadata(path).map(|m| m.permissions()).ok();
    let mut bytes = add.original.clone();
    bytes.extend_from_slice(add.text.as_bytes());
    crate::profile::fs::write_atomic_bytes(path, &bytes)?;
    if let Some(p) = permissions {
        std::fs::set_permissions(path, p)
            .with_context(|| format!("could not restore the mode of {}", path.display()))?;
    }
    Ok(())
}

/// What is appended to one manifest, as a message.
fn message(add: &Addition) -> InitAddition {
    InitAddition {
        package: add.package.clone(),
        manifest: add.manifest.clone(),
        runtime: add.runtime,
        kernels: add
            .entries
            .iter()
            .map(|e| InitEntry {
                name: e.name.clone(),
                target: format!("{} {}", e.target.kind, e.target.name),
                case: e.case.clone(),
            })
            .collect(),
        text: add.text.clone(),
        gpu_signs: add.signs.clone(),
    }
}

/// What could not be listed, what was skipped and why, and the next command. (What was,
/// or would be, appended is said by each addition's own message.)
fn summarise(
    additions: &[Addition],
    skipped: &[(String, String)],
    any_gpu: bool,
    dry_run: bool,
    shell: &Shell,
) {
    for add in additions {
        for (t, harness, why) in &add.unlisted {
            let what = if *harness {
                "one entry for all its cases (`case = \".*\"`), which could not be listed"
            } else {
                "one entry as a plain program (`runtime = \"cuda\"`)"
            };
            let note = format!("{} `{}` of `{}`: {what}: {why}", t.kind.name(), t.name, t.package);
            shell.emit(&Event::note(About::Init, note));
        }
    }
    for (package, why) in skipped {
        shell.emit(&Event::InitSkipped { package: package.clone(), why: why.clone() });
    }
    if !any_gpu {
        shell.emit(&Event::note(
            About::Init,
            "no package shows a sign of GPU code (a cudarc, cust, cubecl or kprof-harness dependency, \
             a build script, a .cu file), so every target got an entry",
        ));
    }
    let first_kernel = additions[0].entries[0].name.clone();
    shell.emit(&Event::InitFinished(InitFinished { dry_run, first_kernel }));
}
