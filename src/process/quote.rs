//! Words for a POSIX shell: a command line's words quoted so that `commands.sh`,
//! `--dry-run` and messages replay exactly what ran, and texts made safe for a comment.

/// Quotes one word for a POSIX shell; words made only of safe characters stay bare.
pub fn shell_quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `text` made safe to follow `# ` in a shell script: one line whatever it holds. Control
/// characters (a newline would end the comment and start a command) are written as Rust
/// escapes (`\n`, `\u{1b}`).
pub fn shell_comment(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_stay_one_line() {
        assert_eq!(shell_comment("hgemm<float>"), "hgemm<float>");
        assert_eq!(shell_comment("a\ntouch pwned\r\u{1b}"), "a\\ntouch pwned\\r\\u{1b}");
        assert_eq!(shell_comment("é\t").lines().count(), 1);
    }

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(shell_quote("regex:.*hgemm.*"), "'regex:.*hgemm.*'");
        assert_eq!(shell_quote("--launch-count"), "--launch-count");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
