//! Paths of the recordings and small file-system helpers.

use std::path::{Path, PathBuf};

pub use kprof_testkit::{fixtures, recording, recordings};

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `details/` of a recorded demo profile (`fixtures/h200/demo-stages/<profile>/details`).
pub fn fixture_details(profile: &str) -> PathBuf {
    recordings().join("demo-stages").join(profile).join("details")
}

/// Copies the directory tree `from` to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// Lossy UTF-8 of a child's output.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Writes the recording `rel` (see [`recording`]) into `dir` and returns its path:
/// what a user would pass to `cargo kprof import`.
pub fn recording_file(rel: &str, dir: &Path) -> PathBuf {
    let name = Path::new(rel).file_name().unwrap();
    let path = dir.join(name);
    std::fs::write(&path, recording(rel)).unwrap();
    path
}

/// `cargo kprof import` of the recorded `--set full` pair `<prefix>_full_raw.csv` and
/// `<prefix>_full_details.csv` (written uncompressed into `inputs`) into `out`.
pub fn import_full(prefix: &str, inputs: &Path, out: &Path) -> std::process::Output {
    std::fs::create_dir_all(inputs).unwrap();
    let raw = recording_file(&format!("{prefix}_full_raw.csv"), inputs);
    let details = recording_file(&format!("{prefix}_full_details.csv"), inputs);
    super::kprof_bin()
        .args(["kprof", "import", "--raw"])
        .arg(&raw)
        .arg("--details")
        .arg(&details)
        .arg("--output-dir")
        .arg(out)
        .output()
        .unwrap()
}

/// Splits a command line as a POSIX shell would, for the lines kprof writes (words,
/// single-quoted words, `&&`).
pub fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                in_word = true;
            }
            ' ' if !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            _ => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The one folder under `root` (a recorded run's profile root holds one profile), failing
/// the test when there are none or several.
pub fn only_dir(root: &Path) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.pop().unwrap()
}

/// Every raw page recorded under `fixtures/h200/`, grouped by the folder it is in (one
/// profile's stages together) and summarised: (the folder, relative, and its summary), in
/// path order. Pages that do not parse are left out.
pub fn recorded_summaries() -> Vec<(PathBuf, cargo_kprof::analyze::summary::MetricsSummary)> {
    use cargo_kprof::ncu::parse::RawPage;
    fn walk(dir: &Path, out: &mut std::collections::BTreeMap<PathBuf, Vec<PathBuf>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                walk(&p, out);
            } else if name.ends_with("_raw.csv") || name.ends_with("-raw.csv") {
                out.entry(dir.to_path_buf()).or_default().push(p);
            }
        }
    }
    let root = recordings();
    let mut groups = std::collections::BTreeMap::new();
    walk(&root, &mut groups);
    groups
        .into_iter()
        .map(|(dir, files)| {
            let pages: Vec<RawPage> = files
                .iter()
                .filter_map(|f| {
                    let rel = f.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
                    RawPage::parse(&recording(&rel), &rel).ok()
                })
                .collect();
            let summary = cargo_kprof::analyze::summary::summarize(pages.iter(), None);
            (dir.strip_prefix(&root).unwrap().to_path_buf(), summary)
        })
        .collect()
}
