//! Rendering an analysis for people: `final_report.md` ([`markdown`]), the PNG summary
//! ([`visual`]) and the profiles index ([`index`]). Nothing here decides anything: the
//! numbers and verdicts come from [`crate::analyze`].

pub mod index;
pub mod markdown;
pub mod visual;
