//! The metrics as files for other tools: `metrics_raw.csv` (every stage merged, one row
//! per launch) and `metrics_extracted.jsonl` (one object per launch and metric).

use std::collections::BTreeMap;

use anyhow::Result;
use serde_json::json;

use super::inputs::RawInput;
use crate::ncu::parse::{parse_number, RawPage};

/// Columns every raw page starts with; not metrics.
const FIXED: &[&str] = &[
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
];

/// The launches of a page that pass `filter`, each with its index among its kernel's
/// launches in that page (how launches of different stages line up).
fn numbered_launches<'a>(
    page: &'a RawPage,
    filter: Option<&'a regex::Regex>,
) -> impl Iterator<Item = (usize, crate::ncu::parse::Launch<'a>)> + 'a {
    let mut nth: BTreeMap<&'a str, usize> = BTreeMap::new();
    page.launches().filter(move |l| filter.is_none_or(|re| re.is_match(l.kernel_name()))).map(move |l| {
        let n = nth.entry(l.kernel_name()).or_default();
        *n += 1;
        (*n - 1, l)
    })
}

/// `metrics_raw.csv`: every stage merged, one row per launch (kernel and its n-th launch),
/// one column per metric, the units row kept.
pub fn merged_raw_csv(raw: &[RawInput], filter: Option<&regex::Regex>) -> Result<String> {
    let mut columns: Vec<String> = Vec::new();
    let mut units: BTreeMap<String, String> = BTreeMap::new();
    let mut rows: Vec<((String, usize), BTreeMap<String, String>)> = Vec::new();
    let mut row_of: std::collections::HashMap<(String, usize), usize> = std::collections::HashMap::new();
    for input in raw {
        let page = &input.page;
        for (n, launch) in numbered_launches(page, filter) {
            let key = (launch.kernel_name().to_string(), n);
            let idx = *row_of.entry(key.clone()).or_insert_with(|| {
                rows.push((key, BTreeMap::new()));
                rows.len() - 1
            });
            for (i, col) in page.columns.iter().enumerate() {
                if FIXED.contains(&col.as_str()) {
                    continue;
                }
                if !units.contains_key(col) {
                    columns.push(col.clone());
                    units.insert(col.clone(), page.units.get(i).cloned().unwrap_or_default());
                }
                if let Some(v) = launch.cell(i) {
                    rows[idx].1.entry(col.clone()).or_insert_with(|| v.to_string());
                }
            }
        }
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["Kernel Name".to_string(), "Launch".to_string()];
    header.extend(columns.iter().cloned());
    w.write_record(&header)?;
    let mut unit_row = vec![String::new(), String::new()];
    unit_row.extend(columns.iter().map(|c| units.get(c).cloned().unwrap_or_default()));
    w.write_record(&unit_row)?;
    for ((kernel, n), values) in &rows {
        let mut r = vec![kernel.clone(), n.to_string()];
        r.extend(columns.iter().map(|c| values.get(c).cloned().unwrap_or_default()));
        w.write_record(&r)?;
    }
    let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("writing metrics_raw.csv: {e}"))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `metrics_extracted.jsonl`: one object per launch and numeric metric.
pub fn extracted_jsonl(raw: &[RawInput], filter: Option<&regex::Regex>) -> String {
    let mut out = String::new();
    for input in raw {
        let (stage, page) = (&input.label, &input.page);
        for (n, launch) in numbered_launches(page, filter) {
            let kernel = launch.kernel_name();
            for (i, col) in page.columns.iter().enumerate() {
                if !col.contains("__") {
                    continue;
                }
                let Some(value) = launch.cell(i).and_then(parse_number) else { continue };
                let obj = json!({
                    "kernel": kernel, "launch": n, "stage": stage, "metric": col,
                    "value": value, "unit": page.units.get(i).cloned().unwrap_or_default(),
                });
                out.push_str(&obj.to_string());
                out.push('\n');
            }
        }
    }
    out
}
