//! `cargo kprof merge`: the profile roots of shards into one directory with one index.
//!
//! Each source is a shard's profile root (it has `index.json`), or the
//! `--workspace-remap` directory of a shard's archive run, whose `workspace/profile` is
//! one. Every profile directory a source's index lists is copied into the output
//! directory (new or empty) and never over anything: a profile id seen twice, and an
//! output directory inside a source (or a source inside it), are refused before anything
//! is copied. The output is built in a hidden folder beside it and renamed into place
//! when complete, so a merge that fails leaves nothing behind. The profiles must have been taken alike (the same GPU, ncu
//! version and clock control, read as `compare` reads them) unless forced, and `count:`
//! or `hash:` shards that leave indices out are named. The comparisons `check` left in
//! the profiles are read back ([`read_back`]), so that the merged shards give one verdict
//! ([`run`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::compare::gate::{self, GateResult};
use crate::error::{ExitCode, Failure};
use crate::events::{self, About, Event, IndexWritten, MergeReading};
use crate::model::ab::AbVerdict;
use crate::model::partition::Partition;
use crate::profile::fs::copy_tree_new;
use crate::profile::root::{index_json_path, profiles_root};
use crate::profile::ProfileDir;
use crate::report::comparison;
use crate::report::index::{self, Listing, MergeRecord, MergedShard};
use crate::shell::Shell;

mod read_back;

pub use read_back::AbRecord;
use read_back::{ab_record, comparison, condition_mismatches, coverage};

/// The `--workspace-remap` layout: the unpacked workspace's folder.
const REMAPPED_WORKSPACE: &str = "workspace";

/// One shard's profile root, as found.
#[derive(Debug, Clone)]
pub struct Source {
    /// The directory given.
    pub given: PathBuf,
    /// The profile root read: `given`, or `given/workspace/profile`.
    pub root: PathBuf,
    /// Whether `given` was a `--workspace-remap` directory.
    pub remapped: bool,
    /// Its `index.json`.
    pub listing: Listing,
}

/// A profile copied.
#[derive(Debug, Clone)]
pub struct Copied {
    /// Its id (directory name).
    pub id: String,
    /// Where it was.
    pub from: PathBuf,
    /// Where it is now.
    pub to: PathBuf,
    /// The shard it came from, when its source was one.
    pub partition: Option<Partition>,
}

/// What a merge did.
#[derive(Debug, Clone)]
pub struct Merged {
    /// The sources, in the order given.
    pub sources: Vec<Source>,
    /// The profiles copied, source by source.
    pub copied: Vec<Copied>,
    /// What the merged index records.
    pub record: MergeRecord,
    /// The comparisons the merged profiles carry (`check`'s), one per profile.
    pub results: Vec<GateResult>,
    /// The A/B verdicts the merged profiles carry (`check --base`'s), one per profile.
    pub ab: Vec<AbRecord>,
    /// Warnings for people: missing or repeated shards, mixed partitions.
    pub warnings: Vec<String>,
}

/// Finds the profile root of `dir`: itself when it has `index.json`, else its
/// `workspace/profile` (a `--workspace-remap` directory). Neither is exit 12.
pub fn locate(dir: &Path) -> Result<Source> {
    let remapped_root = profiles_root(&dir.join(REMAPPED_WORKSPACE));
    for (root, remapped) in [(dir.to_path_buf(), false), (remapped_root.clone(), true)] {
        if let Some(listing) = index::read(&root)? {
            check_listing(&root, &listing)?;
            return Ok(Source { given: dir.to_path_buf(), root, remapped, listing });
        }
    }
    Err(Failure::new(
        ExitCode::Filesystem,
        format!(
            "{}: no profile index here ({} and {} are missing)",
            dir.display(),
            index_json_path(dir).display(),
            index_json_path(&remapped_root).display()
        ),
    )
    .help("give a shard's profile root (`profile/`) or the --workspace-remap directory of its archive run")
    .into())
}

/// Refuses an index that kprof did not write as it is: another schema, or a shard that
/// is not one (`7` of `2`, or more than
/// [`MAX_SHARDS`](crate::model::partition::MAX_SHARDS) shards). Exit 12, as for any
/// damaged index.
fn check_listing(root: &Path, listing: &Listing) -> Result<(), Failure> {
    let path = index_json_path(root);
    let damaged = |what: String| {
        Failure::new(ExitCode::Filesystem, format!("{}: {what}", path.display()))
            .help("merge the profile roots as the shards' runs wrote them, or run the shard again")
    };
    match listing.schema_version {
        Some(v) if v == u64::from(index::INDEX_SCHEMA_VERSION) => {}
        Some(v) => {
            return Err(damaged(format!(
                "schema_version {v}; this cargo-kprof reads index schema_version {}",
                index::INDEX_SCHEMA_VERSION
            ))
            .help("merge with the cargo-kprof version that wrote the shards"))
        }
        None => return Err(damaged("no schema_version: not an index cargo kprof wrote".into())),
    }
    if let Some(p) = listing.partition {
        p.check().map_err(|why| damaged(format!("`partition` {p}: {why}")))?;
    }
    Ok(())
}

/// `cargo kprof merge`: merges, says what was read and copied, carries each comparison
/// over, and returns the one verdict of the merged shards.
pub fn run(dirs: &[PathBuf], out: &Path, force: bool, shell: &Shell) -> Result<ExitCode> {
    let merged = merge(dirs, out, force)?;
    for s in &merged.sources {
        shell.emit(&Event::MergeReading(MergeReading {
            root: s.root.clone(),
            partition: s.listing.partition,
            remapped_from: s.remapped.then(|| s.given.clone()),
        }));
    }
    for w in &merged.warnings {
        shell.emit(&Event::warning(About::Merge, w.clone()));
    }
    for f in &merged.record.forced {
        shell.emit(&Event::warning(About::Forced, format!("merged with --force: {f}")));
    }
    for c in &merged.copied {
        shell.emit(&Event::ProfileMerged {
            profile: c.id.clone(),
            from: c.from.clone(),
            to: c.to.clone(),
            partition: c.partition.map(|p| p.to_string()),
        });
    }
    shell.emit(&Event::IndexWritten(IndexWritten { index: crate::profile::root::index_md_path(out) }));
    carry_over(&merged, shell)?;
    let finished = finished(&merged, out);
    shell.emit(&Event::MergeFinished(finished.clone()));
    Ok(if !finished.regressions.is_empty() {
        ExitCode::Regression
    } else if !finished.ambiguous.is_empty() {
        ExitCode::Ambiguous
    } else {
        gate::exit_code(&merged.results)
    })
}

/// The comparisons the merged profiles carry, said again and summed up for the CI step.
fn carry_over(merged: &Merged, shell: &Shell) -> Result<()> {
    for r in &merged.results {
        super::check::report_comparison(r, shell);
    }
    for a in &merged.ab {
        shell.emit(&Event::AbComparison(Box::new(events::AbComparison {
            schema_version: events::MESSAGES_SCHEMA_VERSION,
            kernel: a.kernel.clone(),
            verdict: a.verdict,
            decided_by: a.decided_by.clone(),
            time: None,
            counters: None,
            hotspot: a.hotspot.clone(),
            line: a.line.clone(),
            profile: a.profile.clone(),
            head_profile: a.profile.clone(),
            base_profile: None,
            report: None,
        })));
    }
    if !merged.ab.is_empty() {
        let mut md = format!("## cargo kprof merge: {} A/B verdict(s)\n\n", merged.ab.len());
        for a in &merged.ab {
            md.push_str(&format!("- {}\n", crate::report::md::one_line(&a.line)));
        }
        gate::write_step_summary(&(md + "\n"))?;
    }
    if !merged.results.is_empty() {
        let tolerance = merged.results.iter().map(|r| r.comparison.tolerance_pct).fold(0.0, f64::max);
        gate::write_step_summary(&comparison::step_summary(&merged.results, tolerance))?;
    }
    Ok(())
}

/// The merge's closing message.
fn finished(merged: &Merged, out: &Path) -> events::MergeFinished {
    let ab_of = |v: AbVerdict| -> Vec<String> {
        merged.ab.iter().filter(|a| a.verdict == v).map(|a| a.kernel.clone()).collect()
    };
    let mut regressions: Vec<String> = merged
        .results
        .iter()
        .filter(|r| r.comparison.regression)
        .map(|r| r.comparison.current.identity.kernel.clone())
        .collect();
    regressions.extend(ab_of(AbVerdict::Regressed));
    events::MergeFinished {
        output_dir: out.to_path_buf(),
        profiles: merged.copied.len(),
        shards: merged
            .sources
            .iter()
            .map(|s| s.listing.partition.map(|p| p.to_string()).unwrap_or_else(|| "-".into()))
            .collect(),
        missing_shards: merged.record.missing_shards.clone(),
        forced: merged.record.forced.clone(),
        comparisons: merged.results.len() + merged.ab.len(),
        regressions,
        ambiguous: ab_of(AbVerdict::Ambiguous),
    }
}

/// A profile to copy: its id, its directory, and the shard it came from.
pub(super) type Planned = (String, PathBuf, Option<Partition>);

/// Merges the shards `dirs` into `out` (see the module's documentation).
pub fn merge(dirs: &[PathBuf], out: &Path, force: bool) -> Result<Merged> {
    let sources = dirs.iter().map(|d| locate(d)).collect::<Result<Vec<_>>>()?;
    crate::profile::output::check_output_dir(out, false)?;
    check_apart(&sources, out)?;
    let plan = plan_copies(&sources)?;
    let forced = condition_mismatches(&plan);
    if !forced.is_empty() && !force {
        let mut f = Failure::new(
            ExitCode::Config,
            "refusing to merge: the profiles were not taken alike, so their numbers do not compare",
        );
        for m in &forced {
            f = f.help(m.clone());
        }
        return Err(f.help("pass --force to merge anyway; the index then says so").into());
    }
    let (missing_shards, warnings) = coverage(&sources);
    let record = MergeRecord {
        shards: sources
            .iter()
            .map(|s| MergedShard {
                source: s.given.clone(),
                root: s.root.clone(),
                partition: s.listing.partition,
                profiles: s.listing.profile_ids(),
            })
            .collect(),
        missing_shards,
        forced: if force { forced } else { Vec::new() },
    };
    // The comparisons are read from the sources before anything is written: a damaged one
    // refuses the merge with no output in place (a retry would find it "not empty").
    let mut results = Vec::new();
    let mut ab = Vec::new();
    for (id, from, _) in &plan {
        let to = out.join(id);
        if let Some(mut r) = comparison(from)? {
            r.report = ProfileDir::at(&to).regression_report_path();
            r.profile = to.clone();
            results.push(r);
        }
        if let Some(mut a) = ab_record(from)? {
            a.profile = to;
            ab.push(a);
        }
    }
    let copied = write_output(out, plan, &record)?;
    Ok(Merged { sources, copied, record, results, ab, warnings })
}

/// Every profile the sources list, each id once and each a plain directory of its root:
/// checked before anything is copied.
fn plan_copies(sources: &[Source]) -> Result<Vec<Planned>> {
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut plan = Vec::new();
    for s in sources {
        for id in s.listing.profile_ids() {
            if !crate::model::names::is_plain_dir_name(&id) {
                return Err(Failure::new(
                    ExitCode::Filesystem,
                    format!("{} lists {id:?}, which is not a profile directory's name", s.root.display()),
                )
                .help("the index is damaged: rewrite it with a run in that root, or leave the shard out")
                .into());
            }
            let from = s.root.join(&id);
            if let Some(first) = seen.get(&id) {
                return Err(Failure::new(
                    ExitCode::Filesystem,
                    format!(
                        "profile `{id}` is in two shards: {} and {}; one would overwrite the other",
                        first.display(),
                        from.display()
                    ),
                )
                .help("merge each shard once; a profile directory taken twice must be left out or renamed")
                .into());
            }
            if !std::fs::symlink_metadata(&from).is_ok_and(|m| m.is_dir()) {
                return Err(Failure::new(
                    ExitCode::Filesystem,
                    format!("{} lists `{id}`, but {} is not a directory", s.root.display(), from.display()),
                )
                .help("copy the shard's whole profile root, or leave the shard out")
                .into());
            }
            seen.insert(id.clone(), from.clone());
            plan.push((id, from, s.listing.partition));
        }
    }
    Ok(plan)
}

/// Refuses an output directory inside a source (the copy would copy itself, folder
/// inside folder, until names grow too long), or a source inside the output directory;
/// both as they resolve on disk, through links and `..`.
fn check_apart(sources: &[Source], out: &Path) -> Result<(), Failure> {
    let target = resolved(out);
    for s in sources {
        let source = resolved(&s.given);
        let why = if target.starts_with(&source) {
            format!(
                "--output-dir {} lies inside the merge source {}: the merge would copy its output into itself",
                out.display(),
                s.given.display()
            )
        } else if source.starts_with(&target) {
            format!(
                "the merge source {} lies inside --output-dir {}: the merge would copy it into itself",
                s.given.display(),
                out.display()
            )
        } else {
            continue;
        };
        return Err(Failure::new(ExitCode::Filesystem, why)
            .help("pass an --output-dir outside every source, e.g. a new folder beside the shards"));
    }
    Ok(())
}

/// `path` as it resolves on disk: its nearest existing ancestor with links resolved, then
/// the components that do not exist yet, `..` taken lexically.
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for c in rest.iter().rev() {
                match c {
                    std::path::Component::ParentDir => {
                        out.pop();
                    }
                    std::path::Component::CurDir => {}
                    c => out.push(c),
                }
            }
            return out;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

/// Copies the planned profiles and writes the merged index in a new hidden folder beside
/// `out`, then renames it to `out` (new, or an empty folder): a merge that fails (a link
/// in a later shard, a full disk) leaves nothing, not a half-merged output without an
/// index that would block the corrected command. The profiles are named at their place
/// in `out`.
fn write_output(out: &Path, plan: Vec<Planned>, record: &MergeRecord) -> Result<Vec<Copied>> {
    use crate::profile::output::{create_missing_dirs, create_staging_beside, remove_created_dirs};
    let target = std::path::absolute(out).with_context(|| format!("could not resolve {}", out.display()))?;
    let created = match target.parent() {
        Some(parent) => create_missing_dirs(parent)?,
        None => Vec::new(),
    };
    let staging = match create_staging_beside(&target, "merging") {
        Ok(s) => s,
        Err(e) => {
            remove_created_dirs(&created);
            return Err(e.into());
        }
    };
    let built = (|| -> Result<Vec<Copied>> {
        let mut copied = Vec::new();
        for (id, from, partition) in plan {
            copy_tree_new(&from, &staging.join(&id))?;
            copied.push(Copied { to: out.join(&id), id, from, partition });
        }
        index::write_merged(&staging, record)?;
        crate::profile::output::rename_into_place(&staging, &target)?;
        Ok(copied)
    })();
    if built.is_err() {
        std::fs::remove_dir_all(&staging).ok();
        remove_created_dirs(&created);
    }
    built
}
