//! The profile directory, `<profiles root>/<id>/`: every path in it, and how it is made.
//!
//! A profile is evidence, so nothing here ever overwrites or deletes. Each run gets a
//! fresh directory named by [`profile_id`](super::names::profile_id), created with
//! [`std::fs::create_dir`] on the final component: that call fails atomically when the
//! directory exists, so two runs started in the same second (even concurrently) get
//! `<id>` and `<id>_2` rather than sharing one. A directory the user names explicitly
//! is accepted only while it is empty, and claimed by atomically creating `details/`
//! in it. The profiles root around it is [`super::root`]'s; names made from data,
//! [`super::names`]'.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{ExitCode, Failure};
use crate::model::stage::Stage;
use crate::ncu::StageCollection;

use super::names::MAX_COLLISION_SUFFIX;

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
/// `details/census_trace/`: the census tracer's files.
const CENSUS_TRACE: &str = "census_trace";
/// `details/import.json`.
const IMPORT_RECORD: &str = "import.json";

/// `details/<page>` of a stage's raw page, as messages and the manifest name it.
pub fn raw_page_rel(collection: &StageCollection) -> String {
    format!("details/{}", raw_page_name(collection))
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

    /// `details/census_trace/`: where the census tracer writes one `<pid>.tsv` per process
    /// of the traced run (a census taken by tracing instead of ncu's pass).
    pub fn census_trace_dir(&self) -> PathBuf {
        self.details_dir().join(CENSUS_TRACE)
    }

    /// [`Self::census_trace_dir`] relative to the profile directory, as the manifest names it.
    pub fn census_trace_rel() -> String {
        format!("details/{CENSUS_TRACE}")
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
    use crate::profile::names::profile_id;
    use crate::profile::root::profiles_root;
    use std::time::{Duration, SystemTime};

    #[test]
    fn stage_pages_have_distinct_names() {
        let mut files = std::collections::HashSet::new();
        for s in Stage::ALL {
            assert!(files.insert(raw_page_name(&StageCollection::Named(s))));
        }
        assert!(files.insert(raw_page_name(&StageCollection::Discovery)));
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

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
    }
}
