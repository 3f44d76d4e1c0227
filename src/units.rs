//! One style for numbers in everything kprof prints and writes.

/// Seconds for people: `0.84 s`, `12.3 s`, `95 s`.
pub fn seconds(s: f64) -> String {
    if s < 10.0 {
        format!("{s:.2} s")
    } else if s < 100.0 {
        format!("{s:.1} s")
    } else {
        format!("{s:.0} s")
    }
}
