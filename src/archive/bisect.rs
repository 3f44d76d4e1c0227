//! A bisect archive (`cargo kprof archive --bisect GOOD..BAD`): every first-parent revision
//! of a range, built here, for `cargo-kprof kprof bisect --archive` on a GPU machine
//! without cargo.
//!
//! It is a tar of plain files: `kprof-bisect.json` first (the history, and which build
//! each revision has), then `build-<n>.tar` for each distinct build, each an ordinary
//! archive as [`super::write`] makes it. Revisions whose builds are identical share one:
//! many commits do not touch the kernel's crate. Each build is unpacked, and checked entry
//! by entry, exactly as a one-sided archive is: the bundle adds no way to write outside
//! `--workspace-remap`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::outer::{self, Layout};
use super::pair::{commit, text};
use crate::error::{ExitCode, Failure};

/// The bundle's manifest, its first entry.
const BISECT_MANIFEST: &str = Layout::Bisect.manifest();
/// Where the builds are put while the bisect runs (inside `--workspace-remap`).
const INNER_DIR: &str = ".kprof-bisect-archives";
/// The most revisions one bundle holds. Each is a build on the packing machine, so a range
/// this long is hours of compilation; the bound keeps a hostile manifest from costing
/// memory.
pub const MAX_REVISIONS: usize = 4096;
/// The longest text kept: a revision as typed, a subject line, a reason.
const MAX_TEXT: usize = 1024;

/// `kprof-bisect.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BisectManifest {
    /// 1.
    pub schema_version: u32,
    /// The cargo-kprof that wrote it.
    pub kprof_version: String,
    /// The kernels packed (each build holds these, or says why not).
    pub kernels: Vec<String>,
    /// `--good`: what was asked, its commit and its build.
    pub good: GoodRevision,
    /// What `--bad` asked for; its commit is the history's last.
    pub bad_asked: String,
    /// The first-parent history `good..bad`, oldest first.
    pub history: Vec<Revision>,
    /// How many distinct builds the bundle holds (`build-0.tar` ..).
    pub builds: usize,
}

/// `--good` in the bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoodRevision {
    /// As asked.
    pub asked: String,
    /// Its commit.
    pub commit: String,
    /// Its build.
    pub build: usize,
}

/// One revision of the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revision {
    /// The full hash.
    pub commit: String,
    /// The subject line, control characters replaced.
    pub subject: String,
    /// The author date, ISO 8601.
    pub date: String,
    /// Its build, or `None` ...
    pub build: Option<usize>,
    /// ... with why it has none (`does not build: ...`, `cannot be checked: ...`).
    pub not_built: Option<String>,
}

/// `text` with its control characters (and the marks that reorder text) replaced by `?`:
/// a commit's subject is anyone's words.
pub fn printable(text: &str) -> String {
    text.chars()
        .take(MAX_TEXT)
        .map(|c| if c.is_control() || super::pair::BIDI.contains(&c) { '?' } else { c })
        .collect()
}

impl BisectManifest {
    /// Every field as `archive --bisect` writes it, or the first that is not:
    /// `(field, why)`.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        text("kprof_version", &self.kprof_version, 64)?;
        text("bad_asked", &self.bad_asked, MAX_TEXT)?;
        text("good.asked", &self.good.asked, MAX_TEXT)?;
        commit("good.commit", &self.good.commit)?;
        if self.kernels.is_empty() || self.kernels.len() > MAX_REVISIONS {
            return Err(("kernels", format!("holds {} names (1 to {MAX_REVISIONS})", self.kernels.len())));
        }
        for k in &self.kernels {
            text("kernels", k, MAX_TEXT)?;
        }
        if self.history.is_empty() || self.history.len() > MAX_REVISIONS {
            return Err((
                "history",
                format!("holds {} revisions (1 to {MAX_REVISIONS})", self.history.len()),
            ));
        }
        if self.builds == 0 || self.builds > self.history.len() + 1 {
            return Err(("builds", format!("is {} for {} revisions", self.builds, self.history.len() + 1)));
        }
        if self.good.build >= self.builds {
            return Err((
                "good.build",
                format!("is {}, not below builds ({})", self.good.build, self.builds),
            ));
        }
        self.history.iter().try_for_each(|r| r.validate(self.builds))?;
        // A history is a first-parent path after `good`: each commit once, `good` not in it.
        let mut seen = std::collections::BTreeSet::new();
        for r in &self.history {
            if r.commit == self.good.commit {
                return Err(("history", format!("holds good.commit {} after itself", r.commit)));
            }
            if !seen.insert(r.commit.as_str()) {
                return Err(("history", format!("holds {} twice", r.commit)));
            }
        }
        Ok(())
    }

    /// The name of build `n` in the bundle.
    pub fn build_name(n: usize) -> String {
        format!("build-{n}.tar")
    }
}

impl Revision {
    fn validate(&self, builds: usize) -> Result<(), (&'static str, String)> {
        commit("history.commit", &self.commit)?;
        if self.subject.chars().count() > MAX_TEXT || self.subject.chars().any(char::is_control) {
            return Err(("history.subject", "is not one printable line".to_string()));
        }
        text("history.date", &self.date, 64)?;
        match (self.build, &self.not_built) {
            (Some(b), None) if b < builds => Ok(()),
            (Some(b), None) => Err(("history.build", format!("is {b}, not below builds ({builds})"))),
            (None, Some(why)) => text("history.not_built", why, MAX_TEXT),
            _ => Err(("history.build", "needs exactly one of `build` and `not_built`".to_string())),
        }
    }
}

/// The builds' temporary names next to `out` while the bundle is made, refused when one
/// exists (nothing of someone's is overwritten).
pub fn temporary(out: &Path, n: usize) -> Result<PathBuf, Failure> {
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = out.with_file_name(format!(".{name}.build-{n}.partial"));
    for p in [&tmp, &out.to_path_buf()] {
        if p.symlink_metadata().is_ok() {
            return Err(Failure::new(ExitCode::Filesystem, format!("{} exists", p.display())).help(
                "archives are never overwritten: pick a new file name, or remove a leftover .partial file",
            ));
        }
    }
    Ok(tmp)
}

/// Writes the bundle to `out` (never over an existing file) from the builds' archives,
/// `builds[n]` being build `n`, and removes those.
pub fn write(manifest: &BisectManifest, builds: &[PathBuf], out: &Path) -> Result<()> {
    let inner: Vec<(String, &Path)> =
        builds.iter().enumerate().map(|(n, p)| (BisectManifest::build_name(n), p.as_path())).collect();
    outer::write(Layout::Bisect, manifest, &inner, out)
}

/// The bundle's manifest, from the bytes of `archive`'s first entry (see
/// [`super::open`]), read and checked.
pub(super) fn parse_manifest(archive: &Path, bytes: &[u8]) -> Result<BisectManifest, Failure> {
    let read = super::pair::Bundle {
        archive,
        manifest: BISECT_MANIFEST,
        kind: "a bisect archive",
        verb: "search",
        unchanged: "pass the file that `archive --bisect GOOD..BAD` wrote, unchanged",
    };
    let m: BisectManifest = serde_json::from_slice(bytes).map_err(|e| {
        Failure::new(
            ExitCode::Config,
            format!("{}: {BISECT_MANIFEST} cannot be read: {e}", archive.display()),
        )
        .help(read.unchanged)
    })?;
    read.check(m.schema_version, m.validate())?;
    Ok(m)
}

/// The refusal of a bisect archive given to `command` (`run --archive`, `check
/// --archive`), naming `bisect --archive`, which searches it.
pub fn refused(archive: &Path, command: &str) -> Failure {
    Failure::new(
        ExitCode::Config,
        format!(
            "{} is a bisect archive (packed with `archive --bisect GOOD..BAD`): {command} takes one build",
            archive.display()
        ),
    )
    .help(format!("search it with `cargo-kprof kprof bisect --archive {}`", archive.display()))
}

/// Extracts every build of the bundle into `<dir>/.kprof-bisect-archives/`, refusing any
/// entry but the manifest and the `builds` builds (plain files, once each); returns their
/// paths, build `n` at `n`.
pub fn extract_builds(archive: &Path, dir: &Path, builds: usize) -> Result<Vec<PathBuf>> {
    let refuse = |what: String| -> anyhow::Error {
        Failure::new(ExitCode::Config, format!("{}: {what}", archive.display()))
            .help("pass the file that `archive --bisect GOOD..BAD` wrote, unchanged")
            .into()
    };
    let names: Vec<String> = (0..builds).map(BisectManifest::build_name).collect();
    let inner = dir.join(INNER_DIR);
    let seen = outer::extract_inner(archive, &inner, Layout::Bisect, &names, &|name| {
        refuse(format!(
            "entry `{}` is not {BISECT_MANIFEST} or one of build-0.tar .. build-{}.tar (plain files, once each)",
            crate::process::shell_comment(name),
            builds.saturating_sub(1)
        ))
    })?;
    if let Some(missing) = names.iter().find(|n| !seen.contains(n)) {
        return Err(refuse(format!("no {missing}, though the manifest lists {builds} builds")));
    }
    Ok(names.iter().map(|n| inner.join(n)).collect())
}

/// Removes what [`extract_builds`] wrote, all of it or part.
pub fn remove_builds(dir: &Path, builds: usize) {
    let inner = dir.join(INNER_DIR);
    for n in 0..builds {
        std::fs::remove_file(inner.join(BisectManifest::build_name(n))).ok();
    }
    std::fs::remove_dir(inner).ok();
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: &str = "3f2a1c9d0e1b3f2a1c9d0e1b3f2a1c9d0e1b3f2a";

    /// The `n`th revision after `good` (`C`), its own commit.
    fn revision(n: usize, build: Option<usize>) -> Revision {
        Revision {
            commit: format!("{:040x}", n + 1),
            subject: "speed up the tile loop".into(),
            date: "2026-11-30T10:00:00+00:00".into(),
            not_built: build.is_none().then(|| "does not build: cargo build failed".into()),
            build,
        }
    }

    fn manifest() -> BisectManifest {
        BisectManifest {
            schema_version: 1,
            kprof_version: "0.1.0".into(),
            kernels: vec!["hgemm_tiled".into()],
            good: GoodRevision { asked: "v1.2.0".into(), commit: C.into(), build: 0 },
            bad_asked: "HEAD".into(),
            history: vec![revision(0, Some(0)), revision(1, None), revision(2, Some(1))],
            builds: 2,
        }
    }

    #[test]
    fn a_manifest_as_written_passes_and_each_bad_field_is_named() {
        assert_eq!(manifest().validate(), Ok(()));
        let mut cases: Vec<(&str, BisectManifest)> = vec![
            ("builds", BisectManifest { builds: 0, ..manifest() }),
            ("builds", BisectManifest { builds: 5, ..manifest() }),
            ("history", BisectManifest { history: vec![], ..manifest() }),
            ("kernels", BisectManifest { kernels: vec![], ..manifest() }),
            ("kernels", BisectManifest { kernels: vec!["a\u{1b}[2J".into()], ..manifest() }),
            ("bad_asked", BisectManifest { bad_asked: "x".repeat(MAX_TEXT + 1), ..manifest() }),
        ];
        let mut m = manifest();
        m.good.build = 2;
        cases.push(("good.build", m));
        let mut m = manifest();
        m.good.commit = "../..".into();
        cases.push(("good.commit", m));
        let mut m = manifest();
        m.history[2].build = Some(2);
        cases.push(("history.build", m));
        let mut m = manifest();
        m.history[1].not_built = None;
        cases.push(("history.build", m));
        let mut m = manifest();
        m.history[0].not_built = Some("why".into());
        cases.push(("history.build", m));
        let mut m = manifest();
        m.history[0].subject = "a\rb".into();
        cases.push(("history.subject", m));
        let mut m = manifest();
        m.history[0].commit = "g".repeat(40);
        cases.push(("history.commit", m));
        // At most MAX_REVISIONS revisions: that many pass, one more is refused.
        let mut m = manifest();
        m.history = (0..MAX_REVISIONS).map(|n| revision(n, None)).collect();
        m.history[0].build = Some(0);
        m.history[0].not_built = None;
        assert_eq!(m.validate(), Ok(()));
        m.history.push(revision(MAX_REVISIONS, None));
        cases.push(("history", m));
        // A first-parent path: each commit once, `good` not in it.
        let mut m = manifest();
        m.history[2].commit = m.history[0].commit.clone();
        cases.push(("history", m));
        let mut m = manifest();
        m.history[1].commit = C.into();
        cases.push(("history", m));
        for (field, m) in cases {
            assert_eq!(m.validate().map_err(|(f, _)| f), Err(field), "{m:?}");
        }
    }

    #[test]
    fn a_subject_is_kept_printable() {
        assert_eq!(printable("fix\u{1b}]0;owned\u{7} it\u{202e}"), "fix?]0;owned? it?");
        assert_eq!(printable(&"s".repeat(5000)).len(), MAX_TEXT);
    }

    #[test]
    fn a_bundle_is_written_read_and_refused_when_changed() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("b.tar");
        let builds: Vec<PathBuf> = (0..2)
            .map(|n| {
                let p = temporary(&out, n).unwrap();
                std::fs::write(&p, format!("build {n}")).unwrap();
                p
            })
            .collect();
        write(&manifest(), &builds, &out).unwrap();
        assert!(builds.iter().all(|b| !b.exists()), "the temporaries are removed");
        assert!(temporary(&out, 0).is_err(), "the bundle is never overwritten");
        let super::super::Opened::Bisect(read) = super::super::open(&out).unwrap() else {
            panic!("not a bundle")
        };
        assert_eq!(read.unwrap(), manifest());
        let remap = dir.path().join("remap");
        let paths = extract_builds(&out, &remap, 2).unwrap();
        assert_eq!(std::fs::read_to_string(&paths[1]).unwrap(), "build 1");
        remove_builds(&remap, 2);
        assert!(!remap.join(INNER_DIR).exists());
        // A manifest that lists more builds than the bundle holds is refused, naming the
        // missing one.
        let e = extract_builds(&out, &dir.path().join("again"), 3).unwrap_err();
        assert!(format!("{e:#}").contains("no build-2.tar"), "{e:#}");
    }
}
