//! Profiling stages: the names users write and the selection rules.
//!
//! A stage is one ncu run that answers one question (is it memory? compute?
//! occupancy?). This module knows only the names and how a selection
//! (`auto`, `all`, or an explicit list) is written; what each stage collects is
//! the ncu module's business.

use std::fmt;
use std::str::FromStr;

/// One profiling stage, in collection order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Cheap overview: duration, speed-of-light throughputs, launch shape, occupancy.
    Basic,
    /// Compute and memory units against their peaks.
    SpeedOfLight,
    /// The memory hierarchy: DRAM, L2, L1/TEX, shared memory.
    Memory,
    /// Pipes, issue slots, instruction mix, warp stalls.
    Compute,
    /// Occupancy limiters, launch statistics, scheduler state.
    Occupancy,
    /// Achieved FLOP/s and arithmetic intensity against the device ceilings.
    Roofline,
    /// Per source line and SASS instruction: samples, stalls, executed instructions.
    Source,
    /// Counts that do not depend on clocks (instructions, bytes, sectors, registers), for
    /// an A/B check's second signal. Never chosen as a follow-up, and not part of `all`.
    Counters,
    /// Everything ncu's `full` set collects. Expensive.
    Full,
}

impl Stage {
    /// All stages in collection order.
    pub const ALL: [Stage; 9] = [
        Stage::Basic,
        Stage::SpeedOfLight,
        Stage::Memory,
        Stage::Compute,
        Stage::Occupancy,
        Stage::Roofline,
        Stage::Source,
        Stage::Counters,
        Stage::Full,
    ];

    /// The name users write (`speed-of-light`).
    pub fn name(self) -> &'static str {
        match self {
            Stage::Basic => "basic",
            Stage::SpeedOfLight => "speed-of-light",
            Stage::Memory => "memory",
            Stage::Compute => "compute",
            Stage::Occupancy => "occupancy",
            Stage::Roofline => "roofline",
            Stage::Source => "source",
            Stage::Counters => "counters",
            Stage::Full => "full",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A stage name that is not one of [`Stage::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStage(pub String);

impl fmt::Display for UnknownStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Stage::ALL.iter().map(|s| s.name()).collect();
        write!(f, "unknown stage `{}` (expected `auto`, `all` or a list of: {})", self.0, names.join(", "))
    }
}

impl std::error::Error for UnknownStage {}

impl FromStr for Stage {
    type Err = UnknownStage;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_lowercase().replace('_', "-");
        Stage::ALL
            .into_iter()
            .find(|st| st.name() == norm || (norm == "sol" && *st == Stage::SpeedOfLight))
            .ok_or_else(|| UnknownStage(s.to_string()))
    }
}

/// Which stages to run.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum StageSelection {
    /// `basic` and `source` (the hot lines), then exactly one follow-up chosen from
    /// basic's metrics.
    #[default]
    Auto,
    /// Every analysis stage: all but `full` (which repeats them all) and `counters` (the
    /// A/B check's).
    All,
    /// Exactly these stages, in collection order, without duplicates.
    List(Vec<Stage>),
}

impl StageSelection {
    /// Parses `auto`, `all` or a comma-separated list of stage names.
    pub fn parse_str(s: &str) -> Result<Self, UnknownStage> {
        match s.trim() {
            "auto" => Ok(StageSelection::Auto),
            "all" => Ok(StageSelection::All),
            list => Self::from_names(list.split(',').map(str::trim).filter(|p| !p.is_empty())),
        }
    }

    /// Builds an explicit list from names; sorts into collection order, drops repeats.
    pub fn from_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Self, UnknownStage> {
        let mut stages = names.into_iter().map(Stage::from_str).collect::<Result<Vec<_>, _>>()?;
        if stages.is_empty() {
            return Err(UnknownStage(String::new()));
        }
        stages.sort();
        stages.dedup();
        Ok(StageSelection::List(stages))
    }
}

impl fmt::Display for StageSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StageSelection::Auto => f.write_str("auto"),
            StageSelection::All => f.write_str("all"),
            StageSelection::List(l) => {
                let names: Vec<&str> = l.iter().map(|s| s.name()).collect();
                f.write_str(&names.join(","))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_selections() {
        assert_eq!(StageSelection::parse_str("auto").unwrap(), StageSelection::Auto);
        assert_eq!(StageSelection::parse_str("all").unwrap(), StageSelection::All);
        assert_eq!(
            StageSelection::parse_str("memory, basic,memory").unwrap(),
            StageSelection::List(vec![Stage::Basic, Stage::Memory])
        );
        assert_eq!(
            StageSelection::parse_str("speed_of_light").unwrap(),
            StageSelection::List(vec![Stage::SpeedOfLight])
        );
        let err = StageSelection::parse_str("basic,memroy").unwrap_err();
        assert!(err.to_string().contains("unknown stage `memroy`"), "{err}");
        assert!(StageSelection::parse_str("").is_err());
    }

    #[test]
    fn names_round_trip() {
        for s in Stage::ALL {
            assert_eq!(s.name().parse::<Stage>().unwrap(), s);
        }
    }
}
