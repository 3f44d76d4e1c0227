//! What `cargo kprof explain NAME` shows: a limiter of the built-in rules or an entry of
//! the metric map, by its exact name or, failing that, by a loose lookup over every name
//! (case, `_`/`-`/spaces, a unique start), with suggestions when that finds none or several.

use crate::error::{ExitCode, Failure};

/// An explanation found for a name.
#[derive(Debug)]
pub struct Explained {
    /// The text to print.
    pub text: String,
    /// Set when the name was found loosely: which entry is shown for it.
    pub note: Option<String>,
}

/// The explanation of `topic`: a limiter of the built-in rules (the ids reports name),
/// else an entry of the metric map. A name that is none of them exactly is looked up
/// loosely ([`lookup`]): one entry it names loosely is shown with a note, several or none
/// are a usage error (exit 2) that suggests the closest names.
pub fn explain(topic: &str) -> Result<Explained, Failure> {
    let rules = crate::analyze::rules::Rules::builtin();
    if let Some(text) = rules.describe_limiter(topic) {
        return Ok(Explained { text, note: None });
    }
    if let Ok(text) = crate::references::explain(topic) {
        return Ok(Explained { text, note: None });
    }
    match lookup(topic) {
        Lookup::One(name) => {
            let note = Some(format!("no topic is called `{topic}`; showing `{name}`"));
            let text = match rules.describe_limiter(&name) {
                Some(text) => text,
                None => crate::references::explain(&name)?,
            };
            Ok(Explained { text, note })
        }
        Lookup::Several(names) | Lookup::Close(names) => Err(unknown_topic(topic, &names)),
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
fn unknown_topic(query: &str, close: &[String]) -> Failure {
    let mut failure = Failure::new(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loose_names_find_one_entry_or_suggest_several() {
        assert_eq!(lookup("Uncoalesced"), Lookup::One("uncoalesced-global".into()));
        assert_eq!(lookup("dram_bandwidth"), Lookup::One("dram-bandwidth".into()));
        assert_eq!(lookup("warp stalls"), Lookup::One("warp-stalls".into()));
        match lookup("coalesced") {
            Lookup::Several(names) => assert_eq!(names, ["uncoalesced-global", "coalescing"]),
            other => panic!("{other:?}"),
        }
        match lookup("dram_bandwith") {
            Lookup::Close(names) => assert_eq!(names.first().map(String::as_str), Some("dram-bandwidth")),
            other => panic!("{other:?}"),
        }
        // Two edits make a three-letter word into almost anything: nothing is suggested.
        assert_eq!(lookup("foo"), Lookup::Close(Vec::new()));
    }

    #[test]
    fn stems_are_long_and_cover_most_of_the_word() {
        assert!(shares_stem("coalesced", "coalescing"));
        assert!(shares_stem("occupy", "occupancy-registers"));
        assert!(!shares_stem("registers", "region"), "three letters are no stem");
        assert!(!shares_stem("transpose", "transform"), "five of nine letters are too few");
    }
}
