//! `cargo kprof merge DIR... --output-dir OUT`: the profile roots of shards into one
//! directory with one index, and, when `check` shards are merged, one verdict.

use anyhow::Result;
use serde_json::json;

use super::compare_check::print_result;
use crate::cli::MergeArgs;
use crate::compare::gate;
use crate::compare::merge;
use crate::error::ExitCode;
use crate::model::ab::AbVerdict;
use crate::profile::dir::index_md_path;
use crate::shell::Shell;

/// `cargo kprof merge`.
pub(crate) fn merge(m: &MergeArgs, shell: &Shell) -> Result<ExitCode> {
    let merged = merge::merge(&m.dirs, &m.output_dir, m.force)?;
    for s in &merged.sources {
        let shard = s.listing.partition.map(|p| p.label()).unwrap_or_else(|| "not a shard".into());
        if s.remapped {
            shell.status(format!(
                "Reading {} ({shard}): the profile root of the --workspace-remap directory {}",
                s.root.display(),
                s.given.display()
            ));
        } else {
            shell.status(format!("Reading {} ({shard}): a profile root", s.root.display()));
        }
    }
    for w in &merged.warnings {
        shell.warn(w);
    }
    for f in &merged.record.forced {
        shell.warn(format!("merged with --force: {f}"));
    }
    for c in &merged.copied {
        if shell.is_json() {
            shell.json(&json!({
                "reason": "profile-merged",
                "profile": c.id,
                "from": c.from,
                "to": c.to,
                "partition": c.partition.map(|p| p.to_string()),
            }));
        } else {
            shell.status(format!("Copied {} -> {}", c.from.display(), c.to.display()));
        }
    }
    shell.status(format!("Index: {}", index_md_path(&m.output_dir).display()));
    for r in &merged.results {
        print_result(r, shell);
    }
    for a in &merged.ab {
        if shell.is_json() {
            shell.json(&json!({
                "reason": "ab-comparison",
                "kernel": a.kernel,
                "verdict": a.verdict.name(),
                "line": a.line,
                "profile": a.profile,
            }));
        } else {
            shell.out(&a.line);
        }
    }
    let ab_of = |v: AbVerdict| -> Vec<&str> {
        merged.ab.iter().filter(|a| a.verdict == v).map(|a| a.kernel.as_str()).collect()
    };
    if !merged.ab.is_empty() {
        let mut md = format!("## cargo kprof merge: {} A/B verdict(s)\n\n", merged.ab.len());
        for a in &merged.ab {
            md.push_str(&format!("- {}\n", a.line));
        }
        gate::write_step_summary(&(md + "\n"))?;
    }
    let mut regressed: Vec<&str> = merged
        .results
        .iter()
        .filter(|r| r.comparison.regression)
        .map(|r| r.comparison.current.identity.kernel.as_str())
        .collect();
    regressed.extend(ab_of(AbVerdict::Regressed));
    let ambiguous = ab_of(AbVerdict::Ambiguous);
    if !merged.results.is_empty() {
        let tolerance = merged.results.iter().map(|r| r.comparison.tolerance_pct).fold(0.0, f64::max);
        gate::write_step_summary(&crate::report::comparison::step_summary(&merged.results, tolerance))?;
    }
    let shards: Vec<String> = merged
        .sources
        .iter()
        .map(|s| s.listing.partition.map(|p| p.to_string()).unwrap_or_else(|| "-".into()))
        .collect();
    if shell.is_json() {
        shell.json(&json!({
            "reason": "merge-finished",
            "output_dir": m.output_dir,
            "profiles": merged.copied.len(),
            "shards": shards,
            "missing_shards": merged.record.missing_shards,
            "forced": merged.record.forced,
            "comparisons": merged.results.len() + merged.ab.len(),
            "regressions": regressed,
            "ambiguous": ambiguous,
        }));
    } else if !regressed.is_empty() {
        shell.error(format!("merge: regression in {}", regressed.join(", ")));
    } else if !ambiguous.is_empty() {
        shell.warn(format!(
            "merge: the A/B checks could not tell {} from noise (exit 14)",
            ambiguous.join(", ")
        ));
    } else {
        shell.status(format!(
            "merge: {} profile(s) from {} shard(s){}",
            merged.copied.len(),
            merged.sources.len(),
            match merged.results.len() + merged.ab.len() {
                0 => String::new(),
                n => format!(", {n} comparison(s), no regression beyond tolerance"),
            }
        ));
    }
    Ok(if !regressed.is_empty() {
        ExitCode::Regression
    } else if !ambiguous.is_empty() {
        ExitCode::Ambiguous
    } else {
        gate::exit_code(&merged.results)
    })
}
