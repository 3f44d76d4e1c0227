//! The only module that talks to cargo: `cargo metadata`, `cargo build` with line info, and
//! the build of the census tracer (`tracer.rs`).
//!
//! Profiling builds go to their own target directory (`<target-dir>/kprof`), as
//! cargo-llvm-cov does, for two reasons: our flags never invalidate the user's normal
//! build cache, and build scripts that cache PTX and do not watch `NVCC_APPEND_FLAGS`
//! still rebuild with `-lineinfo` there. Executable paths come from cargo's JSON
//! messages, never from walking the target directory.

pub mod tracer;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Result;
use cargo_metadata::{Message, Metadata, MetadataCommand};
use serde::{Deserialize, Serialize};

use crate::config::CargoTargetKind;
use crate::error::{ExitCode, Failure};
use crate::process::{self, Ending, ProcessBuilder, RunOptions};
use crate::shell::Shell;

/// One target to build: `-p <package> --<kind> <name>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BuildTarget {
    /// The package name.
    pub package: String,
    /// The target kind.
    pub kind: CargoTargetKind,
    /// The target name.
    pub name: String,
}

/// Feature selection, passed to cargo as given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Features {
    /// `--features`.
    pub features: Vec<String>,
    /// `--all-features`.
    pub all_features: bool,
    /// `--no-default-features`.
    pub no_default_features: bool,
}

/// A `cargo build` of the selected targets with line info.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildRequest {
    /// The cargo binary (`$CARGO` when run as a cargo subcommand).
    pub cargo: OsString,
    /// `--manifest-path`.
    pub manifest_path: PathBuf,
    /// The target directory kprof builds into (already `<target-dir>/kprof`).
    pub target_dir: PathBuf,
    /// `--profile`.
    pub profile: String,
    /// Features.
    pub features: Features,
    /// What to build.
    pub targets: Vec<BuildTarget>,
    /// The user's `NVCC_APPEND_FLAGS`, if any; `-lineinfo` is appended to it.
    pub user_nvcc_append_flags: Option<String>,
}

/// An executable cargo built for one of the requested targets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuiltExecutable {
    /// What was asked for.
    pub target: BuildTarget,
    /// The executable cargo reported.
    pub executable: PathBuf,
}

/// What a build produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildOutput {
    /// One executable per requested target.
    pub executables: Vec<BuiltExecutable>,
    /// `OUT_DIR` of every build script that ran or was fresh, by package name.
    pub build_script_out_dirs: Vec<(String, PathBuf)>,
}

impl BuildOutput {
    /// The executable for a target, if it was built.
    pub fn executable(&self, target: &BuildTarget) -> Option<&Path> {
        self.executables.iter().find(|e| &e.target == target).map(|e| e.executable.as_path())
    }
}

/// `NVCC_APPEND_FLAGS` for profiling builds: the user's flags, then `-lineinfo`.
pub fn nvcc_append_flags(user: Option<&str>) -> String {
    match user.map(str::trim).filter(|s| !s.is_empty()) {
        Some(u) if u.split_whitespace().any(|w| w == "-lineinfo" || w == "--generate-line-info") => {
            u.to_string()
        }
        Some(u) => format!("{u} -lineinfo"),
        None => "-lineinfo".to_string(),
    }
}

/// True when nvcc flags ask for device debug code (`-G`), which disables optimisation.
pub fn has_device_debug_flag(flags: &str) -> bool {
    flags.split_whitespace().any(|w| w == "-G" || w == "--device-debug")
}

impl BuildRequest {
    /// What is built, in a few words for the progress line (the whole command is in
    /// `commands.sh` and, under `-v`, printed as it runs): `bench hgemm of kprof-demo
    /// (release, into /ws/target/kprof)`.
    pub fn describe(&self) -> String {
        let mut targets: Vec<String> =
            self.targets.iter().map(|t| format!("{} {} of {}", t.kind.name(), t.name, t.package)).collect();
        if targets.len() > 3 {
            let more = targets.len() - 2;
            targets.truncate(2);
            targets.push(format!("{more} more"));
        }
        format!("{} ({}, into {})", targets.join(", "), self.profile, self.target_dir.display())
    }

    /// The exact `cargo build` command, as run and as written to `commands.sh`.
    pub fn command(&self) -> ProcessBuilder {
        let mut p = ProcessBuilder::new(&self.cargo);
        p.arg("build").arg("--message-format=json-render-diagnostics");
        p.arg("--manifest-path").arg(&self.manifest_path);
        p.args(["--profile", &self.profile]);
        p.arg("--target-dir").arg(&self.target_dir);
        if !self.features.features.is_empty() {
            p.args(["--features".to_string(), self.features.features.join(",")]);
        }
        if self.features.all_features {
            p.arg("--all-features");
        }
        if self.features.no_default_features {
            p.arg("--no-default-features");
        }
        let mut packages: Vec<&str> = self.targets.iter().map(|t| t.package.as_str()).collect();
        packages.sort_unstable();
        packages.dedup();
        for pkg in packages {
            p.args(["-p", pkg]);
        }
        for t in &self.targets {
            p.args([t.kind.cargo_flag(), t.name.as_str()]);
        }
        p.env("NVCC_APPEND_FLAGS", nvcc_append_flags(self.user_nvcc_append_flags.as_deref()));
        p.env(kprof_contract::env::LINEINFO, "1");
        p
    }

    /// Runs the build, streaming cargo's rendered diagnostics to our stderr; under `-q`
    /// cargo's own status lines (`Compiling`, `Finished`) are silenced too (`--quiet`,
    /// which changes what cargo prints, not what it builds).
    pub fn run(&self, shell: &Shell) -> Result<BuildOutput> {
        let mut builder = self.command();
        if shell.is_quiet() {
            builder.arg("--quiet");
        }
        let mut out = BuildOutput::default();
        let mut bad_message: Option<String> = None;
        let mut on_line = |line: &str| {
            let message = match serde_json::from_str::<Message>(line) {
                Ok(m) => m,
                Err(_) if !line.trim_start().starts_with('{') => Message::TextLine(line.to_string()),
                Err(e) => {
                    bad_message.get_or_insert_with(|| format!("could not read cargo's JSON messages: {e}"));
                    return;
                }
            };
            match message {
                Message::CompilerArtifact(art) => {
                    let Some(exe) = art.executable else { return };
                    let pkg = package_name_from_id(&art.package_id.repr, &art.manifest_path);
                    for want in &self.targets {
                        if want.name == art.target.name
                            && want.package == pkg
                            && art.target.kind.contains(&want.kind.cargo_kind())
                        {
                            out.executables.push(BuiltExecutable {
                                target: want.clone(),
                                executable: exe.clone().into(),
                            });
                        }
                    }
                }
                Message::BuildScriptExecuted(bs) => {
                    let pkg = package_name_from_id(&bs.package_id.repr, "".as_ref());
                    out.build_script_out_dirs.push((pkg, bs.out_dir.into()));
                }
                Message::TextLine(line) => shell.relay(&line),
                _ => {}
            }
        };
        let opts =
            RunOptions { stdout_lines: Some(&mut on_line), inherit_stderr: true, ..Default::default() };
        let done = process::run(&builder, opts, shell);
        if let Ending::Interrupted(signal) = &done.ending {
            return Err(process::interrupted(*signal, "during the build").into());
        }
        if let Some(e) = bad_message {
            return Err(Failure::new(ExitCode::Build, e).help(format!("the command was: {builder}")).into());
        }
        match &done.ending {
            Ending::Exited(status) if status.success() => {}
            Ending::NotStarted(msg) => {
                return Err(Failure::new(ExitCode::MissingTool, format!("could not start cargo: {msg}"))
                    .help(format!("the command was: {builder}"))
                    .into());
            }
            ending => {
                return Err(Failure::new(ExitCode::Build, format!("cargo build failed ({ending})"))
                    .help(format!("the command was: {builder}"))
                    .into());
            }
        }
        for want in &self.targets {
            if out.executable(want).is_none() {
                return Err(Failure::new(
                    ExitCode::Build,
                    format!(
                        "cargo build finished but reported no executable for {} `{}` of package `{}`",
                        want.kind.name(),
                        want.name,
                        want.package
                    ),
                )
                .into());
            }
        }
        Ok(out)
    }
}

/// A package name from a cargo package id (`path+file:///x/y#name@1.0.0`, `registry+...#name@1.0.0`,
/// or the old `name 1.0.0 (...)` form); falls back to the manifest's directory name.
pub fn package_name_from_id(repr: &str, manifest_path: &cargo_metadata::camino::Utf8Path) -> String {
    if let Some((_, frag)) = repr.rsplit_once('#') {
        let name = frag.split('@').next().unwrap_or(frag);
        // `path+file:///x/name#0.1.0` (name omitted when it equals the dir name).
        if name.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            let path = repr.split('#').next().unwrap_or("");
            return path.rsplit('/').next().unwrap_or(path).to_string();
        }
        return name.to_string();
    }
    if let Some(name) = repr.split_whitespace().next().filter(|_| repr.contains(' ')) {
        return name.to_string();
    }
    manifest_path.parent().and_then(|p| p.file_name()).unwrap_or(repr).to_string()
}

/// Runs `cargo metadata` for the manifest (the workspace's, or cargo's default lookup).
pub fn metadata(cargo: &OsString, manifest_path: Option<&Path>, shell: &Shell) -> Result<Metadata> {
    // No dependency resolution: only the workspace members and their manifests are read,
    // so this works offline and without a lock file.
    cargo_metadata_with(cargo, manifest_path, &["--no-deps"], shell)
}

/// `cargo metadata` with the resolved dependency graph, offline: what the packages already
/// downloaded (or path dependencies) say, for the platform the build is for
/// ([`build_platform`]). A lock file also names other platforms' dependencies (`half`'s
/// `crunchy` for SPIR-V, terminal crates' Windows halves), which cargo never downloads for
/// this build; without the filter, reading the graph offline fails on the first of them.
/// An error when cargo still cannot resolve without the network; callers that can do
/// without the graph say so and go on.
pub fn metadata_with_graph(
    cargo: &OsString,
    manifest_path: Option<&Path>,
    shell: &Shell,
) -> Result<Metadata> {
    match build_platform(shell) {
        Some(triple) => {
            cargo_metadata_with(cargo, manifest_path, &["--offline", "--filter-platform", &triple], shell)
        }
        None => cargo_metadata_with(cargo, manifest_path, &["--offline"], shell),
    }
}

/// The platform kprof's builds are for: `$CARGO_BUILD_TARGET` when set, else the host
/// triple `rustc -vV` prints (`$RUSTC`, else `rustc` from PATH); `None` when neither tells.
fn build_platform(shell: &Shell) -> Option<String> {
    if let Some(t) = std::env::var("CARGO_BUILD_TARGET").ok().filter(|t| !t.trim().is_empty()) {
        return Some(t.trim().to_string());
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut cmd = ProcessBuilder::new(rustc);
    cmd.arg("-vV");
    let done = process::run(&cmd, RunOptions::default(), shell);
    if !matches!(&done.ending, Ending::Exited(status) if status.success()) {
        return None;
    }
    host_triple(&done.stdout_text())
}

/// The `host:` line of `rustc -vV`.
fn host_triple(version: &str) -> Option<String> {
    version
        .lines()
        .find_map(|l| l.strip_prefix("host:"))
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
}

fn cargo_metadata_with(
    cargo: &OsString,
    manifest_path: Option<&Path>,
    extra: &[&str],
    shell: &Shell,
) -> Result<Metadata> {
    let mut cmd = ProcessBuilder::new(cargo);
    cmd.args(["metadata", "--format-version", "1"]).args(extra);
    if let Some(m) = manifest_path {
        if !m.exists() {
            return Err(Failure::new(
                ExitCode::Config,
                format!("manifest path `{}` does not exist", m.display()),
            )
            .help("pass --manifest-path pointing at a Cargo.toml, or run from inside a cargo project")
            .into());
        }
        cmd.arg("--manifest-path").arg(m);
    }
    let done = process::run(&cmd, RunOptions::default(), shell);
    match &done.ending {
        Ending::Exited(status) if status.success() => {}
        Ending::Exited(_) => {
            // cargo's own words from its first `error: ` on, without those prefixes (ours
            // says `error:` once), then what it printed before (warnings).
            let said = done.stderr_text();
            let lines: Vec<&str> = said.trim().lines().collect();
            let first = lines.iter().position(|l| l.starts_with("error: ")).unwrap_or(0);
            let mut said: Vec<&str> =
                lines[first..].iter().map(|l| l.strip_prefix("error: ").unwrap_or(l)).collect();
            if first > 0 {
                said.push("");
                said.extend(&lines[..first]);
            }
            let said = said.join("\n");
            return Err(Failure::new(ExitCode::Config, format!("`cargo metadata` says: {said}")).into());
        }
        Ending::Interrupted(signal) => {
            return Err(process::interrupted(*signal, "while reading cargo metadata").into())
        }
        Ending::NotStarted(why) => {
            return Err(Failure::new(ExitCode::MissingTool, format!("`cargo metadata` failed: {why}"))
                .help("kprof runs `$CARGO`, else `cargo` from PATH")
                .into())
        }
        other => {
            return Err(Failure::new(ExitCode::Config, format!("`cargo metadata` failed: {other}")).into())
        }
    }
    MetadataCommand::parse(done.stdout_text()).map_err(|e| {
        Failure::new(
            ExitCode::Config,
            format!("`cargo metadata` printed what cargo_metadata cannot read: {e}"),
        )
        .into()
    })
}

/// The cargo binary to run: `$CARGO` (set when cargo runs a subcommand), else `cargo`.
pub fn cargo_binary() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_triple_is_read_from_rustc_s_verbose_version() {
        let printed = "rustc 1.95.0 (59807616e 2026-04-14)\nbinary: rustc\ncommit-hash: 59807616e\n\
                       host: x86_64-unknown-linux-gnu\nrelease: 1.95.0\nLLVM version: 20.1.8\n";
        assert_eq!(host_triple(printed).as_deref(), Some("x86_64-unknown-linux-gnu"));
        assert_eq!(host_triple("rustc 1.95.0\nhost: \n"), None);
        assert_eq!(host_triple(""), None);
    }

    #[test]
    fn lineinfo_is_appended_once() {
        assert_eq!(nvcc_append_flags(None), "-lineinfo");
        assert_eq!(nvcc_append_flags(Some("  ")), "-lineinfo");
        assert_eq!(nvcc_append_flags(Some("-O3 -arch=sm_90")), "-O3 -arch=sm_90 -lineinfo");
        assert_eq!(nvcc_append_flags(Some("-lineinfo -O3")), "-lineinfo -O3");
        assert!(has_device_debug_flag("-O0 -G"));
        assert!(!has_device_debug_flag("-Gx -lineinfo"));
    }

    #[test]
    fn package_names_from_ids() {
        let m = cargo_metadata::camino::Utf8Path::new("/w/demo/Cargo.toml");
        assert_eq!(package_name_from_id("path+file:///w/demo#kprof-demo@0.1.0", m), "kprof-demo");
        assert_eq!(package_name_from_id("path+file:///w/demo-nvcc#0.1.0", m), "demo-nvcc");
        assert_eq!(
            package_name_from_id("registry+https://github.com/rust-lang/crates.io-index#cudarc@0.19.10", m),
            "cudarc"
        );
        assert_eq!(package_name_from_id("kprof-demo 0.1.0 (path+file:///w/demo)", m), "kprof-demo");
    }

    #[test]
    fn build_command_sets_lineinfo_env_and_selects_targets() {
        let req = BuildRequest {
            cargo: "cargo".into(),
            manifest_path: "/w/Cargo.toml".into(),
            target_dir: "/w/target/kprof".into(),
            profile: "release".into(),
            features: Features {
                features: vec!["a".into(), "b".into()],
                all_features: false,
                no_default_features: true,
            },
            targets: vec![
                BuildTarget { package: "p".into(), kind: CargoTargetKind::Bench, name: "copy".into() },
                BuildTarget { package: "p".into(), kind: CargoTargetKind::Example, name: "x".into() },
            ],
            user_nvcc_append_flags: Some("-O3".into()),
        };
        assert_eq!(
            req.command().to_string(),
            "env KPROF_LINEINFO=1 'NVCC_APPEND_FLAGS=-O3 -lineinfo' cargo build \
             --message-format=json-render-diagnostics --manifest-path /w/Cargo.toml --profile release \
             --target-dir /w/target/kprof --features a,b --no-default-features -p p --bench copy --example x"
        );
    }
}
