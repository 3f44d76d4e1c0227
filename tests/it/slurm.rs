//! The Slurm launcher on a real Slurm: munge, slurmctld and slurmd started by the test on
//! this machine (one node, no GPU, so `--slurm-gres none`), the generated job array and
//! its dependent merge submitted with `FILE.slurm.sh submit`, each shard replaying H200
//! recordings through the fake ncu. The merged index must equal the index of one unsharded
//! run of the same archive, profile names' timestamps aside.
//!
//! Every daemon runs in the foreground as this test's child, with its files in a
//! temporary directory and its own ports and munge socket, and is stopped by its PID when
//! the test ends, passing or not ([`Cluster`]'s `Drop`). The test needs root (slurmd runs
//! jobs as any user) and Debian's `slurm-wlm` and `munge`; without them it says so and
//! passes, unless `KPROF_REQUIRE_SLURM=1` (CI sets it after installing them).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::{copy_dir, fake_ncu, recordings, Workspace};

/// The kernels archived: each replays its own H200 recording.
const KERNELS: [&str; 4] = ["copy", "fma", "tiny", "reduce"];
const SHARDS: usize = 2;

const DAEMONS: [&str; 3] = ["/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd"];
const CLIENTS: [&str; 4] = ["sbatch", "squeue", "sinfo", "scontrol"];

/// `Some(why)` when Slurm cannot run here.
fn missing() -> Option<String> {
    if let Some(d) = DAEMONS.iter().find(|d| !Path::new(d).is_file()) {
        return Some(format!("{d} is not installed (apt-get install slurm-wlm munge)"));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(c) = CLIENTS.iter().find(|c| !std::env::split_paths(&path).any(|d| d.join(c).is_file())) {
        return Some(format!("{c} is not on PATH (apt-get install slurm-wlm)"));
    }
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if uid.as_deref() != Some("0") {
        return Some("slurmd runs jobs as root: run the tests as root".into());
    }
    None
}

/// A one-node Slurm cluster whose daemons are this test's children.
struct Cluster {
    dir: tempfile::TempDir,
    daemons: Vec<(&'static str, Child)>,
    /// Where the jobs write their output, shown with the daemons' logs.
    job_logs: Option<PathBuf>,
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let s = dir.path().to_path_buf();
        for d in ["state", "spool", "log", "run"] {
            std::fs::create_dir_all(s.join(d)).unwrap();
        }
        let mut cluster = Cluster { dir, daemons: Vec::new(), job_logs: None };

        // munge: its own key and socket, so that a munged of the machine is left alone.
        let key = s.join("munge.key");
        let mut bytes = vec![0u8; 1024];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
            .unwrap();
        std::fs::write(&key, &bytes).unwrap();
        set_mode(&key, 0o400);
        let socket = s.join("munge.sock");
        cluster.spawn(
            "munged",
            Command::new(DAEMONS[0])
                .arg("--foreground")
                .arg("--force")
                .arg(format!("--socket={}", socket.display()))
                .arg(format!("--key-file={}", key.display()))
                .arg(format!("--pid-file={}", s.join("run/munged.pid").display()))
                .arg(format!("--log-file={}", s.join("log/munged.log").display()))
                .arg(format!("--seed-file={}", s.join("munge.seed").display())),
        );
        cluster.wait_for("munge's socket", Duration::from_secs(20), |_| socket.exists());

        let host = String::from_utf8(Command::new("hostname").arg("-s").output().unwrap().stdout).unwrap();
        let host = host.trim();
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let (ctld_port, slurmd_port) = (free_port(), free_port());
        let conf = format!(
            "ClusterName=kprof\n\
             SlurmctldHost={host}(127.0.0.1)\n\
             SlurmctldPort={ctld_port}\n\
             SlurmdPort={slurmd_port}\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             AuthType=auth/munge\n\
             CredType=cred/munge\n\
             AuthInfo=socket={socket}\n\
             StateSaveLocation={s}/state\n\
             SlurmdSpoolDir={s}/spool\n\
             SlurmctldPidFile={s}/run/slurmctld.pid\n\
             SlurmdPidFile={s}/run/slurmd.pid\n\
             SlurmctldLogFile={s}/log/slurmctld.log\n\
             SlurmdLogFile={s}/log/slurmd.log\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             SchedulerType=sched/backfill\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\n\
             ReturnToService=2\n\
             MpiDefault=none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 State=UNKNOWN\n\
             PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP\n",
            socket = socket.display(),
            s = s.display(),
        );
        std::fs::write(cluster.conf(), conf).unwrap();
        let conf = cluster.conf();
        cluster.spawn("slurmctld", Command::new(DAEMONS[1]).arg("-D").arg("-f").arg(&conf));
        cluster.spawn("slurmd", Command::new(DAEMONS[2]).arg("-D").arg("-f").arg(&conf));
        cluster.wait_for("the node to be idle in sinfo", Duration::from_secs(60), |c| {
            let out = c.client("sinfo").args(["-h", "-o", "%t"]).output().unwrap();
            out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "idle"
        });
        cluster
    }

    fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    /// A Slurm client command talking to this cluster.
    fn client(&self, name: &str) -> Command {
        let mut cmd = Command::new(name);
        cmd.env("SLURM_CONF", self.conf());
        cmd
    }

    fn spawn(&mut self, name: &'static str, cmd: &mut Command) {
        let log = std::fs::File::create(self.dir.path().join(format!("log/{name}.out"))).unwrap();
        let child = cmd
            .env("SLURM_CONF", self.conf())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        self.daemons.push((name, child));
    }

    /// Polls `ready` until it holds, failing with the daemons' logs after `limit`.
    fn wait_for(&mut self, what: &str, limit: Duration, ready: impl Fn(&Cluster) -> bool) {
        let start = Instant::now();
        while !ready(self) {
            let exited = self.daemons.iter_mut().find_map(|(name, child)| {
                child.try_wait().ok().flatten().map(|status| format!("{name} exited ({status})"))
            });
            if let Some(exited) = exited {
                panic!("{exited} while waiting for {what}\n{}", self.logs());
            }
            assert!(start.elapsed() < limit, "no {what} after {limit:?}\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The tail of every log, for failure messages.
    fn logs(&self) -> String {
        let mut out = String::new();
        let mut files: Vec<PathBuf> = [Some(self.dir.path().join("log")), self.job_logs.clone()]
            .into_iter()
            .flatten()
            .flat_map(|d| std::fs::read_dir(d).into_iter().flatten())
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            out.push_str(&format!("--- {}\n", f.display()));
            for l in tail.iter().rev() {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    }

    /// The state of each job (`JobState=`) of `scontrol show job ID`, one per array task.
    fn job_states(&self, id: &str) -> Vec<String> {
        let out = self.client("scontrol").args(["-o", "show", "job", id]).output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().find_map(|w| w.strip_prefix("JobState=")).map(String::from))
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Jobs first (a failed test may leave some), then the daemons, newest first.
        let _ = self.client("scancel").arg("--user=root").output();
        while let Some((_, mut child)) = self.daemons.pop() {
            let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).output();
            let start = Instant::now();
            while matches!(child.try_wait(), Ok(None)) && start.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The recorded `details/` of `cost/auto-KERNEL`.
fn recorded_details(kernel: &str) -> PathBuf {
    let root = recordings().join(format!("archive-runs/cost/auto-{kernel}/workspace/profile"));
    let dir = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).find(|p| p.is_dir()).unwrap();
    dir.join("details")
}

/// `index.json`'s rows, each profile named by its kernel (the timestamp cut), in order.
fn normalised_rows(index: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(index).unwrap_or_else(|e| panic!("{}: {e}", index.display()));
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let stamp = regex::Regex::new(r"_\d{8}_\d{6}(_\d+)?$").unwrap();
    let mut rows: Vec<serde_json::Value> = doc["profiles"].as_array().unwrap().clone();
    for r in &mut rows {
        let name = stamp.replace(r["profile"].as_str().unwrap(), "").into_owned();
        r["profile"] = name.into();
    }
    rows.sort_by_key(|r| r["profile"].as_str().unwrap().to_string());
    rows
}

fn stderr_of(out: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn the_slurm_launcher_shards_and_merges_as_one_run_would() {
    if let Some(why) = missing() {
        assert!(
            std::env::var("KPROF_REQUIRE_SLURM").as_deref() != Ok("1"),
            "KPROF_REQUIRE_SLURM=1 but {why}"
        );
        let _ = writeln!(std::io::stderr(), "skipped: the Slurm launcher on a real Slurm: {why}");
        return;
    }

    // The archive and its launcher.
    let entries: String = KERNELS
        .iter()
        .map(|k| format!("[[package.metadata.kprof.kernels]]\nname = \"{k}\"\nbench = \"copy\"\n\n"))
        .collect();
    let ws = Workspace::with_harness(&entries);
    let here = tempfile::tempdir().unwrap();
    let archive = here.path().join("k.tar");
    // Two shards of two kernels each: the node may have only two CPUs.
    let shards = SHARDS.to_string();
    let out = ws.kprof(
        &["archive", "--workspace", "-o", archive.to_str().unwrap()]
            .into_iter()
            .chain(["--emit", "slurm", "--slurm-gres", "none", "--shards", &shards])
            .collect::<Vec<_>>(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let script = here.path().join("k.tar.slurm.sh");

    // One replay folder for every kernel, and the fake ncu.
    let tools = tempfile::tempdir().unwrap();
    let replay = tools.path().join("replay");
    for k in KERNELS {
        let key = fake_ncu::filter_key(&format!("regex:.*{k}.*"));
        copy_dir(&recorded_details(k), &replay.join("by-filter").join(key));
    }
    let ncu = fake_ncu::write(tools.path());
    let fake_env = |cmd: &mut Command| {
        cmd.env("NCU", &ncu)
            .env("KPROF_SKIP_GPU_CHECK", "1")
            .env("FAKE_NCU_ARGV", tools.path().join("argv.txt"))
            .env("FAKE_NCU_REPLAY", &replay)
            .env("CARGO", "/nonexistent/cargo")
            .env("KPROF_BIN", env!("CARGO_BIN_EXE_cargo-kprof"))
            // The fake ncu replays one recording per kernel filter: each kernel runs alone
            // (sbatch passes the environment on to the jobs).
            .env("KPROF_NO_BATCH", "1");
        for v in kprof_testkit::JOB_ARRAY_VARS {
            cmd.env_remove(v);
        }
    };

    // The reference: one unsharded run of the same archive.
    let whole = tools.path().join("whole");
    let mut cmd = crate::support::kprof_bin();
    cmd.args(["kprof", "run", "--archive"]).arg(&archive).arg("--workspace-remap").arg(&whole);
    fake_env(&mut cmd);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let expected = normalised_rows(&whole.join("workspace/profile/index.json"));
    assert_eq!(expected.len(), KERNELS.len(), "{expected:?}");

    // The cluster, the array and its merge.
    let mut cluster = Cluster::start();
    let mut cmd = cluster.client("bash");
    cmd.arg(&script).arg("submit").current_dir(here.path());
    fake_env(&mut cmd);
    let out = cmd.output().unwrap();
    let said = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{said}\n{}", cluster.logs());
    let id = |label: &str| {
        said.lines()
            .find_map(|l| l.strip_prefix(label))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| panic!("{said}"))
    };
    let (array, merge) = (id("array job:"), id("merge job:"));
    let results = here.path().join("k.tar.results");
    cluster.job_logs = Some(results.join("logs"));
    let terminal = ["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "DEADLINE"];
    cluster.wait_for("end of the merge job", Duration::from_secs(180), |c| {
        c.job_states(&merge).iter().any(|s| terminal.contains(&s.as_str()))
    });
    let states = (cluster.job_states(&array), cluster.job_states(&merge));
    let completed = |n| vec!["COMPLETED".to_string(); n];
    assert_eq!(states, (completed(SHARDS), completed(1)), "{}", cluster.logs());

    // One shard folder per task, each with its half; the merge equals the whole run.
    for i in 1..=SHARDS {
        let shard = normalised_rows(&results.join(format!("shard-{i}/workspace/profile/index.json")));
        assert_eq!(shard.len(), KERNELS.len() / SHARDS, "shard {i}: {shard:?}");
    }
    let merged_index = results.join("merged/index.json");
    assert_eq!(normalised_rows(&merged_index), expected, "{}", cluster.logs());
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&merged_index).unwrap()).unwrap();
    let partitions: Vec<String> = merged["merged"]["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let p = &s["partition"];
            format!("{}:{}/{}", p["mode"].as_str().unwrap_or("-"), p["index"], p["total"])
        })
        .collect();
    assert_eq!(partitions, ["count:1/2", "count:2/2"], "{merged}");
    assert_eq!(merged["merged"]["missing_shards"], serde_json::json!([]));
}
