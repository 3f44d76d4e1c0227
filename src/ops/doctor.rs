//! What profiling needs on this machine (`cargo kprof doctor`): each check with its
//! finding and fix, and the exit code they add up to.

use std::path::{Path, PathBuf};

use crate::build;
use crate::config;
use crate::error::ExitCode;
use crate::events::Event;
use crate::ncu::preflight::{self, CheckId};
use crate::ncu::privilege;
use crate::process::{self, ProcessBuilder, RunOptions};
use crate::profile::dir;
use crate::shell::Shell;

/// Every check, one message each, then whether profiling can work here; exit 0 when it
/// can, else the code of the first failure class (5 missing tool, 7 permission). With
/// sudo configured (`--sudo`, or `privilege = "sudo"` in the manifests) the ncu checked
/// is the one `sudo -n` would run, and a failure brings the setup guide.
pub fn doctor(manifest_path: Option<&Path>, sudo_flag: bool, shell: &Shell) -> ExitCode {
    let (checks, sudo) = checks(manifest_path, sudo_flag, shell);
    let failed: Vec<&preflight::Check> = checks.iter().filter(|c| c.result.is_err()).collect();
    let guide = failed.iter().any(|c| c.what.is_sudo_setup());
    for c in &checks {
        let (ok, detail) = match &c.result {
            Ok(d) => (true, d),
            Err(p) => (false, p),
        };
        shell.emit(&Event::DoctorCheck {
            check: c.what.to_string(),
            ok,
            detail: detail.clone(),
            fix: if ok { None } else { c.fix.clone() },
        });
    }
    shell.emit(&Event::DoctorFinished {
        ready: failed.is_empty(),
        sudo,
        guide: guide.then_some(privilege::SUDO_GUIDE),
    });
    match failed.first() {
        None => ExitCode::Success,
        Some(c) if c.what == CheckId::CounterPermission || c.what.is_sudo_setup() => ExitCode::Permission,
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
    let inputs = preflight::ProbeInputs::from_machine(&profile_root.join(dir::NCU_PATH_FILE));
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
        let done = process::run(
            ProcessBuilder::new(&loc.path).arg("--version"),
            RunOptions { timeout: Some(privilege::VERSION_CHECK_TIMEOUT), ..Default::default() },
            shell,
        );
        let version = match &done.start_error {
            Some(e) => format!("could not run it: {e}"),
            None => done.stdout_text().lines().last().unwrap_or("").trim().to_string(),
        };
        checks.push(preflight::Check { what: CheckId::NcuVersion, result: Ok(version), fix: None });
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
    let ncu_path = profile_root.join(dir::NCU_PATH_FILE);
    if !sudo {
        checks.push(preflight::Check {
            what: CheckId::NcuPathFile,
            result: Ok(match std::fs::read_to_string(&ncu_path) {
                Ok(t) => format!("{} (used by --sudo)", t.trim()),
                Err(_) => format!("{} does not exist yet; created on the first profile", ncu_path.display()),
            }),
            fix: None,
        });
    }
    (checks, sudo)
}
