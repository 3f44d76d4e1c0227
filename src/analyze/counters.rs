//! The `counters` stage's page of a profile, as numbers: what an A/B check compares
//! between its two sides (`compare::ab::counters`).

use std::collections::BTreeMap;

use anyhow::{Context, Result};

use crate::analyze::summary::{median, unit_scale};
use crate::model::stage::Stage;
use crate::ncu::parse::RawPage;
use crate::ncu::stages::COUNTERS;
use crate::ncu::StageCollection;
use crate::profile::dir::ProfileDir;

/// The prefix of the device attributes ncu writes into every raw page.
const DEVICE_ATTRIBUTE: &str = "device__attribute_";

/// Each counter of [`COUNTERS`] on the profile's counters page: the median over the
/// page's launches, in base units (bytes, not Mbyte). `None` when the profile has no
/// counters page (the stage did not run).
pub fn read(dir: &ProfileDir) -> Result<Option<BTreeMap<String, f64>>> {
    let path = dir.stage_raw_path(&StageCollection::Named(Stage::Counters));
    if !path.is_file() {
        return Ok(None);
    }
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("could not read {}", path.display()))?;
    let page = RawPage::parse(&text, &path.display().to_string())
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(Some(of_page(&page)))
}

/// The counters of a parsed page (see [`read`]), and every numeric device attribute
/// (`device__attribute_*`) of its first launch: the device's peak rates are built from
/// them when a change is priced in time.
pub fn of_page(page: &RawPage) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    if let Some(first) = page.launches().next() {
        for name in page.columns.iter().filter(|c| c.starts_with(DEVICE_ATTRIBUTE)) {
            if let Some(v) = first.number(name) {
                out.insert(name.clone(), v);
            }
        }
    }
    for metric in COUNTERS {
        let mut values: Vec<f64> = page
            .launches()
            .filter_map(|l| Some(l.number(metric)? * l.unit(metric).map(unit_scale).unwrap_or(1.0)))
            .collect();
        if let Some(v) = median(&mut values) {
            out.insert(metric.to_string(), v);
        }
    }
    out
}
