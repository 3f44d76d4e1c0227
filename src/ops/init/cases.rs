//! The cases of a project's harness programs, for `init`: one entry per case.
//!
//! A kprof-harness program prints its case names, one per line, for `--list` without
//! opening the GPU (registration is names and closures; setups run only when selected).
//! So init builds the harness programs once, as a profile would (`--profile release`
//! into `<target-dir>/kprof`, which the first profile then reuses), and runs each with
//! `--list`. Only a program whose main source file names `kprof_harness` is run: a plain
//! program would ignore `--list` and do its real work, so it gets one entry as a plain
//! (`cuda`) program. A harness program that cannot be listed (a failed build, an
//! unexpected answer) keeps one entry for all its cases. Either way the reason is given.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cargo_metadata::{Metadata, Package};

use crate::build::{BuildRequest, BuildTarget, Features};
use crate::config::targets::RunnableTarget;
use crate::events::{BuildPurpose, BuildStarted, Event};
use crate::process::{self, ProcessBuilder, RunOptions};
use crate::shell::Shell;

/// What listing a target gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Listing {
    /// The case names the program printed, in its order.
    Cases(Vec<String>),
    /// A harness program whose cases could not be listed, and why: one entry for all.
    Unlisted(String),
    /// Not a harness program (its main source does not use it), and why: one entry, run
    /// as a plain program.
    Plain(String),
}

/// How long one `--list` may take: it registers names, it does not run anything.
const LIST_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest main source file read to look for the harness.
const MAX_SOURCE_BYTES: u64 = 4 << 20;

/// Lists the cases of every target in `wanted` (the harness packages' targets): builds
/// those whose source uses the harness in one `cargo build`, then runs each with `--list`.
pub(super) fn list(
    metadata: &Metadata,
    wanted: &[(&Package, Vec<RunnableTarget>)],
    shell: &Shell,
) -> BTreeMap<RunnableTarget, Listing> {
    let mut out = BTreeMap::new();
    let mut to_build: Vec<(RunnableTarget, PathBuf)> = Vec::new();
    for (package, targets) in wanted {
        for t in targets {
            match harness_source(package, t) {
                Ok(dir) => to_build.push((t.clone(), dir)),
                Err(listing) => {
                    out.insert(t.clone(), listing);
                }
            }
        }
    }
    if to_build.is_empty() {
        return out;
    }
    let request = BuildRequest {
        cargo: crate::build::cargo_binary(),
        manifest_path: metadata.workspace_root.join("Cargo.toml").into(),
        target_dir: PathBuf::from(metadata.target_directory.as_std_path()).join("kprof"),
        profile: "release".into(),
        features: Features::default(),
        targets: to_build.iter().map(|(t, _)| build_target(t)).collect(),
        user_nvcc_append_flags: std::env::var("NVCC_APPEND_FLAGS").ok(),
    };
    shell.emit(&Event::BuildStarted(BuildStarted {
        side: None,
        build: request.describe(),
        targets: request.targets.len(),
        purpose: BuildPurpose::ListCases,
    }));
    let built = match request.run(shell) {
        Ok(built) => built,
        Err(e) => {
            for (t, _) in to_build {
                out.insert(t, Listing::Unlisted(format!("its build failed ({e:#})")));
            }
            return out;
        }
    };
    for (t, dir) in to_build {
        let listing = match built.executable(&build_target(&t)) {
            Some(exe) => run_list(exe, &dir, shell),
            None => Listing::Unlisted("cargo reported no executable for it".into()),
        };
        out.insert(t, listing);
    }
    out
}

fn build_target(t: &RunnableTarget) -> BuildTarget {
    BuildTarget { package: t.package.clone(), kind: t.kind, name: t.name.clone() }
}

/// The package directory to run the target in when its main source file uses the harness
/// (cargo runs benches there too); otherwise what it is instead.
fn harness_source(package: &Package, t: &RunnableTarget) -> Result<PathBuf, Listing> {
    let target = package
        .targets
        .iter()
        .find(|c| c.name == t.name && c.kind.contains(&t.kind.cargo_kind()))
        .ok_or_else(|| Listing::Unlisted("cargo metadata does not describe it".to_string()))?;
    let source = target.src_path.as_std_path();
    let mut text = String::new();
    let read = std::fs::File::open(source).and_then(|f| {
        use std::io::Read;
        f.take(MAX_SOURCE_BYTES).read_to_string(&mut text)
    });
    if read.is_err() || !text.contains("kprof_harness") {
        return Err(Listing::Plain(format!("{} does not use kprof_harness", shown(source, package))));
    }
    Ok(package.manifest_path.parent().map(|d| d.as_std_path().to_path_buf()).unwrap_or_default())
}

/// `source` relative to the package's directory, for messages.
fn shown(source: &Path, package: &Package) -> String {
    let dir = package.manifest_path.parent().map(|d| d.as_std_path().to_path_buf()).unwrap_or_default();
    source.strip_prefix(&dir).unwrap_or(source).display().to_string()
}

/// Runs `exe --list` in `dir`: the case names, one per line, or why not.
fn run_list(exe: &Path, dir: &Path, shell: &Shell) -> Listing {
    let mut cmd = ProcessBuilder::new(exe);
    cmd.arg("--list").cwd(dir);
    let done = process::run(&cmd, RunOptions { timeout: Some(LIST_TIMEOUT), ..Default::default() }, shell);
    if !done.success() {
        let said = process::tail_lines(&done.console(), 3);
        return Listing::Unlisted(format!("`{cmd}` failed ({}): {}", done.ending, said.trim()));
    }
    cases_in(&done.stdout_text()).map_or_else(Listing::Unlisted, Listing::Cases)
}

/// The case names in `--list` output, or why it is not a harness's list.
fn cases_in(stdout: &str) -> Result<Vec<String>, String> {
    let names: Vec<String> =
        stdout.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect();
    if names.is_empty() {
        return Err("its `--list` printed no cases".into());
    }
    if let Some(odd) = names.iter().find(|n| n.chars().any(|c| c.is_whitespace() || c.is_control())) {
        return Err(format!("its `--list` printed `{odd}`, which is not a case name"));
    }
    Ok(names)
}

/// Entry names for a target's cases: the part before the first `/` (`saxpy` for
/// `saxpy/n=16777216`), or the whole case name where two cases share that part; each a
/// valid kernel name ([`crate::profile::names::sanitize_kernel_name`]).
pub(super) fn entry_names(cases: &[String]) -> Vec<String> {
    let head = |c: &str| c.split('/').next().unwrap_or(c).to_string();
    cases
        .iter()
        .map(|c| {
            let shared = cases.iter().filter(|o| head(o) == head(c)).count() > 1;
            crate::profile::names::sanitize_kernel_name(&if shared { c.clone() } else { head(c) })
        })
        .collect()
}

/// The `case` regex that selects exactly `case` (the harness matches unanchored).
pub(super) fn exact_case(case: &str) -> String {
    format!("^{}$", regex::escape(case))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_are_lines_and_odd_output_is_refused() {
        assert_eq!(
            cases_in("saxpy/n=16777216\nmatmul_naive/n=1024\n").unwrap(),
            ["saxpy/n=16777216", "matmul_naive/n=1024"]
        );
        assert!(cases_in("\n").unwrap_err().contains("no cases"));
        assert!(cases_in("Running 3 kernels\n").unwrap_err().contains("not a case name"));
    }

    #[test]
    fn entry_names_are_short_unless_two_cases_share_them() {
        let cases: Vec<String> =
            ["saxpy/n=1024", "saxpy/n=4096", "matmul_naive/n=1024"].map(String::from).into();
        assert_eq!(entry_names(&cases), ["saxpy_n_1024", "saxpy_n_4096", "matmul_naive"]);
        assert_eq!(exact_case("saxpy/n=1.5"), r"^saxpy/n=1\.5$");
    }
}
