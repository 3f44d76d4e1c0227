//! One `[[package.metadata.kprof.kernels]]` entry, read into a [`KernelEntry`]: its name
//! first (every later message shows it), then the one target it names, the runtime that
//! target allows, and the entry's own keys, each step with its own messages. The keys are
//! read through [`Table`], which names the manifest, the entry and the key in each error.
//!
//! The entry's `regex` is checked here: a bad one is refused with the entry and key
//! named, and the plan makes it a kernel filter without checking again.

use std::path::Path;

use cargo_metadata::Package;
use serde_json::Value;

use super::table::{closest_key, Level, Table, KERNEL_KEYS, SETTING_KEYS};
use super::{entry_location, ConfigWarning, KernelEntry, KernelTarget, Settings, HARNESS_CRATE};
use crate::error::{ExitCode, Failure};
use crate::model::filter::{escape_regex, KernelFilter};
use crate::model::kinds::{CargoTargetKind, Runtime};
use crate::model::names;

/// Reads entry `number` of `package`'s kernels, with the settings it inherits.
pub(super) fn read_kernel_entry(
    package: &Package,
    manifest: &Path,
    number: usize,
    value: &Value,
    inherited: &Settings,
    warnings: &mut Vec<ConfigWarning>,
) -> Result<KernelEntry, Failure> {
    let (table, name) = named_table(manifest, number, value)?;

    let mut allowed = SETTING_KEYS.to_vec();
    allowed.extend(KERNEL_KEYS.iter().filter(|k| **k != "kernels"));
    table.warn_unknown_keys(&allowed, Level::Kernel, warnings);

    let target = read_target(&table, package, &name)?;
    let runtime = read_runtime(&table, package, &target, warnings)?;
    let case = table.regex("case", &format!("case = \"{name}_naive\""))?;
    let args = table.string_list("args", "args = [\"--size\", \"4096\"]")?.unwrap_or_default();
    let regex = table.regex("regex", &format!("regex = \".*{name}.*\""))?;
    let own_settings = table.settings()?;

    Ok(KernelEntry {
        package: package.name.to_string(),
        manifest_path: manifest.to_path_buf(),
        entry_number: number,
        target,
        args,
        case: case.map_or_else(|| escape_regex(&name), str::to_string),
        kernel_regex: regex.map_or_else(|| KernelFilter::containing(&name).pattern, str::to_string),
        kernel_regex_explicit: regex.is_some(),
        runtime,
        settings: inherited.overridden_by(&own_settings),
        name,
    })
}

/// The entry's table, shown by its name once the name is read and checked.
fn named_table<'a>(
    manifest: &'a Path,
    number: usize,
    value: &'a Value,
) -> Result<(Table<'a>, String), Failure> {
    // The name first, so that every later message can show it.
    let unnamed = Table::new(manifest, entry_location(number, None), value)?;
    let name = match unnamed.get("name") {
        None => {
            return Err(Failure::new(
                ExitCode::Config,
                format!("{} of {}: missing required key `name`", unnamed.location(), manifest.display()),
            )
            .help("name the kernel (the hint matched against kernel names): `name = \"hgemm\"`"));
        }
        Some(_) => unnamed.string("name", "name = \"hgemm\"")?.unwrap_or_default().to_string(),
    };
    // Checked before the name is shown anywhere: a line break would split the message too.
    names::check_name(&name).map_err(|problem| {
        unnamed.error("name", format_args!("{:?} {problem}", name)).help(
            "a kernel name is written into commands.sh and file names: \
             use printable characters only, like `name = \"hgemm\"`",
        )
    })?;
    let location = entry_location(number, Some(&name));
    Ok((unnamed.relocated(location), name))
}

/// The one target the entry names: a cargo target of the package, or a command.
fn read_target(table: &Table<'_>, package: &Package, name: &str) -> Result<KernelTarget, Failure> {
    let mut cargo_targets = Vec::new();
    for kind in CargoTargetKind::ALL {
        if let Some(target_name) = table.string(kind.name(), &format!("{kind} = \"{name}\""))? {
            cargo_targets.push((kind, target_name));
        }
    }
    let command = table.string_list("command", "command = [\"python3\", \"bench.py\"]")?;
    match (cargo_targets.as_slice(), command) {
        ([], None) => Err(table.error("bench", "the entry names no target").help(format!(
            "add exactly one of `bench = \"{name}\"`, `example = \"...\"`, `bin = \"...\"` \
             or `command = [\"program\", \"arg\"]`"
        ))),
        ([], Some(words)) if words.is_empty() || words[0].trim().is_empty() => Err(table
            .error("command", "the first element must be the program to run")
            .help("for example: `command = [\"python3\", \"bench.py\"]`")),
        ([], Some(words)) => Ok(KernelTarget::Command(words)),
        ([(kind, target_name)], None) => {
            check_target_exists(table, package, *kind, target_name)?;
            Ok(KernelTarget::Cargo { kind: *kind, name: target_name.to_string() })
        }
        (cargo, command) => {
            let mut keys: Vec<&str> = cargo.iter().map(|(kind, _)| kind.name()).collect();
            if command.is_some() {
                keys.push("command");
            }
            let listed: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
            let problem = format!("the entry names {} targets ({})", keys.len(), listed.join(" and "));
            Err(table.error(keys[1], problem).help(
                "keep exactly one of `bench`, `example`, `bin` or `command`; \
                 declare another entry for the other target",
            ))
        }
    }
}

/// The runtime: as written when the target allows it, else what the target implies; a
/// harness runtime without the harness dependency is a warning.
fn read_runtime(
    table: &Table<'_>,
    package: &Package,
    target: &KernelTarget,
    warnings: &mut Vec<ConfigWarning>,
) -> Result<Runtime, Failure> {
    let runtime = match table.one_of("runtime", &Runtime::ALL, Runtime::name)? {
        Some(runtime @ (Runtime::Command | Runtime::PythonTriton))
            if !matches!(target, KernelTarget::Command(_)) =>
        {
            let problem =
                format!("`runtime = \"{runtime}\"` needs a `command`, but the entry names {target}");
            return Err(table.error("runtime", problem).help(
                "remove `runtime` to profile the cargo target, \
                 or replace the target with `command = [\"program\", \"arg\"]`",
            ));
        }
        Some(runtime @ (Runtime::Harness | Runtime::Cuda)) if matches!(target, KernelTarget::Command(_)) => {
            let problem =
                format!("`runtime = \"{runtime}\"` needs a cargo target, but the entry names a `command`");
            return Err(table.error("runtime", problem).help(
                "remove `runtime` (a command runs as `runtime = \"command\"`), \
                 or name a `bench`, `example` or `bin` instead of `command`",
            ));
        }
        Some(runtime) => runtime,
        None if matches!(target, KernelTarget::Command(_)) => Runtime::Command,
        None if depends_on_harness(package) => Runtime::Harness,
        None => Runtime::Cuda,
    };
    if runtime == Runtime::Harness && !depends_on_harness(package) {
        let manifest = table.manifest();
        warnings.push(ConfigWarning {
            manifest_path: manifest.to_path_buf(),
            key: "runtime".to_string(),
            suggestion: None,
            message: format!(
                "`runtime = \"harness\"` in {} of {}, \
                 but package `{}` does not depend on `{HARNESS_CRATE}`",
                table.location(),
                manifest.display(),
                package.name
            ),
        });
    }
    Ok(runtime)
}

fn depends_on_harness(package: &Package) -> bool {
    package.dependencies.iter().any(|d| d.name == HARNESS_CRATE)
}

fn check_target_exists(
    table: &Table<'_>,
    package: &Package,
    kind: CargoTargetKind,
    name: &str,
) -> Result<(), Failure> {
    let cargo_kind = kind.cargo_kind();
    let existing: Vec<&str> =
        package.targets.iter().filter(|t| t.kind.contains(&cargo_kind)).map(|t| t.name.as_str()).collect();
    if existing.contains(&name) {
        return Ok(());
    }
    let available = if existing.is_empty() {
        format!("package `{}` has no {kind} targets", package.name)
    } else {
        let listed: Vec<String> = existing.iter().map(|n| format!("`{n}`")).collect();
        format!("the {kind} targets of package `{}` are: {}", package.name, listed.join(", "))
    };
    let mut failure = table
        .error(kind.name(), format_args!("package `{}` has no {kind} target named `{name}`", package.name));
    if let Some(close) = closest_key(name, existing.iter().copied()) {
        failure = failure.help(format!("did you mean `{kind} = \"{close}\"`?"));
    }
    let declare = match kind {
        CargoTargetKind::Bench => {
            format!("create `benches/{name}.rs`, or declare `[[bench]] name = \"{name}\"`")
        }
        CargoTargetKind::Example => {
            format!("create `examples/{name}.rs`, or declare `[[example]] name = \"{name}\"`")
        }
        CargoTargetKind::Bin => {
            format!("create `src/bin/{name}.rs`, or declare `[[bin]] name = \"{name}\"`")
        }
    };
    Err(failure.help(available).help(declare))
}
