//! The absolute floors of ratios and rates: how far a share of peak, an occupancy, the
//! IPC or the FLOP rate must move before `compare` calls it a change.
//!
//! A relative tolerance alone misjudges small values: DRAM throughput going from 1.2 % to
//! 1.0 % of peak is -17 % of itself and nothing a kernel engineer would look at. Counts
//! (DRAM bytes, bank conflicts) are priced in time instead (`cost.rs`), and stall reasons
//! by their share of all stalls (`stall_deltas`); the duration alone decides a regression.
//! `docs/compare.md` lists these floors, and a test keeps the two the same.

/// `(summary field, floor, unit of the floor)`: a change smaller than the floor, in the
/// field's own unit, is `unchanged` whatever its relative size.
pub const FLOORS: &[(&str, f64, &str)] = &[
    ("sm_throughput_pct", 2.0, "percentage points of peak"),
    ("memory_throughput_pct", 2.0, "percentage points of peak"),
    ("dram_throughput_pct", 2.0, "percentage points of peak"),
    ("l1tex_throughput_pct", 2.0, "percentage points of peak"),
    ("l2_throughput_pct", 2.0, "percentage points of peak"),
    ("achieved_occupancy_pct", 2.0, "percentage points of the SM's warp slots"),
    ("theoretical_occupancy_pct", 2.0, "percentage points of the SM's warp slots"),
    ("ipc", 0.05, "instructions per cycle"),
    ("achieved_flops_per_s", 1e11, "FLOP/s (0.1 TFLOP/s)"),
];

/// The floor of `field`, when it has one.
pub fn floor_of(field: &str) -> Option<f64> {
    FLOORS.iter().find(|(f, _, _)| *f == field).map(|(_, floor, _)| *floor)
}

/// Whether a move from `b` to `c` of `field` stays under the field's floor (then it is no
/// change, however large relative to `b`).
pub fn below_floor(field: &str, b: f64, c: f64) -> bool {
    floor_of(field).is_some_and(|floor| (c - b).abs() < floor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_moves_of_small_shares_are_below_the_floor() {
        assert!(below_floor("dram_throughput_pct", 1.2, 1.0));
        assert!(!below_floor("l2_throughput_pct", 11.8, 6.3));
        assert!(below_floor("ipc", 2.00, 2.04));
        assert!(!below_floor("ipc", 2.0, 1.7));
        assert!(!below_floor("registers_per_thread", 32.0, 32.5), "no floor: the tolerance judges it");
    }

    #[test]
    fn docs_list_the_floors() {
        let doc = include_str!("../../docs/compare.md");
        let rows: Vec<(String, f64, String)> = doc
            .lines()
            .filter(|l| l.starts_with("| `"))
            .map(|l| {
                let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
                (cells[0].trim_matches('`').to_string(), cells[1].parse().unwrap(), cells[2].to_string())
            })
            .collect();
        let code: Vec<(String, f64, String)> =
            FLOORS.iter().map(|(f, v, u)| (f.to_string(), *v, u.to_string())).collect();
        assert_eq!(rows, code, "docs/compare.md's floors and FLOORS differ");
    }
}
