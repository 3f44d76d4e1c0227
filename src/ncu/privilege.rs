//! How ncu gets access to the GPU performance counters: the privilege model.
//!
//! `none` (the default) runs ncu directly: the `NCU` override, then `PATH`, then
//! `profile/ncu_path`. `sudo` (`--sudo`, or `privilege = "sudo"` in the manifests) runs
//! `sudo -n "$(cat profile/ncu_path)" ...` and nothing else: the binary comes only from
//! that file, never from `PATH` or `NCU`, so a sudoers NOPASSWD rule names exactly one
//! binary. sudo always gets `-n` and no input (stdin is `/dev/null`): kprof never asks
//! for, reads, stores or passes a password. When sudo refuses, the run stops at once
//! with the setup guide and exit code 7.
//!
//! sudo resets the environment, so the harness' window variables (`KPROF_PROFILE`,
//! `KPROF_CASE`, `KPROF_LAUNCH_COUNT`) and the `--env` pairs would be lost on the way
//! to the program. Under sudo they go on the target's side of ncu's command line
//! instead: `sudo -n /abs/ncu [ncu options] /usr/bin/env KEY=VALUE... program args`.
//! ncu follows child processes and `env` execs the program, so the profiled process
//! gets both the variables and ncu's injection.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{ExitCode, Failure};
pub use crate::model::kinds::Privilege;
use crate::ncu::preflight::{Check, CheckId};
use crate::process::{self, Ending, ProcessBuilder, RunOptions};
use crate::shell::Shell;

/// The program `--sudo` runs ncu through, found on `PATH`.
pub const SUDO: &str = "sudo";
/// What puts the program's environment back after sudo reset it.
pub const ENV_PROGRAM: &str = "/usr/bin/env";
/// How long `doctor` waits for `sudo -n <ncu> --version`.
pub const VERSION_CHECK_TIMEOUT: Duration = Duration::from_secs(20);

/// The steps of the NOPASSWD setup, shared by both guides.
macro_rules! sudo_setup_steps {
    () => {
        "  readlink -f \"$(command -v ncu)\"                         # the ncu to allow, as an absolute path\n\
         \x20 sudo visudo -f /etc/sudoers.d/kernel-profiler-ncu       # and write in it the one line:\n\
         \x20     USERNAME ALL=(root) NOPASSWD: /absolute/path/to/ncu\n\
         \x20 printf '%s\\n' /absolute/path/to/ncu > profile/ncu_path  # in the workspace root\n\
         \x20 sudo -n \"$(cat profile/ncu_path)\" --version             # must print the version, no prompt\n\
         Then profile with --sudo, or set privilege = \"sudo\" in [workspace.metadata.kprof].\n\
         sudo resets the environment, so kprof passes KPROF_PROFILE, KPROF_CASE,\n\
         KPROF_LAUNCH_COUNT and the --env pairs to the profiled program as arguments after\n\
         ncu's options (/usr/bin/env KEY=VALUE program ...); anything else it needs, such as\n\
         LD_LIBRARY_PATH or CUDA_VISIBLE_DEVICES, must be given with --env. It runs as root.\n\
         kprof never asks for, reads, stores or passes a password: sudo always gets -n and no input."
    };
}

/// Printed when ncu reports `ERR_NVGPUCTRPERM`: the two ways to get counter access.
pub const PERMISSION_GUIDE: &str = concat!(
    "ncu may not read the GPU performance counters here (ERR_NVGPUCTRPERM): the driver\n\
     allows them to administrators only. Either let every user profile (load the nvidia\n\
     module with NVreg_RestrictProfilingToAdminUsers=0, then reload the driver or reboot),\n\
     or let kprof run exactly one ncu binary through sudo without a password:\n",
    sudo_setup_steps!()
);

/// Printed when `--sudo` cannot work: sudo wants a password, or the setup is incomplete.
pub const SUDO_GUIDE: &str = concat!(
    "--sudo runs `sudo -n \"$(cat profile/ncu_path)\" ...` and nothing else. To allow that\n\
     one ncu binary without a password:\n",
    sudo_setup_steps!()
);

/// The ncu binary `--sudo` runs: the one line of `ncu_path_file`, which must be an
/// absolute path to an executable file. `Err` is a sentence naming the file.
pub fn sudo_ncu_path(ncu_path_file: &Path) -> Result<PathBuf, String> {
    let file = ncu_path_file.display();
    let text = std::fs::read_to_string(ncu_path_file).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!("{file} does not exist")
        } else {
            format!("{file} cannot be read: {e}")
        }
    })?;
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let line = match lines.as_slice() {
        [line] => *line,
        [] => return Err(format!("{file} is empty")),
        more => return Err(format!("{file} has {} lines; it must hold exactly one path", more.len())),
    };
    let path = PathBuf::from(line);
    if !path.is_absolute() {
        return Err(format!("{file} holds `{line}`, which is not an absolute path"));
    }
    match path.metadata() {
        Err(_) => Err(format!("{file} names {line}, which does not exist")),
        Ok(m) if !m.is_file() => Err(format!("{file} names {line}, which is not a file")),
        Ok(m) if !is_executable(&m) => Err(format!("{file} names {line}, which is not executable")),
        Ok(_) => Ok(path),
    }
}

#[cfg(unix)]
fn is_executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_: &std::fs::Metadata) -> bool {
    true
}

/// The fix for a bad `profile/ncu_path`.
fn ncu_path_fix(ncu_path_file: &Path) -> String {
    format!(
        "write the absolute path that your sudoers NOPASSWD rule names: \
         printf '%s\\n' /absolute/path/to/ncu > {}",
        ncu_path_file.display()
    )
}

/// Everything `--sudo` needs before a stage runs: `sudo` on `PATH` and a usable
/// `profile/ncu_path`. Returns the ncu to run; fails with exit code 7 and the guide.
pub fn require_sudo(ncu_path_file: &Path, path_env: Option<&OsStr>) -> Result<PathBuf, Failure> {
    if path_env.and_then(|p| crate::ncu::locate::find_in_path(SUDO, p)).is_none() {
        return Err(Failure::new(
            ExitCode::Permission,
            format!("--sudo runs ncu through `sudo -n`, but `sudo` is not on PATH\n\n{SUDO_GUIDE}"),
        )
        .help("install sudo, or let every user profile and run without --sudo (see above)"));
    }
    sudo_ncu_path(ncu_path_file).map_err(|problem| {
        Failure::new(
            ExitCode::Permission,
            format!("--sudo runs only the ncu named in profile/ncu_path: {problem}\n\n{SUDO_GUIDE}"),
        )
        .help(ncu_path_fix(ncu_path_file))
    })
}

/// The line in which sudo refused to run the command without a password (or at all),
/// if `output` has one: `sudo: a password is required`, `sudo: a terminal is required
/// to read the password`, `... is not in the sudoers file`, and the like.
pub fn sudo_refusal(output: &str) -> Option<&str> {
    const FROM_SUDO: [&str; 6] = [
        "a password is required",
        "a terminal is required",
        "no tty present",
        "must have a tty",
        "command not found",
        "unable to execute",
    ];
    output.lines().map(str::trim).find(|line| {
        line.contains("is not in the sudoers file")
            || (line.starts_with("Sorry, user") && line.contains("is not allowed to"))
            || (line.starts_with("sudo:") && FROM_SUDO.iter().any(|m| line.contains(m)))
    })
}

/// The error for a stage that sudo refused: what sudo said, then the guide.
pub fn sudo_refused(line: &str) -> Failure {
    Failure::new(
        ExitCode::Permission,
        format!("sudo refused to run ncu without a password (it said: {line})\n\n{SUDO_GUIDE}"),
    )
}

/// Runs `SUDO -n NCU --version` with no input and a time limit, as `doctor` does; the
/// version line, or what went wrong (sudo's own words when it refused).
pub fn sudo_version(sudo: &Path, ncu: &Path, timeout: Duration, shell: &Shell) -> Result<String, String> {
    let shown = format!("sudo -n {} --version", crate::process::shell_quote(&ncu.to_string_lossy()));
    let mut cmd = ProcessBuilder::new(sudo);
    cmd.arg("-n").arg(ncu).arg("--version");
    let done = process::run(&cmd, RunOptions { timeout: Some(timeout), ..Default::default() }, shell);
    let status = match &done.ending {
        Ending::Exited(status) => *status,
        Ending::TimedOut => return Err(format!("`{shown}` did not finish within {timeout:?}")),
        Ending::Interrupted(signal) => return Err(format!("`{shown}` was stopped: kprof received {signal}")),
        Ending::NotStarted(_) => {
            return Err(format!(
                "could not start {}: {}",
                sudo.display(),
                done.start_error.as_deref().unwrap_or("unknown error")
            ))
        }
    };
    let (stdout, stderr) = (done.stdout_text(), done.stderr_text());
    if status.success() {
        let version = stdout.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
        return Ok(format!("{version} (through `{shown}`)"));
    }
    let said = sudo_refusal(&stderr)
        .map(str::to_string)
        .unwrap_or_else(|| crate::process::tail_lines(stderr.trim(), 3).replace('\n', " / "));
    Err(format!("`{shown}` failed ({status}): {said}"))
}

/// `doctor`'s checks of the sudo setup: `sudo` on `PATH`, `profile/ncu_path`, and a
/// passwordless `sudo -n <ncu> --version`.
pub fn sudo_checks(
    ncu_path_file: &Path,
    path_env: Option<&OsStr>,
    timeout: Duration,
    shell: &Shell,
) -> Vec<Check> {
    let mut checks = Vec::new();
    let sudo = path_env.and_then(|p| crate::ncu::locate::find_in_path(SUDO, p));
    checks.push(match &sudo {
        Some(p) => {
            Check { what: CheckId::Sudo, result: Ok(p.display().to_string()), fix: None, unknown: false }
        }
        None => Check {
            what: CheckId::Sudo,
            result: Err("`sudo` is not on PATH".into()),
            fix: Some("install sudo, or let every user profile and run without --sudo".into()),
            unknown: false,
        },
    });
    let ncu = sudo_ncu_path(ncu_path_file);
    checks.push(match &ncu {
        Ok(p) => Check {
            what: CheckId::NcuPathFile,
            result: Ok(format!("{} (the only ncu --sudo runs)", p.display())),
            fix: None,
            unknown: false,
        },
        Err(problem) => Check {
            what: CheckId::NcuPathFile,
            result: Err(problem.clone()),
            fix: Some(ncu_path_fix(ncu_path_file)),
            unknown: false,
        },
    });
    if let (Some(sudo), Ok(ncu)) = (sudo, ncu) {
        checks.push(match sudo_version(&sudo, &ncu, timeout, shell) {
            Ok(v) => Check { what: CheckId::SudoNcu, result: Ok(v), fix: None, unknown: false },
            Err(problem) => Check {
                what: CheckId::SudoNcu,
                result: Err(problem),
                fix: Some(format!("add a NOPASSWD sudoers rule for exactly {} (guide below)", ncu.display())),
                unknown: false,
            },
        });
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}")).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        p
    }

    #[test]
    fn ncu_path_must_be_one_absolute_executable() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("ncu_path");
        let f = file.display().to_string();
        assert_eq!(sudo_ncu_path(&file).unwrap_err(), format!("{f} does not exist"));
        std::fs::write(&file, "\n  \n").unwrap();
        assert_eq!(sudo_ncu_path(&file).unwrap_err(), format!("{f} is empty"));
        std::fs::write(&file, "/a/ncu\n/b/ncu\n").unwrap();
        assert_eq!(
            sudo_ncu_path(&file).unwrap_err(),
            format!("{f} has 2 lines; it must hold exactly one path")
        );
        std::fs::write(&file, "ncu\n").unwrap();
        assert_eq!(
            sudo_ncu_path(&file).unwrap_err(),
            format!("{f} holds `ncu`, which is not an absolute path")
        );
        let missing = t.path().join("cuda/bin/ncu");
        std::fs::write(&file, format!("{}\n", missing.display())).unwrap();
        assert_eq!(
            sudo_ncu_path(&file).unwrap_err(),
            format!("{f} names {}, which does not exist", missing.display())
        );
        std::fs::write(&file, format!("{}\n", t.path().display())).unwrap();
        assert!(sudo_ncu_path(&file).unwrap_err().ends_with("which is not a file"));
        let plain = t.path().join("plain");
        std::fs::write(&plain, "").unwrap();
        std::fs::write(&file, format!("{}\n", plain.display())).unwrap();
        #[cfg(unix)]
        assert!(sudo_ncu_path(&file).unwrap_err().ends_with("which is not executable"));
        let ncu = script(t.path(), "ncu", "");
        std::fs::write(&file, format!("  {}  \n\n", ncu.display())).unwrap();
        assert_eq!(sudo_ncu_path(&file).unwrap(), ncu);
    }

    #[test]
    fn require_sudo_names_the_file_and_the_fix() {
        let t = tempfile::tempdir().unwrap();
        script(t.path(), "sudo", "");
        let file = t.path().join("ncu_path");
        std::fs::write(&file, "ncu\n").unwrap();
        let err = require_sudo(&file, Some(t.path().as_os_str())).unwrap_err();
        assert_eq!(err.code, ExitCode::Permission);
        let text = err.to_string();
        assert!(
            text.starts_with(&format!(
                "--sudo runs only the ncu named in profile/ncu_path: {} holds `ncu`, which is not an absolute path\n\n{SUDO_GUIDE}",
                file.display()
            )),
            "{text}"
        );
        assert!(
            text.ends_with(&format!(
                "help: write the absolute path that your sudoers NOPASSWD rule names: \
                 printf '%s\\n' /absolute/path/to/ncu > {}",
                file.display()
            )),
            "{text}"
        );
        let empty = tempfile::tempdir().unwrap();
        let err = require_sudo(&file, Some(empty.path().as_os_str())).unwrap_err();
        assert_eq!(err.code, ExitCode::Permission);
        assert!(
            err.message.starts_with("--sudo runs ncu through `sudo -n`, but `sudo` is not on PATH"),
            "{err}"
        );
    }

    #[test]
    fn sudo_refusals_are_recognised() {
        for line in [
            "sudo: a password is required",
            "sudo: a terminal is required to read the password; either use the -S option to read from standard input or configure an askpass helper",
            "alice is not in the sudoers file.  This incident will be reported.",
            "sudo: sorry, you must have a tty to run sudo",
            "Sorry, user alice is not allowed to execute '/opt/ncu --version' as root on gpu1.",
        ] {
            assert_eq!(sudo_refusal(&format!("some output\n{line}\n")), Some(line), "{line}");
        }
        // Warnings sudo prints while still running the command, and the program's output.
        assert_eq!(sudo_refusal("sudo: unable to resolve host gpu1: Name or service not known\n"), None);
        assert_eq!(sudo_refusal("==PROF== Disconnected from process 42\n"), None);
    }

    #[test]
    fn guides_say_how_and_promise_no_password() {
        for guide in [PERMISSION_GUIDE, SUDO_GUIDE] {
            for needle in [
                "NOPASSWD: /absolute/path/to/ncu",
                "printf '%s\\n' /absolute/path/to/ncu > profile/ncu_path",
                "sudo -n \"$(cat profile/ncu_path)\" --version",
                "KPROF_PROFILE, KPROF_CASE,\nKPROF_LAUNCH_COUNT and the --env pairs to the profiled program",
                "never asks for, reads, stores or passes a password",
            ] {
                assert!(guide.contains(needle), "{needle:?} missing in:\n{guide}");
            }
        }
        assert!(PERMISSION_GUIDE
            .starts_with("ncu may not read the GPU performance counters here (ERR_NVGPUCTRPERM)"));
        assert!(PERMISSION_GUIDE.contains("NVreg_RestrictProfilingToAdminUsers=0"));
    }

    #[cfg(unix)]
    #[test]
    fn version_through_sudo_passes_fails_and_times_out() {
        let t = tempfile::tempdir().unwrap();
        let ncu = script(t.path(), "ncu", "echo 'NVIDIA (R) Nsight Compute Command Line Profiler'\necho 'Version 2025.3.1.0 (build 36398880) (public-release)'\n");
        let argv = t.path().join("argv");
        let rule = script(
            t.path(),
            "sudo-rule",
            &format!(
                "printf '%s\\n' \"$@\" > {}\n[ \"$1\" = -n ] || exit 99\nshift\nexec \"$@\"\n",
                argv.display()
            ),
        );
        let got = sudo_version(&rule, &ncu, Duration::from_secs(10), &Shell::quiet()).unwrap();
        assert_eq!(
            got,
            format!(
                "Version 2025.3.1.0 (build 36398880) (public-release) (through `sudo -n {} --version`)",
                ncu.display()
            )
        );
        assert_eq!(std::fs::read_to_string(&argv).unwrap(), format!("-n\n{}\n--version\n", ncu.display()));
        let refuse = script(t.path(), "sudo-refuse", "echo 'sudo: a password is required' >&2\nexit 1\n");
        let err = sudo_version(&refuse, &ncu, Duration::from_secs(10), &Shell::quiet()).unwrap_err();
        assert!(err.ends_with("failed (exit status: 1): sudo: a password is required"), "{err}");
        let hang = script(t.path(), "sudo-hang", "exec sleep 30\n");
        let t0 = Instant::now();
        let err = sudo_version(&hang, &ncu, Duration::from_millis(300), &Shell::quiet()).unwrap_err();
        assert!(err.contains("--version` did not finish within 300ms"), "{err}");
        assert!(t0.elapsed() < Duration::from_secs(10));
    }
}
