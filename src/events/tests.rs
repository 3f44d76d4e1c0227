//! Every message held to its definition in `contract/messages.schema.json`.

use super::*;
use serde_json::Value;

const SCHEMA: &str = include_str!("../../contract/messages.schema.json");

/// Whether `v` fits the JSON Schema `schema` (the subset the schema file uses: type,
/// const, enum, required, properties, additionalProperties, items, oneOf); the reasons
/// why not otherwise.
fn fits(v: &Value, schema: &Value, at: &str) -> Result<(), String> {
    if let Some(options) = schema.get("oneOf").and_then(Value::as_array) {
        let errors: Vec<String> = options.iter().filter_map(|o| fits(v, o, at).err()).collect();
        return if errors.len() < options.len() { Ok(()) } else { Err(errors.join("; ")) };
    }
    if let Some(c) = schema.get("const") {
        return if v == c { Ok(()) } else { Err(format!("{at}: {v} is not {c}")) };
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        return if e.contains(v) { Ok(()) } else { Err(format!("{at}: {v} is none of {e:?}")) };
    }
    let type_of = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    if let Some(t) = schema.get("type") {
        let allowed: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let ty = type_of(v);
        let fits_type = allowed.contains(&ty) || (ty == "integer" && allowed.contains(&"number"));
        if !fits_type {
            return Err(format!("{at}: a {ty}, not {allowed:?}"));
        }
    }
    if let (Some(items), Some(a)) = (schema.get("items"), v.as_array()) {
        for (i, x) in a.iter().enumerate() {
            fits(x, items, &format!("{at}[{i}]"))?;
        }
    }
    if let (Some(props), Some(o)) = (schema.get("properties").and_then(Value::as_object), v.as_object()) {
        for r in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
            let r = r.as_str().unwrap_or_default();
            if !o.contains_key(r) {
                return Err(format!("{at}: no `{r}`"));
            }
        }
        for (k, x) in o {
            match props.get(k) {
                Some(p) => fits(x, p, &format!("{at}.{k}"))?,
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    return Err(format!("{at}: `{k}` is not in the schema"))
                }
                None => {}
            }
        }
    }
    Ok(())
}

fn prepared() -> Prepared {
    Prepared {
        kernel: "hgemm".into(),
        profile_dir: "profile/hgemm_1".into(),
        program: "target/kprof/release/hgemm".into(),
        stages: vec![StageCommand { stage: "basic".into(), command: "ncu --set basic".into() }],
        follow_up: true,
        script: "# Stage 1\nncu".into(),
    }
}

fn init_addition() -> InitAddition {
    InitAddition {
        package: "gemm".into(),
        manifest: "gemm/Cargo.toml".into(),
        runtime: crate::model::kinds::Runtime::Harness,
        kernels: vec![InitEntry {
            name: "hgemm".into(),
            target: "bench hgemm".into(),
            case: Some("hgemm/m=4096".into()),
        }],
        text: "[package.metadata.kprof]\n".into(),
        gpu_signs: vec!["depends on cudarc through candle-core".into()],
    }
}

/// The planner's messages: a dry run's batch with its estimates, and its choices.
fn dry_run_batch() -> Event {
    Event::DryRunBatch(BatchPlanned {
        kernels: vec!["a".into(), "b".into()],
        program: "/b/zoo".into(),
        stages: vec![StageCommand { stage: "basic".into(), command: "ncu --metrics x".into() }],
        follow_up: true,
        estimates_ms: vec![Some(4200), None],
        follow_ups_ms: None,
        total_ms: None,
        estimate_note: "estimates unknown: no cost history".into(),
    })
}

/// The planner's choices, with and without an alternative.
fn follow_ups_planned() -> [Event; 2] {
    [
        Event::FollowUpsPlanned {
            kernels: "a + b".into(),
            why: "one follow-up run".into(),
            estimate_ms: 5434,
            alternative_ms: Some(7166),
        },
        Event::FollowUpsPlanned {
            kernels: "a".into(),
            why: "one run".into(),
            estimate_ms: 1,
            alternative_ms: None,
        },
    ]
}

/// One of every message.
fn samples() -> Vec<Event> {
    let names = || vec!["hgemm".to_string()];
    vec![
        Event::StageStarted { kernel: "hgemm".into(), stage: "basic".into(), why: "requested".into() },
        Event::StageDone {
            kernel: "hgemm".into(),
            stage: "source".into(),
            status: crate::profile::run_manifest::StageStatus::Ok,
            passes: None,
            wall_ms: 3,
            why: "auto: the hot lines".into(),
        },
        Event::BatchStarted { program: "/b/zoo".into(), kernels: vec!["a".into(), "b".into()] },
        Event::RunsAlone { kernel: "a".into(), why: "the batched page could not be read".into() },
        Event::FollowUpChosen {
            kernel: "k".into(),
            stage: crate::model::stage::Stage::Memory,
            why: "rule".into(),
            batched: true,
        },
        Event::WindowFitted { kernel: "k".into(), window: "w".into(), why: "y".into() },
        Event::ProfilePrepared(prepared()),
        Event::DryRun(prepared()),
        dry_run_batch(),
        analysed_sample(),
        Event::ShardEmpty { partition: Some("count:2/4".into()), profile_root: "profile".into() },
        Event::Comparison {
            profile: "p".into(),
            report: "p/comparison/regression_report.md".into(),
            kernel: "hgemm".into(),
            baseline: "baseline main".into(),
            regression: false,
            duration: None,
            explanation: "unchanged".into(),
            fix_loop: Some("`pipe-fma` gone: saved 12 % (predicted up to 10 %); the limiter now is `dram-bandwidth` (memory-bound).".into()),
            warnings: Vec::new(),
        },
        Event::AbComparison(Box::new(AbComparison {
            schema_version: MESSAGES_SCHEMA_VERSION,
            kernel: "hgemm".into(),
            verdict: crate::model::ab::AbVerdict::Unchanged,
            decided_by: Some("time".into()),
            time: None,
            counters: None,
            hotspot: None,
            line: "hgemm: unchanged".into(),
            profile: "p".into(),
            head_profile: "p".into(),
            base_profile: None,
            report: Some("p/comparison/regression_report.md".into()),
        })),
        Event::CheckFinished(CheckFinished {
            schema_version: MESSAGES_SCHEMA_VERSION,
            mode: CheckMode::Ab,
            base: Some("3f2a1c9d0e1b (HEAD~1)".into()),
            verdict: CheckVerdict::Clean,
            exit_code: 0,
            regressions: Vec::new(),
            ambiguous: Vec::new(),
            improved: Vec::new(),
            unchanged: names(),
            kernels: 1,
        }),
    ]
    .into_iter()
    .chain(census_samples())
    .collect()
}

/// The census' messages: ncu's table, a traced one with an early kernel, the pick, and
/// the one line of a census that could not be traced.
fn census_samples() -> [Event; 4] {
    [
        Event::CensusTaken {
            kernel: "app".into(),
            launches: 3,
            capped: false,
            total_ns: 3000.0,
            bounds: Some("inside NVTX range forward/".into()),
            kernels: vec![CensusRow {
                function: "f".into(),
                launches: 3,
                total_ns: 3000.0,
                mean_ns: 1000.0,
                share_pct: 100.0,
                grid: "(1, 1, 1)".into(),
                block: "(32, 1, 1)".into(),
                early: false,
            }],
            by: crate::model::census::CensusSource::Ncu,
        },
        Event::CensusTaken {
            kernel: "app".into(),
            launches: 40_000,
            capped: false,
            total_ns: 4e9,
            bounds: None,
            kernels: vec![CensusRow {
                function: "autotune".into(),
                launches: 12,
                total_ns: 1e6,
                mean_ns: 83_333.3,
                share_pct: 0.025,
                grid: "(1, 1, 1)".into(),
                block: "(32, 1, 1)".into(),
                early: true,
            }],
            by: crate::model::census::CensusSource::Trace,
        },
        Event::KernelDiscovered {
            kernel: "k".into(),
            chosen: "f".into(),
            why: "the kernels making up 80 % of GPU time, at most 5".into(),
            picked: vec![PickedKernel { function: "f".into(), share_pct: 100.0 }],
            share_pct: 100.0,
        },
        Event::CensusFallback { kernel: "app".into(), why: "no CUPTI library was found".into() },
    ]
}

/// An `analysed` message of one kernel.
fn analysed_sample() -> Event {
    Event::Analysed {
        profile_dir: "p".into(),
        report: "p/final_report.md".into(),
        kernels: vec![KernelVerdict {
            kernel: "hgemm".into(),
            classification: crate::model::verdict::Classification::MemoryBound,
            confidence: crate::model::verdict::Confidence::High,
            rule: Some("r".into()),
            limiter: None,
            advice: None,
            predicted_saving_pct: None,
            not_priced: None,
            advice_headline: None,
            library: Some("cuBLAS".into()),
            library_headline: Some("allow TF32".into()),
            instruction_causes: vec![crate::events::InstructionCauseBrief {
                id: "int64-division".into(),
                lines: vec![20, 13],
                predicted_saving_pct: Some(32.96),
                headline: "64-bit integer division on line 20: 32-bit or hoisted index math".into(),
            }],
        }],
    }
}

/// One of every message of the runs around the stages.
fn measuring_samples() -> Vec<Event> {
    vec![
        Event::NoLineInfo { kernels: vec!["k".into()], advice: "build with -lineinfo".into() },
        Event::LibraryKernels { kernels: vec![("sgemm_cublas".into(), "cuBLAS".into())] },
        Event::HotLinesMissing { kernel: "k".into(), why: "ncu exit code 1".into() },
        Event::HintNarrowed { hint: "mul".into(), kernels: vec!["a".into(), "b".into()], chosen: "a".into() },
        Event::NoTiming { kernel: "k".into() },
        Event::TimingStarted { kernel: "k".into() },
        Event::TimingDone {
            kernel: "k".into(),
            case: "c".into(),
            mode: "hot".into(),
            median_ns: 1500.5,
            samples: 40,
            interval_ns: (1490.0, 1510.0),
        },
        Event::RoundDone {
            kernel: "hgemm_tiled".into(),
            round: 1,
            base_ns: 1000.0,
            head_ns: 1001.0,
            change_pct: 0.1,
        },
        Event::BaseWorktree {
            commit: "3f2a1c9d0e1b".into(),
            asked: "HEAD~1".into(),
            dir: "w".into(),
            action: crate::vcs::worktree::WorktreeAction::Reused,
        },
        Event::BaseWorktree {
            commit: "3f2a1c9d0e1b".into(),
            asked: "HEAD~1".into(),
            dir: "w".into(),
            action: crate::vcs::worktree::WorktreeAction::Restored,
        },
    ]
}

/// One of every message of merges, archives, init and doctor.
fn more_samples() -> Vec<Event> {
    let names = || vec!["hgemm".to_string()];
    vec![
        Event::ProfileMerged { profile: "hgemm_1".into(), from: "a".into(), to: "b".into(), partition: None },
        Event::MergeFinished(MergeFinished {
            output_dir: "out".into(),
            profiles: 1,
            shards: vec!["count:1/2".into()],
            missing_shards: vec![2],
            forced: Vec::new(),
            comparisons: 0,
            regressions: Vec::new(),
            ambiguous: Vec::new(),
        }),
        Event::ArchiveWritten(ArchiveListing {
            archive: "a.tar".into(),
            executables: vec![ArchivedExecutable {
                package: "gemm".into(),
                kind: crate::model::kinds::CargoTargetKind::Bench,
                name: "hgemm".into(),
                file: "bin/hgemm".into(),
            }],
            sources: 1,
            included: Vec::new(),
            build_outputs: Vec::new(),
            skipped_out_dirs: vec![SkippedOutDir { package: "gemm".into(), out_dir: "/o".into() }],
            dependency_sources: 2,
            dependency_sources_missing: vec!["/c/registry/src/i/k-0.1.0/src/gone.cu".into()],
            dependency_sources_refused: Vec::new(),
            launchers: Some(LauncherFiles {
                shards: 2,
                files: vec![LauncherFile {
                    kind: crate::archive::emit::Launcher::Slurm,
                    file: "a.slurm".into(),
                }],
            }),
        }),
        Event::AbArchiveWritten {
            archive: "ab.tar".into(),
            base: crate::vcs::worktree::BaseRevision {
                asked: "HEAD~1".into(),
                commit: "3f2a1c9d0e1b".into(),
            },
            kernels: names(),
        },
        Event::InitDryRun(init_addition()),
        Event::InitWritten(init_addition()),
        Event::InitSkipped { package: "docs".into(), why: "no target".into() },
        Event::DoctorCheck {
            check: "ncu".into(),
            ok: false,
            status: CheckStatus::Fail,
            detail: "missing".into(),
            fix: Some("install".into()),
        },
        Event::DoctorFinished { ready: false, sudo: false, guide: None },
        Event::Error { message: "no kernel".into(), causes: Vec::new(), exit_code: 3 },
    ]
}

/// The messages of `bisect` and `archive --bisect`.
fn bisect_samples() -> Vec<Event> {
    vec![
        Event::BisectStep(BisectStep {
            step: 1,
            commit: "3f2a1c9d0e1b".into(),
            subject: "Tile the B loads".into(),
            outcome: StepOutcome::Skipped,
            why_skipped: Some("the build failed: cargo build exited 101".into()),
            rounds: 12,
            same_build_as: None,
            last_good: "0a1b2c3d4e5f".into(),
            first_bad: None,
            evidence: Vec::new(),
        }),
        Event::BisectStep(BisectStep {
            step: 2,
            commit: "4a1b2c3d4e5f".into(),
            subject: "Reword the README".into(),
            outcome: StepOutcome::Unchanged,
            why_skipped: None,
            rounds: 12,
            same_build_as: Some("0a1b2c3d4e5f".into()),
            last_good: "4a1b2c3d4e5f".into(),
            first_bad: Some("3f2a1c9d0e1b".into()),
            evidence: vec!["the same build as --good 0a1b2c3d4e5f: no check needed, nothing changed".into()],
        }),
        Event::BisectFinished(Box::new(BisectFinished {
            result: BisectResult::FirstBad,
            commit: Some("3f2a1c9d0e1b".into()),
            subject: Some("Tile the B loads".into()),
            date: Some("2026-11-30T10:00:00+00:00".into()),
            after: None,
            hidden: Vec::new(),
            evidence: vec!["hgemm: regressed, +428.1 %".into()],
            second: None,
            skipped: vec![("0a1b2c3d4e5f".into(), "the build failed".into())],
            checks: 4,
            check_bound: 5,
            report: "profile/bisect.md".into(),
            exit_code: 10,
        })),
        Event::BisectArchiveWritten(BisectArchive {
            archive: "bisect.tar".into(),
            good: crate::vcs::worktree::BaseRevision {
                asked: "v1.2.0".into(),
                commit: "0a1b2c3d4e5f".into(),
            },
            bad: crate::vcs::worktree::BaseRevision { asked: "HEAD".into(), commit: "3f2a1c9d0e1b".into() },
            kernels: vec!["hgemm".to_string()],
            revisions: 10,
            builds: 3,
            not_built: vec![("4a1b2c3d4e5f".into(), "does not build: cargo build failed".into())],
        }),
    ]
}

#[test]
fn every_message_fits_its_definition_in_the_contract() {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    assert_eq!(
        schema["version"], MESSAGES_SCHEMA_VERSION,
        "the schema file and the code disagree on the version"
    );
    let defs = schema["$defs"].as_object().unwrap();
    let mut used = std::collections::BTreeSet::new();
    for e in samples()
        .into_iter()
        .chain(measuring_samples())
        .chain(more_samples())
        .chain(bisect_samples())
        .chain(follow_ups_planned())
        .chain(progress_samples().into_iter().map(|(e, _)| e))
    {
        let v = serde_json::to_value(&e).unwrap();
        let reason = v["reason"].as_str().unwrap().to_string();
        let def = defs.get(&reason).unwrap_or_else(|| panic!("`{reason}` has no definition in the schema"));
        fits(&v, def, &reason).unwrap_or_else(|e| panic!("{e}\n{v}"));
        used.insert(reason);
    }
    let list = KernelList {
        kernels: vec![ListedKernel {
            index: 0,
            name: "hgemm".into(),
            package: "gemm".into(),
            target: "bench hgemm".into(),
            runtime: crate::model::kinds::Runtime::Harness,
            args: Vec::new(),
            case: String::new(),
            filter: "regex:.*".into(),
            quoted_args: String::new(),
        }],
    };
    fits(&serde_json::to_value(&list).unwrap(), &defs["kernel-list"], "kernel-list").unwrap();
    used.insert("kernel-list".into());
    let unused: Vec<&String> = defs.keys().filter(|k| !used.contains(*k)).collect();
    assert!(unused.is_empty(), "definitions no message uses: {unused:?}");
}

#[test]
fn the_checker_refuses_a_message_off_its_definition() {
    // A guard for the guard: a missing field, an extra one and a wrong type fail.
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let def = &schema["$defs"]["stage-done"];
    let good = serde_json::json!({"reason": "stage-done", "kernel": "k", "stage": "basic", "status": "ok", "passes": 9, "wall_ms": 1});
    assert!(fits(&good, def, "").is_ok());
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("wall_ms");
    assert!(fits(&missing, def, "").is_err());
    let mut extra = good.clone();
    extra["surprise"] = Value::Bool(true);
    assert!(fits(&extra, def, "").is_err());
    let mut wrong = good;
    wrong["passes"] = Value::String("nine".into());
    assert!(fits(&wrong, def, "").is_err());
}

#[test]
fn a_stage_event_is_a_reason_tagged_line_and_a_sentence() {
    let e = Event::StageDone {
        kernel: "hgemm".into(),
        stage: "basic".into(),
        status: crate::profile::run_manifest::StageStatus::Ok,
        passes: Some(9),
        wall_ms: 1200,
        why: "auto: always first".into(),
    };
    let v: serde_json::Value = serde_json::to_value(&e).unwrap();
    assert_eq!(v["reason"], "stage-done");
    // One line per stage, when it ends.
    assert_eq!(e.to_string(), "Profiled `hgemm`: basic, 9 pass(es) per launch, 1.20 s (auto: always first)");
    assert_eq!(e.channel(), Channel::Progress);
    let started =
        Event::StageStarted { kernel: "hgemm".into(), stage: "basic".into(), why: "requested".into() };
    assert_eq!(started.channel(), Channel::Detail, "the start only under -v");
}

#[test]
fn collection_progress_reads_as_before_and_is_tagged() {
    let e = Event::FollowUpChosen {
        kernel: "k".into(),
        stage: crate::model::stage::Stage::Memory,
        why: "rule `r` (memory): x".into(),
        batched: true,
    };
    assert_eq!(e.to_string(), "Follow-up for `k`: memory (rule `r` (memory): x)");
    let v: serde_json::Value = serde_json::to_value(&e).unwrap();
    assert_eq!(v["reason"], "follow-up-chosen");
    assert_eq!(v["stage"], "memory");
    let e = Event::BatchStarted { program: "/b/zoo".into(), kernels: vec!["a".into(), "b".into()] };
    assert_eq!(e.to_string(), "Batching 2 kernels of `/b/zoo` into one ncu run per stage: a, b");
    assert_eq!(serde_json::to_value(&e).unwrap()["reason"], "batch-started");
    // A kernel batched alone is planned, not batched with others.
    let e = Event::BatchStarted { program: "/b/zoo".into(), kernels: vec!["a".into()] };
    assert_eq!(
        e.to_string(),
        "Planning the ncu runs of `a` (`/b/zoo`): its stages merged where that saves a program start"
    );
    let e = Event::WindowFitted { kernel: "k".into(), window: "w".into(), why: "y".into() };
    assert_eq!(e.to_string(), "Window: y (w)");
}

#[test]
fn every_line_the_h200_printed_fits_the_contract() {
    // `fixtures/h200/events/`: the demo workspace from an archive, on an H200.
    let recorded = kprof_testkit::recording("events/demo.jsonl");
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let defs = schema["$defs"].as_object().unwrap();
    let lines: Vec<Value> = recorded.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for v in &lines {
        let reason = v["reason"].as_str().unwrap();
        fits(v, &defs[reason], reason).unwrap_or_else(|e| panic!("{e}\n{v}"));
    }
    // Each stage that starts ends, in order; each prepared profile is analysed.
    let count = |r: &str| lines.iter().filter(|v| v["reason"] == r).count();
    assert_eq!(count("stage-started"), count("stage-done"));
    assert_eq!(count("profile-prepared"), 7);
    // One analysis per profile directory, the two batched hgemm kernels too.
    assert_eq!(count("analysed"), 7);
    let mut open: Option<&Value> = None;
    for v in lines.iter().filter(|v| v["reason"] == "stage-started" || v["reason"] == "stage-done") {
        match (open, v["reason"].as_str()) {
            (None, Some("stage-started")) => open = Some(v),
            (Some(s), Some("stage-done")) if s["stage"] == v["stage"] && s["kernel"] == v["kernel"] => {
                open = None
            }
            _ => panic!("stage events out of order at {v}"),
        }
    }
}

#[test]
fn the_closed_sets_serialise_to_the_words_their_fields_always_had() {
    use crate::model::ab::AbVerdict;
    use crate::model::kinds::{CargoTargetKind, Runtime};
    use crate::model::verdict::{Classification, Confidence};
    use crate::profile::run_manifest::StageStatus;
    use crate::vcs::worktree::WorktreeAction;
    fn word(v: impl serde::Serialize) -> String {
        serde_json::to_value(v).unwrap().as_str().unwrap().to_string()
    }
    let words = |got: Vec<String>, want: &[&str]| assert_eq!(got, want);
    words(vec![word(StageStatus::Ok), word(StageStatus::NcuFailed)], &["ok", "ncu-failed"]);
    let actions = [
        WorktreeAction::Created,
        WorktreeAction::Reused,
        WorktreeAction::Moved,
        WorktreeAction::Recreated,
        WorktreeAction::Restored,
    ];
    words(actions.map(word).to_vec(), &["created", "reused", "moved", "recreated", "restored"]);
    words(
        vec![
            word(Classification::MemoryBound),
            word(Classification::OccupancyLimited),
            word(Confidence::High),
        ],
        &["memory-bound", "occupancy-limited", "high"],
    );
    words(vec![word(AbVerdict::Improved), word(AbVerdict::Ambiguous)], &["improved", "ambiguous"]);
    words(vec![word(CheckMode::Baseline), word(CheckMode::Ab)], &["baseline", "ab"]);
    let verdicts = [CheckVerdict::Regressed, CheckVerdict::Ambiguous, CheckVerdict::Clean];
    words(verdicts.map(word).to_vec(), &["regressed", "ambiguous", "clean"]);
    words(CargoTargetKind::ALL.map(word).to_vec(), &["bench", "example", "bin"]);
    let launchers = [
        crate::archive::emit::Launcher::Slurm,
        crate::archive::emit::Launcher::K8s,
        crate::archive::emit::Launcher::Github,
    ];
    words(launchers.map(word).to_vec(), &["slurm", "k8s", "github"]);
    words(Runtime::ALL.map(word).to_vec(), &["harness", "cuda", "command", "python-triton"]);
    let outcomes = [
        StepOutcome::Regressed,
        StepOutcome::Unchanged,
        StepOutcome::Improved,
        StepOutcome::Ambiguous,
        StepOutcome::Skipped,
    ];
    words(outcomes.map(word).to_vec(), &outcomes.map(StepOutcome::name));
    words(outcomes.map(word).to_vec(), &["regressed", "unchanged", "improved", "ambiguous", "skipped"]);
    let results =
        [BisectResult::FirstBad, BisectResult::Range, BisectResult::NoRegression, BisectResult::Undecided];
    words(results.map(word).to_vec(), &["first-bad", "range", "no-regression", "undecided"]);
    // The guide is its whole text, as the field always held.
    assert_eq!(word(DoctorGuide::Sudo), crate::ncu::privilege::SUDO_GUIDE);
}

fn revision(asked: &str, commit: &str) -> crate::vcs::worktree::BaseRevision {
    crate::vcs::worktree::BaseRevision { asked: asked.into(), commit: commit.into() }
}

/// One of every message of the drivers' progress, with the line people read (as the
/// drivers printed it before these lines were messages).
fn progress_samples() -> Vec<(Event, &'static str)> {
    let build = |side: Option<&str>, purpose, targets| {
        Event::BuildStarted(BuildStarted {
            side: side.map(String::from),
            build: "bench copy of demo (release, into /t/kprof)".into(),
            targets,
            purpose,
        })
    };
    vec![
        (Event::warning(About::Config, "unknown key `x`"), "unknown key `x`"),
        (Event::ProfilesRootCreated { root: "/w/profile".into() }, "created /w/profile: it holds"),
        (build(None, BuildPurpose::LineInfo, 1), "Building with line info: bench copy of demo (release, into /t/kprof)"),
        (build(Some("the base"), BuildPurpose::LineInfo, 1), "Building the base with line info: bench copy"),
        (build(None, BuildPurpose::ListCases, 2), "Building bench copy of demo (release, into /t/kprof) to list their cases (a build like a profile's, reused by it; no GPU needed)"),
        (build(None, BuildPurpose::CensusTracer, 1), "Building the census tracer, once for this cargo-kprof: bench copy"),
        (Event::BuildDone(BuildDone { side: "the base".into(), wall_ms: 1234 }), "  built the base in 1.2 s"),
        (Event::IndexWritten(IndexWritten { index: "/w/profile/index.md".into() }), "Index: /w/profile/index.md"),
        (
            Event::BaselineSaved(BaselineSaved { name: "main".into(), kernel: "copy".into(), path: "/b/copy".into() }),
            "Baseline `main`: /b/copy",
        ),
        (
            Event::ResultsWritten(ResultsWritten { format: ResultsFormat::GithubBenchmark, path: "g.json".into() }),
            "Results for --github-benchmark: g.json",
        ),
        (
            Event::MergeReading(MergeReading {
                root: "/s/profile".into(),
                partition: Some(crate::model::partition::Partition {
                    mode: crate::model::partition::PartitionMode::Count,
                    index: 1,
                    total: 2,
                }),
                remapped_from: Some("/s".into()),
            }),
            "Reading /s/profile (shard 1/2 (count)): the profile root of the --workspace-remap directory /s",
        ),
        (
            Event::LaunchShapes(LaunchShapes {
                kernel: "k".into(),
                shapes: vec![
                    LaunchShape { shape: "grid (1, 1, 1) block (32, 1, 1)".into(), launches: 2 },
                    LaunchShape { shape: "grid (2, 1, 1) block (32, 1, 1)".into(), launches: 1 },
                ],
            }),
            "`k`: the launches profiled have 2 shapes: grid (1, 1, 1) block (32, 1, 1) (2 launch(es)); grid (2, 1, 1) block (32, 1, 1) (1 launch(es))",
        ),
        (
            Event::FilesRewritten(FilesRewritten { dir: "p".into(), files: vec!["p/a.md".into(), "p/b.md".into()] }),
            "Rewrote 2 file(s) in p: p/a.md, p/b.md",
        ),
        (
            Event::PageShown(PageShown { url: "file:///p/r.html".into(), browser: false }),
            "No browser here (no BROWSER, DISPLAY or WAYLAND_DISPLAY): the page is file:///p/r.html",
        ),
        (Event::PageShown(PageShown { url: "file:///r".into(), browser: true }), "Opening file:///r in a browser"),
        (Event::NoKernelsConfigured, "no kernels are configured; `cargo kprof init` writes an entry"),
        (
            Event::InitFinished(InitFinished { dry_run: false, first_kernel: "hgemm".into() }),
            "Next: narrow each `regex` to its kernel's function name, then `cargo kprof list` and `cargo kprof --kernel hgemm`",
        ),
        (
            Event::InitFinished(InitFinished { dry_run: true, first_kernel: "hgemm".into() }),
            "Nothing was written; run again without --dry-run to append these tables",
        ),
    ]
    .into_iter()
    .chain(ab_progress_samples())
    .chain(bisect_progress_samples())
    .collect()
}

/// The progress of an A/B check.
fn ab_progress_samples() -> Vec<(Event, &'static str)> {
    vec![
        (
            Event::ArchiveUnpacked(ArchiveUnpacked { archive: "ab.tar".into(), into: "/r".into() }),
            "Unpacked both sides of ab.tar into /r",
        ),
        (
            Event::AbStarted(AbStarted { base: revision("HEAD~1", "3f2a1c9d0e1b2c3d") }),
            "A/B: head (this tree) against base 3f2a1c9d0e1b (HEAD~1)",
        ),
        (
            Event::AbMeasured(AbMeasured { kernels: 2, wall_ms: 45_950 }),
            "A/B: both sides' profiles and the rounds of 2 kernel(s) took 46.0 s (builds excluded)",
        ),
        (
            Event::TimingPlanned(TimingPlanned {
                kernels: vec!["a".into()],
                program: Some("zoo".into()),
                rounds: 12,
            }),
            "Timing `a`: 12 interleaved rounds of base and head",
        ),
        (
            Event::TimingPlanned(TimingPlanned {
                kernels: vec!["a".into(), "b".into()],
                program: Some("zoo".into()),
                rounds: 12,
            }),
            "Timing 2 kernels of `zoo`: 12 interleaved rounds of base and head",
        ),
        (
            Event::TimingExtended(TimingExtended { kernels: vec!["a".into(), "b".into()], rounds: 12 }),
            "Timing `a`, `b`: undecided after 12 rounds, where 12 more could decide; running them",
        ),
        (
            Event::TimingStopped(TimingStopped { kernels: vec!["a".into()], after: 8, planned: 12 }),
            "Timing `a`: inside the tolerance after 8 of 12 rounds; no more rounds for it",
        ),
    ]
}

/// The progress of a bisect and of a bisect archive's packing.
fn bisect_progress_samples() -> Vec<(Event, &'static str)> {
    let (good, bad) = (revision("v1", "0a1b2c3d4e5f6a7b"), revision("HEAD", "3f2a1c9d0e1b2c3d"));
    let started = |builds| {
        Event::BisectStarted(BisectStarted {
            good: good.clone(),
            bad: bad.clone(),
            revisions: 10,
            builds,
            check_bound: 5,
        })
    };
    let same = |good| {
        Event::BisectSameBuild(BisectSameBuild {
            commit: "4a1b2c3d4e5f".into(),
            subject: "c3".into(),
            same_build_as: "0a1b2c3d4e5f".into(),
            good,
        })
    };
    let (commit, subject) = (|| "4a1b2c3d4e5f".to_string(), || "c3".to_string());
    vec![
        (started(None), "Bisect: 10 first-parent revision(s) after --good 0a1b2c3d4e5f (v1) up to --bad 3f2a1c9d0e1b (HEAD); at most 5 checks"),
        (started(Some(3)), "Bisect: 10 first-parent revision(s) after --good 0a1b2c3d4e5f (v1) up to --bad 3f2a1c9d0e1b (HEAD), 3 distinct build(s); at most 5 checks"),
        (
            Event::BisectChecking(BisectChecking { commit: commit(), subject: subject(), good: "0a1b2c3d4e5f".into(), rounds: 12 }),
            "Bisect: checking 4a1b2c3d4e5f c3 against --good 0a1b2c3d4e5f (12 rounds)",
        ),
        (same(true), "Bisect: 4a1b2c3d4e5f c3 has --good's build"),
        (same(false), "Bisect: 4a1b2c3d4e5f c3 has the build of 0a1b2c3d4e5f, checked already"),
        (
            Event::BisectArchiveStarted(BisectArchiveStarted { good: good.clone(), bad: bad.clone(), revisions: 10 }),
            "Archive for bisect: --good 0a1b2c3d4e5f (v1) and 10 first-parent revision(s) up to 3f2a1c9d0e1b (HEAD), each built; identical builds are packed once",
        ),
        (Event::RevisionPacked(RevisionPacked { commit: commit(), subject: subject(), build: 1 }), "  4a1b2c3d4e5f c3: build 1"),
        (
            Event::RevisionNotPacked(RevisionNotPacked { commit: commit(), subject: subject(), why: "does not build".into() }),
            "4a1b2c3d4e5f c3 is not packed: it does not build",
        ),
    ]
}

#[test]
fn the_progress_messages_read_as_the_lines_before_them_and_fit_the_contract() {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let defs = schema["$defs"].as_object().unwrap();
    for (e, line) in progress_samples() {
        let words = e.to_string();
        assert!(words.starts_with(line), "{words:?}\ndoes not start with\n{line:?}");
        let v = serde_json::to_value(&e).unwrap();
        let reason = v["reason"].as_str().unwrap().to_string();
        fits(&v, &defs[&reason], &reason).unwrap_or_else(|e| panic!("{e}\n{v}"));
    }
}

#[test]
fn notices_speak_at_their_level_and_conditions_also_under_quiet() {
    use crate::shell::Level;
    let level = |e: Event| match e.channel() {
        Channel::Notice(l) => l,
        other => panic!("{other:?}"),
    };
    assert_eq!(level(Event::note(About::Plan, "n")), Level::Note);
    assert_eq!(level(Event::warning(About::Index, "w")), Level::Warning);
    assert_eq!(level(Event::warning(About::Conditions, "w")), Level::Alert);
    assert_eq!(
        level(Event::RevisionNotPacked(RevisionNotPacked {
            commit: "c".into(),
            subject: "s".into(),
            why: "w".into(),
        })),
        Level::Warning
    );
    let v = serde_json::to_value(Event::note(About::AutoStages, "auto: basic, then")).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"reason": "notice", "level": "note", "about": "auto-stages", "message": "auto: basic, then"})
    );
    // init's lines: the addition's, at its message, and the skipped package's.
    let a = init_addition();
    assert_eq!(
        Event::InitWritten(a.clone()).to_string(),
        "Appended 1 kernel entry to gemm/Cargo.toml (package `gemm` (depends on cudarc through candle-core)): \
         hgemm (case hgemm/m=4096 of bench hgemm)"
    );
    assert_eq!(Event::InitWritten(a.clone()).channel(), Channel::Progress);
    let preface =
        "Would append 1 kernel entry to gemm/Cargo.toml (package `gemm` (depends on cudarc through \
                   candle-core)): hgemm (case hgemm/m=4096 of bench hgemm)";
    assert_eq!(Event::InitDryRun(a).channel(), Channel::Result { preface: Some(preface.into()) });
    let skipped = Event::InitSkipped { package: "docs".into(), why: "no target".into() };
    assert_eq!(skipped.to_string(), "Skipped package `docs`: no target");
}
