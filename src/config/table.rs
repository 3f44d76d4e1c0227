//! The validator: one kprof table of a manifest, read key by key into typed settings (and,
//! through `entry.rs`, kernel entries). Every error names the manifest, the table (or
//! entry) and the key, and says how to fix it; unknown keys are warnings with the closest
//! known key.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde_json::{Map, Value};

use super::{ConfigWarning, IncludeGlob, Settings};
use crate::error::{ExitCode, Failure};
use crate::model::filter::KernelFilter;
use crate::model::kinds::{ClockControl, Privilege};
use crate::model::names;
use crate::model::stage::{Stage, StageSelection};
use crate::suggest::edit_distance;

/// Keys allowed in every kprof table: the defaults a kernel inherits.
pub(super) const SETTING_KEYS: [&str; 7] =
    ["launch-skip", "launch-count", "stages", "env", "tolerance-pct", "clock-control", "privilege"];
/// The key for files an archive packs, allowed in the workspace and package tables only.
pub(super) const INCLUDE_KEY: &str = "include";
/// Keys allowed only in a kernel entry.
pub(super) const KERNEL_KEYS: [&str; 10] =
    ["name", "bench", "example", "bin", "command", "case", "args", "regex", "runtime", "kernels"];
/// The table headers users see in messages.
pub(super) const WORKSPACE_TABLE: &str = "[workspace.metadata.kprof]";
pub(super) const PACKAGE_TABLE: &str = "[package.metadata.kprof]";
pub(super) const KERNELS_TABLE: &str = "[[package.metadata.kprof.kernels]]";

/// Which kind of kprof table a key is read in; used to explain misplaced keys.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    Workspace,
    Package,
    Kernel,
}

/// A kprof table being read: its manifest, its header for messages, its keys.
pub(super) struct Table<'a> {
    manifest: &'a Path,
    location: String,
    map: &'a Map<String, Value>,
}

impl<'a> Table<'a> {
    pub(super) fn new(manifest: &'a Path, location: String, value: &'a Value) -> Result<Self, Failure> {
        match value {
            Value::Object(map) => Ok(Table { manifest, location, map }),
            other => {
                let header = location.trim_start_matches('[').trim_end_matches(']').to_string();
                Err(Failure::new(
                    ExitCode::Config,
                    format!(
                        "{location} of {}: expected a table, found {}",
                        manifest.display(),
                        describe(other)
                    ),
                )
                .help(format!("write it as a table: `[{header}]` followed by `key = value` lines")))
            }
        }
    }

    pub(super) fn error(&self, key: &str, problem: impl fmt::Display) -> Failure {
        Failure::new(
            ExitCode::Config,
            format!("`{key}` in {} of {}: {problem}", self.location, self.manifest.display()),
        )
    }

    pub(super) fn type_error(&self, key: &str, expected: &str, found: &Value, example: &str) -> Failure {
        self.error(key, format_args!("expected {expected}, found {}", describe(found)))
            .help(format!("for example: `{example}`"))
    }

    pub(super) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    pub(super) fn warn_unknown_keys(
        &self,
        allowed: &[&str],
        level: Level,
        warnings: &mut Vec<ConfigWarning>,
    ) {
        for key in self.map.keys() {
            if allowed.contains(&key.as_str()) {
                continue;
            }
            let mut suggestion = None;
            let message = if level == Level::Kernel && key == INCLUDE_KEY {
                format!(
                    "key `{key}` in {} of {} is ignored: it belongs in {PACKAGE_TABLE} or {WORKSPACE_TABLE}",
                    self.location,
                    self.manifest.display()
                )
            } else if level != Level::Kernel && KERNEL_KEYS.contains(&key.as_str()) {
                let place = if key == "kernels" { PACKAGE_TABLE } else { KERNELS_TABLE };
                format!(
                    "key `{key}` in {} of {} is ignored: it belongs in {place}",
                    self.location,
                    self.manifest.display()
                )
            } else {
                let known = SETTING_KEYS
                    .iter()
                    .chain(&KERNEL_KEYS)
                    .chain(&[INCLUDE_KEY])
                    .filter(|k| allowed.contains(k))
                    .copied();
                suggestion = closest_key(key, known).map(str::to_string);
                let mut message = format!(
                    "unknown key `{key}` in {} of {} is ignored",
                    self.location,
                    self.manifest.display()
                );
                if let Some(s) = &suggestion {
                    message.push_str(&format!("; did you mean `{s}`?"));
                }
                message
            };
            warnings.push(ConfigWarning {
                manifest_path: self.manifest.to_path_buf(),
                key: key.clone(),
                suggestion,
                message,
            });
        }
    }

    pub(super) fn settings(&self) -> Result<Settings, Failure> {
        Ok(Settings {
            launch_skip: self.integer("launch-skip", 0, "launch-skip = 5")?,
            launch_count: self.integer("launch-count", 1, "launch-count = 3")?,
            stages: self.stages()?,
            env: self.env()?,
            tolerance_pct: self.tolerance()?,
            clock_control: self.clock_control()?,
            privilege: self.one_of("privilege", &[Privilege::None, Privilege::Sudo], Privilege::name)?,
        })
    }

    /// `include = ["glob", ...]`: globs relative to `root` (the table's workspace or package
    /// root), each valid and staying inside it: no absolute path, no `..`.
    pub(super) fn include(&self, root: &Path, package: Option<&str>) -> Result<Vec<IncludeGlob>, Failure> {
        const EXAMPLE: &str = "include = [\"data/*.bin\", \"kernels/**/*.ptx\"]";
        let Some(patterns) = self.string_list(INCLUDE_KEY, EXAMPLE)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for pattern in patterns {
            let refuse = |problem: String| {
                self.error(INCLUDE_KEY, format_args!("glob {pattern:?} {problem}")).help(format!(
                    "globs are relative to {} and stay inside it; for example: `{EXAMPLE}`",
                    root.display()
                ))
            };
            if pattern.trim().is_empty() {
                return Err(refuse("is empty".into()));
            }
            if pattern.starts_with(['/', '\\']) || Path::new(&pattern).is_absolute() {
                return Err(refuse("is an absolute path".into()));
            }
            if pattern.split(['/', '\\']).any(|part| part == "..") {
                return Err(refuse("leaves its root through `..`".into()));
            }
            if let Err(e) = globset::Glob::new(&pattern) {
                return Err(refuse(format!("is not a valid glob: {}", e.kind())));
            }
            out.push(IncludeGlob {
                pattern,
                root: root.to_path_buf(),
                source: format!("{} of {}", self.location, self.manifest.display()),
                package: package.map(str::to_string),
            });
        }
        Ok(out)
    }

    pub(super) fn integer(&self, key: &str, min: u32, example: &str) -> Result<Option<u32>, Failure> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        let expected = if min == 0 { "a non-negative integer" } else { "an integer >= 1" };
        let Value::Number(number) = value else {
            return Err(self.type_error(key, expected, value, example));
        };
        match number.as_u64() {
            Some(n) if n < u64::from(min) => Err(self
                .error(key, format_args!("must be at least {min}, found {n}"))
                .help(format!("for example: `{example}`"))),
            Some(n) => u32::try_from(n).map(Some).map_err(|_| {
                self.error(key, format_args!("{n} is too large (at most {})", u32::MAX))
                    .help(format!("for example: `{example}`"))
            }),
            None if number.as_i64().is_some() => Err(self
                .error(key, format_args!("must not be negative, found {number}"))
                .help(format!("for example: `{example}`"))),
            None => Err(self.type_error(key, expected, value, example)),
        }
    }

    pub(super) fn stages(&self) -> Result<Option<StageSelection>, Failure> {
        const EXAMPLE: &str = "stages = [\"basic\", \"memory\"]";
        let Some(value) = self.get("stages") else {
            return Ok(None);
        };
        let selection = match value {
            Value::String(text) => StageSelection::parse_str(text),
            Value::Array(items) => {
                let mut names = Vec::with_capacity(items.len());
                for item in items {
                    match item {
                        Value::String(name) if name == "auto" || name == "all" => {
                            return Err(self
                                .error("stages", format_args!("`{name}` cannot be part of a list"))
                                .help(format!(
                                    "write `stages = \"{name}\"` on its own, or list stage names"
                                )));
                        }
                        Value::String(name) => names.push(name.as_str()),
                        other => {
                            return Err(self.type_error("stages", "a list of stage names", other, EXAMPLE));
                        }
                    }
                }
                if names.is_empty() {
                    return Err(self
                        .error("stages", "the list is empty")
                        .help(format!("remove the key to use `auto`, or list stages: `{EXAMPLE}`")));
                }
                StageSelection::from_names(names)
            }
            other => {
                return Err(self.type_error(
                    "stages",
                    "\"auto\", \"all\" or a list of stage names",
                    other,
                    EXAMPLE,
                ))
            }
        };
        selection.map(Some).map_err(|unknown| {
            let stage_names = Stage::ALL.iter().map(|s| s.name());
            let mut failure = self.error("stages", &unknown);
            if let Some(close) = closest_key(&unknown.0, stage_names) {
                failure = failure.help(format!("did you mean `{close}`?"));
            }
            failure.help(format!("for example: `{EXAMPLE}`"))
        })
    }

    pub(super) fn env(&self) -> Result<BTreeMap<String, String>, Failure> {
        let Some(value) = self.get("env") else {
            return Ok(BTreeMap::new());
        };
        let Value::Object(vars) = value else {
            return Err(self.type_error("env", "a table of strings", value, "env = { NO_GRAPH = \"1\" }"));
        };
        let mut env = BTreeMap::new();
        for (name, value) in vars {
            let key = format!("env.{name}");
            if !names::is_env_key(name) {
                return Err(self
                    .error(&key, "is not a valid environment variable name")
                    .help(names::ENV_KEY_HELP));
            }
            match value {
                Value::String(text) => {
                    env.insert(name.clone(), text.clone());
                }
                Value::Number(_) | Value::Bool(_) => {
                    return Err(self
                        .error(&key, format_args!("expected a string, found {}", describe(value)))
                        .help(format!("environment values are strings; quote it: `{name} = \"{value}\"`")));
                }
                other => {
                    return Err(self.type_error(&key, "a string", other, &format!("{name} = \"1\"")));
                }
            }
        }
        Ok(env)
    }

    pub(super) fn tolerance(&self) -> Result<Option<f64>, Failure> {
        const EXAMPLE: &str = "tolerance-pct = 2.0";
        let Some(value) = self.get("tolerance-pct") else {
            return Ok(None);
        };
        match value.as_f64() {
            Some(pct) if pct.is_finite() && pct >= 0.0 => Ok(Some(pct)),
            Some(pct) => Err(self
                .error("tolerance-pct", format_args!("must be a finite number >= 0, found {pct}"))
                .help(format!("for example: `{EXAMPLE}`"))),
            None => Err(self.type_error("tolerance-pct", "a finite number >= 0", value, EXAMPLE)),
        }
    }

    pub(super) fn clock_control(&self) -> Result<Option<ClockControl>, Failure> {
        self.one_of("clock-control", &[ClockControl::None, ClockControl::Base], ClockControl::name)
    }

    /// A string that must be one of `choices` (by `name`).
    pub(super) fn one_of<T: Copy>(
        &self,
        key: &str,
        choices: &[T],
        name: fn(T) -> &'static str,
    ) -> Result<Option<T>, Failure> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        let spelled: Vec<String> = choices.iter().map(|c| format!("\"{}\"", name(*c))).collect();
        let expected = spelled.join(" or ");
        let example = format!("{key} = {}", spelled[0]);
        let Value::String(text) = value else {
            return Err(self.type_error(key, &expected, value, &example));
        };
        choices.iter().copied().find(|c| name(*c) == text).map(Some).ok_or_else(|| {
            self.error(key, format_args!("expected {expected}, found {text:?}"))
                .help(format!("for example: `{example}`"))
        })
    }

    pub(super) fn string(&self, key: &str, example: &str) -> Result<Option<&'a str>, Failure> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(text)) if text.trim().is_empty() => {
                Err(self.error(key, "must not be empty").help(format!("for example: `{example}`")))
            }
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(self.type_error(key, "a string", other, example)),
        }
    }

    pub(super) fn string_list(&self, key: &str, example: &str) -> Result<Option<Vec<String>>, Failure> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        let Value::Array(items) = value else {
            return Err(self.type_error(key, "an array of strings", value, example));
        };
        items
            .iter()
            .map(|item| match item {
                Value::String(text) => Ok(text.clone()),
                other => Err(self.type_error(key, "an array of strings", other, example)),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// A regex the `regex` crate accepts (a harness case, a kernel filter), as written.
    pub(super) fn regex(&self, key: &str, example: &str) -> Result<Option<&'a str>, Failure> {
        let Some(pattern) = self.string(key, example)? else {
            return Ok(None);
        };
        match KernelFilter::try_regex(pattern) {
            Ok(_) => Ok(Some(pattern)),
            Err(e) => {
                Err(self.error(key, format_args!("invalid regex {pattern:?}:\n{}", e.error)).help(format!(
                    "escape regex metacharacters with `\\\\` in TOML strings, or use a literal \
                     string; for example: `{example}`"
                )))
            }
        }
    }

    /// Where the table is, as messages show it.
    pub(super) fn location(&self) -> &str {
        &self.location
    }

    /// The same table, shown at `location` (once an entry's name is known).
    pub(super) fn relocated(self, location: String) -> Self {
        Table { location, ..self }
    }

    pub(super) fn manifest(&self) -> &'a Path {
        self.manifest
    }

    pub(super) fn kernel_entries(&self) -> Result<&'a [Value], Failure> {
        const EXAMPLE: &str =
            "[[package.metadata.kprof.kernels]]\n    name = \"hgemm\"\n    bench = \"hgemm\"";
        match self.get("kernels") {
            None => Ok(&[]),
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    if !item.is_object() {
                        return Err(self
                            .error(
                                "kernels",
                                format_args!("entry #{} is {}, not a table", i + 1, describe(item)),
                            )
                            .help(format!(
                                "write each kernel as an array-of-tables entry:\n\n    {EXAMPLE}\n"
                            )));
                    }
                }
                Ok(items)
            }
            Some(other) => Err(self
                .error("kernels", format_args!("expected an array of tables, found {}", describe(other)))
                .help(format!("write each kernel as an array-of-tables entry:\n\n    {EXAMPLE}\n"))),
        }
    }
}

/// A short description of a JSON value's type for messages: `the string "ten"`.
pub(super) fn describe(value: &Value) -> String {
    match value {
        // TOML has no null: `cargo metadata` writes a float that is not finite as null.
        Value::Null => "a number that is not finite (`nan` or `inf`)".to_string(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) if n.is_f64() => format!("the number {n}"),
        Value::Number(n) => format!("the integer {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "a table".to_string(),
    }
}

/// The candidate nearest to `word` if it is within two edits (case-insensitive,
/// `_` read as `-`).
pub(super) fn closest_key<'k>(word: &str, candidates: impl IntoIterator<Item = &'k str>) -> Option<&'k str> {
    let normalized = word.to_ascii_lowercase().replace('_', "-");
    candidates
        .into_iter()
        .map(|c| (edit_distance(&normalized, c), c))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}
