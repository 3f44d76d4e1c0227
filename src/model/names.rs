//! What a name may hold: kernel names and environment variable names, checked the same
//! way wherever they enter (the manifests, the command line, an archive's plan).
//!
//! Names are written into `commands.sh` comments, messages and (sanitised) file names, so
//! a control character in one (a newline above all) is refused rather than escaped away.
//! An environment variable name becomes a word of `env KEY=VAL ...`, where anything but
//! `[A-Za-z_][A-Za-z0-9_]*` could be read as an option (`-i=x`) or not be a variable at all.

use crate::error::{ExitCode, Failure};

/// The first control character of `name`, if any.
pub fn control_char(name: &str) -> Option<char> {
    name.chars().find(|c| c.is_control())
}

/// `Err(problem)` when `name` holds a control character: the character, spelled so that
/// it can be seen (`U+000A (a line break)`).
pub fn check_name(name: &str) -> Result<(), String> {
    match control_char(name) {
        None => Ok(()),
        Some(c) => {
            let what = match c {
                '\n' | '\r' => " (a line break)",
                '\t' => " (a tab)",
                '\0' => " (NUL)",
                '\u{1b}' => " (escape)",
                _ => "",
            };
            Err(format!("contains the control character U+{:04X}{what}", u32::from(c)))
        }
    }
}

/// Checks a `--kernel` hint: a control character in it is a command-line error (exit 2),
/// shown escaped, never echoed raw to the terminal.
pub fn check_kernel_hint(hint: &str) -> Result<(), Failure> {
    check_name(hint).map_err(|problem| {
        Failure::new(ExitCode::Usage, format!("--kernel {hint:?} {problem}"))
            .help("give the kernel's name, or part of it, in printable characters")
    })
}

/// Whether `name`, read from a file (an index's profile id), is one plain directory name
/// that stays where it is joined: not empty, no `/` or `\\`, not starting with `.`
/// (so neither `.` nor `..`, nor a hidden staging folder), no control character.
pub fn is_plain_dir_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\\']) && control_char(name).is_none()
}

/// Whether `key` is a portable environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_env_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The fix for a bad environment variable name, for `help:` lines.
pub const ENV_KEY_HELP: &str =
    "environment variable names are letters, digits and `_`, not starting with a digit, like `NO_GRAPH`";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_dir_names() {
        for good in ["hgemm_20261129_231734", "a-b", "x y"] {
            assert!(is_plain_dir_name(good), "{good}");
        }
        for bad in ["", ".", "..", ".hidden", "a/b", "../x", "a\\b", "/abs", "a\nb"] {
            assert!(!is_plain_dir_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn env_keys() {
        for good in ["A", "_", "NO_GRAPH", "a1", "_x_9"] {
            assert!(is_env_key(good), "{good}");
        }
        for bad in ["", "-i", "1X", "A-B", "A B", "A=B", "É", "A\n", "a.b"] {
            assert!(!is_env_key(bad), "{bad:?}");
        }
    }

    #[test]
    fn names_with_control_characters() {
        assert!(check_name("void hgemm<128, 64>(float*)").is_ok());
        assert!(check_name("héllo").is_ok());
        assert_eq!(check_name("a\nb").unwrap_err(), "contains the control character U+000A (a line break)");
        assert!(check_name("a\u{7f}").unwrap_err().contains("U+007F"));
        assert!(check_name("\u{1b}[31m").unwrap_err().contains("(escape)"));
    }
}
