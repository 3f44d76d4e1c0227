//! What profiling needs on this machine (`cargo kprof doctor`): each check with its
//! finding and fix, and the exit code they add up to.

use std::path::{Path, PathBuf};

use crate::build;
use crate::config;
use crate::error::ExitCode;
use crate::events::{CheckStatus, Event};
use crate::ncu::preflight::{self, CheckId};
use crate::ncu::privilege;
use crate::process::{self, ProcessBuilder, RunOptions};
use crate::profile::root;
use crate::shell::Shell;

/// Every check, one message each, then whether profiling can work here; exit 0 when it
/// can, else the code of the first failure class (5 missing tool, 7 permission). With
/// sudo configured (`--sudo`, or `privilege = "sudo"` in the manifests) the ncu checked
/// is the one `sudo -n` would run, and a failure brings the setup guide.
pub fn doctor(
    manifest_path: Option<&Path>,
    sudo_flag: bool,
    archive: Option<&Path>,
    shell: &Shell,
) -> ExitCode {
    let (mut checks, sudo) = checks(manifest_path, sudo_flag, shell);
    if let Some(archive) = archive {
        checks.extend(library_checks(archive, shell));
    }
    let failed: Vec<&preflight::Check> = checks.iter().filter(|c| c.result.is_err()).collect();
    // The sudo guide answers a failed sudo setup, not a stale file nobody runs sudo with.
    let guide = sudo && failed.iter().any(|c| c.what.is_sudo_setup());
    for c in &checks {
        let (status, detail) = match &c.result {
            Ok(d) if c.unknown => (CheckStatus::Unknown, d),
            Ok(d) => (CheckStatus::Ok, d),
            Err(p) => (CheckStatus::Fail, p),
        };
        shell.emit(&Event::DoctorCheck {
            check: c.what.to_string(),
            ok: status == CheckStatus::Ok,
            status,
            detail: detail.clone(),
            fix: if status == CheckStatus::Fail { c.fix.clone() } else { None },
        });
    }
    shell.emit(&Event::DoctorFinished {
        ready: failed.is_empty(),
        sudo,
        guide: guide.then_some(crate::events::DoctorGuide::Sudo),
    });
    match failed.first() {
        None => ExitCode::Success,
        Some(c) if c.what == CheckId::CounterPermission || (sudo && c.what.is_sudo_setup()) => {
            ExitCode::Permission
        }
        Some(_) => ExitCode::MissingTool,
    }
}

/// The checks, and whether ncu runs through sudo.
pub fn checks(manifest_path: Option<&Path>, sudo_flag: bool, shell: &Shell) -> (Vec<preflight::Check>, bool) {
    let metadata = build::metadata(&build::cargo_binary(), manifest_path, &Shell::quiet()).ok();
    let profile_root = metadata
        .as_ref()
        .map(|m| PathBuf::from(m.workspace_root.as_std_path()).join("profile"))
        .unwrap_or_else(|| PathBuf::from("profile"));
    let sudo =
        sudo_flag || metadata.as_ref().and_then(|m| config::load(m).ok()).is_some_and(|c| c.uses_sudo());
    let inputs = preflight::ProbeInputs::from_machine(&profile_root.join(root::NCU_PATH_FILE));
    let (mut checks, ncu) = preflight::check_profiling_prerequisites(&inputs);
    if sudo {
        // `--sudo` runs only the ncu named in profile/ncu_path, never PATH's or NCU's.
        checks.retain(|c| c.what != CheckId::Ncu);
        checks.extend(privilege::sudo_checks(
            &inputs.ncu_path_file,
            inputs.path_env.as_deref(),
            privilege::VERSION_CHECK_TIMEOUT,
            shell,
        ));
    } else if let Some(loc) = &ncu {
        checks.push(ncu_version(&loc.path, shell));
    }
    let params = std::fs::read_to_string("/proc/driver/nvidia/params").ok();
    let is_root = std::env::var("USER").is_ok_and(|u| u == "root")
        || std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0"))
            })
            .unwrap_or(false);
    // Through sudo, ncu runs as root, to whom the counters are always open.
    checks.push(preflight::counter_permission(params.as_deref(), is_root || sudo));
    if !sudo {
        checks.push(ncu_path_check(&profile_root.join(root::NCU_PATH_FILE)));
    }
    checks.push(census_check(shell));
    (checks, sudo)
}

/// How a census is taken here: by tracing, or by ncu's pass and why. Never a failure: the
/// census works either way, and the detail says which.
fn census_check(shell: &Shell) -> preflight::Check {
    let detail = super::profile::tracer::describe(shell).unwrap_or_else(|why| why);
    preflight::Check { what: CheckId::Census, result: Ok(detail), fix: None, unknown: false }
}

/// `doctor --archive FILE`: one check per packed program, that the libraries it loads
/// resolve here with this shell's `LD_LIBRARY_PATH` (those cudarc opens itself are named
/// in the detail when missing, as they are needed only when used).
fn library_checks(archive: &Path, shell: &Shell) -> Vec<preflight::Check> {
    use crate::archive::loader;
    let check = |result, fix, unknown| preflight::Check { what: CheckId::Libraries, result, fix, unknown };
    // A bundle of builds is not "not an archive": it says what it is and what runs it.
    let bundle = match crate::archive::open(archive) {
        Ok(crate::archive::Opened::Bisect(_)) => {
            Some(("a bisect archive (`archive --bisect GOOD..BAD`)", "bisect"))
        }
        Ok(crate::archive::Opened::Pair(_)) => Some(("an A/B archive (`archive --base REV`)", "check")),
        _ => None,
    };
    if let Some((what, verb)) = bundle {
        let why =
            format!("{} is {what}: `doctor --archive` checks the libraries of one build", archive.display());
        let fix = format!(
            "run it there with `cargo-kprof kprof {verb} --archive {}`, or pass an archive of one build \
             (`cargo kprof archive -o FILE`) to doctor",
            archive.display()
        );
        return vec![check(Err(why), Some(fix), false)];
    }
    let manifest = match crate::archive::read_checked_manifest(archive) {
        Ok(m) => m,
        Err(f) => return vec![check(Err(f.message.clone()), f.help.first().cloned(), false)],
    };
    let Some(records) = &manifest.libraries else {
        let why = format!(
            "{} (schema_version {}) has no record of the libraries its programs load",
            archive.display(),
            manifest.schema_version
        );
        return vec![check(Ok(why), None, true)];
    };
    let search = loader::Search::here(None, shell);
    let bin_root = archive.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for r in records {
        let missing = loader::unresolved(r, &bin_root.join(&r.executable), &search);
        let (opened, needed): (Vec<&loader::Unresolved>, Vec<&loader::Unresolved>) =
            missing.iter().partition(|m| m.opened);
        let result = if needed.is_empty() {
            let mut detail = format!("{}: the {} needed libraries resolve", r.executable, r.needed.len());
            if !opened.is_empty() {
                detail.push_str(&format!("; {}", loader::warning(&opened)));
            }
            Ok(detail)
        } else {
            let names =
                loader::bounded_list(needed.iter().map(|m| format!("{} (needed by {})", m.name, m.by)));
            Err(format!("{}: not found: {names}", r.executable))
        };
        let fix = result.is_err().then(loader::fix_text);
        out.push(check(result, fix, false));
    }
    out
}

/// `ncu --version`: its last line, or why it could not say (a failed check).
fn ncu_version(ncu: &Path, shell: &Shell) -> preflight::Check {
    let done = process::run(
        ProcessBuilder::new(ncu).arg("--version"),
        RunOptions { timeout: Some(privilege::VERSION_CHECK_TIMEOUT), ..Default::default() },
        shell,
    );
    let version = done.stdout_text().lines().last().unwrap_or("").trim().to_string();
    let result = match (&done.start_error, &done.ending) {
        (Some(e), _) => Err(format!("{} could not be run: {e}", ncu.display())),
        (None, process::Ending::Exited(s)) if s.success() && !version.is_empty() => Ok(version),
        (None, ending) => Err(format!("`{} --version` failed ({ending})", ncu.display())),
    };
    let fix = result.is_err().then(|| "check that this ncu runs here: it must print its version".to_string());
    preflight::Check { what: CheckId::NcuVersion, result, fix, unknown: false }
}

/// `profile/ncu_path` without `--sudo`: absent is fine (the first profile writes the ncu it
/// finds); present, it must name an executable, as the ncu check above reads it too.
fn ncu_path_check(file: &Path) -> preflight::Check {
    let (result, fix) = if !file.exists() {
        (Ok("not written yet; the first profile writes the ncu it finds".to_string()), None)
    } else {
        match privilege::sudo_ncu_path(file) {
            Ok(ncu) => (Ok(format!("{} (the ncu --sudo would run)", ncu.display())), None),
            Err(problem) => (
                Err(problem),
                Some(format!(
                    "write the ncu to use into it (printf '%s\\n' /absolute/path/to/ncu > {0}), or delete {0}: \
                     the next profile writes the ncu it finds",
                    file.display()
                )),
            ),
        }
    };
    preflight::Check { what: CheckId::NcuPathFile, result, fix, unknown: false }
}
