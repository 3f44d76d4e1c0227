//! The census read from a trace: the files kprof's tracer (`tracer/`, loaded by the CUDA
//! driver) wrote, one per process that used CUDA, merged into one [`Trace`], and the
//! [`Census`] and [`Breakdown`] made from it, the same shapes as those of ncu's
//! durations-only page.
//!
//! CUPTI names C++ kernels by their mangled name; ncu prints them demangled (`void
//! ns::f<int>(float *)`), and a filter matches the function name. Names are demangled here
//! with `cpp_demangle` (a well-kept Itanium demangler, the one `addr2line` and the
//! `symbolic` crates use), so that [`function_name`] gives the function ncu's census
//! gives; a name that is not mangled (an `extern "C"` or Rust-CUDA kernel) passes through.
//! The demangler spells parameters its own way (`float const*` for ncu's `const float
//! *`): the function names agree, the whole names may not.

use std::path::Path;

use super::discover::{function_name, Candidate, Census};
use crate::model::census::{is_early, Breakdown, BreakdownRow, CensusSource};

/// The first line of a trace file (the tracer's `tally::HEADER`).
const HEADER: &str = "kprof-trace\t1";

/// One kernel of a trace: its launches summed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedKernel {
    /// The name as CUPTI gave it (mangled for C++ kernels).
    pub name: String,
    /// Launches counted.
    pub launches: u64,
    /// Their total duration, ns.
    pub total_ns: u64,
    /// The index of its first launch among the process's launches.
    pub first_index: u64,
    /// The index of its last.
    pub last_index: u64,
    /// Its first launch's start (GPU timestamp), ns.
    pub first_start: u64,
    /// Its last launch's start, ns.
    pub last_start: u64,
    /// Grid shapes as ncu prints them (`(256, 256, 1)`), in the order seen.
    pub grids: Vec<String>,
    /// Block shapes, the same way.
    pub blocks: Vec<String>,
}

/// The launches of a traced run: every process's trace file merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    /// How many processes wrote a trace.
    pub processes: usize,
    /// Launches counted.
    pub launches: u64,
    /// Whether launches past the cap (`--census-launches`) were seen and not counted.
    pub capped: bool,
    /// The first start and the last end of the launches counted, ns.
    pub span: Option<(u64, u64)>,
    /// Why a tracer could not trace (all of it, or part).
    pub errors: Vec<String>,
    /// The kernels, by name.
    pub kernels: Vec<TracedKernel>,
}

impl Trace {
    /// One process's trace file.
    pub fn parse(text: &str) -> Result<Trace, String> {
        let mut lines = text.lines().enumerate();
        match lines.next() {
            Some((_, HEADER)) => {}
            Some((_, other)) => return Err(format!("line 1 is `{}`, not `kprof-trace<TAB>1`", shown(other))),
            None => return Err("the file is empty".into()),
        }
        let mut t = Trace { processes: 1, ..Trace::default() };
        for (i, line) in lines {
            let at = |e: String| format!("line {}: {e}", i + 1);
            let fields: Vec<&str> = line.split('\t').collect();
            match fields.as_slice() {
                ["launches", n] => t.launches = number(n).map_err(at)?,
                ["capped", c] => t.capped = *c == "1",
                ["span", start, end] => t.span = Some((number(start).map_err(at)?, number(end).map_err(at)?)),
                ["error", why] => t.errors.push(unescape(why)),
                ["kernel", n, total, first, last, first_start, last_start, grids, blocks, name] => {
                    let shapes = |s: &str| s.split(';').filter(|x| !x.is_empty()).map(String::from).collect();
                    t.kernels.push(TracedKernel {
                        name: unescape(name),
                        launches: number(n).map_err(at)?,
                        total_ns: number(total).map_err(at)?,
                        first_index: number(first).map_err(at)?,
                        last_index: number(last).map_err(at)?,
                        first_start: number(first_start).map_err(at)?,
                        last_start: number(last_start).map_err(at)?,
                        grids: shapes(grids),
                        blocks: shapes(blocks),
                    })
                }
                _ => return Err(at(format!("`{}` is not a trace record", shown(line)))),
            }
        }
        Ok(t)
    }

    /// The trace files (`*.tsv`) in `dir`, merged; an error naming the file that cannot be
    /// read, or saying that there is none.
    pub fn read_dir(dir: &Path) -> Result<Trace, String> {
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| format!("{} cannot be read: {e}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "tsv"))
            .collect();
        files.sort();
        let mut out = Trace::default();
        for f in &files {
            let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
            out.merge(Trace::parse(&text).map_err(|e| format!("{}: {e}", f.display()))?);
        }
        if files.is_empty() {
            return Err("the program wrote no trace: the CUDA driver did not load the tracer".into());
        }
        Ok(out)
    }

    /// Adds another process's trace. Launch indexes stay each process's own.
    pub fn merge(&mut self, other: Trace) {
        self.processes += other.processes;
        self.launches += other.launches;
        self.capped |= other.capped;
        self.span = match (self.span, other.span) {
            (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
            (a, b) => a.or(b),
        };
        self.errors.extend(other.errors);
        for k in other.kernels {
            match self.kernels.iter_mut().find(|m| m.name == k.name) {
                Some(m) => {
                    m.launches += k.launches;
                    m.total_ns += k.total_ns;
                    m.first_start = m.first_start.min(k.first_start);
                    m.last_start = m.last_start.max(k.last_start);
                    for (seen, more) in [(&mut m.grids, k.grids), (&mut m.blocks, k.blocks)] {
                        for s in more {
                            if !seen.contains(&s) {
                                seen.push(s);
                            }
                        }
                    }
                }
                None => self.kernels.push(k),
            }
        }
    }

    /// Each kernel with the name ncu prints for it (demangled) and its function name.
    fn named(&self) -> impl Iterator<Item = (&TracedKernel, String, String)> {
        self.kernels.iter().map(|k| {
            let kernel = demangle(&k.name);
            let function = function_name(&kernel);
            (k, kernel, function)
        })
    }

    /// The census of the trace: each kernel by its demangled name, costliest first.
    pub fn census(&self) -> Census {
        let kernels = self
            .named()
            .map(|(k, kernel, function)| Candidate {
                function,
                kernel,
                launches: k.launches as usize,
                total_duration_ns: k.total_ns as f64,
            })
            .collect();
        Census::from_candidates(kernels, self.launches as usize, self.capped)
    }

    /// The breakdown of the trace: every kernel with its launches, time, share and shapes,
    /// those all of whose launches came early marked so.
    pub fn breakdown(&self) -> Breakdown {
        let rows = self
            .named()
            .map(|(k, kernel, function)| BreakdownRow {
                function,
                kernel,
                launches: k.launches as usize,
                total_ns: k.total_ns as f64,
                mean_ns: 0.0,
                share_pct: 0.0,
                grid: k.grids.clone(),
                block: k.blocks.clone(),
                early: self.span.is_some_and(|s| is_early(k.last_start, s)),
            })
            .collect();
        let mut b = Breakdown::from_rows(rows, self.launches as usize, self.capped);
        b.by = CensusSource::Trace;
        b
    }
}

/// A kernel name as ncu prints it: a mangled C++ name demangled, any other name as it is.
pub fn demangle(name: &str) -> String {
    if !name.starts_with("_Z") {
        return name.to_string();
    }
    cpp_demangle::Symbol::new(name.as_bytes())
        .ok()
        .and_then(|s| s.demangle().ok())
        .unwrap_or_else(|| name.to_string())
}

fn number(s: &str) -> Result<u64, String> {
    s.parse().map_err(|_| format!("`{}` is not a count", shown(s)))
}

/// At most 80 characters of `s`, for an error message.
fn shown(s: &str) -> String {
    crate::shell::printable(&s.chars().take(80).collect::<String>())
}

/// A field as the tracer escaped it (`\t`, `\n`, `\r`, `\\`), unescaped.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kprof_tracer::tally::{Launch, Tally};

    fn launch(name: &str, start: u64, ns: u64, grid: [i32; 3], block: [i32; 3]) -> Launch<'_> {
        Launch { name: name.as_bytes(), start, end: start + ns, grid, block }
    }

    /// What the tracer wrote for `tally`, read back.
    fn written(tally: &Tally) -> Trace {
        let mut out = Vec::new();
        tally.write(&mut out).unwrap();
        Trace::parse(&String::from_utf8(out).unwrap()).unwrap()
    }

    #[test]
    fn the_variables_are_the_contract_s() {
        use kprof_tracer::tally as t;
        assert_eq!(t::OUT_VAR, kprof_contract::tracer::OUT);
        assert_eq!(t::CUPTI_VAR, kprof_contract::tracer::CUPTI);
        assert_eq!(t::LAUNCHES_VAR, kprof_contract::tracer::LAUNCHES);
        assert_eq!(t::HEADER, HEADER);
    }

    #[test]
    fn what_the_tracer_writes_reads_back() {
        let mut tally = Tally::new(Some(3));
        tally.add(&launch("_Z4fillPfi", 100, 10, [4, 1, 1], [256, 1, 1]));
        tally.add(&launch("odd\tname\n", 200, 20, [1, 2, 3], [32, 4, 1]));
        tally.add(&launch("_Z4fillPfi", 300, 30, [8, 1, 1], [256, 1, 1]));
        tally.add(&launch("_Z4fillPfi", 400, 40, [8, 1, 1], [256, 1, 1]));
        tally.errors.push("a reason\twith a tab".into());
        let t = written(&tally);
        assert_eq!((t.processes, t.launches, t.capped, t.span), (1, 3, true, Some((100, 330))));
        assert_eq!(t.errors, ["a reason\twith a tab"]);
        let fill = t.kernels.iter().find(|k| k.name == "_Z4fillPfi").unwrap();
        assert_eq!((fill.launches, fill.total_ns, fill.first_index, fill.last_index), (2, 40, 0, 2));
        assert_eq!((fill.first_start, fill.last_start), (100, 300));
        assert_eq!(fill.grids, ["(4, 1, 1)", "(8, 1, 1)"]);
        assert_eq!(fill.blocks, ["(256, 1, 1)"]);
        assert!(t.kernels.iter().any(|k| k.name == "odd\tname\n" && k.grids == ["(1, 2, 3)"]));
    }

    #[test]
    fn damaged_files_are_refused_with_the_line() {
        assert!(Trace::parse("").unwrap_err().contains("empty"));
        assert!(Trace::parse("something else\n").unwrap_err().contains("line 1"));
        let e = Trace::parse(&format!("{HEADER}\nlaunches\tmany\n")).unwrap_err();
        assert!(e.starts_with("line 2:") && e.contains("`many`"), "{e}");
        let e = Trace::parse(&format!("{HEADER}\nkernel\t1\t2\n")).unwrap_err();
        assert!(e.contains("not a trace record"), "{e}");
    }

    #[test]
    fn processes_merge_by_kernel_name() {
        let mut a = Tally::new(None);
        a.add(&launch("k", 1000, 10, [1, 1, 1], [1, 1, 1]));
        let mut b = Tally::new(None);
        b.add(&launch("k", 500, 5, [2, 1, 1], [1, 1, 1]));
        b.add(&launch("j", 2000, 7, [1, 1, 1], [1, 1, 1]));
        let mut t = written(&a);
        t.merge(written(&b));
        assert_eq!((t.processes, t.launches, t.span), (2, 3, Some((500, 2007))));
        let k = &t.kernels[0];
        assert_eq!((k.launches, k.total_ns, k.first_start, k.last_start), (2, 15, 500, 1000));
        assert_eq!(k.grids, ["(1, 1, 1)", "(2, 1, 1)"]);
    }

    #[test]
    fn no_trace_file_says_the_tracer_was_not_loaded() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a trace").unwrap();
        assert!(Trace::read_dir(dir.path()).unwrap_err().contains("did not load the tracer"));
        let mut tally = Tally::new(None);
        tally.add(&launch("k", 0, 1, [1, 1, 1], [1, 1, 1]));
        let mut text = Vec::new();
        tally.write(&mut text).unwrap();
        std::fs::write(dir.path().join("41.tsv"), &text).unwrap();
        std::fs::write(dir.path().join("42.tsv"), &text).unwrap();
        let t = Trace::read_dir(dir.path()).unwrap();
        assert_eq!((t.processes, t.launches, t.kernels[0].launches), (2, 2, 2));
    }

    /// Mangled names give the function ncu's census gives for the same kernel; names that
    /// are not mangled pass through.
    #[test]
    fn mangled_names_give_ncus_function_names() {
        for (mangled, ncu_printed) in [
            ("_ZN2ns4gemmIfLi128EEEvPKfPf", "void ns::gemm<float, 128>(const float *, float *)"),
            (
                "_Z11hgemm_naivePK6__halfS1_PS_iii",
                "hgemm_naive(const __half *, const __half *, __half *, int, int, int)",
            ),
            (
                "_ZN7cutlass6KernelINS_4gemm6kernel4GemmEEEvNT_6ParamsE",
                "void cutlass::Kernel<cutlass::gemm::kernel::Gemm>(T1::Params)",
            ),
            ("hgemm_tiled", "hgemm_tiled"),
            ("matmul_f32_kernel", "matmul_f32_kernel"),
        ] {
            assert_eq!(function_name(&demangle(mangled)), function_name(ncu_printed), "{mangled}");
        }
        assert_eq!(
            demangle("_ZN2ns4gemmIfLi128EEEvPKfPf"),
            "void ns::gemm<float, 128>(float const*, float*)"
        );
        // Not a valid mangling: kept as it is rather than lost.
        assert_eq!(demangle("_Z_not_a_name"), "_Z_not_a_name");
    }

    /// The launches of the recorded ncu census page (`fixtures/h200/misc/discovery_hgemm.csv`),
    /// traced instead: the census and the breakdown are the ones ncu's page gives.
    #[test]
    fn a_trace_of_the_recorded_census_launches_gives_ncus_census() {
        let path = kprof_testkit::recordings().join("misc/discovery_hgemm.csv");
        let page =
            crate::ncu::parse::RawPage::parse(&std::fs::read_to_string(&path).unwrap(), "page").unwrap();
        let mut tally = Tally::new(None);
        let mut start = 1_000_000;
        for l in page.launches() {
            let ns = l.number("gpu__time_duration.sum").unwrap()
                * crate::analyze::summary::unit_scale(l.unit("gpu__time_duration.sum").unwrap_or(""));
            let shape = |col: &str| -> [i32; 3] {
                let cell = l.get(col).unwrap().trim_matches(|c| c == '(' || c == ')').to_string();
                let v: Vec<i32> = cell.split(", ").map(|x| x.parse().unwrap()).collect();
                [v[0], v[1], v[2]]
            };
            tally.add(&launch(l.kernel_name(), start, ns as u64, shape("Grid Size"), shape("Block Size")));
            start += ns as u64 + 5_000;
        }
        let t = written(&tally);
        let from_ncu = Census::from_page(&page, None);
        assert_eq!(t.census(), from_ncu);
        assert_eq!(from_ncu.kernels.len(), 2);
        assert!(!t.census().capped);
        let mut b = t.breakdown();
        assert_eq!(b.by, CensusSource::Trace);
        b.by = CensusSource::Ncu;
        assert_eq!(b, super::super::discover::breakdown(&page, None));
    }

    /// The tracer's own files from the H200 (`census/tracing/`: a burn and a candle
    /// program, whole and capped at 300 launches) read back into the breakdown kprof wrote
    /// there, kernel for kernel.
    #[test]
    fn the_h200_s_trace_files_read_into_the_breakdowns_written_there() {
        for way in ["burn-trace", "burn-trace-capped", "candle-trace", "candle-trace-capped"] {
            let text = kprof_testkit::recording(&format!("census/tracing/{way}/trace.tsv"));
            let t = Trace::parse(&text).unwrap_or_else(|e| panic!("{way}: {e}"));
            let written: Breakdown = serde_json::from_str(&kprof_testkit::recording(&format!(
                "census/tracing/{way}/breakdown.json"
            )))
            .unwrap();
            let mut read = t.breakdown();
            assert_eq!(read.kernels.len(), written.kernels.len(), "{way}");
            // The shares went through JSON: equal to the last bits that survive it.
            for (r, w) in read.kernels.iter_mut().zip(&written.kernels) {
                assert!((r.share_pct - w.share_pct).abs() < 1e-9, "{way}: {}", r.kernel);
                assert!((r.mean_ns - w.mean_ns).abs() < 1e-6, "{way}: {}", r.kernel);
                (r.share_pct, r.mean_ns) = (w.share_pct, w.mean_ns);
            }
            assert_eq!(read, written, "{way}");
            assert_eq!(written.capped, way.ends_with("capped"), "{way}");
        }
    }

    /// On the same first 300 launches of the burn program, ncu's census (which flushed the
    /// caches before each launch) and the trace agree on the compute-bound matmul's mean
    /// (within 0.5 %) but not on the small memory-bound reduce kernels (ncu's a third
    /// dearer and more): the cause of the 7.6-point share gap the census bench saw, and
    /// why a census now keeps the program's caches.
    #[test]
    fn ncu_s_flushing_census_made_the_memory_bound_kernels_dearer_than_traced() {
        let read = |way: &str| -> Breakdown {
            serde_json::from_str(&kprof_testkit::recording(&format!("census/tracing/{way}/breakdown.json")))
                .unwrap()
        };
        let (traced, ncu) = (read("burn-trace-capped"), read("burn-ncu"));
        assert_eq!((traced.launches, ncu.launches), (300, 300));
        let mean = |b: &Breakdown, prefix: &str| {
            b.kernels.iter().find(|r| r.function.starts_with(prefix)).map(|r| r.mean_ns).unwrap()
        };
        let matmul = mean(&ncu, "matmul_entry") / mean(&traced, "matmul_entry");
        assert!((matmul - 1.0).abs() < 0.005, "{matmul}");
        for reduce in [
            "reduce_kernel_in_f32_in_size_4_out_f32_out_size_1",
            "reduce_kernel_in_f32_in_size_1_out_f32_out_size_1",
        ] {
            let ratio = mean(&ncu, reduce) / mean(&traced, reduce);
            assert!(ratio > 1.3, "{reduce}: {ratio}");
        }
    }

    #[test]
    fn kernels_whose_launches_all_came_first_are_early() {
        let mut tally = Tally::new(None);
        // An autotuning kernel tried twice at the start, then the work for 1 ms.
        tally.add(&launch("_Z8autotunev", 0, 10, [1, 1, 1], [1, 1, 1]));
        tally.add(&launch("_Z8autotunev", 50, 10, [1, 1, 1], [1, 1, 1]));
        for s in 0..10 {
            tally.add(&launch("work", 100 + s * 100_000, 1000, [1, 1, 1], [1, 1, 1]));
        }
        let b = written(&tally).breakdown();
        let early: Vec<(&str, bool)> = b.kernels.iter().map(|r| (r.function.as_str(), r.early)).collect();
        assert_eq!(early, [("work", false), ("autotune", true)]);
    }
}
