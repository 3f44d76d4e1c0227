//! The four patterns, and what each costs in one kernel's instructions.

use std::collections::{BTreeMap, BTreeSet};

use super::instr::{destinations, sources, Instr};
/// The instructions after a result's producer searched for its first reader.
const READER_WINDOW: usize = 48;
/// A pattern of instructions with a known cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pattern {
    /// Float code computing in double.
    DoublePromotion,
    /// The 64-bit integer division routine.
    Int64Division,
    /// Local memory loads and stores.
    LocalMemory,
    /// Atomics on global memory.
    GlobalAtomics,
}

/// Every pattern, in the order reports list them.
pub const PATTERNS: [Pattern; 4] =
    [Pattern::DoublePromotion, Pattern::Int64Division, Pattern::LocalMemory, Pattern::GlobalAtomics];

impl Pattern {
    /// The id reports and `bottleneck_decision.json` use.
    pub fn id(self) -> &'static str {
        match self {
            Pattern::DoublePromotion => "double-promotion",
            Pattern::Int64Division => "int64-division",
            Pattern::LocalMemory => "local-memory",
            Pattern::GlobalAtomics => "global-atomics",
        }
    }

    /// The limiters whose mechanism this pattern names.
    pub fn explains(self) -> &'static [&'static str] {
        match self {
            Pattern::DoublePromotion => &["pipe-xu", "pipe-fp64"],
            Pattern::Int64Division => &["integer-overhead", "pipe-alu"],
            Pattern::LocalMemory => &["local-memory-spills"],
            Pattern::GlobalAtomics => &["atomics-contention"],
        }
    }

    /// What the instructions are, for "no ... on its source page".
    pub(super) fn instructions_named(self) -> &'static str {
        match self {
            Pattern::DoublePromotion => "F2F.F64.F32/F2F.F32.F64 conversions",
            Pattern::Int64Division => "call of the 64-bit division routine",
            Pattern::LocalMemory => "LDL/STL",
            Pattern::GlobalAtomics => "RED/ATOM on global memory",
        }
    }
}

/// Which pattern an instruction belongs to by its opcode alone (the division routine is
/// found by its call, [`division_routines`]).
pub(super) fn pattern_of(i: &Instr) -> Option<Pattern> {
    let op = i.opcode.as_str();
    match i.base() {
        "F2F" if op.starts_with("F2F.F64.F32") || op.starts_with("F2F.F32.F64") => {
            Some(Pattern::DoublePromotion)
        }
        "DADD" | "DMUL" | "DFMA" => Some(Pattern::DoublePromotion),
        "LDL" | "STL" => Some(Pattern::LocalMemory),
        "RED" | "REDG" | "ATOM" | "ATOMG" => Some(Pattern::GlobalAtomics),
        _ => None,
    }
}

/// The instructions of each called 64-bit division routine: from the call's target to the
/// first `RET` after it. The key is the routine's first address; the value, its
/// instructions' indices and the calls' indices.
pub(super) fn division_routines(instrs: &[Instr]) -> BTreeMap<u64, (Vec<usize>, Vec<usize>)> {
    let mut out: BTreeMap<u64, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for (at, i) in instrs.iter().enumerate().filter(|(_, i)| i.base() == "CALL") {
        let Some(target) = i
            .operands
            .last()
            .and_then(|t| t.split_whitespace().last())
            .and_then(|t| u64::from_str_radix(t.trim_start_matches("0x"), 16).ok())
        else {
            continue;
        };
        if let Some((_, calls)) = out.get_mut(&target) {
            calls.push(at);
            continue;
        }
        let Some(start) = instrs.iter().position(|j| j.address == target) else { continue };
        let end = instrs[start..].iter().position(|j| j.base() == "RET").map(|e| start + e).unwrap_or(start);
        let body: Vec<usize> = (start..=end).collect();
        let divides = body.iter().any(|&b| {
            let op = &instrs[b].opcode;
            op.starts_with("I2F.U64") || op.starts_with("F2I.U64") || op.starts_with("I2F.S64")
        });
        if divides {
            out.insert(target, (body, vec![at]));
        }
    }
    out
}

/// What one pattern costs in one kernel.
#[derive(Debug, Default)]
pub(super) struct Tally {
    /// Samples, by (file, line, source).
    pub(super) by_line: BTreeMap<(String, u32, String), (f64, Vec<String>)>,
    pub(super) samples: f64,
    pub(super) executed: f64,
    pub(super) opcodes: BTreeSet<String>,
    /// Whether a local access uses a computed address (not the stack frame's `[R1+...]`).
    pub(super) indexed: bool,
}

impl Tally {
    pub(super) fn add(&mut self, i: &Instr, samples: f64, name: bool) {
        self.samples += samples;
        let key = (i.file.clone(), i.line, i.source.clone());
        let entry = self.by_line.entry(key).or_default();
        entry.0 += samples;
        if name && entry.1.len() < 3 && !entry.1.contains(&i.text) {
            entry.1.push(i.text.clone());
        }
    }
}

/// The first reader of what `instrs[at]` writes, within [`READER_WINDOW`].
pub(super) fn reader(instrs: &[Instr], at: usize) -> Option<usize> {
    let mut written = destinations(&instrs[at]);
    for (j, next) in instrs.iter().enumerate().skip(at + 1).take(READER_WINDOW) {
        if written.is_empty() {
            return None;
        }
        if !sources(next).is_disjoint(&written) {
            return Some(j);
        }
        for r in destinations(next) {
            written.remove(&r);
        }
    }
    None
}

/// Each pattern's tally over one kernel's instructions.
pub(super) fn tally(instrs: &[Instr]) -> BTreeMap<Pattern, Tally> {
    let mut out: BTreeMap<Pattern, Tally> = BTreeMap::new();
    // A reader of several results is charged once: its waits are samples, counted once.
    let mut charged: BTreeSet<usize> = BTreeSet::new();
    for (at, i) in instrs.iter().enumerate() {
        let Some(p) = pattern_of(i) else { continue };
        let t = out.entry(p).or_default();
        t.opcodes.insert(
            i.opcode
                .split('.')
                .take(if p == Pattern::DoublePromotion { 3 } else { 1 })
                .collect::<Vec<_>>()
                .join("."),
        );
        t.executed += i.executed;
        if p == Pattern::LocalMemory
            && i.operands.iter().any(|o| o.starts_with('[') && !o.starts_with("[R1+") && o != "[R1]")
        {
            t.indexed = true;
        }
        t.add(i, i.own(), true);
        if let Some(r) = reader(instrs, at).filter(|r| charged.insert(*r)) {
            let waits = instrs[r].waits();
            // The reader is charged on the producer's line: that is the line to change.
            t.add(i, waits, false);
        }
    }
    // Promotion is float in, double inside, float out: both conversions. Double arithmetic
    // alone is a double kernel; a conversion one way only is a kernel that reads or
    // writes the other precision on purpose.
    let round_trip = |t: &Tally| ["F2F.F64.F32", "F2F.F32.F64"].iter().all(|c| t.opcodes.contains(*c));
    if out.get(&Pattern::DoublePromotion).is_some_and(|t| !round_trip(t)) {
        out.remove(&Pattern::DoublePromotion);
    }
    for (body, calls) in division_routines(instrs).values() {
        let t = out.entry(Pattern::Int64Division).or_default();
        let body_samples: f64 = body.iter().map(|&b| instrs[b].samples).sum();
        let body_executed: f64 = body.iter().map(|&b| instrs[b].executed).sum();
        t.executed += body_executed + calls.iter().map(|&c| instrs[c].executed).sum::<f64>();
        t.opcodes.insert("CALL.REL.NOINC".into());
        // The body is shared by the calls: it is charged to them by how often each ran.
        let runs: f64 = calls.iter().map(|&c| instrs[c].executed).sum();
        for &c in calls {
            let share = if runs > 0.0 { instrs[c].executed / runs } else { 1.0 / calls.len() as f64 };
            let call = &instrs[c];
            t.add(call, call.samples + body_samples * share, true);
        }
        for op in ["I2F.U64.RP", "F2I.U64.TRUNC"] {
            if body.iter().any(|&b| instrs[b].opcode.starts_with(op)) {
                t.opcodes.insert(op.into());
            }
        }
    }
    out
}
