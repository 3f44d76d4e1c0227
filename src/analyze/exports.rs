//! The metrics as files for other tools: `metrics_raw.csv` (every stage merged, one row
//! per launch) and `metrics_extracted.jsonl` (one object per launch and metric).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Write};

use anyhow::{Context, Result};
use serde_json::json;

use super::inputs::RawInput;
use crate::error::{ExitCode, Failure};
use crate::ncu::parse::{parse_number, RawPage, LAUNCH_COLUMNS};

/// The launches of a page that pass `filter`, each with its index among its kernel's
/// launches in that page (how launches of different stages line up).
fn numbered_launches<'a>(
    page: &'a RawPage,
    filter: Option<&'a regex::Regex>,
) -> impl Iterator<Item = (usize, crate::ncu::parse::Launch<'a>)> + 'a {
    let mut nth: HashMap<&'a str, usize> = HashMap::new();
    page.launches().filter(move |l| filter.is_none_or(|re| re.is_match(l.kernel_name()))).map(move |l| {
        let n = nth.entry(l.kernel_name()).or_default();
        *n += 1;
        (*n - 1, l)
    })
}

/// The metric columns of a page for `metrics_raw.csv`: the first column of each name that
/// is not a launch column, as (index in the page, name, unit).
fn metric_columns(page: &RawPage) -> Vec<(usize, String, String)> {
    let mut seen = std::collections::HashSet::new();
    page.columns
        .iter()
        .enumerate()
        .filter(|(_, c)| !LAUNCH_COLUMNS.contains(&c.as_str()) && seen.insert(c.as_str()))
        .map(|(i, c)| (i, c.clone(), page.units.get(i).cloned().unwrap_or_default()))
        .collect()
}

fn open(input: &RawInput) -> Result<BufReader<File>> {
    Ok(BufReader::new(File::open(&input.path).with_context(|| format!("could not read {}", input.origin))?))
}

/// Writes `metrics_raw.csv` to `out`: every stage merged, one row per launch (kernel and its
/// n-th launch), one column per metric (every metric of the pages, not only those the
/// analysis reads), the units row kept. The pages are read again from their files: one
/// page streams through row by row; several are merged in memory, launch by launch.
pub fn write_metrics_raw(raw: &[RawInput], filter: Option<&regex::Regex>, out: &mut dyn Write) -> Result<()> {
    let mut w = csv::Writer::from_writer(out);
    let all = |_: &str| true;
    if let [input] = raw {
        let mut nth: HashMap<String, usize> = HashMap::new();
        let mut columns: Option<Vec<(usize, String, String)>> = None;
        let mut failed: Option<csv::Error> = None;
        RawPage::for_each_row(open(input)?, &input.origin, &all, &mut |page, _, cells| {
            let cols = columns.get_or_insert_with(|| {
                let cols = metric_columns(page);
                let mut header = vec!["Kernel Name".to_string(), "Launch".to_string()];
                header.extend(cols.iter().map(|(_, c, _)| c.clone()));
                let mut units = vec![String::new(), String::new()];
                units.extend(cols.iter().map(|(_, _, u)| u.clone()));
                if let Err(e) = w.write_record(&header).and_then(|_| w.write_record(&units)) {
                    failed.get_or_insert(e);
                }
                cols
            });
            let kernel = page.column("Kernel Name").and_then(|i| cells.get(i)).cloned().unwrap_or_default();
            if filter.is_some_and(|re| !re.is_match(&kernel)) {
                return Ok(());
            }
            let n = nth.entry(kernel.clone()).or_default();
            let mut record = vec![kernel, n.to_string()];
            *n += 1;
            record.extend(cols.iter().map(|(i, _, _)| cells.get(*i).cloned().unwrap_or_default()));
            if let Err(e) = w.write_record(&record) {
                failed.get_or_insert(e);
            }
            Ok(())
        })
        .map_err(|e| Failure::new(ExitCode::Config, e.with_origin(&input.origin).to_string()))?;
        if let Some(e) = failed {
            return Err(e).context("could not write metrics_raw.csv");
        }
        w.flush()?;
        return Ok(());
    }
    // Several pages: rows keyed by (kernel, n-th launch), the first value of a column wins.
    let mut columns: Vec<(String, String)> = Vec::new();
    let mut column_of: HashMap<String, usize> = HashMap::new();
    // ((kernel, n-th launch), values by merged column)
    type Row = ((String, usize), Vec<Option<String>>);
    let mut rows: Vec<Row> = Vec::new();
    let mut row_of: HashMap<(String, usize), usize> = HashMap::new();
    for input in raw {
        let page = RawPage::read(open(input)?, &input.origin, &all)
            .map_err(|e| Failure::new(ExitCode::Config, e.with_origin(&input.origin).to_string()))?;
        let cols: Vec<(usize, usize)> = metric_columns(&page)
            .into_iter()
            .map(|(i, name, unit)| {
                let at = *column_of.entry(name.clone()).or_insert_with(|| {
                    columns.push((name, unit));
                    columns.len() - 1
                });
                (i, at)
            })
            .collect();
        for (n, launch) in numbered_launches(&page, filter) {
            let key = (launch.kernel_name().to_string(), n);
            let r = *row_of.entry(key.clone()).or_insert_with(|| {
                rows.push((key, Vec::new()));
                rows.len() - 1
            });
            let values = &mut rows[r].1;
            for &(i, at) in &cols {
                if values.len() <= at {
                    values.resize(at + 1, None);
                }
                if values[at].is_none() {
                    values[at] = launch.cell(i).map(String::from);
                }
            }
        }
    }
    let mut header = vec!["Kernel Name".to_string(), "Launch".to_string()];
    header.extend(columns.iter().map(|(c, _)| c.clone()));
    w.write_record(&header)?;
    let mut unit_row = vec![String::new(), String::new()];
    unit_row.extend(columns.iter().map(|(_, u)| u.clone()));
    w.write_record(&unit_row)?;
    for ((kernel, n), values) in &rows {
        let mut r = vec![kernel.clone(), n.to_string()];
        r.extend((0..columns.len()).map(|at| values.get(at).cloned().flatten().unwrap_or_default()));
        w.write_record(&r)?;
    }
    w.flush()?;
    Ok(())
}

/// `metrics_extracted.jsonl`: one object per launch and numeric metric the analysis reads
/// (the pages as the analysis read them keep only those; `metrics_raw.csv` has every one).
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
