//! `cargo kprof list`: the configured kernels with their index, as a table or JSON.

use anyhow::Result;

use crate::cli::ListArgs;
use crate::error::ExitCode;
use crate::events::{Event, KernelList, ListedKernel};
use crate::ops::opening::load_workspace;
use crate::process::shell_quote;
use crate::shell::Shell;

/// `cargo kprof list`.
pub(crate) fn list(args: &ListArgs, shell: &Shell) -> Result<ExitCode> {
    // `list`'s JSON is its list, one object: the configuration's warnings stay on stderr.
    let config = load_workspace(args.packages.manifest_path.as_deref(), &shell.for_people())?.config;
    let mut rows = config.listing(&args.packages.packages)?;
    if let Some(i) = args.index {
        rows.retain(|r| r.index == i);
        if rows.is_empty() {
            config.select_by_index(i, &args.packages.packages)?;
        }
    }
    if rows.is_empty() && !shell.is_json() {
        shell.emit(&Event::NoKernelsConfigured);
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
