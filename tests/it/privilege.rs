//! The privilege model end to end: `--sudo` runs only `sudo -n "$(cat profile/ncu_path)"`
//! with the program's variables on the target's side, and every way counter access can be
//! refused (ncu's ERR_NVGPUCTRPERM, sudo asking for a password, a bad profile/ncu_path)
//! stops at once with exit code 7 and the setup guide.
//!
//! A fake `sudo` (first on PATH) records its arguments and its standard input, then either
//! refuses as sudo does without a NOPASSWD rule, or resets the environment and runs the
//! command as a NOPASSWD rule would. A fake `ncu` replays the H200 recordings of the stage
//! commands and, like ncu, runs the target: everything after `--log-file FILE`.

use std::path::PathBuf;

use crate::support::recorded_argv::recorded_ncu_argv;
use crate::support::{fixture_details, path_with, shell_words, text, write_script, Workspace};
use cargo_kprof::ncu::privilege::SUDO_GUIDE;

/// A hand-written line, not a recording: ncu's counter-permission error as NVIDIA's
/// ERR_NVGPUCTRPERM page documents it. The H200 machine lets every user read the counters
/// (fixtures/h200/archive-runs/perm_env.txt), so the error could not be recorded there; a
/// recording at fixtures/h200/misc/err_nvgpuctrperm.log replaces this line when one exists.
const HAND_WRITTEN_ERR_NVGPUCTRPERM: &str = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0. For instructions on enabling permissions and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM";
/// What sudo prints when a command needs a password and `-n` forbids asking.
const SUDO_PASSWORD_REQUIRED: &str = "sudo: a password is required";

/// The recording at `fixtures/<rel>` when there is one, else `documented`.
fn recorded_or(rel: &str, documented: &str) -> String {
    std::fs::read_to_string(crate::support::fixtures().join(rel)).unwrap_or_else(|_| documented.to_string())
}

/// A workspace whose `copy` bench is a harness kernel and writes the variables it was
/// given to `$FAKE_TARGET_ENV`.
fn workspace(extra_toml: &str) -> Workspace {
    let ws = Workspace::new(&format!(
        "{extra_toml}[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\nruntime = \"harness\"\n"
    ));
    std::fs::write(
        ws.root().join("benches/copy.rs"),
        r#"fn main() {
    if let Ok(out) = std::env::var("FAKE_TARGET_ENV") {
        let mut s = String::new();
        for k in ["KPROF_PROFILE", "KPROF_CASE", "KPROF_LAUNCH_COUNT", "NO_GRAPH"] {
            s.push_str(&format!("{k}={}\n", std::env::var(k).unwrap_or_else(|_| "<unset>".into())));
        }
        std::fs::write(out, s).unwrap();
    }
}
"#,
    )
    .unwrap();
    ws
}

/// The fake tools of one test, in `<workspace>/tools`.
struct Tools {
    dir: PathBuf,
    /// The ncu named in profile/ncu_path.
    ncu: PathBuf,
    /// The directory holding the fake sudo.
    sudo_dir: PathBuf,
    /// A directory with a decoy `ncu`, put on PATH (and NCU points at it).
    decoy_dir: PathBuf,
}

impl Tools {
    fn new(ws: &Workspace, ncu_body: &str) -> Tools {
        let dir = ws.root().join("tools");
        let ncu = write_script(&dir.join("nvidia/bin/ncu"), ncu_body);
        let sudo_dir = dir.join("sudo-bin");
        crate::support::fake_sudo::write(&sudo_dir);
        let decoy_dir = dir.join("decoy");
        write_script(
            &decoy_dir.join("ncu"),
            &format!("echo \"$@\" >> {}\nexit 3\n", dir.join("decoy_used").display()),
        );
        Tools { dir, ncu, sudo_dir, decoy_dir }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The environment of a run: the fake sudo and the decoy first on PATH, NCU at the decoy.
    fn env(&self, extra: &[(&str, String)]) -> Vec<(String, String)> {
        let mut env = vec![
            ("PATH".to_string(), path_with(&[&self.sudo_dir, &self.decoy_dir])),
            ("NCU".to_string(), self.decoy_dir.join("ncu").display().to_string()),
            ("KPROF_SKIP_GPU_CHECK".to_string(), "1".to_string()),
            ("FAKE_SUDO_ARGV".to_string(), self.file("sudo_argv").display().to_string()),
            ("FAKE_SUDO_STDIN".to_string(), self.file("sudo_stdin").display().to_string()),
            ("FAKE_NCU_ARGV".to_string(), self.file("ncu_argv").display().to_string()),
            ("FAKE_TARGET_ENV".to_string(), self.file("target_env").display().to_string()),
        ];
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
        env
    }

    /// Each recorded call of `name` (`sudo_argv`, `ncu_argv`): its arguments.
    fn calls(&self, name: &str) -> Vec<Vec<String>> {
        crate::support::fake_ncu::calls(&self.file(name))
    }

    fn decoy_used(&self) -> bool {
        self.file("decoy_used").exists()
    }
}

/// Writes `profile/ncu_path` of the workspace.
fn write_ncu_path(ws: &Workspace, content: &str) -> PathBuf {
    let file = ws.root().join("profile/ncu_path");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, content).unwrap();
    file
}

fn kprof(ws: &Workspace, args: &[&str], env: &[(String, String)]) -> std::process::Output {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    ws.kprof(args, &env)
}

/// Replays the stages and runs the target, as ncu does.
const REPLAYING_NCU: &str = r#"if [ "$1" = --version ]; then
  echo 'NVIDIA (R) Nsight Compute Command Line Profiler'
  echo 'Version 2025.3.1.0 (build 36398880) (public-release)'
  exit 0
fi
for a in "$@"; do printf '%s\n' "$a" >> "$FAKE_NCU_ARGV"; done
printf -- '---\n' >> "$FAKE_NCU_ARGV"
while [ $# -gt 0 ] && [ "$1" != --log-file ]; do shift; done
log="$2"; shift 2
cp "$FAKE_NCU_REPLAY/$(basename "$log")" "$log"
exec "$@"
"#;

#[test]
fn sudo_runs_only_the_ncu_in_ncu_path_with_the_variables_on_the_target_side() {
    let ws = workspace("");
    let tools = Tools::new(&ws, REPLAYING_NCU);
    write_ncu_path(&ws, &format!("{}\n", tools.ncu.display()));
    let out = kprof(
        &ws,
        &["--kernel", "copy", "--sudo", "--env", "NO_GRAPH=1"],
        &tools.env(&[("FAKE_NCU_REPLAY", fixture_details("copy_20261129_213211").display().to_string())]),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let dir = ws.profiles().into_iter().next().unwrap();
    let spec =
        cargo_kprof::profile::target_spec::TargetSpec::read_from(&dir.join("profile-target.yaml")).unwrap();
    let program = spec.target.executable.clone();
    assert!(program.contains("/kprof/release/deps/copy-"), "{program}");

    // basic, the hot lines, then the memory follow-up, all through `sudo -n <profile/ncu_path>`,
    // with the ncu options kprof used on the H200 for the same kernel (its recorded
    // commands.sh, made before `auto` collected hot lines) and for a recorded source stage
    // (`archive-runs/pair`, whose filter named its own kernel).
    let calls = tools.calls("sudo_argv");
    assert_eq!(calls.len(), 3, "{calls:?}");
    let mut recorded = recorded_ncu_argv(
        &crate::support::only_dir(
            &crate::support::recordings().join("archive-runs/cost/auto-copy/workspace/profile"),
        )
        .join("commands.sh"),
    );
    assert_eq!(recorded.len(), 2, "{recorded:?}");
    let mut source = recorded_ncu_argv(
        &crate::support::recordings()
            .join("archive-runs/pair/workspace/profile/hgemm_20261129_230345/commands.sh"),
    )
    .into_iter()
    .find(|a| a.iter().any(|x| x.ends_with("07_source_raw.csv")))
    .expect("a recorded source stage");
    assert_eq!(source[5], "regex:.*hgemm.*");
    source[5] = "regex:.*copy.*".into();
    recorded.insert(1, source);
    // The recordings predate the source page's import from basic's report; sudo runs the
    // import too.
    let after_sudo: Vec<Vec<String>> = calls.iter().map(|c| c[2..].to_vec()).collect();
    let as_recorded: Vec<Vec<String>> = calls
        .iter()
        .zip(crate::support::recorded_argv::as_before_import(&after_sudo))
        .map(|(c, ncu)| [c[..2].to_vec(), ncu].concat())
        .collect();
    assert_eq!(calls[1][2], "--import", "{:?}", calls[1]);
    for ((call, file), h200) in
        as_recorded.iter().zip(["01_basic_raw.csv", "07_source_raw.csv", "03_memory_raw.csv"]).zip(&recorded)
    {
        // The recording ends `--log-file FILE PROGRAM`: its own paths, replaced below.
        let options = &h200[..h200.len() - 3];
        assert_eq!(
            options[..6],
            ["--clock-control", "none", "--profile-from-start", "off", "--kernel-name", "regex:.*copy.*"]
        );
        let mut expected: Vec<String> = vec!["-n".into(), tools.ncu.display().to_string()];
        expected.extend(options.iter().cloned());
        expected.push("--log-file".into());
        expected.push(dir.join("details").join(file).display().to_string());
        expected.extend(
            ["/usr/bin/env", "KPROF_CASE=copy", "KPROF_LAUNCH_COUNT=1", "KPROF_PROFILE=1", "NO_GRAPH=1"]
                .map(String::from),
        );
        expected.push(program.clone());
        let added = crate::support::recorded_argv::without_later_additions;
        assert_eq!(added(call), added(&expected));
    }
    // ncu got exactly what follows `sudo -n <ncu>`.
    let ncu_calls = tools.calls("ncu_argv");
    assert_eq!(ncu_calls.len(), 3);
    assert_eq!(ncu_calls[0], calls[0][2..]);
    // Neither PATH's ncu nor NCU's was run, not even for --version.
    assert!(!tools.decoy_used(), "the ncu on PATH / in NCU ran");
    // sudo never had a terminal or any input to read a password from.
    if cfg!(target_os = "linux") {
        assert_eq!(std::fs::read_to_string(tools.file("sudo_stdin")).unwrap(), "/dev/null\n".repeat(3));
    }
    // The program got the harness window and --env through sudo's environment reset.
    assert_eq!(
        std::fs::read_to_string(tools.file("target_env")).unwrap(),
        "KPROF_PROFILE=1\nKPROF_CASE=copy\nKPROF_LAUNCH_COUNT=1\nNO_GRAPH=1\n"
    );

    // commands.sh shows exactly what ran, shell-quoted: a POSIX shell's words of each line
    // are the call, and the filter's `*` is quoted. The temporary paths need no quotes.
    let script = std::fs::read_to_string(dir.join("commands.sh")).unwrap();
    let cwd = spec.target.cwd.to_string_lossy().into_owned();
    let plain = |p: &str| p.chars().all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c));
    assert!(plain(&cwd) && plain(&tools.ncu.display().to_string()), "{cwd}");
    let stage_lines: Vec<&str> = script.lines().filter(|l| l.contains(" && sudo ")).collect();
    assert_eq!(stage_lines.len(), calls.len(), "{script}");
    for (line, call) in stage_lines.iter().zip(&calls) {
        let prefix = format!(
            "cd {cwd} && sudo -n {} --clock-control none --profile-from-start off \
             --kernel-name 'regex:.*copy.*' ",
            tools.ncu.display()
        );
        // Basic (writing its report), the source page imported from that report, or a
        // metrics stage.
        let import = format!("cd {cwd} && sudo -n {} --import ", tools.ncu.display());
        assert!(
            line.starts_with(&format!("{prefix}--metrics "))
                || line.starts_with(&format!("{prefix}--section SourceCounters --export "))
                || line.starts_with(&import),
            "{line}"
        );
        let mut words = vec!["cd".to_string(), cwd.clone(), "&&".into(), "sudo".into()];
        words.extend(call.iter().cloned());
        assert_eq!(shell_words(line), words, "{line}");
    }
    assert!(script.contains("/usr/bin/env KPROF_CASE=copy KPROF_LAUNCH_COUNT=1 KPROF_PROFILE=1 NO_GRAPH=1 /"));
    assert!(script.contains("# ncu runs through `sudo -n` (privilege sudo)"), "{script}");
    let manifest = std::fs::read_to_string(dir.join("run_manifest.yaml")).unwrap();
    assert!(manifest.contains("\nprivilege: sudo\n") && manifest.contains("status: ok"), "{manifest}");
    assert!(
        manifest
            .contains(&format!("command: cd {cwd} && sudo -n {} --clock-control none", tools.ncu.display())),
        "{manifest}"
    );
    assert_eq!(spec.privilege.mode, cargo_kprof::model::kinds::Privilege::Sudo);
    let environment = std::fs::read_to_string(dir.join("details/00_environment.txt")).unwrap();
    assert!(
        environment.contains(&format!(
            "Version 2025.3.1.0 (build 36398880) (public-release)\nprivilege: sudo (sudo -n {}, as root)\n",
            tools.ncu.display()
        )),
        "{environment}"
    );
    let report = std::fs::read_to_string(dir.join("final_report.md")).unwrap();
    assert!(report.contains("privilege mode | full_sudo"), "{report}");
}

#[test]
fn sudo_asking_for_a_password_stops_at_once_with_the_guide() {
    let ws = workspace("");
    let tools = Tools::new(&ws, REPLAYING_NCU);
    write_ncu_path(&ws, &format!("{}\n", tools.ncu.display()));
    let recorded = recorded_or("sudo/password_required.log", SUDO_PASSWORD_REQUIRED);
    let cases = [
        (recorded.clone(), cargo_kprof::ncu::privilege::sudo_refusal(&recorded).expect("sudo's refusal").to_string()),
        (
            "sudo: a terminal is required to read the password; either use the -S option to read from standard input or configure an askpass helper\n".to_string(),
            "sudo: a terminal is required to read the password; either use the -S option to read from standard input or configure an askpass helper".to_string(),
        ),
        (
            "alice is not in the sudoers file.  This incident will be reported.\n".to_string(),
            "alice is not in the sudoers file.  This incident will be reported.".to_string(),
        ),
    ];
    if !crate::support::fixtures().join("sudo/password_required.log").exists() {
        assert_eq!(cases[0].1, SUDO_PASSWORD_REQUIRED);
    }
    for (n, (says, line)) in cases.iter().enumerate() {
        let refuse = tools.file(&format!("refusal_{n}.txt"));
        std::fs::write(&refuse, says).unwrap();
        let out = kprof(
            &ws,
            &["--kernel", "copy", "--sudo"],
            &tools.env(&[("FAKE_SUDO_REFUSE", refuse.display().to_string())]),
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(7), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "error: sudo refused to run ncu without a password (it said: {line})\n\n{SUDO_GUIDE}"
            )),
            "{stderr}"
        );
        // One attempt, with -n; ncu itself never ran, and nothing later was tried.
        let calls = tools.calls("sudo_argv");
        assert_eq!(calls.len(), n + 1, "{calls:?}");
        assert_eq!(calls[n][..2], ["-n".to_string(), tools.ncu.display().to_string()]);
        assert!(tools.calls("ncu_argv").is_empty());
        let dir = &ws.profiles()[n];
        let manifest = std::fs::read_to_string(dir.join("run_manifest.yaml")).unwrap();
        assert!(manifest.contains("\nprivilege: sudo\n"), "{manifest}");
        assert!(manifest.contains("\nstatus: permission\n"), "{manifest}");
        assert_eq!(manifest.matches("- stage: ").count(), 1, "{manifest}");
    }
    assert!(!tools.decoy_used());
}

#[test]
fn ncu_without_counter_permission_stops_with_exit_7_and_the_guide() {
    let ws = workspace("");
    let error = recorded_or("h200/misc/err_nvgpuctrperm.log", HAND_WRITTEN_ERR_NVGPUCTRPERM);
    let tools = Tools::new(&ws, "");
    let error_file = tools.file("ncu_error.txt");
    std::fs::write(&error_file, &error).unwrap();
    let ncu = write_script(
        &tools.file("denied/ncu"),
        &format!(
            "[ \"$1\" = --version ] && exit 0\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> \"$FAKE_NCU_ARGV\"; done\n\
             printf -- '---\\n' >> \"$FAKE_NCU_ARGV\"\ncat {}\nexit 1\n",
            error_file.display()
        ),
    );
    let env = [
        ("NCU".to_string(), ncu.display().to_string()),
        ("KPROF_SKIP_GPU_CHECK".to_string(), "1".to_string()),
        ("FAKE_NCU_ARGV".to_string(), tools.file("ncu_argv").display().to_string()),
    ];
    let out = kprof(&ws, &["--kernel", "copy"], &env);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{stderr}");
    // The guide, as users read it (literal: the library's own constant would agree with
    // itself whatever it said).
    for line in [
        "error: ncu may not read the GPU performance counters here (ERR_NVGPUCTRPERM): the driver\n",
        "module with NVreg_RestrictProfilingToAdminUsers=0, then reload the driver or reboot),\n",
        "  sudo visudo -f /etc/sudoers.d/kernel-profiler-ncu       # and write in it the one line:\n",
        "      USERNAME ALL=(root) NOPASSWD: /absolute/path/to/ncu\n",
        "  sudo -n \"$(cat profile/ncu_path)\" --version             # must print the version, no prompt\n",
        "kprof never asks for, reads, stores or passes a password: sudo always gets -n and no input.",
    ] {
        assert!(stderr.contains(line), "missing {line:?} in\n{stderr}");
    }
    // basic was refused: no follow-up stage ran.
    let calls = tools.calls("ncu_argv");
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0][..2], ["--clock-control".to_string(), "none".to_string()]);
    let manifest = std::fs::read_to_string(ws.profiles()[0].join("run_manifest.yaml")).unwrap();
    assert!(manifest.contains("\nprivilege: none\n"), "{manifest}");
    assert!(manifest.contains("\nstatus: permission\n"), "{manifest}");
    assert!(manifest.contains("ERR_NVGPUCTRPERM"), "the log tail is kept: {manifest}");
    assert_eq!(manifest.matches("- stage: ").count(), 1, "{manifest}");
}

#[test]
fn sudo_without_a_usable_ncu_path_names_the_file_and_the_fix() {
    let ws = workspace("");
    let tools = Tools::new(&ws, REPLAYING_NCU);
    let missing = tools.file("nowhere/ncu");
    for (content, problem) in [
        ("ncu\n".to_string(), "holds `ncu`, which is not an absolute path".to_string()),
        (format!("{}\n", missing.display()), format!("names {}, which does not exist", missing.display())),
        (format!("{}\n", tools.dir.display()), format!("names {}, which is not a file", tools.dir.display())),
    ] {
        let file = write_ncu_path(&ws, &content);
        let out = kprof(&ws, &["--kernel", "copy", "--sudo"], &tools.env(&[]));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(7), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "error: --sudo runs only the ncu named in profile/ncu_path: {} {problem}\n\n{SUDO_GUIDE}\n  \
                 help: write the absolute path that your sudoers NOPASSWD rule names: \
                 printf '%s\\n' /absolute/path/to/ncu > {}\n",
                file.display(),
                file.display()
            )),
            "{stderr}"
        );
    }
    // Stopped before anything ran: no sudo, no ncu, no profile directory.
    assert!(tools.calls("sudo_argv").is_empty());
    assert!(!tools.decoy_used());
    assert!(ws.profiles().is_empty(), "{:?}", ws.profiles());
}

#[test]
fn privilege_sudo_in_the_manifest_gives_sudo_commands() {
    let ws = workspace("[package.metadata.kprof]\nprivilege = \"sudo\"\n\n");
    let tools = Tools::new(&ws, REPLAYING_NCU);
    write_ncu_path(&ws, &format!("{}\n", tools.ncu.display()));
    let out = kprof(&ws, &["--kernel", "copy", "--dry-run"], &tools.env(&[]));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let line = stdout.lines().find(|l| l.contains("--log-file")).unwrap();
    assert!(
        line.contains(&format!(
            " && sudo -n {} --clock-control none --profile-from-start off --kernel-name 'regex:.*copy.*' ",
            tools.ncu.display()
        )),
        "{line}"
    );
    assert!(
        line.contains("01_basic_raw.csv /usr/bin/env KPROF_CASE=copy KPROF_LAUNCH_COUNT=1 KPROF_PROFILE=1 /"),
        "{line}"
    );
    assert!(!line.contains(" && env "), "{line}");
    // A dry run runs nothing, sudo included.
    assert!(tools.calls("sudo_argv").is_empty());
}

#[cfg(unix)]
#[test]
fn a_timeout_under_sudo_asks_sudo_to_stop_ncu_first() {
    let ws = workspace("");
    let tools = Tools::new(
        &ws,
        "[ \"$1\" = --version ] && exit 0\ntrap 'echo TERM >> \"$FAKE_NCU_SIGNALS\"; exit 143' TERM\nsleep 60 &\nwait\n",
    );
    write_ncu_path(&ws, &format!("{}\n", tools.ncu.display()));
    let signals = tools.file("signals");
    let out = kprof(
        &ws,
        &["--kernel", "copy", "--sudo", "--timeout", "1"],
        &tools.env(&[("FAKE_NCU_SIGNALS", signals.display().to_string())]),
    );
    assert_eq!(out.status.code(), Some(9), "{}", text(&out.stderr));
    // sudo relays SIGTERM to a command it runs as root, where our SIGKILL cannot reach.
    assert_eq!(std::fs::read_to_string(&signals).unwrap(), "TERM\n");
    let manifest = std::fs::read_to_string(ws.profiles()[0].join("run_manifest.yaml")).unwrap();
    assert!(manifest.contains("\nstatus: timeout\n"), "{manifest}");
}

/// `cargo kprof doctor` with sudo configured checks the ncu sudo would run, through sudo.
#[test]
fn doctor_checks_the_sudo_setup() {
    let ws = workspace("");
    let tools = Tools::new(&ws, REPLAYING_NCU);
    let doctor = |args: &[&str], env: &[(String, String)], ws: &Workspace| {
        let mut cmd = crate::support::kprof_bin();
        cmd.args(["kprof", "doctor", "--manifest-path"]).arg(ws.manifest()).args(args);
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        cmd.output().unwrap()
    };
    let file = ws.root().join("profile/ncu_path");

    // No profile/ncu_path: named, with the fix; sudo is not tried.
    let out = doctor(&["--sudo"], &tools.env(&[]), &ws);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(7), "{stdout}");
    assert!(
        stdout.contains(&format!("FAIL    profile/ncu_path: {} does not exist\n", file.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "      fix: write the absolute path that your sudoers NOPASSWD rule names: \
             printf '%s\\n' /absolute/path/to/ncu > {}\n",
            file.display()
        )),
        "{stdout}"
    );
    assert!(stdout.contains(SUDO_GUIDE), "{stdout}");
    assert!(!stdout.contains("sudo -n ncu"), "{stdout}");
    assert!(tools.calls("sudo_argv").is_empty());

    // A passwordless rule: the version comes back through sudo.
    write_ncu_path(&ws, &format!("{}\n", tools.ncu.display()));
    let out = doctor(&["--sudo"], &tools.env(&[]), &ws);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let ncu = tools.ncu.display();
    for line in [
        format!("ok      sudo: {}\n", tools.sudo_dir.join("sudo").display()),
        format!("ok      profile/ncu_path: {ncu} (the only ncu --sudo runs)\n"),
        format!(
            "ok      sudo -n ncu: Version 2025.3.1.0 (build 36398880) (public-release) (through `sudo -n {ncu} --version`)\n"
        ),
        "profiling can work here (through sudo -n)\n".to_string(),
    ] {
        assert!(stdout.contains(&line), "missing {line:?} in\n{stdout}");
    }
    // PATH's and NCU's ncu are not what sudo runs: not checked, not run.
    assert!(!stdout.contains("ok      ncu:") && !stdout.contains("ncu version"), "{stdout}");
    assert!(!tools.decoy_used());
    assert_eq!(tools.calls("sudo_argv"), [vec!["-n".to_string(), ncu.to_string(), "--version".to_string()]]);
    if cfg!(target_os = "linux") {
        assert_eq!(std::fs::read_to_string(tools.file("sudo_stdin")).unwrap(), "/dev/null\n");
    }

    // sudo wants a password: exit 7, sudo's words, the fix and the guide.
    let refuse = tools.file("refusal.txt");
    let recorded = recorded_or("sudo/password_required.log", SUDO_PASSWORD_REQUIRED);
    std::fs::write(&refuse, &recorded).unwrap();
    let said = cargo_kprof::ncu::privilege::sudo_refusal(&recorded).expect("sudo's refusal");
    let out = doctor(&["--sudo"], &tools.env(&[("FAKE_SUDO_REFUSE", refuse.display().to_string())]), &ws);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(7), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "FAIL    sudo -n ncu: `sudo -n {ncu} --version` failed (exit status: 1): {said}\n\
             \x20       fix: add a NOPASSWD sudoers rule for exactly {ncu} (guide below)\n"
        )),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("\n{SUDO_GUIDE}\n")), "{stdout}");
    assert!(!stdout.contains("profiling can work here"), "{stdout}");

    // `privilege = "sudo"` in the manifest turns the same checks on without --sudo.
    let configured = Workspace::new("[package.metadata.kprof]\nprivilege = \"sudo\"\n");
    let out = doctor(&[], &tools.env(&[]), &configured);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(7), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "FAIL    profile/ncu_path: {} does not exist\n",
            configured.root().join("profile/ncu_path").display()
        )),
        "{stdout}"
    );
}
