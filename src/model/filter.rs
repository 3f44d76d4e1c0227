//! Kernel filters: which kernel launches a profile looks at.
//!
//! A user's hint (`--kernel hgemm`) becomes the regex `.*hgemm.*` right away, as the
//! workflow prescribes: no discovery pass first. A hint written `=hgemm` names the
//! function exactly: it matches `hgemm` and `void ns::hgemm<128>(...)`, not
//! `hgemm_tiled`. The regex is written for ncu, whose `regex:` filter uses ECMAScript
//! syntax, so escaping covers exactly that syntax's metacharacters. ncu matches it against
//! the function name (`--kernel-name-base function`); the analysis matches the same
//! regex against the demangled name in the CSV, so both forms are written to work on both.
//!
//! A filter holds its regex compiled, built once where the filter is made: a regex the
//! user wrote ([`KernelFilter::try_regex`], or a filter read from a file) is checked
//! there, so a bad one is an error where it enters and never a silent "matches nothing"
//! later. The infallible constructors are for patterns kprof builds itself from escaped
//! parts, or has already checked; the serialized form is `{mode, pattern}`, as before.

use serde::{Deserialize, Serialize};
use std::fmt;

use regex::Regex;

/// How a kernel filter is matched (ncu's `--kernel-name`, `--kernel-id`, `--nvtx-include`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FilterMode {
    /// A regular expression matched against the function name.
    Regex,
    /// The exact function name.
    Exact,
    /// An ncu kernel id (`context:stream:name:invocation`).
    KernelId,
    /// An NVTX range expression.
    Nvtx,
}

impl FilterMode {
    /// The spelling in `profile-target.yaml`.
    pub fn name(self) -> &'static str {
        match self {
            FilterMode::Regex => "regex",
            FilterMode::Exact => "exact",
            FilterMode::KernelId => "kernel-id",
            FilterMode::Nvtx => "nvtx",
        }
    }
}

impl fmt::Display for FilterMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A kernel filter as given to ncu's `--kernel-name`, with its regex compiled for the
/// analysis' own matching.
#[derive(Clone, Serialize, Deserialize)]
#[serde(try_from = "FilterText", into = "FilterText")]
pub struct KernelFilter {
    /// Regex or exact.
    pub mode: FilterMode,
    /// The pattern (for `Regex`) or name (for `Exact`). Read it freely; a filter is made
    /// only by its constructors, which compile it.
    pub pattern: String,
    /// `pattern` compiled; `None` only when it is not a regex the `regex` crate accepts,
    /// which a constructor that checks refuses (see [`KernelFilter::regex`]).
    compiled: Option<Regex>,
}

/// A filter as written in files: the mode and the pattern, nothing compiled.
#[derive(Serialize, Deserialize)]
struct FilterText {
    mode: FilterMode,
    pattern: String,
}

/// A regex that does not compile, with the `regex` crate's reason.
#[derive(Debug, Clone)]
pub struct InvalidRegex {
    /// The pattern as given.
    pub pattern: String,
    /// Why it is not a regex.
    pub error: regex::Error,
}

impl fmt::Display for InvalidRegex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not a valid regex: {}", self.pattern, self.error)
    }
}

impl std::error::Error for InvalidRegex {}

impl TryFrom<FilterText> for KernelFilter {
    type Error = InvalidRegex;
    fn try_from(text: FilterText) -> Result<Self, InvalidRegex> {
        KernelFilter::read(text.mode, text.pattern)
    }
}

impl From<KernelFilter> for FilterText {
    fn from(f: KernelFilter) -> Self {
        FilterText { mode: f.mode, pattern: f.pattern }
    }
}

impl PartialEq for KernelFilter {
    fn eq(&self, other: &Self) -> bool {
        // The compiled regex follows from the pattern.
        (self.mode, &self.pattern) == (other.mode, &other.pattern)
    }
}

impl Eq for KernelFilter {}

impl fmt::Debug for KernelFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelFilter").field("mode", &self.mode).field("pattern", &self.pattern).finish()
    }
}

/// Several regexes as one that matches what any of them matches, each in its own group:
/// `(?:hgemm_naive)|(?:hgemm_tiled)`; one regex as it is (a kernel batched alone keeps the
/// filter and case its own commands show). A batch's ncu filter and `KPROF_CASE`, and the
/// case of a timing run shared by several kernels.
pub fn alternation<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    let parts: Vec<&str> = parts.into_iter().collect();
    match parts.as_slice() {
        [one] => one.to_string(),
        _ => parts.iter().map(|p| format!("(?:{p})")).collect::<Vec<_>>().join("|"),
    }
}

/// A `--kernel` hint: the name, or part of one, and whether it names the function
/// exactly (`--kernel =NAME`). Read once where it enters ([`KernelHint::parse`]), then
/// carried as it is; it shows as it was given.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KernelHint {
    /// The name, or part of one, without the `=`.
    pub name: String,
    /// `=NAME`: only the function of exactly that name.
    pub exact: bool,
}

impl KernelHint {
    /// Reads a hint as the command line gives it: `=NAME` names the function exactly,
    /// anything else is (part of) a name. The one reader of that text: the command line's
    /// value parser (`cli`) and `import.json`, which keeps the hint as given, call it.
    pub fn parse(text: &str) -> KernelHint {
        match text.strip_prefix('=') {
            Some(name) => KernelHint { name: name.to_string(), exact: true },
            None => KernelHint { name: text.to_string(), exact: false },
        }
    }
}

impl fmt::Display for KernelHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.exact {
            f.write_str("=")?;
        }
        f.write_str(&self.name)
    }
}

/// Kept as given (`import.json`'s `kernel`).
impl Serialize for KernelHint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for KernelHint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|text| KernelHint::parse(&text))
    }
}

impl KernelFilter {
    /// The filter for a hint: `.*<escaped name>.*`, or for `=NAME` the exact function
    /// (see [`KernelFilter::function`]).
    pub fn from_hint(hint: &KernelHint) -> Self {
        match hint.exact {
            true => KernelFilter::function(&hint.name),
            false => KernelFilter::containing(&hint.name),
        }
    }

    /// [`KernelFilter::from_hint`], refusing a hint whose regex the `regex` crate cannot
    /// build (escaped, only one too large for it).
    pub fn try_from_hint(hint: &KernelHint) -> Result<Self, InvalidRegex> {
        let f = KernelFilter::from_hint(hint);
        match f.compiled {
            Some(_) => Ok(f),
            None => KernelFilter::try_regex(f.pattern),
        }
    }

    /// Every name containing `name`: `.*<escaped name>.*` (a configured kernel's default
    /// filter, and a hint's).
    pub fn containing(name: &str) -> Self {
        KernelFilter::regex(format!(".*{}.*", escape_regex(name)))
    }

    /// Exactly the function `name`: as ncu's function base (`name`) and inside a demangled
    /// name (`name(`, `ns::name<`, `void name(`), never as part of a longer name.
    pub fn function(name: &str) -> Self {
        KernelFilter::regex(format!("(^|[ :]){}($|[<(])", escape_regex(name)))
    }

    /// An ncu kernel id (`context:stream:[regex:]name:invocation`) kprof built itself.
    pub fn kernel_id(id: impl Into<String>) -> Self {
        KernelFilter::lenient(FilterMode::KernelId, id.into())
    }

    /// A filter as a file keeps it (`profile-target.yaml`, a plan's JSON): a regex is
    /// refused when it does not compile. Names, ids and NVTX ranges are ncu's to read; the
    /// analysis tries them as a regex, as it always has, and one that is none matches
    /// nothing.
    pub fn read(mode: FilterMode, pattern: String) -> Result<Self, InvalidRegex> {
        match mode {
            FilterMode::Regex => KernelFilter::try_regex(pattern),
            mode => Ok(KernelFilter::lenient(mode, pattern)),
        }
    }

    /// A filter from a user-written regex, used as given: refused when it does not compile.
    pub fn try_regex(pattern: impl Into<String>) -> Result<Self, InvalidRegex> {
        let pattern = pattern.into();
        match Regex::new(&pattern) {
            Ok(re) => Ok(KernelFilter { mode: FilterMode::Regex, pattern, compiled: Some(re) }),
            Err(error) => Err(InvalidRegex { pattern, error }),
        }
    }

    /// A filter from a regex kprof built itself (`.*`, an alternation of filters) or has
    /// already checked with [`KernelFilter::try_regex`]. Should it not compile after all,
    /// ncu is given it as it is and the analysis' reading matches nothing.
    pub fn regex(pattern: impl Into<String>) -> Self {
        KernelFilter::lenient(FilterMode::Regex, pattern.into())
    }

    fn lenient(mode: FilterMode, pattern: String) -> Self {
        let compiled = Regex::new(&pattern).ok();
        KernelFilter { mode, pattern, compiled }
    }

    /// The compiled regex the analysis matches kernel names with (`None` for a pattern
    /// that is not one; see [`KernelFilter::regex`]).
    pub fn compiled(&self) -> Option<&Regex> {
        self.compiled.as_ref()
    }

    /// Whether the analysis' reading of this filter matches `kernel` (a name as the CSV
    /// prints it).
    pub fn matches(&self, kernel: &str) -> bool {
        self.compiled.as_ref().is_some_and(|re| re.is_match(kernel))
    }

    /// The filter as ncu writes it (`regex:...`, or the bare name or id).
    pub fn to_ncu_arg(&self) -> String {
        match self.mode {
            FilterMode::Regex => format!("regex:{}", self.pattern),
            FilterMode::Exact | FilterMode::KernelId | FilterMode::Nvtx => self.pattern.clone(),
        }
    }

    /// The ncu options that apply this filter.
    pub fn ncu_args(&self) -> Vec<String> {
        let flag = match self.mode {
            FilterMode::Regex | FilterMode::Exact => "--kernel-name",
            FilterMode::KernelId => "--kernel-id",
            FilterMode::Nvtx => return vec!["--nvtx".into(), "--nvtx-include".into(), self.pattern.clone()],
        };
        vec![flag.to_string(), self.to_ncu_arg()]
    }
}

impl fmt::Display for KernelFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_ncu_arg())
    }
}

/// Escapes the regex metacharacters shared by ECMAScript (ncu's dialect) and the
/// `regex` crate, nothing else, so the result matches `text` literally in both.
pub fn escape_regex(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if r"\^$.|?*+()[]{}/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hint(text: &str) -> KernelHint {
        KernelHint::parse(text)
    }

    #[test]
    fn hint_becomes_escaped_regex() {
        assert_eq!(KernelFilter::from_hint(&hint("hgemm")).to_ncu_arg(), "regex:.*hgemm.*");
        assert_eq!(KernelFilter::from_hint(&hint("void f<int>(a.b)")).pattern, r".*void f<int>\(a\.b\).*");
        assert_eq!(escape_regex(r"a+b*c?[x]{1}|^$\/"), r"a\+b\*c\?\[x\]\{1\}\|\^\$\\\/");
    }

    #[test]
    fn escaped_hint_matches_literally() {
        // The `regex` crate agrees with ECMAScript on these escapes, so it can check them.
        for hint in ["hgemm", "copy_kernel(const float4 *, float4 *)", "a.b+c", "x[0]"] {
            let f = KernelFilter::from_hint(&KernelHint::parse(hint));
            let re = regex::Regex::new(&format!("^{}$", f.pattern)).unwrap();
            assert!(re.is_match(&format!("pre {hint} post")), "{hint}");
        }
        let re = regex::Regex::new(&format!("^{}$", KernelFilter::from_hint(&hint("a.b")).pattern)).unwrap();
        assert!(!re.is_match("axb"));
    }

    #[test]
    fn exact_hint_matches_the_function_only() {
        let f = KernelFilter::from_hint(&hint("=matmul"));
        assert_eq!(f, KernelFilter::function("matmul"));
        // ncu's function base, and the demangled names the CSV prints.
        for yes in ["matmul", "matmul(float *, int)", "void matmul<128>(float *)", "void ns::matmul(int)"] {
            assert!(f.matches(yes), "{yes}");
        }
        for no in ["matmul_tiled", "matmul_tiled(float *)", "batched_matmul(float *)", "mul"] {
            assert!(!f.matches(no), "{no}");
        }
        assert!(KernelFilter::from_hint(&hint("mul")).matches("matmul_tiled(float *)"));
        assert_eq!(hint("=x"), KernelHint { name: "x".into(), exact: true });
        assert_eq!(hint("x"), KernelHint { name: "x".into(), exact: false });
        // Shown, and kept in files, as given.
        assert_eq!((hint("=x").to_string(), hint("x").to_string()), ("=x".to_string(), "x".to_string()));
        assert_eq!(serde_json::to_string(&hint("=x")).unwrap(), r#""=x""#);
        assert_eq!(serde_json::from_str::<KernelHint>(r#""=x""#).unwrap(), hint("=x"));
    }

    #[test]
    fn a_bad_regex_is_refused_where_it_enters() {
        let err = KernelFilter::try_regex("(((").unwrap_err();
        assert_eq!(err.pattern, "(((");
        assert!(err.to_string().starts_with("`(((` is not a valid regex: "), "{err}");
        assert!(KernelFilter::try_regex("gemm\\(.*\\)").unwrap().matches("gemm(float *)"));
        assert!(KernelFilter::try_from_hint(&hint("a(b")).unwrap().matches("xa(by"));
        // Built by kprof and never checked: matches nothing, as before.
        assert!(!KernelFilter::regex("(((").matches("((("));
    }

    #[test]
    fn files_keep_their_shape_and_are_checked_when_read() {
        let f = KernelFilter::from_hint(&hint("copy"));
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(json, r#"{"mode":"regex","pattern":".*copy.*"}"#);
        let back: KernelFilter = serde_json::from_str(&json).unwrap();
        assert_eq!(back, f);
        assert!(back.matches("copy_kernel"));
        let err = serde_json::from_str::<KernelFilter>(r#"{"mode":"regex","pattern":"((("}"#).unwrap_err();
        assert!(err.to_string().contains("is not a valid regex"), "{err}");
        // Not a regex for ncu: read as it is.
        let id: KernelFilter = serde_json::from_str(r#"{"mode":"kernel-id","pattern":"1:7:((:1"}"#).unwrap();
        assert_eq!((id.mode, id.to_ncu_arg().as_str()), (FilterMode::KernelId, "1:7:((:1"));
        assert_eq!(format!("{f:?}"), r#"KernelFilter { mode: Regex, pattern: ".*copy.*" }"#);
    }
}
