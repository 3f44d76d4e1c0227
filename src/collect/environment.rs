//! `details/00_environment.txt`: the versions and machine state the numbers depend on.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use crate::model::kinds::Privilege;
use crate::process::{self, Ending, ProcessBuilder, RunOptions};
use crate::profile::fs::write_atomic;
use crate::profile::ProfileDir;
use crate::shell::{printable, Shell};

/// The longest a version probe (`ncu --version`, `nvidia-smi`, `git`) may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// `details/00_environment.txt`: what the numbers depend on. Tools that are missing are
/// noted as such; nothing here stops a run. (`ncu --version` needs no privilege, so it
/// runs without sudo even when the stages run through it.)
pub fn write_environment(
    dir: &ProfileDir,
    ncu: &Path,
    privilege: Privilege,
    workspace_root: &Path,
    shell: &Shell,
) -> Result<()> {
    let run = |program: &Path, args: &[&str], cwd: Option<&Path>| -> String {
        let mut c = ProcessBuilder::new(program);
        c.args(args);
        if let Some(d) = cwd {
            c.cwd(d);
        }
        let done = process::run(&c, RunOptions { timeout: Some(PROBE_TIMEOUT), ..Default::default() }, shell);
        match (&done.ending, &done.start_error) {
            (_, Some(e)) => format!("(not available: {e})"),
            (Ending::Exited(s), _) if s.success() => done.stdout_text().trim().to_string(),
            (Ending::Exited(s), _) => {
                format!("({}) {}", process::describe_status(s), printable(done.stderr_text().trim()))
            }
            (other, _) => format!("({other})"),
        }
    };
    let git = Path::new("git");
    let dirty = run(git, &["status", "--porcelain"], Some(workspace_root));
    let privilege_line = match privilege {
        Privilege::None => "none (ncu runs as this user)".to_string(),
        Privilege::Sudo => {
            format!("sudo (sudo -n {}, as root)", crate::process::shell_quote(&ncu.to_string_lossy()))
        }
    };
    let text = format!(
        "kprof version: {}\nncu: {}\n{}\nprivilege: {}\nGPU (nvidia-smi): {}\nrustc: {}\nworkspace: {}\ngit commit: {}\ngit dirty: {}\n",
        env!("CARGO_PKG_VERSION"),
        ncu.display(),
        run(ncu, &["--version"], None),
        privilege_line,
        run(
            Path::new("nvidia-smi"),
            &[
                "--query-gpu=name,driver_version,compute_cap,clocks.sm,clocks.max.sm,clocks.mem",
                "--format=csv,noheader"
            ],
            None
        ),
        run(Path::new("rustc"), &["--version"], None),
        workspace_root.display(),
        run(git, &["rev-parse", "HEAD"], Some(workspace_root)),
        if dirty.starts_with('(') { dirty } else { (!dirty.is_empty()).to_string() },
    );
    write_atomic(&dir.environment_path(), &text)
}
