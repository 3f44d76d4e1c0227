//! The words for people of every message: one `Display` arm per variant, with the
//! helpers of the longer ones.

use std::fmt;

use super::*;
use crate::units;

/// How many included files an archive listing names before it counts the rest.
const LISTED_FILES: usize = 8;

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Event::*;
        match self {
            StageStarted { kernel, stage, why } => write!(f, "Profiling `{kernel}`: stage {stage} ({why})"),
            // One line per stage; the source page has no pass column.
            StageDone { kernel, stage, passes, wall_ms, why, .. } => {
                let passes = passes.map(|p| format!("{p} pass(es) per launch, ")).unwrap_or_default();
                let wall = units::seconds(*wall_ms as f64 / 1000.0);
                write!(f, "Profiled `{kernel}`: {stage}, {passes}{wall} ({why})")
            }
            BatchStarted { program, kernels } if kernels.len() == 1 => write!(
                f,
                "Planning the ncu runs of `{}` (`{program}`): its stages merged where that saves a program start",
                kernels[0]
            ),
            BatchStarted { program, kernels } => write!(
                f,
                "Batching {} kernels of `{program}` into one ncu run per stage: {}",
                kernels.len(),
                kernels.join(", ")
            ),
            RunsAlone { kernel, why } => write!(f, "`{kernel}` runs on its own: {why}"),
            FollowUpsPlanned { kernels, why, .. } => {
                write!(f, "Planned the follow-ups of `{kernels}`: {why}")
            }
            FollowUpChosen { kernel, stage, why, batched: true } => {
                write!(f, "Follow-up for `{kernel}`: {stage} ({why})")
            }
            FollowUpChosen { stage, why, batched: false, .. } => write!(f, "Follow-up: {stage} ({why})"),
            WindowFitted { window, why, .. } => write!(f, "Window: {why} ({window})"),
            CensusTaken { .. } | KernelDiscovered { .. } | CensusFallback { .. } => {
                super::runs::census_words(f, self)
            }
            NoLineInfo { .. }
            | HotLinesMissing { .. }
            | LibraryKernels { .. }
            | HintNarrowed { .. }
            | NoTiming { .. }
            | TimingStarted { .. }
            | TimingDone { .. }
            | RoundDone { .. }
            | BaseWorktree { .. } => super::runs::measuring(f, self),
            ProfilePrepared(p) => prepared(f, p),
            // The dry run's result is its commands, each under its `# Stage N` comment,
            // so that stdout alone is the replayable script.
            DryRun(p) => f.write_str(p.script.trim_end()),
            DryRunBatch(b) => dry_run_batch(f, b),
            Analysed { report, kernels, .. } => analysed(f, report, kernels),
            ShardEmpty { .. } | Error { .. } => Ok(()),
            InitWritten(a) => f.write_str(&a.line("Appended")),
            InitSkipped { package, why } => write!(f, "Skipped package `{package}`: {why}"),
            Notice(_) | ProfilesRootCreated { .. } | BuildStarted(_) | BuildDone(_) | IndexWritten(_) => {
                progress(f, self)
            }
            BaselineSaved(_) | ResultsWritten(_) | ArchiveUnpacked(_) | AbStarted(_) | AbMeasured(_) => {
                progress(f, self)
            }
            TimingPlanned(_) | TimingExtended(_) | TimingStopped(_) | MergeReading(_) | LaunchShapes(_) => {
                progress(f, self)
            }
            BisectStarted(_) | BisectChecking(_) | BisectSameBuild(_) | BisectArchiveStarted(_) => {
                progress(f, self)
            }
            RevisionPacked(_) | RevisionNotPacked(_) | FilesRewritten(_) | PageShown(_) => progress(f, self),
            NoKernelsConfigured | InitFinished(_) => progress(f, self),
            Comparison { kernel, explanation, fix_loop, report, .. } => {
                comparison(f, kernel, explanation, fix_loop.as_deref(), report)
            }
            AbComparison(_) | AbArchiveWritten { .. } | InitDryRun(_) => results(f, self),
            DoctorCheck { .. } | DoctorFinished { .. } => results(f, self),
            CheckFinished(c) => check_finished(f, c),
            BisectStep(s) => bisect_step(f, s),
            BisectFinished(b) => bisect_finished(f, b),
            ProfileMerged { from, to, .. } => write!(f, "Copied {} -> {}", from.display(), to.display()),
            MergeFinished(m) => merge_finished(f, m),
            ArchiveWritten(l) => archive_listing(f, l),
            BisectArchiveWritten(b) => write!(f, "{b}"),
        }
    }
}

/// The words of the results of A/B checks, A/B archives, `init --dry-run` and `doctor`.
fn results(f: &mut fmt::Formatter<'_>, e: &Event) -> fmt::Result {
    use Event::*;
    match e {
        AbComparison(a) => match &a.report {
            Some(r) => write!(f, "{}\nComparison: {}", a.line, r.display()),
            None => f.write_str(&a.line),
        },
        AbArchiveWritten { archive, base, .. } => write!(
            f,
            "Archive: {} (A/B: this tree and base {} ({}))\n  check it on the GPU machine: \
             cargo-kprof kprof check --archive {} --workspace-remap DIR",
            archive.display(),
            base.short(),
            base.asked,
            archive.display()
        ),
        InitDryRun(a) => {
            write!(f, "# would be appended to {}:\n{}", a.manifest.display(), a.text.trim_end())
        }
        DoctorCheck { check, status, detail, fix, .. } => {
            write!(f, "{:<8}{check}: {detail}", status.word())?;
            match fix {
                Some(fix) => write!(f, "\n        fix: {fix}"),
                None => Ok(()),
            }
        }
        DoctorFinished { ready, sudo, guide } => {
            doctor_finished(f, *ready, *sudo, guide.map(DoctorGuide::text))
        }
        _ => Ok(()),
    }
}

/// The progress of the drivers, each payload its own line; the notes that are not notices.
fn progress(f: &mut fmt::Formatter<'_>, e: &Event) -> fmt::Result {
    use Event::*;
    match e {
        Notice(n) => write!(f, "{n}"),
        ProfilesRootCreated { root } => f.write_str(&crate::profile::root::profiles_root_created_note(root)),
        BuildStarted(p) => write!(f, "{p}"),
        BuildDone(p) => write!(f, "{p}"),
        IndexWritten(p) => write!(f, "{p}"),
        BaselineSaved(p) => write!(f, "{p}"),
        ResultsWritten(p) => write!(f, "{p}"),
        ArchiveUnpacked(p) => write!(f, "{p}"),
        AbStarted(p) => write!(f, "{p}"),
        AbMeasured(p) => write!(f, "{p}"),
        TimingPlanned(p) => write!(f, "{p}"),
        TimingExtended(p) => write!(f, "{p}"),
        TimingStopped(p) => write!(f, "{p}"),
        MergeReading(p) => write!(f, "{p}"),
        LaunchShapes(p) => write!(f, "{p}"),
        BisectStarted(p) => write!(f, "{p}"),
        BisectChecking(p) => write!(f, "{p}"),
        BisectSameBuild(p) => write!(f, "{p}"),
        BisectArchiveStarted(p) => write!(f, "{p}"),
        RevisionPacked(p) => write!(f, "{p}"),
        RevisionNotPacked(p) => write!(f, "{p}"),
        FilesRewritten(p) => write!(f, "{p}"),
        PageShown(p) => write!(f, "{p}"),
        NoKernelsConfigured => f.write_str(
            "no kernels are configured; `cargo kprof init` writes an entry for each harness case and each \
             other bench, example and bin target, or see docs/reference.md for [[package.metadata.kprof.kernels]]",
        ),
        InitFinished(p) => write!(f, "{p}"),
        _ => Ok(()),
    }
}

impl InitAddition {
    /// Its line for people: `Appended 2 kernel entries to gemm/Cargo.toml (package `gemm`
    /// (depends on cudarc)): hgemm (case hgemm/m=4096 of bench hgemm), app (bin)`.
    pub(super) fn line(&self, verb: &str) -> String {
        let names: Vec<String> = self
            .kernels
            .iter()
            .map(|e| match &e.case {
                Some(case) => format!("{} (case {case} of {})", e.name, e.target),
                None => format!("{} ({})", e.name, e.target.split(' ').next().unwrap_or_default()),
            })
            .collect();
        let why = match self.gpu_signs.as_slice() {
            [] => String::new(),
            signs => format!(" ({})", signs.join(", ")),
        };
        format!(
            "{verb} {} kernel entr{} to {} (package `{}`{why}): {}",
            self.kernels.len(),
            if self.kernels.len() == 1 { "y" } else { "ies" },
            self.manifest.display(),
            self.package,
            names.join(", ")
        )
    }
}

/// A comparison's line, the fix loop under it, and its report.
fn comparison(
    f: &mut fmt::Formatter<'_>,
    kernel: &str,
    explanation: &str,
    fix_loop: Option<&str>,
    report: &std::path::Path,
) -> fmt::Result {
    writeln!(f, "{kernel}: {explanation}")?;
    if let Some(l) = fix_loop {
        writeln!(f, "  the fix loop: {l}")?;
    }
    write!(f, "Comparison: {}", report.display())
}

fn prepared(f: &mut fmt::Formatter<'_>, p: &Prepared) -> fmt::Result {
    // Progress of a real run: where it goes. The ncu commands are in its commands.sh, in
    // the JSON message, and under -v as each runs.
    write!(f, "Profile directory: {}", p.profile_dir.display())
}

fn analysed(f: &mut fmt::Formatter<'_>, report: &std::path::Path, kernels: &[KernelVerdict]) -> fmt::Result {
    for v in kernels {
        match (&v.limiter, &v.advice_headline) {
            // The cause and what to do first: the advice's first sentence carries the numbers.
            (Some(limiter), Some(advice)) => {
                let saving = match v.predicted_saving_pct {
                    Some(p) => format!("fixing it could save up to {} %", crate::units::value(p)),
                    None => "saving not priced".to_string(),
                };
                writeln!(
                    f,
                    "{}: {}, {limiter} ({} confidence, {saving}): {advice}",
                    v.kernel,
                    v.classification.name(),
                    v.confidence.name()
                )?
            }
            _ => writeln!(
                f,
                "{}: {} ({} confidence{})",
                v.kernel,
                v.classification.name(),
                v.confidence.name(),
                v.rule.as_ref().map(|r| format!(", rule {r}")).unwrap_or_default()
            )?,
        }
        for c in &v.instruction_causes {
            let saving = match c.predicted_saving_pct {
                Some(p) => format!("up to {} %", crate::units::value(p)),
                None => "not priced".to_string(),
            };
            writeln!(f, "  in the SASS: {} ({saving})", c.headline)?;
        }
        if let (Some(lib), Some(what)) = (&v.library, &v.library_headline) {
            writeln!(f, "  a {lib} kernel, not your code: {what} (the report has the rest)")?;
        }
    }
    write!(f, "Report: {}", report.display())
}

fn bisect_step(f: &mut fmt::Formatter<'_>, s: &BisectStep) -> fmt::Result {
    let outcome = match (&s.why_skipped, &s.same_build_as) {
        (Some(why), _) => format!("skipped ({why})"),
        (None, Some(other)) => format!("{} (the same build as {other}: no check)", s.outcome.name()),
        (None, None) => format!("{} ({} rounds)", s.outcome.name(), s.rounds),
    };
    let bad = s.first_bad.as_deref().unwrap_or("?");
    // The check's own message has just said each kernel's line.
    write!(
        f,
        "Bisect step {}: {} {}: {outcome}; now between {} and {bad}",
        s.step, s.commit, s.subject, s.last_good
    )
}

fn bisect_finished(f: &mut fmt::Formatter<'_>, b: &BisectFinished) -> fmt::Result {
    let checks = format!("{} check(s), at most {} when every check decides", b.checks, b.check_bound);
    let commit = b.commit.as_deref().unwrap_or("?");
    let what =
        format!("{commit} {} ({})", b.subject.as_deref().unwrap_or(""), b.date.as_deref().unwrap_or(""));
    match b.result {
        BisectResult::FirstBad => write!(f, "bisect: the first regressed revision is {what} [{checks}]")?,
        BisectResult::Range => write!(
            f,
            "bisect: the first regressed revision is between {} and {what}: {} could not be told [{checks}]",
            b.after.as_deref().unwrap_or("--good"),
            b.hidden.join(", ")
        )?,
        BisectResult::NoRegression => {
            write!(f, "bisect: --bad is not slower than --good beyond the tolerance [{checks}]")?
        }
        BisectResult::Undecided => {
            write!(f, "bisect: --bad could not be told from --good: nothing to bisect [{checks}]")?
        }
    }
    for line in &b.evidence {
        write!(f, "\n  {line}")?;
    }
    if let Some(second) = &b.second {
        write!(
            f,
            "\n  {second} is slower still: a second step past the tolerance; follow up with \
             cargo kprof bisect --good {commit} --bad {second}"
        )?;
    }
    for (commit, why) in &b.skipped {
        write!(f, "\n  skipped {commit}: {why}")?;
    }
    write!(f, "\nBisect: {}", b.report.display())
}

fn check_finished(f: &mut fmt::Formatter<'_>, c: &CheckFinished) -> fmt::Result {
    let against = c.base.as_ref().map(|b| format!(" against base {b}")).unwrap_or_default();
    match (c.verdict, c.mode) {
        (CheckVerdict::Regressed, _) => {
            write!(f, "check: regression in {}{against}", c.regressions.join(", "))
        }
        (CheckVerdict::Ambiguous, _) => write!(
            f,
            "check: cannot tell {} from noise{against} ({}); more --rounds narrow the interval",
            c.ambiguous.join(", "),
            if c.exit_code == 0 {
                "passing, as --ambiguous pass asks"
            } else {
                "exit 14; --ambiguous pass lets it pass"
            }
        ),
        (CheckVerdict::Clean, CheckMode::Ab) => {
            write!(f, "check: {} kernel(s){against}, no regression", c.kernels)
        }
        (CheckVerdict::Clean, CheckMode::Baseline) => {
            write!(f, "check: {} kernel(s), no regression beyond tolerance", c.kernels)
        }
    }
}

fn merge_finished(f: &mut fmt::Formatter<'_>, m: &MergeFinished) -> fmt::Result {
    if !m.regressions.is_empty() {
        return write!(f, "merge: regression in {}", m.regressions.join(", "));
    }
    if !m.ambiguous.is_empty() {
        return write!(
            f,
            "merge: the A/B checks could not tell {} from noise (exit 14)",
            m.ambiguous.join(", ")
        );
    }
    write!(f, "merge: {} profile(s) from {} shard(s)", m.profiles, m.shards.len())?;
    match m.comparisons {
        0 => Ok(()),
        n => write!(f, ", {n} comparison(s), no regression beyond tolerance"),
    }
}

fn archive_listing(f: &mut fmt::Formatter<'_>, l: &ArchiveListing) -> fmt::Result {
    write!(f, "Archive: {}", l.archive.display())?;
    for e in &l.executables {
        write!(f, "\n  executable     {} ({} {} of {})", e.file, e.kind, e.name, e.package)?;
    }
    write!(f, "\n  sources        {} CUDA source file(s)", l.sources)?;
    write!(f, "\n  dependencies   {} dependency source file(s) (deps/)", l.dependency_sources)?;
    for p in &l.dependency_sources_missing {
        write!(f, "\n  not found      {} (named by the line info; its lines show no text)", p.display())?;
    }
    for r in &l.dependency_sources_refused {
        write!(f, "\n  left out       {}: {} (its lines show no text)", r.file.display(), r.why)?;
    }
    for p in l.included.iter().take(LISTED_FILES) {
        write!(f, "\n  included       {}", p.display())?;
    }
    if l.included.len() > LISTED_FILES {
        write!(
            f,
            "\n  included       ... and {} more ({} in all; the list is in kprof-archive.json)",
            l.included.len() - LISTED_FILES,
            l.included.len()
        )?;
    }
    for p in &l.build_outputs {
        write!(f, "\n  build output   {}", p.display())?;
    }
    for s in &l.skipped_out_dirs {
        write!(
            f,
            "\n  not packed     OUT_DIR of {}: {} lies outside the workspace",
            s.package,
            s.out_dir.display()
        )?;
    }
    for file in l.launchers.iter().flat_map(|ls| ls.files.iter().map(move |file| (ls.shards, file))) {
        let (shards, LauncherFile { kind, file }) = file;
        write!(f, "\n  launcher       {} ({}, {shards} shard(s))", file.display(), kind.name())?;
    }
    Ok(())
}

fn doctor_finished(f: &mut fmt::Formatter<'_>, ready: bool, sudo: bool, guide: Option<&str>) -> fmt::Result {
    let mut first = true;
    if let Some(guide) = guide {
        write!(f, "\n{guide}")?;
        first = false;
    }
    if ready {
        if !first {
            f.write_str("\n")?;
        }
        write!(f, "profiling can work here{}", if sudo { " (through sudo -n)" } else { "" })?;
    }
    Ok(())
}

impl fmt::Display for KernelList {
    /// The table: one row per kernel, columns padded to their widest cell.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header = ["INDEX", "PACKAGE", "TARGET", "KERNEL", "ARGS"];
        let rows: Vec<[String; 5]> = self
            .kernels
            .iter()
            .map(|k| {
                [
                    k.index.to_string(),
                    k.package.clone(),
                    k.target.clone(),
                    k.name.clone(),
                    k.quoted_args.clone(),
                ]
            })
            .collect();
        let mut widths = header.map(str::len);
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.len());
            }
        }
        let line = |cells: &[&str]| {
            let mut s = String::new();
            for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
                if i + 1 == cells.len() {
                    s.push_str(cell);
                } else {
                    s.push_str(&format!("{cell:<w$}  "));
                }
            }
            s.trim_end().to_string()
        };
        f.write_str(&line(&header))?;
        for row in &rows {
            let cells: Vec<&str> = row.iter().map(String::as_str).collect();
            write!(f, "\n{}", line(&cells))?;
        }
        Ok(())
    }
}

/// A dry run's batched commands, each under a `# Stage` comment, as the batch's own
/// `commands.sh` will hold them.
fn dry_run_batch(f: &mut std::fmt::Formatter<'_>, b: &super::BatchPlanned) -> std::fmt::Result {
    let seconds = |ms: Option<u64>| match ms {
        Some(ms) => format!("about {:.1} s", ms as f64 / 1000.0),
        None => "cost unknown".to_string(),
    };
    for (i, s) in b.stages.iter().enumerate() {
        if i > 0 {
            f.write_str("\n")?;
        }
        let estimate = seconds(b.estimates_ms.get(i).copied().flatten());
        write!(f, "# Stage {} (batched: {}; {estimate})\n{}", s.stage, b.kernels.join(" + "), s.command)?;
    }
    if b.follow_up {
        let then = match b.follow_ups_ms {
            Some(0) => {
                "then only a follow-up that basic's metrics call for and this run did not collect".to_string()
            }
            ms => format!(
                "then the follow-ups basic's metrics call for, as the planner runs them ({})",
                seconds(ms)
            ),
        };
        write!(f, "\n# {then}")?;
    }
    if !b.estimate_note.is_empty() {
        write!(
            f,
            "\n# Cost: {}; {}",
            seconds(b.total_ms).replace("cost unknown", "total unknown"),
            b.estimate_note
        )?;
    }
    Ok(())
}
