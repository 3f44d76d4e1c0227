//! Causes read from the SASS of a kernel's hot lines. The source page (`--page source
//! --print-source cuda,sass`, or the SASS-only page of a kernel without line info) holds
//! every instruction with its warp samples and stall reasons; four patterns in it name a
//! mechanism more precisely than the counters can, each with the fix that removes it:
//!
//! - `double-promotion`: float code computing in double (`F2F.F64.F32`, `F2F.F32.F64`
//!   around `DADD`/`DMUL`/`DFMA`), which a double literal (`0.5` for `0.5f`) causes;
//! - `int64-division`: a call of the 64-bit integer division routine (`CALL.REL.NOINC`
//!   into a body that converts with `I2F.U64.RP`/`F2I.U64.TRUNC`); its body carries the
//!   kernel's last line, so the call sites name the division;
//! - `local-memory`: `LDL`/`STL`, an array indexed at run time or spilled registers;
//! - `global-atomics`: `RED`/`ATOM` on global memory.
//!
//! A pattern's cost is the samples on its instructions, less the waits those instructions
//! spend on their own inputs (`long_sb`, `short_sb`: another instruction's latency), plus
//! the waits of the first instruction that reads each of their results. It counts as a
//! cause from [`MIN_SHARE_PCT`] of the kernel's samples (global atomics: also from
//! [`MIN_ATOMIC_EXECUTED_PCT`] of its instructions, because an atomic's cost shows up as
//! the waits of the loads queued behind it). A pattern whose instructions are absent, or
//! cost less, is recorded as ruled out. Nothing here changes the verdict's class or
//! limiter; where the limiter is the one a pattern explains, the pattern's line and fix
//! name its mechanism and the larger of the two prices stands.

use super::rules::{BottleneckDecision, CauseLine, InstructionCause, KernelVerdict, RuledOut};
use crate::ncu::parse::SourcePage;

mod advice;
mod instr;
mod pattern;

pub use advice::double_literals;
use advice::{advice, headline};
use instr::{kernels, text_of, Instr};
use pattern::{tally, Tally};
pub use pattern::{Pattern, PATTERNS};

/// The share of a kernel's samples from which a pattern counts as a cause, percent.
pub const MIN_SHARE_PCT: f64 = 2.0;

/// The share of a kernel's warp instructions from which global atomics count as a cause,
/// percent.
pub const MIN_ATOMIC_EXECUTED_PCT: f64 = 1.0;

/// The lines of a tally, costliest first (at most three).
fn lines(t: &Tally, total: f64) -> Vec<CauseLine> {
    let mut lines: Vec<CauseLine> = t
        .by_line
        .iter()
        .filter(|(_, (_, sass))| !sass.is_empty())
        .map(|((file, line, source), (samples, sass))| CauseLine {
            file: file.clone(),
            line: *line,
            source: source.clone(),
            sass: sass.clone(),
            samples_pct: pct(*samples, total),
        })
        .collect();
    lines.sort_by(|a, b| b.samples_pct.total_cmp(&a.samples_pct));
    lines.truncate(3);
    lines
}

fn pct(part: f64, total: f64) -> f64 {
    if total > 0.0 {
        (10_000.0 * part.min(total) / total).round() / 100.0
    } else {
        0.0
    }
}

/// What the SASS of one kernel shows: the patterns that count as causes (priced by their
/// samples alone until [`annotate`] holds them against a verdict), and those ruled out.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelPatterns {
    /// The kernel, as the source page names it.
    pub kernel: String,
    /// The patterns that count as causes.
    pub causes: Vec<InstructionCause>,
    /// The patterns looked for and not found, or too cheap to count.
    pub ruled_out: Vec<RuledOut>,
}

/// The patterns of every kernel on a source page whose launches are summed
/// ([`crate::analyze::source_launches::merged`]); `resolve` reads source lines ncu could not.
pub fn read(page: &SourcePage, resolve: &dyn Fn(&str, u32) -> Option<String>) -> Vec<KernelPatterns> {
    kernels(page)
        .into_iter()
        .filter(|(_, instrs)| !instrs.is_empty())
        .map(|(kernel, instrs)| {
            let (causes, ruled_out) = find(&instrs, resolve);
            KernelPatterns { kernel, causes, ruled_out }
        })
        .collect()
}

/// The patterns found in one kernel's instructions, and those ruled out.
fn find(
    instrs: &[Instr],
    resolve: &dyn Fn(&str, u32) -> Option<String>,
) -> (Vec<InstructionCause>, Vec<RuledOut>) {
    let total: f64 = instrs.iter().map(|i| i.samples).sum();
    let executed: f64 = instrs.iter().map(|i| i.executed).sum();
    let mut tallies = tally(instrs);
    // The text of the lines that issue a pattern's instructions, read from the file where
    // the page has none: those lines only.
    for t in tallies.values_mut() {
        t.by_line = std::mem::take(&mut t.by_line)
            .into_iter()
            .map(|((file, line, text), v)| {
                let text = if v.1.is_empty() { text } else { text_of(&file, line, &text, resolve) };
                ((file, line, text), v)
            })
            .collect();
    }
    let (mut found, mut ruled_out) = (Vec::new(), Vec::new());
    for p in PATTERNS {
        let Some(t) = tallies.get(&p) else {
            ruled_out.push(RuledOut {
                id: p.id().into(),
                why: format!("no {} on its source page", p.instructions_named()),
            });
            continue;
        };
        let share = pct(t.samples, total);
        let executed_pct = pct(t.executed, executed);
        let counts = share >= MIN_SHARE_PCT
            || (p == Pattern::GlobalAtomics && executed_pct >= MIN_ATOMIC_EXECUTED_PCT);
        if !counts {
            ruled_out.push(RuledOut {
                id: p.id().into(),
                why: format!(
                    "its {} cost {} % of the samples ({} % of the instructions), under {} %",
                    p.instructions_named(),
                    crate::units::value(share),
                    crate::units::value(executed_pct),
                    crate::units::value(MIN_SHARE_PCT)
                ),
            });
            continue;
        }
        let lines = lines(t, total);
        let mut cause = InstructionCause {
            id: p.id().into(),
            instructions: t.opcodes.iter().cloned().collect(),
            advice: advice(p, t, &lines, resolve),
            headline: headline(p, t, &lines, resolve),
            lines,
            samples_pct: share,
            executed_pct,
            predicted_saving_pct: None,
            saving_basis: None,
            not_priced: None,
            explains: None,
        };
        price(p, &mut cause, None);
        found.push(cause);
    }
    (found, ruled_out)
}

fn by_price(causes: &mut [InstructionCause]) {
    causes.sort_by(|a, b| {
        b.predicted_saving_pct.unwrap_or(0.0).total_cmp(&a.predicted_saving_pct.unwrap_or(0.0))
    });
}

/// The pattern's price: its share of the samples; where the verdict's limiter is one it
/// explains and is priced, the larger of the two (two witnesses of one cost). Global
/// atomics are priced only through their limiter: their cost shows up as the waits of
/// other instructions.
fn price(p: Pattern, c: &mut InstructionCause, v: Option<&KernelVerdict>) {
    let limiter = v.and_then(|v| v.limiter.as_ref()).filter(|l| p.explains().contains(&l.id.as_str()));
    c.explains = limiter.map(|l| l.id.clone());
    let own = (p != Pattern::GlobalAtomics).then_some(c.samples_pct);
    let theirs = limiter.and_then(|l| l.predicted_saving_pct.map(|s| (l.id.clone(), s)));
    let samples_basis = |share: f64| {
        format!(
            "{} % of the warps' samples are on these instructions or wait for their results",
            crate::units::value(share)
        )
    };
    (c.predicted_saving_pct, c.saving_basis, c.not_priced) = (None, None, None);
    match (own, theirs) {
        (Some(o), Some((id, s))) if s > o => {
            c.predicted_saving_pct = Some(s);
            c.saving_basis = Some(format!("the `{id}` model's price; {}", samples_basis(o)));
        }
        (Some(o), _) => {
            c.predicted_saving_pct = Some(o);
            c.saving_basis = Some(samples_basis(o));
        }
        (None, Some((id, s))) => {
            c.predicted_saving_pct = Some(s);
            c.saving_basis = Some(format!("the `{id}` model's price"));
        }
        (None, None) => {
            c.not_priced = Some(
                "a global atomic's cost shows up as the waits of the loads queued behind it, not on its own \
                 samples; the `atomics-contention` limiter prices it where its conditions hold"
                    .into(),
            )
        }
    }
}

/// The report's sentences for one verdict: each cause read from the SASS, then, where the
/// verdict's limiter is one a pattern explains and the pattern was ruled out, why.
pub fn sentences(v: &KernelVerdict) -> Vec<String> {
    let mut out: Vec<String> = v.instruction_causes.iter().map(|c| c.sentence()).collect();
    if let Some(l) = &v.limiter {
        for p in PATTERNS.iter().filter(|p| p.explains().contains(&l.id.as_str())) {
            if let Some(r) = v.ruled_out.iter().find(|r| r.id == p.id()) {
                out.push(format!("Not `{}` behind `{}`: {}.", r.id, l.id, r.why));
            }
        }
    }
    out
}

/// Records on each verdict the patterns its kernel's instructions show, from a source
/// page whose launches are summed ([`crate::analyze::source_launches::merged`]). A kernel the page
/// does not hold is left as it is.
pub fn annotate(
    decision: &mut BottleneckDecision,
    page: &SourcePage,
    resolve: &dyn Fn(&str, u32) -> Option<String>,
) {
    let found = read(page, resolve);
    let base = super::crosscheck::base;
    for v in &mut decision.kernels {
        let Some(k) = found.iter().find(|k| base(&k.kernel) == base(&v.kernel)) else { continue };
        let mut causes = k.causes.clone();
        for c in &mut causes {
            if let Some(p) = PATTERNS.iter().find(|p| p.id() == c.id) {
                price(*p, c, Some(v));
            }
        }
        by_price(&mut causes);
        v.instruction_causes = causes;
        v.ruled_out = k.ruled_out.clone();
    }
}
