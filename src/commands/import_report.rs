//! `cargo kprof import` (a profile directory from ncu CSV exports made anywhere) and
//! `cargo kprof report DIR` (analyse a profile directory again, and with `--open` show its
//! `report.html`).

use std::path::PathBuf;

use anyhow::Result;

use crate::analyze::AnalyzeOptions;
use crate::cli::{AnalysisArgs, ImportArgs, ReportArgs};
use crate::error::{ExitCode, Failure};
use crate::events::{About, Event, FilesRewritten, PageShown};
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
        args.kernel.as_ref(),
        &args.output_dir,
        &opts,
    )?;
    warn(&analysis.warnings, shell);
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
    let before = crate::profile::fs::file_times(dir.path());
    let analysis = report::refresh(&dir, &options(&args.analysis, std::env::current_dir().ok()))?;
    warn(&analysis.warnings, shell);
    let rewritten = crate::profile::fs::modified_since(dir.path(), &before);
    if !rewritten.is_empty() {
        shell
            .emit(&Event::FilesRewritten(FilesRewritten { dir: dir.path().to_path_buf(), files: rewritten }));
    }
    shell.emit(&analysed(&dir, &analysis.decision));
    if args.open {
        open_page(&dir.report_html_path(), shell)?;
    }
    Ok(ExitCode::Success)
}

/// Opens `page` in a browser, or, where none can start, says its URL.
fn open_page(page: &std::path::Path, shell: &Shell) -> Result<()> {
    let page = std::path::absolute(page).unwrap_or_else(|_| page.to_path_buf());
    let url = file_url(&page);
    if !crate::process::browser_available() {
        shell.emit(&Event::PageShown(PageShown { url, browser: false }));
        return Ok(());
    }
    crate::process::open_in_browser(&page).map_err(|e| {
        Failure::new(ExitCode::MissingTool, format!("could not open {} in a browser: {e}", page.display()))
            .help(format!("set BROWSER to your browser's command, or open {url} yourself"))
    })?;
    shell.emit(&Event::PageShown(PageShown { url, browser: true }));
    Ok(())
}

/// The analysis' warnings.
fn warn(warnings: &[String], shell: &Shell) {
    for w in warnings {
        shell.emit(&Event::warning(About::Analysis, w.clone()));
    }
}

/// The `file://` URL of an absolute path, with the characters a URL path cannot hold
/// percent-encoded.
fn file_url(path: &std::path::Path) -> String {
    let mut url = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => url.push(b as char),
            _ => url.push_str(&format!("%{b:02X}")),
        }
    }
    url
}
