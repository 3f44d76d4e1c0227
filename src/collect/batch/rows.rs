//! A batched page's rows, told apart per member: which launches are whose, and each
//! member's page with only its own rows.

use std::collections::BTreeMap;

use super::function_name;
use crate::collect::run::KernelRun;
use crate::ncu::parse::RawPage;

/// For each member in `group`, the indices of the page's rows that are its own. A row's
/// function goes to the member whose filter matches it and matches the fewest functions of
/// the page (`.*hgemm.*` and `.*hgemm_tiled.*`: `hgemm_tiled` goes to the second, as each
/// kernel's own case would have launched it); a function two such members tie for
/// belongs to neither, and they run alone.
pub(super) fn split_rows(
    page: &RawPage,
    members: &[KernelRun<'_>],
    group: &[usize],
) -> BTreeMap<usize, Vec<usize>> {
    let matches = |i: usize, name: &str, function: &str| {
        members[i].kernel.filter.as_ref().is_some_and(|f| f.matches(name) || f.matches(function))
    };
    let mut functions: Vec<(String, String)> = Vec::new();
    for l in page.launches() {
        let name = l.kernel_name().to_string();
        if !functions.iter().any(|(n, _)| *n == name) {
            let function = function_name(&name);
            functions.push((name, function));
        }
    }
    let breadth: BTreeMap<usize, usize> =
        group.iter().map(|i| (*i, functions.iter().filter(|(n, f)| matches(*i, n, f)).count())).collect();
    let mut rows: BTreeMap<usize, Vec<usize>> = group.iter().map(|i| (*i, Vec::new())).collect();
    let mut tied: Vec<usize> = Vec::new();
    for l in page.launches() {
        let name = l.kernel_name();
        let function = function_name(name);
        let owners: Vec<usize> = group.iter().copied().filter(|i| matches(*i, name, &function)).collect();
        let Some(narrowest) = owners.iter().map(|i| breadth[i]).min() else { continue };
        let best: Vec<usize> = owners.into_iter().filter(|i| breadth[i] == narrowest).collect();
        match best.as_slice() {
            [one] => rows.entry(*one).or_default().push(l.index()),
            several => tied.extend_from_slice(several),
        }
    }
    for i in tied {
        rows.insert(i, Vec::new());
    }
    rows
}

/// The page with only `rows`, as text and parsed, when it has any and reads back whole.
pub(super) fn own_page(page: &RawPage, text: &str, rows: &[usize]) -> Option<(String, RawPage)> {
    if rows.is_empty() {
        return None;
    }
    let own = page.text_with_rows(text, |r| rows.contains(&r))?;
    let parsed = RawPage::parse(&own, "batched page").ok()?;
    (parsed.rows.len() == rows.len() && parsed.columns == page.columns).then_some((own, parsed))
}
