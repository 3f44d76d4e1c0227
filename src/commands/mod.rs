//! The subcommands, one thin file each, and the entry point.
//!
//! Each file reads its clap arguments, builds the options of one driver in
//! [`crate::ops`], calls it and returns its exit code; the drivers report through typed
//! [`crate::events`], which the [`Shell`] renders: results on stdout, messages for people
//! on stderr, as cargo does. Command files never import each other: what two commands
//! share lives in `ops/`.

#[cfg(test)]
mod advice_tests;
mod archive_run;
mod bisect;
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
use crate::shell::{MessageFormat, Shell};

/// Runs `cargo kprof` with the process arguments and returns its exit code.
pub fn main() -> std::process::ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let args = match cli::parse_from(argv.iter().cloned()) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            if !e.use_stderr() {
                return ExitCode::Success.into();
            }
            if asks_for_json(&argv) {
                // A script reading stdout learns why, as after any other failure.
                Shell::new(MessageFormat::Json, true, 0, false).emit(&usage_error(&e));
            }
            return ExitCode::Usage.into();
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

/// Whether the command line that could not be parsed asked for JSON messages.
fn asks_for_json(argv: &[std::ffi::OsString]) -> bool {
    argv.iter().zip(argv.iter().skip(1)).any(|(a, b)| a == "--message-format" && b == "json")
        || argv.iter().any(|a| a == "--message-format=json")
}

/// The `error` message of a command line clap refused: its text up to the usage line,
/// without clap's `error: ` prefix.
fn usage_error(e: &clap::Error) -> Event {
    let text = e.render().to_string();
    let message: Vec<&str> =
        text.lines().take_while(|l| !l.starts_with("Usage:")).filter(|l| !l.trim().is_empty()).collect();
    let message = message.join("\n");
    let message = message.strip_prefix("error: ").unwrap_or(&message).to_string();
    Event::Error { message, causes: Vec::new(), exit_code: ExitCode::Usage.code() }
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
        Some(Command::Bisect(a)) => bisect::bisect(&a, shell),
        Some(Command::Merge(a)) => merge::merge(&a, shell),
    }
}
