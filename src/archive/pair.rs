//! An A/B archive (`cargo kprof archive --base REV`): both sides of a check, for a GPU
//! machine without cargo.
//!
//! It is a tar of exactly three plain files: `kprof-ab.json` (which revision the base is),
//! `head.tar` and `base.tar`, each an ordinary archive as [`super::write`] makes it. Each
//! side is then unpacked, and checked entry by entry, exactly as a one-sided archive is:
//! the pair adds no way to write outside `--workspace-remap`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::outer::{self, Layout};
use crate::error::{ExitCode, Failure};

/// The pair's manifest.
const PAIR_MANIFEST: &str = Layout::Pair.manifest();
const HEAD: &str = "head.tar";
const BASE: &str = "base.tar";
/// Where the two inner archives are put while they are unpacked (inside `--workspace-remap`).
const INNER_DIR: &str = ".kprof-ab-archives";

/// `kprof-ab.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairManifest {
    /// 1.
    pub schema_version: u32,
    /// The cargo-kprof that wrote it.
    pub kprof_version: String,
    /// What `--base` asked for, or how the base was chosen.
    pub base_asked: String,
    /// The base commit.
    pub base_commit: String,
    /// The head's commit (`HEAD` when packed; the working tree may have held changes).
    pub head_commit: Option<String>,
}

/// Writes the pair to `out` (never over an existing file) from two archives already
/// written, and removes those.
pub fn write(manifest: &PairManifest, head: &Path, base: &Path, out: &Path) -> Result<()> {
    outer::write(Layout::Pair, manifest, &[(HEAD.to_string(), head), (BASE.to_string(), base)], out)
}

/// The side archives' temporary names next to `out` while the pair is made; refused when
/// either exists (nothing of someone's is overwritten).
pub fn temporaries(out: &Path) -> Result<(PathBuf, PathBuf), Failure> {
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let at = |side: &str| out.with_file_name(format!(".{name}.{side}.partial"));
    let (head, base) = (at("head"), at("base"));
    for p in [&head, &base, &out.to_path_buf()] {
        if p.symlink_metadata().is_ok() {
            return Err(Failure::new(ExitCode::Filesystem, format!("{} exists", p.display())).help(
                "archives are never overwritten: pick a new file name, or remove a leftover .partial file",
            ));
        }
    }
    Ok((head, base))
}

/// The pair's manifest, from the bytes of `archive`'s first entry (see [`super::open`]),
/// read and checked.
pub(super) fn parse_manifest(archive: &Path, text: &[u8]) -> Result<PairManifest, Failure> {
    let m: PairManifest = serde_json::from_slice(text).map_err(|e| {
        Failure::new(ExitCode::Config, format!("{}: {PAIR_MANIFEST} cannot be read: {e}", archive.display()))
    })?;
    let read = Bundle {
        archive,
        manifest: PAIR_MANIFEST,
        kind: "an A/B archive",
        verb: "check",
        unchanged: "pass the file `cargo kprof archive --base` wrote, unchanged",
    };
    read.check(m.schema_version, m.validate())?;
    Ok(m)
}

/// How a bundle's manifest (an A/B or a bisect archive's) is refused, once parsed.
pub(super) struct Bundle<'a> {
    /// The archive.
    pub archive: &'a Path,
    /// The manifest's entry name.
    pub manifest: &'a str,
    /// `an A/B archive`, `a bisect archive`.
    pub kind: &'a str,
    /// What the user does with it: `check`, `search`.
    pub verb: &'a str,
    /// The help for a manifest that is not as written.
    pub unchanged: &'a str,
}

impl Bundle<'_> {
    /// Refuses a schema other than 1, then the first field `validated` names.
    pub(super) fn check(&self, schema: u32, validated: Result<(), (&str, String)>) -> Result<(), Failure> {
        let at = self.archive.display();
        if schema != 1 {
            return Err(Failure::new(
                ExitCode::Config,
                format!("{at}: {} of schema {schema} (this cargo-kprof reads 1)", self.kind),
            )
            .help(format!("{} it with the cargo-kprof version that wrote it", self.verb)));
        }
        validated.map_err(|(field, why)| {
            Failure::new(ExitCode::Config, format!("{at}: {}: `{field}` {why}", self.manifest))
                .help(self.unchanged)
        })
    }
}

/// The longest `base_asked` kept: a revision as typed, or `merge base of HEAD and <branch>`.
const MAX_ASKED: usize = 1024;

impl PairManifest {
    /// Every field as `archive --base` writes it, or the first that is not: `(field, why)`.
    /// Commits are 40 hex digits (64 in a SHA-256 repository); the texts are printable
    /// lines of bounded length. The side names are the entries' names, checked by
    /// [`extract_sides`]; the manifest names no path.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        text("kprof_version", &self.kprof_version, 64)?;
        text("base_asked", &self.base_asked, MAX_ASKED)?;
        commit("base_commit", &self.base_commit)?;
        match &self.head_commit {
            Some(c) => commit("head_commit", c),
            None => Ok(()),
        }
    }
}

/// A field's value as shown in a refusal: escaped, at most 80 characters.
fn shown(value: &str) -> String {
    let mut s: String = value.chars().take(80).collect();
    if s.len() < value.len() {
        s.push_str("...");
    }
    format!("{s:?}")
}

/// `value` is a commit: 40 or 64 hex digits.
pub(super) fn commit(field: &'static str, value: &str) -> Result<(), (&'static str, String)> {
    let hex = value.bytes().all(|b| b.is_ascii_hexdigit());
    match (value.len(), hex) {
        (40 | 64, true) => Ok(()),
        _ => Err((field, format!("is not a commit (40 or 64 hex digits): {}", shown(value)))),
    }
}

/// The invisible marks that reorder or hide text on a terminal (bidirectional overrides
/// and isolates, zero-width marks): refused with the control characters.
pub(super) const BIDI: [char; 14] = [
    '\u{200b}', '\u{200c}', '\u{200d}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202b}', '\u{202c}',
    '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
];

/// `value` is one printable line, not empty, of at most `max` characters.
pub(super) fn text(field: &'static str, value: &str, max: usize) -> Result<(), (&'static str, String)> {
    if value.trim().is_empty() {
        Err((field, "is empty".to_string()))
    } else if value.chars().count() > max {
        Err((field, format!("is longer than {max} characters: {}", shown(value))))
    } else if value.chars().any(|c| c.is_control() || BIDI.contains(&c)) {
        Err((field, format!("holds control characters: {}", shown(value))))
    } else {
        Ok(())
    }
}

/// Extracts the two side archives of the pair into `<dir>/.kprof-ab-archives/`, refusing any
/// entry but the three files; returns (head, base).
pub fn extract_sides(archive: &Path, dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let refuse = |what: String| -> anyhow::Error {
        Failure::new(ExitCode::Config, format!("{}: {what}", archive.display()))
            .help("pass the file `cargo kprof archive --base` wrote, unchanged")
            .into()
    };
    let inner = dir.join(INNER_DIR);
    let allowed = [HEAD.to_string(), BASE.to_string()];
    let seen = outer::extract_inner(archive, &inner, Layout::Pair, &allowed, &|name| {
        refuse(format!(
            "entry `{}` is not one of {PAIR_MANIFEST}, {HEAD}, {BASE} (plain files, once each)",
            crate::process::shell_comment(name)
        ))
    })?;
    for needed in [HEAD, BASE] {
        if !seen.iter().any(|s| s == needed) {
            return Err(refuse(format!("no {needed}")));
        }
    }
    Ok((inner.join(HEAD), inner.join(BASE)))
}

/// Removes what [`extract_sides`] wrote, all of it or part: once both sides are unpacked,
/// or when unpacking failed.
pub fn remove_sides(dir: &Path) {
    let inner = dir.join(INNER_DIR);
    for name in [HEAD, BASE] {
        std::fs::remove_file(inner.join(name)).ok();
    }
    std::fs::remove_dir(inner).ok();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> PairManifest {
        PairManifest {
            schema_version: 1,
            kprof_version: "0.1.0".into(),
            base_asked: "merge base of HEAD and origin/main".into(),
            base_commit: "3f2a1c9d0e1b3f2a1c9d0e1b3f2a1c9d0e1b3f2a".into(),
            head_commit: None,
        }
    }

    #[test]
    fn a_manifest_as_written_passes_and_each_bad_field_is_named() {
        assert_eq!(manifest().validate(), Ok(()));
        let sha256 = PairManifest { base_commit: "a".repeat(64), ..manifest() };
        assert_eq!(sha256.validate(), Ok(()));
        let cases: [(&str, PairManifest); 9] = [
            ("base_commit", PairManifest { base_commit: String::new(), ..manifest() }),
            ("base_commit", PairManifest { base_commit: "../..".into(), ..manifest() }),
            ("base_commit", PairManifest { base_commit: format!("a{}", "é".repeat(39)), ..manifest() }),
            ("base_commit", PairManifest { base_commit: "g".repeat(40), ..manifest() }),
            ("head_commit", PairManifest { head_commit: Some("HEAD".into()), ..manifest() }),
            ("base_asked", PairManifest { base_asked: "main\u{1b}[2J".into(), ..manifest() }),
            ("base_asked", PairManifest { base_asked: "main\u{202e}".into(), ..manifest() }),
            ("base_asked", PairManifest { base_asked: "m".repeat(MAX_ASKED + 1), ..manifest() }),
            ("kprof_version", PairManifest { kprof_version: " ".into(), ..manifest() }),
        ];
        for (field, m) in cases {
            assert_eq!(m.validate().map_err(|(f, _)| f), Err(field), "{m:?}");
        }
        let (_, why) = PairManifest { base_asked: "x".repeat(5000), ..manifest() }.validate().unwrap_err();
        assert!(why.len() < 200, "{why}");
        // The refusal shows the value escaped, cut at 80 characters.
        assert!(why.contains(&format!("\"{}...\"", "x".repeat(80))), "{why}");
        let (_, why) =
            PairManifest { base_asked: "main\u{1b}[2J".into(), ..manifest() }.validate().unwrap_err();
        assert!(why.contains(r#""main\u{1b}[2J""#), "{why}");
    }
}
