//! Discovery and the launch census: one durations-only pass over every launch (from the
//! first, up to a cap, inside the ranges asked for) counts each kernel's launches and
//! their total duration. With no kernel hint the pass is the program's census: its
//! breakdown (`breakdown.json`) picks the kernels to profile, the costliest in this
//! profile directory and each other in its own; after a filter matched nothing, or a
//! hint matched several kernels, the same census fits the window or picks the kernel
//! (`details/kernel_candidates.json` keeps that ranking).
//!
//! The census and how close a name is to a hint live here, below `failure`, which
//! explains a miss with them: the arrow runs one way, from the message to the census.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::analyze::summary;
use crate::error::{ExitCode, Failure};
use crate::events::{CensusRow, Event, PickedKernel};
use crate::model::census::{Breakdown, CensusLaunch, CensusPlan};
use crate::model::filter::KernelFilter;
use crate::ncu::parse::RawPage;
use crate::profile::fs::write_atomic;
use crate::profile::ProfileDir;

/// One kernel seen by discovery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// The kernel name as ncu printed it.
    pub kernel: String,
    /// The function name used for the filter (without parameters and return type).
    pub function: String,
    /// Launches seen.
    pub launches: usize,
    /// Their total duration, ns.
    pub total_duration_ns: f64,
}

/// `details/kernel_candidates.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidates {
    /// Always 1.
    pub schema_version: u32,
    /// How they are ranked.
    pub ranking: String,
    /// The kernel profiled.
    pub chosen: String,
    /// Every kernel, costliest first.
    pub candidates: Vec<Candidate>,
}

/// The function name of a demangled kernel name: `void ns::f<int>(float *)` -> `f`.
pub fn function_name(kernel: &str) -> String {
    let head = kernel.split('(').next().unwrap_or(kernel);
    let head = head.split('<').next().unwrap_or(head).trim();
    let last = head.rsplit(' ').next().unwrap_or(head);
    last.rsplit("::").next().unwrap_or(last).to_string()
}

/// The distinct functions of a page's launches that `filter` matches, in page order.
pub(super) fn functions_matching(page: &RawPage, filter: &KernelFilter) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in page.launches() {
        let f = function_name(l.kernel_name());
        if filter.matches(&f) && !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

/// How close a kernel `name` is to a `hint`, for listing the closest first. Smaller is
/// closer: 0 for a substring match, else one more than the edit distance.
pub(super) fn closeness(hint: &str, name: &str) -> usize {
    if name.contains(hint) {
        0
    } else {
        1 + crate::suggest::edit_distance(hint, name)
    }
}

/// Every kernel a durations-only pass saw: its launches and their total duration,
/// costliest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Census {
    /// The kernels, costliest first (total duration, then launch count).
    pub kernels: Vec<Candidate>,
    /// Launches the pass profiled in all.
    pub launches: usize,
    /// Whether the pass stopped at its launch cap, so later launches are not counted.
    pub capped: bool,
}

impl Census {
    /// The census of a durations-only page whose window profiled at most `cap` launches.
    pub fn from_page(page: &RawPage, cap: Option<u32>) -> Census {
        let mut kernels: Vec<Candidate> = Vec::new();
        let mut launches = 0;
        for l in page.launches() {
            launches += 1;
            let d = l.number("gpu__time_duration.sum").unwrap_or(0.0)
                * summary::unit_scale(l.unit("gpu__time_duration.sum").unwrap_or(""));
            match kernels.iter_mut().find(|c| c.kernel == l.kernel_name()) {
                Some(c) => {
                    c.launches += 1;
                    c.total_duration_ns += d;
                }
                None => kernels.push(Candidate {
                    kernel: l.kernel_name().to_string(),
                    function: function_name(l.kernel_name()),
                    launches: 1,
                    total_duration_ns: d,
                }),
            }
        }
        let capped = cap.is_some_and(|c| launches as u64 >= u64::from(c));
        Census::from_candidates(kernels, launches, capped)
    }

    /// The census of `kernels` already summed, `launches` in all: sorted costliest first
    /// (total duration, then launch count).
    pub fn from_candidates(mut kernels: Vec<Candidate>, launches: usize, capped: bool) -> Census {
        kernels.sort_by(|a, b| {
            b.total_duration_ns.total_cmp(&a.total_duration_ns).then(b.launches.cmp(&a.launches))
        });
        Census { kernels, launches, capped }
    }

    /// The kernels `filter` matches, costliest first. ncu matches the filter against the
    /// function name (its default `--kernel-name-base function`), and so does this.
    pub fn matching(&self, filter: &KernelFilter) -> Vec<&Candidate> {
        self.kernels.iter().filter(|c| filter.matches(&c.function)).collect()
    }

    /// Launches of the kernels `filter` matches (what ncu's `--launch-skip` counts).
    pub fn launches_matching(&self, filter: &KernelFilter) -> usize {
        self.matching(filter).iter().map(|c| c.launches).sum()
    }

    /// `copy_kernel (3 launches, 1.2 ms), fill (1 launch, 4 us)`, for messages; the
    /// functions closest to `hint` first when one is given.
    pub fn listing(&self, hint: Option<&str>) -> String {
        let mut kernels: Vec<&Candidate> = self.kernels.iter().collect();
        if let Some(h) = hint {
            let h = h.to_lowercase();
            kernels.sort_by_key(|c| closeness(&h, &c.function.to_lowercase()));
        }
        let mut out: Vec<String> = kernels
            .iter()
            .map(|c| {
                format!(
                    "{} ({} launch{}, {})",
                    c.function,
                    c.launches,
                    if c.launches == 1 { "" } else { "es" },
                    crate::units::duration(c.total_duration_ns)
                )
            })
            .collect();
        if self.capped {
            out.push(format!("counted over the first {} launches only", self.launches));
        }
        out.join(", ")
    }

    /// Writes `details/kernel_candidates.json`: `chosen` among these kernels, and how.
    pub fn write_candidates(&self, dir: &ProfileDir, chosen: &str, ranking: &str) -> Result<()> {
        let record = Candidates {
            schema_version: 1,
            ranking: ranking.to_string(),
            chosen: chosen.to_string(),
            candidates: self.kernels.clone(),
        };
        write_atomic(
            &dir.kernel_candidates_path(),
            &(serde_json::to_string_pretty(&record).context("could not serialise the kernel candidates")?
                + "\n"),
        )
    }
}

/// The breakdown of a durations-only page whose window profiled at most `cap` launches:
/// each launch's duration and its grid and block sizes, which ncu prints with every page.
pub fn breakdown(page: &RawPage, cap: Option<u32>) -> Breakdown {
    let launches = page.launches().map(|l| CensusLaunch {
        kernel: l.kernel_name(),
        function: function_name(l.kernel_name()),
        duration_ns: l.number("gpu__time_duration.sum").unwrap_or(0.0)
            * summary::unit_scale(l.unit("gpu__time_duration.sum").unwrap_or("")),
        grid: l.get("Grid Size"),
        block: l.get("Block Size"),
    });
    let n = page.launches().len();
    Breakdown::from_launches(launches, cap.is_some_and(|c| n as u64 >= u64::from(c)))
}

/// The longest launch a census believes, in ns (about 2.8 hours).
const MAX_LAUNCH_NS: f64 = 1e13;

/// Refuses a census page with a duration ncu does not measure: negative, not a number,
/// infinite, or longer than [`MAX_LAUNCH_NS`] (the shares, the table and `breakdown.json`
/// would carry it: "inf s", "NaN %", a breakdown that cannot be read back).
fn check_durations(page: &RawPage, origin: &str) -> Result<(), Failure> {
    for l in page.launches() {
        let Some(cell) = l.get("gpu__time_duration.sum").filter(|c| !c.trim().is_empty()) else { continue };
        // A cell that is not a number (`nan`) is as wrong as an infinite one.
        let value = l.number("gpu__time_duration.sum").unwrap_or(f64::NAN);
        let ns = value * summary::unit_scale(l.unit("gpu__time_duration.sum").unwrap_or(""));
        if value < 0.0 {
            return Err(crate::profile::import::negative_value(
                origin,
                l.kernel_name(),
                "gpu__time_duration.sum",
                value,
            ));
        }
        if !ns.is_finite() || ns > MAX_LAUNCH_NS {
            return Err(Failure::new(
                ExitCode::Config,
                format!(
                    "{origin}: `gpu__time_duration.sum` of `{}` is `{}`: not a launch's duration",
                    crate::shell::printable(l.kernel_name()),
                    crate::shell::printable(cell)
                ),
            )
            .help(
                "analyse the page as ncu wrote it: export it again with `ncu -i REPORT --csv --page raw`",
            ));
        }
    }
    Ok(())
}

/// The census of a program with no hint (its parsed page, from a window that profiled at
/// most `cap` launches): the kernels `plan` picks, written with every kernel's share to
/// `breakdown.json`; returns the census, the breakdown and, when the pick chose nothing
/// (`--min-share` above every share), why (the breakdown is written all the same).
pub(crate) fn discover(
    dir: &ProfileDir,
    page: Result<RawPage, String>,
    cap: Option<u32>,
    plan: &CensusPlan,
) -> Result<(Census, Breakdown, Option<Failure>)> {
    let page = page.map_err(|e| Failure::new(ExitCode::NoKernelMatched, e))?;
    check_durations(&page, &crate::profile::dir::raw_page_rel(&crate::ncu::StageCollection::Discovery))?;
    finish(dir, Census::from_page(&page, cap), breakdown(&page, cap), plan)
}

/// A program's census however it was taken (ncu's page, a trace): refused when it saw no
/// launch, else the kernels `plan` picks recorded in `breakdown`, written to
/// `breakdown.json`; returns what [`discover`] returns.
pub(crate) fn finish(
    dir: &ProfileDir,
    census: Census,
    mut b: Breakdown,
    plan: &CensusPlan,
) -> Result<(Census, Breakdown, Option<Failure>)> {
    if census.kernels.is_empty() {
        let bounded = plan.describe_bounds().map(|b| format!(" ({b})")).unwrap_or_default();
        return Err(Failure::new(ExitCode::NoKernelMatched, format!("the census saw no kernel launch{bounded}"))
            .help("the program launched no kernel: check that it runs on the GPU with these arguments, and that any --nvtx-include or --profiler-range range is entered")
            .into());
    }
    b.bounds = plan.describe_bounds();
    let refused = b.pick(plan.pick).err();
    write_atomic(
        &dir.breakdown_json_path(),
        &(serde_json::to_string_pretty(&b).context("could not serialise the breakdown")? + "\n"),
    )?;
    Ok((census, b, refused))
}

/// The census' two messages: its table, and the kernels it chose for `kernel` (the program).
pub(crate) fn census_events(kernel: &str, b: &Breakdown) -> [Event; 2] {
    let shapes = |s: &[String]| s.join("; ");
    let taken = Event::CensusTaken {
        kernel: kernel.to_string(),
        launches: b.launches,
        capped: b.capped,
        total_ns: b.total_ns,
        bounds: b.bounds.clone(),
        kernels: b
            .kernels
            .iter()
            .map(|r| CensusRow {
                function: r.function.clone(),
                launches: r.launches,
                total_ns: r.total_ns,
                mean_ns: r.mean_ns,
                share_pct: r.share_pct,
                grid: shapes(&r.grid),
                block: shapes(&r.block),
                early: r.early,
            })
            .collect(),
        by: b.by,
    };
    let picked: Vec<PickedKernel> = b
        .chosen
        .iter()
        .map(|f| PickedKernel { function: f.clone(), share_pct: b.share_of(std::slice::from_ref(f)) })
        .collect();
    let chosen = Event::KernelDiscovered {
        kernel: kernel.to_string(),
        chosen: b.chosen.first().cloned().unwrap_or_default(),
        why: b.pick.clone(),
        share_pct: b.share_of(&b.chosen),
        picked,
    };
    [taken, chosen]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_names_from_demangled_kernels() {
        assert_eq!(function_name("hgemm_naive"), "hgemm_naive");
        assert_eq!(
            function_name("reduce_sum_kernel(const float4 *, unsigned long, double *)"),
            "reduce_sum_kernel"
        );
        assert_eq!(function_name("void ns::gemm<float, 128>(const float *, float *)"), "gemm");
    }

    #[test]
    fn closest_kernels_first() {
        let mut names = ["transpose_kernel", "hgemm_tiled", "copy_kernel"];
        names.sort_by_key(|n| closeness("hgemm", n));
        assert_eq!(names[0], "hgemm_tiled");
    }
}
