//! Why a stage runs, as a value: the stage loop decides on the variant (a follow-up is
//! written to `commands.sh` as "chosen", a retry as SASS only) instead of re-reading its
//! own words, and the words are written once, in `Display`. They land in
//! `run_manifest.yaml`'s `why`, the `commands.sh` comments and the progress lines, so
//! they are part of kprof's output and do not change.

use std::fmt;

use crate::process::shell_comment;

/// Why a stage runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// `auto`: basic always runs first.
    AutoFirst,
    /// `auto`: the source stage, for the hot lines.
    AutoHotLines,
    /// The stage was asked for (`--stage`, the manifests).
    Requested,
    /// The follow-up the rules chose from basic's metrics for one kernel.
    FollowUp(FollowUpWhy),
    /// One batched run of the follow-ups the rules chose for several kernels: each
    /// kernel's name, and why.
    FollowUps(Vec<(String, FollowUpWhy)>),
    /// Discovery chose this kernel (its function name).
    ChosenByDiscovery(String),
    /// Again, after the window was fitted to the census (why it was fitted).
    WindowFitted(String),
    /// Again, with the filter narrowed to this one kernel.
    NarrowedTo(String),
    /// Again, printing SASS only: the kernel has no line info.
    SassOnly,
    /// The durations-only pass that counts every kernel's launches.
    Census,
    /// The census taken by tracing the program instead (kprof's CUPTI tracer, no ncu).
    Traced,
    /// The batched run of a stage (as announced).
    Batched(Box<Reason>),
    /// The batched run of a stage, as one member's manifest records it.
    BatchedWith {
        /// Why the stage runs.
        inner: Box<Reason>,
        /// How many kernels the run served.
        kernels: usize,
    },
}

/// Why the rules chose a follow-up stage: the rule that decided (`limiter
/// \`l1-shared-bandwidth\` (memory-bound)`), and the conditions and values it read. Shown
/// as `rule: detail`; a progress line's brief shows the rule alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowUpWhy {
    /// What decided, as the brief shows it.
    pub rule: String,
    /// The conditions and the values they read; empty when there are none.
    pub detail: String,
}

impl fmt::Display for FollowUpWhy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.detail.is_empty() {
            true => f.write_str(&self.rule),
            false => write!(f, "{}: {}", self.rule, self.detail),
        }
    }
}

/// The follow-ups of several kernels, as one run's reason says them: `` `a`: why; `b`: why ``.
struct PerKernel<'a>(&'a [(String, FollowUpWhy)]);

impl fmt::Display for PerKernel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, (kernel, why)) in self.0.iter().enumerate() {
            if n > 0 {
                f.write_str("; ")?;
            }
            write!(f, "`{kernel}`: {why}")?;
        }
        Ok(())
    }
}

impl Reason {
    /// The reason of the stages a plan names: `auto`'s basic and hot lines, or what was
    /// asked for.
    pub fn first(auto: bool, collection: &crate::ncu::StageCollection) -> Reason {
        match (auto, collection) {
            (true, crate::ncu::StageCollection::Named(crate::model::stage::Stage::Source)) => {
                Reason::AutoHotLines
            }
            (true, _) => Reason::AutoFirst,
            (false, _) => Reason::Requested,
        }
    }

    /// The reason in brief, for the one line a stage gets when it ends: a follow-up's
    /// rule without its conditions and values, a retry without its explanation.
    pub fn brief(&self) -> String {
        match self {
            Reason::FollowUp(why) => format!("auto follow-up: {}", why.rule),
            Reason::FollowUps(_) => "auto follow-ups, chosen per kernel".to_string(),
            Reason::WindowFitted(_) => "again, window fitted".to_string(),
            Reason::Census => "census of every kernel's launches".to_string(),
            Reason::Traced => "census by tracing".to_string(),
            Reason::Batched(inner) => format!("{}; batched", inner.brief()),
            Reason::BatchedWith { inner, kernels } => {
                format!("{}; batched with {kernels} kernel(s)", inner.brief())
            }
            other => other.to_string(),
        }
    }

    /// What `commands.sh` says of a stage command written when the stage runs, after
    /// `# Stage N: `: a chosen follow-up names its reason, a retry says what changed.
    pub fn script_comment(&self, stage: &str) -> String {
        match self {
            Reason::FollowUp(why) => format!("{stage}, chosen: {}", shell_comment(&why.to_string())),
            Reason::FollowUps(whys) => {
                format!("{stage}, chosen: {}", shell_comment(&PerKernel(whys).to_string()))
            }
            Reason::SassOnly => format!("{stage} again, SASS only (no line info)"),
            other => format!("{stage} ({})", shell_comment(&other.to_string())),
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::AutoFirst => f.write_str("auto: always first"),
            Reason::AutoHotLines => f.write_str("auto: the hot lines"),
            Reason::Requested => f.write_str("requested"),
            Reason::FollowUp(why) => write!(f, "auto follow-up: {why}"),
            Reason::FollowUps(whys) => write!(f, "auto follow-up: {}", PerKernel(whys)),
            Reason::ChosenByDiscovery(kernel) => write!(f, "for `{kernel}`, chosen by discovery"),
            Reason::WindowFitted(why) => write!(f, "again, window fitted: {why}"),
            Reason::NarrowedTo(kernel) => write!(f, "again, for `{kernel}` only"),
            Reason::SassOnly => f.write_str("again, SASS only: no line info"),
            Reason::Census => f.write_str("census: count every kernel's launches (durations only)"),
            Reason::Traced => {
                f.write_str("census: every kernel launch traced as the program runs (CUPTI, no ncu)")
            }
            Reason::Batched(inner) => write!(f, "{inner}; batched"),
            Reason::BatchedWith { inner, kernels } => {
                write!(f, "{inner}; batched with {kernels} kernel(s) of this program")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(rule: &str, detail: &str) -> FollowUpWhy {
        FollowUpWhy { rule: rule.into(), detail: detail.into() }
    }

    #[test]
    fn reasons_read_as_the_manifest_records_them() {
        use crate::model::stage::Stage;
        use crate::ncu::StageCollection::Named;
        assert_eq!(Reason::first(true, &Named(Stage::Basic)).to_string(), "auto: always first");
        assert_eq!(Reason::first(true, &Named(Stage::Source)).to_string(), "auto: the hot lines");
        assert_eq!(Reason::first(false, &Named(Stage::Source)).to_string(), "requested");
        let follow = Reason::FollowUp(why("rule `x` (memory)", "y"));
        assert_eq!(follow.to_string(), "auto follow-up: rule `x` (memory): y");
        let batched = Reason::BatchedWith { inner: Box::new(follow.clone()), kernels: 3 };
        assert_eq!(
            batched.to_string(),
            "auto follow-up: rule `x` (memory): y; batched with 3 kernel(s) of this program"
        );
        assert_eq!(Reason::Batched(Box::new(Reason::AutoFirst)).to_string(), "auto: always first; batched");
        assert_eq!(Reason::NarrowedTo("k".into()).to_string(), "again, for `k` only");
    }

    #[test]
    fn briefs_keep_the_rule_and_drop_its_numbers() {
        let follow = Reason::FollowUp(why(
            "limiter `l1-shared-bandwidth` (memory-bound)",
            "l1tex_throughput_elapsed_pct >= 60 (l1tex = 81.39)",
        ));
        assert_eq!(follow.brief(), "auto follow-up: limiter `l1-shared-bandwidth` (memory-bound)");
        let per_kernel = Reason::FollowUps(vec![
            ("a".into(), why("rule `x` (memory)", "y")),
            ("b".into(), why("rule `z`", "w")),
        ]);
        assert_eq!(per_kernel.to_string(), "auto follow-up: `a`: rule `x` (memory): y; `b`: rule `z`: w");
        let batched = Reason::Batched(Box::new(per_kernel));
        assert_eq!(batched.brief(), "auto follow-ups, chosen per kernel; batched");
        // A rule with nothing after it shows alone, in full and in brief.
        let alone = Reason::FollowUp(why("basic gave no metrics for the filtered kernel", ""));
        assert_eq!(alone.to_string(), "auto follow-up: basic gave no metrics for the filtered kernel");
        assert_eq!(alone.brief(), "auto follow-up: basic gave no metrics for the filtered kernel");
        assert_eq!(Reason::AutoHotLines.brief(), "auto: the hot lines");
    }

    #[test]
    fn the_script_names_a_chosen_follow_up_and_a_sass_retry() {
        assert_eq!(Reason::FollowUp(why("a\tb", "")).script_comment("memory"), "memory, chosen: a\\tb");
        assert_eq!(Reason::SassOnly.script_comment("source"), "source again, SASS only (no line info)");
        assert_eq!(
            Reason::ChosenByDiscovery("k".into()).script_comment("basic"),
            "basic (for `k`, chosen by discovery)"
        );
    }
}
