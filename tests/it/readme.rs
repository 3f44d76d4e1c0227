//! The README's first 80 lines are the quick start: install, the harness in a crate (the
//! exact `Cargo.toml` lines and a short bench, which `harness/examples/quickstart.rs` keeps
//! compiling), the run here and through an archive, a real result, and an import that
//! needs no GPU. Its sample output is recorded, never written by hand: every line of it is
//! in the recordings it names, and is what `cargo kprof report` prints on them today.

use std::path::Path;
use std::process::Command;

use crate::support::{repo, text};

fn first_80() -> String {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    readme.lines().take(80).collect::<Vec<_>>().join("\n") + "\n"
}

/// The fenced blocks of `lang` in `text`.
fn blocks<'t>(text: &'t str, lang: &str) -> Vec<&'t str> {
    let open = format!("```{lang}\n");
    text.split(&open).skip(1).map(|b| b.split("```").next().unwrap()).collect()
}

/// Every file under `path` (or `path` itself), as text where it is text.
fn texts(path: &Path, out: &mut String) {
    if path.is_dir() {
        for e in std::fs::read_dir(path).unwrap() {
            texts(&e.unwrap().path(), out);
        }
    } else if let Ok(t) = std::fs::read_to_string(path) {
        out.push_str(&t);
    }
}

#[test]
fn the_first_80_lines_install_start_and_show_a_recorded_result() {
    let head = first_80();
    for needle in [
        "cargo install --locked --path cargo-kprof",
        "kprof-harness = { path = \"../cargo-kprof/harness\" }",
        "[[bench]]\nname = \"saxpy\"\nharness = false",
        "cargo kprof --bench saxpy --kernel saxpy",
        "cargo kprof archive --bench saxpy --kernel saxpy -o saxpy.tar",
        "cargo-kprof kprof run --archive saxpy.tar --workspace-remap saxpy-run",
        "cargo kprof import --raw",
        "--set full",
    ] {
        assert!(head.contains(needle), "the first 80 lines lack {needle:?}");
    }
    // The bench and its kernel are the example the harness builds.
    let example = std::fs::read_to_string(repo().join("harness/examples/quickstart.rs")).unwrap();
    let example: String =
        example.lines().filter(|l| !l.starts_with("//!")).map(|l| format!("{l}\n")).collect();
    assert_eq!(blocks(&head, "rust"), [example.replace("examples/saxpy.cu", "kernels/saxpy.cu").as_str()]);
    let kernel = std::fs::read_to_string(repo().join("harness/examples/saxpy.cu")).unwrap();
    assert_eq!(blocks(&head, "cuda"), [kernel.as_str()]);
    assert!(blocks(&head, "rust")[0].lines().count() <= 16, "a short bench");
    // The sample output: its paths and hot lines are in the recordings the text names (the
    // verdict lines are what `report` prints on them today, the next test checks).
    let named = regex::Regex::new(r"`(fixtures/h200/[^`]+)`").unwrap();
    let mut recorded = String::new();
    for m in named.captures_iter(&head) {
        texts(&crate::support::fixtures().join(m[1].strip_prefix("fixtures/").unwrap()), &mut recorded);
    }
    let samples = blocks(&head, "text");
    assert_eq!(samples.len(), 2, "{samples:?}");
    for line in
        samples.iter().flat_map(|b| b.lines()).filter(|l| l.starts_with('|') || l.starts_with("Report: "))
    {
        assert!(recorded.contains(line), "not in the recordings named: {line}");
    }
}

/// The import the README offers a machine without a GPU runs, and its report has hot lines.
#[test]
fn the_readmes_import_needs_no_gpu() {
    let head = first_80();
    let at = head.find("cargo kprof import").unwrap();
    let command = head[at..].split("\n```").next().unwrap().replace("\\\n", " ");
    let tmp = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(repo(), tmp.path().join("cargo-kprof")).unwrap();
    let words: Vec<&str> = command.split_whitespace().skip(2).collect();
    let out = crate::support::kprof_bin().arg("kprof").args(&words).current_dir(tmp.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{command}: {}", text(&out.stderr));
    let report = std::fs::read_to_string(tmp.path().join("hgemm-import/final_report.md")).unwrap();
    assert!(report.contains("| % samples | file:line | source | top stalls |"), "{report}");
}

/// The profile directories under `dir` (those with a `profile-target.yaml`).
fn profiles_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    if dir.join("profile-target.yaml").is_file() {
        out.push(dir.to_path_buf());
    } else if dir.is_dir() {
        for e in std::fs::read_dir(dir).unwrap() {
            profiles_under(&e.unwrap().path(), out);
        }
    }
}

/// The README's sample output holds today: each verdict line is what `report` prints on
/// the recording named before it, each hot-line row is in the report it rewrites, and each
/// `Report:` line names one of the recording's profiles.
#[test]
fn the_readmes_sample_output_is_what_report_prints_on_its_recordings_today() {
    let head = first_80();
    let named = regex::Regex::new(r"`(fixtures/h200/[^`]+)`").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (i, block) in head.split("```text\n").enumerate().skip(1) {
        let before = head.split("```text\n").nth(i - 1).unwrap();
        let recording =
            named.captures_iter(before).last().expect("a recording named before the sample")[1].to_string();
        let mut profiles = Vec::new();
        profiles_under(
            &crate::support::fixtures().join(recording.strip_prefix("fixtures/").unwrap()),
            &mut profiles,
        );
        assert!(!profiles.is_empty(), "{recording} holds no profile");
        let (mut printed, mut reports) = (String::new(), String::new());
        for (n, p) in profiles.iter().enumerate() {
            let copy = tmp.path().join(format!("{i}-{n}")).join(p.file_name().unwrap());
            crate::support::copy_dir(p, &copy);
            let out = crate::support::kprof_bin().args(["kprof", "report"]).arg(&copy).output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{}: {}", p.display(), text(&out.stderr));
            printed.push_str(&text(&out.stdout));
            reports.push_str(&std::fs::read_to_string(copy.join("final_report.md")).unwrap());
        }
        for line in block.split("```").next().unwrap().lines() {
            if let Some(path) = line.strip_prefix("Report: ") {
                let dir = Path::new(path).parent().unwrap().file_name().unwrap();
                assert!(
                    profiles.iter().any(|p| p.file_name() == Some(dir)),
                    "{line}: not a profile of {recording}"
                );
            } else if line.starts_with('|') {
                assert!(reports.contains(line), "the report of {recording} lacks {line}");
            } else {
                assert!(
                    printed.lines().any(|l| l == line),
                    "`report` on {recording} prints\n{printed}\nnot\n{line}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 4, "only {checked} sample lines");
}

/// A scratch crate from the README's snippets: `deps` as its own dependencies, the TOML
/// block's lines with the harness path pointed at this checkout, the kernel and the bench.
fn snippet_crate(dir: &Path, name: &str, deps: &str, toml: &str) {
    let head = first_80();
    let harness = repo().join("harness");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join("benches")).unwrap();
    std::fs::create_dir_all(dir.join("kernels")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    std::fs::write(dir.join("kernels/saxpy.cu"), blocks(&head, "cuda")[0]).unwrap();
    std::fs::write(dir.join("benches/saxpy.rs"), blocks(&head, "rust")[0]).unwrap();
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n{deps}\n{}",
        toml.replace("../cargo-kprof/harness", harness.to_str().unwrap())
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
}

/// The README's TOML block works as copied for both common shapes of a crate: the harness
/// alone (its first line), and a crate with its own cudarc 0.19 and a CUDA version feature
/// (the commented line, which the block offers for it); the first line in the second shape
/// is the clash the block warns of. `cargo check --offline` of the README's bench, with one
/// target directory for all three, as `scripts/cudarc-compat.sh` does.
#[test]
fn the_readmes_toml_block_checks_offline_in_both_crate_shapes() {
    let head = first_80();
    let block = blocks(&head, "toml")[0];
    let first = block.lines().find(|l| l.starts_with("kprof-harness = ")).expect("the harness line");
    let variant = block.lines().find_map(|l| l.strip_prefix("# kprof-harness = ")).expect("the variant line");
    assert!(variant.contains("default-features = false, features = [\"cuda-12080\"]"), "{variant}");
    let with_variant = block.replace(first, &format!("kprof-harness = {variant}"));
    let own = "[dependencies]\ncudarc = { version = \"0.19\", features = [\"cuda-12080\"] }\n";
    let tmp = tempfile::tempdir().unwrap();
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("readme-snippets");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    for (name, deps, toml, builds) in [
        ("harness_alone", "", block, true),
        ("own_cudarc", own, with_variant.as_str(), true),
        ("own_cudarc_first_line", own, block, false),
    ] {
        let dir = tmp.path().join(name);
        snippet_crate(&dir, name, deps, toml);
        let out = Command::new(&cargo)
            .args(["check", "--offline", "--benches", "--quiet", "--message-format", "short"])
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", &target)
            .env_remove("RUSTFLAGS")
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert!(
            !stderr.contains("failed to download") && !stderr.contains("no matching package"),
            "{name}: the crates are not in cargo's cache (run `cargo fetch` in this repository): {stderr}"
        );
        if builds {
            assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
        } else {
            assert!(!out.status.success() && stderr.contains("E0428"), "{name}: {stderr}");
        }
    }
}
