//! Names kprof builds from data: the one sanitiser that every path component made from
//! a kernel name goes through, and profile ids (`{sanitized_kernel}_{YYYYMMDD_HHMMSS}`,
//! UTC; the clock is a parameter so that tests pin it).

use std::time::SystemTime;

use super::timestamp::UtcTimestamp;

/// The longest kernel part of a profile id, in characters.
pub const MAX_KERNEL_ID_LEN: usize = 64;

/// How many `<id>_N` suffixes [`ProfileDir::create_unique`] tries before giving up.
pub const MAX_COLLISION_SUFFIX: u32 = 1000;

/// The one sanitiser: every path component kprof builds from data (kernel names from the
/// configuration or from ncu's CSVs, profile ids, the kernel folders of baselines) is made
/// by this function, so none can hold `/`, `..`, a leading `.` or a control character.
///
/// A kernel name reduced to `[A-Za-z0-9_-]`: other characters become `_`, runs of
/// `_` collapse, `_`/`-` are trimmed from both ends, the result is cut to
/// [`MAX_KERNEL_ID_LEN`] characters, and an empty result becomes `kernel`.
pub fn sanitize_kernel_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len().min(MAX_KERNEL_ID_LEN));
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    // Only ASCII remains, so every byte index is a char boundary.
    let trimmed = out.trim_matches(['_', '-']);
    let cut = trimmed.get(..MAX_KERNEL_ID_LEN).unwrap_or(trimmed).trim_end_matches(['_', '-']);
    if cut.is_empty() {
        "kernel".to_string()
    } else {
        cut.to_string()
    }
}

/// A profile id: `{sanitized_kernel}_{YYYYMMDD_HHMMSS}` (UTC).
pub fn profile_id(kernel: &str, now: SystemTime) -> String {
    format!("{}_{}", sanitize_kernel_name(kernel), UtcTimestamp::from_system_time(now).compact())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::timestamp::civil_from_days;
    use std::path::Path;
    use std::time::Duration;

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
    }

    #[test]
    fn sanitizes_kernel_names() {
        for (name, expected) in [
            ("hgemm_byzj_v0", "hgemm_byzj_v0"),
            ("void hgemm<128, 64>(float*)", "void_hgemm_128_64_float"),
            ("ns::kernel", "ns_kernel"),
            ("__hgemm__", "hgemm"),
            ("-x-", "x"),
            ("a  b", "a_b"),
            ("a__b", "a_b"),
            ("gemm-v2", "gemm-v2"),
            ("héllo", "h_llo"),
            ("../../etc", "etc"),
            ("", "kernel"),
            ("***", "kernel"),
            ("_-_", "kernel"),
        ] {
            assert_eq!(sanitize_kernel_name(name), expected, "for {name:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn the_sanitiser_always_makes_one_plain_component(name in "\\PC*|[./\\\\\n\r\0a-z]{0,12}") {
            let out = sanitize_kernel_name(&name);
            let mut parts = Path::new(&out).components();
            proptest::prop_assert!(matches!(parts.next(), Some(std::path::Component::Normal(_))));
            proptest::prop_assert!(parts.next().is_none());
            proptest::prop_assert!(out.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
            proptest::prop_assert!(!out.starts_with(['-', '_']) && out.len() <= MAX_KERNEL_ID_LEN);
        }
    }

    #[test]
    fn kernel_part_is_bounded() {
        let long = "k".repeat(200);
        assert_eq!(sanitize_kernel_name(&long).len(), MAX_KERNEL_ID_LEN);
        // A cut that lands after a separator does not leave it dangling.
        let name = format!("{}_tail", "a".repeat(MAX_KERNEL_ID_LEN - 1));
        assert_eq!(sanitize_kernel_name(&name), "a".repeat(MAX_KERNEL_ID_LEN - 1));
        let multibyte = "é".repeat(100);
        assert_eq!(sanitize_kernel_name(&multibyte), "kernel");
        let mixed = format!("{}x", "aé".repeat(40));
        assert!(sanitize_kernel_name(&mixed).len() <= MAX_KERNEL_ID_LEN);
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        assert_eq!(civil_from_days(10_957), (2000, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(20_588), (2026, 5, 15));
        assert_eq!(civil_from_days(-719_468), (0, 3, 1));
        assert_eq!(civil_from_days(2_932_896), (9999, 12, 31));
    }

    #[test]
    fn timestamps() {
        let t = UtcTimestamp::from_system_time(at(1_778_846_400));
        assert_eq!(t.compact(), "20260515_120000");
        assert_eq!(t.to_string(), "2026-05-15T12:00:00Z");
        assert_eq!(UtcTimestamp::from_unix_seconds(951_825_599).to_string(), "2000-02-29T11:59:59Z");
        assert_eq!(UtcTimestamp::from_unix_seconds(-1).to_string(), "1969-12-31T23:59:59Z");
        let just_before = SystemTime::UNIX_EPOCH - Duration::from_millis(500);
        assert_eq!(UtcTimestamp::from_system_time(just_before).compact(), "19691231_235959");
        assert_eq!(profile_id("hgemm<float>", at(1_778_846_400)), "hgemm_float_20260515_120000");
    }
}
