//! Text kprof did not write (a kernel name from a CSV, a device name, a filter from the
//! command line) placed in the Markdown it writes: `final_report.md`, `index.md`, the
//! comparison reports and the GitHub step summary.
//!
//! No control character reaches a document ([`document`]: a NUL byte or a terminal escape
//! in a kernel name is dropped, as on stderr); a value is kept on one line, so a line
//! break cannot start a heading or end a table row; in a table cell `|` is escaped
//! ([`cell`]), and a code span is fenced by more backticks than its text holds
//! ([`code`]), so no character of a name ends it. The JSON files keep the raw names.

/// `text` without control characters other than newline and tab: a whole document.
pub fn document(text: &str) -> String {
    crate::shell::printable(text)
}

/// The longest value a document shows whole, in bytes: a longer one (a kernel name of
/// megabytes from a CSV) is cut, saying how much was left out.
pub const LONGEST_VALUE: usize = 4096;

/// `text` on one line: a line break or tab becomes a space, other control characters go;
/// past [`LONGEST_VALUE`] bytes it is cut and says how many more there were.
pub fn one_line(text: &str) -> String {
    let mut out: String = text
        .chars()
        .filter_map(|c| match c {
            '\n' | '\r' | '\t' => Some(' '),
            c if c.is_control() || crate::shell::is_bidi(c) => None,
            c => Some(c),
        })
        .collect();
    shorten(&mut out);
    out
}

/// Cuts `text` past [`LONGEST_VALUE`] bytes, saying how many more there were.
pub fn shorten(text: &mut String) {
    if text.len() > LONGEST_VALUE {
        *text = crate::shell::cut(text, LONGEST_VALUE);
    }
}

/// `text` as Markdown prose on one line: backticks escaped, so a name cannot open a code
/// span that swallows the rest of the line.
pub fn text(text: &str) -> String {
    // `<` escaped too: markup in a value (`<script>`) is text on every Markdown viewer.
    one_line(text).replace('`', "\\`").replace('<', "\\<")
}

/// `text` as a code span on one line: fenced by one backtick more than the longest run of
/// backticks inside it, with a space inside the fence when it starts or ends with one (as
/// CommonMark reads code spans).
pub fn code(text: &str) -> String {
    let text = one_line(text);
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// `text` in a table cell: one line, `|` escaped as `\|` (GitHub's tables read it as `|`,
/// also inside a code span), so a name cannot add a column.
pub fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

/// [`code`] in a table cell.
pub fn cell_code(text: &str) -> String {
    code(text).replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_inside_their_span_cell_and_line() {
        assert_eq!(code("copy_kernel"), "`copy_kernel`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x``"), "``` `x`` ```");
        assert_eq!(code("k\n# heading\u{1b}]0;title\u{7}"), "`k # heading]0;title`");
        assert_eq!(cell_code("a|b"), "`a\\|b`");
        assert_eq!(cell("regex:copy|fma"), "regex:copy\\|fma");
        assert_eq!(text("**k`x**\u{0}"), "**k\\`x**");
        assert_eq!(document("a\u{0}b\n\tc\u{1b}[2J"), "ab\n\tc[2J");
    }
}
