//! Signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT are caught on a thread
//! ([`install_signal_handlers`]). While a run is in progress ([`defer_signals`]:
//! profiling, timing, building), the first one is only recorded: the runner
//! ([`super::run`]) kills the running child's process group within 20 ms, and the pipeline
//! writes `run_manifest.yaml` and ends with 128 + the signal's number. Otherwise (`list`,
//! `report`, a second signal) kprof kills the running child's group, if any, and exits at
//! once with that code.
//!
//! The state is process-wide (one set of handlers, one list of running groups), so it
//! lives here apart from the builder and the runner in the parent module, which lists
//! each child's group while it runs ([`RunningGroup`]).

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use crate::error::{ExitCode, Failure, Signal};

/// The number of the first signal received, 0 while none has been.
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// How many [`SignalDeferral`]s are alive: while any is, the first signal is only recorded.
static DEFERRED: AtomicUsize = AtomicUsize::new(0);
/// Folders being built that a signal ending the process removes first: the staging folders
/// of an import or a merge, which would otherwise be left half-written.
static STAGING: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());
/// The process groups of the running children (one per worker when several GPUs run at
/// once).
static RUNNING_GROUPS: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// Catches SIGINT, SIGTERM, SIGHUP and SIGQUIT for the rest of the process (see the
/// module's documentation). Called once, first thing; a second call does nothing.
pub fn install_signal_handlers() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let numbers: Vec<i32> = Signal::ALL.iter().map(|s| s.number()).collect();
        // Without handlers (an unusual platform) signals keep their default action.
        let Ok(mut signals) = signal_hook::iterator::Signals::new(numbers) else { return };
        std::thread::spawn(move || {
            for number in signals.forever() {
                let first = RECEIVED.compare_exchange(0, number, Ordering::SeqCst, Ordering::SeqCst).is_ok();
                if first && DEFERRED.load(Ordering::SeqCst) > 0 {
                    // The main thread stops the child and records the ending.
                    continue;
                }
                kill_running_group();
                remove_staging();
                let code = Signal::from_number(RECEIVED.load(Ordering::SeqCst))
                    .map_or(128 + number, |s| ExitCode::Interrupted(s).code());
                std::process::exit(code);
            }
        });
    });
}

/// Has a signal that ends the process remove `folder` (a staging folder) first, until
/// [`keep_on_signal`] is called for it.
pub fn remove_on_signal(folder: &std::path::Path) {
    if let Ok(mut list) = STAGING.lock() {
        list.push(folder.to_path_buf());
    }
}

/// Undoes one [`remove_on_signal`] of `folder` (the latest): it was renamed into place or
/// removed, or it was listed for a folder that turned out to exist already.
pub fn keep_on_signal(folder: &std::path::Path) {
    if let Ok(mut list) = STAGING.lock() {
        if let Some(i) = list.iter().rposition(|f| f == folder) {
            list.remove(i);
        }
    }
}

/// Removes the folders [`remove_on_signal`] listed, as the process ends on a signal. The
/// main thread may still be writing into one (an import fills its folder file by file),
/// so a removal that finds a new file is tried again, a few times.
fn remove_staging() {
    if let Ok(list) = STAGING.lock() {
        for folder in list.iter() {
            for _ in 0..20 {
                if std::fs::remove_dir_all(folder).is_ok() || !folder.exists() {
                    break;
                }
            }
        }
    }
}

/// While the returned value lives, the first signal is only recorded (see
/// [`pending_signal`]) and the running child is stopped by [`super::run`]: for work that must
/// record how it ended.
pub fn defer_signals() -> SignalDeferral {
    DEFERRED.fetch_add(1, Ordering::SeqCst);
    SignalDeferral(())
}

/// See [`defer_signals`].
#[must_use = "signals are deferred only while this lives"]
pub struct SignalDeferral(());

impl Drop for SignalDeferral {
    fn drop(&mut self) {
        DEFERRED.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The signal received so far, if any.
pub fn pending_signal() -> Option<Signal> {
    Signal::from_number(RECEIVED.load(Ordering::SeqCst))
}

/// `Err` with the exit code of the signal received, if one was: for the boundaries of a
/// deferred run (between kernels, before an analysis).
pub fn check_signal(during: &str) -> Result<(), Failure> {
    match pending_signal() {
        Some(s) => Err(interrupted(s, during)),
        None => Ok(()),
    }
}

/// The failure of a run stopped by `signal` while doing `during`.
pub fn interrupted(signal: Signal, during: &str) -> Failure {
    Failure::new(
        ExitCode::Interrupted(signal),
        format!("stopped by {signal} {during}; what was written stays"),
    )
}

fn kill_running_group() {
    let groups = RUNNING_GROUPS.lock().map(|g| g.clone()).unwrap_or_default();
    for group in groups {
        #[cfg(unix)]
        if group > 0 {
            // SAFETY: killpg only sends signals. SIGTERM first for a group running as
            // another user (sudo relays it; our SIGKILL cannot reach root's processes).
            unsafe {
                libc::killpg(group, libc::SIGTERM);
                libc::killpg(group, libc::SIGKILL);
            }
        }
        #[cfg(not(unix))]
        let _ = group;
    }
}

/// A running child's process group, listed for the signal handler while this lives.
pub(super) struct RunningGroup(i32);

impl RunningGroup {
    /// Lists `group` until the returned value is dropped.
    pub(super) fn register(group: i32) -> RunningGroup {
        if let Ok(mut g) = RUNNING_GROUPS.lock() {
            g.push(group);
        }
        RunningGroup(group)
    }
}

impl Drop for RunningGroup {
    fn drop(&mut self) {
        if let Ok(mut g) = RUNNING_GROUPS.lock() {
            g.retain(|x| *x != self.0);
        }
    }
}
