//! The shape of a cause read from the SASS, as a verdict records it. The rules own the
//! shape (it is a field of [`super::KernelVerdict`], serialized with it);
//! `crate::analyze::sass` finds the patterns and fills it in.

use serde::{Deserialize, Serialize};

/// An instruction pattern on a kernel's hot lines that names a mechanism and its fix:
/// precision conversions in float code, the 64-bit division routine, local memory,
/// global atomics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstructionCause {
    /// `double-promotion`, `int64-division`, `local-memory` or `global-atomics`.
    pub id: String,
    /// The instructions seen, as the SASS spells their opcodes (`F2F.F64.F32`, `DFMA`).
    pub instructions: Vec<String>,
    /// The source lines that issue them, costliest first (line 0: no line info).
    pub lines: Vec<CauseLine>,
    /// The share of the kernel's warp samples the pattern costs, percent: the samples on
    /// its instructions (less their own waits for inputs) and the waits of the
    /// instructions that use their results.
    pub samples_pct: f64,
    /// The pattern's share of the warp instructions executed, percent.
    pub executed_pct: f64,
    /// Removing the pattern could save up to this share of the kernel's time, percent;
    /// `None` when not priced.
    #[serde(default)]
    pub predicted_saving_pct: Option<f64>,
    /// How the price was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saving_basis: Option<String>,
    /// Why it is not priced, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_priced: Option<String>,
    /// The verdict's limiter whose mechanism this names, when it is one of those the
    /// pattern explains (`integer-overhead` for the division routine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explains: Option<String>,
    /// The fix, naming what the line does (the double literal, the division).
    pub advice: String,
    /// The cause and its fix in one clause, for a console line.
    pub headline: String,
}

impl InstructionCause {
    /// The predicted saving in words, as the limiter's is written.
    pub fn saving_text(&self) -> String {
        match (self.predicted_saving_pct, &self.not_priced) {
            (Some(p), _) => format!(
                "Removing it could save up to {} % of the kernel's time ({}).",
                crate::units::value(p),
                self.saving_basis.as_deref().unwrap_or("its share of the samples")
            ),
            (None, Some(why)) => format!("Not priced: {why}."),
            (None, None) => "Not priced.".into(),
        }
    }

    /// One Markdown or console sentence: what, where, its share, and the price.
    pub fn sentence(&self) -> String {
        let explains = match &self.explains {
            Some(l) => format!(" This is what `{l}` is made of here."),
            None => String::new(),
        };
        format!(
            "`{}` ({}; {} % of the samples, {} % of the instructions): {}.{explains} {}",
            self.id,
            self.instructions.join(", "),
            crate::units::value(self.samples_pct),
            crate::units::value(self.executed_pct),
            self.advice,
            self.saving_text()
        )
    }

    /// `line 40` (or `lines 19, 13`), for a headline.
    pub fn where_text(&self) -> String {
        let lines: Vec<String> =
            self.lines.iter().filter(|l| l.line > 0).map(|l| l.line.to_string()).collect();
        match lines.len() {
            0 => "instructions without line info".into(),
            1 => format!("line {}", lines[0]),
            _ => format!("lines {}", lines.join(", ")),
        }
    }
}

/// A source line that issues a pattern's instructions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CauseLine {
    /// The source file.
    pub file: String,
    /// The line number (0 without line info).
    pub line: u32,
    /// The line's text, when known.
    pub source: String,
    /// The pattern's instructions on this line, as the SASS shows them (up to three).
    pub sass: Vec<String>,
    /// The pattern's cost on this line, percent of the kernel's samples.
    pub samples_pct: f64,
}

/// A pattern looked for on a kernel's source page and not found (or too cheap to count).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuledOut {
    /// The pattern's id.
    pub id: String,
    /// Why: the instruction is absent, or its share.
    pub why: String,
}
