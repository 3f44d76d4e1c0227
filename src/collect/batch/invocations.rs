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

use std::collections::BTreeSet;

use crate::model::census::Breakdown;
use crate::model::filter::KernelFilter;
use crate::model::kinds::{LaunchWindow, Runtime};
use crate::ncu::parse::RawPage;
use crate::plan::KernelPlan;

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

/// The invocation numbers (from 1) of a skip/count window; none for a harness range.
fn numbers(window: LaunchWindow) -> Vec<u32> {
    match window {
        LaunchWindow::SkipCount { launch_skip, launch_count } => {
            (1..=launch_count).map(|n| launch_skip.saturating_add(n)).collect()
        }
        LaunchWindow::HarnessRange { .. } => Vec::new(),
    }
}

/// The ncu filter and window of one run for the picks `kernels`: a kernel id naming their
/// functions and the union of their invocations, every launch it matches profiled up to
/// the cap.
pub fn batched(kernels: &[&KernelPlan]) -> (KernelFilter, LaunchWindow) {
    let invocations: BTreeSet<u32> = kernels.iter().flat_map(|k| numbers(k.window)).collect();
    // ncu splits a kernel id at its colons: the names' regex spells a colon `\x3A`, which
    // ECMAScript (ncu) and the `regex` crate both read as one, and groups without `?:`.
    let names: Vec<String> = kernels
        .iter()
        .filter_map(|k| k.filter.as_ref())
        .map(|f| format!("({})", f.pattern.replace(':', r"\x3A")))
        .collect();
    let names = names.join("|");
    let numbers: Vec<String> = invocations.iter().map(u32::to_string).collect();
    let id = format!("::regex:{names}:{}", numbers.join("|"));
    let per_kernel = u32::try_from(invocations.len()).unwrap_or(u32::MAX);
    let cap = per_kernel.saturating_mul(u32::try_from(kernels.len()).unwrap_or(u32::MAX));
    (KernelFilter::kernel_id(id), LaunchWindow::SkipCount { launch_skip: 0, launch_count: cap })
}

/// For a pick batched by invocation numbers whose rows in the batch's first run have
/// several launch shapes, the line that says which were profiled.
pub fn shapes_line(kernel: &KernelPlan, own: &RawPage, first_run: bool) -> Option<String> {
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
    (shapes.len() > 1).then(|| {
        let listed: Vec<String> = shapes.iter().map(|(s, n)| format!("{s} ({n} launch(es))")).collect();
        format!(
            "`{}`: the launches profiled have {} shapes: {}",
            kernel.name,
            shapes.len(),
            listed.join("; ")
        )
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
    fn the_picks_windows_become_one_kernel_id() {
        let (a, b) = (pick("softmax_f32", 5, 3), pick("ns::gemm", 0, 1));
        let (filter, window) = batched(&[&a, &b]);
        assert_eq!(
            filter.ncu_args(),
            [
                "--kernel-id",
                r"::regex:((^|[ \x3A])softmax_f32($|[<(]))|((^|[ \x3A])ns\x3A\x3Agemm($|[<(])):1|6|7|8"
            ]
        );
        // Four invocations, two kernels.
        assert_eq!(window, LaunchWindow::SkipCount { launch_skip: 0, launch_count: 8 });
        // The names' part reads as the same regex with its colons spelt out.
        let id = filter.pattern;
        let names = &id["::regex:".len()..id.rfind(':').unwrap()];
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
