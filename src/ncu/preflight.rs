//! What profiling needs on this machine, checked before anything runs.
//!
//! A fresh machine without a GPU must hear exactly what is missing and how to fix
//! it, all at once, not one problem per attempt. `cargo kprof doctor` grows from
//! these checks.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::error::{ExitCode, Failure};
use crate::ncu::{locate_ncu, NcuLocation};

/// What a check looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckId {
    /// The ncu binary kprof would run.
    Ncu,
    /// `ncu --version`.
    NcuVersion,
    /// libcuda.
    Driver,
    /// An NVIDIA device node.
    Gpu,
    /// The driver's restriction of the performance counters.
    CounterPermission,
    /// `sudo` on `PATH` (`--sudo`).
    Sudo,
    /// `profile/ncu_path`.
    NcuPathFile,
    /// `sudo -n <ncu> --version` without a password (`--sudo`).
    SudoNcu,
    /// The shared libraries an archive's programs load (`doctor --archive`).
    Libraries,
    /// How a program's census is taken: by tracing (CUPTI) or by ncu's pass.
    Census,
}

impl CheckId {
    /// The name printed in `doctor` and in preflight errors.
    pub fn name(self) -> &'static str {
        match self {
            CheckId::Ncu => "ncu",
            CheckId::NcuVersion => "ncu version",
            CheckId::Driver => "CUDA driver",
            CheckId::Gpu => "GPU",
            CheckId::CounterPermission => "counter permission",
            CheckId::Sudo => "sudo",
            CheckId::NcuPathFile => "profile/ncu_path",
            CheckId::SudoNcu => "sudo -n ncu",
            CheckId::Libraries => "shared libraries",
            CheckId::Census => "census",
        }
    }

    /// Whether it belongs to the `--sudo` setup (a failure prints the sudo guide).
    pub fn is_sudo_setup(self) -> bool {
        matches!(self, CheckId::Sudo | CheckId::NcuPathFile | CheckId::SudoNcu)
    }
}

impl std::fmt::Display for CheckId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was checked.
    pub what: CheckId,
    /// `Ok(detail)` or `Err(problem)`.
    pub result: Result<String, String>,
    /// How to fix a failure.
    pub fix: Option<String>,
    /// Whether what was checked could not be known here (`result` is then `Ok` and says
    /// why): `doctor` prints "unknown", never "ok", for it.
    pub unknown: bool,
}

/// The environment the checks read, passed in so tests can drive every case.
#[derive(Debug, Clone)]
pub struct ProbeInputs {
    /// `NCU`.
    pub ncu_env: Option<OsString>,
    /// `PATH`.
    pub path_env: Option<OsString>,
    /// `profile/ncu_path` of the workspace.
    pub ncu_path_file: PathBuf,
    /// Device nodes to look for (`/dev/nvidiactl`).
    pub device_nodes: Vec<PathBuf>,
    /// Whether the CUDA driver library could be loaded (and from which name).
    pub driver: Result<String, String>,
}

impl ProbeInputs {
    /// Reads this process's environment and this machine.
    pub fn from_machine(ncu_path_file: &Path) -> Self {
        ProbeInputs {
            ncu_env: std::env::var_os("NCU"),
            path_env: std::env::var_os("PATH"),
            ncu_path_file: ncu_path_file.to_path_buf(),
            device_nodes: vec![PathBuf::from("/dev/nvidiactl")],
            // KPROF_SKIP_GPU_CHECK=1 lets tests drive the pipeline with a fake ncu on
            // machines without a GPU; ncu itself is still looked for.
            driver: if std::env::var("KPROF_SKIP_GPU_CHECK").is_ok_and(|v| v == "1") {
                Ok("not checked (KPROF_SKIP_GPU_CHECK=1)".into())
            } else {
                probe_cuda_driver()
            },
        }
    }
}

/// Tries to load the CUDA driver library the way CUDA programs do.
pub fn probe_cuda_driver() -> Result<String, String> {
    let names: &[&str] = if cfg!(windows) { &["nvcuda.dll"] } else { &["libcuda.so.1", "libcuda.so"] };
    let mut last = String::new();
    for name in names {
        // SAFETY: loading libcuda runs no code of ours; its initialisers are the
        // same ones every CUDA program runs.
        match unsafe { libloading::Library::new(*name) } {
            Ok(_) => return Ok(format!("{name} loaded")),
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!("the NVIDIA driver library ({}) could not be loaded: {last}", names.join(" or ")))
}

/// Runs the checks profiling needs; returns them all and the ncu found, if any.
pub fn check_profiling_prerequisites(inputs: &ProbeInputs) -> (Vec<Check>, Option<NcuLocation>) {
    let mut checks = Vec::new();
    let ncu = locate_ncu(inputs.ncu_env.as_deref(), inputs.path_env.as_deref(), &inputs.ncu_path_file);
    let found = ncu.as_ref().ok().cloned();
    checks.push(match ncu {
        Ok(loc) => Check {
            what: CheckId::Ncu,
            result: Ok(format!("{} (from {})", loc.path.display(), loc.source)),
            fix: None,
            unknown: false,
        },
        Err(e) => Check {
            what: CheckId::Ncu,
            result: Err(format!("Nsight Compute's `ncu` was not found: {e}")),
            fix: Some(if e.bad_override {
                "point NCU at the ncu binary (e.g. NCU=/usr/local/cuda/bin/ncu), or unset it".to_string()
            } else {
                format!(
                    "install Nsight Compute (it ships with the CUDA toolkit) and put it on PATH, \
                     set NCU=/path/to/ncu, or write its path into {}",
                    inputs.ncu_path_file.display()
                )
            }),
            unknown: false,
        },
    });
    checks.push(match &inputs.driver {
        Ok(d) => Check { what: CheckId::Driver, result: Ok(d.clone()), fix: None, unknown: is_skipped(d) },
        Err(e) => Check {
            what: CheckId::Driver,
            result: Err(e.clone()),
            fix: Some(
                "run on a machine with an NVIDIA GPU and its driver installed (`nvidia-smi` must work there)"
                    .to_string(),
            ),
            unknown: false,
        },
    });
    let skip = matches!(&inputs.driver, Ok(d) if is_skipped(d));
    let node = inputs.device_nodes.iter().find(|p| p.exists());
    checks.push(match (node, inputs.device_nodes.first()) {
        (None, Some(_)) if skip => Check {
            what: CheckId::Gpu,
            result: Ok("not checked (KPROF_SKIP_GPU_CHECK=1)".to_string()),
            fix: None,
            unknown: true,
        },
        (Some(p), _) => Check {
            what: CheckId::Gpu,
            result: Ok(format!("{} present", p.display())),
            fix: None,
            unknown: false,
        },
        (None, Some(p)) => Check {
            what: CheckId::Gpu,
            result: Err(format!("no NVIDIA GPU device node ({} does not exist)", p.display())),
            fix: Some(
                "check `nvidia-smi`; in a container, pass the GPU through (e.g. --gpus all)".to_string(),
            ),
            unknown: false,
        },
        (None, None) => Check {
            what: CheckId::Gpu,
            result: Ok("not checked on this platform".to_string()),
            fix: None,
            unknown: true,
        },
    });
    (checks, found)
}

/// Whether a driver finding says the GPU checks were skipped (`KPROF_SKIP_GPU_CHECK=1`).
fn is_skipped(driver: &str) -> bool {
    driver.contains("KPROF_SKIP_GPU_CHECK")
}

/// Whether the driver restricts profiling to administrators (Linux: `RmProfilingAdminOnly: 1`
/// in `/proc/driver/nvidia/params`, set by the module option
/// `NVreg_RestrictProfilingToAdminUsers`), and whether we are root. `None` when unknown.
pub fn counter_permission(params: Option<&str>, is_root: bool) -> Check {
    let admin_only = params.and_then(|p| {
        p.lines().find_map(|l| l.strip_prefix("RmProfilingAdminOnly:")).map(|v| v.trim() == "1")
    });
    let what = CheckId::CounterPermission;
    match (admin_only, is_root) {
        (Some(true), false) => Check {
            what,
            result: Err("the driver allows GPU performance counters to administrators only \
                         (RmProfilingAdminOnly: 1); ncu will fail with ERR_NVGPUCTRPERM"
                .into()),
            fix: Some(
                "load the driver with NVreg_RestrictProfilingToAdminUsers=0, or allow the ncu named in \
                 profile/ncu_path through a NOPASSWD sudo rule and profile with --sudo \
                 (see \"Counter permissions\" in docs/reference.md; `cargo kprof doctor --sudo` checks it)"
                    .into(),
            ),
            unknown: false,
        },
        (Some(true), true) => Check {
            what,
            result: Ok("administrators only, and we are root".into()),
            fix: None,
            unknown: false,
        },
        (Some(false), _) => Check { what, result: Ok("open to all users".into()), fix: None, unknown: false },
        (None, _) => Check {
            what,
            result: Ok("no /proc/driver/nvidia/params to read; ncu reports ERR_NVGPUCTRPERM if denied".into()),
            fix: None,
            unknown: true,
        },
    }
}

/// Turns failed checks into one error that names everything missing, or returns the ncu.
pub fn require_profiling(checks: &[Check], ncu: Option<NcuLocation>) -> Result<NcuLocation, Failure> {
    require_checks(checks)?;
    ncu.ok_or_else(|| {
        Failure::new(ExitCode::MissingTool, "cannot profile on this machine: ncu was not found")
    })
}

/// Turns failed checks into one error that names everything missing (exit code 5).
pub fn require_checks(checks: &[Check]) -> Result<(), Failure> {
    let failed: Vec<&Check> = checks.iter().filter(|c| c.result.is_err()).collect();
    if failed.is_empty() {
        return Ok(());
    }
    let mut msg = String::from("cannot profile on this machine:");
    for c in &failed {
        if let Err(problem) = &c.result {
            msg.push_str(&format!("\n  - {}: {}", c.what, problem));
        }
    }
    let mut f = Failure::new(ExitCode::MissingTool, msg);
    for c in &failed {
        if let Some(fix) = &c.fix {
            f = f.help(format!("{}: {}", c.what, fix));
        }
    }
    Err(f
        .help(
            "or profile on a machine that has them: `cargo kprof archive -o FILE` (with this command's \
             selection) builds and packs here, `cargo-kprof kprof run --archive FILE --workspace-remap DIR` \
             profiles there with only ncu and the driver",
        )
        .help("`--dry-run` builds and writes the commands without a GPU"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_permission_from_driver_params() {
        let admin = "ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n";
        assert!(counter_permission(Some(admin), false).result.is_err());
        assert!(counter_permission(Some(admin), true).result.is_ok());
        assert!(counter_permission(Some("RmProfilingAdminOnly: 0"), false).result.is_ok());
        let unknown = counter_permission(None, false);
        assert!(unknown.unknown && unknown.result.is_ok(), "{unknown:?}");
    }

    #[test]
    fn names_everything_missing_at_once() {
        let t = tempfile::tempdir().unwrap();
        let inputs = ProbeInputs {
            ncu_env: None,
            path_env: Some(t.path().as_os_str().to_owned()),
            ncu_path_file: t.path().join("profile/ncu_path"),
            device_nodes: vec![t.path().join("nvidiactl")],
            driver: Err("the NVIDIA driver library (libcuda.so.1) could not be loaded: nope".into()),
        };
        let (checks, ncu) = check_profiling_prerequisites(&inputs);
        assert!(ncu.is_none());
        let err = require_profiling(&checks, ncu).unwrap_err();
        assert_eq!(err.code, ExitCode::MissingTool);
        let text = err.to_string();
        for needle in [
            "ncu: Nsight Compute's `ncu` was not found: NCU is not set; `ncu` is not on PATH;",
            "CUDA driver: the NVIDIA driver library (libcuda.so.1) could not be loaded",
            "GPU: no NVIDIA GPU device node",
            "help: ncu: install Nsight Compute",
            "NCU=/path/to/ncu",
            "profile/ncu_path",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
        }
    }

    #[test]
    fn passes_when_all_present() {
        let t = tempfile::tempdir().unwrap();
        let ncu = t.path().join("ncu");
        std::fs::write(&ncu, "").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&ncu, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let inputs = ProbeInputs {
            ncu_env: Some(ncu.clone().into_os_string()),
            path_env: None,
            ncu_path_file: t.path().join("ncu_path"),
            device_nodes: vec![t.path().to_path_buf()],
            driver: Ok("libcuda.so.1 loaded".into()),
        };
        let (checks, found) = check_profiling_prerequisites(&inputs);
        assert_eq!(require_profiling(&checks, found).unwrap().path, ncu);
    }
}
