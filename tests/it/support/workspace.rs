//! A small cargo package in a temporary directory, and running the `cargo-kprof` binary
//! on it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A crate `demo` with `copy` and `fma` benches (plain mains) and the given kprof tables.
pub struct Workspace {
    /// The temp dir holding the package.
    pub dir: tempfile::TempDir,
}

impl Workspace {
    /// A crate `demo` with a `copy` bench (a plain main) and `[package.metadata.kprof]`.
    pub fn new(kprof_toml: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("benches")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "").unwrap();
        std::fs::write(root.join("benches/copy.rs"), "fn main() {}\n").unwrap();
        std::fs::write(root.join("benches/fma.rs"), "fn main() {}\n").unwrap();
        std::fs::write(
            root.join("Cargo.toml"),
            format!(
                "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                 [[bench]]\nname = \"copy\"\nharness = false\n\n[[bench]]\nname = \"fma\"\nharness = false\n\n{kprof_toml}"
            ),
        )
        .unwrap();
        Workspace { dir }
    }

    /// Like [`Workspace::new`], and the package depends on a stand-in `kprof-harness` (an
    /// empty library), so its benches run as harness targets, as the demo's do.
    pub fn with_harness(kprof_toml: &str) -> Self {
        let ws = Workspace::new(kprof_toml);
        let stub = ws.root().join("kprof-harness");
        std::fs::create_dir_all(stub.join("src")).unwrap();
        std::fs::write(stub.join("src/lib.rs"), "").unwrap();
        std::fs::write(
            stub.join("Cargo.toml"),
            "[package]\nname = \"kprof-harness\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )
        .unwrap();
        let manifest = std::fs::read_to_string(ws.manifest()).unwrap().replacen(
            "[[bench]]",
            "[dependencies]\nkprof-harness = { path = \"kprof-harness\" }\n\n[[bench]]",
            1,
        );
        std::fs::write(ws.manifest(), manifest).unwrap();
        ws
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn manifest(&self) -> PathBuf {
        self.root().join("Cargo.toml")
    }

    /// Runs `cargo-kprof kprof ARGS --manifest-path <this>` with NCU unset unless given,
    /// `KPROF_PLAN=fixed` and `KPROF_CENSUS=ncu` unless given, and without the variables of a Slurm job array or Kubernetes Indexed Job the tests
    /// may run in (they would choose a shard).
    pub fn kprof(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.command(args, env).output().unwrap()
    }

    /// The command [`Workspace::kprof`] runs, not started.
    pub fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut cmd = kprof_bin();
        cmd.arg("kprof").args(args).arg("--manifest-path").arg(self.manifest());
        cmd.env_remove("NCU").env("CARGO_TARGET_DIR", self.root().join("target"));
        for var in kprof_testkit::JOB_ARRAY_VARS {
            cmd.env_remove(var);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    }

    /// [`Workspace::kprof`] with the fake ncu `ncu` replaying the recordings in `replay` and
    /// writing the arguments it was given to `argv`, and no GPU check.
    pub fn kprof_replaying(&self, args: &[&str], ncu: &Path, argv: &Path, replay: &Path) -> Output {
        self.kprof(
            args,
            &[
                ("NCU", ncu.to_str().unwrap()),
                ("KPROF_SKIP_GPU_CHECK", "1"),
                ("FAKE_NCU_ARGV", argv.to_str().unwrap()),
                ("FAKE_NCU_REPLAY", replay.to_str().unwrap()),
            ],
        )
    }

    pub fn profiles(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(self.root().join("profile"))
            .map(|rd| rd.map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect())
            .unwrap_or_default();
        dirs.sort();
        dirs
    }

    /// The profile directories, without the hidden folders batches write their pages to.
    pub fn profile_dirs(&self) -> Vec<PathBuf> {
        let hidden = |p: &PathBuf| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'));
        self.profiles().into_iter().filter(|p| !hidden(p)).collect()
    }
}

/// When a test ends well, the scripts and workflows kprof wrote in its workspace must pass
/// shellcheck and zizmor (see [`super::lint`]).
impl Drop for Workspace {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            super::lint::lint_written(self.root());
        }
    }
}

/// Writes an executable `#!/bin/sh` script at `path`.
pub fn write_script(path: &Path, body: &str) -> PathBuf {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path.to_path_buf()
}

/// `PATH` with `dirs` in front of this process's own.
pub fn path_with(dirs: &[&Path]) -> String {
    let rest = std::env::var_os("PATH").unwrap_or_default();
    let all: Vec<PathBuf> =
        dirs.iter().map(|d| d.to_path_buf()).chain(std::env::split_paths(&rest)).collect();
    std::env::join_paths(all).unwrap().into_string().unwrap()
}

/// The `cargo-kprof` binary as the tests run it, with no argument yet: the stages run as
/// the replayed recordings were made. Those hold one run per follow-up stage, so
/// `KPROF_PLAN=fixed` (a test of the planner's merged runs sets KPROF_PLAN itself, its
/// pages were recorded that way); a census is ncu's pass, whether or not this machine has
/// CUPTI (the tests of the traced census set KPROF_CENSUS themselves).
pub fn kprof_bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cargo-kprof"));
    cmd.env("KPROF_PLAN", "fixed").env("KPROF_CENSUS", "ncu");
    cmd
}

/// `cargo-kprof kprof ARGS` in `cwd` with `env` added, without ncu, a step summary or the
/// variables of a job array the tests may run in.
pub fn kprof_env(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = kprof_bin();
    cmd.arg("kprof").args(args).current_dir(cwd);
    cmd.env("NCU", "/nonexistent/ncu").env("NO_COLOR", "1").env_remove("GITHUB_STEP_SUMMARY");
    for var in kprof_testkit::JOB_ARRAY_VARS {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}
