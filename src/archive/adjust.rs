//! `run --archive`'s options: which archived kernels to profile, and what to change in
//! their plans on the GPU machine, without rebuilding the archive.
//!
//! `--kernel HINT` selects the archived kernel of that name (exact, else the only name
//! containing it, ignoring case), as `cargo kprof --kernel` selects a configured entry,
//! and a hint other than the name becomes the ncu filter, as there; `--kernel-regex RE`
//! selects the kernels whose name it matches and becomes their filter. A hint or regex
//! that names no archived kernel becomes the filter of the archive's one program, as
//! `--kernel` does with `--bench X` at home (every harness case then runs, and a
//! discovery kernel becomes a filtered one); with several programs it is refused, listing
//! the archived kernels. Stages, window and environment then change as the same flags
//! change them at home (the same parsing, [`crate::plan::window_for`],
//! [`crate::plan::merged_env`]), and the profile's `profile-target.yaml` and
//! `commands.sh` are written from the changed plan. `--partition` then keeps the
//! kernels of one shard.

use crate::error::{ExitCode, Failure};
use crate::model::filter::{KernelFilter, KernelHint};
use crate::ncu::LaunchWindow;
use crate::plan::{self, KernelPlan, PlannedTarget, Request};

/// The archived `kernels` as `req` selects and changes them; notes say what was ignored.
pub fn adjust(
    kernels: Vec<KernelPlan>,
    req: &Request,
    notes: &mut Vec<String>,
) -> Result<Vec<KernelPlan>, Failure> {
    if let Some(re) = &req.kernel_regex {
        plan::check_kernel_regex(re)?;
    }
    let mut selected = Vec::new();
    if !req.kernels.is_empty() {
        for hint in &req.kernels {
            selected.push(by_hint(&kernels, hint, req.kernel_regex.as_deref())?);
        }
    } else if let Some(re) = &req.kernel_regex {
        // Checked above.
        let regex = regex::Regex::new(re).map_err(|e| Failure::new(ExitCode::Config, e.to_string()))?;
        let named: Vec<KernelPlan> = kernels.iter().filter(|k| regex.is_match(&k.name)).cloned().collect();
        if named.is_empty() {
            let mut k = only_program(&kernels, &format!("--kernel-regex `{re}`"))?;
            k.case = None;
            selected.push(with_filter(k, KernelFilter::regex(re.clone())));
        } else {
            selected.extend(named.into_iter().map(|k| with_filter(k, KernelFilter::regex(re.clone()))));
        }
    } else {
        selected = kernels;
    }
    for k in &mut selected {
        change(k, req, notes);
    }
    // The shard is taken from the adjusted selection, as `cargo kprof` takes it from its own.
    if let Some(shard) = &req.partition {
        selected = plan::apply_shard(shard, selected, notes);
    }
    Ok(selected)
}

/// The kernel one `--kernel` hint selects, with its filter.
fn by_hint(kernels: &[KernelPlan], given: &KernelHint, regex: Option<&str>) -> Result<KernelPlan, Failure> {
    // `=NAME` selects only the kernel named exactly so, and filters its function exactly.
    let (hint, exact_only) = (given.name.as_str(), given.exact);
    let needle = hint.to_lowercase();
    let exact = kernels.iter().find(|k| k.name == hint);
    let containing: Vec<&KernelPlan> = if exact_only {
        Vec::new()
    } else {
        kernels.iter().filter(|k| k.name.to_lowercase().contains(&needle)).collect()
    };
    let found = match (exact, containing.as_slice()) {
        (Some(k), _) => Some(k.clone()),
        (None, [k]) => Some((*k).clone()),
        (None, []) => None,
        (None, several) => {
            let names: Vec<String> = several.iter().map(|k| format!("`{}`", k.name)).collect();
            return Err(Failure::new(
                ExitCode::Config,
                format!(
                    "kernel hint `{hint}` matches {} archived kernels: {}",
                    several.len(),
                    names.join(", ")
                ),
            )
            .help(format!("pass an exact name: `--kernel {}`", several[0].name)));
        }
    };
    let filter = regex.map(|re| KernelFilter::regex(re.to_string()));
    Ok(match found {
        Some(k) => {
            // As at home: a hint other than the name narrows the filter; a discovery
            // kernel (no filter yet) gets one.
            let filter = filter.or_else(|| {
                (k.name != hint || k.filter.is_none() || exact_only).then(|| KernelFilter::from_hint(given))
            });
            match filter {
                Some(f) => with_filter(k, f),
                None => k,
            }
        }
        None => {
            let mut k = only_program(kernels, &format!("kernel hint `{hint}`"))?;
            // Ad hoc, as `--bench X --kernel HINT`: named after the hint, every case runs.
            k.name = hint.to_string();
            k.case = None;
            k.configured_at = None;
            with_filter(k, filter.unwrap_or_else(|| KernelFilter::from_hint(given)))
        }
    })
}

/// The first kernel of the archive's one program, or a refusal naming `what` and listing
/// the archived kernels when it holds several programs.
fn only_program(kernels: &[KernelPlan], what: &str) -> Result<KernelPlan, Failure> {
    let first =
        kernels.first().ok_or_else(|| Failure::new(ExitCode::Config, "the archive holds no kernel"))?;
    if kernels.iter().all(|k| k.target == first.target) {
        return Ok(first.clone());
    }
    let names: Vec<String> =
        kernels.iter().map(|k| format!("`{}` ({})", k.name, program_name(&k.target))).collect();
    Err(Failure::new(ExitCode::Config, format!("{what} matches no archived kernel"))
        .help(format!("archived kernels: {}", names.join(", ")))
        .help(
            "pick one of them with --kernel NAME; a hint that names no archived kernel becomes the \
             filter only when the archive holds one program",
        ))
}

fn program_name(target: &PlannedTarget) -> String {
    match target {
        PlannedTarget::Cargo(t) => format!("{} {}", t.kind, t.name),
        PlannedTarget::Command(words) => format!("command {}", words.join(" ")),
    }
}

fn with_filter(mut k: KernelPlan, filter: KernelFilter) -> KernelPlan {
    k.filter = Some(filter);
    k
}

/// `--stages`, `--launch-skip`/`--launch-count`, `--env` and the census options on one kernel.
fn change(k: &mut KernelPlan, req: &Request, notes: &mut Vec<String>) {
    if let Some(stages) = &req.stages {
        k.stages = stages.clone();
    }
    if req.launch_skip.is_some() || req.launch_count.is_some() {
        let (skip, count) = match k.window {
            LaunchWindow::HarnessRange { launch_count } => (None, launch_count),
            LaunchWindow::SkipCount { launch_skip, launch_count } => (Some(launch_skip), launch_count),
        };
        k.window_origin = crate::model::kinds::WindowOrigin::Set;
        k.window = plan::window_for(
            k.runtime,
            req.launch_skip.or(skip),
            Some(req.launch_count.unwrap_or(count)),
            &k.name,
            notes,
        );
    }
    if !req.envs.is_empty() {
        k.env = plan::merged_env(&k.env, &req.envs);
    }
    if !req.census.is_default() {
        k.census = req.census.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::BuildTarget;
    use crate::model::kinds::{CargoTargetKind, Runtime};
    use crate::model::stage::{Stage, StageSelection};
    use crate::plan::StagePlan;

    fn kernel(name: &str, bench: &str, runtime: Runtime) -> KernelPlan {
        let target = PlannedTarget::Cargo(BuildTarget {
            package: "demo".into(),
            kind: CargoTargetKind::Bench,
            name: bench.into(),
        });
        KernelPlan {
            configured_at: Some("entry".into()),
            package: Some("demo".into()),
            env: [("A".to_string(), "1".to_string())].into(),
            ..KernelPlan::synthetic(name, target, runtime)
        }
    }

    fn names(ks: &[KernelPlan]) -> Vec<(&str, Option<&str>)> {
        ks.iter().map(|k| (k.name.as_str(), k.filter.as_ref().map(|f| f.pattern.as_str()))).collect()
    }

    fn req(kernels: &[&str], regex: Option<&str>) -> Request {
        Request {
            kernels: kernels.iter().map(|s| KernelHint::parse(s)).collect(),
            kernel_regex: regex.map(String::from),
            ..Request::default()
        }
    }

    #[test]
    fn a_partition_keeps_its_shard_of_the_adjusted_kernels() {
        let all = vec![
            kernel("a", "x", Runtime::Harness),
            kernel("b", "y", Runtime::Harness),
            kernel("c", "z", Runtime::Harness),
        ];
        let shard = crate::model::partition::Shard::from_flag("count:2/2".parse().unwrap());
        let req = Request { partition: Some(shard), ..Request::default() };
        let mut notes = Vec::new();
        let kept = adjust(all, &req, &mut notes).unwrap();
        assert_eq!(names(&kept), [("b", Some(".*b.*"))]);
        assert_eq!(kept[0].partition.map(|p| p.to_string()).as_deref(), Some("count:2/2"));
        assert_eq!(notes, ["shard 2/2 (count, from --partition): 1 of the 3 selected kernels: b"]);
    }

    #[test]
    fn hints_select_by_name_then_become_the_filter() {
        let two =
            vec![kernel("hgemm", "gemm", Runtime::Harness), kernel("hgemm_tiled", "gemm", Runtime::Harness)];
        let mut notes = Vec::new();
        // Exact wins over substring; a unique substring selects and narrows the filter.
        let got = adjust(two.clone(), &req(&["hgemm", "TILED"], None), &mut notes).unwrap();
        assert_eq!(names(&got), [("hgemm", Some(".*hgemm.*")), ("hgemm_tiled", Some(".*TILED.*"))]);
        assert_eq!(got[1].case.as_deref(), Some("hgemm_tiled"), "a selected kernel keeps its case");
        // One program: a hint naming no kernel becomes that program's filter, every case runs.
        let got = adjust(two.clone(), &req(&["sgemm"], None), &mut notes).unwrap();
        assert_eq!(names(&got), [("sgemm", Some(".*sgemm.*"))]);
        assert_eq!((got[0].case.as_ref(), got[0].configured_at.as_ref()), (None, None));
        // Ambiguous.
        let err = adjust(two.clone(), &req(&["gemm"], None), &mut notes).unwrap_err().to_string();
        assert!(
            err.contains("kernel hint `gemm` matches 2 archived kernels: `hgemm`, `hgemm_tiled`"),
            "{err}"
        );
        // Several programs: refused, listing the archived kernels.
        let mixed = vec![kernel("copy", "copy", Runtime::Cuda), kernel("fma", "fma", Runtime::Cuda)];
        let err = adjust(mixed.clone(), &req(&["sgemm"], None), &mut notes).unwrap_err();
        assert_eq!(err.code, ExitCode::Config);
        let err = err.to_string();
        assert!(err.contains("kernel hint `sgemm` matches no archived kernel"), "{err}");
        assert!(err.contains("archived kernels: `copy` (bench copy), `fma` (bench fma)"), "{err}");
        // A regex selects by name and is the filter; naming nothing, it is refused here too.
        let got = adjust(mixed.clone(), &req(&[], Some("^f")), &mut notes).unwrap();
        assert_eq!(names(&got), [("fma", Some("^f"))]);
        assert!(adjust(mixed, &req(&[], Some("zzz")), &mut notes).is_err());
        let err = adjust(two, &req(&[], Some("(")), &mut notes).unwrap_err().to_string();
        assert!(err.contains("--kernel-regex `(` is not a valid regex"), "{err}");
    }

    #[test]
    fn a_discovery_kernel_gets_the_hint_as_its_filter() {
        let mut k = kernel("copy", "copy", Runtime::Cuda);
        k.filter = None;
        let got = adjust(vec![k], &req(&["copy"], None), &mut Vec::new()).unwrap();
        assert_eq!(names(&got), [("copy", Some(".*copy.*"))]);
    }

    #[test]
    fn stages_window_and_env_change_as_at_home() {
        let ks = vec![kernel("copy", "copy", Runtime::Cuda), kernel("h", "gemm", Runtime::Harness)];
        let r = Request {
            stages: Some(StagePlan::Stages(StageSelection::List(vec![Stage::Memory]))),
            launch_skip: Some(1),
            launch_count: Some(2),
            envs: vec![("X".into(), "1".into()), ("A".into(), "2".into())],
            ..Request::default()
        };
        let mut notes = Vec::new();
        let got = adjust(ks, &r, &mut notes).unwrap();
        assert_eq!(got[0].window, LaunchWindow::SkipCount { launch_skip: 1, launch_count: 2 });
        assert_eq!(got[1].window, LaunchWindow::HarnessRange { launch_count: 2 });
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("h: launch-skip is ignored for harness targets"), "{notes:?}");
        assert!(got.iter().all(|k| k.stages == r.stages.clone().unwrap()));
        assert_eq!(got[0].env.get("A").map(String::as_str), Some("2"));
        assert_eq!(got[0].env.get("X").map(String::as_str), Some("1"));
        // Only the count: the archived skip stays.
        let r = Request { launch_count: Some(4), ..Request::default() };
        let got = adjust(vec![kernel("copy", "copy", Runtime::Cuda)], &r, &mut notes).unwrap();
        assert_eq!(got[0].window, LaunchWindow::SkipCount { launch_skip: 5, launch_count: 4 });
    }
}
