//! `cargo kprof list`: the configured kernels with their index, as a table or JSON.

use anyhow::Result;

use crate::cli::ListArgs;
use crate::error::ExitCode;
use crate::events::{KernelList, ListedKernel};
use crate::ops::opening::load_workspace;
use crate::process::shell_quote;
use crate::shell::Shell;

/// `cargo kprof list`.
pub(crate) fn list(args: &ListArgs, shell: &Shell) -> Result<ExitCode> {
    let config = load_workspace(args.packages.manifest_path.as_deref(), shell)?.config;
    let mut rows = config.listing(&args.packages.packages)?;
    if let Some(i) = args.index {
        rows.retain(|r| r.index == i);
        if rows.is_empty() {
            config.select_by_index(i, &args.packages.packages)?;
        }
    }
    if rows.is_empty() && !shell.is_json() {
        shell.status(
            "no kernels are configured; `cargo kprof init` writes an entry for each harness case and each \
             other bench, example and bin target, or see docs/reference.md for [[package.metadata.kprof.kernels]]",
        );
        return Ok(ExitCode::Success);
    }
    let kernels = rows
        .iter()
        .map(|r| ListedKernel {
            index: r.index,
            name: r.kernel.name.clone(),
            package: r.kernel.package.clone(),
            target: r.kernel.target.to_string(),
            runtime: r.kernel.runtime,
            args: r.kernel.args.clone(),
            case: r.kernel.case.clone(),
            filter: format!("regex:{}", r.kernel.kernel_regex),
            quoted_args: r.kernel.args.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" "),
        })
        .collect();
    shell.emit(&KernelList { kernels });
    Ok(ExitCode::Success)
}
