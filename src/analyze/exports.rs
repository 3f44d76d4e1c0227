//! The metrics as files for other tools: `metrics_raw.csv` (every stage merged, one row
//! per launch) and `metrics_extracted.jsonl` (the kernels once, then one object per launch
//! and metric).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Write};

use anyhow::Result;
use serde::Serialize;

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
    Ok(BufReader::new(crate::profile::fs::open_input(&input.path, &input.origin)?))
}

/// Writes `metrics_raw.csv` to `out`: every stage merged, one row per launch (kernel and its
/// n-th launch), one column per metric (every metric of the pages, not only those the
/// analysis reads), the units row kept. The pages are read again from their files: one
/// page streams through row by row; several are merged in memory, launch by launch.
pub fn write_metrics_raw(raw: &[RawInput], filter: Option<&regex::Regex>, out: &mut dyn Write) -> Result<()> {
    let mut w = csv::Writer::from_writer(out);
    if let [input] = raw {
        stream_page(input, filter, &mut w)?;
    } else {
        let mut merged = MergedPages::default();
        for input in raw {
            let page = RawPage::read(open(input)?, &input.origin, &|_: &str| true)
                .map_err(|e| Failure::new(ExitCode::Config, e.with_origin(&input.origin).to_string()))?;
            merged.add(&page, filter);
        }
        merged.write(&mut w)?;
    }
    w.flush()?;
    Ok(())
}

/// The header row and the units row of `metrics_raw.csv` for some (name, unit) columns.
fn header_rows<'a>(columns: impl Iterator<Item = (&'a str, &'a str)> + Clone) -> [Vec<String>; 2] {
    let mut header = vec!["Kernel Name".to_string(), "Launch".to_string()];
    header.extend(columns.clone().map(|(c, _)| c.to_string()));
    let mut units = vec![String::new(), String::new()];
    units.extend(columns.map(|(_, u)| u.to_string()));
    [header, units]
}

/// One page, streamed row by row from its file into `w`: the header comes from the page's
/// first row, and each launch is numbered as it passes.
fn stream_page<W: Write>(
    input: &RawInput,
    filter: Option<&regex::Regex>,
    w: &mut csv::Writer<W>,
) -> Result<()> {
    let mut nth: HashMap<String, usize> = HashMap::new();
    let mut columns: Option<Vec<(usize, String, String)>> = None;
    let mut failed: Option<csv::Error> = None;
    RawPage::for_each_row(open(input)?, &input.origin, &|_: &str| true, &mut |page, _, cells| {
        let cols = columns.get_or_insert_with(|| {
            let cols = metric_columns(page);
            let [header, units] = header_rows(cols.iter().map(|(_, c, u)| (c.as_str(), u.as_str())));
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
    match failed {
        // The caller names the file.
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// One merged row: (kernel, n-th launch) and the values by merged column.
type MergedRow = ((String, usize), Vec<Option<String>>);

/// Several pages merged in memory: rows keyed by (kernel, n-th launch), columns by name in
/// first-seen order, the first value of a column wins.
#[derive(Default)]
struct MergedPages {
    /// (name, unit) of each merged column.
    columns: Vec<(String, String)>,
    /// A column's index in `columns`, by name.
    column_of: HashMap<String, usize>,
    /// The rows in first-seen order.
    rows: Vec<MergedRow>,
    /// A row's index in `rows`, by key.
    row_of: HashMap<(String, usize), usize>,
}

impl MergedPages {
    /// Merges one page's launches that pass `filter`.
    fn add(&mut self, page: &RawPage, filter: Option<&regex::Regex>) {
        let cols: Vec<(usize, usize)> = metric_columns(page)
            .into_iter()
            .map(|(i, name, unit)| {
                let at = *self.column_of.entry(name.clone()).or_insert_with(|| {
                    self.columns.push((name, unit));
                    self.columns.len() - 1
                });
                (i, at)
            })
            .collect();
        for (n, launch) in numbered_launches(page, filter) {
            let key = (launch.kernel_name().to_string(), n);
            let r = *self.row_of.entry(key.clone()).or_insert_with(|| {
                self.rows.push((key, Vec::new()));
                self.rows.len() - 1
            });
            let values = &mut self.rows[r].1;
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

    /// Writes the header, the units and every row, a missing value as an empty cell.
    fn write<W: Write>(&self, w: &mut csv::Writer<W>) -> Result<()> {
        for row in header_rows(self.columns.iter().map(|(c, u)| (c.as_str(), u.as_str()))) {
            w.write_record(&row)?;
        }
        for ((kernel, n), values) in &self.rows {
            let mut r = vec![kernel.clone(), n.to_string()];
            r.extend((0..self.columns.len()).map(|at| values.get(at).cloned().flatten().unwrap_or_default()));
            w.write_record(&r)?;
        }
        Ok(())
    }
}

/// The shape of `metrics_extracted.jsonl`. Version 1 (the files without a version) named
/// the kernel on every row; version 2 names each kernel once, in the first line.
pub const EXTRACTED_SCHEMA_VERSION: u32 = 2;

/// The first line of `metrics_extracted.jsonl`: the kernels, each once, in the order they
/// first appear (rows name a kernel by its place here). A 2 KB C++ template name repeated
/// on every row made a 58 MB page write 421 MB. Fields in alphabetical order, as the rows.
#[derive(Serialize)]
struct ExtractedHeader<'a> {
    kernels: Vec<&'a str>,
    schema_version: u32,
}

/// One row of `metrics_extracted.jsonl`: one launch's value of one metric. The fields are
/// in alphabetical order, as the file has always had them.
#[derive(Serialize)]
struct ExtractedMetric<'a> {
    /// The kernel's place in the first line's `kernels`.
    kernel: usize,
    launch: usize,
    metric: &'a str,
    stage: &'a str,
    unit: &'a str,
    value: f64,
}

/// Writes `metrics_extracted.jsonl` to `out`: the kernels once, then one object per launch
/// and numeric metric the analysis reads (the pages as the analysis read them keep only
/// those; `metrics_raw.csv` has every one).
pub fn write_extracted(raw: &[RawInput], filter: Option<&regex::Regex>, out: &mut dyn Write) -> Result<()> {
    let mut kernels: Vec<&str> = Vec::new();
    let mut place: HashMap<&str, usize> = HashMap::new();
    for input in raw {
        for (_, launch) in numbered_launches(&input.page, filter) {
            let name = launch.kernel_name();
            place.entry(name).or_insert_with(|| {
                kernels.push(name);
                kernels.len() - 1
            });
        }
    }
    serde_json::to_writer(&mut *out, &ExtractedHeader { kernels, schema_version: EXTRACTED_SCHEMA_VERSION })?;
    out.write_all(b"\n")?;
    for input in raw {
        let (stage, page) = (&input.label, &input.page);
        for (n, launch) in numbered_launches(page, filter) {
            let kernel = place[launch.kernel_name()];
            for (i, col) in page.columns.iter().enumerate() {
                if !col.contains("__") {
                    continue;
                }
                let Some(value) = launch.cell(i).and_then(parse_number) else { continue };
                let unit = page.units.get(i).map(String::as_str).unwrap_or_default();
                let line = ExtractedMetric { kernel, launch: n, metric: col, stage, unit, value };
                serde_json::to_writer(&mut *out, &line)?;
                out.write_all(b"\n")?;
            }
        }
    }
    Ok(())
}
