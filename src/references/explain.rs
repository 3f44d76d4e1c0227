//! `ncu-metric-map.md` as [`Topic`]s, and `cargo kprof explain`.

use std::fmt::Write as _;
use std::sync::OnceLock;

use super::{METRIC_MAP, PROFILING_GUIDE_INDEX};
use crate::error::{ExitCode, Failure};
use crate::model::stage::Stage;
use crate::ncu::StageCollection;
use crate::suggest::edit_distance;

/// What a [`Topic`] of the metric map describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TopicKind {
    /// A profiling question (`memory-or-compute`, `coalescing`, ...).
    Question,
    /// An ncu metric, named with its rollup and sub-metric.
    Metric,
    /// An ncu section (`SpeedOfLight`, ...).
    Section,
    /// One of our stages ([`Stage`]).
    Stage,
    /// A bottleneck classification (`memory-bound`, ...).
    Classification,
}

impl TopicKind {
    /// Every kind, in the order the metric map lists them.
    pub const ALL: [TopicKind; 5] = [
        TopicKind::Question,
        TopicKind::Metric,
        TopicKind::Section,
        TopicKind::Stage,
        TopicKind::Classification,
    ];

    /// The word used in the metric map's `Kind:` field.
    pub fn name(self) -> &'static str {
        match self {
            TopicKind::Question => "question",
            TopicKind::Metric => "metric",
            TopicKind::Section => "section",
            TopicKind::Stage => "stage",
            TopicKind::Classification => "classification",
        }
    }

    fn from_name(s: &str) -> Option<TopicKind> {
        TopicKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// One entry of the metric map: a `### NAME` heading and its `- Field: text` bullets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topic {
    /// The heading, without code quotes.
    pub name: String,
    /// The `Kind:` field.
    pub kind: TopicKind,
    /// The `Aliases:` field, split at commas, without code quotes.
    pub aliases: Vec<String>,
    /// The other fields in file order, continuation lines joined with single spaces.
    pub fields: Vec<(String, String)>,
    /// 1-based line of the heading in the metric map.
    pub line: usize,
}

impl Topic {
    /// A field's text (`"Meaning"`, `"Usual fixes"`, ...).
    pub fn field(&self, key: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The name and every alias.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.name.as_str()).chain(self.aliases.iter().map(String::as_str))
    }
}

/// The fields every topic must have, besides `Kind`.
pub const REQUIRED_FIELDS: [&str; 3] = ["Meaning", "Evidence", "Usual fixes"];

/// Parses the metric map. Pure; [`topics`] uses it on the embedded file.
///
/// Only level-3 headings open entries; a level-1 or level-2 heading closes the current
/// one, and text outside entries is ignored. Inside an entry every line is a `- Field:
/// text` bullet, a continuation indented by two spaces, or blank. Errors name the line.
pub fn parse_metric_map(markdown: &str) -> Result<Vec<Topic>, String> {
    struct Open {
        name: String,
        line: usize,
        fields: Vec<(String, String)>,
    }

    fn close(open: Open, out: &mut Vec<Topic>) -> Result<(), String> {
        let mut kind = None;
        let mut aliases = Vec::new();
        let mut fields = Vec::new();
        for (key, value) in open.fields {
            if fields.iter().any(|(k, _): &(String, String)| *k == key) || (key == "Kind" && kind.is_some()) {
                return Err(format!("line {}: `{}` repeats the field `{key}`", open.line, open.name));
            }
            match key.as_str() {
                "Kind" => {
                    kind = Some(TopicKind::from_name(&value).ok_or_else(|| {
                        format!("line {}: `{}` has an unknown Kind `{value}`", open.line, open.name)
                    })?);
                }
                "Aliases" => {
                    aliases = value.split(',').map(strip_code).filter(|a| !a.is_empty()).collect();
                }
                _ => fields.push((key, value)),
            }
        }
        let kind = kind.ok_or_else(|| format!("line {}: `{}` has no Kind field", open.line, open.name))?;
        out.push(Topic { name: open.name, kind, aliases, fields, line: open.line });
        Ok(())
    }

    let mut out = Vec::new();
    let mut open: Option<Open> = None;
    for (index, line) in markdown.lines().enumerate() {
        let number = index + 1;
        if let Some(heading) = line.strip_prefix("### ") {
            if let Some(done) = open.take() {
                close(done, &mut out)?;
            }
            let name = strip_code(heading);
            if name.is_empty() {
                return Err(format!("line {number}: empty heading"));
            }
            open = Some(Open { name, line: number, fields: Vec::new() });
        } else if line.starts_with('#') {
            if let Some(done) = open.take() {
                close(done, &mut out)?;
            }
        } else if let Some(entry) = open.as_mut() {
            if line.trim().is_empty() {
                continue;
            }
            if let Some(bullet) = line.strip_prefix("- ") {
                let (key, value) = bullet
                    .split_once(": ")
                    .ok_or_else(|| format!("line {number}: expected `- Field: text` in `{}`", entry.name))?;
                entry.fields.push((key.trim().to_string(), value.trim().to_string()));
            } else if let (Some(rest), Some(last)) = (line.strip_prefix("  "), entry.fields.last_mut()) {
                last.1.push(' ');
                last.1.push_str(rest.trim());
            } else {
                return Err(format!("line {number}: unexpected text inside `{}`", entry.name));
            }
        }
    }
    if let Some(done) = open.take() {
        close(done, &mut out)?;
    }
    Ok(out)
}

fn strip_code(s: &str) -> String {
    s.trim().trim_matches('`').trim().to_string()
}

/// The embedded metric map, parsed on first use.
///
/// # Panics
/// If the embedded `ncu-metric-map.md` does not parse; like [`gpu_specs`], a build defect
/// that `tests/references.rs` catches.
pub fn topics() -> &'static [Topic] {
    static TOPICS: OnceLock<Vec<Topic>> = OnceLock::new();
    TOPICS.get_or_init(|| {
        parse_metric_map(METRIC_MAP.contents)
            .unwrap_or_else(|e| panic!("the embedded {} does not parse: {e}", METRIC_MAP.path))
    })
}

/// The part of a metric name before its first `.` (the counter without rollup).
fn base_name(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// How a query matched its topics; decides the note `explain` prints above an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Match {
    /// A name or alias, exactly or ignoring case, or a stage spelling.
    Name,
    /// The not-issued twin of a stall reason (`stall_lg (Not Issued)`, `..._not_issued`).
    NotIssued,
    /// A metric named by its base name or with another rollup or sub-metric.
    Counter,
}

/// Resolves a query in this order of preference: an exact name or alias; a
/// case-insensitive one (may be several, e.g. the `Occupancy` section and the `occupancy`
/// stage); a stage spelling [`Stage`] accepts (`sol`, `speed_of_light`); a metric with the
/// same base name (`sm__throughput`). Each step is tried on the query as given, then on it
/// without a not-issued suffix.
fn resolve(query: &str) -> (Vec<&'static Topic>, Match) {
    let all = topics();
    let query = query.trim();
    let mut forms = vec![(query, Match::Name)];
    for suffix in [" (Not Issued)", "_not_issued"] {
        if let Some(stripped) = query.strip_suffix(suffix) {
            forms.push((stripped, Match::NotIssued));
        }
    }
    for (q, how) in forms {
        if q.is_empty() {
            continue;
        }
        let exact: Vec<_> = all.iter().filter(|t| t.names().any(|n| n == q)).collect();
        if !exact.is_empty() {
            return (exact, how);
        }
        let folded: Vec<_> = all.iter().filter(|t| t.names().any(|n| n.eq_ignore_ascii_case(q))).collect();
        if !folded.is_empty() {
            return (folded, how);
        }
        if let Ok(stage) = q.parse::<Stage>() {
            let by_stage: Vec<_> =
                all.iter().filter(|t| t.kind == TopicKind::Stage && t.name == stage.name()).collect();
            if !by_stage.is_empty() {
                return (by_stage, how);
            }
        }
        let base = base_name(q);
        if base.contains("__") {
            let by_base: Vec<_> = all
                .iter()
                .filter(|t| {
                    t.kind == TopicKind::Metric && t.names().any(|n| base_name(n).eq_ignore_ascii_case(base))
                })
                .collect();
            if !by_base.is_empty() {
                return (by_base, if how == Match::Name { Match::Counter } else { how });
            }
        }
    }
    (Vec::new(), Match::Name)
}

/// The topics a query names: an exact name or alias, a case-insensitive one (may be
/// several, e.g. the `Occupancy` section and the `occupancy` stage), a stage spelling
/// [`Stage`] accepts (`sol`, `speed_of_light`), or a metric with the same base name
/// (`sm__throughput`); the not-issued twins of stall reasons resolve to the reason.
/// Empty when nothing matches.
pub fn find_topics(query: &str) -> Vec<&'static Topic> {
    resolve(query).0
}

/// The meaning, evidence and usual fixes for a metric (with or without its rollup
/// suffix), a section, a stage, a classification or a profiling question, rendered as
/// plain text from `references/nvidia/ncu-metric-map.md`.
///
/// An unknown topic is a [`Failure`] with [`ExitCode::Usage`] whose help suggests the
/// closest known names.
pub fn explain(topic: &str) -> Result<String, Failure> {
    let query = topic.trim();
    let (found, how) = resolve(query);
    if found.is_empty() {
        return Err(unknown_topic(query));
    }
    let rendered: Vec<String> = found.iter().map(|t| render_topic(t, query, how)).collect();
    Ok(rendered.join("\n\n"))
}

const WIDTH: usize = 100;

fn render_topic(topic: &Topic, query: &str, how: Match) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} ({})", topic.name, topic.kind.name());
    let note = match how {
        Match::Name => None,
        Match::NotIssued => Some(format!(
            "`{query}` counts only the samples taken when the scheduler issued nothing; \
             otherwise it reads like the entry below."
        )),
        Match::Counter if base_name(query) == query => Some(format!(
            "`{query}` is the counter's base name; ncu collects it only with a rollup such as the \
             one above. See \"Metric structure and naming\" in {}.",
            PROFILING_GUIDE_INDEX.path
        )),
        Match::Counter => Some(format!(
            "`{query}` is another rollup or sub-metric of the same counter. See \"Metric structure \
             and naming\" in {}.",
            PROFILING_GUIDE_INDEX.path
        )),
    };
    if let Some(note) = note {
        wrap_field(&mut out, "Note", &note);
    }
    if !topic.aliases.is_empty() {
        wrap_field(&mut out, "Also known as", &topic.aliases.join(", "));
    }
    for (key, value) in &topic.fields {
        // Bold marks emphasis in the markdown; on a terminal it is noise.
        wrap_field(&mut out, key, &value.replace("**", ""));
    }
    match topic.kind {
        TopicKind::Metric | TopicKind::Section => {
            let stages: Vec<&str> = collected_by(topic).iter().map(|s| s.name()).collect();
            if !stages.is_empty() {
                wrap_field(&mut out, "Collected by stages", &stages.join(", "));
            }
        }
        TopicKind::Stage => {
            if let Ok(stage) = topic.name.parse::<Stage>() {
                let collection = StageCollection::Named(stage);
                // One line: it is meant to be copied.
                let _ = writeln!(out, "ncu options: {}", collection.ncu_args().join(" "));
                wrap_field(&mut out, "Raw output", &crate::profile::dir::raw_page_rel(&collection));
                let passes = match crate::ncu::stages::definition(stage).passes_h200 {
                    Some(p) => format!("{p} per launch, seen on an H200 (ncu 2025.3.1)"),
                    None => "not measured yet".to_string(),
                };
                wrap_field(&mut out, "Replay passes", &passes);
            }
        }
        TopicKind::Question | TopicKind::Classification => {}
    }
    let _ = write!(out, "Source: {} (line {})", METRIC_MAP.path, topic.line);
    out
}

/// The sections a metric or section topic is collected by: for a section itself, for a
/// metric the section names in its `Section` field (none when the field starts with
/// "none": the name is only available through `--metrics`).
fn sections_of(topic: &Topic) -> Vec<&str> {
    match topic.kind {
        TopicKind::Section => vec![topic.name.as_str()],
        TopicKind::Metric => {
            let text = topic.field("Section").unwrap_or_default();
            if text.starts_with("none") {
                return Vec::new();
            }
            text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|word| topics().iter().any(|t| t.kind == TopicKind::Section && t.name == *word))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The stages whose raw CSV carries a metric or section topic. `full` collects ncu's
/// `full` set, which holds every section in the metric map (ncu 2025.3.1 `--list-sets`);
/// `source` prints the source page, not raw metrics, so it never counts. `launch__*`
/// metrics need no replay and come with every stage (seen on an H200, ncu 2025.3.1).
fn collected_by(topic: &Topic) -> Vec<Stage> {
    use crate::ncu::stages::definition;
    let sections = sections_of(topic);
    // ncu's raw page carries the launch__* metrics whatever else a stage asks for.
    let launch = topic.kind == TopicKind::Metric && topic.name.starts_with("launch__");
    let requested = |stage: Stage| {
        topic.kind == TopicKind::Metric
            && (definition(stage).metrics.contains(&topic.name.as_str())
                || (launch && definition(stage).page == crate::ncu::stages::Page::Raw))
    };
    let in_sections = |stage: Stage| definition(stage).sections.iter().any(|s| sections.contains(s));
    let anywhere = Stage::ALL.into_iter().any(|s| requested(s) || in_sections(s)) || !sections.is_empty();
    Stage::ALL
        .into_iter()
        .filter(|&stage| match stage {
            Stage::Full => anywhere,
            _ => requested(stage) || in_sections(stage),
        })
        .collect()
}

/// Appends `Key: text` wrapped at [`WIDTH`] columns, continuation lines indented by two.
/// Appends `key: text` broken at spaces into lines of at most [`WIDTH`] characters,
/// continuation lines indented by two spaces (`explain`'s layout, limiters included).
pub(crate) fn wrap_field(out: &mut String, key: &str, text: &str) {
    let mut line = format!("{key}:");
    for word in text.split_whitespace() {
        if line.len() + 1 + word.len() > WIDTH && line.trim_start().contains(' ') {
            out.push_str(&line);
            out.push('\n');
            line = format!("  {word}");
        } else {
            line.push(' ');
            line.push_str(word);
        }
    }
    out.push_str(&line);
    out.push('\n');
}

fn unknown_topic(query: &str) -> Failure {
    let mut failure = Failure::new(
        ExitCode::Usage,
        format!(
            "unknown topic `{query}`: not a metric, section, stage, classification or question \
             in {}",
            METRIC_MAP.path
        ),
    );
    let close = suggestions(query);
    if !close.is_empty() {
        let names: Vec<String> = close.iter().map(|n| format!("`{n}`")).collect();
        failure = failure.help(format!("did you mean {}?", names.join(", ")));
    }
    let stages: Vec<&str> = Stage::ALL.iter().map(|s| s.name()).collect();
    failure.help(format!(
        "metrics may be given without their rollup (`sm__throughput`); stages are {}",
        stages.join(", ")
    ))
}

/// Up to five known names close to `query`: small edit distance on the whole name or on
/// the base name, or one containing the other.
pub fn suggestions(query: &str) -> Vec<&'static str> {
    let q = query.trim().to_lowercase();
    if q.is_empty() {
        return Vec::new();
    }
    let limit = (q.chars().count() / 4).max(2);
    let mut scored: Vec<(usize, usize, &'static str)> = Vec::new();
    for topic in topics() {
        for name in topic.names() {
            let n = name.to_lowercase();
            let mut distance = edit_distance(&q, &n);
            if n.contains('.') || q.contains('.') {
                distance = distance.min(edit_distance(base_name(&q), base_name(&n)));
            }
            let contains = q.chars().count() >= 3 && (n.contains(&q) || q.contains(&n));
            if distance <= limit || contains {
                let rank = if distance <= limit { distance } else { limit + 1 };
                scored.push((rank, n.len().abs_diff(q.len()), name));
            }
        }
    }
    scored.sort();
    let mut out: Vec<&'static str> = Vec::new();
    for (_, _, name) in scored {
        if !out.contains(&name) {
            out.push(name);
        }
        if out.len() == 5 {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parser_joins_continuations_and_rejects_stray_text() {
        let md =
            "# T\nintro\n- not an entry\n## Part\n### `a__b.sum`\n- Kind: metric\n- Meaning: one\n  two\n\
                  - Aliases: `x`, y\n## Next\ntext\n";
        let topics = parse_metric_map(md).unwrap();
        assert_eq!(topics.len(), 1);
        assert_eq!(topics[0].name, "a__b.sum");
        assert_eq!(topics[0].field("Meaning"), Some("one two"));
        assert_eq!(topics[0].aliases, vec!["x", "y"]);
        assert_eq!(topics[0].line, 5);

        let err = parse_metric_map("### a\n- Kind: metric\nstray\n").unwrap_err();
        assert!(err.contains("line 3"), "{err}");
        let err = parse_metric_map("### a\n- Meaning: m\n").unwrap_err();
        assert!(err.contains("no Kind"), "{err}");
        let err = parse_metric_map("### a\n- Kind: gauge\n").unwrap_err();
        assert!(err.contains("unknown Kind"), "{err}");
        let err = parse_metric_map("### a\n- Kind: metric\n- Meaning: x\n- Meaning: y\n").unwrap_err();
        assert!(err.contains("repeats"), "{err}");
    }

    #[test]
    fn wrapping_keeps_words_whole() {
        let mut out = String::new();
        wrap_field(&mut out, "Meaning", &"word ".repeat(60));
        assert!(out.lines().all(|l| l.len() <= WIDTH), "{out}");
        assert!(out.lines().skip(1).all(|l| l.starts_with("  word")), "{out}");
    }
}
