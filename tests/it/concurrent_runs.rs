//! Two `run --archive` given one `--workspace-remap` (a launcher whose shard variable is
//! empty): one unpacks, the other is refused and touches nothing (issue #45, G4).

use std::path::Path;

use crate::archive_unpacking::{real_archive, run_archive_in};
use crate::support::text;

/// Every file under `dir`, relative, sorted.
fn listing(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() && !p.is_symlink() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    if dir.exists() {
        walk(dir, dir, &mut out);
    }
    out.sort();
    out
}

#[test]
fn a_folder_another_run_is_unpacking_into_is_refused_untouched() {
    let (ws, _, _, _) = real_archive();
    let root = ws.root();
    let remap = root.join("shard-");
    std::fs::create_dir_all(remap.join("bin")).unwrap();
    std::fs::write(remap.join(".kprof-unpacking"), format!("{}\n", std::process::id())).unwrap();
    std::fs::write(remap.join("bin/theirs"), "the other run's").unwrap();
    let before = listing(&remap);
    let out = run_archive_in(root, "real.tar", "shard-", &["--dry-run"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(12), "{stderr}");
    assert!(
        stderr.contains("shard-") && stderr.contains("another run") && stderr.contains("help:"),
        "{stderr}"
    );
    assert_eq!(listing(&remap), before);
}

#[test]
fn of_two_runs_started_together_one_unpacks_and_its_files_stay() {
    let (ws, _, _, exe) = real_archive();
    let root = ws.root().to_path_buf();
    for round in 0..4 {
        let remap = format!("shared-{round}");
        let runs: Vec<_> = (0..2)
            .map(|_| {
                let (root, remap) = (root.clone(), remap.clone());
                // A dry run unpacks and writes the commands: no GPU needed.
                std::thread::spawn(move || run_archive_in(&root, "real.tar", &remap, &["--dry-run"]))
            })
            .collect();
        let outs: Vec<_> = runs.into_iter().map(|r| r.join().unwrap()).collect();
        let refused = outs
            .iter()
            .filter(|o| {
                o.status.code() == Some(12) && text(&o.stderr).contains(&format!("--workspace-remap {remap}"))
            })
            .count();
        assert!(
            refused >= 1,
            "round {round}: {:?}",
            outs.iter().map(|o| text(&o.stderr)).collect::<Vec<_>>()
        );
        // The winner's unpacked program is there, whatever the loser did.
        let files = listing(&root.join(&remap));
        assert!(files.iter().any(|f| f.ends_with(&exe)), "round {round}: {files:?}");
        assert!(!files.iter().any(|f| f.ends_with(".kprof-unpacking")), "round {round}: {files:?}");
    }
}
