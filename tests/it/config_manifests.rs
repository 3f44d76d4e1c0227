//! Real manifests through `cargo metadata --no-deps` and `config::load`: each bad one
//! must fail with exit code 3 and a message naming the manifest, the entry and the key.

use std::fs;
use std::path::{Path, PathBuf};

use cargo_kprof::config::{self, CargoTargetKind, ClockControl, Config, KernelTarget, Runtime};
use cargo_kprof::error::{exit_code_of, ExitCode, Failure};
use cargo_kprof::model::stage::{Stage, StageSelection};
use tempfile::TempDir;

/// A scratch workspace on disk.
struct Scratch {
    _dir: TempDir,
    root: PathBuf,
}

impl Scratch {
    /// Writes `files` (path, contents); every `Cargo.toml` of a package also gets an
    /// empty `src/lib.rs`.
    fn new(files: &[(&str, &str)]) -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        // cargo reports canonical paths; compare against the same.
        let root = dir.path().canonicalize().unwrap();
        for (path, contents) in files {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, contents).unwrap();
            if path.file_name().unwrap() == "Cargo.toml"
                && contents.contains(
                    r#"
[package]"#,
                )
            {
                let lib = path.parent().unwrap().join("src/lib.rs");
                fs::create_dir_all(lib.parent().unwrap()).unwrap();
                fs::write(lib, "").unwrap();
            }
        }
        Scratch { _dir: dir, root }
    }

    /// One package named `gemm` with benches `hgemm` and `sgemm`; `kprof` is appended
    /// to its manifest.
    fn package(kprof: &str) -> Scratch {
        let manifest = format!("{PACKAGE}\n{kprof}");
        Scratch::new(&[("Cargo.toml", &manifest), ("benches/hgemm.rs", BENCH), ("benches/sgemm.rs", BENCH)])
    }

    fn manifest(&self, member: &str) -> String {
        self.root.join(member).join("Cargo.toml").display().to_string()
    }

    fn load(&self) -> Result<Config, Failure> {
        let metadata = cargo_metadata::MetadataCommand::new()
            .manifest_path(self.root.join("Cargo.toml"))
            .no_deps()
            .exec()
            .unwrap();
        config::load(&metadata)
    }

    /// The error of a manifest that must fail, checked for the exit code (also
    /// through an `anyhow` chain).
    fn error(&self) -> String {
        let failure = self.load().unwrap_err();
        assert_eq!(failure.code, ExitCode::Config, "{failure}");
        let text = failure.to_string();
        assert_eq!(exit_code_of(&anyhow::Error::new(failure).context("loading")), ExitCode::Config);
        assert!(text.contains("\n  help: "), "every config error carries help: {text}");
        text
    }
}

const PACKAGE: &str = r#"
[package]
name = "gemm"
version = "0.1.0"
edition = "2021"
"#;
const BENCH: &str = "fn main() {}\n";

fn assert_contains(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "expected {part:?} in:\n{text}");
    }
}

#[test]
fn wrong_type() {
    let ws = Scratch::package(
        r#"
[[package.metadata.kprof.kernels]]
name = "hgemm"
bench = "hgemm"
launch-count = "ten"
"#,
    );
    let msg = ws.error();
    assert_eq!(
        msg,
        format!(
            "`launch-count` in [[package.metadata.kprof.kernels]] #1 (name = \"hgemm\") of {}: \
             expected an integer >= 1, found the string \"ten\"\n  help: for example: `launch-count = 3`",
            ws.manifest("")
        )
    );
}

#[test]
fn missing_name() {
    let ws = Scratch::package(
        r#"
[[package.metadata.kprof.kernels]]
name = "hgemm"
bench = "hgemm"

[[package.metadata.kprof.kernels]]
bench = "sgemm"
"#,
    );
    let msg = ws.error();
    assert_contains(
        &msg,
        &[
            &format!(
                "[[package.metadata.kprof.kernels]] #2 of {}: missing required key `name`",
                ws.manifest("")
            ),
            "help: name the kernel",
        ],
    );
}

#[test]
fn missing_target() {
    let ws = Scratch::package(
        r#"
[[package.metadata.kprof.kernels]]
name = "hgemm"
args = ["--n", "64"]
"#,
    );
    let msg = ws.error();
    assert_contains(
        &msg,
        &[
            &format!(
                "`bench` in [[package.metadata.kprof.kernels]] #1 (name = \"hgemm\") of {}",
                ws.manifest("")
            ),
            "the entry names no target",
            "help: add exactly one of `bench = \"hgemm\"`",
        ],
    );
}

#[test]
fn two_targets() {
    let ws = Scratch::package(
        r#"
[[package.metadata.kprof.kernels]]
name = "hgemm"
bench = "hgemm"
example = "hgemm"
"#,
    );
    let msg = ws.error();
    assert_contains(
        &msg,
        &[
            &format!(
                "`example` in [[package.metadata.kprof.kernels]] #1 (name = \"hgemm\") of {}",
                ws.manifest("")
            ),
            "the entry names 2 targets (`bench` and `example`)",
            "help: keep exactly one of",
        ],
    );
}

#[test]
fn nonexistent_bench_lists_the_available_ones() {
    let ws = Scratch::package(
        r#"
[[package.metadata.kprof.kernels]]
name = "hgemm"
bench = "hgem"
"#,
    );
    let msg = ws.error();
    assert_contains(
        &msg,
        &[
            &format!(
                "`bench` in [[package.metadata.kprof.kernels]] #1 (name = \"hgemm\") of {}",
                ws.manifest("")
            ),
            "package `gemm` has no bench target named `hgem`",
            "help: did you mean `bench = \"hgemm\"`?",
            "help: the bench targets of package `gemm` are: `hgemm`, `sgemm`",
            "help: create `benches/hgem.rs`",
        ],
    );
}

#[test]
fn duplicate_names_across_members() {
    let member = |name: &str| {
        format!(
            r#"
[package]
name = "{name}"
version = "0.1.0"
edition = "2021"

[[package.metadata.kprof.kernels]]
name = "hgemm"
bench = "b"
"#
        )
    };
    let (alpha, beta) = (member("alpha"), member("beta"));
    let ws = Scratch::new(&[
        (
            "Cargo.toml",
            r#"
[workspace]
members = ["alpha", "beta"]
resolver = "2"
"#,
        ),
        ("beta/Cargo.toml", &beta),
        ("beta/benches/b.rs", BENCH),
        ("alpha/Cargo.toml", &alpha),
        ("alpha/benches/b.rs", BENCH),
    ]);
    let msg = ws.error();
    assert_eq!(
        msg.lines().next().unwrap(),
        format!(
            "`name` in [[package.metadata.kprof.kernels]] #1 (name = \"hgemm\") of {}: kernel name \"hgemm\" is already \
             used by [[package.metadata.kprof.kernels]] #1 (name = \"hgemm\") of {}",
            ws.manifest("beta"),
            ws.manifest("alpha")
        )
    );
    assert_contains(&msg, &["help: kernel names must be unique in the workspace; rename one of them"]);
}

#[test]
fn invalid_regex() {
    let ws = Scratch::package(
        r#"
[[package.metadata.kprof.kernels]]
name = "hgemm"
bench = "hgemm"
regex = "hgemm("
"#,
    );
    let msg = ws.error();
    assert_contains(
        &msg,
        &[
            &format!(
                "`regex` in [[package.metadata.kprof.kernels]] #1 (name = \"hgemm\") of {}",
                ws.manifest("")
            ),
            "invalid regex \"hgemm(\"",
            "unclosed group",
        ],
    );
}

#[test]
fn unknown_stage() {
    let ws = Scratch::package(
        r#"
[[package.metadata.kprof.kernels]]
name = "hgemm"
bench = "hgemm"
stages = ["basic", "memroy"]
"#,
    );
    let msg = ws.error();
    assert_contains(
        &msg,
        &[
            &format!(
                "`stages` in [[package.metadata.kprof.kernels]] #1 (name = \"hgemm\") of {}",
                ws.manifest("")
            ),
            "unknown stage `memroy`",
            "help: did you mean `memory`?",
        ],
    );
}

#[test]
fn launch_count_zero() {
    let ws = Scratch::package(
        r#"
[package.metadata.kprof]
launch-count = 0
"#,
    );
    let msg = ws.error();
    assert_contains(
        &msg,
        &[&format!(
            "`launch-count` in [package.metadata.kprof] of {}: must be at least 1, found 0",
            ws.manifest("")
        )],
    );
}

#[test]
fn negative_launch_skip_in_the_workspace_table() {
    let ws = Scratch::package(
        r#"
[workspace]

[workspace.metadata.kprof]
launch-skip = -5
"#,
    );
    let msg = ws.error();
    assert_contains(
        &msg,
        &[&format!(
            "`launch-skip` in [workspace.metadata.kprof] of {}: must not be negative, found -5",
            ws.manifest("")
        )],
    );
}

#[test]
fn env_value_not_a_string() {
    let ws = Scratch::package(
        r#"
[[package.metadata.kprof.kernels]]
name = "hgemm"
bench = "hgemm"
env = { NO_GRAPH = 1 }
"#,
    );
    let msg = ws.error();
    assert_contains(
        &msg,
        &[
            &format!(
                "`env.NO_GRAPH` in [[package.metadata.kprof.kernels]] #1 (name = \"hgemm\") of {}",
                ws.manifest("")
            ),
            "expected a string, found the integer 1",
            "help: environment values are strings; quote it: `NO_GRAPH = \"1\"`",
        ],
    );
}

#[test]
fn command_and_bench_together() {
    let ws = Scratch::package(
        r#"
[[package.metadata.kprof.kernels]]
name = "hgemm"
bench = "hgemm"
command = ["python3", "bench.py"]
"#,
    );
    let msg = ws.error();
    assert_contains(
        &msg,
        &[
            &format!(
                "`command` in [[package.metadata.kprof.kernels]] #1 (name = \"hgemm\") of {}",
                ws.manifest("")
            ),
            "the entry names 2 targets (`bench` and `command`)",
        ],
    );
}

#[test]
fn runtime_command_without_a_command() {
    let ws = Scratch::package(
        r#"
[[package.metadata.kprof.kernels]]
name = "hgemm"
bench = "hgemm"
runtime = "command"
"#,
    );
    let msg = ws.error();
    assert_contains(
        &msg,
        &[
            &format!(
                "`runtime` in [[package.metadata.kprof.kernels]] #1 (name = \"hgemm\") of {}",
                ws.manifest("")
            ),
            "`runtime = \"command\"` needs a `command`",
        ],
    );
}

#[test]
fn kernels_not_an_array_of_tables() {
    let ws = Scratch::package(
        r#"
[package.metadata.kprof]
kernels = ["hgemm"]
"#,
    );
    let msg = ws.error();
    assert_contains(
        &msg,
        &[
            &format!("`kernels` in [package.metadata.kprof] of {}", ws.manifest("")),
            "entry #1 is the string \"hgemm\", not a table",
            "[[package.metadata.kprof.kernels]]",
        ],
    );
}

#[test]
fn kprof_not_a_table() {
    let ws = Scratch::package(
        r#"
[package.metadata]
kprof = "hgemm"
"#,
    );
    let msg = ws.error();
    assert_contains(
        &msg,
        &[&format!(
            "[package.metadata.kprof] of {}: expected a table, found the string \"hgemm\"",
            ws.manifest("")
        )],
    );
}

#[test]
fn unknown_keys_warn_with_a_suggestion() {
    let ws = Scratch::package(
        r#"
[package.metadata.kprof]
launch_count = 3

[[package.metadata.kprof.kernels]]
name = "hgemm"
bench = "hgemm"
lauch-skip = 2
"#,
    );
    let config = ws.load().unwrap();
    let messages: Vec<String> = config.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            format!(
                "unknown key `launch_count` in [package.metadata.kprof] of {} is ignored; did you mean `launch-count`?",
                ws.manifest("")
            ),
            format!(
                "unknown key `lauch-skip` in [[package.metadata.kprof.kernels]] #1 (name = \"hgemm\") of {} is ignored; \
                 did you mean `launch-skip`?",
                ws.manifest("")
            ),
        ]
    );
    assert_eq!(config.warnings[0].suggestion.as_deref(), Some("launch-count"));
    // The misspelt keys set nothing.
    assert_eq!(config.kernels[0].settings.launch_count, None);
    assert_eq!(config.kernels[0].settings.launch_skip, None);
}

#[test]
fn two_packages_with_workspace_defaults() {
    let ws = Scratch::new(&[
        (
            "Cargo.toml",
            r#"
[workspace]
members = ["gemm", "softmax", "kprof-harness"]
resolver = "2"

[workspace.metadata.kprof]
launch-skip = 5
launch-count = 3
stages = "basic,memory"
env = { NO_GRAPH = "1", CUDA_LAUNCH_BLOCKING = "0" }
tolerance-pct = 2
clock-control = "base"
"#,
        ),
        (
            "kprof-harness/Cargo.toml",
            r#"
[package]
name = "kprof-harness"
version = "0.1.0"
edition = "2021"
"#,
        ),
        (
            "gemm/Cargo.toml",
            r#"
[package]
name = "gemm"
version = "0.1.0"
edition = "2021"

[dev-dependencies]
kprof-harness = { path = "../kprof-harness" }

[package.metadata.kprof]
launch-count = 1
env = { CUDA_LAUNCH_BLOCKING = "1" }

[[package.metadata.kprof.kernels]]
name = "hgemm"
bench = "gemm"
case = "hgemm_naive"
args = ["--size", "4096"]

[[package.metadata.kprof.kernels]]
name = "hgemm_tiled"
bench = "gemm"
launch-count = 2
stages = "all"
regex = ".*hgemm_tiled_v[0-9]+.*"
"#,
        ),
        ("gemm/benches/gemm.rs", BENCH),
        (
            "softmax/Cargo.toml",
            r#"
[package]
name = "softmax"
version = "0.1.0"
edition = "2021"

[[bin]]
name = "softmax-cli"
path = "src/main.rs"

[[package.metadata.kprof.kernels]]
name = "softmax"
bin = "softmax-cli"
clock-control = "none"

[[package.metadata.kprof.kernels]]
name = "triton_softmax"
command = ["python3", "softmax.py"]
runtime = "python-triton"
launch-skip = 20
"#,
        ),
        ("softmax/src/main.rs", BENCH),
    ]);
    let config = ws.load().unwrap();
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    assert_eq!(config.workspace_root, ws.root);
    assert_eq!(config.workspace_manifest_path, Path::new(&ws.manifest("")));

    let names: Vec<&str> = config.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["hgemm", "hgemm_tiled", "softmax", "triton_softmax"]);
    let [hgemm, tiled, softmax, triton] = &config.kernels[..] else { unreachable!() };

    assert_eq!(hgemm.package, "gemm");
    assert_eq!(hgemm.manifest_path, Path::new(&ws.manifest("gemm")));
    assert_eq!(hgemm.target, KernelTarget::Cargo { kind: CargoTargetKind::Bench, name: "gemm".into() });
    assert_eq!(hgemm.runtime, Runtime::Harness);
    assert_eq!(hgemm.case, "hgemm_naive");
    assert_eq!(hgemm.args, ["--size", "4096"]);
    assert_eq!(hgemm.kernel_regex, ".*hgemm.*");
    assert_eq!(hgemm.settings.launch_skip, Some(5));
    assert_eq!(hgemm.settings.launch_count, Some(1));
    assert_eq!(hgemm.settings.stages, Some(StageSelection::List(vec![Stage::Basic, Stage::Memory])));
    assert_eq!(hgemm.settings.tolerance_pct, Some(2.0));
    assert_eq!(hgemm.settings.clock_control, Some(ClockControl::Base));
    let env: Vec<(&str, &str)> = hgemm.settings.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(env, [("CUDA_LAUNCH_BLOCKING", "1"), ("NO_GRAPH", "1")]);

    assert_eq!(tiled.settings.launch_count, Some(2));
    assert_eq!(tiled.settings.stages, Some(StageSelection::All));
    assert_eq!(tiled.kernel_regex, ".*hgemm_tiled_v[0-9]+.*");
    assert_eq!(tiled.case, "hgemm_tiled");

    assert_eq!(
        softmax.target,
        KernelTarget::Cargo { kind: CargoTargetKind::Bin, name: "softmax-cli".into() }
    );
    assert_eq!(softmax.runtime, Runtime::Cuda);
    assert_eq!(softmax.settings.launch_count, Some(3));
    assert_eq!(softmax.settings.clock_control, Some(ClockControl::None));
    assert_eq!(softmax.settings.env.get("CUDA_LAUNCH_BLOCKING").map(String::as_str), Some("0"));

    assert_eq!(triton.runtime, Runtime::PythonTriton);
    assert_eq!(triton.target.to_string(), "command python3 softmax.py");
    assert_eq!(triton.settings.launch_skip, Some(20));

    assert_eq!(
        config.select_by_hint(&cargo_kprof::model::filter::KernelHint::parse("tiled"), &[]).unwrap().name,
        "hgemm_tiled"
    );
    assert_eq!(
        config.select_by_hint(&cargo_kprof::model::filter::KernelHint::parse("softmax"), &[]).unwrap().name,
        "softmax"
    );
    assert_eq!(config.select_by_index(4, &["softmax".to_string()]).unwrap().name, "triton_softmax");
    let listed: Vec<usize> =
        config.listing(&["softmax".to_string()]).unwrap().iter().map(|l| l.index).collect();
    assert_eq!(listed, [3, 4]);
    let ambiguous =
        config.select_by_hint(&cargo_kprof::model::filter::KernelHint::parse("gemm"), &[]).unwrap_err();
    assert_eq!(ambiguous.code, ExitCode::Config);
}
