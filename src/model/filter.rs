//! Kernel filters: which kernel launches a profile looks at.
//!
//! A user's hint (`--kernel hgemm`) becomes the regex `.*hgemm.*` right away, as the
//! workflow prescribes: no discovery pass first. A hint written `=hgemm` names the
//! function exactly: it matches `hgemm` and `void ns::hgemm<128>(...)`, not
//! `hgemm_tiled`. The regex is written for ncu, whose `regex:` filter uses ECMAScript
//! syntax, so escaping covers exactly that syntax's metacharacters. ncu matches it against
//! the function name (`--kernel-name-base function`); the analysis matches the same
//! regex against the demangled name in the CSV, so both forms are written to work on both.

use serde::{Deserialize, Serialize};
use std::fmt;

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

/// A kernel filter as given to ncu's `--kernel-name`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelFilter {
    /// Regex or exact.
    pub mode: FilterMode,
    /// The pattern (for `Regex`) or name (for `Exact`).
    pub pattern: String,
}

/// A `--kernel` hint split into the name and whether it is exact (`=name`).
pub fn parse_hint(hint: &str) -> (&str, bool) {
    match hint.strip_prefix('=') {
        Some(name) => (name, true),
        None => (hint, false),
    }
}

impl KernelFilter {
    /// The filter for a name hint: `.*<escaped hint>.*`, or for `=name` the exact
    /// function (see [`KernelFilter::function`]).
    pub fn from_hint(hint: &str) -> Self {
        match parse_hint(hint) {
            (name, true) => KernelFilter::function(name),
            (name, false) => {
                KernelFilter { mode: FilterMode::Regex, pattern: format!(".*{}.*", escape_regex(name)) }
            }
        }
    }

    /// Exactly the function `name`: as ncu's function base (`name`) and inside a demangled
    /// name (`name(`, `ns::name<`, `void name(`), never as part of a longer name.
    pub fn function(name: &str) -> Self {
        KernelFilter { mode: FilterMode::Regex, pattern: format!("(^|[ :]){}($|[<(])", escape_regex(name)) }
    }

    /// Whether the analysis' reading of this filter matches `kernel` (a name as the CSV
    /// prints it); an invalid pattern matches nothing.
    pub fn matches(&self, kernel: &str) -> bool {
        regex::Regex::new(&self.pattern).is_ok_and(|re| re.is_match(kernel))
    }

    /// A filter from a user-written regex, used as given.
    pub fn regex(pattern: impl Into<String>) -> Self {
        KernelFilter { mode: FilterMode::Regex, pattern: pattern.into() }
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

    #[test]
    fn hint_becomes_escaped_regex() {
        assert_eq!(KernelFilter::from_hint("hgemm").to_ncu_arg(), "regex:.*hgemm.*");
        assert_eq!(KernelFilter::from_hint("void f<int>(a.b)").pattern, r".*void f<int>\(a\.b\).*");
        assert_eq!(escape_regex(r"a+b*c?[x]{1}|^$\/"), r"a\+b\*c\?\[x\]\{1\}\|\^\$\\\/");
    }

    #[test]
    fn escaped_hint_matches_literally() {
        // The `regex` crate agrees with ECMAScript on these escapes, so it can check them.
        for hint in ["hgemm", "copy_kernel(const float4 *, float4 *)", "a.b+c", "x[0]"] {
            let f = KernelFilter::from_hint(hint);
            let re = regex::Regex::new(&format!("^{}$", f.pattern)).unwrap();
            assert!(re.is_match(&format!("pre {hint} post")), "{hint}");
        }
        let re = regex::Regex::new(&format!("^{}$", KernelFilter::from_hint("a.b").pattern)).unwrap();
        assert!(!re.is_match("axb"));
    }

    #[test]
    fn exact_hint_matches_the_function_only() {
        let f = KernelFilter::from_hint("=matmul");
        assert_eq!(f, KernelFilter::function("matmul"));
        // ncu's function base, and the demangled names the CSV prints.
        for yes in ["matmul", "matmul(float *, int)", "void matmul<128>(float *)", "void ns::matmul(int)"] {
            assert!(f.matches(yes), "{yes}");
        }
        for no in ["matmul_tiled", "matmul_tiled(float *)", "batched_matmul(float *)", "mul"] {
            assert!(!f.matches(no), "{no}");
        }
        assert!(KernelFilter::from_hint("mul").matches("matmul_tiled(float *)"));
        assert_eq!(parse_hint("=x"), ("x", true));
        assert_eq!(parse_hint("x"), ("x", false));
    }
}
