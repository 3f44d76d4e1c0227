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

/// The counters of a parsed page (see [`read`]).
pub fn of_page(page: &RawPage) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
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
