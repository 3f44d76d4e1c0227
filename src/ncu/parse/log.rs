//! ncu's own lines (`==PROF==`, `==ERROR==`, `==WARNING==`): no match, no permission,
//! passes, the kernels ncu saw; and the error for a page that is not there, explained by
//! those lines.
//!
//! Imports run one way: this file reads lines with [`super::lines`], which knows nothing
//! of it.

use super::lines::numbered_lines;
use super::{ParseError, ParseErrorKind};

pub(super) const NO_KERNELS: &str = "No kernels were profiled";
pub(super) const PERMISSION_CODE: &str = "ERR_NVGPUCTRPERM";
pub(super) const NO_LINE_INFO: &str = "No lineinfo available to show CUDA-C source related to";
/// What ncu says when another profiling session holds the GPU's counters (a second ncu on
/// the same GPU that does not share its lock, DCGM).
pub(super) const COUNTERS_BUSY: &str = "Profiling failed because a driver resource was unavailable";

/// What ncu said about a run, read from its `==PROF==`, `==WARNING==` and `==ERROR==` lines
/// in a `--log-file` or a stdout capture.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NcuLog {
    /// ncu printed "No kernels were profiled": the kernel filter matched no launch (ncu still
    /// exits 0).
    pub no_kernels_profiled: bool,
    /// The numbered list ncu prints after "Available Kernels:", in order.
    pub available_kernels: Vec<String>,
    /// The text of each `==ERROR==` line.
    pub errors: Vec<String>,
    /// The text of each `==WARNING==` line.
    pub warnings: Vec<String>,
    /// `ERR_NVGPUCTRPERM` appeared: ncu may not read the performance counters.
    pub permission_denied: bool,
    /// Each `==PROF== Profiling "NAME"...` line: the kernel and, when the line (or its
    /// continuation after an interleaved warning) ends in `- N passes`, the replay passes.
    pub profiled: Vec<(String, Option<u32>)>,
    /// Kernels for which ncu had no line info to show CUDA source ("No lineinfo available
    /// to show CUDA-C source related to 'NAME'").
    pub no_line_info: Vec<String>,
    /// Another profiling session held the GPU's counters ("a driver resource was
    /// unavailable"): nothing was profiled, and running again alone would work.
    pub counters_busy: bool,
}

/// Where an ncu message begins in a line: `==TAG==` with an upper-case tag.
pub(super) fn marker_at(line: &str, at: usize) -> Option<(usize, &str)> {
    let rest = line.get(at..)?.strip_prefix("==")?;
    let tag_len = rest.bytes().take_while(u8::is_ascii_uppercase).count();
    if tag_len < 2 || !rest[tag_len..].starts_with("==") {
        return None;
    }
    Some((tag_len + 4, &rest[..tag_len]))
}

/// Splits a line into `(tag, text)` segments at each `==TAG==` marker; text before the first
/// marker has no tag. ncu sometimes writes a warning in the middle of a progress line.
pub(super) fn segments(line: &str) -> Vec<(Option<&str>, &str)> {
    let mut out = Vec::new();
    let mut tag = None;
    let mut start = 0;
    let mut i = 0;
    while let Some(found) = line.get(i..).and_then(|r| r.find("==")) {
        let at = i + found;
        if let Some((len, next_tag)) = marker_at(line, at) {
            if at > start || tag.is_some() {
                out.push((tag, &line[start..at]));
            }
            tag = Some(next_tag);
            start = at + len;
            i = start;
        } else {
            i = at + 2;
        }
    }
    if start < line.len() || tag.is_some() {
        out.push((tag, &line[start..]));
    }
    out
}

/// `... - 38 passes` -> 38.
pub(super) fn passes_suffix(text: &str) -> Option<u32> {
    let t = text.trim_end();
    let t = t.strip_suffix(" passes").or_else(|| t.strip_suffix(" pass"))?;
    let (_, n) = t.rsplit_once("- ")?;
    n.trim().parse().ok()
}

/// `3. name` -> `name`.
pub(super) fn numbered_item(text: &str) -> Option<&str> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let name = text.get(digits..)?.strip_prefix('.')?.trim();
    (digits > 0 && !name.is_empty()).then_some(name)
}

/// Reads ncu's own lines out of a log file or a stdout capture. Never fails: lines it does
/// not recognise (the program's output, CSV) are ignored.
pub fn scan_log(text: &str) -> NcuLog {
    let mut log = NcuLog::default();
    let mut in_available = false;
    let mut awaiting_passes: Option<usize> = None;
    for (_, line) in numbered_lines(text) {
        if line.contains(PERMISSION_CODE) {
            log.permission_denied = true;
        }
        if line.contains(COUNTERS_BUSY) {
            log.counters_busy = true;
        }
        if line.starts_with('"') {
            continue; // a CSV row
        }
        for (tag, body) in segments(line) {
            let body = body.trim();
            match tag {
                None => {
                    if body.trim_end_matches(':') == "Available Kernels" {
                        in_available = true;
                    } else if let Some(name) = numbered_item(body).filter(|_| in_available) {
                        log.available_kernels.push(name.to_string());
                    } else if !body.is_empty() {
                        in_available = false;
                        if let Some(i) = awaiting_passes {
                            if let Some(n) = passes_suffix(body) {
                                log.profiled[i].1 = Some(n);
                                awaiting_passes = None;
                            }
                        }
                    }
                }
                Some(tag) => {
                    in_available = false;
                    match tag {
                        "PROF" => {
                            if let Some(rest) = body.strip_prefix("Profiling ") {
                                let name = match (rest.find('"'), rest.rfind('"')) {
                                    (Some(a), Some(b)) if b > a => &rest[a + 1..b],
                                    _ => rest.split(':').next().unwrap_or(rest).trim(),
                                };
                                let passes = passes_suffix(rest);
                                log.profiled.push((name.to_string(), passes));
                                awaiting_passes = passes.is_none().then(|| log.profiled.len() - 1);
                            }
                        }
                        "WARNING" => {
                            if body.contains(NO_KERNELS) {
                                log.no_kernels_profiled = true;
                            }
                            if let Some(rest) = body.split_once(NO_LINE_INFO).map(|(_, r)| r) {
                                let name = rest.trim().trim_end_matches('.').trim_matches('\'');
                                log.no_line_info.push(name.to_string());
                            }
                            log.warnings.push(body.to_string());
                        }
                        "ERROR" => log.errors.push(body.to_string()),
                        _ => {}
                    }
                }
            }
        }
    }
    log
}

/// The first line containing `needle`, or the last line.
pub(super) fn line_of(text: &str, needle: &str) -> usize {
    let mut last = 1;
    for (no, line) in numbered_lines(text) {
        if line.contains(needle) {
            return no;
        }
        last = no;
    }
    last
}

/// The error for a text in which the page's header was not found, explained by ncu's lines.
pub(super) fn no_page_error(text: &str, origin: &str, page: &str, header_hint: &str) -> ParseError {
    let log = scan_log(text);
    if log.no_kernels_profiled {
        let seen = if log.available_kernels.is_empty() {
            "ncu listed no kernel it saw".to_string()
        } else {
            format!("the kernels ncu saw: {}", log.available_kernels.join(", "))
        };
        let line = line_of(text, NO_KERNELS);
        return ParseError::new(
            origin,
            line,
            format!("no kernel was profiled (ncu: \"{NO_KERNELS}.\"), so there is no {page}; {seen}"),
        )
        .with_kind(ParseErrorKind::NoKernelProfiled);
    }
    if log.permission_denied {
        return ParseError::new(
            origin,
            line_of(text, PERMISSION_CODE),
            format!(
                "ncu may not read the GPU performance counters ({PERMISSION_CODE}), so there is no {page}"
            ),
        )
        .with_kind(ParseErrorKind::PermissionDenied);
    }
    if let Some(error) = log.errors.first() {
        return ParseError::new(
            origin,
            line_of(text, error),
            format!("ncu reported an error and printed no {page}: {error}"),
        )
        .with_kind(ParseErrorKind::NcuError);
    }
    if text.trim().is_empty() {
        return ParseError::new(origin, 1, format!("empty input: no {page}"));
    }
    let last = numbered_lines(text).count();
    ParseError::new(origin, last, format!("no {page} in {last} line(s): no header row ({header_hint})"))
}
