//! The package that owns a target named on the command line (`--bench NAME`), or the
//! error that lists the targets there are.

use anyhow::Result;
use cargo_metadata::Metadata;

use crate::config::CargoTargetKind;
use crate::error::{ExitCode, Failure};

/// The package that has the named target: among `-p` packages, else the workspace members.
pub(super) fn target_package(
    metadata: &Metadata,
    packages: &[String],
    kind: CargoTargetKind,
    name: &str,
) -> Result<String> {
    let members: Vec<&cargo_metadata::Package> = metadata.workspace_packages();
    let owners: Vec<&&cargo_metadata::Package> = members
        .iter()
        .filter(|p| packages.is_empty() || packages.iter().any(|w| w == p.name.as_str()))
        .filter(|p| p.targets.iter().any(|t| t.name == name && kind_matches(kind, &t.kind)))
        .collect();
    match owners.as_slice() {
        [one] => Ok(one.name.to_string()),
        [] => {
            let available: Vec<String> = members
                .iter()
                .flat_map(|p| {
                    p.targets
                        .iter()
                        .filter(|t| kind_matches(kind, &t.kind))
                        .map(move |t| format!("{} ({})", t.name, p.name))
                })
                .collect();
            let mut f = Failure::new(ExitCode::Config, format!("no {} target named `{name}`", kind.name()));
            f = if available.is_empty() {
                f.help(format!("the workspace has no {} targets", kind.name()))
            } else {
                f.help(format!("available {} targets: {}", kind.name(), available.join(", ")))
            };
            Err(f.into())
        }
        many => {
            let names: Vec<&str> = many.iter().map(|p| p.name.as_str()).collect();
            Err(Failure::new(
                ExitCode::Config,
                format!("{} `{name}` exists in several packages: {}", kind.name(), names.join(", ")),
            )
            .help("pick one with -p PACKAGE")
            .into())
        }
    }
}

fn kind_matches(kind: CargoTargetKind, kinds: &[cargo_metadata::TargetKind]) -> bool {
    kinds.contains(&kind.cargo_kind())
}
