//! The source stage batched: one source page of several kernels, cut into each kernel's
//! own page by the functions its blocks name.
//!
//! ncu's source page has no launch rows to split by: each profiled function prints one
//! block per source file its SASS maps to (its own file, inlined headers such as
//! `mma.hpp`), each block headed by a "File Path" and a "Function Name" row, and the
//! blocks follow each other with no other separator. A member's functions are those of
//! its own rows in the batch's earlier raw pages, which name each launch's kernel (this
//! is why the source stage batches only after another stage). Its page is ncu's own
//! lines and every block of its functions, each line as ncu wrote it, so the page reads
//! as the one a run of that kernel alone writes.
//!
//! The split never guesses. A member runs alone when one of its functions is another
//! member's too (kernels that differ only in their template arguments print the same
//! name), when ncu had no line info for it and the page was already SASS only (the batch
//! first prints the page again as SASS only for such members, [`lacking_line_info`]),
//! or when one of its functions has no block. Its blocks need not be together: a window of
//! several launches prints one block per launch, in launch order, so the members' blocks
//! alternate when the program launches them in turn (seen on an H200 with a candle and a
//! burn program).

use std::collections::{BTreeMap, BTreeSet};

use super::discover::function_name;
use crate::ncu::parse::{scan_log, SourceText};

/// Each member of `group`'s own page cut from the batched source page `text`, or why
/// the page cannot serve it. `functions` holds the members' functions as their raw rows
/// named them; `no_line_info` the kernels ncu said it had no line info for.
pub(super) fn split_source(
    text: &str,
    functions: &BTreeMap<usize, BTreeSet<String>>,
    group: &[usize],
    no_line_info: &[String],
) -> BTreeMap<usize, Result<String, String>> {
    let cut = SourceText::cut(text);
    let blocks: Vec<String> = cut.functions.iter().map(|f| function_name(f)).collect();
    let lacking: BTreeSet<String> = no_line_info.iter().map(|k| function_name(k)).collect();
    let none = BTreeSet::new();
    let of = |i: &usize| functions.get(i).unwrap_or(&none);
    group
        .iter()
        .map(|i| {
            let others = group.iter().filter(|j| *j != i).flat_map(|j| of(j).iter()).collect();
            let own = own_blocks(of(i), &others, &blocks, &lacking).map(|mine| own_text(&cut, &mine));
            (*i, own)
        })
        .collect()
}

/// The members of `group` one of whose functions ncu had no line info for (named in
/// `no_line_info`), `functions` as for [`split_source`].
pub(super) fn lacking_line_info(
    functions: &BTreeMap<usize, BTreeSet<String>>,
    group: &[usize],
    no_line_info: &[String],
) -> BTreeSet<usize> {
    let lacking: BTreeSet<String> = no_line_info.iter().map(|k| function_name(k)).collect();
    group
        .iter()
        .copied()
        .filter(|i| functions.get(i).is_some_and(|f| f.iter().any(|f| lacking.contains(f))))
        .collect()
}

/// The blocks (indices) of the member whose functions are `mine`, or why it runs alone.
/// `others`: the other members' functions; `blocks`: the function of each block;
/// `lacking`: the functions ncu had no line info for.
fn own_blocks(
    mine: &BTreeSet<String>,
    others: &BTreeSet<&String>,
    blocks: &[String],
    lacking: &BTreeSet<String>,
) -> Result<Vec<usize>, String> {
    if mine.is_empty() {
        return Err("no batched page named its kernel before the source stage".to_string());
    }
    if let Some(f) = mine.iter().find(|f| others.contains(f)) {
        return Err(format!(
            "another kernel of the batch has the function name `{f}` too, and the source page names \
             blocks only by function"
        ));
    }
    if let Some(f) = mine.iter().find(|f| lacking.contains(*f)) {
        return Err(format!("ncu had no line info for `{f}`; its source page is printed as SASS only alone"));
    }
    let own: Vec<usize> = (0..blocks.len()).filter(|b| mine.contains(&blocks[*b])).collect();
    if let Some(f) = mine.iter().find(|f| !own.iter().any(|b| blocks[*b] == **f)) {
        return Err(format!("the batched source page has no block of `{f}`"));
    }
    // A window of several launches prints a block per launch, in launch order: the
    // blocks of one function are apart when the program launches the members in turn.
    Ok(own)
}

/// The page of the blocks `mine`: ncu's own lines (but its words about another kernel's
/// missing line info) and those blocks, in page order, as written.
fn own_text(cut: &SourceText<'_>, mine: &[usize]) -> String {
    let mut out = String::new();
    for (line, block) in &cut.lines {
        let keep = match block {
            Some(b) => mine.contains(b),
            None => scan_log(line).no_line_info.is_empty(),
        };
        if keep {
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::analyze::hotspots::{hotspots, SourceKind};
    use crate::ncu::parse::SourcePage;

    /// The zoo's seven compute kernels, in the order of the batched run's alternation.
    const COMPUTE: [&str; 7] = [
        "fp32_fma_chains",
        "chacha_rounds",
        "fp64_dfma_chains",
        "sfu_chains",
        "hmma_loop",
        "smem_byte_sum",
        "lane_switch",
    ];

    fn recorded(file: &str) -> String {
        kprof_testkit::recording(&format!("batch-source/{file}"))
    }

    /// Member `i` has the function `names[i]`.
    fn functions(names: &[&str]) -> BTreeMap<usize, BTreeSet<String>> {
        names.iter().enumerate().map(|(i, n)| (i, BTreeSet::from([n.to_string()]))).collect()
    }

    fn split(text: &str, names: &[&str]) -> BTreeMap<usize, Result<String, String>> {
        let group: Vec<usize> = (0..names.len()).collect();
        split_source(text, &functions(names), &group, &[])
    }

    /// The page's blocks as (function, file), in order.
    fn blocks(page: &SourcePage) -> Vec<(String, String)> {
        page.blocks.iter().map(|b| (b.function_name.clone(), b.file_path.clone())).collect()
    }

    #[test]
    fn each_of_seven_kernels_gets_exactly_its_blocks() {
        let text = recorded("source_batched_compute.csv");
        let whole = SourcePage::parse(&text, "batched").unwrap();
        let pages = split(&text, &COMPUTE);
        let preamble = &text[..text.find("\"File Path\"").unwrap()];
        assert!(preamble.starts_with("==") && !preamble.contains("\n\""), "{preamble}");
        let mut all = Vec::new();
        for (i, name) in COMPUTE.iter().enumerate() {
            let own = pages[&i].as_ref().unwrap_or_else(|why| panic!("{name}: {why}"));
            let page = SourcePage::parse(own, name).unwrap();
            let got = blocks(&page);
            let want: Vec<(String, String)> = blocks(&whole).into_iter().filter(|(f, _)| f == name).collect();
            assert_eq!(got, want, "{name}");
            assert_eq!(got.len(), if *name == "hmma_loop" { 2 } else { 1 }, "{name}: {got:?}");
            // ncu's own lines come first, as in a page of the kernel alone.
            assert!(own.starts_with(preamble), "{name}");
            assert_eq!(own.matches("\n==").count(), preamble.matches("\n==").count(), "{name}");
            all.extend(got);
        }
        // Every block went to one kernel, and no line was lost or added.
        assert_eq!(all, blocks(&whole));
        let ncu = preamble.lines().count();
        let lines: usize = pages.values().map(|p| p.as_ref().unwrap().lines().count() - ncu).sum();
        assert_eq!(lines + ncu, text.lines().count());
    }

    /// Each CUDA line's number and its instructions' executed counts, in page order.
    type Counts = Vec<(u32, Vec<f64>)>;

    /// The hottest line (number and text), and the executed counts.
    fn summary(page: &SourcePage) -> ((u32, String), Counts) {
        let rows = hotspots(page, &|_, _| None);
        let hottest = rows.iter().find(|h| h.kind == SourceKind::Cuda).unwrap();
        let mut counts = Vec::new();
        for b in &page.blocks {
            let at = b.column("Instructions Executed").unwrap();
            for l in &b.lines {
                let sass = l.sass.iter().map(|s| s.number(at).unwrap()).collect();
                counts.push((l.line_no, sass));
            }
        }
        ((hottest.line, hottest.source.clone()), counts)
    }

    /// A kernel's share of the batched page reads as its page alone: the same hottest
    /// line and the same instruction counts (samples differ run to run; counts do not).
    #[test]
    fn a_split_page_reads_as_the_kernel_alone() {
        let text = recorded("source_batched_compute.csv");
        let pages = split(&text, &COMPUTE);
        for name in ["fp32_fma_chains", "hmma_loop"] {
            let i = COMPUTE.iter().position(|n| *n == name).unwrap();
            let own = SourcePage::parse(pages[&i].as_ref().unwrap(), "split").unwrap();
            let alone = SourcePage::parse(&recorded(&format!("source_alone_{name}.csv")), "alone").unwrap();
            let (own_hot, own_counts) = summary(&own);
            let (alone_hot, alone_counts) = summary(&alone);
            assert_eq!(own_hot, alone_hot, "{name}");
            assert!(own_counts.iter().map(|(_, s)| s.len()).sum::<usize>() > 50, "{name}");
            assert_eq!(own_counts, alone_counts, "{name}");
            let files = |p: &SourcePage| p.blocks.iter().map(|b| b.file_path.clone()).collect::<Vec<_>>();
            assert_eq!(files(&own), files(&alone), "{name}");
        }
    }

    /// Two kernels whose blocks carry the same function name cannot be told apart: both
    /// run alone, the others are served.
    #[test]
    fn a_function_name_two_kernels_share_is_refused_for_both() {
        let text = recorded("source_batched_compute.csv")
            .replace("\"Function Name\",\"chacha_rounds\"", "\"Function Name\",\"fp32_fma_chains\"");
        let mut names = COMPUTE;
        // `fp32_fma_chains<0>` and `fp32_fma_chains<1>`, as their raw rows would name them.
        names[1] = "fp32_fma_chains";
        let pages = split(&text, &names);
        for i in [0, 1] {
            let why = pages[&i].as_ref().unwrap_err();
            assert!(why.contains("`fp32_fma_chains`"), "{why}");
        }
        assert!((2..7).all(|i| pages[&i].is_ok()), "{pages:?}");
    }

    /// Blocks of one function apart (launches of the members in turn): all the member's,
    /// in page order, with the block between them left to its own member.
    #[test]
    fn blocks_of_one_function_apart_are_its_member_s() {
        let original = recorded("source_batched_compute.csv");
        let text = original
            .replace("\"Function Name\",\"fp64_dfma_chains\"", "\"Function Name\",\"fp32_fma_chains\"");
        let pages = split(&text, &COMPUTE);
        let fma = pages[&0].as_ref().unwrap();
        assert_eq!(fma.matches("\"Function Name\",\"fp32_fma_chains\"").count(), 2, "{fma}");
        let chacha = pages[&1].as_ref().unwrap();
        assert!(
            chacha.contains("\"Function Name\",\"chacha_rounds\"") && !chacha.contains("fp32_fma_chains")
        );
        assert!(pages[&2].as_ref().unwrap_err().contains("no block of `fp64_dfma_chains`"), "{pages:?}");
    }

    /// A kernel ncu had no line info for runs alone (its page again as SASS only); the
    /// others' pages leave out ncu's words about it.
    #[test]
    fn a_kernel_without_line_info_runs_alone() {
        let warning = "==WARNING== No lineinfo available to show CUDA-C source related to 'sfu_chains'.\n";
        let text = recorded("source_batched_compute.csv");
        let first = text.find("\"File Path\"").unwrap();
        // sfu_chains' one block, from its "File Path" row to the next block's.
        let named = text.find("\"Function Name\",\"sfu_chains\"").unwrap();
        let from = text[..named].rfind("\"File Path\"").unwrap();
        let to = named + text[named..].find("\"File Path\"").unwrap();
        let preamble = text[..first].to_string();
        let text = format!("{warning}{preamble}{}{}", &text[first..from], &text[to..]);
        let group: Vec<usize> = (0..7).collect();
        let lacking = vec!["sfu_chains".to_string()];
        let pages = split_source(&text, &functions(&COMPUTE), &group, &lacking);
        assert!(pages[&3].as_ref().unwrap_err().contains("no line info"), "{pages:?}");
        let all = functions(&COMPUTE);
        assert_eq!(lacking_line_info(&all, &group, &lacking), BTreeSet::from([3]));
        assert_eq!(lacking_line_info(&all, &[0, 1], &lacking), BTreeSet::new());
        for i in [0, 1, 2, 4, 5, 6] {
            let own = pages[&i].as_ref().unwrap();
            assert!(!own.contains("No lineinfo") && own.starts_with(&preamble), "{own}");
        }
        // Told only on ncu's console, its missing block says the same.
        let pages = split(&text, &COMPUTE);
        assert!(pages[&3].as_ref().unwrap_err().contains("no block of `sfu_chains`"), "{pages:?}");
    }

    #[test]
    fn a_kernel_no_raw_page_named_runs_alone() {
        let text = recorded("source_batched_compute.csv");
        let mut functions = functions(&COMPUTE);
        functions.remove(&6);
        let pages = split_source(&text, &functions, &[0, 6], &[]);
        assert!(pages[&0].is_ok());
        assert!(pages[&6].as_ref().unwrap_err().contains("before the source stage"));
    }
}
