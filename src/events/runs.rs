//! The words for people of the messages of the runs around the stages: the census' table
//! and choice, notices of line info and narrowed hints, timings, rounds and the base
//! worktree.

use std::fmt;

use super::*;
use crate::model::census::CensusSource;
use crate::units;

/// The census' two messages: its table, and the kernels it chose.
pub(super) fn census_words(f: &mut fmt::Formatter<'_>, e: &Event) -> fmt::Result {
    use Event::*;
    match e {
        CensusTaken { kernel, launches, capped, total_ns, bounds, kernels, by } => {
            let how = Heading { launches: *launches, capped: *capped, total_ns: *total_ns, by: *by };
            census(f, kernel, how, bounds.as_deref(), kernels)
        }
        CensusFallback { kernel, why } => {
            write!(f, "the census of `{kernel}` is ncu's durations-only pass, not a trace: {why}")
        }
        KernelDiscovered { why, picked, share_pct, .. } => {
            let each: Vec<String> = picked
                .iter()
                .map(|p| format!("{} ({})", p.function, units::pct_fixed(p.share_pct, 0)))
                .collect();
            write!(
                f,
                "Census: profiling {} kernel{}, {} of GPU time: {} ({why})",
                picked.len(),
                if picked.len() == 1 { "" } else { "s" },
                units::pct_fixed(*share_pct, 0),
                each.join(", ")
            )
        }
        _ => Ok(()),
    }
}

/// How many kernels the census' console table lists; `breakdown.md` has them all.
const CENSUS_ROWS: usize = 10;

/// What the census' heading says of the pass.
struct Heading {
    launches: usize,
    capped: bool,
    total_ns: f64,
    by: CensusSource,
}

/// The census as a compact table: a heading, then one line per kernel, costliest first.
fn census(
    f: &mut fmt::Formatter<'_>,
    kernel: &str,
    h: Heading,
    bounds: Option<&str>,
    rows: &[CensusRow],
) -> fmt::Result {
    let (launches, total_ns) = (h.launches, h.total_ns);
    // A trace sums launches as the program ran them (overlapping on several streams); ncu
    // serialises the launches it profiles.
    let (time, traced) = match h.by {
        CensusSource::Trace => ("GPU time", " (traced)"),
        CensusSource::Ncu => ("serialised GPU time", ""),
    };
    write!(
        f,
        "Census of `{kernel}`{traced}: {launches} launch{} of {} kernel{}, {} of {time}{}{}",
        if launches == 1 { "" } else { "es" },
        rows.len(),
        if rows.len() == 1 { "" } else { "s" },
        units::duration(total_ns),
        bounds.map(|b| format!(", {b}")).unwrap_or_default(),
        if h.capped { " (stopped at the launch cap: later launches are not counted)" } else { "" }
    )?;
    write!(
        f,
        "\n  {:>7}  {:>11}  {:>11}  {:>8}  {:<15}  {:<13}  kernel",
        "share", "total", "mean", "launches", "grid", "block"
    )?;
    for r in rows.iter().take(CENSUS_ROWS) {
        write!(
            f,
            "\n  {:>7}  {:>11}  {:>11}  {:>8}  {:<15}  {:<13}  {}",
            units::pct_fixed(r.share_pct, 1),
            units::duration(r.total_ns),
            units::duration(r.mean_ns),
            r.launches,
            r.grid,
            r.block,
            r.function
        )?;
        if r.early {
            f.write_str(" (early: warm-up or set-up)")?;
        }
    }
    if rows.len() > CENSUS_ROWS {
        write!(f, "\n  ... and {} more kernels (breakdown.md lists them all)", rows.len() - CENSUS_ROWS)?;
    }
    Ok(())
}

/// The lines of the runs around the stages: notices, timings, rounds, the base worktree.
pub(super) fn measuring(f: &mut fmt::Formatter<'_>, e: &Event) -> fmt::Result {
    use Event::*;
    match e {
        NoLineInfo { kernels, advice } => write!(
            f,
            "no line info in `{}`: ncu cannot map samples to source lines, so the hotspots will be SASS \
             instructions; to see lines, {advice}",
            kernels.join("`, `")
        ),
        HotLinesMissing { kernel, why } => write!(
            f,
            "`{kernel}`: the source stage failed ({why}): this profile has no hot lines; the verdict \
             does not need them, and the stage's command is in commands.sh"
        ),
        LibraryKernels { kernels } => {
            let named: Vec<String> = kernels.iter().map(|(k, lib)| format!("`{k}` is {lib}'s")).collect();
            write!(
                f,
                "{}: closed libraries ship their kernels without line info, so the hotspots will be SASS \
                 instructions; there is nothing to rebuild (the report names the library's knobs)",
                named.join(", ")
            )
        }
        HintNarrowed { hint, kernels, chosen } => write!(
            f,
            "`{hint}` matches {} kernels: {}; profiling `{chosen}`, the costliest (pass --kernel ={chosen} or \
             another exact name to choose)",
            kernels.len(),
            kernels.join(", ")
        ),
        NoTiming { kernel } => write!(f, "`{kernel}` has no harness: no timing; ncu's duration is compared"),
        TimingStarted { kernel } => write!(f, "Timing `{kernel}` (harness, no ncu)"),
        TimingDone { case, mode, median_ns, samples, interval_ns: (lo, hi), .. } => write!(
            f,
            "  {case}: {} median ({mode}, {samples} samples, 95 % interval {} .. {})",
            units::duration(*median_ns),
            units::duration(*lo),
            units::duration(*hi)
        ),
        RoundDone { kernel, round, base_ns, head_ns, change_pct } => write!(
            f,
            "  round {round:>2} `{kernel}`: base {}, head {} ({})",
            units::duration(*base_ns),
            units::duration(*head_ns),
            units::pct_signed(*change_pct, 2)
        ),
        BaseWorktree { commit, asked, dir, action } => match action {
            WorktreeAction::Created => write!(f, "Base: {commit} ({asked}), a worktree at {}", dir.display()),
            WorktreeAction::Reused => write!(f, "Base: {commit} ({asked}), reusing {}", dir.display()),
            WorktreeAction::Recreated => {
                write!(f, "Base: {commit} ({asked}), {} was left unfinished: making it again", dir.display())
            }
            WorktreeAction::Restored => write!(
                f,
                "Base: {commit} ({asked}), {} was deleted (cargo clean?): pruning git's record of it, making it again",
                dir.display()
            ),
            WorktreeAction::Moved => write!(f, "Base: {commit} ({asked}), moving {} there", dir.display()),
        },
        _ => Ok(()),
    }
}
