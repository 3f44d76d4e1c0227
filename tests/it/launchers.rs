//! `cargo kprof archive --emit slurm|k8s|github`: the launchers written next to the
//! archive, their fields, and what the Slurm script runs (with stand-ins for sbatch and
//! cargo-kprof; `slurm.rs` runs it on a real Slurm).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::fake_ncu;
use crate::support::{path_with, write_script, Workspace};

/// Three kernels on two benches.
const THREE: &str = "[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\n\n\
                     [[package.metadata.kprof.kernels]]\nname = \"fma\"\nbench = \"fma\"\n\n\
                     [[package.metadata.kprof.kernels]]\nname = \"tiny\"\nbench = \"copy\"\n";

fn archive(ws: &Workspace, extra: &[&str]) -> Output {
    let out = ws.root().join("k.tar");
    let mut args = vec!["archive", "--workspace", "-o", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    ws.kprof(&args, &[])
}

fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn yaml(path: &Path) -> serde_yaml::Value {
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn launcher(ws: &Workspace, suffix: &str) -> PathBuf {
    ws.root().join(format!("k.tar{suffix}"))
}

#[test]
fn every_launcher_is_written_next_to_the_archive_and_listed() {
    let ws = Workspace::with_harness(THREE);
    let out = archive(&ws, &["--emit", "slurm", "--emit", "k8s", "--emit", "github", "--emit", "k8s"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for (suffix, kind) in [(".slurm.sh", "slurm"), (".k8s.yaml", "k8s"), (".github.yml", "github")] {
        let path = launcher(&ws, suffix);
        assert!(path.is_file(), "{}", path.display());
        assert!(
            stdout.contains(&format!("launcher       {} ({kind}, 3 shard(s))", path.display())),
            "{stdout}"
        );
    }

    // Kubernetes: an Indexed Job of 3 pods, one GPU each, the shard from the index.
    let job = yaml(&launcher(&ws, ".k8s.yaml"));
    assert_eq!(job["apiVersion"], "batch/v1");
    assert_eq!(job["kind"], "Job");
    assert_eq!(job["metadata"]["name"], "kprof-k-tar");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], 3);
    assert_eq!(spec["parallelism"], 3);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let container = &pod["containers"][0];
    assert!(container["image"].as_str().unwrap().starts_with("REPLACE-ME"));
    let command: Vec<&str> =
        container["command"].as_sequence().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(
        command,
        [
            "cargo-kprof",
            "kprof",
            "run",
            "--archive",
            "/archive/k.tar",
            "--workspace-remap",
            "/results/shard-$(JOB_COMPLETION_INDEX)"
        ]
    );
    let env: Vec<(&str, &str)> = container["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["value"].as_str().unwrap()))
        .collect();
    assert!(env.contains(&("KPROF_PARTITION_COUNT", "3")), "{env:?}");
    assert!(env.contains(&("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")), "{env:?}");
    assert_eq!(container["resources"]["limits"]["nvidia.com/gpu"], 1);
    let mounts: Vec<&str> = container["volumeMounts"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|m| m["mountPath"].as_str().unwrap())
        .collect();
    assert_eq!(mounts, ["/archive", "/results"]);
    for volume in pod["volumes"].as_sequence().unwrap() {
        assert!(volume["persistentVolumeClaim"]["claimName"].as_str().unwrap().starts_with("REPLACE-ME"));
    }
    let k8s_text = std::fs::read_to_string(launcher(&ws, ".k8s.yaml")).unwrap();
    assert!(
        k8s_text.contains(
            "cargo-kprof kprof merge /results/shard-0 /results/shard-1 /results/shard-2 --output-dir /results/merged"
        ),
        "{k8s_text}"
    );

    // GitHub Actions: a matrix of shards 1..=3 on GPU runners, then the merge.
    let flow = yaml(&launcher(&ws, ".github.yml"));
    let profile = &flow["jobs"]["profile"];
    assert_eq!(profile["runs-on"], serde_yaml::from_str::<serde_yaml::Value>("[self-hosted, gpu]").unwrap());
    assert_eq!(
        profile["strategy"]["matrix"]["shard"],
        serde_yaml::from_str::<serde_yaml::Value>("[1, 2, 3]").unwrap()
    );
    let steps = profile["steps"].as_sequence().unwrap();
    let run = steps.iter().find_map(|s| s["run"].as_str()).unwrap();
    assert_eq!(
        run,
        "cargo-kprof kprof run --archive \"$ARCHIVE\" --workspace-remap \"shard-${{ matrix.shard }}\" \
         --partition count:${{ matrix.shard }}/3"
    );
    let upload = steps
        .iter()
        .find(|s| s["uses"].as_str().is_some_and(|u| u.starts_with("actions/upload-artifact@")))
        .unwrap();
    assert_eq!(upload["with"]["name"], "kprof-shard-${{ matrix.shard }}");
    assert_eq!(upload["with"]["path"], "shard-${{ matrix.shard }}/workspace/profile");
    assert_eq!(flow["env"]["ARCHIVE"], "k.tar");
    let merge = &flow["jobs"]["merge"];
    assert_eq!(merge["needs"], "profile");
    let merge_run = merge["steps"].as_sequence().unwrap().iter().find_map(|s| s["run"].as_str()).unwrap();
    assert_eq!(
        merge_run,
        "cargo-kprof kprof merge shards/kprof-shard-1 shards/kprof-shard-2 shards/kprof-shard-3 --output-dir merged"
    );

    // Slurm: an array of 3 tasks, one GPU each, a valid bash script that can be run.
    let slurm_path = launcher(&ws, ".slurm.sh");
    let slurm = std::fs::read_to_string(&slurm_path).unwrap();
    for line in [
        "#SBATCH --array=1-3",
        "#SBATCH --gres=gpu:1",
        "#SBATCH --time=1:00:00",
        "#SBATCH --job-name=kprof-k-tar",
    ] {
        assert!(slurm.lines().any(|l| l == line), "{line}: {slurm}");
    }
    assert!(slurm.contains("ARCHIVE=\"$HERE/k.tar\""), "{slurm}");
    bash_syntax_ok(&slurm_path);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&slurm_path).unwrap().permissions().mode() & 0o111, 0o111);
    }
}

fn bash_syntax_ok(script: &Path) {
    let out = Command::new("bash").arg("-n").arg(script).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn slurm_options_set_the_gres_and_time_lines_and_shards_the_array() {
    let ws = Workspace::with_harness(THREE);
    let out = archive(
        &ws,
        &["--emit", "slurm", "--slurm-gres", "none", "--slurm-time", "0-02:30:00", "--shards", "2"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
    let slurm = std::fs::read_to_string(launcher(&ws, ".slurm.sh")).unwrap();
    assert!(!slurm.contains("--gres"), "{slurm}");
    assert!(slurm.lines().any(|l| l == "#SBATCH --array=1-2"), "{slurm}");
    assert!(slurm.lines().any(|l| l == "#SBATCH --time=0-02:30:00"), "{slurm}");
    assert!(slurm.lines().any(|l| l == "SHARDS=2"), "{slurm}");
    assert!(!launcher(&ws, ".k8s.yaml").exists() && !launcher(&ws, ".github.yml").exists());

    // What each mode runs: a task, the merge, and the submission with its dependency.
    let tools = tempfile::tempdir().unwrap();
    let calls = tools.path().join("calls.txt");
    let record = r#"printf '%s\n' "$(basename "$0")" "$@" >> "$CALLS"; printf -- '---\n' >> "$CALLS""#;
    let kprof_bin = write_script(&tools.path().join("kprof-bin"), record);
    let ids = tools.path().join("ids");
    std::fs::write(&ids, "0").unwrap();
    // sbatch answers 41, then `42;cluster` as on a cluster of several.
    write_script(
        &tools.path().join("sbatch"),
        &format!(
            "{record}\nn=$(( $(cat \"$IDS\") + 1 )); echo $n > \"$IDS\"\n\
             [ $n = 1 ] && echo 41 || echo '42;cluster'\n"
        ),
    );
    let script = launcher(&ws, ".slurm.sh");
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = Command::new("bash");
        cmd.arg(&script)
            .args(args)
            .env("CALLS", &calls)
            .env("IDS", &ids)
            .env("KPROF_BIN", &kprof_bin)
            .env("PATH", path_with(&[tools.path()]))
            .env_remove("SLURM_ARRAY_TASK_ID")
            .env_remove("SLURM_SUBMIT_DIR")
            .env_remove("KPROF_LAUNCH_DIR");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let recorded = fake_ncu::calls(&calls);
        std::fs::remove_file(&calls).ok();
        (out, recorded)
    };
    let here = ws.root().to_str().unwrap().to_string();
    let results = format!("{here}/k.tar.results");

    let (out, calls_made) = run(&[], &[("SLURM_ARRAY_TASK_ID", "2"), ("SLURM_SUBMIT_DIR", &here)]);
    assert!(out.status.success(), "{}", text(&out).1);
    let task: Vec<String> = [
        "kprof-bin",
        "kprof",
        "run",
        "--archive",
        &format!("{here}/k.tar"),
        "--workspace-remap",
        &format!("{results}/shard-2"),
        "--partition",
        "count:2/2",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(calls_made, [task]);

    let (out, calls_made) = run(&["merge"], &[]);
    assert!(out.status.success(), "{}", text(&out).1);
    let merge: Vec<String> = [
        "kprof-bin",
        "kprof",
        "merge",
        &format!("{results}/shard-1"),
        &format!("{results}/shard-2"),
        "--output-dir",
        &format!("{results}/merged"),
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(calls_made, [merge]);

    let (out, calls_made) = run(&["submit"], &[]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("array job: 41\nmerge job: 42\n"), "{stdout}");
    assert_eq!(calls_made.len(), 2, "{calls_made:?}");
    assert_eq!(
        calls_made[0],
        ["sbatch", "--parsable", &format!("--output={results}/logs/shard-%a.out"), script.to_str().unwrap()]
    );
    let dependent = &calls_made[1];
    assert!(dependent.contains(&"--dependency=afterany:41".to_string()), "{dependent:?}");
    assert!(dependent.contains(&format!("--output={results}/logs/merge.out")), "{dependent:?}");
    let wrap = dependent.iter().find_map(|a| a.strip_prefix("--wrap=")).expect("--wrap");
    assert_eq!(wrap.trim_end(), format!("bash {} merge", script.display()));
    assert!(Path::new(&results).join("logs").is_dir());

    // Without a mode and outside Slurm, it says how to use it.
    let (out, calls_made) = run(&[], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("usage: ./k.tar.slurm.sh submit | merge"), "{}", text(&out).1);
    assert!(calls_made.is_empty());
}

#[test]
fn a_taken_launcher_path_is_refused_before_anything_is_built() {
    let ws = Workspace::with_harness(THREE);
    let taken = launcher(&ws, ".github.yml");
    std::fs::write(&taken, "mine\n").unwrap();
    let out = archive(&ws, &["--emit", "slurm", "--emit", "github"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(12), "{stderr}");
    assert!(stderr.contains(&format!("{} exists", taken.display())), "{stderr}");
    assert!(stderr.contains("launchers are never overwritten"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&taken).unwrap(), "mine\n");
    assert!(!ws.root().join("k.tar").exists(), "refused before the archive");
    assert!(!launcher(&ws, ".slurm.sh").exists());
    assert!(!ws.root().join("target").exists(), "refused before the build");
    // The test's own file is no workflow for the lint to audit.
    std::fs::remove_file(&taken).unwrap();
}

#[test]
fn shards_must_be_between_one_and_the_kernels() {
    let ws = Workspace::with_harness(THREE);
    let out = archive(&ws, &["--emit", "k8s", "--shards", "4"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("--shards 4: the archive holds 3 kernel(s)"), "{stderr}");
    assert!(stderr.contains("pick --shards between 1 and 3"), "{stderr}");
    assert!(!ws.root().join("k.tar").exists());

    for (args, says) in [
        (&["--emit", "k8s", "--shards", "0"][..], "0 is not in 1.."),
        (&["--shards", "2"][..], "--emit"),
        (&["--emit", "slurm", "--slurm-gres", "gpu:1;rm"][..], "is not a GRES spec"),
        (&["--emit", "slurm", "--slurm-time", "1h"][..], "is not a Slurm time limit"),
        (&["--emit", "nomad"][..], "invalid value 'nomad'"),
    ] {
        let out = archive(&ws, args);
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }

    let odd = ws.root().join("my archive.tar");
    let out = ws.kprof(&["archive", "--workspace", "-o", odd.to_str().unwrap(), "--emit", "slurm"], &[]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("`my archive.tar` is written into the launchers and must be plain"), "{stderr}");
    assert!(!odd.exists());
}
