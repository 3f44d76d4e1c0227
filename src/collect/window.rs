//! Fitting a plain program's launch window to what the program launched.
//!
//! kprof's default windows (skip 5 / count 3 for Rust programs, 10 / 1 for commands,
//! 20 / 1 for Triton) suit programs that launch a kernel many times; most real programs
//! launch each kernel once or a few times, and then the default skips every launch. ncu
//! cannot say so: with a filter, its list of "available kernels" names only the kernels
//! the filter did *not* match, so a kernel whose launches were all skipped and a kernel
//! never launched look the same. So when a stage matches nothing, one durations-only pass
//! over every launch (the census, [`census_window`]) counts them, and a default window
//! that skipped all `n` launches becomes the last `min(count, n)` of them ([`fit`]). A
//! window set in the manifests or on the command line is kept; the census then only
//! explains the miss. ncu's `--launch-skip` counts launches of every kernel the filter
//! matches, so `n` counts those too.

use crate::model::kinds::{LaunchWindow, WindowOrigin};

/// The most launches a census profiles (each costs one durations-only replay).
pub const CENSUS_LAUNCH_CAP: u32 = 1000;

/// The window of a census: every launch from the first, up to `cap` (`--census-launches`)
/// or else [`CENSUS_LAUNCH_CAP`]; a harness range stays the range (the harness launches
/// only inside it).
pub fn census_window(window: LaunchWindow, cap: Option<u32>) -> LaunchWindow {
    match window {
        LaunchWindow::HarnessRange { .. } => window,
        LaunchWindow::SkipCount { .. } => {
            LaunchWindow::SkipCount { launch_skip: 0, launch_count: cap.unwrap_or(CENSUS_LAUNCH_CAP) }
        }
    }
}

/// The launch cap of a census in `window` (`cap` as for [`census_window`]), when it has one.
pub fn census_cap(window: LaunchWindow, cap: Option<u32>) -> Option<u32> {
    match census_window(window, cap) {
        LaunchWindow::SkipCount { launch_count, .. } => Some(launch_count),
        LaunchWindow::HarnessRange { .. } => None,
    }
}

/// The window to use instead of `window` for a kernel whose filter matched `launches`
/// launches in all, and why; `None` when `window` is to be kept: it was set, it is a
/// harness range, nothing was launched, or it already reaches a launch.
pub fn fit(window: LaunchWindow, origin: WindowOrigin, launches: usize) -> Option<(LaunchWindow, String)> {
    let LaunchWindow::SkipCount { launch_skip, launch_count } = window else { return None };
    let n = u32::try_from(launches).unwrap_or(u32::MAX);
    if origin != WindowOrigin::Default || n == 0 || n > launch_skip {
        return None;
    }
    let count = launch_count.min(n);
    let fitted = LaunchWindow::SkipCount { launch_skip: n - count, launch_count: count };
    let why = format!(
        "the filter matched {n} launch{} in all, which the default window ({}) skips: profiling the last {count}",
        if n == 1 { "" } else { "es" },
        window.describe(),
    );
    Some((fitted, why))
}

/// Advice for a window that skipped every one of `launches` matching launches and was
/// set, so kprof kept it.
pub fn set_window_advice(window: LaunchWindow, launches: usize) -> Option<String> {
    let LaunchWindow::SkipCount { launch_skip, launch_count } = window else { return None };
    let n = u32::try_from(launches).ok()?;
    (n > 0 && n <= launch_skip).then(|| {
        let count = launch_count.min(n);
        format!(
            "the filter matched {n} launch(es) in all and the window set in the manifests or on the command line \
             skips {launch_skip}: pass --launch-skip {} --launch-count {count} (or leave both unset and kprof fits the window)",
            n - count
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUDA_DEFAULT: LaunchWindow = LaunchWindow::SkipCount { launch_skip: 5, launch_count: 3 };

    #[test]
    fn a_default_window_that_skips_everything_takes_the_last_launches() {
        let (w, why) = fit(CUDA_DEFAULT, WindowOrigin::Default, 1).unwrap();
        assert_eq!(w, LaunchWindow::SkipCount { launch_skip: 0, launch_count: 1 });
        assert!(why.contains("matched 1 launch in all") && why.contains("--launch-skip 5"), "{why}");
        let (w, _) = fit(CUDA_DEFAULT, WindowOrigin::Default, 4).unwrap();
        assert_eq!(w, LaunchWindow::SkipCount { launch_skip: 1, launch_count: 3 });
        let (w, _) = fit(CUDA_DEFAULT, WindowOrigin::Default, 5).unwrap();
        assert_eq!(w, LaunchWindow::SkipCount { launch_skip: 2, launch_count: 3 });
    }

    #[test]
    fn windows_that_reach_a_launch_or_were_set_are_kept() {
        // Six launches: the default already profiles the sixth.
        assert_eq!(fit(CUDA_DEFAULT, WindowOrigin::Default, 6), None);
        assert_eq!(fit(CUDA_DEFAULT, WindowOrigin::Default, 0), None);
        assert_eq!(fit(CUDA_DEFAULT, WindowOrigin::Set, 1), None);
        assert_eq!(fit(LaunchWindow::HarnessRange { launch_count: 1 }, WindowOrigin::Default, 0), None);
        let advice = set_window_advice(CUDA_DEFAULT, 2).unwrap();
        assert!(advice.contains("--launch-skip 0 --launch-count 2"), "{advice}");
        assert_eq!(set_window_advice(CUDA_DEFAULT, 0), None);
    }

    #[test]
    fn a_census_sees_every_launch_from_the_first() {
        assert_eq!(
            census_window(CUDA_DEFAULT, None),
            LaunchWindow::SkipCount { launch_skip: 0, launch_count: CENSUS_LAUNCH_CAP }
        );
        let range = LaunchWindow::HarnessRange { launch_count: 2 };
        assert_eq!(census_window(range, Some(5)), range);
        assert_eq!(census_cap(range, None), None);
        assert_eq!(census_cap(CUDA_DEFAULT, Some(200)), Some(200));
    }
}
