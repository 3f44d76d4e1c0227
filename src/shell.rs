//! Everything cargo-kprof prints goes through a [`Shell`], as in cargo.
//!
//! Results a script may read (paths, verdicts, the ncu commands of a dry run, JSON
//! messages) go to stdout; messages for people (progress, notes, warnings, errors) go to
//! stderr, so `--message-format json` keeps stdout pure JSON lines. `-q` silences the
//! messages for people, `-v` adds the start of each stage and each child process run
//! (its whole command line) with its wall time, `-vv` also the child's output. Colour follows `--color`, then `CARGO_TERM_COLOR`, then whether
//! stderr is a terminal (`NO_COLOR` turns automatic colour off).
//!
//! Nothing printed carries control characters from elsewhere (a child's escape sequences,
//! a name from a CSV), on stderr or stdout: only newline and tab survive ([`printable`]);
//! and in messages for people a word
//! over [`LONGEST_WORD`] bytes (a 100 KB argument echoed back) is cut, saying how many
//! bytes were left out ([`cut`], which the Markdown reports use for long values too). The
//! same guarantee for the files kprof writes from templates (`final_report.md`, the cluster
//! launchers): [`fill_template`] fills them in one pass, so a value is never read as a
//! placeholder.

use std::fmt;
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// Where a [`Message`] goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Channel {
    /// Progress for people: its text on stderr (unless `-q`); under `--message-format
    /// json` also its JSON line on stdout, as cargo keeps printing `Compiling` lines.
    Progress,
    /// A result: its text on stdout, or only its JSON line under `--message-format json`;
    /// the preface, a line for people, goes to stderr before the text.
    Result {
        /// A line for people on stderr before the text (not under JSON).
        preface: Option<String>,
    },
    /// A note or warning as it happens: `note: ...` or `warning: ...` on stderr (as
    /// [`Shell::note`] and [`Shell::warn`] print them); under JSON also its JSON line.
    Notice(Level),
    /// The closing verdict: for people a status, warning or error line on stderr; under
    /// JSON only its JSON line.
    Summary(Level),
    /// Only its JSON line, under `--message-format json`; people read the same in the
    /// lines around it.
    Machine,
    /// Progress people see only under `-v` (the start of a stage, which a terminal shows
    /// on a spinner); under JSON always its JSON line.
    Detail,
}

/// How a summary speaks to people.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// A plain line.
    Status,
    /// `note: ...`, unless `-q`.
    Note,
    /// `warning: ...`, unless `-q`.
    Warning,
    /// `warning: ...`, also under `-q`: a warning that belongs to a result, such as a
    /// comparison made under different conditions.
    Alert,
    /// `error: ...`.
    Error,
}

/// One typed message: its JSON shape (`Serialize`, tagged by `reason`) and its words for
/// people (`Display`) are defined together, in `crate::events`.
pub trait Message: serde::Serialize + fmt::Display {
    /// Where it goes.
    fn channel(&self) -> Channel;

    /// Its words for people with colour (see [`paint`]), for a result printed where colour
    /// is on; `None`: the same as without.
    fn colored(&self) -> Option<String> {
        None
    }
}

/// What a coloured word says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// Fine: green.
    Good,
    /// A failure: bold red.
    Bad,
    /// Not known: yellow.
    Unsure,
}

/// `word` in the colour of `tone` (ANSI), for [`Message::colored`].
pub fn paint(tone: Tone, word: &str) -> String {
    let style = match tone {
        Tone::Good => GREEN,
        Tone::Bad => RED_BOLD,
        Tone::Unsure => YELLOW_BOLD,
    };
    format!("{style}{word}{RESET}")
}

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
    /// The same for stdout: `auto` colours results only when stdout is a terminal.
    pub fn resolve_stdout(self) -> bool {
        match self {
            ColorChoice::Auto => {
                !matches!(std::env::var("CARGO_TERM_COLOR").ok().as_deref(), Some("never"))
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::io::stdout().is_terminal()
            }
            other => other.resolve(),
        }
    }

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
    /// Colour on stdout, for results that have it (`doctor`'s lines).
    color_out: bool,
}

/// ANSI styles for the message prefixes, cargo's colours.
const RED_BOLD: &str = "\x1b[1;31m";
const YELLOW_BOLD: &str = "\x1b[1;33m";
const CYAN_BOLD: &str = "\x1b[1;36m";
const GREEN: &str = "\x1b[32m";
const RESET: &str = "\x1b[0m";
/// Characters of one line of a child's output shown under `-vv` (cargo's JSON is one
/// line of hundreds of kilobytes).
const LONGEST_CHILD_LINE: usize = 400;
/// Bytes of one word (a run without whitespace) a message shows whole; the longest word
/// kprof itself writes, a stage's `--metrics` list, is under 900.
pub const LONGEST_WORD: usize = 1000;
/// Bytes kept of a longer word.
const CUT_WORD_TO: usize = 200;

/// `text` without control characters other than newline and tab: what a terminal
/// receives of text kprof did not write itself.
pub fn printable(text: &str) -> String {
    text.chars().filter(|&c| (!c.is_control() || c == '\n' || c == '\t') && !is_bidi(c)).collect()
}

/// Unicode's bidirectional controls (U+202E turns the rest of a line around): a value
/// holding one could reorder what a reader sees, so none is printed.
pub fn is_bidi(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `text` for a message: [`printable`], and every word over [`LONGEST_WORD`] bytes cut to
/// its first 200 bytes and `... (N more bytes)`.
pub fn for_people(text: &str) -> String {
    let text = printable(text);
    let mut out = String::with_capacity(text.len().min(64 * 1024));
    let mut rest = text.as_str();
    while !rest.is_empty() {
        let space = rest.find(|c: char| !c.is_whitespace()).unwrap_or(rest.len());
        out.push_str(&rest[..space]);
        rest = &rest[space..];
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..end];
        if word.len() > LONGEST_WORD {
            out.push_str(&cut(word, CUT_WORD_TO));
        } else {
            out.push_str(word);
        }
        rest = &rest[end..];
    }
    out
}

/// `text`'s first `keep` bytes (at a character boundary) and how many more there were:
/// `abc... (N more bytes)`; `text` as it is when it is no longer.
pub fn cut(text: &str, keep: usize) -> String {
    if text.len() <= keep {
        return text.to_string();
    }
    let mut at = keep;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    format!("{}... ({} more bytes)", &text[..at], text.len() - at)
}

/// `template` with each `{{key}}` of `values` replaced by its value, in one pass over the
/// template: a value is copied as written and never scanned again, so data (a kernel's
/// name, an archive's name) cannot expand another placeholder, and the work is linear. Text that is not a
/// known placeholder (GitHub's `${{ expr }}`, with spaces, an unknown name) is kept as is.
pub fn fill_template(template: &str, values: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(template.len() + values.iter().map(|(_, v)| v.len()).sum::<usize>());
    let mut rest = template;
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let known = after
            .find("}}")
            .and_then(|end| values.iter().find(|(k, _)| *k == &after[..end]).map(|(_, v)| (end, v)));
        match known {
            Some((end, value)) => {
                out.push_str(value);
                rest = &after[end + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

impl Shell {
    /// A shell for the given options; `color` is already resolved (see [`ColorChoice::resolve`]).
    pub fn new(format: MessageFormat, quiet: bool, verbose: u8, color: bool) -> Shell {
        Shell { format, quiet, verbose, color, color_out: false }
    }

    /// The same shell, colouring results on stdout too when `on` (see
    /// [`ColorChoice::resolve_stdout`]).
    pub fn with_stdout_color(self, on: bool) -> Shell {
        Shell { color_out: on, ..self }
    }

    /// The same shell with messages for people only, never JSON: for the messages around
    /// a command whose JSON is one document (`list`'s list), which stay on stderr.
    pub fn for_people(&self) -> Shell {
        Shell { format: MessageFormat::Human, ..self.clone() }
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
            eprintln!("{}", for_people(line.as_ref()));
        }
    }

    /// `note: ...` on stderr, unless `-q`.
    pub fn note(&self, line: impl AsRef<str>) {
        if !self.quiet {
            eprintln!("{}: {}", self.styled(CYAN_BOLD, "note"), for_people(line.as_ref()));
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
        eprintln!("{}: {}", self.styled(YELLOW_BOLD, "warning"), for_people(line.as_ref()));
    }

    /// `error: ...` on stderr, always; `help:` lines in the message get their colour.
    pub fn error(&self, message: impl AsRef<str>) {
        let text = for_people(message.as_ref());
        let text = if self.color {
            text.replace("\n  help: ", &format!("\n  {}: ", self.styled(CYAN_BOLD, "help")))
        } else {
            text
        };
        eprintln!("{}: {text}", self.styled(RED_BOLD, "error"));
    }

    /// An error with its `anyhow` chain: `error: ...`, then `Caused by:` blocks.
    pub fn error_chain(&self, err: &anyhow::Error) {
        self.error(err.to_string());
        for cause in err.chain().skip(1) {
            eprintln!("\nCaused by:\n    {}", for_people(&cause.to_string()).replace('\n', "\n    "));
        }
    }

    /// One result line on stdout (a path, a verdict, a command), without control
    /// characters other than newline and tab ([`printable`]): a kernel name with a
    /// terminal escape must not set the title or clear the screen.
    pub fn out(&self, line: impl AsRef<str>) {
        self.out_exact(&printable(line.as_ref()));
    }

    /// One JSON line on stdout, exactly: JSON escapes the C0 control characters, and a
    /// reader gets every name as it was.
    fn out_json(&self, message: &impl serde::Serialize) {
        self.out_exact(&serde_json::to_string(message).unwrap_or_default());
    }

    fn out_exact(&self, line: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{line}");
    }

    /// One typed message, rendered for people or as a JSON line (see [`Channel`]).
    pub fn emit(&self, message: &impl Message) {
        match (message.channel(), self.is_json()) {
            (Channel::Progress, as_json) => {
                self.status(message.to_string());
                if as_json {
                    self.out_json(message);
                }
            }
            (Channel::Notice(level), as_json) => {
                self.speak(level, message.to_string());
                if as_json {
                    self.out_json(message);
                }
            }
            (Channel::Detail, as_json) => {
                if self.verbose >= 1 {
                    self.status(message.to_string());
                }
                if as_json {
                    self.out_json(message);
                }
            }
            (Channel::Result { .. } | Channel::Summary(_) | Channel::Machine, true) => self.out_json(message),
            (Channel::Result { preface }, false) => {
                if let Some(p) = preface {
                    self.status(p);
                }
                match message.colored() {
                    // Coloured by kprof, its words already printable (see `Event::colored`).
                    Some(colored) if self.color_out => self.out_exact(&colored),
                    _ => {
                        let text = message.to_string();
                        if !text.is_empty() {
                            self.out(text);
                        }
                    }
                }
            }
            (Channel::Summary(level), false) => self.speak(level, message.to_string()),
            (Channel::Machine, false) => {}
        }
    }

    /// A line for people at `level`, on stderr.
    fn speak(&self, level: Level, text: String) {
        match level {
            Level::Status => self.status(text),
            Level::Note => self.note(text),
            Level::Warning => self.warn(text),
            Level::Alert => self.warn_always(text),
            Level::Error => self.error(text),
        }
    }

    /// A line another tool printed for people, passed on to stderr unless `-q`: cargo's
    /// `Compiling` and `Finished` lines, which kprof reads from its JSON stream. They are
    /// cargo's words, not kprof's messages, so they have no event.
    pub fn relay(&self, line: &str) {
        self.status(line);
    }

    /// Under `-v`: a child process that ran, with its wall time.
    pub fn command_ran(&self, command: &str, wall: Duration, status: &str) {
        if self.verbose >= 1 && !self.quiet {
            eprintln!(
                "{} {} ({status}, {})",
                self.styled(CYAN_BOLD, "ran"),
                for_people(command),
                crate::units::seconds(wall.as_secs_f64())
            );
        }
    }

    /// Under `-vv`: what a child process printed.
    pub fn child_output(&self, text: &str) {
        if self.verbose >= 2 && !self.quiet && !text.trim().is_empty() {
            for line in printable(text).lines() {
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
    fn values_are_not_scanned_again() {
        let values = [("name", "k{{commands}}".to_string()), ("commands", "ncu ...".to_string())];
        assert_eq!(fill_template("{{name}}: {{commands}}", &values), "k{{commands}}: ncu ...");
    }

    #[test]
    fn unknown_and_spaced_placeholders_stay() {
        let values = [("n", "3".to_string())];
        assert_eq!(
            fill_template("${{ matrix.shard }} {{n}} {{other}} {{", &values),
            "${{ matrix.shard }} 3 {{other}} {{"
        );
    }

    #[test]
    fn colour_choices() {
        assert!(ColorChoice::Always.resolve());
        assert!(!ColorChoice::Never.resolve());
        let coloured = Shell::new(MessageFormat::Human, false, 0, true);
        assert_eq!(coloured.styled(RED_BOLD, "error"), "\x1b[1;31merror\x1b[0m");
        assert_eq!(Shell::quiet().styled(RED_BOLD, "error"), "error");
    }

    #[test]
    fn messages_lose_control_characters_and_giant_words() {
        assert_eq!(printable("a\x1b[31mred\x1b]0;title\x07\r\n\tb\u{9b}c"), "a[31mred]0;title\n\tbc");
        let big = "x".repeat(100_000);
        let cut = for_people(&format!("no kernel `{big}` here"));
        assert_eq!(cut, format!("no kernel `{}... (99802 more bytes) here", "x".repeat(199)));
        let metrics = "m".repeat(LONGEST_WORD);
        assert_eq!(for_people(&format!("  {metrics}\n")), format!("  {metrics}\n"));
        // A cut never splits a character.
        let wide = "é".repeat(1000);
        assert!(for_people(&wide).starts_with(&"é".repeat(100)));
    }
}
