//! UTC timestamps of profile ids and manifests, computed from [`SystemTime`] by hand
//! (Howard Hinnant's days-to-civil algorithm): local time would need a time-zone database
//! crate for one string, and UTC ids sort the same on every machine a profile is copied to.

use std::fmt;
use std::time::SystemTime;

/// A UTC date and time to the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct UtcTimestamp {
    /// The year (proleptic Gregorian).
    pub year: i64,
    /// 1..=12.
    pub month: u32,
    /// 1..=31.
    pub day: u32,
    /// 0..=23.
    pub hour: u32,
    /// 0..=59.
    pub minute: u32,
    /// 0..=59.
    pub second: u32,
}

impl UtcTimestamp {
    /// The UTC time of `time`, truncated to the second. Times before 1970 count back.
    pub fn from_system_time(time: SystemTime) -> Self {
        let seconds = match time.duration_since(SystemTime::UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
            Err(before) => {
                // Round towards the past, so 0.5 s before the epoch is 23:59:59.
                let d = before.duration();
                let whole = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
                -whole - i64::from(d.subsec_nanos() > 0)
            }
        };
        Self::from_unix_seconds(seconds)
    }

    /// The UTC time `seconds` after 1970-01-01T00:00:00Z.
    pub fn from_unix_seconds(seconds: i64) -> Self {
        let days = seconds.div_euclid(86_400);
        let of_day = seconds.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        // of_day < 86 400, so these fit in u32.
        let of_day = of_day as u32;
        UtcTimestamp { year, month, day, hour: of_day / 3600, minute: of_day / 60 % 60, second: of_day % 60 }
    }

    /// `YYYYMMDD_HHMMSS`, as in profile ids.
    pub fn compact(&self) -> String {
        format!(
            "{:04}{:02}{:02}_{:02}{:02}{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

impl fmt::Display for UtcTimestamp {
    /// RFC 3339: `2026-05-15T12:00:00Z`, as in `run_manifest.yaml`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

/// The proleptic Gregorian `(year, month, day)` of a count of days since 1970-01-01.
///
/// Howard Hinnant's `civil_from_days`: shift to eras of 400 years starting on
/// March 1st, so leap days fall at the end of each year.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097); // [0, 146096]
                                            // [0, 399]
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    // [0, 365]
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153; // [0, 11], March = 0
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
