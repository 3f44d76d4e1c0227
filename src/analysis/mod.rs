//! Analysis: from ncu's pages to a metrics summary, a bottleneck verdict with its evidence,
//! and source hotspots.
//!
//! Everything here is pure: parsed pages in, typed results out, no I/O and no processes.
//! [`summary`] names, in one table, the ncu metric behind every summary field; [`rules`]
//! evaluates the YAML rules (data, not code) over those fields; [`hotspots`] ranks source
//! lines and their SASS by warp samples.

pub mod hotspots;
pub mod rules;
pub mod summary;
