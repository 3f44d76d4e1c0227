//! `ab_rounds.json`: the interleaved timing rounds of an A/B check, as committed to the
//! profile directory.
//!
//! In round `r` each side's bench runs once, one after the other, and yields a median
//! time per launch. Which side goes first alternates ([`Side::first_in_round`]) so that a warm-up
//! or a clock ramp inside a round favours neither side. The file keeps every number the
//! statistic ([`super::stats`]) reads, so that a verdict can be recomputed from it alone.

use serde::{Deserialize, Serialize};

use crate::model::ab::Side;

/// `ab_rounds.json`'s shape version.
pub const SCHEMA_VERSION: u32 = 1;

/// The timing modes a round may be measured in.
pub const MODES: &[&str] = &["hot", "cold"];

/// Where a round's times come from: `harness` (one harness bench run per side and round)
/// or `ncu` (ncu's `gpu__time_duration` per launch).
pub const SOURCES: &[&str] = &["harness", "ncu"];

/// Every round of one kernel's A/B timing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rounds {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// kprof's kernel name, e.g. `hgemm_tiled`.
    pub kernel: String,
    /// The harness case, e.g. `hgemm_tiled/m=4096,n=4096,k=4096`.
    pub case: Option<String>,
    /// `hot` or `cold` (see [`MODES`]).
    pub mode: String,
    /// `harness` or `ncu` (see [`SOURCES`]).
    pub source: String,
    /// The rounds, in the order they ran.
    pub rounds: Vec<Round>,
}

/// One round: each side measured once, back to back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// 0-based position in the run.
    pub index: u32,
    /// The side that ran first in this round.
    pub first: Side,
    /// The base revision's measurement (A).
    pub base: SideSample,
    /// The working tree's measurement (B).
    pub head: SideSample,
}

/// One side's measurement in one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideSample {
    /// Median time per launch, ns.
    pub median_ns: f64,
    /// How many launches the median is over.
    pub samples: usize,
    /// The measurement's own spread relative to its median (e.g. `0.004` for 0.4 %).
    pub rel_noise: f64,
    /// The SM clock measured right after the side's measurement, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<f64>,
}

impl Round {
    /// One side's measurement.
    pub fn sample(&self, side: Side) -> &SideSample {
        match side {
            Side::Base => &self.base,
            Side::Head => &self.head,
        }
    }
}

impl Rounds {
    /// An empty set of rounds at the current [`SCHEMA_VERSION`].
    pub fn new(kernel: &str, case: Option<&str>, mode: &str, source: &str) -> Rounds {
        Rounds {
            schema_version: SCHEMA_VERSION,
            kernel: kernel.to_string(),
            case: case.map(str::to_string),
            mode: mode.to_string(),
            source: source.to_string(),
            rounds: Vec::new(),
        }
    }

    /// Rounds of one kernel whose `ln(head / base)` are `d`, in order (base at 1000 ns, no
    /// clock readings): for tests of the statistics.
    #[cfg(test)]
    pub fn of_log_ratios(d: &[f64]) -> Rounds {
        let mut r = Rounds::new("k", None, "hot", "harness");
        let sample = |ns: f64| SideSample { median_ns: ns, samples: 1, rel_noise: 0.0, sm_clock_mhz: None };
        for x in d {
            r.push(sample(1000.0), sample(1000.0 * x.exp()));
        }
        r
    }

    /// Appends the next round, with the side that ran first taken from [`Side::first_in_round`].
    pub fn push(&mut self, base: SideSample, head: SideSample) {
        let index = self.rounds.len() as u32;
        self.rounds.push(Round { index, first: Side::first_in_round(index), base, head });
    }

    /// Whether the file can be trusted: the schema version is known, the mode and source
    /// are known words, the rounds are numbered 0, 1, ... in order and alternate which side
    /// runs first, and every median and clock is a finite positive number. The message
    /// names the first round at fault.
    pub fn check(&self) -> Result<(), String> {
        if self.schema_version != SCHEMA_VERSION {
            return Err(format!(
                "schema version {} (this kprof reads {SCHEMA_VERSION})",
                self.schema_version
            ));
        }
        if !MODES.contains(&self.mode.as_str()) {
            return Err(format!("mode `{}` (expected one of {})", self.mode, MODES.join(", ")));
        }
        if !SOURCES.contains(&self.source.as_str()) {
            return Err(format!("source `{}` (expected one of {})", self.source, SOURCES.join(", ")));
        }
        for (i, r) in self.rounds.iter().enumerate() {
            if r.index as usize != i {
                return Err(format!(
                    "round {i}: numbered {} (rounds are numbered 0, 1, ... in order)",
                    r.index
                ));
            }
            if r.first != Side::first_in_round(r.index) {
                return Err(format!(
                    "round {i}: {} ran first (sides alternate: base first in even rounds)",
                    r.first.name()
                ));
            }
            for side in [Side::Base, Side::Head] {
                let s = r.sample(side);
                if !(s.median_ns.is_finite() && s.median_ns > 0.0) {
                    return Err(format!(
                        "round {i}: {}'s median {} ns is not a positive time",
                        side.name(),
                        s.median_ns
                    ));
                }
                if !(s.rel_noise.is_finite() && s.rel_noise >= 0.0) {
                    return Err(format!(
                        "round {i}: {}'s relative noise {} is not a spread",
                        side.name(),
                        s.rel_noise
                    ));
                }
                if let Some(c) = s.sm_clock_mhz.filter(|c| !(c.is_finite() && *c > 0.0)) {
                    return Err(format!("round {i}: {}'s SM clock {c} MHz is not a clock rate", side.name()));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(ns: f64, clock: Option<f64>) -> SideSample {
        SideSample { median_ns: ns, samples: 50, rel_noise: 0.003, sm_clock_mhz: clock }
    }

    fn two_rounds() -> Rounds {
        let mut r = Rounds::new("hgemm_tiled", Some("hgemm_tiled/m=4096,n=4096,k=4096"), "hot", "harness");
        r.push(sample(1000.0, Some(1980.0)), sample(1010.0, None));
        r.push(sample(1001.0, None), sample(1012.5, Some(1975.0)));
        r
    }

    #[test]
    fn sides_alternate_base_first() {
        assert_eq!(Side::first_in_round(0), Side::Base);
        assert_eq!(Side::first_in_round(1), Side::Head);
        assert_eq!(Side::first_in_round(2), Side::Base);
        assert_eq!(Side::first_in_round(9), Side::Head);
        let r = two_rounds();
        assert_eq!(r.rounds[1].index, 1);
        assert_eq!(r.rounds[1].first, Side::Head);
    }

    #[test]
    fn rounds_round_trip_through_json() {
        let r = two_rounds();
        let json = serde_json::to_string_pretty(&r).unwrap();
        assert!(json.contains("\"first\": \"head\""), "{json}");
        // An absent clock is left out, not written as null.
        assert_eq!(json.matches("sm_clock_mhz").count(), 2, "{json}");
        let back: Rounds = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.check(), Ok(()));
    }

    #[test]
    fn a_missing_clock_reads_as_none() {
        let json = r#"{"median_ns": 5.0, "samples": 3, "rel_noise": 0.0}"#;
        let s: SideSample = serde_json::from_str(json).unwrap();
        assert_eq!(s.sm_clock_mhz, None);
    }

    #[test]
    fn check_names_the_round_at_fault() {
        let mut r = two_rounds();
        r.rounds[1].head.median_ns = f64::NAN;
        assert!(r.check().unwrap_err().starts_with("round 1: head's median"));

        let mut r = two_rounds();
        r.rounds[0].base.median_ns = 0.0;
        assert!(r.check().unwrap_err().starts_with("round 0: base's median 0 ns"));

        let mut r = two_rounds();
        r.rounds[1].index = 3;
        assert!(r.check().unwrap_err().starts_with("round 1: numbered 3"));

        let mut r = two_rounds();
        r.rounds[1].first = Side::Base;
        assert!(r.check().unwrap_err().starts_with("round 1: base ran first"));

        let mut r = two_rounds();
        r.rounds[0].base.sm_clock_mhz = Some(-1.0);
        assert!(r.check().unwrap_err().starts_with("round 0: base's SM clock"));

        let mut r = two_rounds();
        r.schema_version = 2;
        assert!(r.check().unwrap_err().contains("schema version 2"));

        let mut r = two_rounds();
        r.source = "nsys".into();
        assert!(r.check().unwrap_err().contains("source `nsys`"));
    }
}
