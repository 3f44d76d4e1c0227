//! The texts of the rules: a hypothesis's or an advice's `{field}` placeholders, checked
//! when the rules are read and filled in with a kernel's values when a verdict is written.

use super::condition::check_field;
use super::summary::KernelSummary;

/// The `{field}` names in a template.
pub(super) fn placeholders(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        let Some(len) = rest[start..].find('}') else { break };
        out.push(rest[start + 1..start + len].to_string());
        rest = &rest[start + len + 1..];
    }
    out
}

/// Checks a template: every `{field}` names a summary field, and no `{` or `}` is left
/// once they are filled in (a text is never printed half-rendered).
pub(super) fn check_template(text: &str) -> Result<(), String> {
    let names = placeholders(text);
    let mut rest = text.to_string();
    for name in &names {
        check_field(name)?;
        rest = rest.replacen(&format!("{{{name}}}"), "", 1);
    }
    if rest.contains(['{', '}']) {
        return Err(format!("a `{{` or `}}` that is not a `{{field}}` in \"{text}\""));
    }
    Ok(())
}

/// Fills `{field}` with values; `None` when a cited field was not collected.
pub(super) fn fill(text: &str, s: &KernelSummary) -> Option<String> {
    let mut out = text.to_string();
    for name in placeholders(text) {
        let v = s.get(&name)?;
        out = out.replace(&format!("{{{name}}}"), &crate::units::value(v));
    }
    Some(out)
}
