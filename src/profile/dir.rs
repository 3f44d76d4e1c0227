//! The profile directory: `<workspace root>/profile/<id>/` and `profile/ncu_path`.
//!
//! A profile is evidence, so nothing here ever overwrites or deletes. Each run gets a
//! fresh directory named `{sanitized_kernel}_{YYYYMMDD_HHMMSS}`, created with
//! [`std::fs::create_dir`] on the final component: that call fails atomically when the
//! directory exists, so two runs started in the same second (even concurrently) get
//! `<id>` and `<id>_2` rather than sharing one. A directory the user names explicitly
//! is accepted only while it is empty, and claimed by atomically creating `details/`
//! in it. `ncu_path` is created with `create_new` and never rewritten, because the
//! user edits it to match their sudoers rule.
//!
//! The timestamp of an id is UTC ([`UtcTimestamp`], in `timestamp.rs`); the clock is a
//! parameter (`now: SystemTime`) so tests pin it.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::{ExitCode, Failure};
use crate::model::stage::Stage;
use crate::ncu::StageCollection;

pub use super::timestamp::{civil_from_days, UtcTimestamp};

/// The file under the profiles root naming the ncu binary that sudo mode runs.
pub const NCU_PATH_FILE: &str = "ncu_path";
/// What [`ensure_ncu_path`] writes when the file is absent.
pub const DEFAULT_NCU_PATH: &str = "/usr/local/cuda/bin/ncu";
/// The raw CSV a stage writes under `details/` (`01_basic_raw.csv`): numbered in
/// collection order, so a listing reads in the order the stages ran.
pub fn raw_page_name(collection: &StageCollection) -> String {
    let name = match collection {
        StageCollection::Discovery => DISCOVERY_RAW,
        StageCollection::Custom { .. } => "01_custom_raw.csv",
        // Only in a batch's hidden folder: each kernel gets its stages' pages cut from it.
        StageCollection::Merged(stages) => {
            let names: Vec<&str> = stages.iter().map(|s| s.name()).collect();
            return format!("10_merged_{}_raw.csv", names.join("+"));
        }
        StageCollection::Named(stage) => match stage {
            Stage::Basic => "01_basic_raw.csv",
            Stage::SpeedOfLight => "02_speed_of_light_raw.csv",
            Stage::Memory => "03_memory_raw.csv",
            Stage::Compute => "04_compute_raw.csv",
            Stage::Occupancy => "05_occupancy_launch_raw.csv",
            Stage::Roofline => "06_roofline_raw.csv",
            Stage::Source => "07_source_raw.csv",
            Stage::Full => "08_full_raw.csv",
            // Added after the others: the numbers of existing profiles stay as they are.
            Stage::Counters => "09_counters_raw.csv",
        },
    };
    name.to_string()
}

/// `details/metrics_raw.csv`: every stage merged (derived, not an ncu page).
const METRICS_RAW: &str = "metrics_raw.csv";
/// `details/00_discovery_raw.csv`: the durations-only pass over every kernel.
const DISCOVERY_RAW: &str = "00_discovery_raw.csv";
/// `details/import.json`.
const IMPORT_RECORD: &str = "import.json";
/// The longest kernel part of a profile id, in characters.
pub const MAX_KERNEL_ID_LEN: usize = 64;
/// How many `<id>_N` suffixes [`ProfileDir::create_unique`] tries before giving up.
pub const MAX_COLLISION_SUFFIX: u32 = 1000;

/// The folder of saved baselines under the profiles root.
const BASELINES_DIR: &str = "baselines";

/// `<profiles root>/baselines`: saved baselines, `baselines/NAME/<kernel>/`.
pub fn baselines_root(profiles_root: &Path) -> PathBuf {
    profiles_root.join(BASELINES_DIR)
}

/// `<profiles root>/baselines/NAME/<kernel>/`: kernel `kernel` of the saved baseline
/// `name`. `name` is a checked baseline name (`compare::baseline::check_name`: a single
/// plain path component); the kernel name, which comes from the data, goes through the
/// sanitiser.
pub fn baseline_kernel_dir(profiles_root: &Path, name: &str, kernel: &str) -> PathBuf {
    baselines_root(profiles_root).join(name).join(sanitize_kernel_name(kernel))
}

/// `<profiles root>/.ptx-cache-<pid>`: NVRTC's output shared by the harness runs of one
/// invocation (`KPROF_PTX_CACHE`, see `kprof_harness::ptx_cache`), hidden beside the
/// profiles like the batches' folders, and removed when the invocation ends. The process
/// id keeps two invocations on one profiles root apart.
pub fn ptx_cache_dir(profiles_root: &Path) -> PathBuf {
    profiles_root.join(format!(".ptx-cache-{}", std::process::id()))
}

/// `<profiles root>/index.json`: every analysed profile, one row each.
pub fn index_json_path(profiles_root: &Path) -> PathBuf {
    profiles_root.join("index.json")
}

/// `<profiles root>/index.md`: the same as a table.
pub fn index_md_path(profiles_root: &Path) -> PathBuf {
    profiles_root.join("index.md")
}

/// What a saved baseline keeps of a profile, relative to the profile directory: what a
/// comparison reads. Raw CSVs stay in the profile.
pub const BASELINE_FILES: &[&str] = &[
    "profile-target.yaml",
    "run_manifest.yaml",
    "details/00_environment.txt",
    "details/metrics_summary.json",
    "details/bottleneck_decision.json",
    "details/source_hotspots.csv",
    "details/timing.json",
];

/// `details/<page>` of a stage's raw page, as messages and the manifest name it.
pub fn raw_page_rel(collection: &StageCollection) -> String {
    format!("details/{}", raw_page_name(collection))
}

/// The name of the profiles root under a workspace root.
pub const PROFILES_DIR: &str = "profile";

/// The profiles root of a workspace: `<workspace root>/profile`.
pub fn profiles_root(workspace_root: &Path) -> PathBuf {
    workspace_root.join(PROFILES_DIR)
}

/// Creates the profiles root (`<workspace root>/profile`) when it is missing. Returns
/// whether this call created it, so that the run that does can say so once: the folder
/// sits in the user's source tree. An existing directory is left as it is.
pub fn create_profiles_root(profiles_root: &Path) -> Result<bool, Failure> {
    match fs::create_dir(profiles_root) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists && profiles_root.is_dir() => Ok(false),
        Err(err) if err.kind() == io::ErrorKind::NotFound => create_dir_all(profiles_root).map(|()| true),
        Err(err) => Err(io_failure("cannot create directory", profiles_root, &err)),
    }
}

/// What a run says when it has created the profiles root: what the folder holds, and how
/// to keep it out of version control, or keep only the saved baselines a gate reads.
pub fn profiles_root_created_note(profiles_root: &Path) -> String {
    format!(
        "created {}: it holds this workspace's local profiles (and `{PROFILES_DIR}/{NCU_PATH_FILE}`); \
         add `{PROFILES_DIR}/` to .gitignore, or, if you gate on saved baselines, commit only \
         `{PROFILES_DIR}/{BASELINES_DIR}/` (.gitignore: `/{PROFILES_DIR}/*` and `!/{PROFILES_DIR}/{BASELINES_DIR}/`)",
        profiles_root.display()
    )
}

/// The one sanitiser: every path component kprof builds from data (kernel names from the
/// configuration or from ncu's CSVs, profile ids, the kernel folders of baselines) is made
/// by this function, so none can hold `/`, `..`, a leading `.` or a control character.
///
/// A kernel name reduced to `[A-Za-z0-9_-]`: other characters become `_`, runs of
/// `_` collapse, `_`/`-` are trimmed from both ends, the result is cut to
/// [`MAX_KERNEL_ID_LEN`] characters, and an empty result becomes `kernel`.
pub fn sanitize_kernel_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len().min(MAX_KERNEL_ID_LEN));
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    // Only ASCII remains, so every byte index is a char boundary.
    let trimmed = out.trim_matches(['_', '-']);
    let cut = trimmed.get(..MAX_KERNEL_ID_LEN).unwrap_or(trimmed).trim_end_matches(['_', '-']);
    if cut.is_empty() {
        "kernel".to_string()
    } else {
        cut.to_string()
    }
}

/// A profile id: `{sanitized_kernel}_{YYYYMMDD_HHMMSS}` (UTC).
pub fn profile_id(kernel: &str, now: SystemTime) -> String {
    format!("{}_{}", sanitize_kernel_name(kernel), UtcTimestamp::from_system_time(now).compact())
}

/// What an ncu page in `details/` is, by its file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageKind {
    /// A raw page (`--page raw`): a stage's (`03_memory_raw.csv`) or an imported one
    /// (`imported_01_raw.csv`); `label` is the name without number and suffix
    /// (`memory`, `imported_01`... as the stage names in `metrics_extracted.jsonl`).
    Raw {
        /// The stage that wrote it, for a stage's page.
        stage: Option<Stage>,
        /// The file name without its number prefix and `_raw.csv`.
        label: String,
    },
    /// A source page (`07_source_raw.csv`, `imported_source.csv`).
    Source,
    /// A details page with ncu's rule findings (`imported_details.csv`, `*_details.csv`).
    Details,
}

/// One ncu page of a profile directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageFile {
    /// What it is.
    pub kind: PageKind,
    /// Its path.
    pub path: PathBuf,
    /// Its path relative to the profile directory (`details/01_basic_raw.csv`), for messages.
    pub origin: String,
}

/// One profile's directory and the paths of what a run writes into it.
///
/// Only [`ProfileDir::create_unique`] and [`ProfileDir::create_explicit`] touch the
/// file system; [`ProfileDir::at`] and the path accessors are pure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileDir {
    dir: PathBuf,
    id: String,
    /// Where the directory will be, while it is built elsewhere (an import's staging).
    shown: Option<PathBuf>,
}

impl ProfileDir {
    /// Creates `<profiles_root>/<id>/` (or `<id>_2`, `<id>_3`, … when taken) and its
    /// `details/`. `profiles_root` itself is created when missing.
    pub fn create_unique(profiles_root: &Path, id: &str) -> Result<Self, Failure> {
        create_dir_all(profiles_root)?;
        for n in 1..=MAX_COLLISION_SUFFIX {
            let candidate = if n == 1 { id.to_string() } else { format!("{id}_{n}") };
            let dir = profiles_root.join(&candidate);
            match fs::create_dir(&dir) {
                Ok(()) => {
                    let profile = ProfileDir { dir, id: candidate, shown: None };
                    create_dir(&profile.details_dir())?;
                    return Ok(profile);
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(err) => return Err(io_failure("cannot create profile directory", &dir, &err)),
            }
        }
        Err(Failure::new(
            ExitCode::Filesystem,
            format!(
                "cannot create a profile directory for `{id}` in {}: \
                 `{id}` through `{id}_{MAX_COLLISION_SUFFIX}` all exist",
                profiles_root.display()
            ),
        )
        .help("move old profiles out of the way, or pass an output directory explicitly"))
    }

    /// Uses `dir`, which the user named, for a profile: it is created when it does not
    /// exist and accepted when it is an empty directory; anything else is refused and
    /// left untouched. The id is the directory's name.
    pub fn create_explicit(dir: &Path) -> Result<Self, Failure> {
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            create_dir_all(parent)?;
        }
        match fs::create_dir(dir) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                if !dir.is_dir() {
                    return Err(refuse(dir, "exists and is not a directory"));
                }
                let mut entries =
                    fs::read_dir(dir).map_err(|e| io_failure("cannot read output directory", dir, &e))?;
                if entries.next().is_some() {
                    return Err(refuse(dir, "is not empty"));
                }
            }
            Err(err) => return Err(io_failure("cannot create output directory", dir, &err)),
        }
        let id = dir.file_name().map_or_else(|| "profile".to_string(), |n| n.to_string_lossy().into_owned());
        let profile = ProfileDir { dir: dir.to_path_buf(), id, shown: None };
        // Claim the directory: if another run got here first, `details/` exists.
        match fs::create_dir(profile.details_dir()) {
            Ok(()) => Ok(profile),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                Err(refuse(dir, "is being used by another run"))
            }
            Err(err) => Err(io_failure("cannot create directory", &profile.details_dir(), &err)),
        }
    }

    /// An existing profile directory (for reports and comparisons); touches nothing.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        let id = dir.file_name().map_or_else(|| "profile".to_string(), |n| n.to_string_lossy().into_owned());
        ProfileDir { dir, id, shown: None }
    }

    /// A directory built at `staging` that will be renamed to `final_dir` when complete:
    /// its files are under `staging`, its id and [`ProfileDir::shown_path`] are the final
    /// ones, so what is written into it names where it will be.
    pub fn staged(staging: impl Into<PathBuf>, final_dir: &Path) -> Self {
        let id =
            final_dir.file_name().map_or_else(|| "profile".to_string(), |n| n.to_string_lossy().into_owned());
        ProfileDir { dir: staging.into(), id, shown: Some(final_dir.to_path_buf()) }
    }

    /// The path to name the directory by in what is written into it: [`ProfileDir::path`],
    /// or the final place of a directory still being built.
    pub fn shown_path(&self) -> &Path {
        self.shown.as_deref().unwrap_or(&self.dir)
    }

    /// The profile id: the directory's name.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The profile directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// `profile-target.yaml`: what was profiled and how.
    pub fn target_spec_path(&self) -> PathBuf {
        self.dir.join("profile-target.yaml")
    }

    /// `commands.sh`: the exact commands run, replayable.
    pub fn commands_script_path(&self) -> PathBuf {
        self.dir.join("commands.sh")
    }

    /// `run_manifest.yaml`: versions, times, exit statuses, produced files.
    pub fn run_manifest_path(&self) -> PathBuf {
        self.dir.join("run_manifest.yaml")
    }

    /// `final_report.md`.
    pub fn final_report_path(&self) -> PathBuf {
        self.dir.join("final_report.md")
    }

    /// `details/`: raw CSVs and extracted metrics.
    pub fn details_dir(&self) -> PathBuf {
        self.dir.join("details")
    }

    /// `details/00_environment.txt`.
    pub fn environment_path(&self) -> PathBuf {
        self.details_dir().join("00_environment.txt")
    }

    /// `details/00_discovery_raw.csv`, written only when discovery ran.
    pub fn discovery_raw_path(&self) -> PathBuf {
        self.details_dir().join(DISCOVERY_RAW)
    }

    /// `details/kernel_candidates.json`: the kernels a hint matched and the one chosen (and,
    /// in profiles made before the census, discovery's ranking).
    pub fn kernel_candidates_path(&self) -> PathBuf {
        self.details_dir().join("kernel_candidates.json")
    }

    /// `details/<NN>_<stage>_raw.superseded-<n>.log`: where a stage's page is kept when the
    /// stage runs again (with a fitted window or a narrower filter). Not a `.csv`, so the
    /// analysis never reads it as a page of the profile.
    pub fn superseded_page_rel(collection: &StageCollection, n: usize) -> String {
        let name = raw_page_name(collection);
        format!("details/{}.superseded-{n}.log", name.trim_end_matches(".csv"))
    }

    /// Moves a stage's page aside before the stage runs again (see
    /// [`ProfileDir::superseded_page_rel`]), never over an existing file; returns the new
    /// path relative to the profile directory, or `None` when the stage wrote no page.
    pub fn supersede_page(&self, collection: &StageCollection) -> Result<Option<String>, Failure> {
        let from = self.stage_raw_path(collection);
        if !from.exists() {
            return Ok(None);
        }
        for n in 1..=MAX_COLLISION_SUFFIX as usize {
            let rel = Self::superseded_page_rel(collection, n);
            let to = self.path().join(&rel);
            if to.exists() {
                continue;
            }
            fs::rename(&from, &to).map_err(|e| io_failure("cannot move aside", &from, &e))?;
            return Ok(Some(rel));
        }
        Err(Failure::new(ExitCode::Filesystem, format!("{} was superseded too often", from.display())))
    }

    /// `details/<NN>_<stage>_raw.csv`: where a stage's ncu writes its page.
    pub fn stage_raw_path(&self, collection: &StageCollection) -> PathBuf {
        self.details_dir().join(raw_page_name(collection))
    }

    /// `details/01_basic.ncu-rep`: basic's report, when the source page is imported from it.
    pub fn basic_report_path(&self) -> PathBuf {
        self.details_dir().join("01_basic.ncu-rep")
    }

    /// `details/metrics_raw.csv`.
    pub fn metrics_raw_path(&self) -> PathBuf {
        self.details_dir().join(METRICS_RAW)
    }

    /// `details/metrics_summary.json`.
    pub fn metrics_summary_path(&self) -> PathBuf {
        self.details_dir().join("metrics_summary.json")
    }

    /// `details/metrics_extracted.jsonl`.
    pub fn metrics_extracted_path(&self) -> PathBuf {
        self.details_dir().join("metrics_extracted.jsonl")
    }

    /// `details/source_hotspots.csv`.
    pub fn source_hotspots_path(&self) -> PathBuf {
        self.details_dir().join("source_hotspots.csv")
    }

    /// `details/timing.json`: the harness timing without ncu (`check`, `--timing-only`).
    pub fn timing_path(&self) -> PathBuf {
        self.details_dir().join("timing.json")
    }

    /// `details/bottleneck_decision.json`.
    pub fn bottleneck_decision_path(&self) -> PathBuf {
        self.details_dir().join("bottleneck_decision.json")
    }

    /// `comparison/`, created only when a comparison runs (see [`ProfileDir::ensure_dir`]).
    pub fn comparison_dir(&self) -> PathBuf {
        self.dir.join("comparison")
    }

    /// `comparison/regression_report.md`.
    pub fn regression_report_path(&self) -> PathBuf {
        self.comparison_dir().join("regression_report.md")
    }

    /// `visual/`, written by every analysis (`profile_summary.png`).
    pub fn visual_dir(&self) -> PathBuf {
        self.dir.join("visual")
    }

    /// `visual/profile_summary.png`.
    pub fn visual_summary_path(&self) -> PathBuf {
        self.visual_dir().join("profile_summary.png")
    }

    /// Whether an analysis or a timing was made here (`details/metrics_summary.json` or
    /// `details/timing.json`): a profile a comparison can read.
    pub fn has_results(&self) -> bool {
        self.metrics_summary_path().is_file() || self.timing_path().is_file()
    }

    /// `path` relative to this directory, for messages (`visual/profile_summary.png`).
    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.dir).unwrap_or(path).display().to_string()
    }

    /// `details/import.json`: what an import was made from.
    pub fn import_record_path(&self) -> PathBuf {
        self.details_dir().join(IMPORT_RECORD)
    }

    /// `comparison/regression.json`.
    pub fn regression_json_path(&self) -> PathBuf {
        self.comparison_dir().join("regression.json")
    }

    /// `comparison/comparison.png`.
    pub fn comparison_png_path(&self) -> PathBuf {
        self.comparison_dir().join("comparison.png")
    }

    /// The name a copied raw export gets under `details/` (`imported_01_raw.csv`).
    pub fn imported_raw_path(&self, n: usize) -> PathBuf {
        self.details_dir().join(format!("imported_{n:02}_raw.csv"))
    }

    /// `details/imported_source.csv`.
    pub fn imported_source_path(&self) -> PathBuf {
        self.details_dir().join("imported_source.csv")
    }

    /// `details/imported_details.csv`.
    pub fn imported_details_path(&self) -> PathBuf {
        self.details_dir().join("imported_details.csv")
    }

    /// The ncu pages in `details/` (raw, source and details pages, stage outputs and
    /// imports), in file-name order; derived files and the discovery pass are not pages
    /// of the profile.
    pub fn pages(&self) -> Result<Vec<PageFile>, Failure> {
        let details = self.details_dir();
        let mut names: Vec<String> = fs::read_dir(&details)
            .map_err(|e| io_failure("cannot read", &details, &e))?
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().map(String::from))
            .filter(|n| n.ends_with(".csv"))
            .collect();
        names.sort();
        let mut out = Vec::new();
        for name in names {
            let kind = if name == "imported_details.csv" || name.ends_with("_details.csv") {
                PageKind::Details
            } else if name == raw_page_name(&StageCollection::Named(Stage::Source))
                || name == "imported_source.csv"
            {
                PageKind::Source
            } else if name.ends_with("_raw.csv") && name != METRICS_RAW && name != DISCOVERY_RAW {
                let label = name
                    .trim_end_matches("_raw.csv")
                    .trim_start_matches(|c: char| c.is_ascii_digit() || c == '_')
                    .to_string();
                let stage =
                    Stage::ALL.into_iter().find(|s| raw_page_name(&StageCollection::Named(*s)) == name);
                PageKind::Raw { stage, label }
            } else {
                continue;
            };
            out.push(PageFile { kind, path: details.join(&name), origin: format!("details/{name}") });
        }
        Ok(out)
    }

    /// Creates an optional subdirectory (such as [`ProfileDir::comparison_dir`]) when
    /// missing; an existing one is kept as it is.
    pub fn ensure_dir(&self, sub_dir: &Path) -> Result<(), Failure> {
        super::fs::refuse_linked_folder(sub_dir).and_then(|()| create_dir_all(sub_dir))
    }
}

/// Creates `<profiles_root>/ncu_path` when it is absent, naming `found` (the ncu this run
/// located), else [`DEFAULT_NCU_PATH`], and leaves an existing file alone. Returns the
/// file's path. Called only once the machine passed its checks (or for a dry run), so that
/// a run that cannot profile writes nothing.
pub fn ensure_ncu_path(profiles_root: &Path, found: Option<&Path>) -> Result<PathBuf, Failure> {
    create_dir_all(profiles_root)?;
    let file = profiles_root.join(NCU_PATH_FILE);
    let named = found.map(|p| p.display().to_string()).unwrap_or_else(|| DEFAULT_NCU_PATH.to_string());
    match fs::OpenOptions::new().write(true).create_new(true).open(&file) {
        Ok(mut handle) => {
            handle
                .write_all(format!("{named}\n").as_bytes())
                .map_err(|e| io_failure("cannot write", &file, &e))?;
            Ok(file)
        }
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(file),
        Err(err) => Err(io_failure("cannot create", &file, &err)),
    }
}

/// The ncu binary named in `<profiles_root>/ncu_path`: its one non-blank line, trimmed.
pub fn read_ncu_path(profiles_root: &Path) -> Result<PathBuf, Failure> {
    let file = profiles_root.join(NCU_PATH_FILE);
    let text = fs::read_to_string(&file).map_err(|e| {
        io_failure("cannot read", &file, &e).help(format!(
            "sudo mode runs the ncu named in this file; \
             create it: printf '%s\\n' {DEFAULT_NCU_PATH} > {}",
            file.display()
        ))
    })?;
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    match lines.as_slice() {
        [path] => Ok(PathBuf::from(path)),
        found => {
            let problem =
                if found.is_empty() { "is empty".to_string() } else { format!("has {} lines", found.len()) };
            Err(Failure::new(
                ExitCode::Config,
                format!("{} {problem}; it must hold exactly one path to ncu", file.display()),
            )
            .help(format!(
                "write the path your sudoers NOPASSWD rule allows: \
                 printf '%s\\n' /absolute/path/to/ncu > {}",
                file.display()
            )))
        }
    }
}

pub(super) fn refuse(dir: &Path, why: &str) -> Failure {
    Failure::new(
        ExitCode::Filesystem,
        format!("output directory {} {why}; profiles are never written over existing files", dir.display()),
    )
    .help(
        "pass a directory that does not exist yet, \
         or leave out the output directory to get a fresh `profile/<id>/`",
    )
}

fn create_dir(dir: &Path) -> Result<(), Failure> {
    fs::create_dir(dir).map_err(|e| io_failure("cannot create directory", dir, &e))
}

pub(super) fn create_dir_all(dir: &Path) -> Result<(), Failure> {
    fs::create_dir_all(dir).map_err(|e| io_failure("cannot create directory", dir, &e))
}

pub(super) fn io_failure(what: &str, path: &Path, err: &io::Error) -> Failure {
    Failure::new(ExitCode::Filesystem, format!("{what} {}: {err}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
    }

    #[test]
    fn stage_pages_have_distinct_names() {
        let mut files = std::collections::HashSet::new();
        for s in Stage::ALL {
            assert!(files.insert(raw_page_name(&StageCollection::Named(s))));
        }
        assert!(files.insert(raw_page_name(&StageCollection::Discovery)));
    }

    #[test]
    fn sanitizes_kernel_names() {
        for (name, expected) in [
            ("hgemm_byzj_v0", "hgemm_byzj_v0"),
            ("void hgemm<128, 64>(float*)", "void_hgemm_128_64_float"),
            ("ns::kernel", "ns_kernel"),
            ("__hgemm__", "hgemm"),
            ("-x-", "x"),
            ("a  b", "a_b"),
            ("a__b", "a_b"),
            ("gemm-v2", "gemm-v2"),
            ("héllo", "h_llo"),
            ("../../etc", "etc"),
            ("", "kernel"),
            ("***", "kernel"),
            ("_-_", "kernel"),
        ] {
            assert_eq!(sanitize_kernel_name(name), expected, "for {name:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn the_sanitiser_always_makes_one_plain_component(name in "\\PC*|[./\\\\\n\r\0a-z]{0,12}") {
            let out = sanitize_kernel_name(&name);
            let mut parts = Path::new(&out).components();
            proptest::prop_assert!(matches!(parts.next(), Some(std::path::Component::Normal(_))));
            proptest::prop_assert!(parts.next().is_none());
            proptest::prop_assert!(out.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
            proptest::prop_assert!(!out.starts_with(['-', '_']) && out.len() <= MAX_KERNEL_ID_LEN);
        }
    }

    #[test]
    fn kernel_part_is_bounded() {
        let long = "k".repeat(200);
        assert_eq!(sanitize_kernel_name(&long).len(), MAX_KERNEL_ID_LEN);
        // A cut that lands after a separator does not leave it dangling.
        let name = format!("{}_tail", "a".repeat(MAX_KERNEL_ID_LEN - 1));
        assert_eq!(sanitize_kernel_name(&name), "a".repeat(MAX_KERNEL_ID_LEN - 1));
        let multibyte = "é".repeat(100);
        assert_eq!(sanitize_kernel_name(&multibyte), "kernel");
        let mixed = format!("{}x", "aé".repeat(40));
        assert!(sanitize_kernel_name(&mixed).len() <= MAX_KERNEL_ID_LEN);
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        assert_eq!(civil_from_days(10_957), (2000, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(20_588), (2026, 5, 15));
        assert_eq!(civil_from_days(-719_468), (0, 3, 1));
        assert_eq!(civil_from_days(2_932_896), (9999, 12, 31));
    }

    #[test]
    fn timestamps() {
        let t = UtcTimestamp::from_system_time(at(1_778_846_400));
        assert_eq!(t.compact(), "20260515_120000");
        assert_eq!(t.to_string(), "2026-05-15T12:00:00Z");
        assert_eq!(UtcTimestamp::from_unix_seconds(951_825_599).to_string(), "2000-02-29T11:59:59Z");
        assert_eq!(UtcTimestamp::from_unix_seconds(-1).to_string(), "1969-12-31T23:59:59Z");
        let just_before = SystemTime::UNIX_EPOCH - Duration::from_millis(500);
        assert_eq!(UtcTimestamp::from_system_time(just_before).compact(), "19691231_235959");
        assert_eq!(profile_id("hgemm<float>", at(1_778_846_400)), "hgemm_float_20260515_120000");
    }

    #[test]
    fn same_second_collisions_get_suffixes() {
        let tmp = tempfile::tempdir().unwrap();
        let root = profiles_root(tmp.path());
        let id = profile_id("hgemm", at(1_778_846_400));
        let first = ProfileDir::create_unique(&root, &id).unwrap();
        let second = ProfileDir::create_unique(&root, &id).unwrap();
        let third = ProfileDir::create_unique(&root, &id).unwrap();
        assert_eq!(first.id(), "hgemm_20260515_120000");
        assert_eq!(second.id(), "hgemm_20260515_120000_2");
        assert_eq!(third.id(), "hgemm_20260515_120000_3");
        assert!(second.details_dir().is_dir());
        assert_eq!(second.path(), root.join("hgemm_20260515_120000_2"));
        assert_eq!(second.target_spec_path(), second.path().join("profile-target.yaml"));
        assert_eq!(
            second.stage_raw_path(&StageCollection::Named(Stage::Memory)),
            second.path().join("details/03_memory_raw.csv")
        );
        assert!(!second.comparison_dir().exists() && !second.visual_dir().exists());
        second.ensure_dir(&second.visual_dir()).unwrap();
        assert!(second.visual_dir().is_dir());
    }

    #[test]
    fn collisions_are_bounded() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir(tmp.path().join("k")).unwrap();
        for n in 2..=MAX_COLLISION_SUFFIX {
            fs::create_dir(tmp.path().join(format!("k_{n}"))).unwrap();
        }
        let err = ProfileDir::create_unique(tmp.path(), "k").unwrap_err();
        assert!(err.message.contains("`k` through `k_1000` all exist"), "{err}");
    }

    #[test]
    fn explicit_dirs_must_be_new_or_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let fresh = tmp.path().join("nested/mine");
        let profile = ProfileDir::create_explicit(&fresh).unwrap();
        assert_eq!(profile.id(), "mine");
        assert!(profile.details_dir().is_dir());

        let empty = tmp.path().join("empty");
        fs::create_dir(&empty).unwrap();
        assert!(ProfileDir::create_explicit(&empty).is_ok());
        // Now claimed (details/ exists): a second run must not share it.
        let err = ProfileDir::create_explicit(&empty).unwrap_err();
        assert!(err.message.contains("is not empty"), "{err}");

        let used = tmp.path().join("used");
        fs::create_dir(&used).unwrap();
        fs::write(used.join("notes.txt"), "keep me").unwrap();
        let err = ProfileDir::create_explicit(&used).unwrap_err();
        assert_eq!(
            err.message,
            format!(
                "output directory {} is not empty; profiles are never written over existing files",
                used.display()
            )
        );
        assert!(err.help[0].contains("does not exist yet"));
        assert_eq!(fs::read_to_string(used.join("notes.txt")).unwrap(), "keep me");
        assert_eq!(fs::read_dir(&used).unwrap().count(), 1);

        let file = tmp.path().join("file");
        fs::write(&file, "x").unwrap();
        assert!(ProfileDir::create_explicit(&file).unwrap_err().message.contains("is not a directory"));
        assert_eq!(fs::read_to_string(&file).unwrap(), "x");
    }

    #[test]
    fn ncu_path_names_the_ncu_the_run_found() {
        let tmp = tempfile::tempdir().unwrap();
        let root = profiles_root(tmp.path());
        ensure_ncu_path(&root, Some(Path::new("/opt/nsight/ncu"))).unwrap();
        assert_eq!(read_ncu_path(&root).unwrap(), Path::new("/opt/nsight/ncu"));
    }

    #[test]
    fn ncu_path_is_created_once_and_never_overwritten() {
        let tmp = tempfile::tempdir().unwrap();
        let root = profiles_root(tmp.path());
        let file = ensure_ncu_path(&root, None).unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "/usr/local/cuda/bin/ncu\n");
        assert_eq!(read_ncu_path(&root).unwrap(), Path::new(DEFAULT_NCU_PATH));

        fs::write(&file, "  /opt/cuda/bin/ncu  \n\n").unwrap();
        ensure_ncu_path(&root, Some(Path::new("/elsewhere/ncu"))).unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "  /opt/cuda/bin/ncu  \n\n");
        assert_eq!(read_ncu_path(&root).unwrap(), Path::new("/opt/cuda/bin/ncu"));

        fs::write(&file, "\n").unwrap();
        let err = read_ncu_path(&root).unwrap_err();
        assert_eq!(err.code, ExitCode::Config);
        assert!(err.message.contains("ncu_path is empty"), "{err}");
        fs::write(&file, "/a/ncu\n/b/ncu\n").unwrap();
        assert!(read_ncu_path(&root).unwrap_err().message.contains("ncu_path has 2 lines"));
        let missing = read_ncu_path(&tmp.path().join("nowhere")).unwrap_err();
        assert!(
            missing.message.starts_with("cannot read") && missing.help[0].contains("printf"),
            "{missing}"
        );
    }

    #[test]
    fn the_profiles_root_is_created_once_and_says_so() {
        let tmp = tempfile::tempdir().unwrap();
        let root = profiles_root(tmp.path());
        assert!(create_profiles_root(&root).unwrap());
        assert!(!create_profiles_root(&root).unwrap());
        let nested = tmp.path().join("a/b/profile");
        assert!(create_profiles_root(&nested).unwrap() && nested.is_dir());
        let file = tmp.path().join("plain");
        fs::write(&file, "x").unwrap();
        assert_eq!(create_profiles_root(&file).unwrap_err().code, ExitCode::Filesystem);
        let note = profiles_root_created_note(&root);
        assert!(note.contains(&format!("created {}", root.display())), "{note}");
        assert!(
            note.contains("add `profile/` to .gitignore") && note.contains("`profile/baselines/`"),
            "{note}"
        );
    }
}
