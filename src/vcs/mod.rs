//! The only module that talks to git: the base revision of an A/B check and its worktree
//! under the target directory ([`worktree`], [`basetree`]), the commits between two
//! revisions for `bisect` ([`history`]), and the one way git is run ([`git`]).
//!
//! Kept apart from [`crate::build`], which talks to cargo: a worktree is checked out
//! here, then built there like any other tree.

pub mod basetree;
pub mod git;
pub mod history;
pub mod worktree;
