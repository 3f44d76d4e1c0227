//! Golden outputs of `import`, `report` and `compare` on the H200 recordings: stdout,
//! stderr, the exit code and every file each command writes, compared with
//! `tests/golden/*.txt`.
//!
//! These pin what users see while the code underneath moves. Paths are normalised
//! (`<TMP>` for the test's temporary directory, `<REPO>` for the repository); text files
//! up to 64 KiB are kept whole, larger ones and HTML pages by size and an FNV-1a hash, PNGs by their
//! dimensions and a hash of their decoded pixels (so a different zlib setting is not a
//! change, a different pixel is). `KPROF_BLESS=1 cargo test --test it golden` rewrites the
//! goldens; review the diff before committing it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::support::{copy_dir, recordings, repo};

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// One scenario's record: what ran, what it printed and what it wrote.
struct Record {
    tmp: tempfile::TempDir,
    text: String,
    /// Directories copied in from the recordings: (path under the temporary directory,
    /// the recording). A file still equal to its recording is listed by name only.
    copied: Vec<(String, PathBuf)>,
}

impl Record {
    fn new() -> Record {
        Record { tmp: tempfile::tempdir().unwrap(), text: String::new(), copied: Vec::new() }
    }

    /// Copies a recorded directory to `rel` under the temporary directory.
    fn copy_in(&mut self, from: &Path, rel: &str) {
        copy_dir(from, &self.root().join(rel));
        self.copied.push((rel.to_string(), from.to_path_buf()));
    }

    fn unchanged(&self, rel: &str, bytes: &[u8]) -> bool {
        self.copied.iter().any(|(prefix, from)| {
            rel.strip_prefix(prefix.as_str())
                .and_then(|r| r.strip_prefix('/'))
                .and_then(|r| std::fs::read(from.join(r)).ok())
                .is_some_and(|orig| orig == bytes)
        })
    }

    fn root(&self) -> &Path {
        self.tmp.path()
    }

    fn normalise(&self, s: &str) -> String {
        let tmp = self.root().to_string_lossy().into_owned();
        let repo = repo().to_string_lossy().into_owned();
        // The recordings are read from their unpacked copy, shown where they are committed.
        let fixtures = crate::support::fixtures().to_string_lossy().into_owned();
        s.replace(&tmp, "<TMP>").replace(&fixtures, "<REPO>/fixtures").replace(&repo, "<REPO>")
    }

    /// Runs `cargo-kprof kprof ARGS` in the temporary directory, records its outputs and
    /// returns its exit code.
    fn run(&mut self, args: &[&str]) -> Option<i32> {
        let out = crate::support::kprof_bin()
            .arg("kprof")
            .args(args)
            .current_dir(self.root())
            .env_remove("GITHUB_STEP_SUMMARY")
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let shown: Vec<String> = args.iter().map(|a| self.normalise(a)).collect();
        let stdout = self.normalise(&String::from_utf8_lossy(&out.stdout));
        let stderr = self.normalise(&String::from_utf8_lossy(&out.stderr));
        let _ = write!(
            self.text,
            "== run: cargo kprof {}\n== exit: {:?}\n== stdout\n{stdout}== stderr\n{stderr}",
            shown.join(" "),
            out.status.code()
        );
        out.status.code()
    }

    /// Records every file under `dir` (relative to the temporary directory) whose path
    /// does not start with one of `skip`.
    fn files(&mut self, dir: &str, skip: &[&str]) {
        let base = self.root().join(dir);
        if !base.exists() {
            let _ = writeln!(self.text, "== no directory {dir}");
            return;
        }
        for path in files_under(&base) {
            let rel = path.strip_prefix(self.root()).unwrap().to_string_lossy().into_owned();
            if skip.iter().any(|s| rel.starts_with(s)) {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            if self.unchanged(&rel, &bytes) {
                let _ = writeln!(self.text, "== unchanged {rel}");
            } else if rel.ends_with(".png") {
                let decoder = png::Decoder::new(std::io::Cursor::new(&bytes));
                let mut reader = decoder.read_info().unwrap();
                let mut buf = vec![0; reader.output_buffer_size().unwrap()];
                let info = reader.next_frame(&mut buf).unwrap();
                let pixels = &buf[..info.buffer_size()];
                let _ = writeln!(
                    self.text,
                    "== png {rel}: {}x{} {:?}, pixels fnv1a64 {:016x}",
                    info.width,
                    info.height,
                    info.color_type,
                    fnv1a64(pixels)
                );
            } else if rel.ends_with(".html") {
                // A page: pinned by its hash; tests/it/html.rs checks what it shows.
                let text = self.normalise(&String::from_utf8_lossy(&bytes));
                let _ = writeln!(
                    self.text,
                    "== html {rel}: {} bytes, fnv1a64 {:016x}",
                    text.len(),
                    fnv1a64(text.as_bytes())
                );
            } else if bytes.len() > 64 * 1024 || std::str::from_utf8(&bytes).is_err() {
                let _ = writeln!(
                    self.text,
                    "== file {rel}: {} bytes, fnv1a64 {:016x}",
                    bytes.len(),
                    fnv1a64(&self.normalise(&String::from_utf8_lossy(&bytes)).into_bytes())
                );
            } else {
                let text = self.normalise(std::str::from_utf8(&bytes).unwrap());
                let _ = write!(self.text, "== file {rel}\n{text}");
                if !text.ends_with('\n') {
                    self.text.push_str("\n== (no newline at end of file)\n");
                }
            }
        }
    }

    /// Compares with (or, under `KPROF_BLESS=1`, writes) `tests/golden/NAME.txt`.
    fn check(self, name: &str) {
        let path = repo().join("tests/golden").join(format!("{name}.txt"));
        if std::env::var_os("KPROF_BLESS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &self.text).unwrap();
            return;
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (KPROF_BLESS=1 writes it)", path.display()));
        if want != self.text {
            let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), self.text.lines().collect());
            let first = w.iter().zip(&g).position(|(a, b)| a != b).unwrap_or(w.len().min(g.len()));
            panic!(
                "{name}: output differs from {} at line {}:\n  want: {:?}\n  got:  {:?}\n\
                 (KPROF_BLESS=1 rewrites the golden; review the diff)",
                path.display(),
                first + 1,
                w.get(first),
                g.get(first)
            );
        }
    }
}

const DEMO: [&str; 7] = ["copy", "fma", "tiny", "hgemm_naive", "hgemm_tiled", "occupancy", "reduce"];

#[test]
fn import_of_each_demo_full_recording() {
    for kernel in DEMO {
        let mut r = Record::new();
        let f = recordings().join("demo-full");
        let raw = f.join(format!("{kernel}_full_raw.csv"));
        let source = f.join(format!("{kernel}_source.csv"));
        let details = f.join(format!("{kernel}_full_details.csv"));
        r.run(&[
            "import",
            "--raw",
            raw.to_str().unwrap(),
            "--source",
            source.to_str().unwrap(),
            "--details",
            details.to_str().unwrap(),
            "--output-dir",
            "out",
        ]);
        // The imported copies are the recordings themselves.
        r.files("out", &["out/details/imported_"]);
        r.check(&format!("import_{kernel}"));
    }
}

/// Each held-out recording, and a `--kernel` hint that matches its one kernel.
const HELDOUT_HINTS: [(&str, &str); 5] = [
    ("reduction", "reduce_sum"),
    ("transpose", "transpose"),
    ("tc_gemm", "wmma_gemm"),
    ("small_grid", "dependent_fma"),
    ("atomics", "histogram_atomic"),
];

#[test]
fn import_of_the_heldout_recordings_with_a_kernel_hint() {
    let mut r = Record::new();
    for (kernel, hint) in HELDOUT_HINTS {
        let f = recordings().join("heldout");
        let raw = f.join(format!("{kernel}_full_raw.csv"));
        let details = f.join(format!("{kernel}_full_details.csv"));
        let out = format!("out_{kernel}");
        let code = r.run(&[
            "import",
            "--raw",
            raw.to_str().unwrap(),
            "--details",
            details.to_str().unwrap(),
            "--kernel",
            hint,
            "--output-dir",
            &out,
        ]);
        // The hint matches the recording's kernel: a golden of "no kernel matches" proves little.
        assert_eq!(code, Some(0), "{kernel}: --kernel {hint}");
        r.files(&out, &[&format!("{out}/details/imported_")]);
    }
    r.check("import_heldout");
}

#[test]
fn report_of_each_recorded_demo_profile() {
    let stages = recordings().join("demo-stages");
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(&stages).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    assert_eq!(dirs.len(), 7);
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut r = Record::new();
        let rel = format!("profile/{name}");
        r.copy_in(&dir, &rel);
        r.run(&["report", &rel]);
        r.files("profile", &[]);
        r.check(&format!("report_{}", name.split("_2026").next().unwrap()));
    }
}

#[test]
fn compare_naive_to_tiled_with_the_picture_and_a_saved_baseline() {
    let mut r = Record::new();
    let pair = recordings().join("check-runs/pair/workspace/profile");
    for name in ["hgemm_20261129_231810", "hgemm_tiled_20261129_231810"] {
        r.copy_in(&pair.join(name), &format!("profile/{name}"));
    }
    std::fs::remove_dir_all(r.root().join("profile/hgemm_tiled_20261129_231810/comparison")).unwrap();
    r.run(&[
        "compare",
        "profile/hgemm_tiled_20261129_231810",
        "--baseline",
        "profile/hgemm_20261129_231810",
        "--visual",
        "--save-baseline",
        "main",
        "--force",
    ]);
    r.files("profile", &[]);
    r.check("compare_pair");
}

#[test]
fn compare_slowed_against_the_earlier_profile_fails_on_regression() {
    let mut r = Record::new();
    for (run, name) in [
        ("check-runs/rerun", "hgemm_tiled_20261129_231734"),
        ("check-runs/slow", "hgemm_tiled_20261129_231749"),
    ] {
        let from = recordings().join(run).join("workspace/profile").join(name);
        r.copy_in(&from, &format!("profile/{name}"));
    }
    std::fs::remove_dir_all(r.root().join("profile/hgemm_tiled_20261129_231749/comparison")).ok();
    r.run(&["compare", "profile/hgemm_tiled_20261129_231749", "--fail-on-regression"]);
    r.files("profile", &[]);
    r.check("compare_slow");
}
