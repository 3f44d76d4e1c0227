//! Empty: cargo needs a target, and this package exists only for the kprof configuration
//! of the Python programs beside this folder.
