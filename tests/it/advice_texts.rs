//! What a verdict prints is never a template: on the recorded pages, with fields taken
//! away at random, and in the case that once printed one (uncoalesced loads, atomics as
//! the only stores). Every placeholder of the built-in rules names a summary field.

use std::collections::BTreeSet;

use cargo_kprof::analyze::rules::{KernelVerdict, Rules, BUILTIN_RULES};
use cargo_kprof::analyze::summary::{self, KernelSummary};
use cargo_kprof::ncu::parse::RawPage;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

use crate::support::{recorded_summaries, recording};

/// The recorded page with `cells` (metric, value) set in every launch row, as ncu would
/// print them: each cell of a raw page is quoted, the first row names the metrics.
fn with_cells(page: &str, cells: &[(&str, &str)]) -> String {
    let split = |line: &str| -> Vec<String> {
        line.trim_end_matches('\r').trim_matches('"').split("\",\"").map(str::to_string).collect()
    };
    let mut lines = page.lines();
    let header = lines.next().unwrap();
    let names = split(header);
    let mut out = vec![header.to_string(), lines.next().unwrap().to_string()];
    for line in lines {
        let mut row = split(line);
        for (metric, value) in cells {
            let i = names.iter().position(|n| n == metric).unwrap_or_else(|| panic!("no column {metric}"));
            row[i] = value.to_string();
        }
        out.push(format!("\"{}\"", row.join("\",\"")));
    }
    out.join("\n") + "\n"
}

/// The texts a verdict prints: the advice, its headline (the console line) and the
/// hypotheses.
fn printed(v: &KernelVerdict) -> Vec<String> {
    let mut texts: Vec<String> = v.hypotheses.iter().map(|h| h.text.clone()).collect();
    if let Some(l) = &v.limiter {
        texts.push(l.advice.clone());
        texts.push(l.advice.split(": ").next().unwrap_or(&l.advice).to_string());
    }
    texts
}

/// A kernel reading 4 of every 32 bytes it loads, whose only global writes are atomics:
/// ncu prints 0 store sectors, 0 store requests and 0 bytes per store sector. The loads
/// advice is given, filled in; before, the stores advice was printed as its template.
#[test]
fn uncoalesced_loads_with_atomics_as_the_only_stores_get_the_loads_advice() {
    let rel = "zoo-full/aos_field_gather_full_raw.csv";
    let page = with_cells(
        &recording(rel),
        &[
            ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "0"),
            ("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "0"),
            ("smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio", "0"),
        ],
    );
    let page = RawPage::parse(&page, rel).unwrap();
    let summary = summary::summarize([&page], None);
    let k = &summary.kernels[0];
    assert_eq!(k.get("global_store_sectors"), Some(0.0));
    assert_eq!(k.get("global_store_bytes_per_sector"), None);
    assert_eq!(k.get("store_sectors_per_request"), None);
    let v = Rules::builtin().decide(k);
    let l = v.limiter.as_ref().expect("a limiter");
    assert_eq!(l.id, "uncoalesced-global");
    assert!(l.advice.starts_with("Global loads use 4 of every 32 bytes fetched ("), "{}", l.advice);
    for t in printed(&v) {
        assert!(!t.contains(['{', '}']), "{t}");
    }
}

/// Every advice text of the built-in rules, by limiter: (advice id, text).
fn advice_templates() -> Vec<(String, Vec<(String, String)>)> {
    let doc: serde_yaml::Value = serde_yaml::from_str(BUILTIN_RULES).unwrap();
    let str_of = |v: &serde_yaml::Value| v.as_str().unwrap().to_string();
    doc["limiters"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|l| {
            let advice = l["advice"].as_sequence().unwrap();
            (str_of(&l["id"]), advice.iter().map(|a| (str_of(&a["id"]), str_of(&a["text"]))).collect())
        })
        .collect()
}

/// The `{field}` names of a template, and the text around them (one more piece than names).
fn template_parts(text: &str) -> (Vec<String>, Vec<String>) {
    let (mut names, mut pieces, mut rest) = (Vec::new(), Vec::new(), text);
    while let Some(start) = rest.find('{') {
        let len = rest[start..].find('}').expect("a closing brace");
        pieces.push(rest[..start].to_string());
        names.push(rest[start + 1..start + len].to_string());
        rest = &rest[start + len + 1..];
    }
    pieces.push(rest.to_string());
    (names, pieces)
}

/// The values a rendered `text` put in the placeholders of `template`, if it is a
/// rendering of it.
fn filled_values(text: &str, template: &str) -> Option<Vec<(String, String)>> {
    let (names, pieces) = template_parts(template);
    let mut rest = text.strip_prefix(pieces[0].as_str())?;
    let mut values = Vec::new();
    for (name, next) in names.iter().zip(&pieces[1..]) {
        let end = if next.is_empty() { rest.len() } else { rest.find(next.as_str())? };
        values.push((name.clone(), rest[..end].to_string()));
        rest = &rest[end + next.len()..];
    }
    rest.is_empty().then_some(values)
}

/// What is wrong with what a verdict prints: a brace, or an advice whose numbers are not
/// its evidence values (as reports format them) or that is no rendering of its limiter's
/// advice.
fn render_problems(v: &KernelVerdict, templates: &[(String, Vec<(String, String)>)]) -> Vec<String> {
    let mut out: Vec<String> =
        printed(v).into_iter().filter(|t| t.contains(['{', '}'])).map(|t| format!("a brace: {t}")).collect();
    let Some(l) = &v.limiter else { return out };
    let variants = &templates.iter().find(|(id, _)| *id == l.id).expect("a built-in limiter").1;
    let rendering =
        variants.iter().filter(|(id, _)| *id == l.advice_id).find_map(|(_, t)| filled_values(&l.advice, t));
    let Some(values) = rendering else {
        out.push(format!("not a rendering of `{}`'s advice: {}", l.id, l.advice));
        return out;
    };
    for (field, value) in values {
        if !v.evidence.iter().any(|e| e.field == field && cargo_kprof::units::value(e.value) == value) {
            out.push(format!("`{field}` = {value} is not in the evidence: {}", l.advice));
        }
    }
    out
}

/// Cases of the property test: each takes fields away from every recorded kernel.
const CASES: u32 = 96;

/// Every kernel of every recorded raw page, with random subsets of its summary's fields
/// set to None: nothing printed holds a brace, and every number in an advice is among the
/// verdict's evidence values. Bounded and seeded, to stay within the CI budget.
#[test]
fn no_recorded_kernel_prints_a_template_whatever_was_collected() {
    let kernels: Vec<(String, KernelSummary)> = recorded_summaries()
        .into_iter()
        .flat_map(|(dir, s)| {
            s.kernels.into_iter().map(move |k| (format!("{} / {}", dir.display(), k.kernel), k))
        })
        .collect();
    assert!(kernels.len() >= 60, "only {} recorded kernels", kernels.len());
    let (rules, templates) = (Rules::builtin(), advice_templates());
    let check = |drop: &dyn Fn(usize, usize) -> bool| -> Result<(), TestCaseError> {
        for (n, (name, k)) in kernels.iter().enumerate() {
            let mut k = k.clone();
            for (i, v) in k.fields.values_mut().enumerate() {
                if drop(n, i) {
                    *v = None;
                }
            }
            let problems = render_problems(&rules.decide(&k), &templates);
            prop_assert!(problems.is_empty(), "{name}: {}", problems.join("\n"));
        }
        Ok(())
    };
    check(&|_, _| false).unwrap();
    let config = Config { cases: CASES, failure_persistence: None, ..Config::default() };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, b"cargo-kprof prints no templates!");
    let mut runner = TestRunner::new_with_rng(config, rng);
    // A seed and a share of fields to drop, 1 in `every`.
    runner
        .run(&(any::<u64>(), 2u64..12), |(seed, every)| {
            check(&|n, i| {
                let mut x = seed ^ ((n as u64) << 32 | i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                x ^= x >> 31;
                x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
                (x ^ (x >> 29)) % every == 0
            })
        })
        .unwrap();
}

/// Every placeholder of every advice of every limiter, and of every class rule's
/// hypotheses, names a summary field; each limiter has an advice without any.
#[test]
fn every_placeholder_of_the_builtin_rules_names_a_summary_field() {
    let fields: BTreeSet<&str> = summary::field_names().into_iter().collect();
    let mut unknown = Vec::new();
    let templates = advice_templates();
    assert!(templates.len() >= 20, "{} limiters", templates.len());
    for (limiter, variants) in &templates {
        for (advice, text) in variants {
            let (names, _) = template_parts(text);
            unknown.extend(
                names
                    .iter()
                    .filter(|n| !fields.contains(n.as_str()))
                    .map(|n| format!("{limiter} / {advice}: {n}")),
            );
        }
        assert!(variants.iter().any(|(_, t)| !t.contains('{')), "{limiter} has no advice without numbers");
    }
    let doc: serde_yaml::Value = serde_yaml::from_str(BUILTIN_RULES).unwrap();
    for rule in doc["rules"].as_sequence().unwrap() {
        for h in rule["hypotheses"].as_sequence().into_iter().flatten() {
            let (names, _) = template_parts(h["text"].as_str().unwrap());
            unknown.extend(
                names
                    .into_iter()
                    .filter(|n| !fields.contains(n.as_str()))
                    .map(|n| format!("{} / hypothesis: {n}", rule["id"].as_str().unwrap())),
            );
        }
    }
    assert!(unknown.is_empty(), "placeholders that name no field:\n{}", unknown.join("\n"));
    // The same walk catches a typo: the engine refuses it too, naming the advice.
    let typo = BUILTIN_RULES.replacen("{global_load_bytes_per_sector}", "{global_load_byte_per_sector}", 1);
    let err = Rules::parse(&typo, "typo.yaml").unwrap_err().to_string();
    assert!(err.contains("unknown field `global_load_byte_per_sector`"), "{err}");
}
