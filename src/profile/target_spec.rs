//! `profile-target.yaml`: what a profile is of and how it was taken, as typed structs.
//!
//! This file is the reproducible record at the top of every profile directory, and
//! users may edit it and run it again, so it is read as strictly as it is written:
//! every struct denies unknown fields (a misspelt `launch_cuont` is an error, not a
//! silently ignored default), enums accept only their documented spellings, and
//! `privilege.password_storage` has exactly one accepted value, `forbidden`: kprof
//! never stores, reads or pipes a sudo password, and a file asking for anything else
//! is refused. Fields serialize in declaration order, so the YAML is stable enough to
//! diff; `schema_version` guards the format itself.
//!
//! ```yaml
//! schema_version: 1
//! kprof_version: 0.1.0
//! target:
//!   runtime: harness                 # harness | cuda | command | python-triton
//!   executable: /ws/target/kprof/release/deps/hgemm-0123abcd
//!   args: [--bench]
//!   cwd: /ws
//!   env: { NO_GRAPH: '1' }
//!   package: gemm                    # cargo targets only
//!   cargo_target: { kind: bench, name: hgemm }
//!   build_profile: release
//! kernel:
//!   name: hgemm
//!   filter_mode: regex               # regex | exact | kernel-id | nvtx
//!   filter: .*hgemm.*
//!   allow_discovery_fallback: true
//!   case: hgemm                      # harness case regex, harness runtime only
//! launch:
//!   launch_skip: 0
//!   launch_count: 1
//!   profile_from_start: false
//!   window: harness-range            # harness-range | launch-skip-count
//! privilege:
//!   mode: none                       # none | full_sudo
//!   password_storage: forbidden      # the only accepted value
//! profiling:
//!   ncu_bin: ncu                     # non-sudo only; full_sudo reads profile/ncu_path
//!   stages: auto                     # auto | all | [basic, memory, ...]
//!   clock_control: none              # none | base
//!   set: detailed                    # optional: an ncu section set
//!   sections: [LaunchStats]          # optional: extra ncu sections
//! outputs: { final_report: true, metrics_summary: true, source_hotspots: true,
//!            bottleneck_decision: false, comparison: false, visual: false }
//! notes:
//!   unsupported_or_deferred_requirements: []
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{ExitCode, Failure};
pub use crate::model::filter::FilterMode;
use crate::model::kinds::{CargoTargetKind, ClockControl, LaunchWindow, Privilege, Runtime};
use crate::model::stage::StageSelection;

mod kernel;
pub use kernel::KernelSection;

/// The file name inside a profile directory.
pub const FILE_NAME: &str = "profile-target.yaml";

/// The whole of `profile-target.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    /// The format version; only [`SchemaVersion::CURRENT`] is read.
    pub schema_version: SchemaVersion,
    /// The cargo-kprof version that wrote the file.
    pub kprof_version: String,
    /// The program to run.
    pub target: TargetSection,
    /// Which kernel to profile.
    pub kernel: KernelSection,
    /// Which launches of it.
    #[serde(with = "launch_yaml")]
    pub launch: LaunchWindow,
    /// How ncu gets counter access.
    #[serde(default)]
    pub privilege: PrivilegeSection,
    /// What ncu collects.
    #[serde(default)]
    pub profiling: ProfilingSection,
    /// Which outputs the run produces.
    #[serde(default)]
    pub outputs: OutputsSection,
    /// Requests recorded but not acted on.
    #[serde(default)]
    pub notes: NotesSection,
}

/// The version of the `profile-target.yaml` format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "u32", into = "u32")]
pub struct SchemaVersion(u32);

impl SchemaVersion {
    /// The version this crate writes and reads.
    pub const CURRENT: SchemaVersion = SchemaVersion(1);

    /// The version number.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl Default for SchemaVersion {
    fn default() -> Self {
        Self::CURRENT
    }
}

impl TryFrom<u32> for SchemaVersion {
    type Error = String;
    fn try_from(version: u32) -> Result<Self, Self::Error> {
        if version == Self::CURRENT.0 {
            Ok(SchemaVersion(version))
        } else {
            Err(format!(
                "unsupported schema_version {version}; this cargo-kprof reads schema_version {}",
                Self::CURRENT.0
            ))
        }
    }
}

impl From<SchemaVersion> for u32 {
    fn from(version: SchemaVersion) -> u32 {
        version.0
    }
}

/// `target`: the program ncu runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSection {
    /// How the program launches the kernel.
    pub runtime: Runtime,
    /// The program: a built artifact's path, or the first word of a command.
    pub executable: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// The directory it runs in.
    #[serde(default = "current_dir")]
    pub cwd: PathBuf,
    /// Environment variables set for it (on top of the inherited environment).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The cargo package the target belongs to, for cargo targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// The cargo target that was built, for cargo targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cargo_target: Option<CargoTarget>,
    /// The cargo profile it was built with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_profile: Option<String>,
}

fn current_dir() -> PathBuf {
    PathBuf::from(".")
}

/// A cargo target: kind and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CargoTarget {
    /// bench, example or bin.
    pub kind: CargoTargetKind,
    /// The target's name.
    pub name: String,
}

/// `launch` as written: which launches of the kernel are profiled. In memory it is a
/// [`LaunchWindow`]; the file spells it out (`profile_from_start` follows from the window).
mod launch_yaml {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::model::kinds::LaunchWindow;

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Launch {
        launch_skip: u32,
        launch_count: u32,
        profile_from_start: bool,
        window: Window,
    }

    #[derive(Serialize, Deserialize, PartialEq)]
    #[serde(rename_all = "kebab-case")]
    enum Window {
        HarnessRange,
        LaunchSkipCount,
    }

    pub fn serialize<S: Serializer>(w: &LaunchWindow, s: S) -> Result<S::Ok, S::Error> {
        match *w {
            LaunchWindow::HarnessRange { launch_count } => Launch {
                launch_skip: 0,
                launch_count,
                profile_from_start: false,
                window: Window::HarnessRange,
            },
            LaunchWindow::SkipCount { launch_skip, launch_count } => Launch {
                launch_skip,
                launch_count,
                profile_from_start: true,
                window: Window::LaunchSkipCount,
            },
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<LaunchWindow, D::Error> {
        let l = Launch::deserialize(d)?;
        let bad = |what: &str| serde::de::Error::custom(what);
        match l.window {
            Window::HarnessRange if l.launch_skip != 0 || l.profile_from_start => {
                Err(bad("window harness-range profiles the harness' own range: launch_skip must be 0 and \
                 profile_from_start false"))
            }
            Window::HarnessRange => Ok(LaunchWindow::HarnessRange { launch_count: l.launch_count }),
            Window::LaunchSkipCount if !l.profile_from_start => Err(bad(
                "window launch-skip-count counts launches from the start: profile_from_start must be true",
            )),
            Window::LaunchSkipCount => {
                Ok(LaunchWindow::SkipCount { launch_skip: l.launch_skip, launch_count: l.launch_count })
            }
        }
    }
}

/// `privilege.mode` as written: `none` or `full_sudo`.
mod privilege_mode {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::model::kinds::Privilege;

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        None,
        FullSudo,
    }

    pub fn serialize<S: Serializer>(p: &Privilege, s: S) -> Result<S::Ok, S::Error> {
        match p {
            Privilege::None => Mode::None,
            Privilege::Sudo => Mode::FullSudo,
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Privilege, D::Error> {
        Ok(match Mode::deserialize(d)? {
            Mode::None => Privilege::None,
            Mode::FullSudo => Privilege::Sudo,
        })
    }
}

/// `privilege`: how ncu gets access to the performance counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivilegeSection {
    /// Plain (`none`), or through `sudo -n` on the path in `profile/ncu_path` (`full_sudo`).
    #[serde(with = "privilege_mode")]
    pub mode: Privilege,
    /// Always `forbidden`.
    #[serde(default)]
    pub password_storage: PasswordStorage,
}

/// Where a sudo password may be stored: nowhere. The only value is `forbidden`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PasswordStorage {
    /// Passwords are never stored, read, printed or piped.
    #[default]
    Forbidden,
}

/// `profiling`: what ncu collects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfilingSection {
    /// The ncu to run without sudo; sudo mode reads `profile/ncu_path` instead.
    #[serde(default = "default_ncu_bin")]
    pub ncu_bin: String,
    /// The stages to collect.
    #[serde(default, with = "stage_selection_yaml")]
    pub stages: StageSelection,
    /// ncu's `--clock-control`.
    #[serde(default = "default_clock_control")]
    pub clock_control: ClockControl,
    /// An ncu section set (`--set`), when one was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<String>,
    /// Extra ncu sections (`--section`), when asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sections: Vec<String>,
}

fn default_ncu_bin() -> String {
    "ncu".to_string()
}

fn default_clock_control() -> ClockControl {
    ClockControl::None
}

impl Default for ProfilingSection {
    fn default() -> Self {
        ProfilingSection {
            ncu_bin: default_ncu_bin(),
            stages: StageSelection::Auto,
            clock_control: default_clock_control(),
            set: None,
            sections: Vec::new(),
        }
    }
}

/// `outputs`: which optional outputs the run produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputsSection {
    /// `final_report.md`.
    pub final_report: bool,
    /// `details/metrics_summary.json`.
    pub metrics_summary: bool,
    /// `details/source_hotspots.csv`.
    pub source_hotspots: bool,
    /// `details/bottleneck_decision.json`.
    pub bottleneck_decision: bool,
    /// `comparison/regression_report.md`.
    pub comparison: bool,
    /// `visual/profile_summary.png`.
    pub visual: bool,
}

impl Default for OutputsSection {
    /// The report, the metrics summary and hotspots; the optional engines off.
    fn default() -> Self {
        OutputsSection {
            final_report: true,
            metrics_summary: true,
            source_hotspots: true,
            bottleneck_decision: false,
            comparison: false,
            visual: false,
        }
    }
}

/// `notes`: what was asked for but is not done.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotesSection {
    /// Requests out of scope or not implemented, recorded for the report.
    #[serde(default)]
    pub unsupported_or_deferred_requirements: Vec<String>,
}

impl TargetSpec {
    /// The YAML text of the file.
    pub fn to_yaml_string(&self) -> Result<String, Failure> {
        serde_yaml::to_string(self)
            .map_err(|err| Failure::new(ExitCode::Failure, format!("cannot render {FILE_NAME}: {err}")))
    }

    /// Parses and validates YAML text; errors name `profile-target.yaml`.
    pub fn from_yaml_str(text: &str) -> Result<Self, Failure> {
        Self::parse(text, FILE_NAME)
    }

    /// Reads and validates the file at `path`; errors name the path.
    pub fn read_from(path: &Path) -> Result<Self, Failure> {
        let text = std::fs::read_to_string(path).map_err(|err| {
            Failure::new(ExitCode::Filesystem, format!("cannot read {}: {err}", path.display()))
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Writes the YAML to `path`.
    pub fn write_to(&self, path: &Path) -> Result<(), Failure> {
        let text = self.to_yaml_string()?;
        std::fs::write(path, text).map_err(|err| {
            Failure::new(ExitCode::Filesystem, format!("cannot write {}: {err}", path.display()))
        })
    }

    /// The checks the types cannot express.
    pub fn validate(&self) -> Result<(), String> {
        if self.target.executable.trim().is_empty() {
            return Err("target.executable must not be empty".to_string());
        }
        if self.kernel.name.trim().is_empty() {
            return Err("kernel.name must not be empty".to_string());
        }
        if self.kernel.filter.pattern.trim().is_empty() {
            return Err("kernel.filter must not be empty".to_string());
        }
        if self.launch.launch_count() == 0 {
            return Err("launch.launch_count must be at least 1".to_string());
        }
        Ok(())
    }

    fn parse(text: &str, origin: &str) -> Result<Self, Failure> {
        let spec: TargetSpec = serde_yaml::from_str(text).map_err(|err| {
            let message = err.to_string();
            let mut failure = Failure::new(ExitCode::Config, format!("invalid {origin}: {message}"));
            if message.contains("password_storage") {
                failure = failure.help(
                    "cargo kprof never stores sudo passwords: \
                     `password_storage: forbidden` is the only value; for counter access \
                     configure a NOPASSWD sudoers rule for the ncu named in profile/ncu_path",
                );
            } else if message.contains("kernel.filter `") {
                failure = failure.help(format!(
                    "write a valid regex as `filter` under `kernel` in {FILE_NAME} (escape \
                     metacharacters, e.g. `gemm\\(`), or profile the kernel again to write it afresh"
                ));
            } else if message.contains("unknown field") {
                failure = failure.help(
                    "fields cargo kprof does not know are refused so that typos are not ignored; \
                     check the spelling",
                );
            }
            failure
        })?;
        spec.validate()
            .map_err(|problem| Failure::new(ExitCode::Config, format!("invalid {origin}: {problem}")))?;
        Ok(spec)
    }
}

/// `stages` in YAML: `auto`, `all`, or a list of stage names (a comma string is read too).
mod stage_selection_yaml {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::model::stage::StageSelection;

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written {
        Word(String),
        List(Vec<String>),
    }

    pub fn serialize<S: Serializer>(selection: &StageSelection, serializer: S) -> Result<S::Ok, S::Error> {
        match selection {
            StageSelection::List(stages) => {
                let names: Vec<&str> = stages.iter().map(|s| s.name()).collect();
                names.serialize(serializer)
            }
            word => serializer.serialize_str(&word.to_string()),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<StageSelection, D::Error> {
        let parsed = match Written::deserialize(deserializer)? {
            Written::Word(text) => StageSelection::parse_str(&text),
            Written::List(names) => StageSelection::from_names(names.iter().map(String::as_str)),
        };
        parsed.map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::filter::{KernelFilter, KernelHint};
    use crate::model::stage::Stage;

    fn sample() -> TargetSpec {
        TargetSpec {
            schema_version: SchemaVersion::CURRENT,
            kprof_version: "0.1.0".to_string(),
            target: TargetSection {
                runtime: Runtime::Harness,
                executable: "/ws/target/kprof/release/deps/hgemm-0123abcd".to_string(),
                args: vec!["--bench".to_string()],
                cwd: PathBuf::from("/ws"),
                env: BTreeMap::from([("NO_GRAPH".to_string(), "1".to_string())]),
                package: Some("gemm".to_string()),
                cargo_target: Some(CargoTarget { kind: CargoTargetKind::Bench, name: "hgemm".to_string() }),
                build_profile: Some("release".to_string()),
            },
            kernel: KernelSection::from_hint(&KernelHint::parse("hgemm")),
            launch: LaunchWindow::HarnessRange { launch_count: 1 },
            privilege: PrivilegeSection::default(),
            profiling: ProfilingSection {
                stages: StageSelection::List(vec![Stage::Basic, Stage::SpeedOfLight]),
                set: Some("detailed".to_string()),
                ..ProfilingSection::default()
            },
            outputs: OutputsSection { visual: true, ..OutputsSection::default() },
            notes: NotesSection {
                unsupported_or_deferred_requirements: vec!["timeline analysis".to_string()],
            },
        }
    }

    #[test]
    fn round_trips() {
        let spec = sample();
        let yaml = spec.to_yaml_string().unwrap();
        assert_eq!(TargetSpec::from_yaml_str(&yaml).unwrap(), spec);

        let mut other = sample();
        other.target.runtime = Runtime::PythonTriton;
        other.kernel.filter = KernelFilter::kernel_id(other.kernel.filter.pattern.clone());
        other.kernel.case = Some("hgemm_.*".to_string());
        other.launch = LaunchWindow::SkipCount { launch_skip: 5, launch_count: 3 };
        other.privilege.mode = Privilege::Sudo;
        other.profiling.stages = StageSelection::All;
        other.profiling.clock_control = ClockControl::None;
        other.profiling.sections = vec!["LaunchStats".to_string()];
        other.target.package = None;
        other.target.cargo_target = None;
        let yaml = other.to_yaml_string().unwrap();
        assert_eq!(TargetSpec::from_yaml_str(&yaml).unwrap(), other);
        assert!(yaml.contains("runtime: python-triton"), "{yaml}");
        assert!(yaml.contains("filter_mode: kernel-id"), "{yaml}");
        assert!(yaml.contains("window: launch-skip-count"), "{yaml}");
        assert!(yaml.contains("mode: full_sudo"), "{yaml}");
        assert!(yaml.contains("stages: all"), "{yaml}");
        assert!(!yaml.contains("cargo_target"), "{yaml}");
    }

    #[test]
    fn kernel_section_is_golden() {
        let kernel_section = "
kernel:
  name: hgemm
  filter_mode: regex
  filter: .*hgemm.*
  allow_discovery_fallback: true
launch:
";
        let yaml = sample().to_yaml_string().unwrap();
        assert!(yaml.contains(kernel_section), "{yaml}");
        let mut with_case = sample();
        with_case.kernel.case = Some("hgemm_naive".to_string());
        let yaml = with_case.to_yaml_string().unwrap();
        assert!(yaml.contains("  allow_discovery_fallback: true\n  case: hgemm_naive\nlaunch:\n"), "{yaml}");
    }

    #[test]
    fn whole_file_is_golden() {
        let expected = "\
schema_version: 1
kprof_version: 0.1.0
target:
  runtime: harness
  executable: /ws/target/kprof/release/deps/hgemm-0123abcd
  args:
  - --bench
  cwd: /ws
  env:
    NO_GRAPH: '1'
  package: gemm
  cargo_target:
    kind: bench
    name: hgemm
  build_profile: release
kernel:
  name: hgemm
  filter_mode: regex
  filter: .*hgemm.*
  allow_discovery_fallback: true
launch:
  launch_skip: 0
  launch_count: 1
  profile_from_start: false
  window: harness-range
privilege:
  mode: none
  password_storage: forbidden
profiling:
  ncu_bin: ncu
  stages:
  - basic
  - speed-of-light
  clock_control: none
  set: detailed
outputs:
  final_report: true
  metrics_summary: true
  source_hotspots: true
  bottleneck_decision: false
  comparison: false
  visual: true
notes:
  unsupported_or_deferred_requirements:
  - timeline analysis
";
        assert_eq!(sample().to_yaml_string().unwrap(), expected);
    }

    #[test]
    fn minimal_hand_written_file_gets_defaults() {
        let yaml = "\
schema_version: 1
kprof_version: 0.1.0
target: { runtime: cuda, executable: ./bench }
kernel: { name: hgemm, filter_mode: regex, filter: '.*hgemm.*' }
launch: { launch_skip: 5, launch_count: 3, profile_from_start: true, window: launch-skip-count }
profiling: { stages: 'basic,memory' }
";
        let spec = TargetSpec::from_yaml_str(yaml).unwrap();
        assert_eq!(spec.target.cwd, Path::new("."));
        assert!(spec.kernel.allow_discovery_fallback);
        assert_eq!(spec.privilege, PrivilegeSection::default());
        assert_eq!(spec.profiling.stages, StageSelection::List(vec![Stage::Basic, Stage::Memory]));
        assert_eq!(spec.profiling.ncu_bin, "ncu");
        assert_eq!(spec.outputs, OutputsSection::default());
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let yaml = sample().to_yaml_string().unwrap().replace("launch_count: 1", "launch_cuont: 1");
        let err = TargetSpec::from_yaml_str(&yaml).unwrap_err();
        assert_eq!(err.code, ExitCode::Config);
        assert!(
            err.message.starts_with("invalid profile-target.yaml: launch: unknown field `launch_cuont`"),
            "{err}"
        );
        assert!(err.message.contains("expected one of `launch_skip`, `launch_count`"), "{err}");
        assert!(err.help[0].contains("typos"), "{err}");
        let top = format!("{}extra: 1\n", sample().to_yaml_string().unwrap());
        assert!(TargetSpec::from_yaml_str(&top).unwrap_err().message.contains("unknown field `extra`"));
    }

    #[test]
    fn password_storage_must_be_forbidden() {
        let yaml = sample()
            .to_yaml_string()
            .unwrap()
            .replace("password_storage: forbidden", "password_storage: plaintext");
        let err = TargetSpec::from_yaml_str(&yaml).unwrap_err();
        assert!(err.message.contains("unknown variant `plaintext`, expected `forbidden`"), "{err}");
        assert!(err.help[0].contains("never stores sudo passwords"), "{err}");
    }

    #[test]
    fn other_invalid_values() {
        let base = sample().to_yaml_string().unwrap();
        let cases = [
            ("schema_version: 1", "schema_version: 2", "unsupported schema_version 2"),
            ("filter_mode: regex", "filter_mode: glob", "unknown variant `glob`"),
            ("mode: none", "mode: sudo", "unknown variant `sudo`"),
            ("launch_count: 1", "launch_count: 0", "launch.launch_count must be at least 1"),
            ("- speed-of-light", "- speed-of-lite", "unknown stage `speed-of-lite`"),
        ];
        for (from, to, expected) in cases {
            let err = TargetSpec::from_yaml_str(&base.replace(from, to)).unwrap_err();
            assert!(err.message.contains(expected), "{to}: {err}");
        }
    }

    #[test]
    fn reading_a_file_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        sample().write_to(&path).unwrap();
        assert_eq!(TargetSpec::read_from(&path).unwrap(), sample());
        std::fs::write(&path, "schema_version: 1\nbogus: [").unwrap();
        let err = TargetSpec::read_from(&path).unwrap_err();
        assert!(err.message.starts_with(&format!("invalid {}:", path.display())), "{err}");
        let missing = TargetSpec::read_from(&dir.path().join("none.yaml")).unwrap_err();
        assert!(missing.message.contains("none.yaml"), "{missing}");
    }
}
