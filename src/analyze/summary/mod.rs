//! `metrics_summary.json`: one entry per kernel, launches aggregated by median.
//!
//! [`FIELDS`] is the one place that says which ncu metric feeds which summary field; the
//! rules refer to the field names only. A metric that was not collected stays `None` (null
//! in JSON), never zero; so does a ratio over a traffic that did not happen (bytes per
//! sector, sectors per request of a kernel without global stores), so that no condition
//! on it holds.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ncu::parse::RawPage;

mod derive;
mod fields;

pub use fields::{
    field_names, source_of, stall_metric, stall_source_name, unit_of, Field, DERIVED, FIELDS, STALL_REASONS,
};

/// One kernel's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelSummary {
    /// The kernel name as ncu printed it (demangled).
    pub kernel: String,
    /// Launches aggregated (the most any one stage profiled).
    pub launches: usize,
    /// Every field, by name: direct ones from [`FIELDS`], then [`DERIVED`]; `None` = not collected.
    #[serde(flatten)]
    pub fields: BTreeMap<String, Option<f64>>,
    /// Stall reasons, largest first: (reason, warps per issue).
    pub top_stalls: Vec<StallShare>,
}

/// One stall reason's weight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StallShare {
    /// The reason (`long_scoreboard`).
    pub reason: String,
    /// Average warps stalled for it per issued instruction.
    pub warps_per_issue: f64,
}

impl KernelSummary {
    /// A synthetic summary for unit tests: kernel `k`, one launch, these fields, no
    /// stalls. Built in code and named as such, never stored as ncu output.
    #[cfg(test)]
    pub(crate) fn synthetic(fields: &[(&str, f64)]) -> KernelSummary {
        KernelSummary {
            kernel: "k".into(),
            launches: 1,
            fields: fields.iter().map(|(k, v)| (k.to_string(), Some(*v))).collect(),
            top_stalls: Vec::new(),
        }
    }

    /// A field's value, if collected.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.fields.get(name).copied().flatten()
    }

    /// This summary as if only the ncu metrics `keep` accepts had been collected: the
    /// other direct fields and stall reasons are absent, and the derived fields are
    /// derived again from what is left.
    pub fn restricted(&self, keep: impl Fn(&str) -> bool) -> KernelSummary {
        let mut fields: BTreeMap<String, Option<f64>> = BTreeMap::new();
        for f in FIELDS {
            fields.insert(f.name.to_string(), self.get(f.name).filter(|_| keep(f.metric)));
        }
        let stalls: Vec<StallShare> =
            self.top_stalls.iter().filter(|t| keep(&stall_metric(&t.reason))).cloned().collect();
        derive::derive(&mut fields, &stalls);
        KernelSummary { kernel: self.kernel.clone(), launches: self.launches, fields, top_stalls: stalls }
    }

    /// The direct fields that were collected.
    pub fn collected(&self) -> Vec<&'static str> {
        FIELDS.iter().filter(|f| self.get(f.name).is_some()).map(|f| f.name).collect()
    }
}

/// `metrics_summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricsSummary {
    /// Always 1.
    pub schema_version: u32,
    /// The device the launches ran on, as ncu reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// One entry per kernel, in first-seen order.
    pub kernels: Vec<KernelSummary>,
}

/// The ncu metrics the analysis reads from a raw page: every [`FIELDS`] metric, the stall
/// reasons and the device's name. A page is read keeping only these (and the launch
/// columns), and `metrics_extracted.jsonl` lists only these.
pub fn is_read_metric(name: &str) -> bool {
    static NAMES: std::sync::OnceLock<std::collections::HashSet<String>> = std::sync::OnceLock::new();
    NAMES
        .get_or_init(|| {
            let mut names: std::collections::HashSet<String> =
                FIELDS.iter().map(|f| f.metric.to_string()).collect();
            names.extend(STALL_REASONS.iter().map(|r| stall_metric(r)));
            names.insert(DEVICE_NAME.to_string());
            names
        })
        .contains(name)
}

/// The column naming the device.
const DEVICE_NAME: &str = "device__attribute_display_name";

/// The factor that turns a value in ncu's printed `unit` into our base unit: nanoseconds
/// for time, bytes for data (`ms` -> 1e6, `Kbyte/block` -> 1e3). ncu scales units when it
/// prints a report without `--print-units base` (an `-i REPORT --csv` export does); SI
/// prefixes, as ncu uses them. Other units are kept as they are.
pub fn unit_scale(unit: &str) -> f64 {
    let head = unit.split('/').next().unwrap_or("").trim();
    match head {
        "ns" | "nsecond" => 1.0,
        "us" | "usecond" => 1e3,
        "ms" | "msecond" => 1e6,
        "s" | "second" => 1e9,
        "Kbyte" | "KB" => 1e3,
        "Mbyte" | "MB" => 1e6,
        "Gbyte" | "GB" => 1e9,
        "Tbyte" | "TB" => 1e12,
        _ => 1.0,
    }
}

/// The median of some values (mean of the middle two for an even count).
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 })
}

/// The median of some values and their spread relative to it: the median absolute
/// deviation, scaled by 1.4826 to estimate a standard deviation, over the median.
pub fn median_and_spread(values: &mut [f64]) -> Option<(f64, f64)> {
    let m = median(values)?;
    let mut dev: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
    let spread = median(&mut dev).map_or(0.0, |d| 1.4826 * d / m);
    Some((m, spread))
}

/// Summarises the launches of every kernel in `pages` (all stages of one profile).
/// `kernel_filter`, when given, keeps only kernels whose name it matches.
pub fn summarize<'p>(
    pages: impl IntoIterator<Item = &'p RawPage>,
    kernel_filter: Option<&regex::Regex>,
) -> MetricsSummary {
    let mut order: Vec<String> = Vec::new();
    let mut values: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    let mut launches: BTreeMap<String, usize> = BTreeMap::new();
    let mut device = None;
    let stall_metrics: Vec<(String, &str)> = STALL_REASONS.iter().map(|r| (stall_metric(r), *r)).collect();
    for page in pages {
        let mut per_page: BTreeMap<String, usize> = BTreeMap::new();
        for launch in page.launches() {
            let kernel = launch.kernel_name().to_string();
            if kernel_filter.is_some_and(|re| !re.is_match(&kernel)) {
                continue;
            }
            if !order.contains(&kernel) {
                order.push(kernel.clone());
            }
            *per_page.entry(kernel.clone()).or_default() += 1;
            if device.is_none() {
                device = launch.get(DEVICE_NAME).map(str::to_string);
            }
            for f in FIELDS {
                if let Some(v) = launch.number(f.metric) {
                    let v = v * unit_scale(launch.unit(f.metric).unwrap_or(""));
                    values.entry((kernel.clone(), f.name.to_string())).or_default().push(v);
                }
            }
            for (metric, reason) in &stall_metrics {
                if let Some(v) = launch.number(metric) {
                    values.entry((kernel.clone(), format!("stall_{reason}"))).or_default().push(v);
                }
            }
        }
        for (k, n) in per_page {
            let e = launches.entry(k).or_default();
            *e = (*e).max(n);
        }
    }
    let kernels = order
        .into_iter()
        .map(|kernel| {
            let mut fields: BTreeMap<String, Option<f64>> = BTreeMap::new();
            for f in FIELDS {
                let v = values.get_mut(&(kernel.clone(), f.name.to_string())).and_then(|v| median(v));
                fields.insert(f.name.to_string(), v);
            }
            let mut stalls: Vec<StallShare> = STALL_REASONS
                .iter()
                .filter_map(|r| {
                    let v =
                        values.get_mut(&(kernel.clone(), format!("stall_{r}"))).and_then(|v| median(v))?;
                    Some(StallShare { reason: r.to_string(), warps_per_issue: v })
                })
                .collect();
            stalls.sort_by(|a, b| b.warps_per_issue.total_cmp(&a.warps_per_issue));
            derive::derive(&mut fields, &stalls);
            KernelSummary {
                launches: launches.get(&kernel).copied().unwrap_or(0),
                kernel,
                fields,
                top_stalls: stalls,
            }
        })
        .collect();
    MetricsSummary { schema_version: 1, device, kernels }
}
