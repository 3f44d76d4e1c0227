//! A plain program's census picks in one ncu run per stage, each with its own window.
//!
//! ncu's `--launch-skip` and `--launch-count` count the launches of every kernel the filter
//! matches together: with several kernels in one filter they no longer say which launches
//! of each are profiled. `--kernel-id` does. Its last field is an invocation number and a
//! regex of such numbers selects several: `::regex:^(a|b)$:6|7|8` profiles the 6th to 8th
//! launch of `a` and of `b`. On the H200 (ncu 2025.3.1, `references/nvidia/ncu-guide.md`)
//! the number counts a function's launches whatever their grid and block, as
//! `--launch-skip` does for a filter of that one function (ncu's guide says launch shapes
//! count too; a candle program's `badd_f32`, launched with three grids, said otherwise).
//! Each pick's window (skip `s`, count `c`, fitted to the launches the census counted) is
//! invocations `s+1` to `s+c`; the batched run asks for the union of them, for every pick,
//! so a pick whose window differs from another's may get a few launches more than its
//! own, and `--launch-count` caps the run at that many per pick. A pick left without a
//! launch runs alone afterwards with its own window.

use crate::events::{LaunchShape, LaunchShapes};
use crate::model::census::Breakdown;
use crate::model::filter::KernelFilter;
use crate::model::kinds::{LaunchWindow, Runtime};
use crate::ncu::parse::RawPage;
use crate::plan::KernelPlan;

/// The longest name a batched pick may have: the names of all picks are one argument,
/// which Linux caps at 128 KiB (`collect::run::MAX_ARG_BYTES`).
pub const MAX_BATCHED_NAME_BYTES: usize = 2048;

/// Whether `kernel` runs in a plain program: not the harness, a skip/count window.
fn plain(kernel: &KernelPlan) -> bool {
    kernel.runtime != Runtime::Harness && matches!(kernel.window, LaunchWindow::SkipCount { .. })
}

/// Whether `kernel` is a plain program's census pick, batched by invocation numbers.
pub fn applies(kernel: &KernelPlan) -> bool {
    kernel.census.picked && plain(kernel)
}

/// Whether the census of `program` (a plain program, no kernel named), having picked the
/// kernels of `breakdown`, ends there and leaves them all to one batch: it picked more
/// than one.
pub fn census_batches(program: &KernelPlan, breakdown: &Breakdown) -> bool {
    plain(program) && breakdown.chosen.len() > 1
}

/// The invocation numbers (from 1) of a skip/count window, as one range; none for a
/// harness range.
fn range(window: LaunchWindow) -> Option<(u64, u64)> {
    match window {
        LaunchWindow::SkipCount { launch_count: 0, .. } => None,
        LaunchWindow::SkipCount { launch_skip, launch_count } => {
            Some((u64::from(launch_skip) + 1, u64::from(launch_skip) + u64::from(launch_count)))
        }
        LaunchWindow::HarnessRange { .. } => None,
    }
}

/// The union of `ranges`, sorted, touching ranges joined.
fn union(mut ranges: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (lo, hi) in ranges {
        match out.last_mut() {
            Some((_, end)) if lo <= end.saturating_add(1) => *end = (*end).max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// A regular expression matching the decimal numbers `lo..=hi` and no other, in a few
/// alternatives per power of ten (`1[2-9]|[2-9][0-9]|1[0-9][0-9]`): the length of a
/// window's numbers, not of the window. Only classes, alternation and literals: ncu
/// 2025.3.1 refuses `\d` and `{k}` in the invocation field.
pub fn range_regex(lo: u64, hi: u64) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut start = lo;
    while start <= hi {
        // The widest block `start..start + 10^k` aligned on 10^k that fits.
        let mut k = 0u32;
        while let Some(next) = 10u64.checked_pow(k + 1) {
            if start % next != 0 || start.checked_add(next - 1).is_none_or(|e| e > hi) {
                break;
            }
            k += 1;
        }
        let block = 10u64.pow(k);
        // Then as many such blocks as the digit above them allows.
        let mut end = start + (block - 1);
        while (end + 1) % (block * 10) != 0 && end.checked_add(block).is_some_and(|e| e <= hi) {
            end += block;
        }
        let prefix = start / (block * 10);
        let (first, last) = ((start / block) % 10, (end / block) % 10);
        let digit = if first == last { first.to_string() } else { format!("[{first}-{last}]") };
        let prefix = if prefix == 0 { String::new() } else { prefix.to_string() };
        // No `\d` or `{k}`: ncu refuses an invocation field with them (seen on the H200).
        let tail = "[0-9]".repeat(k as usize);
        parts.push(format!("{prefix}{digit}{tail}"));
        match end.checked_add(1) {
            Some(next) => start = next,
            None => break,
        }
    }
    parts.join("|")
}

/// The ncu filter and window of one run for the picks `kernels`: a kernel id naming their
/// functions and the union of their invocations as ranges (a window of millions of
/// launches is a few dozen characters), every launch it matches profiled up to the cap.
pub fn batched(kernels: &[&KernelPlan]) -> (KernelFilter, LaunchWindow) {
    let ranges = union(kernels.iter().filter_map(|k| range(k.window)).collect());
    // ncu splits a kernel id at its colons: the names' regex spells a colon `\x3A`, which
    // ECMAScript (ncu) and the `regex` crate both read as one, and groups without `?:`.
    let names: Vec<String> = kernels
        .iter()
        .filter_map(|k| k.filter.as_ref())
        .map(|f| format!("({})", f.pattern.replace(':', r"\x3A")))
        .collect();
    let names = names.join("|");
    let numbers: Vec<String> = ranges.iter().map(|&(lo, hi)| range_regex(lo, hi)).collect();
    let id = format!("::regex:{names}:^({})$", numbers.join("|"));
    let per_kernel: u64 = ranges.iter().map(|(lo, hi)| hi - lo + 1).sum();
    let cap = per_kernel.saturating_mul(kernels.len() as u64).min(u64::from(u32::MAX)) as u32;
    (KernelFilter::kernel_id(id), LaunchWindow::SkipCount { launch_skip: 0, launch_count: cap })
}

/// For a pick batched by invocation numbers whose rows in the batch's first run have
/// several launch shapes, the message that says which were profiled.
pub fn shapes(kernel: &KernelPlan, own: &RawPage, first_run: bool) -> Option<LaunchShapes> {
    if !first_run || !applies(kernel) {
        return None;
    }
    let mut shapes: Vec<(String, usize)> = Vec::new();
    for l in own.launches() {
        let shape = format!(
            "grid {} block {}",
            l.get("Grid Size").unwrap_or("?"),
            l.get("Block Size").unwrap_or("?")
        );
        match shapes.iter_mut().find(|(s, _)| *s == shape) {
            Some((_, n)) => *n += 1,
            None => shapes.push((shape, 1)),
        }
    }
    (shapes.len() > 1).then(|| LaunchShapes {
        kernel: kernel.name.clone(),
        shapes: shapes.into_iter().map(|(shape, launches)| LaunchShape { shape, launches }).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::kinds::WindowOrigin;
    use crate::plan::PlannedTarget;

    fn pick(name: &str, skip: u32, count: u32) -> KernelPlan {
        let mut k =
            KernelPlan::synthetic(name, PlannedTarget::Command(vec!["/bin/app".into()]), Runtime::Cuda);
        k.filter = Some(KernelFilter::function(name));
        k.window = LaunchWindow::SkipCount { launch_skip: skip, launch_count: count };
        k.window_origin = WindowOrigin::Default;
        k.census.picked = true;
        k
    }

    #[test]
    fn a_range_of_numbers_is_a_short_regex_matching_it_alone() {
        for (lo, hi) in [
            (1, 1),
            (6, 8),
            (1, 25_000),
            (17, 4_000_000_017),
            (999, 1001),
            (10, 99),
            (4_294_967_295, 4_294_967_296),
        ] {
            let re = regex::Regex::new(&format!("^({})$", range_regex(lo, hi))).unwrap();
            for n in [lo.saturating_sub(1), lo, lo + 1, (lo + hi) / 2, hi - 1, hi, hi + 1, hi * 10, lo / 10] {
                assert_eq!(
                    re.is_match(&n.to_string()),
                    (lo..=hi).contains(&n),
                    "{lo}..={hi}: {n} against {re}"
                );
            }
            assert!(range_regex(lo, hi).len() < 1024, "{lo}..={hi}: {}", range_regex(lo, hi));
        }
        assert_eq!(
            range_regex(1, 25_000),
            "[1-9]|[1-9][0-9]|[1-9][0-9][0-9]|[1-9][0-9][0-9][0-9]|1[0-9][0-9][0-9][0-9]|2[0-4][0-9][0-9][0-9]|25000"
        );
    }

    /// #45 G1: a window of ten million launches, or four billion, is one short argument
    /// (it listed every number: 3.7 GB, then an abort).
    #[test]
    fn a_window_of_billions_of_launches_is_a_short_kernel_id() {
        let (a, b) = (pick("softmax_f32", 0, 10_000_000), pick("gemm", 5, u32::MAX - 5));
        let (filter, window) = batched(&[&a, &b]);
        assert!(filter.pattern.len() < 2048, "{}", filter.pattern);
        assert_eq!(window, LaunchWindow::SkipCount { launch_skip: 0, launch_count: u32::MAX });
    }

    #[test]
    fn the_picks_windows_become_one_kernel_id() {
        let (a, b) = (pick("softmax_f32", 5, 3), pick("ns::gemm", 0, 1));
        let (filter, window) = batched(&[&a, &b]);
        assert_eq!(
            filter.ncu_args(),
            [
                "--kernel-id",
                r"::regex:((^|[ \x3A])softmax_f32($|[<(]))|((^|[ \x3A])ns\x3A\x3Agemm($|[<(])):^(1|[6-8])$"
            ]
        );
        // Four invocations, two kernels.
        assert_eq!(window, LaunchWindow::SkipCount { launch_skip: 0, launch_count: 8 });
        // The names' part reads as the same regex with its colons spelt out.
        let id = filter.pattern;
        let names = &id["::regex:".len()..id.rfind(":^(").unwrap()];
        assert!(!names.contains(':'), "{names}");
        let names = regex::Regex::new(names).unwrap();
        assert!(names.is_match("ns::gemm") && names.is_match("softmax_f32") && !names.is_match("gemm"));
    }

    #[test]
    fn only_a_plain_program_s_picks_batch_by_invocation() {
        let mut k = pick("k", 5, 3);
        assert!(applies(&k));
        k.census.picked = false;
        assert!(!applies(&k));
        let mut h = pick("k", 5, 3);
        h.runtime = Runtime::Harness;
        h.window = LaunchWindow::HarnessRange { launch_count: 1 };
        assert!(!applies(&h));
    }
}
