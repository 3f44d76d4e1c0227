//! One style for numbers in everything kprof prints and writes.
//!
//! Durations have one form everywhere ([`duration`]). Other figures come in two registers,
//! each used consistently: [`value`] for measured figures in tables and the report (whole
//! numbers stay whole, two decimals below 100, one above), and [`approx`] for figures in
//! running text such as a comparison's explanation (three or four significant digits,
//! scientific notation for very large or small values). The picture's axes and bars use
//! [`pct`], [`ratio`], [`tick`], [`log_tick`] and [`grouped`].
//!
//! Percentages in text have a fixed number of decimals chosen by the place that shows
//! them: [`pct_fixed`] for a share (`83.0 %`), [`pct_signed`] for a change (`+3.2 %`),
//! [`pct_spread`] for a band (`±0.4 %`); [`delta_pct`] computes a change the one way.
//! The comparison, A/B, analysis and stage-loop modules still format their percentages
//! inline (`{:+.1} %`); these are what those lines become, byte for byte, so they are
//! allowed to be unused until then.

/// Shown for a figure that was not collected (never 0).
pub const NOT_COLLECTED: &str = "not collected";

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

/// A measured figure for tables and reports: `132`, `89.15`, `1115.1`.
pub fn value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A figure in running text: `81.8`, `185`, `1.206e7`.
pub fn approx(v: f64) -> String {
    let a = v.abs();
    if a != 0.0 && !(0.01..1e6).contains(&a) {
        format!("{v:.3e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A percentage for the picture: one decimal from 10 up, two below (`6.25 %`), `< 0.01 %` for a trace.
pub fn pct(v: f64) -> String {
    if v > 0.0 && v < 0.005 {
        "< 0.01 %".to_string()
    } else if v.abs() >= 10.0 {
        format!("{v:.1} %")
    } else {
        format!("{v:.2} %")
    }
}

/// The change from `base` to `current` in percent of `base` (its magnitude, so a
/// negative base still reads the right way round); `None` when `base` is 0.
pub fn delta_pct(base: f64, current: f64) -> Option<f64> {
    (base != 0.0).then(|| 100.0 * (current - base) / base.abs())
}

/// A share with `decimals` decimals: `83.0 %`.
pub fn pct_fixed(v: f64, decimals: usize) -> String {
    format!("{v:.decimals$} %")
}

/// A change with its sign and `decimals` decimals: `+3.2 %`, `-0.50 %`.
pub fn pct_signed(v: f64, decimals: usize) -> String {
    format!("{v:+.decimals$} %")
}

/// A band around a value with `decimals` decimals: `±0.40 %`.
pub fn pct_spread(v: f64, decimals: usize) -> String {
    format!("±{v:.decimals$} %")
}

/// A ratio such as warps per issue: `298`, `13.4`, `0.95`.
pub fn ratio(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A duration given in ns, with a unit that suits it (`s`, `ms`, `µs`, `ns`) and five
/// significant digits: `30.249 ms`, `532.64 µs`, `950 ns`. The one style for durations,
/// in reports, comparisons, the index, messages and the picture.
pub fn duration(ns: f64) -> String {
    let (v, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "µs")
    } else {
        (ns, "ns")
    };
    if unit == "ns" {
        return format!("{v:.0} ns");
    }
    format!("{} {unit}", sig(v, 5))
}

/// `v` with `digits` significant digits, trailing zeros after the point kept; very large
/// or small values in scientific notation (`7.16e6`).
pub fn sig(v: f64, digits: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    if !(1e-3..1e5).contains(&v.abs()) {
        let decimals = (digits - 1).max(0) as usize;
        return format!("{v:.decimals$e}");
    }
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = (digits - 1 - magnitude).max(0) as usize;
    format!("{v:.decimals$}")
}

/// A tick label on a log axis: plain for 0.001 to 1000, else `1e-5`, `1e4`.
pub fn log_tick(v: f64) -> String {
    if v <= 0.0 || !v.is_finite() {
        return String::new();
    }
    let exp = v.log10().round() as i32;
    if (v.log10() - exp as f64).abs() < 1e-6 && !(-3..=3).contains(&exp) {
        return format!("1e{exp}");
    }
    tick(v)
}

/// A tick label on a linear axis: `0`, `2.5`, `300`.
pub fn tick(v: f64) -> String {
    let s = sig(v, 3);
    if s.contains('.') && !s.contains('e') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Thousands separated: 1,234,567.
pub fn grouped(v: f64) -> String {
    let s = format!("{}", v.round() as i64);
    let (sign, digits) = s.strip_prefix('-').map(|d| ("-", d)).unwrap_or(("", &s));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_they_should() {
        assert_eq!(duration(30_249_184.0), "30.249 ms");
        assert_eq!(duration(532_640.0), "532.64 µs");
        assert_eq!(duration(15_130_200.0), "15.130 ms");
        assert_eq!(duration(999.0), "999 ns");
        assert_eq!(duration(2.5e9), "2.5000 s");
        assert_eq!(value(132.0), "132");
        assert_eq!(value(89.153), "89.15");
        assert_eq!(value(1115.14), "1115.1");
        assert_eq!(approx(81.83), "81.8");
        assert_eq!(approx(1.2063e7), "1.206e7");
        assert_eq!(pct(82.998272), "83.0 %");
        assert_eq!(pct(6.25), "6.25 %");
        assert_eq!(pct(8.6e-5), "< 0.01 %");
        assert_eq!(pct(0.0), "0.00 %");
        assert_eq!(ratio(298.201714), "298");
        assert_eq!(ratio(13.377659), "13.4");
        assert_eq!(ratio(0.947356), "0.95");
        assert_eq!(log_tick(0.01), "0.01");
        assert_eq!(log_tick(1000.0), "1000");
        assert_eq!(log_tick(1e-5), "1e-5");
        assert_eq!(log_tick(1e7), "1e7");
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(7.5), "7.5");
        assert_eq!(sig(7_160_026.45, 3), "7.16e6");
        assert_eq!(sig(77.169, 3), "77.2");
        assert_eq!(grouped(1_048_576.0), "1,048,576");
        assert_eq!(seconds(0.842), "0.84 s");
    }

    #[test]
    fn percentages_read_as_the_inline_formats_did() {
        for v in [0.0, 3.25, -0.049, 12.5, -100.0, 1e-7, 250.04] {
            assert_eq!(pct_fixed(v, 1), format!("{v:.1} %"));
            assert_eq!(pct_fixed(v, 0), format!("{v:.0} %"));
            assert_eq!(pct_signed(v, 1), format!("{v:+.1} %"));
            assert_eq!(pct_signed(v, 2), format!("{v:+.2} %"));
            assert_eq!(pct_spread(v, 2), format!("±{v:.2} %"));
        }
        assert_eq!(pct_signed(3.21, 1), "+3.2 %");
        assert_eq!(pct_signed(-0.5, 2), "-0.50 %");
        assert_eq!(delta_pct(200.0, 210.0), Some(5.0));
        assert_eq!(delta_pct(-200.0, -190.0), Some(5.0));
        assert_eq!(delta_pct(0.0, 1.0), None);
    }
}
