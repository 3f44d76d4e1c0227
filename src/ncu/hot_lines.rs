//! How the hot lines (the source page) are collected: ncu's `SourceCounters` section, or
//! only the metrics kprof reads from that page.
//!
//! The analysis reads three things off the source page: each instruction's PC samples
//! and their stall reasons, which rank the hot lines (`analyze::hotspots`), and each
//! instruction's executed count, which the SASS pattern rules weigh (`analyze::sass`).
//! The section collects much more: branch and divergence counts, memory access kinds and
//! excessive sectors per instruction, most of them by patching the kernel's SASS, and a
//! patched kernel runs several times slower. On kernels of milliseconds that is most of
//! the first run's cost beyond its plain passes (the H200's `hgemm` pair: the fresh run
//! 0.77 of one `--set full` run).
//!
//! `KPROF_HOT_LINES=sampling` collects only [`SAMPLING_METRICS`] in place of the section,
//! for measuring the two side by side (`scripts/gpu/source_metrics.py` times the four
//! ways on the planner's first run, `scripts/gpu/cost-bench.sh` the whole runs). The
//! section stays the default until those measurements on an H200 say that the metrics
//! alone are cheaper and rank the same lines: the pass counts the planner prices
//! (`ncu::stages`) are the section's.

/// The section the source page is printed from by default.
pub const SOURCE_SECTION: &str = "SourceCounters";

/// `KPROF_HOT_LINES`: `sampling` for [`HotLines::Sampling`]; anything else, or nothing,
/// for the section.
pub const HOT_LINES_VAR: &str = "KPROF_HOT_LINES";

/// The metrics of [`HotLines::Sampling`]: the PC sampling groups (every stall reason's
/// samples, all of them and the not-issued ones) and the executed instructions.
pub const SAMPLING_METRICS: [&str; 3] = [
    "group:smsp__pcsamp_warp_stall_reasons",
    "group:smsp__pcsamp_warp_stall_reasons_not_issued",
    "inst_executed",
];

/// How the hot lines are collected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HotLines {
    /// ncu's `SourceCounters` section (the default).
    Section,
    /// Only [`SAMPLING_METRICS`].
    Sampling,
}

impl HotLines {
    /// The way `KPROF_HOT_LINES` chooses.
    pub fn chosen() -> HotLines {
        match std::env::var(HOT_LINES_VAR).as_deref() {
            Ok("sampling") => HotLines::Sampling,
            _ => HotLines::Section,
        }
    }

    /// What goes before a run's report options (`--export`) when the run also collects
    /// the hot lines: the section, or nothing (the metrics join the run's list, [`Self::joined`]).
    pub fn prefix(self) -> &'static [&'static str] {
        match self {
            HotLines::Section => &["--section", SOURCE_SECTION],
            HotLines::Sampling => &[],
        }
    }

    /// `args`, a run's own options (a metric list or none, then its page), with the
    /// metrics of [`HotLines::Sampling`] joined to its list (ncu takes one `--metrics`),
    /// or as a list of their own before the page; unchanged for the section.
    pub fn joined(self, mut args: Vec<String>) -> Vec<String> {
        if self == HotLines::Section {
            return args;
        }
        match args.iter().position(|a| a == "--metrics") {
            Some(at) if at + 1 < args.len() => {
                let mut listed: Vec<String> = args[at + 1].split(',').map(String::from).collect();
                for m in SAMPLING_METRICS {
                    if !listed.iter().any(|l| l == m) {
                        listed.push(m.to_string());
                    }
                }
                args[at + 1] = listed.join(",");
            }
            _ => {
                let page = args.iter().position(|a| a == "--csv").unwrap_or(args.len());
                args.splice(page..page, ["--metrics".to_string(), SAMPLING_METRICS.join(",")]);
            }
        }
        args
    }

    /// The source stage's options when it runs on its own: what `collection` asks for, the
    /// section swapped for the metrics when sampling.
    pub fn source_stage(self, args: Vec<String>) -> Vec<String> {
        match self {
            HotLines::Section => args,
            HotLines::Sampling => {
                let mut rest = Vec::with_capacity(args.len());
                let mut words = args.into_iter();
                while let Some(a) = words.next() {
                    if a == "--section" {
                        words.next();
                    } else {
                        rest.push(a);
                    }
                }
                HotLines::Sampling.joined(rest)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_section_goes_before_the_report_and_leaves_the_run_s_options() {
        let basic = strings(&["--metrics", "a,b", "--csv", "--page", "raw"]);
        assert_eq!(HotLines::Section.prefix(), ["--section", "SourceCounters"]);
        assert_eq!(HotLines::Section.joined(basic.clone()), basic);
        assert!(HotLines::Sampling.prefix().is_empty());
    }

    #[test]
    fn sampling_joins_the_run_s_one_metric_list() {
        let basic = strings(&["--metrics", "a,inst_executed", "--csv", "--page", "raw"]);
        let got = HotLines::Sampling.joined(basic);
        assert_eq!(got.iter().filter(|a| *a == "--metrics").count(), 1, "{got:?}");
        assert_eq!(
            got[1],
            "a,inst_executed,group:smsp__pcsamp_warp_stall_reasons,group:smsp__pcsamp_warp_stall_reasons_not_issued"
        );
        assert_eq!(got[2..], strings(&["--csv", "--page", "raw"])[..]);
    }

    #[test]
    fn the_source_stage_alone_swaps_the_section_for_the_metrics() {
        let alone = strings(&[
            "--section",
            "SourceCounters",
            "--csv",
            "--page",
            "source",
            "--print-source",
            "cuda,sass",
        ]);
        assert_eq!(HotLines::Section.source_stage(alone.clone()), alone);
        assert_eq!(
            HotLines::Sampling.source_stage(alone),
            strings(&[
                "--metrics",
                &SAMPLING_METRICS.join(","),
                "--csv",
                "--page",
                "source",
                "--print-source",
                "cuda,sass"
            ])
        );
    }
}
