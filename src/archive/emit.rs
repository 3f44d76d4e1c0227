//! Launchers for an archive: `cargo kprof archive -o FILE --emit slurm|k8s|github`.
//!
//! Each launcher profiles the archive as N shards, one GPU each, through
//! `cargo-kprof kprof run --archive` (one `--workspace-remap` folder per shard), and merges
//! the shards with `cargo-kprof kprof merge`. They are text templates
//! (`templates/launchers/`) filled with the archive's file name, N and the Slurm options,
//! written next to the archive as `FILE.slurm.sh`, `FILE.k8s.yaml` and `FILE.github.yml`,
//! and never over an existing file. Everything they name is relative to their folder (or
//! a variable at the top), so the folder can be copied to a cluster as it is.
//!
//! The archive's file name is written into shell and YAML unquoted, so it must be plain
//! (letters, digits, `.`, `_`, `+`, `-`); the Slurm options are checked the same way.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::error::{ExitCode, Failure};

/// Without `--shards`: one shard per kernel, at most this many.
pub const DEFAULT_MAX_SHARDS: usize = 8;

/// A launcher `--emit` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    /// `FILE.slurm.sh`: an sbatch job array, and its `submit` and `merge` modes.
    Slurm,
    /// `FILE.k8s.yaml`: a Kubernetes Indexed Job.
    K8s,
    /// `FILE.github.yml`: a GitHub Actions workflow with a shard matrix and a merge job.
    Github,
}

impl Launcher {
    /// What the launcher's file name adds to the archive's.
    pub fn suffix(self) -> &'static str {
        match self {
            Launcher::Slurm => ".slurm.sh",
            Launcher::K8s => ".k8s.yaml",
            Launcher::Github => ".github.yml",
        }
    }

    /// The name `--emit` takes.
    pub fn name(self) -> &'static str {
        match self {
            Launcher::Slurm => "slurm",
            Launcher::K8s => "k8s",
            Launcher::Github => "github",
        }
    }

    fn template(self) -> &'static str {
        match self {
            Launcher::Slurm => include_str!("../../templates/launchers/slurm.sh"),
            Launcher::K8s => include_str!("../../templates/launchers/k8s.yaml"),
            Launcher::Github => include_str!("../../templates/launchers/github.yml"),
        }
    }
}

/// The GRES each Slurm array task asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gres {
    /// No `--gres` line: clusters that do not schedule GPUs as GRES.
    None,
    /// `#SBATCH --gres=SPEC`.
    Spec(String),
}

/// `--slurm-gres`: `none`, or a GRES spec such as `gpu:1` or `gpu:h200:1`.
pub fn parse_gres(s: &str) -> Result<Gres, String> {
    if s == "none" {
        return Ok(Gres::None);
    }
    let plain = |c: char| c.is_ascii_alphanumeric() || "_:.,-".contains(c);
    if s.is_empty() || !s.chars().all(plain) {
        return Err(format!(
            "`{s}` is not a GRES spec: use `gpu:1`, `gpu:TYPE:N` (letters, digits, `_:.,-`) or `none`"
        ));
    }
    Ok(Gres::Spec(s.to_string()))
}

/// `--slurm-time`: sbatch's `--time` (`MM`, `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM:SS`).
pub fn parse_time(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_digit() || c == ':' || c == '-');
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!("`{s}` is not a Slurm time limit: use `MM`, `HH:MM:SS` or `D-HH:MM:SS`"))
    }
}

/// The Slurm launcher's options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmOptions {
    /// `--gres`.
    pub gres: Gres,
    /// `--time`.
    pub time: String,
}

/// What `--emit`, `--shards` and the `--slurm-*` options asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LauncherRequest {
    /// Each launcher once, in a fixed order; empty when none was asked for.
    pub launchers: Vec<Launcher>,
    /// `--shards`.
    pub shards: Option<usize>,
    /// The Slurm options.
    pub slurm: SlurmOptions,
}

/// The launchers of one archive, checked and ready to write.
#[derive(Debug, Clone)]
pub struct Launchers {
    archive_name: String,
    kernels: usize,
    shards: usize,
    slurm: SlurmOptions,
    files: Vec<(Launcher, PathBuf)>,
}

/// Checks a request against the archive's path and kernel count, before anything is built:
/// `None` when no launcher was asked for. Refuses (exit 3) a `--shards` outside
/// `1..=kernels` and an archive name the launchers cannot spell; refuses (exit 12) a
/// launcher's path that is taken.
pub fn prepare(archive: &Path, kernels: usize, req: &LauncherRequest) -> Result<Option<Launchers>, Failure> {
    if req.launchers.is_empty() {
        return Ok(None);
    }
    let shards = match req.shards {
        None => kernels.clamp(1, DEFAULT_MAX_SHARDS),
        Some(n) if (1..=kernels).contains(&n) => n,
        Some(n) => {
            return Err(Failure::new(
                ExitCode::Config,
                format!("--shards {n}: the archive holds {kernels} kernel(s), and every shard needs one"),
            )
            .help(format!(
                "pick --shards between 1 and {kernels}, or leave it out (one shard per kernel, at most 8)"
            )))
        }
    };
    let archive_name = archive.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let plain = |c: char| c.is_ascii_alphanumeric() || "._+-".contains(c);
    if archive_name.is_empty() || archive_name.starts_with(['-', '.']) || !archive_name.chars().all(plain) {
        return Err(Failure::new(
            ExitCode::Config,
            format!(
                "--emit: the archive's file name `{}` is written into the launchers and must be plain",
                crate::process::shell_comment(&archive_name)
            ),
        )
        .help("name the archive with letters, digits, `.`, `_`, `+` and `-` (such as `hgemm.tar`)"));
    }
    let files: Vec<(Launcher, PathBuf)> = req
        .launchers
        .iter()
        .map(|&l| (l, archive.with_file_name(format!("{archive_name}{}", l.suffix()))))
        .collect();
    for (_, path) in &files {
        if path.symlink_metadata().is_ok() {
            return Err(taken(path));
        }
    }
    Ok(Some(Launchers { archive_name, kernels, shards, slurm: req.slurm.clone(), files }))
}

fn taken(path: &Path) -> Failure {
    Failure::new(ExitCode::Filesystem, format!("{} exists", path.display()))
        .help("launchers are never overwritten: move the file aside, or pick another archive name")
}

impl Launchers {
    /// How many shards the launchers split the kernels into.
    pub fn shards(&self) -> usize {
        self.shards
    }

    /// Each launcher and the file it is written to.
    pub fn files(&self) -> &[(Launcher, PathBuf)] {
        &self.files
    }

    /// Writes every launcher, none over an existing file; on an error, removes the ones
    /// this call created.
    pub fn write(&self) -> Result<()> {
        let mut written = Vec::new();
        for (launcher, path) in &self.files {
            if let Err(e) = write_one(path, &self.render(*launcher)) {
                written.iter().for_each(|p: &&PathBuf| drop(std::fs::remove_file(p)));
                return Err(e);
            }
            written.push(path);
        }
        Ok(())
    }

    /// The launcher's text.
    pub fn render(&self, launcher: Launcher) -> String {
        let n = self.shards;
        let stem = job_name(&self.archive_name);
        let gres_line = match &self.slurm.gres {
            Gres::None => String::new(),
            Gres::Spec(spec) => format!("#SBATCH --gres={spec}\n"),
        };
        let file = format!("{}{}", self.archive_name, launcher.suffix());
        let values: Vec<(&str, String)> = vec![
            ("archive", self.archive_name.clone()),
            ("kernels", self.kernels.to_string()),
            ("shards", n.to_string()),
            ("job_name", stem),
            ("file", file.clone()),
            ("script", file),
            ("results", format!("{}.results", self.archive_name)),
            ("gres_line", gres_line),
            ("time", self.slurm.time.clone()),
            ("shard_list", (1..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ")),
            ("shard_dirs", (0..n).map(|i| format!("/results/shard-{i}")).collect::<Vec<_>>().join(" ")),
            (
                "artifact_dirs",
                (1..=n).map(|i| format!("shards/kprof-shard-{i}")).collect::<Vec<_>>().join(" "),
            ),
        ];
        render(launcher.template(), &values)
    }
}

/// Fills `{{name}}` placeholders in one pass (GitHub's `${{ expr }}`, with spaces, is
/// left alone); a value from the archive's name is never scanned again.
fn render(template: &str, values: &[(&str, String)]) -> String {
    crate::shell::fill_template(template, values)
}

/// A Kubernetes object name (a DNS label) and Slurm job name from the archive's name:
/// `kprof-` and the name lowercased, other characters as `-`, at most 52 characters so
/// that the pods' names (name, index and a suffix) fit in 63.
fn job_name(archive_name: &str) -> String {
    let mut name = String::from("kprof-");
    for c in archive_name.chars().map(|c| c.to_ascii_lowercase()) {
        let c = if c.is_ascii_alphanumeric() { c } else { '-' };
        if c != '-' || !name.ends_with('-') {
            name.push(c);
        }
    }
    name.truncate(52);
    name.trim_end_matches('-').to_string()
}

fn write_one(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow::Error::new(taken(path))
        } else {
            anyhow::Error::new(e).context(format!("could not create {}", path.display()))
        }
    })?;
    f.write_all(text.as_bytes())
        .map_err(|e| anyhow::Error::new(e).context(format!("could not write {}", path.display())))?;
    #[cfg(unix)]
    if path.extension().is_some_and(|e| e == "sh") {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An archive's name reaches shell and YAML: a placeholder in it stays text (#45, G3).
    #[test]
    fn a_placeholder_in_an_archive_name_is_not_expanded() {
        let values = [("archive", "a{{shard_list}}.tar".to_string()), ("shard_list", "1, 2".to_string())];
        assert_eq!(render("run {{archive}} on {{shard_list}}", &values), "run a{{shard_list}}.tar on 1, 2");
    }

    fn request(launchers: &[Launcher], shards: Option<usize>) -> LauncherRequest {
        LauncherRequest {
            launchers: launchers.to_vec(),
            shards,
            slurm: SlurmOptions { gres: Gres::Spec("gpu:1".into()), time: "1:00:00".into() },
        }
    }

    #[test]
    fn every_placeholder_is_filled() {
        let dir = tempfile::tempdir().unwrap();
        let all = [Launcher::Slurm, Launcher::K8s, Launcher::Github];
        let l = prepare(&dir.path().join("k.tar"), 3, &request(&all, None)).unwrap().unwrap();
        let placeholder = regex::Regex::new(r"\{\{[a-z_]+\}\}").unwrap();
        for launcher in all {
            let text = l.render(launcher);
            assert!(!placeholder.is_match(&text), "{}: {text}", launcher.name());
        }
    }

    #[test]
    fn job_names_are_dns_labels() {
        assert_eq!(job_name("k.tar"), "kprof-k-tar");
        assert_eq!(job_name("Hgemm_Pair.tar"), "kprof-hgemm-pair-tar");
        let long = job_name(&"a".repeat(100));
        assert_eq!(long.len(), 52);
        assert!(long.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
    }

    #[test]
    fn shards_default_to_the_kernels_at_most_eight() {
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join("k.tar");
        let shards =
            |kernels, n| prepare(&archive, kernels, &request(&[Launcher::K8s], n)).map(|l| l.unwrap().shards);
        assert_eq!(shards(3, None).unwrap(), 3);
        assert_eq!(shards(20, None).unwrap(), 8);
        assert_eq!(shards(20, Some(12)).unwrap(), 12);
        assert_eq!(shards(3, Some(4)).unwrap_err().code, ExitCode::Config);
        assert!(prepare(&archive, 3, &request(&[], Some(4))).unwrap().is_none());
    }

    #[test]
    fn option_values_that_are_not_plain_are_refused() {
        assert_eq!(parse_gres("none"), Ok(Gres::None));
        assert_eq!(parse_gres("gpu:h200:2"), Ok(Gres::Spec("gpu:h200:2".into())));
        assert!(parse_gres("gpu:1\n#SBATCH --x").is_err());
        assert!(parse_gres("").is_err());
        assert_eq!(parse_time("2-00:00:00"), Ok("2-00:00:00".into()));
        assert!(parse_time("1h").is_err());
        assert!(parse_time("-1").is_err());
    }
}
