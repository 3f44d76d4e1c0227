//! Does a change in a count matter? The one rule for counts, used by the A/B check's
//! counters (`ab::counters`) and by `compare`'s count metrics.
//!
//! A count that grew is more work, but work the kernel may hide: a few hundred extra DRAM
//! bytes in a kernel that runs the FMA pipe for a millisecond cost nothing, and the same
//! percentage on a DRAM-bound copy costs its whole share. So a count is priced in time:
//! the extra work at the device's peak rate for the unit that does it (DRAM bytes at DRAM
//! bandwidth, L2 sectors at L2 bandwidth, warp instructions at the issue rate, ...) is the
//! least time it can add. A change matters only when that time is at least the tolerance's
//! share of the base's duration: below it, even a kernel limited by that unit alone would
//! not have slowed by the tolerance.
//!
//! The peak rates come from the device attributes ncu writes into every raw page
//! (SM count, SM and memory clocks, memory bus width, L2 slices, schedulers per SM), so the
//! rule prices work on the GPU that did it, including one kprof has never seen. The
//! per-cycle width of each unit (how many sectors an SM's L1 or an L2 slice moves per
//! cycle) was read off ncu's own `.peak_sustained` figures on an H200 (see
//! `fixtures/h200/unit-peaks`), and the rates use the highest SM clock the device
//! reports, so the price is the least the work can cost: the rule errs towards "does not
//! matter", since a false alarm in a gate costs more than a missed 1 %.

use serde::{Deserialize, Serialize};

use crate::analyze::summary::FIELDS;

/// The hardware unit that does a counted piece of work, and so the rate it is priced at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Warp instructions, at the schedulers' issue rate.
    WarpIssue,
    /// Thread instructions: warp instructions times the warp size.
    ThreadIssue,
    /// L1 sectors (global and local loads and stores), at the L1 tag rate.
    L1Sector,
    /// Shared-memory wavefronts, and bank conflicts (each one an extra wavefront).
    SharedWavefront,
    /// L2 sectors, at the L2 slices' rate.
    L2Sector,
    /// DRAM bytes, at the memory's bandwidth.
    DramByte,
}

/// L1 sectors (32 B) an SM's L1/TEX unit serves per cycle: `l1tex__t_sectors.sum.peak_sustained`
/// is 2,112 per cycle on an H200's 132 SMs.
pub const L1_SECTORS_PER_SM_CYCLE: f64 = 16.0;
/// Shared-memory wavefronts an SM serves per cycle: `l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.peak_sustained`
/// (and `l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum.peak_sustained`) is 132 per
/// cycle on an H200's 132 SMs.
pub const SHARED_WAVEFRONTS_PER_SM_CYCLE: f64 = 1.0;
/// L2 sectors one L2 slice serves per SM cycle. On an H200, `lts__t_sectors.sum.peak_sustained`
/// is 282 per L2 cycle at 1.709 GHz (`lts__cycles_elapsed.avg.per_second`): 4.82e11 sectors
/// per second over 96 slices, 2.54 per slice per cycle of the 1.98 GHz SM clock. Rounded
/// up to 3, so that the rate is never below the device's (5.70e11 per second on an H200).
pub const L2_SECTORS_PER_SLICE_CYCLE: f64 = 3.0;

/// The device attributes the rates are built from, as ncu names them in raw pages.
const SM_COUNT: &str = "device__attribute_multiprocessor_count";
const SM_CLOCK_KHZ: &str = "device__attribute_clock_rate";
const SCHEDULERS: &str = "device__attribute_num_schedulers_per_multiprocessor";
const IPC_PER_SCHEDULER: &str = "device__attribute_max_ipc_per_scheduler";
const WARP_SIZE: &str = "device__attribute_warp_size";
const MEMORY_CLOCK_KHZ: &str = "device__attribute_memory_clock_rate";
const BUS_WIDTH_BITS: &str = "device__attribute_global_memory_bus_width";
const L2_SLICES: &str = "device__attribute_l2s_count";

/// The device's peak rate of each [`Unit`], per second; `None` where an attribute it
/// needs was not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct PeakRates {
    /// Warp instructions per second.
    pub warp_issue: Option<f64>,
    /// Thread instructions per second.
    pub thread_issue: Option<f64>,
    /// L1 sectors per second.
    pub l1_sectors: Option<f64>,
    /// Shared-memory wavefronts per second.
    pub shared_wavefronts: Option<f64>,
    /// L2 sectors per second.
    pub l2_sectors: Option<f64>,
    /// DRAM bytes per second.
    pub dram_bytes: Option<f64>,
}

impl PeakRates {
    /// The rates from the device attributes (`attribute` looks one up by its ncu name).
    pub fn from_attributes(attribute: impl Fn(&str) -> Option<f64>) -> PeakRates {
        let positive = |name: &str| attribute(name).filter(|v| v.is_finite() && *v > 0.0);
        let sm_hz = positive(SM_CLOCK_KHZ).map(|khz| khz * 1e3);
        let sms = positive(SM_COUNT);
        let per_sm = |width: f64| Some(sms? * width * sm_hz?);
        let warp_issue =
            per_sm(1.0).and_then(|r| Some(r * positive(SCHEDULERS)? * positive(IPC_PER_SCHEDULER)?));
        // HBM and GDDR move data on both clock edges.
        let dram_bytes =
            (|| Some(positive(MEMORY_CLOCK_KHZ)? * 1e3 * 2.0 * positive(BUS_WIDTH_BITS)? / 8.0))();
        PeakRates {
            warp_issue,
            thread_issue: warp_issue.and_then(|r| Some(r * positive(WARP_SIZE)?)),
            l1_sectors: per_sm(L1_SECTORS_PER_SM_CYCLE),
            shared_wavefronts: per_sm(SHARED_WAVEFRONTS_PER_SM_CYCLE),
            l2_sectors: (|| Some(positive(L2_SLICES)? * L2_SECTORS_PER_SLICE_CYCLE * sm_hz?))(),
            dram_bytes,
        }
    }

    /// The rates from a metrics summary's fields (`field` looks one up by its name): each
    /// attribute is read under the summary field the summary's table reads it into.
    pub fn from_summary(field: impl Fn(&str) -> Option<f64>) -> PeakRates {
        PeakRates::from_attributes(|attribute| {
            FIELDS.iter().find(|f| f.metric == attribute).and_then(|f| field(f.name))
        })
    }

    /// The rate of `unit`, per second.
    pub fn of(&self, unit: Unit) -> Option<f64> {
        match unit {
            Unit::WarpIssue => self.warp_issue,
            Unit::ThreadIssue => self.thread_issue,
            Unit::L1Sector => self.l1_sectors,
            Unit::SharedWavefront => self.shared_wavefronts,
            Unit::L2Sector => self.l2_sectors,
            Unit::DramByte => self.dram_bytes,
        }
    }
}

/// What a count's change costs in time, and whether that matters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CountCost {
    /// The unit it was priced at.
    pub unit: Unit,
    /// That unit's peak rate, per second.
    pub rate_per_s: f64,
    /// The change's work at that rate, ns: positive for more work, negative for less.
    pub time_ns: f64,
    /// The base's duration, ns.
    pub base_ns: f64,
    /// `time_ns` as a percentage of `base_ns`.
    pub share_pct: f64,
    /// The share at or beyond which a change matters: the tolerance, percent.
    pub threshold_pct: f64,
}

impl CountCost {
    /// More work, worth at least the tolerance's share of the base's duration.
    pub fn matters_up(&self) -> bool {
        self.share_pct >= self.threshold_pct
    }

    /// Less work, worth at least the tolerance's share of the base's duration.
    pub fn matters_down(&self) -> bool {
        -self.share_pct >= self.threshold_pct
    }

    /// Why it does or does not matter, for a reviewer: `12.035 µs at the issue rate,
    /// 2.25 % of the base's 534.08 µs (at least the 2.0 % tolerance)`.
    pub fn explain(&self) -> String {
        use crate::units::duration;
        let verb = if self.matters_up() || self.matters_down() { "at least" } else { "under" };
        format!(
            "{} at {}, {} of the base's {} ({verb} the {} tolerance)",
            duration(self.time_ns.abs()),
            self.unit.rate_name(),
            crate::units::pct_fixed(self.share_pct.abs(), 2),
            duration(self.base_ns),
            crate::units::pct_fixed(self.threshold_pct, 1),
        )
    }
}

impl CountCost {
    /// The price alone, for a reviewer's line: `2.3 % of the base's time at the issue rate`.
    pub fn short(&self) -> String {
        format!(
            "{} of the base's time at {}",
            crate::units::pct_fixed(self.share_pct.abs(), 1),
            self.unit.rate_name()
        )
    }
}

impl Unit {
    /// The rate's name for a reviewer.
    pub fn rate_name(self) -> &'static str {
        match self {
            Unit::WarpIssue | Unit::ThreadIssue => "the issue rate",
            Unit::L1Sector => "L1 bandwidth",
            Unit::SharedWavefront => "shared-memory bandwidth",
            Unit::L2Sector => "L2 bandwidth",
            Unit::DramByte => "DRAM bandwidth",
        }
    }
}

/// Prices the change of a count from `base` to `head` of `unit` against the base's
/// duration `base_ns`, at tolerance `tolerance_pct`; `None` when the unit's rate or the
/// duration is unknown (the change then cannot be shown to matter).
pub fn price(
    unit: Unit,
    base: f64,
    head: f64,
    base_ns: Option<f64>,
    rates: &PeakRates,
    tolerance_pct: f64,
) -> Option<CountCost> {
    let rate = rates.of(unit).filter(|r| *r > 0.0)?;
    let base_ns = base_ns.filter(|d| d.is_finite() && *d > 0.0)?;
    let time_ns = (head - base) / rate * 1e9;
    Some(CountCost {
        unit,
        rate_per_s: rate,
        time_ns,
        base_ns,
        share_pct: time_ns / base_ns * 100.0,
        threshold_pct: tolerance_pct,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The attributes an H200's raw pages carry (`fixtures/h200/ab-runs/insts`).
    fn h200(name: &str) -> Option<f64> {
        Some(match name {
            SM_COUNT => 132.0,
            SM_CLOCK_KHZ => 1_980_000.0,
            SCHEDULERS => 4.0,
            IPC_PER_SCHEDULER => 1.0,
            WARP_SIZE => 32.0,
            MEMORY_CLOCK_KHZ => 3_201_000.0,
            BUS_WIDTH_BITS => 6016.0,
            L2_SLICES => 96.0,
            _ => return None,
        })
    }

    #[test]
    fn an_h200s_rates() {
        let r = PeakRates::from_attributes(h200);
        // 132 SMs x 4 schedulers x 1 instruction x 1.98 GHz.
        assert!((r.warp_issue.unwrap() - 1.045_44e12).abs() < 1e6);
        assert!((r.thread_issue.unwrap() - 3.345_408e13).abs() < 1e7);
        // ncu's own figure: dram__bytes.sum.peak_sustained 1,504 B/cycle at 3.2 GHz.
        assert!((r.dram_bytes.unwrap() - 1504.0 * 3.201e9).abs() < 1e6);
        assert!((r.shared_wavefronts.unwrap() - 132.0 * 1.98e9).abs() < 1.0);
        // Nothing recorded, no rates.
        assert_eq!(PeakRates::from_attributes(|_| None), PeakRates::default());
    }

    #[test]
    fn a_few_hundred_dram_bytes_never_matter() {
        // The half-precision FMA kernel of the false alarm: 256 -> 1792 DRAM bytes read
        // (+600 %) in a kernel of about 1 ms.
        let r = PeakRates::from_attributes(h200);
        let c = price(Unit::DramByte, 256.0, 1792.0, Some(1.0e6), &r, 2.0).unwrap();
        assert!(!c.matters_up());
        assert!(c.time_ns < 1.0, "{c:?}");
        assert_eq!(
            c.explain(),
            "0 ns at DRAM bandwidth, 0.00 % of the base's 1.0000 ms (under the 2.0 % tolerance)"
        );
    }

    #[test]
    fn instructions_behind_dram_still_matter() {
        // The recorded `insts` change: a copy of 534 us whose instructions grew from
        // 27,431,936 to 40,014,848 while its time did not move.
        let r = PeakRates::from_attributes(h200);
        let c = price(Unit::WarpIssue, 27_431_936.0, 40_014_848.0, Some(534_080.0), &r, 2.0).unwrap();
        assert!(c.matters_up(), "{c:?}");
        assert!((c.share_pct - 2.25).abs() < 0.01, "{c:?}");
        // The same growth in a kernel ten times longer does not.
        let c = price(Unit::WarpIssue, 27_431_936.0, 40_014_848.0, Some(5_340_800.0), &r, 2.0).unwrap();
        assert!(!c.matters_up());
        // Less work by as much matters the other way.
        let c = price(Unit::WarpIssue, 40_014_848.0, 27_431_936.0, Some(534_080.0), &r, 2.0).unwrap();
        assert!(c.matters_down() && !c.matters_up());
    }

    #[test]
    fn every_attribute_has_a_summary_field() {
        let attributes = [
            SM_COUNT,
            SM_CLOCK_KHZ,
            SCHEDULERS,
            IPC_PER_SCHEDULER,
            WARP_SIZE,
            MEMORY_CLOCK_KHZ,
            BUS_WIDTH_BITS,
            L2_SLICES,
        ];
        for a in attributes {
            assert!(FIELDS.iter().any(|f| f.metric == a), "{a}");
        }
        let by_field =
            PeakRates::from_summary(|f| FIELDS.iter().find(|x| x.name == f).and_then(|x| h200(x.metric)));
        assert_eq!(by_field, PeakRates::from_attributes(h200));
    }

    #[test]
    fn unknown_rates_or_durations_price_nothing() {
        let r = PeakRates::from_attributes(h200);
        assert!(price(Unit::DramByte, 1.0, 2.0, None, &r, 2.0).is_none());
        assert!(price(Unit::DramByte, 1.0, 2.0, Some(0.0), &r, 2.0).is_none());
        assert!(price(Unit::DramByte, 1.0, 2.0, Some(1e6), &PeakRates::default(), 2.0).is_none());
    }
}
