//! Discovery: with no kernel hint, one durations-only pass ranks every kernel the program
//! launched, and the costliest is profiled (`details/kernel_candidates.json` keeps the
//! ranking).

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::analyze::summary;
use crate::error::{ExitCode, Failure};
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

/// Ranks the kernels of a discovery pass (its parsed page) (total duration, then launches) and writes
/// `kernel_candidates.json`; returns the costliest kernel's function name and why.
pub(crate) fn discover(dir: &ProfileDir, page: Result<RawPage, String>) -> Result<(String, String)> {
    let page = page.map_err(|e| Failure::new(ExitCode::NoKernelMatched, e))?;
    let mut candidates: Vec<Candidate> = Vec::new();
    for l in page.launches() {
        let d = l.number("gpu__time_duration.sum").unwrap_or(0.0)
            * summary::unit_scale(l.unit("gpu__time_duration.sum").unwrap_or(""));
        match candidates.iter_mut().find(|c| c.kernel == l.kernel_name()) {
            Some(c) => {
                c.launches += 1;
                c.total_duration_ns += d;
            }
            None => candidates.push(Candidate {
                kernel: l.kernel_name().to_string(),
                function: function_name(l.kernel_name()),
                launches: 1,
                total_duration_ns: d,
            }),
        }
    }
    candidates.sort_by(|a, b| {
        b.total_duration_ns.total_cmp(&a.total_duration_ns).then(b.launches.cmp(&a.launches))
    });
    let Some(top) = candidates.first().cloned() else {
        return Err(Failure::new(ExitCode::NoKernelMatched, "discovery saw no kernel launch").into());
    };
    let record = Candidates {
        schema_version: 1,
        ranking: "total duration, then launch count (no hint was given)".into(),
        chosen: top.function.clone(),
        candidates: candidates.clone(),
    };
    write_atomic(
        &dir.kernel_candidates_path(),
        &(serde_json::to_string_pretty(&record).context("could not serialise the kernel candidates")? + "\n"),
    )?;
    let others: Vec<String> = candidates.iter().skip(1).map(|c| c.function.clone()).collect();
    let why = format!(
        "costliest of {}: {} launch(es), {} in all{}",
        candidates.len(),
        top.launches,
        crate::units::duration(top.total_duration_ns),
        if others.is_empty() { String::new() } else { format!("; also seen: {}", others.join(", ")) }
    );
    Ok((top.function, why))
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
}
