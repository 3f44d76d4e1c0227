//! The vocabulary every layer shares: one type per concept.
//!
//! [`stage`] names the profiling stages and how a selection of them is written;
//! [`filter`] is the ncu kernel filter; [`kinds`] the runtime, target kind, clock
//! control and privilege; [`verdict`] the bottleneck class and confidence; [`names`] what
//! kernel and environment variable names may hold; [`partition`] how a selection is split
//! into shards; [`ab`] the words of an A/B check against a git revision; [`timing`] a
//! harness timing of one case; [`census`] a plain program's census: its bounds, its
//! breakdown and the kernels picked from it.

pub mod ab;
pub mod census;
pub mod filter;
pub mod kinds;
pub mod names;
pub mod partition;
pub mod stage;
pub mod timing;
pub mod verdict;
pub mod window;
