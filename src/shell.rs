//! Everything cargo-kprof prints goes through a [`Shell`], as in cargo.
//!
//! Results a script may read (paths, verdicts, the ncu commands of a dry run, JSON
//! messages) go to stdout; messages for people (progress, notes, warnings, errors) go to
//! stderr, so `--message-format json` keeps stdout pure JSON lines. `-q` silences the
//! messages for people, `-v` adds each child process run with its wall time, `-vv` also
//! the child's output. Colour follows `--color`, then `CARGO_TERM_COLOR`, then whether
//! stderr is a terminal (`NO_COLOR` turns automatic colour off).

use std::io::{IsTerminal, Write};
use std::time::Duration;

/// `--message-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum MessageFormat {
    /// Text for people.
    #[default]
    Human,
    /// One JSON object per line, for machines.
    Json,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// Color when the terminal supports it.
    #[default]
    Auto,
    /// Always color.
    Always,
    /// Never color.
    Never,
}

impl ColorChoice {
    /// `--color WHEN`, with `auto` taking `CARGO_TERM_COLOR` into account, resolved for
    /// stderr: whether to colour.
    pub fn resolve(self) -> bool {
        let env_choice = || match std::env::var("CARGO_TERM_COLOR").ok().as_deref() {
            Some("always") => Some(true),
            Some("never") => Some(false),
            _ => None,
        };
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => env_choice().unwrap_or_else(|| {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
            }),
        }
    }
}

/// Where output goes and how much of it.
#[derive(Debug, Clone, Default)]
pub struct Shell {
    format: MessageFormat,
    quiet: bool,
    verbose: u8,
    color: bool,
}

/// ANSI styles for the message prefixes, cargo's colours.
const RED_BOLD: &str = "\x1b[1;31m";
const YELLOW_BOLD: &str = "\x1b[1;33m";
const CYAN_BOLD: &str = "\x1b[1;36m";
const RESET: &str = "\x1b[0m";
/// Characters of one line of a child's output shown under `-vv` (cargo's JSON is one
/// line of hundreds of kilobytes).
const LONGEST_CHILD_LINE: usize = 400;

impl Shell {
    /// A shell for the given options; `color` is already resolved (see [`ColorChoice::resolve`]).
    pub fn new(format: MessageFormat, quiet: bool, verbose: u8, color: bool) -> Shell {
        Shell { format, quiet, verbose, color }
    }

    /// A shell that prints no messages for people (results still go to stdout).
    pub fn quiet() -> Shell {
        Shell { quiet: true, ..Shell::default() }
    }

    /// Whether results are JSON lines.
    pub fn is_json(&self) -> bool {
        self.format == MessageFormat::Json
    }

    /// Whether messages for people are silenced (`-q`).
    pub fn is_quiet(&self) -> bool {
        self.quiet
    }

    /// The `-v` count.
    pub fn verbosity(&self) -> u8 {
        self.verbose
    }

    /// Whether colour is on (for stderr).
    pub fn color(&self) -> bool {
        self.color
    }

    /// Whether a progress spinner may be drawn: a terminal, not `-q`, not JSON.
    pub fn progress(&self) -> bool {
        !self.quiet && !self.is_json() && std::io::stderr().is_terminal()
    }

    fn styled(&self, style: &str, word: &str) -> String {
        if self.color {
            format!("{style}{word}{RESET}")
        } else {
            word.to_string()
        }
    }

    /// A message for people on stderr, unless `-q`.
    pub fn status(&self, line: impl AsRef<str>) {
        if !self.quiet {
            eprintln!("{}", line.as_ref());
        }
    }

    /// `note: ...` on stderr, unless `-q`.
    pub fn note(&self, line: impl AsRef<str>) {
        if !self.quiet {
            eprintln!("{}: {}", self.styled(CYAN_BOLD, "note"), line.as_ref());
        }
    }

    /// `warning: ...` on stderr, unless `-q`.
    pub fn warn(&self, line: impl AsRef<str>) {
        if !self.quiet {
            self.warn_always(line);
        }
    }

    /// `warning: ...` on stderr, also under `-q` (a warning that belongs to a result,
    /// such as a comparison made under different conditions).
    pub fn warn_always(&self, line: impl AsRef<str>) {
        eprintln!("{}: {}", self.styled(YELLOW_BOLD, "warning"), line.as_ref());
    }

    /// `error: ...` on stderr, always; `help:` lines in the message get their colour.
    pub fn error(&self, message: impl AsRef<str>) {
        let text = if self.color {
            message.as_ref().replace("\n  help: ", &format!("\n  {}: ", self.styled(CYAN_BOLD, "help")))
        } else {
            message.as_ref().to_string()
        };
        eprintln!("{}: {text}", self.styled(RED_BOLD, "error"));
    }

    /// An error with its `anyhow` chain: `error: ...`, then `Caused by:` blocks.
    pub fn error_chain(&self, err: &anyhow::Error) {
        self.error(err.to_string());
        for cause in err.chain().skip(1) {
            eprintln!("\nCaused by:\n    {}", cause.to_string().replace('\n', "\n    "));
        }
    }

    /// One result line on stdout (a path, a verdict, a command).
    pub fn out(&self, line: impl AsRef<str>) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{}", line.as_ref());
    }

    /// One JSON message on stdout.
    pub fn json(&self, value: &serde_json::Value) {
        self.out(value.to_string());
    }

    /// Under `-v`: a child process that ran, with its wall time.
    pub fn command_ran(&self, command: &str, wall: Duration, status: &str) {
        if self.verbose >= 1 && !self.quiet {
            eprintln!(
                "{} {command} ({status}, {})",
                self.styled(CYAN_BOLD, "ran"),
                crate::units::seconds(wall.as_secs_f64())
            );
        }
    }

    /// Under `-vv`: what a child process printed.
    pub fn child_output(&self, text: &str) {
        if self.verbose >= 2 && !self.quiet && !text.trim().is_empty() {
            for line in text.lines() {
                match line.char_indices().nth(LONGEST_CHILD_LINE) {
                    Some((cut, _)) => eprintln!("  | {}... ({} more bytes)", &line[..cut], line.len() - cut),
                    None => eprintln!("  | {line}"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_choices() {
        assert!(ColorChoice::Always.resolve());
        assert!(!ColorChoice::Never.resolve());
        let coloured = Shell::new(MessageFormat::Human, false, 0, true);
        assert_eq!(coloured.styled(RED_BOLD, "error"), "\x1b[1;31merror\x1b[0m");
        assert_eq!(Shell::quiet().styled(RED_BOLD, "error"), "error");
    }
}
