//! `cargo kprof import` (a profile directory from ncu CSV exports made anywhere) and
//! `cargo kprof report DIR` (analyse a profile directory again, and with `--open` show its
//! `report.html`).

use std::path::PathBuf;

use anyhow::Result;

use crate::analyze::AnalyzeOptions;
use crate::cli::{AnalysisArgs, ImportArgs, ReportArgs};
use crate::error::{ExitCode, Failure};
use crate::ops::profile::analysed;
use crate::profile::ProfileDir;
use crate::report;
use crate::shell::Shell;

fn options(a: &AnalysisArgs, source_root: Option<PathBuf>) -> AnalyzeOptions {
    AnalyzeOptions {
        rules: a.rules.clone(),
        template: a.template.clone(),
        source_root,
        source_roots: Vec::new(),
        source_map: Default::default(),
        max_input_mb: a.max_input_mb,
    }
}

/// `cargo kprof import`.
pub(crate) fn import(args: &ImportArgs, shell: &Shell) -> Result<ExitCode> {
    let opts = options(&args.analysis, std::env::current_dir().ok());
    let (dir, analysis) = report::import(
        &args.raw,
        args.source.as_deref(),
        args.details.as_deref(),
        args.kernel.as_deref(),
        &args.output_dir,
        &opts,
    )?;
    for w in &analysis.warnings {
        shell.warn(w);
    }
    shell.emit(&analysed(&dir, &analysis.decision));
    Ok(ExitCode::Success)
}

/// `cargo kprof report DIR`.
pub(crate) fn report(args: &ReportArgs, shell: &Shell) -> Result<ExitCode> {
    if !args.dir.join("details").is_dir() {
        return Err(Failure::new(
            ExitCode::Config,
            format!("{} is not a profile directory (it has no details/)", args.dir.display()),
        )
        .help(
            "give a directory made by `cargo kprof` or `cargo kprof import`, such as profile/<kernel>_<time>",
        )
        .into());
    }
    let dir = ProfileDir::at(&args.dir);
    let analysis = report::refresh(&dir, &options(&args.analysis, std::env::current_dir().ok()))?;
    for w in &analysis.warnings {
        shell.warn(w);
    }
    shell.emit(&analysed(&dir, &analysis.decision));
    if args.open {
        let page = dir.report_html_path();
        crate::process::open_in_browser(&page).map_err(|e| {
            Failure::new(
                ExitCode::MissingTool,
                format!("could not open {} in a browser: {e}", page.display()),
            )
            .help("set BROWSER to your browser's command, or open the file yourself")
        })?;
        shell.status(format!("Opened {} in a browser", page.display()));
    }
    Ok(ExitCode::Success)
}
