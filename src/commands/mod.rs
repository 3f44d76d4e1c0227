//! The subcommands, one thin file each, and the entry point.
//!
//! Each file reads its clap arguments, builds the options of one driver in
//! [`crate::ops`], calls it and returns its exit code; the drivers report through typed
//! [`crate::events`], which the [`Shell`] renders: results on stdout, messages for people
//! on stderr, as cargo does. Command files never import each other: what two commands
//! share lives in `ops/`.

mod archive_run;
mod compare_check;
mod doctor;
mod explain;
mod import_report;
mod init;
mod list;
mod merge;
mod profile;

use anyhow::Result;

use crate::cli::{self, Command, KprofArgs};
use crate::error::{exit_code_of, ExitCode};
use crate::events::Event;
use crate::shell::Shell;

/// Runs `cargo kprof` with the process arguments and returns its exit code.
pub fn main() -> std::process::ExitCode {
    let args = match cli::parse_from(std::env::args_os()) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::Usage.into() } else { ExitCode::Success.into() };
        }
    };
    crate::process::install_signal_handlers();
    let shell = args.output().map(|o| o.shell()).unwrap_or_else(|| cli::OutputArgs::default().shell());
    let code = match run(args, &shell) {
        Ok(code) => code,
        Err(err) => {
            shell.error_chain(&err);
            let code = exit_code_of(&err);
            shell.emit(&Event::Error {
                message: err.to_string(),
                causes: err.chain().skip(1).map(|c| c.to_string()).collect(),
                exit_code: code.code(),
            });
            code
        }
    };
    // A signal received while the run was deferring it ends the process with its code,
    // whatever the run made of the stopped child.
    match crate::process::pending_signal() {
        Some(signal) if code != ExitCode::Interrupted(signal) => {
            shell.error(format!("stopped by {signal}"));
            ExitCode::Interrupted(signal).into()
        }
        _ => code.into(),
    }
}

/// Runs the parsed command line.
pub fn run(args: KprofArgs, shell: &Shell) -> Result<ExitCode> {
    match args.command {
        None => profile::profile(&args.profile, shell),
        Some(Command::List(a)) => list::list(&a, shell),
        Some(Command::Init(a)) => init::init(&a, shell),
        Some(Command::Import(a)) => import_report::import(&a, shell),
        Some(Command::Report(a)) => import_report::report(&a, shell),
        Some(Command::Doctor(a)) => doctor::doctor(&a, shell),
        Some(Command::Archive(a)) => archive_run::archive(&a, shell),
        Some(Command::Run(a)) => archive_run::run(&a, shell),
        Some(Command::Explain(a)) => explain::explain(&a, shell),
        Some(Command::Compare(a)) => compare_check::compare(&a, shell),
        Some(Command::Check(a)) => compare_check::check(&a, shell),
        Some(Command::Merge(a)) => merge::merge(&a, shell),
    }
}
