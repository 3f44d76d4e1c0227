//! `{{name}}` placeholders filled in one pass over the template: a value is copied as
//! written and never scanned again, so data (a kernel's name, an archive's name) cannot
//! expand another placeholder, and the work is linear in the template and the values.

/// `template` with each `{{key}}` of `values` replaced by its value. Text that is not a
/// known placeholder (GitHub's `${{ expr }}`, with spaces, an unknown name) is kept as is.
pub fn fill(template: &str, values: &[(&str, String)]) -> String {
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

#[cfg(test)]
mod tests {
    use super::fill;

    #[test]
    fn values_are_not_scanned_again() {
        let values = [("name", "k{{commands}}".to_string()), ("commands", "ncu ...".to_string())];
        assert_eq!(fill("{{name}}: {{commands}}", &values), "k{{commands}}: ncu ...");
    }

    #[test]
    fn unknown_and_spaced_placeholders_stay() {
        let values = [("n", "3".to_string())];
        assert_eq!(
            fill("${{ matrix.shard }} {{n}} {{other}} {{", &values),
            "${{ matrix.shard }} 3 {{other}} {{"
        );
    }
}
