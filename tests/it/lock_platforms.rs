//! `archive` reads the dependency graph offline on an ordinary crate: a lock file names
//! other platforms' dependencies (`half` names `crunchy` for SPIR-V; terminal crates their
//! Windows halves), which cargo never downloads for this build, and `cargo metadata
//! --offline` failed on the first of them ("failed to download `crunchy v0.2.4`"). kprof
//! asks for the build's platform only; where the graph still cannot be read, its warning
//! ends with the command that fixes it.
//!
//! The crates come from a local registry made in the test, through a `CARGO_HOME` of its
//! own: a stand-in `cudarc` (its features only) whose `.crate` is there, and packages the
//! index lists whose `.crate` is not, as if never downloaded.

use std::path::Path;
use std::process::Output;

use crate::support::tarball::{self, Entry};
use crate::support::{text, Workspace};

/// Writes `index/<prefix>/<name>` for a package of the registry at `registry`, and its
/// `.crate` (a gzip-compressed tar of `Cargo.toml` and `src/lib.rs`) unless `downloaded` is false.
fn publish(registry: &Path, name: &str, manifest: &str, features: &[&str], downloaded: bool) {
    use sha2::Digest;
    let dir = format!("{name}-0.1.0");
    let tar = tarball::bytes(&[
        Entry::file(&format!("{dir}/Cargo.toml"), manifest),
        Entry::file(&format!("{dir}/src/lib.rs"), ""),
    ]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &tar).unwrap();
    let crate_file = gz.finish().unwrap();
    let cksum: String = sha2::Sha256::digest(&crate_file).iter().map(|b| format!("{b:02x}")).collect();
    if downloaded {
        std::fs::write(registry.join(format!("{dir}.crate")), &crate_file).unwrap();
    }
    let features: serde_json::Map<String, serde_json::Value> =
        features.iter().map(|f| (f.to_string(), serde_json::json!([]))).collect();
    let line = serde_json::json!({
        "name": name, "vers": "0.1.0", "deps": [], "cksum": cksum, "features": features, "yanked": false
    });
    let index = registry.join("index").join(&name[..2]).join(&name[2..4]);
    std::fs::create_dir_all(&index).unwrap();
    std::fs::write(index.join(name), format!("{line}\n")).unwrap();
}

/// A package `demo` (its `copy` bench configured) that depends on the stand-in `cudarc`
/// with `dynamic-loading` and `nvrtc` and on a Windows-only package never downloaded, and
/// with `member` a workspace member `other` that needs a package never downloaded; its
/// lock file made offline from the registry.
fn crate_with_a_lock(member: bool) -> (Workspace, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let registry = home.path().join("registry");
    std::fs::create_dir_all(&registry).unwrap();
    let features = ["default", "dynamic-loading", "nvrtc"];
    let cudarc = "[package]\nname = \"cudarc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                  [features]\ndefault = []\ndynamic-loading = []\nnvrtc = []\n";
    publish(&registry, "cudarc", cudarc, &features, true);
    publish(&registry, "winonly", "", &[], false);
    publish(&registry, "hostonly", "", &[], false);
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[source.crates-io]\nreplace-with = \"fixture\"\n\n[source.fixture]\nlocal-registry = \"{}\"\n",
            registry.display()
        ),
    )
    .unwrap();
    let ws = Workspace::new(&format!(
        "[dependencies]\ncudarc = {{ version = \"0.1\", default-features = false, features = [\"dynamic-loading\", \"nvrtc\"] }}\n\n\
         [target.'cfg(windows)'.dependencies]\nwinonly = \"0.1\"\n\n\
         [[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\n\n{}",
        if member { "[workspace]\nmembers = [\".\", \"other\"]\n" } else { "" }
    ));
    if member {
        let other = ws.root().join("other");
        std::fs::create_dir_all(other.join("src")).unwrap();
        std::fs::write(other.join("src/lib.rs"), "").unwrap();
        std::fs::write(
            other.join("Cargo.toml"),
            "[package]\nname = \"other\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\nhostonly = \"0.1\"\n",
        )
        .unwrap();
    }
    let lock = std::process::Command::new("cargo")
        .args(["generate-lockfile", "--offline", "--manifest-path"])
        .arg(ws.manifest())
        .env("CARGO_HOME", home.path())
        .output()
        .unwrap();
    assert!(lock.status.success(), "{}", text(&lock.stderr));
    let locked = std::fs::read_to_string(ws.root().join("Cargo.lock")).unwrap();
    assert!(locked.contains("name = \"winonly\""), "the lock names the Windows-only package:\n{locked}");
    (ws, home)
}

fn archive(ws: &Workspace, home: &Path) -> Output {
    let out = ws.root().join("k.tar");
    let home = home.to_str().unwrap();
    ws.kprof(
        &["archive", "-o", out.to_str().unwrap()],
        &[("CARGO_HOME", home), ("CARGO_NET_OFFLINE", "true")],
    )
}

#[test]
fn a_lock_naming_other_platforms_packages_reads_the_graph_offline() {
    let (ws, home) = crate_with_a_lock(false);
    let out = archive(&ws, home.path());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("dependency graph"), "{stderr}");
    // The graph was read: the libraries cudarc's features open are recorded.
    let manifest = tarball::manifest(&tarball::read(&ws.root().join("k.tar")));
    let opened = manifest["libraries"][0]["opened"].to_string();
    assert!(opened.contains("libnvrtc.so") && opened.contains("cudarc feature `nvrtc`"), "{manifest}");
}

/// A workspace member that is not built needs a package never downloaded: the graph cannot
/// be read offline for this platform either, and the warning says how to fix it.
#[test]
fn a_graph_that_still_cannot_be_read_names_cargo_fetch() {
    let (ws, home) = crate_with_a_lock(true);
    let out = archive(&ws, home.path());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let warning =
        stderr.lines().find(|l| l.contains("could not read the dependency graph")).unwrap_or_else(|| {
            panic!("no warning:\n{stderr}");
        });
    assert!(warning.contains("`hostonly v0.1.0`"), "{warning}");
    let fetch =
        format!("`cargo fetch --manifest-path {}` downloads what is missing", ws.manifest().display());
    assert!(stderr.contains(&fetch), "{stderr}");
}
