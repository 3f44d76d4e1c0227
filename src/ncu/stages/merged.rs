//! One ncu run for several stages: which stages may share a run, the options of the
//! shared run, which columns of its page belong to which stage's page, and what such runs
//! cost. Also the columns a stage's own run prints, to which basic's page is cut when its
//! run collected the source section as well.

use super::{definition, Page};
use crate::model::stage::Stage;

/// Whether `stage` can share one ncu run with others ([`StageCollection::Merged`]): a
/// stage defined by a metric list alone, printed as a raw page, so that each metric's
/// columns can be told apart ([`owns_column`]). Sections and sets cannot: their columns
/// are not named in advance.
///
/// [`StageCollection::Merged`]: crate::ncu::command::StageCollection::Merged
pub fn mergeable(stage: Stage) -> bool {
    let d = definition(stage);
    !d.metrics.is_empty() && d.sections.is_empty() && d.set.is_none() && d.page == Page::Raw
}

/// The ncu options of one run that collects every stage of `stages` (all [`mergeable`]):
/// the union of their metrics, in stage order without repeats, as one raw page.
pub fn merged_args(stages: &[Stage]) -> Vec<String> {
    let mut metrics: Vec<&str> = Vec::new();
    for stage in stages {
        for m in definition(*stage).metrics {
            if !metrics.contains(m) {
                metrics.push(m);
            }
        }
    }
    ["--metrics".to_string(), metrics.join(","), "--csv".into(), "--page".into(), "raw".into()].to_vec()
}

/// Whether a raw page's `column` holds the requested `metric`: the same name, or the
/// same name with another roll-up (ncu prints `dram__bytes_read.sum` as the `.avg`,
/// `.max`, `.min` and `.sum` columns, and `x.avg.pct_of_peak_sustained_elapsed` as the
/// four `x.<rollup>.pct_of_peak_sustained_elapsed`).
pub fn owns_column(metric: &str, column: &str) -> bool {
    fn rollup_free(name: &str) -> String {
        let parts: Vec<&str> = name.split('.').collect();
        parts
            .iter()
            .enumerate()
            .map(|(i, p)| if i > 0 && ROLLUPS.contains(p) { "*" } else { p })
            .collect::<Vec<_>>()
            .join(".")
    }
    const ROLLUPS: [&str; 4] = ["avg", "max", "min", "sum"];
    metric == column || rollup_free(metric) == rollup_free(column)
}

/// Columns ncu prints on every raw page whatever was asked: the launch, device and
/// replay families and these four. Read off the H200's standalone memory, compute and
/// occupancy pages (`fixtures/h200/planner/fixed`), which hold them though their stages
/// do not ask for them.
const ALWAYS_PRINTED_FAMILIES: [&str; 6] =
    ["launch__", "device__", "profiler__", "nvlink__", "numa__", "c2clink__"];
const ALWAYS_PRINTED: [&str; 4] = [
    "gpu__time_duration.sum",
    "sm__maximum_warps_avg_per_active_cycle",
    "sm__maximum_warps_per_active_cycle_pct",
    "smsp__maximum_warps_avg_per_active_cycle",
];

/// Whether `column` of a merged run's page belongs on `stage`'s page, so that the page cut
/// from it has the columns a run of `stage` alone prints: one of `stage`'s metrics, a
/// column ncu always prints, or one no stage of the run asked for.
pub fn column_for_stage(column: &str, stage: Stage, merged: &[Stage]) -> bool {
    let asked_by = |s: Stage| definition(s).metrics.iter().any(|m| owns_column(m, column));
    asked_by(stage)
        || ALWAYS_PRINTED.contains(&column)
        || ALWAYS_PRINTED_FAMILIES.iter().any(|f| column.starts_with(f))
        || !merged.iter().any(|s| asked_by(*s))
}

/// Whether `column` is on the page `stage`'s own run prints: a launch column, one of the
/// stage's metrics (any roll-up), or a column ncu prints on every page. Basic's page is
/// cut to these when its run also collected the source section (`hot_lines::SOURCE_SECTION`),
/// whose 117 columns an H200 run added to basic's 305 (`fixtures/h200/source-import/`).
pub fn printed_alone(column: &str, stage: Stage) -> bool {
    crate::ncu::parse::LAUNCH_COLUMNS.contains(&column)
        || definition(stage).metrics.iter().any(|m| owns_column(m, column))
        || ALWAYS_PRINTED.contains(&column)
        || ALWAYS_PRINTED_FAMILIES.iter().any(|f| column.starts_with(f))
}

/// Whether `column` is on the page a run of `stages` prints without the source section:
/// on a page of such a run that also collected the section (to export the report the
/// source page is imported from), the section's columns are not. Basic alone is cut this
/// way since the source page came from its report; a merged first run is cut the same.
pub fn printed_without_source(column: &str, stages: &[Stage]) -> bool {
    stages.iter().any(|s| printed_alone(column, *s))
}

/// Replay passes per launch of merged runs, measured on the H200 (ncu 2025.3.1,
/// `fixtures/h200/planner`): ncu shares passes between the stages' metrics, so a union
/// costs far less than the sum (memory, compute and occupancy together: 12, as compute
/// alone).
pub const MERGED_PASSES_H200: [(&[Stage], u32); 9] = [
    (&[Stage::Basic, Stage::Memory], 15),
    (&[Stage::Basic, Stage::Compute], 16),
    (&[Stage::Basic, Stage::Occupancy], 15),
    (&[Stage::Basic, Stage::Compute, Stage::Occupancy], 17),
    (&[Stage::Basic, Stage::Memory, Stage::Compute, Stage::Occupancy], 17),
    (&[Stage::Compute, Stage::Occupancy], 12),
    (&[Stage::Memory, Stage::Compute, Stage::Occupancy], 12),
    // An A/B check's first run: the counters share its passes
    // (`fixtures/h200/planner/merged-first/pass-sets.md`).
    (&[Stage::Basic, Stage::Memory, Stage::Compute, Stage::Occupancy, Stage::Counters], 17),
    (&[Stage::Memory, Stage::Compute, Stage::Occupancy, Stage::Counters], 12),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// basic's page from a run that also collected the source section (an H200 run of the
    /// zoo's `aos_field_gather`), cut to `printed_alone`, has exactly the columns of
    /// basic's own run of the same kernel, in order: the section's 117 are gone, nothing
    /// of basic's is lost.
    #[test]
    fn basic_s_page_cut_from_the_run_with_the_source_section_is_basic_s_own() {
        let read = |side: &str| kprof_testkit::recording(&format!("source-import/{side}/01_basic_raw.csv"));
        let (own, with) = (read("own-run"), read("with-report"));
        let own = crate::ncu::parse::RawPage::parse(&own, "own").unwrap();
        let page = crate::ncu::parse::RawPage::parse(&with, "with").unwrap();
        assert_eq!((own.columns.len(), page.columns.len()), (305, 422));
        let cut = page.text_with_columns(&with, |c| printed_alone(c, Stage::Basic)).unwrap();
        let cut = crate::ncu::parse::RawPage::parse(&cut, "cut").unwrap();
        assert_eq!(cut.columns, own.columns);
        assert_eq!(cut.launches().count(), 1);
        let cut = page.text_with_columns(&with, |c| printed_without_source(c, &[Stage::Basic])).unwrap();
        assert_eq!(crate::ncu::parse::RawPage::parse(&cut, "cut").unwrap().columns, own.columns);
    }

    /// A merged run that also collected the source section is cut to the columns a run of
    /// its stages without the section prints. On every merged page recorded on the H200
    /// (runs without the section), that cut keeps every column: each column a stage's page
    /// gets from the merged page is one a run of the stages prints, so cutting the
    /// section away loses nothing the stages' pages had.
    #[test]
    fn the_recorded_merged_pages_keep_every_column_without_the_source_section() {
        let recorded = [
            ("planner/again/.batch_atomic_bins_20261202_014559/details/10_merged_basic+compute+occupancy_raw.csv", &[Stage::Basic, Stage::Compute, Stage::Occupancy][..]),
            ("planner/fresh/.batch_atomic_bins_20261202_014504/details/10_merged_compute+occupancy_raw.csv", &[Stage::Compute, Stage::Occupancy][..]),
            ("census/burn-mlp/batch/10_merged_memory+compute+occupancy_raw.csv", &[Stage::Memory, Stage::Compute, Stage::Occupancy][..]),
            ("census/candle-block/batch/10_merged_compute+occupancy_raw.csv", &[Stage::Compute, Stage::Occupancy][..]),
            ("census/batched/batch/10_merged_compute+occupancy_raw.csv", &[Stage::Compute, Stage::Occupancy][..]),
        ];
        for (file, stages) in recorded {
            let text = kprof_testkit::recording(file);
            let page = crate::ncu::parse::RawPage::parse(&text, file).unwrap();
            let dropped: Vec<&String> =
                page.columns.iter().filter(|c| !printed_without_source(c, stages)).collect();
            assert!(dropped.is_empty(), "{file}: {dropped:?}");
            let given: usize = page
                .columns
                .iter()
                .filter(|c| stages.iter().any(|s| column_for_stage(c, *s, stages)))
                .count();
            assert_eq!(given, page.columns.len(), "{file}");
        }
    }
}
