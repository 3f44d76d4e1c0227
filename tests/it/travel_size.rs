//! What the repository sends to a GPU machine stays small. A remote run copies the working
//! tree (tracked files and untracked files git does not ignore) plus what the run carries
//! (a stripped `cargo-kprof`, an archive of the programs to profile), 64 MiB in all. The
//! tree's share is capped here at [`BUDGET`], so an archive of the zoo's programs and a
//! binary always fit beside it; recordings are stored compressed to stay under it
//! (`scripts/pack-recordings.sh`, `docs/development.md`).

use std::path::Path;
use std::process::Command;

use crate::support::repo;

/// The most the working tree may weigh, in bytes.
const BUDGET: u64 = 24 << 20;

/// A plain text file under `fixtures/` larger than this should be compressed.
const LARGEST_PLAIN_RECORDING: u64 = 64 << 10;

/// The files that travel (`git ls-files -co --exclude-standard`) that exist, with their
/// sizes; `None` outside a git checkout.
fn travelling(root: &Path) -> Option<Vec<(String, u64)>> {
    let out = Command::new("git")
        .args(["ls-files", "-z", "-co", "--exclude-standard", "--deduplicate"])
        .current_dir(root)
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let mut files: Vec<(String, u64)> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .filter_map(|n| {
            let name = String::from_utf8_lossy(n).into_owned();
            // A tracked file deleted in the working tree does not travel.
            let size = std::fs::symlink_metadata(root.join(&name)).ok()?.len();
            Some((name, size))
        })
        .collect();
    files.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Some(files)
}

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / f64::from(1 << 20))
}

#[test]
fn the_tree_that_travels_to_a_gpu_machine_fits_its_budget() {
    let Some(files) = travelling(&repo()) else {
        println!("skipped: the tree that travels: {} is not a git checkout", repo().display());
        return;
    };
    let total: u64 = files.iter().map(|(_, s)| s).sum();
    let largest: Vec<String> = files.iter().take(15).map(|(n, s)| format!("  {} {n}", mib(*s))).collect();
    assert!(
        total <= BUDGET,
        "the working tree that travels to a GPU machine is {}, over its budget of {}: compress \
         recordings with scripts/pack-recordings.sh, or drop what no test reads. The largest files:\n{}",
        mib(total),
        mib(BUDGET),
        largest.join("\n")
    );
    let plain: Vec<String> = files
        .iter()
        .filter(|(n, s)| {
            n.starts_with("fixtures/")
                && *s > LARGEST_PLAIN_RECORDING
                && ![".gz", ".png", ".so"].iter().any(|x| n.ends_with(x))
        })
        .map(|(n, s)| format!("  {} {n}", mib(*s)))
        .collect();
    assert!(
        plain.is_empty(),
        "recordings over {} KiB stored uncompressed (run scripts/pack-recordings.sh on their folder):\n{}",
        LARGEST_PLAIN_RECORDING >> 10,
        plain.join("\n")
    );
}
