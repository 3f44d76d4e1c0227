//! `cargo kprof import`'s half on disk: ncu CSV exports made anywhere become a profile
//! directory (copies under `details/`, and `details/import.json` saying what they were).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::dir::ProfileDir;
use super::fs::{open_input, open_page, write_atomic};
use crate::error::{ExitCode, Failure};
use crate::model::filter::KernelHint;
use crate::ncu::parse::{scan_log, DetailsPage, RawPage, ReadError, SourcePage};

/// `details/import.json`: what an import recorded about itself, so `report` can redo the
/// same analysis.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ImportRecord {
    /// The files as given, with their copies under `details/`.
    pub files: Vec<ImportedFile>,
    /// The `--kernel` hint, if any, kept as given.
    pub kernel: Option<KernelHint>,
}

/// One imported file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedFile {
    /// `raw`, `source` or `details`.
    pub page: String,
    /// The path given on the command line.
    pub original: PathBuf,
    /// The copy, relative to the profile directory.
    pub copy: PathBuf,
}

impl ImportRecord {
    /// Writes `details/import.json`.
    pub fn write(&self, dir: &ProfileDir) -> Result<()> {
        write_atomic(&dir.import_record_path(), &serde_json::to_string_pretty(self)?)
    }

    /// Reads `details/import.json`; `None` when the directory was not made by an import.
    pub fn read(dir: &ProfileDir) -> Result<Option<ImportRecord>> {
        let path = dir.import_record_path();
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                Ok(Some(serde_json::from_str(&text).with_context(|| format!("invalid {}", path.display()))?))
            }
            Err(_) => Ok(None),
        }
    }
}

/// Reads an input named on the command line (an export, `--rules`, `--template`) as text;
/// one that cannot be read is refused with exit 12, one that is not a regular file with
/// exit 3 ([`open_input`]), naming it.
pub(crate) fn read(path: &Path) -> Result<String> {
    read_shown(path, &path.display().to_string())
}

/// An ncu page named on the command line as text, unpacked when it is gzip-compressed and
/// refused past `max_mb` MiB ([`open_page`]).
fn read_page(path: &Path, max_mb: u64) -> Result<String> {
    let shown = path.display().to_string();
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut open_page(path, &shown, max_mb)?, &mut bytes).map_err(|e| {
        Failure::new(ExitCode::Config, format!("could not read {shown}: {e}"))
            .help("check the path: it must name an ncu CSV page, plain or gzip-compressed")
    })?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// [`read`], naming the file `shown` (a profile's page, `details/NAME`).
pub(crate) fn read_shown(path: &Path, shown: &str) -> Result<String> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut open_input(path, shown)?, &mut bytes).map_err(|e| {
        Failure::new(ExitCode::Filesystem, format!("could not read {shown}: {e}"))
            .help("check the path: it must name a readable file")
    })?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// An import being built: a new hidden folder beside its output directory, renamed there by
/// [`StagedImport::finish`] once the analysis is written too. Dropped unfinished (a parse,
/// analysis or write failed), it removes what it created, so a failed import leaves nothing
/// that would block the corrected command.
#[derive(Debug)]
pub struct StagedImport {
    dir: ProfileDir,
    staging: PathBuf,
    output_dir: PathBuf,
    created: Vec<PathBuf>,
    finished: bool,
}

impl StagedImport {
    /// The directory being built (its files are in the staging folder; it names the output
    /// directory in what is written into it).
    pub fn dir(&self) -> &ProfileDir {
        &self.dir
    }

    /// Renames the staging folder to the output directory.
    pub fn finish(mut self) -> Result<ProfileDir> {
        super::output::rename_into_place(&self.staging, &self.output_dir)?;
        self.finished = true;
        Ok(ProfileDir::at(self.dir.shown_path()))
    }
}

impl Drop for StagedImport {
    fn drop(&mut self) {
        if !self.finished {
            std::fs::remove_dir_all(&self.staging).ok();
            super::output::remove_created_dirs(&self.created);
        }
    }
}

/// The refusal of a raw page (`origin`) holding a negative value of a metric the analysis
/// reads (see [`RawPage::negative_metric`]): a verdict of high confidence was given on a
/// kernel that ran for -532640 ns.
pub fn negative_value(origin: &str, kernel: &str, column: &str, value: f64) -> Failure {
    Failure::new(
        ExitCode::Config,
        format!(
            "{origin}: `{column}` of `{}` is {value}; ncu prints no negative value for a metric kprof reads \
             (durations, counts, sizes, rates, percentages)",
            crate::shell::printable(kernel)
        ),
    )
    .help("analyse the page as ncu wrote it: export it again with `ncu -i REPORT --csv --page raw`")
}

/// Checks ncu CSV exports, then copies them into a new profile directory with an
/// [`ImportRecord`], built beside `output_dir` (see [`StagedImport`]). Every input is
/// parsed and the output directory checked before anything is created; `read_metric`
/// names the metrics the analysis reads, whose values must not be negative.
pub fn create(
    raw: &[PathBuf],
    source: Option<&Path>,
    details: Option<&Path>,
    kernel: Option<&KernelHint>,
    output_dir: &Path,
    max_input_mb: u64,
    read_metric: &dyn Fn(&str) -> bool,
) -> Result<StagedImport> {
    check_inputs(raw, source, details, kernel, max_input_mb, read_metric)?;
    super::output::check_output_dir(output_dir, false)?;
    let target = std::path::absolute(output_dir)
        .with_context(|| format!("could not resolve {}", output_dir.display()))?;
    let created = match target.parent() {
        Some(parent) => super::output::create_missing_dirs(parent)?,
        None => Vec::new(),
    };
    let staging = match super::output::create_staging_beside(&target, "importing") {
        Ok(s) => s,
        Err(e) => {
            super::output::remove_created_dirs(&created);
            return Err(e.into());
        }
    };
    let staged = StagedImport {
        dir: ProfileDir::staged(&staging, output_dir),
        staging,
        output_dir: target,
        created,
        finished: false,
    };
    let dir = &staged.dir;
    let details_dir = dir.details_dir();
    std::fs::create_dir(&details_dir)
        .with_context(|| format!("could not create {}", details_dir.display()))?;
    let mut record = ImportRecord { files: Vec::new(), kernel: kernel.cloned() };
    let mut copy = |page: &str, from: &Path, to: PathBuf| -> Result<()> {
        // Opened as it was checked: a file that became a pipe meanwhile is refused. A
        // compressed page is copied unpacked, so the directory reads as any other.
        let mut input = open_page(from, &from.display().to_string(), max_input_mb)?;
        let mut output =
            std::fs::File::create_new(&to).with_context(|| format!("could not create {}", to.display()))?;
        std::io::copy(&mut input, &mut output)
            .with_context(|| format!("could not copy {} into {}", from.display(), details_dir.display()))?;
        let rel = to.strip_prefix(dir.path()).unwrap_or(&to).to_path_buf();
        record.files.push(ImportedFile { page: page.into(), original: from.to_path_buf(), copy: rel });
        Ok(())
    };
    for (i, p) in raw.iter().enumerate() {
        copy("raw", p, dir.imported_raw_path(i + 1))?;
    }
    if let Some(p) = source {
        copy("source", p, dir.imported_source_path())?;
    }
    if let Some(p) = details {
        copy("details", p, dir.imported_details_path())?;
    }
    record.write(dir)?;
    Ok(staged)
}

/// Parses every input (and checks the hint) before anything is created, so bad input
/// leaves no directory behind; a raw page is read as a stream, keeping nothing.
fn check_inputs(
    raw: &[PathBuf],
    source: Option<&Path>,
    details: Option<&Path>,
    kernel: Option<&KernelHint>,
    max_input_mb: u64,
    read_metric: &dyn Fn(&str) -> bool,
) -> Result<()> {
    if let Some(k) = kernel {
        crate::model::names::check_kernel_hint(&k.to_string())?;
    }
    for p in raw {
        let shown = p.display().to_string();
        let file = open_page(p, &shown, max_input_mb)?;
        let mut negative = None;
        let mut rows = |page: &RawPage, _: usize, cells: Vec<String>| {
            if negative.is_none() {
                negative = page.negative_metric(&cells).map(|(c, v)| {
                    let kernel = page.column("Kernel Name").and_then(|i| cells.get(i)).cloned();
                    (kernel.unwrap_or_default(), c.to_string(), v)
                });
            }
            Ok(())
        };
        RawPage::for_each_row(file, &shown, &|c| read_metric(c) || c == "Kernel Name", &mut rows).map_err(
            |e| {
                let log = match &e {
                    ReadError::NoPage { preamble } => scan_log(preamble),
                    ReadError::Parse(_) => Default::default(),
                };
                let e = e.with_origin(&shown);
                let mut f = Failure::new(ExitCode::Config, format!("{e}"));
                if log.no_kernels_profiled {
                    f = f.help(format!(
                        "ncu profiled no kernel in this run; it saw: {}",
                        log.available_kernels.join(", ")
                    ));
                }
                f.help("export with `ncu --csv --page raw` (or `-i REPORT --csv --page raw`)")
            },
        )?;
        if let Some((kernel, column, value)) = negative {
            return Err(negative_value(&shown, &kernel, &column, value).into());
        }
    }
    if let Some(p) = source {
        SourcePage::parse(&read_page(p, max_input_mb)?, &p.display().to_string()).map_err(|e| {
            Failure::new(ExitCode::Config, e.to_string())
                .help("export with `--csv --page source --print-source cuda,sass`")
        })?;
    }
    if let Some(p) = details {
        DetailsPage::parse(&read_page(p, max_input_mb)?, &p.display().to_string()).map_err(|e| {
            Failure::new(ExitCode::Config, e.to_string()).help("export with `--csv --page details`")
        })?;
    }
    if let Some(k) = kernel {
        crate::model::filter::KernelFilter::try_from_hint(k)
            .map_err(|e| Failure::new(ExitCode::Config, format!("--kernel `{k}`: {}", e.error)))?;
    }
    Ok(())
}
