//! The follow-up stage of `auto`: the rules read basic's metrics of the filtered kernel
//! and name the stage that looks where its limiter is, with the conditions and values
//! that decided, in words that go into the progress line, `commands.sh` and the
//! manifest. A single run and a batch (per member, from its own rows) ask the same.

use anyhow::Result;

use super::reason::FollowUpWhy;
use crate::analyze::{rules::Rules, summary};
use crate::error::{ExitCode, Failure};
use crate::model::filter::KernelFilter;
use crate::model::stage::Stage;
use crate::ncu::parse::RawPage;

/// The follow-up stage and why, from the rules over basic's metrics (its parsed page).
pub(super) fn follow_up(
    page: Result<RawPage, String>,
    rules: &Rules,
    filter: &KernelFilter,
) -> Result<(Stage, FollowUpWhy)> {
    // A stage ends `ok` only with a readable page (see `unreadable_page`).
    let page = page.map_err(|e| Failure::new(ExitCode::NcuFailed, e))?;
    let summary = summary::summarize([&page], filter.compiled());
    let Some(k) = summary.kernels.first() else {
        let why = FollowUpWhy {
            rule: "basic gave no metrics for the filtered kernel".into(),
            detail: String::new(),
        };
        return Ok((Stage::SpeedOfLight, why));
    };
    let v = rules.decide(k);
    let stage: Stage = v.follow_up_stage;
    // The conditions that decided, then each field they read with its value, once.
    let deciding: Vec<&crate::analyze::rules::Evidence> = v
        .evidence
        .iter()
        .filter(|e| !e.is_supporting())
        // A limiter's own conditions say why; the class rule's would repeat them.
        .filter(|e| v.limiter.as_ref().is_none_or(|l| e.rule == l.id))
        .collect();
    let mut conditions: Vec<&str> = Vec::new();
    let mut values: Vec<String> = Vec::new();
    for e in &deciding {
        if !conditions.contains(&e.threshold.as_str()) {
            conditions.push(e.threshold.as_str());
        }
        let value = format!("{} = {}", e.field, crate::units::value(e.value));
        if !values.contains(&value) {
            values.push(value);
        }
    }
    let detail = format!("{} ({})", conditions.join(", "), values.join(", "));
    let why = match (&v.limiter, &v.rule) {
        (Some(l), _) => {
            FollowUpWhy { rule: format!("limiter `{}` ({})", l.id, v.classification.name()), detail }
        }
        (None, Some(rule)) => {
            FollowUpWhy { rule: format!("rule `{rule}` ({})", v.classification.name()), detail }
        }
        // Shown as `no rule decided (missing: a, b)`; its brief has read `no rule decided
        // (missing` (cut at the first `: `) in every recorded run, and still does.
        (None, None) => FollowUpWhy {
            rule: "no rule decided (missing".into(),
            detail: format!("{})", v.missing.join(", ")),
        },
    };
    Ok((stage, why))
}
