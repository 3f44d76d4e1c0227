//! What each pattern's line does and how to fix it, in words.

use super::pattern::{Pattern, Tally};
use crate::analyze::rules::CauseLine;

/// Floating-point literals without an `f` suffix in a line of C++: the doubles.
pub fn double_literals(line: &str) -> Vec<String> {
    let re =
        regex::Regex::new(r"(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+").expect("a valid regex");
    let mut out: Vec<String> = Vec::new();
    for m in re.find_iter(line) {
        let before = line[..m.start()].chars().next_back();
        let after = line[m.end()..].chars().next();
        let in_word = before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
        let suffixed = after.is_some_and(|c| c.is_alphanumeric() || c == '_');
        if !in_word && !suffixed && !out.iter().any(|o| o == m.as_str()) {
            out.push(m.as_str().to_string());
        }
    }
    out
}

/// The double literals of every line that issues the pattern's instructions, in line
/// order, each once (at most six).
fn literals_of(t: &Tally) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for ((_, _, source), (_, sass)) in &t.by_line {
        for l in double_literals(source).into_iter().filter(|_| !sass.is_empty()) {
            if !out.contains(&l) && out.len() < 6 {
                out.push(l);
            }
        }
    }
    out
}

fn code_list(items: &[String]) -> String {
    items.iter().map(|i| format!("`{i}`")).collect::<Vec<_>>().join(", ")
}

/// The fix for `p`, naming what its hottest line does.
pub(super) fn advice(
    p: Pattern,
    t: &Tally,
    lines: &[CauseLine],
    resolve: &dyn Fn(&str, u32) -> Option<String>,
) -> String {
    let top = lines.first();
    let at = top.map(|l| format!("line {} (`{}`)", l.line, l.source)).unwrap_or_default();
    match p {
        Pattern::DoublePromotion => {
            let literals = literals_of(t);
            let what = if literals.is_empty() {
                "a double operand (a literal without `f`, a `double` variable, or a double math function such as \
                 `sqrt` for `sqrtf`) promotes the float arithmetic"
                    .to_string()
            } else {
                let fixed: Vec<String> = literals.iter().map(|l| format!("{l}f")).collect();
                let (is, they) = if literals.len() == 1 { ("is a double", "it promotes") } else { ("are doubles", "they promote") };
                format!("{} {is}: write {}; {they} the float arithmetic", code_list(&literals), code_list(&fixed))
            };
            format!(
                "{what} to double at {at}: each value is converted (F2F.F64.F32), computed in double (DADD/DMUL/DFMA) \
                 and converted back (F2F.F32.F64). Keep it in float, or write the double math on purpose"
            )
        }
        Pattern::Int64Division => {
            let near: Vec<String> = top
                .map(|l| divisions_near(l, resolve))
                .unwrap_or_default()
                .into_iter()
                .map(|(n, t)| format!("line {n} (`{t}`)"))
                .collect();
            let what = match (!near.is_empty()).then(|| near.join(" and ")) {
                Some(near) => {
                    let verb = if near.contains(" and ") { "divide" } else { "divides" };
                    format!("{near} {verb} 64-bit integers (ncu puts the calls on {at})")
                }
                None => format!("{at} divides 64-bit integers"),
            };
            format!(
                "{what}: each `/` or `%` calls a routine of about 60 instructions (CALL.REL.NOINC into \
                 I2F.U64.RP, MUFU.RCP, IMAD.HI). Use 32-bit index math where the values fit, or hoist the \
                 division out of the loop (divide once per thread, then carry the quotient and remainder), or \
                 divide by a compile-time constant or a power of two (a shift)"
            )
        }
        Pattern::LocalMemory if t.indexed => format!(
            "{at} uses local memory (LDL/STL): an array indexed with values known only at run time lives in \
             local memory, not registers. Index it with compile-time constants (fully unrolled loops), keep it \
             in shared memory, or fewer elements in registers"
        ),
        Pattern::LocalMemory => format!(
            "{at} uses local memory (LDL/STL at fixed stack offsets): spilled registers, or an array the compiler \
             keeps on the stack. Lower the register pressure (fewer live values, `__launch_bounds__` with \
             fewer blocks per SM to allow more registers) and check `ptxas -v` for spill stores"
        ),
        Pattern::GlobalAtomics => format!(
            "{at} issues global atomics ({}): privatise them: accumulate in registers, with warp shuffles or in \
             shared memory, and issue one global atomic per warp or block",
            code_list(&t.opcodes.iter().cloned().collect::<Vec<_>>())
        ),
    }
}

/// The compiler may put a division's call on a nearby line (the one computing its
/// operand): when the call's line has no `/` or `%`, the lines after it that do, within
/// a few lines of the same file: ``line 20 (`...`)``.
fn divisions_near(l: &CauseLine, resolve: &dyn Fn(&str, u32) -> Option<String>) -> Vec<(u32, String)> {
    let divides = |t: &str| {
        let code = t.split("//").next().unwrap_or("");
        code.contains(" / ") || code.contains(" % ") || code.contains("/=") || code.contains("%=")
    };
    if l.line == 0 || divides(&l.source) {
        return Vec::new();
    }
    (l.line + 1..=l.line + 6)
        .filter_map(|n| resolve(&l.file, n).map(|t| (n, t.trim().to_string())))
        .filter(|(_, t)| divides(t))
        .take(2)
        .collect()
}

/// The cause and its fix in one clause.
pub(super) fn headline(
    p: Pattern,
    t: &Tally,
    lines: &[CauseLine],
    resolve: &dyn Fn(&str, u32) -> Option<String>,
) -> String {
    let near: Vec<String> = match (p, lines.first()) {
        (Pattern::Int64Division, Some(l)) => {
            divisions_near(l, resolve).into_iter().map(|(n, _)| n.to_string()).collect()
        }
        _ => Vec::new(),
    };
    let at = match lines.first() {
        _ if near.len() > 1 => format!(" on lines {}", near.join(" and ")),
        _ if near.len() == 1 => format!(" on line {}", near[0]),
        Some(l) if l.line > 0 => format!(" on line {}", l.line),
        _ => String::new(),
    };
    match p {
        Pattern::DoublePromotion => {
            let literals = literals_of(t);
            let fixed: Vec<String> = literals.iter().map(|l| format!("{l}f")).collect();
            match literals.len() {
                0 => format!("float math promoted to double{at}: keep it in float"),
                1 => format!(
                    "float math promoted to double{at}: `{}` is a double, write `{}f`",
                    literals[0], literals[0]
                ),
                _ => format!(
                    "float math promoted to double{at}: {} are doubles, write {}",
                    code_list(&literals),
                    code_list(&fixed)
                ),
            }
        }
        Pattern::Int64Division => format!("64-bit integer division{at}: 32-bit or hoisted index math"),
        Pattern::LocalMemory => {
            format!("local memory (LDL/STL){at}: keep the data in registers or shared memory")
        }
        Pattern::GlobalAtomics => {
            format!(
                "global atomics ({}){at}: privatise them",
                t.opcodes.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn double_literals_are_those_without_a_suffix() {
        assert_eq!(double_literals("y[i] = x[i] * 0.5 + 0.25;"), ["0.5", "0.25"]);
        assert_eq!(double_literals("acc = acc * x + 0.5f; z = 1e-3 * w; q = .5;"), ["1e-3", ".5"]);
        assert!(double_literals("float2 v = a.x1 + 2.0f; int k = 12;").is_empty());
        assert!(double_literals("x = v1.5f;").is_empty());
    }
}
