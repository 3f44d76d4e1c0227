//! `--gpus LIST` / `--jobs N`: one worker per GPU, each program's kernels on one GPU,
//! `CUDA_VISIBLE_DEVICES` in each profile's commands, and the workers running at once.
//!
//! The fake ncu here waits, at its first page, until an ncu of the other GPU has started
//! too (polling for the other's marker file, bounded): run one after the other, the first
//! would give up waiting and say so, and the test fails.

use std::path::Path;

use crate::support::{fake_ncu, fixture_details, text, write_script, Workspace};

const ENTRIES: &str =
    "[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\ncase = \"copy\"\n\n\
    [[package.metadata.kprof.kernels]]\nname = \"fma\"\nbench = \"fma\"\ncase = \"fma\"\n";

fn replay_dir(root: &Path) -> std::path::PathBuf {
    let replay = root.join("replay");
    for (kernel, recorded) in [("copy", "copy_20261129_213211"), ("fma", "fma_20261129_213211")] {
        let dir = replay.join("by-filter").join(fake_ncu::filter_key(&format!("regex:.*{kernel}.*")));
        std::fs::create_dir_all(&dir).unwrap();
        for page in std::fs::read_dir(fixture_details(recorded)).unwrap() {
            let page = page.unwrap().path();
            std::fs::copy(&page, dir.join(page.file_name().unwrap())).unwrap();
        }
    }
    replay
}

#[test]
fn each_program_gets_a_gpu_and_the_workers_run_at_once() {
    let ws = Workspace::with_harness(ENTRIES);
    let tools = ws.root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let fake = fake_ncu::write(&tools);
    let fake_real = tools.join("ncu-replay");
    std::fs::rename(&fake, &fake_real).unwrap();
    let marks = ws.root().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let ncu = write_script(
        &tools.join("ncu"),
        &format!(
            r#"if [ "$1" != --version ] && [ ! -e "{m}/started-$CUDA_VISIBLE_DEVICES" ]; then
  touch "{m}/started-$CUDA_VISIBLE_DEVICES"
  i=0
  while [ "$(ls "{m}" | grep -c '^started-')" -lt 2 ]; do
    i=$((i + 1))
    if [ "$i" -gt 400 ]; then touch "{m}/waited-alone-$CUDA_VISIBLE_DEVICES"; break; fi
    sleep 0.05
  done
fi
exec "{real}" "$@"
"#,
            m = marks.display(),
            real = fake_real.display()
        ),
    );
    let argv = tools.join("argv.txt");
    let replay = replay_dir(ws.root());
    let out = ws.kprof_replaying(&["--workspace", "--gpus", "0,1"], &ncu, &argv, &replay);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("2 worker(s), one per GPU: GPU 0: copy; GPU 1: fma"), "{stderr}");
    let waited: Vec<String> = std::fs::read_dir(&marks)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("waited-alone"))
        .collect();
    assert!(waited.is_empty(), "an ncu ran with no other GPU's ncu running: {waited:?}\n{stderr}");
    for (kernel, gpu) in [("copy", "0"), ("fma", "1")] {
        let dir = ws
            .profiles()
            .into_iter()
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("{kernel}_")))
            .unwrap();
        let script = std::fs::read_to_string(dir.join("commands.sh")).unwrap();
        assert!(script.contains(&format!("CUDA_VISIBLE_DEVICES={gpu} ")), "{kernel}: {script}");
        let manifest = std::fs::read_to_string(dir.join("run_manifest.yaml")).unwrap();
        assert!(manifest.contains("status: ok"), "{manifest}");
    }
}

/// `--jobs 1` is one worker on GPU 0, written into every command; `--jobs` and `--gpus`
/// together are refused.
#[test]
fn one_job_runs_the_kernels_in_turn_on_gpu_0() {
    let ws = Workspace::with_harness(ENTRIES);
    let tools = ws.root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let ncu = fake_ncu::write(&tools);
    let argv = tools.join("argv.txt");
    let replay = replay_dir(ws.root());
    let out = ws.kprof_replaying(&["--workspace", "--jobs", "1", "--dry-run"], &ncu, &argv, &replay);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Two kernels, each with the two stages known before the run: basic on GPU 0, and the
    // source page imported from basic's report, which needs no GPU.
    assert_eq!(stdout.matches("CUDA_VISIBLE_DEVICES=0 ").count(), 2, "{stdout}");
    assert_eq!(stdout.matches(" --import ").count(), 2, "{stdout}");
    let out = ws.kprof(&["--workspace", "--jobs", "2", "--gpus", "0"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
