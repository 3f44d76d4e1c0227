//! A kernel's SASS instructions off its source page, in address order, with the
//! registers each writes and reads.

use std::collections::{BTreeMap, BTreeSet};

use crate::ncu::parse::{parse_number, SourceBlock, SourcePage};

/// The text of `line` of `file`: the page's `page_text`, else (ncu could not open the
/// file) read through `resolve`.
pub(super) fn text_of(
    file: &str,
    line: u32,
    page_text: &str,
    resolve: &dyn Fn(&str, u32) -> Option<String>,
) -> String {
    if page_text.is_empty() || page_text.contains(crate::analyze::hotspots::UNABLE_TO_OPEN) {
        resolve(file, line).map(|t| t.trim().to_string()).unwrap_or_default()
    } else {
        page_text.to_string()
    }
}

/// One SASS instruction of a kernel, in address order.
#[derive(Debug, Clone)]
pub(super) struct Instr {
    pub(super) address: u64,
    pub(super) file: String,
    pub(super) line: u32,
    /// The line's text as the page gives it (may be empty, or ncu's "unable to open").
    pub(super) source: String,
    pub(super) text: String,
    pub(super) opcode: String,
    pub(super) operands: Vec<String>,
    pub(super) samples: f64,
    pub(super) executed: f64,
    /// Every stall reason's samples, by the source page's short name (`long_sb`).
    pub(super) stalls: BTreeMap<String, f64>,
}

impl Instr {
    pub(super) fn stall(&self, reason: &str) -> f64 {
        self.stalls.get(reason).copied().unwrap_or(0.0)
    }

    /// The opcode's first part: `LDL` of `LDL.128`.
    pub(super) fn base(&self) -> &str {
        self.opcode.split('.').next().unwrap_or("")
    }

    /// The samples of its own work: not the waits for inputs another instruction produces
    /// ([`Instr::waits`], charged to that instruction).
    pub(super) fn own(&self) -> f64 {
        (self.samples - self.waits()).max(0.0)
    }

    /// The waits of a reader on the result it reads.
    pub(super) fn waits(&self) -> f64 {
        self.stall("long_sb") + self.stall("short_sb") + self.stall("wait")
    }
}

/// Opcodes whose first operand is not a register they write.
const NO_DEST: &[&str] = &[
    "ST", "STL", "STG", "STS", "RED", "REDG", "BRA", "BRX", "EXIT", "CALL", "RET", "BAR", "BSYNC", "BSSY",
    "NOP", "MEMBAR", "WARPSYNC", "YIELD", "JMP",
];

fn register(operand: &str) -> Option<u32> {
    let body = operand.strip_prefix('-').unwrap_or(operand).strip_prefix('|').unwrap_or(operand);
    let body = body.strip_prefix('R')?;
    let digits: String = body.chars().take_while(char::is_ascii_digit).collect();
    let rest = &body[digits.len()..];
    let ends = rest.chars().next().is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_');
    (!digits.is_empty() && ends).then(|| digits.parse().ok()).flatten()
}

/// The registers an instruction writes.
pub(super) fn destinations(i: &Instr) -> BTreeSet<u32> {
    if NO_DEST.contains(&i.base()) {
        return BTreeSet::new();
    }
    let Some(first) = i.operands.first().and_then(|o| register(o)) else { return BTreeSet::new() };
    let op = i.opcode.as_str();
    let width = if op.contains(".128") {
        4
    } else if op.contains(".64")
        || op.starts_with("F2F.F64")
        || op.starts_with("I2F.F64")
        || matches!(i.base(), "DADD" | "DMUL" | "DFMA")
        || op.starts_with("IMAD.WIDE")
    {
        2
    } else {
        1
    };
    (first..first + width).collect()
}

/// The registers an instruction reads (a 64-bit operand counts as its pair).
pub(super) fn sources(i: &Instr) -> BTreeSet<u32> {
    let skip =
        usize::from(!NO_DEST.contains(&i.base()) && i.operands.first().and_then(|o| register(o)).is_some());
    let double = matches!(i.base(), "DADD" | "DMUL" | "DFMA" | "DSETP") || i.opcode.contains(".F64");
    let mut out = BTreeSet::new();
    for operand in i.operands.iter().skip(skip) {
        let bytes = operand.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let starts = bytes[at] == b'R' && (at == 0 || !bytes[at - 1].is_ascii_alphanumeric());
            if starts {
                if let Some(r) = register(&operand[at..]) {
                    let wide = double || operand[at..].starts_with(&format!("R{r}.64"));
                    out.insert(r);
                    if wide {
                        out.insert(r + 1);
                    }
                }
            }
            at += 1;
        }
    }
    out
}

/// `@!P0  BRA 0x...` -> (`BRA`, [`0x...`]).
pub(super) fn split(text: &str) -> (String, Vec<String>) {
    let mut t = text.trim();
    if t.starts_with('@') {
        t = t.split_once(char::is_whitespace).map(|(_, r)| r.trim_start()).unwrap_or("");
    }
    let t = t.trim_end_matches(';').trim();
    match t.split_once(char::is_whitespace) {
        Some((op, rest)) => (
            op.to_string(),
            rest.split(',').map(|o| o.trim().to_string()).filter(|o| !o.is_empty()).collect(),
        ),
        None => (t.to_string(), Vec::new()),
    }
}

fn cell(b: &SourceBlock, values: &[String], names: &[&str]) -> Option<f64> {
    names.iter().find_map(|n| b.column(n)).and_then(|i| values.get(i)).and_then(|v| parse_number(v))
}

fn stalls(b: &SourceBlock, values: &[String]) -> BTreeMap<String, f64> {
    b.columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.starts_with("stall_") && !c.contains("(Not Issued)"))
        .filter_map(|(i, c)| {
            let v = parse_number(values.get(i)?)?;
            (v > 0.0).then(|| (c.trim_start_matches("stall_").to_string(), v))
        })
        .collect()
}

const SAMPLES: &[&str] = &["# Samples", "Warp Stall Sampling (All Samples)"];

/// Every kernel's instructions, in address order, with their lines.
pub(super) fn kernels(page: &SourcePage) -> BTreeMap<String, Vec<Instr>> {
    let mut out: BTreeMap<String, Vec<Instr>> = BTreeMap::new();
    for b in &page.blocks {
        let mut rows: Vec<(u32, String, &crate::ncu::parse::SassRow)> =
            b.sass.iter().map(|r| (0, String::new(), r)).collect();
        for l in &b.lines {
            // The page's text; read from the file only for the lines a cause names
            // ([`text_of`]), not for every line.
            rows.extend(l.sass.iter().map(|r| (l.line_no, l.source.trim().to_string(), r)));
        }
        let instrs = out.entry(b.function_name.clone()).or_default();
        for (line, source, r) in rows {
            let Some(address) = u64::from_str_radix(r.address.trim_start_matches("0x"), 16).ok() else {
                continue;
            };
            let (opcode, operands) = split(&r.instruction);
            instrs.push(Instr {
                address,
                file: b.file_path.clone(),
                line,
                source,
                text: r.instruction.trim().to_string(),
                opcode,
                operands,
                samples: cell(b, &r.values, SAMPLES).unwrap_or(0.0),
                executed: cell(b, &r.values, &["Instructions Executed"]).unwrap_or(0.0),
                stalls: stalls(b, &r.values),
            });
        }
    }
    for instrs in out.values_mut() {
        instrs.sort_by_key(|i| i.address);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instr(text: &str) -> Instr {
        let (opcode, operands) = split(text);
        Instr {
            address: 0,
            file: String::new(),
            line: 1,
            source: String::new(),
            text: text.into(),
            opcode,
            operands,
            samples: 0.0,
            executed: 0.0,
            stalls: BTreeMap::new(),
        }
    }

    #[test]
    fn operands_are_read_as_the_sass_writes_them() {
        let i = instr("@!P0  BRA 0x7f04d37b12b0");
        assert_eq!((i.opcode.as_str(), i.operands.len()), ("BRA", 1));
        let ldl = instr("LDL.128 R4, [R4]");
        assert_eq!(destinations(&ldl), [4, 5, 6, 7].into());
        assert_eq!(sources(&ldl), [4].into());
        let f2f = instr("F2F.F64.F32 R4, R2");
        assert_eq!(destinations(&f2f), [4, 5].into());
        assert_eq!(sources(&instr("DFMA R4, R4, R6, 0.25")), [4, 5, 6, 7].into());
        assert_eq!(sources(&instr("STG.E desc[UR6][R6.64], R5")), [5, 6, 7].into());
        assert_eq!(sources(&instr("IADD3 R0, R0, UR4, RZ")), [0].into());
        assert!(destinations(&instr("STL [R13], R0")).is_empty());
    }
}
