//! `cargo kprof explain [NAME]`: a limiter of the rules, or a metric, section, stage or
//! verdict from `references/`; without a name, the list of every topic.

use anyhow::Result;

use crate::cli::ExplainArgs;
use crate::error::ExitCode;
use crate::references::TopicKind;
use crate::shell::Shell;

/// Prints the topic's explanation: a limiter of the built-in rules (the ids reports name),
/// else an entry of the metric map. A name that is none of them exactly is looked up
/// loosely ([`lookup`]): one entry it names loosely is shown with a note, several or none
/// are a usage error that suggests the closest names. Without a topic, lists them all by
/// kind.
pub(crate) fn explain(args: &ExplainArgs, shell: &Shell) -> Result<ExitCode> {
    let Some(topic) = args.topic.as_deref().map(str::trim) else {
        shell.out(topics());
        return Ok(ExitCode::Success);
    };
    let rules = crate::analyze::rules::Rules::builtin();
    if let Some(text) = rules.describe_limiter(topic) {
        shell.out(text.trim_end());
        return Ok(ExitCode::Success);
    }
    if let Ok(text) = crate::references::explain(topic) {
        shell.out(text);
        return Ok(ExitCode::Success);
    }
    match lookup(topic) {
        Lookup::One(name) => {
            shell.note(format!("no topic is called `{topic}`; showing `{name}`"));
            match rules.describe_limiter(&name) {
                Some(text) => shell.out(text.trim_end()),
                None => shell.out(crate::references::explain(&name)?),
            }
            Ok(ExitCode::Success)
        }
        Lookup::Several(names) | Lookup::Close(names) => Err(unknown_topic(topic, &names).into()),
    }
}

/// What a loose lookup found.
#[derive(Debug, PartialEq, Eq)]
enum Lookup {
    /// One entry: the query is one of its names written another way (case, `_` for `-`,
    /// spaces), or the start of exactly one name.
    One(String),
    /// Several names start with or contain the query, best first.
    Several(Vec<String>),
    /// Names close to the query by spelling or by a shared word stem; may be empty.
    Close(Vec<String>),
}

/// A name as the loose lookup compares it: lower case, with `_` and spaces as `-`.
fn folded(name: &str) -> String {
    name.trim().to_lowercase().replace(['_', ' '], "-")
}

/// Every name `explain` answers to, with the entry it shows: the limiters, then the
/// metric map's names and aliases.
fn all_names() -> Vec<(String, String)> {
    let rules = crate::analyze::rules::Rules::builtin();
    let mut out: Vec<(String, String)> =
        rules.limiter_ids().into_iter().map(|id| (id.into(), id.into())).collect();
    for t in crate::references::topics() {
        out.extend(t.names().map(|n| (n.to_string(), t.name.clone())));
    }
    out
}

/// The most names a suggestion lists.
const MAX_SUGGESTIONS: usize = 6;

/// Looks `query` up among every limiter and topic name, ignoring case and `_`/`-`/space:
/// an equal name, else a name it starts or is part of (one entry: shown; several:
/// suggested, prefixes first), else the names within a few edits of it or sharing a word
/// stem with it (`coalesced`, `coalescing`).
fn lookup(query: &str) -> Lookup {
    let q = folded(query);
    let names = all_names();
    let entries = |hit: &dyn Fn(&str) -> bool| {
        let mut found: Vec<String> = Vec::new();
        for (name, entry) in &names {
            if hit(&folded(name)) && !found.contains(entry) {
                found.push(entry.clone());
            }
        }
        found
    };
    let equal = entries(&|n| n == q);
    if equal.len() == 1 {
        return Lookup::One(equal[0].clone());
    }
    if !equal.is_empty() {
        return Lookup::Several(equal);
    }
    if q.chars().count() >= 3 {
        let prefixed = entries(&|n| n.starts_with(&q));
        if prefixed.len() == 1 {
            return Lookup::One(prefixed[0].clone());
        }
        let mut within = prefixed;
        for e in entries(&|n| n.contains(&q)) {
            if !within.contains(&e) {
                within.push(e);
            }
        }
        if !within.is_empty() {
            // Then the other forms of the query's words (`coalesced`: `coalescing`).
            for e in entries(&|n| shares_stem(&q, n)) {
                if !within.contains(&e) {
                    within.push(e);
                }
            }
            within.truncate(MAX_SUGGESTIONS);
            return Lookup::Several(within);
        }
    }
    Lookup::Close(close_names(&q, &names))
}

/// Names within a few edits of the folded query `q` (more for longer queries), closest
/// first; only when there are none, names with a word that shares a long stem with one of
/// the query's words.
fn close_names(q: &str, names: &[(String, String)]) -> Vec<String> {
    let length = q.chars().count();
    // Two edits turn a three-letter word into almost any other.
    let limit = (length / 4).max(if length <= 4 { 1 } else { 2 });
    let mut scored: Vec<(usize, usize, &str)> = Vec::new();
    for (name, entry) in names {
        let n = folded(name);
        let mut distance = crate::suggest::edit_distance(q, &n);
        if n.contains('.') || q.contains('.') {
            let base = |s: &str| s.split('.').next().unwrap_or_default().to_string();
            distance = distance.min(crate::suggest::edit_distance(&base(q), &base(&n)));
        }
        if distance <= limit {
            scored.push((distance, n.len().abs_diff(q.len()), entry));
        } else if shares_stem(q, &n) {
            scored.push((limit + 1, n.len().abs_diff(q.len()), entry));
        }
    }
    if scored.iter().any(|&(d, ..)| d <= limit) {
        scored.retain(|&(d, ..)| d <= limit);
    }
    scored.sort();
    let mut out: Vec<String> = Vec::new();
    for (_, _, entry) in scored {
        if !out.iter().any(|o| o == entry) && out.len() < MAX_SUGGESTIONS {
            out.push(entry.to_string());
        }
    }
    out
}

/// Whether a word of `a` and a word of `b` (split at `-`) begin with the same five or more
/// letters, covering most of the shorter word: `coalesced` and `coalescing`.
fn shares_stem(a: &str, b: &str) -> bool {
    a.split('-').any(|x| {
        b.split('-').any(|y| {
            let common = x.chars().zip(y.chars()).take_while(|(p, q)| p == q).count();
            let shorter = x.chars().count().min(y.chars().count());
            common >= 5 && common * 10 >= shorter * 7
        })
    })
}

/// The error for a name `explain` does not know, with the names to try.
fn unknown_topic(query: &str, close: &[String]) -> crate::error::Failure {
    let mut failure = crate::error::Failure::new(
        ExitCode::Usage,
        format!(
            "`{query}` is not a limiter, metric, section, stage, classification or question explain knows"
        ),
    );
    if !close.is_empty() {
        let names: Vec<String> = close.iter().map(|n| format!("`{n}`")).collect();
        failure = failure.help(format!("did you mean {}?", names.join(", ")));
    }
    failure.help(
        "`cargo kprof explain` lists every name; a metric may drop its rollup (`sm__throughput`), and case, \
         `_` and `-` do not matter",
    )
}

/// Every topic `explain` knows, a line per kind; metrics are many, so only counted.
fn topics() -> String {
    let rules = crate::analyze::rules::Rules::builtin();
    let mut out = format!("limiters (the causes reports name): {}\n", rules.limiter_ids().join(", "));
    let all = crate::references::topics();
    for kind in TopicKind::ALL {
        let names: Vec<&str> = all.iter().filter(|t| t.kind == kind).map(|t| t.name.as_str()).collect();
        if kind == TopicKind::Metric {
            out.push_str(&format!(
                "metrics: {} of them, e.g. {}; a name may drop its rollup (`sm__throughput`)\n",
                names.len(),
                names.iter().take(3).copied().collect::<Vec<_>>().join(", ")
            ));
        } else {
            out.push_str(&format!("{}s: {}\n", kind.name(), names.join(", ")));
        }
    }
    out.push_str("`cargo kprof explain NAME` explains one; a near miss suggests the closest names.");
    out
}
