//! `cargo kprof list`: the configured kernels with their index, as a table or JSON.

use anyhow::Result;
use serde_json::json;

use super::load_workspace;
use crate::cli::ListArgs;
use crate::error::ExitCode;
use crate::process::shell_quote;
use crate::shell::Shell;

/// `cargo kprof list`.
pub(crate) fn list(args: &ListArgs, shell: &Shell) -> Result<ExitCode> {
    let (_, config) = load_workspace(args.packages.manifest_path.as_deref(), shell)?;
    let mut rows = config.listing(&args.packages.packages)?;
    if let Some(i) = args.index {
        rows.retain(|r| r.index == i);
        if rows.is_empty() {
            config.select_by_index(i, &args.packages.packages)?;
        }
    }
    if shell.is_json() {
        let kernels: Vec<_> = rows
            .iter()
            .map(|r| {
                json!({
                    "index": r.index,
                    "name": r.kernel.name,
                    "package": r.kernel.package,
                    "target": r.kernel.target.to_string(),
                    "runtime": r.kernel.runtime.name(),
                    "args": r.kernel.args,
                    "case": r.kernel.case,
                    "filter": format!("regex:{}", r.kernel.kernel_regex),
                })
            })
            .collect();
        shell.json(&json!({ "kernels": kernels }));
        return Ok(ExitCode::Success);
    }
    if rows.is_empty() {
        shell.status(
            "no kernels are configured; `cargo kprof init` writes an entry for each bench, example and \
             bin target, or see the README for [[package.metadata.kprof.kernels]]",
        );
        return Ok(ExitCode::Success);
    }
    let table: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            [
                r.index.to_string(),
                r.kernel.package.clone(),
                r.kernel.target.to_string(),
                r.kernel.name.clone(),
                r.kernel.args.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" "),
            ]
        })
        .collect();
    let header = ["INDEX", "PACKAGE", "TARGET", "KERNEL", "ARGS"];
    let mut widths = header.map(str::len);
    for row in &table {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: &[&str]| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}  "));
            }
        }
        s.trim_end().to_string()
    };
    shell.out(line(&header));
    for row in &table {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        shell.out(line(&cells));
    }
    Ok(ExitCode::Success)
}
