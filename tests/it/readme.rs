//! The README's first 80 lines are the quick start: install, the harness in a crate (the
//! exact `Cargo.toml` lines and a short bench, which `harness/examples/quickstart.rs` keeps
//! compiling), the run here and through an archive, a real result, and an import that
//! needs no GPU. Its sample output is recorded, never written by hand: every line of it is
//! in the recordings it names.

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
    // The sample output: every line is in the recordings the text names.
    let named = regex::Regex::new(r"`(fixtures/h200/[^`]+)`").unwrap();
    let mut recorded = String::new();
    for m in named.captures_iter(&head) {
        texts(&crate::support::fixtures().join(m[1].strip_prefix("fixtures/").unwrap()), &mut recorded);
    }
    let samples = blocks(&head, "text");
    assert_eq!(samples.len(), 2, "{samples:?}");
    for line in samples.iter().flat_map(|b| b.lines()) {
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
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-kprof"))
        .arg("kprof")
        .args(&words)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{command}: {}", text(&out.stderr));
    let report = std::fs::read_to_string(tmp.path().join("hgemm-import/final_report.md")).unwrap();
    assert!(report.contains("| % samples | file:line | source | top stalls |"), "{report}");
}
