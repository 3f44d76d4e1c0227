//! Unpacking an archive made elsewhere: entries that would leave the unpack folder, links,
//! and archives that unpack more than they hold are refused naming the entry, and an
//! archive never chooses sudo. Hostile archives are built with the `tar` crate from a real
//! `cargo kprof archive`; every case asserts the exit code, a `help:` line and that nothing
//! changed on disk outside what the case allows.

use std::path::Path;
use std::process::{Command, Output};

use crate::bad_input::{assert_all, verify, Expect};
use crate::output_places::{harness_entry, replay_env};
use crate::support::tarball::{self, Entry};
use crate::support::{output_within, text, Workspace};

/// A kernel entry of the `copy` bench.
pub(crate) const COPY: &str = "[[package.metadata.kprof.kernels]]\nname = \"copy\"\nbench = \"copy\"\n";

/// `cargo kprof archive` of the `copy` kernel of `ws`: the entries of a real archive.
fn real_archive_entries(ws: &Workspace) -> Vec<crate::support::tarball::Entry> {
    let archive = ws.root().join("real.tar");
    let out = ws.kprof(&["archive", "--kernel", "copy", "-o", archive.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    crate::support::tarball::read(&archive)
}

/// `cargo-kprof kprof run --archive ARCHIVE --workspace-remap REMAP`, without cargo, with
/// the fake ncu replaying the recorded `copy` profile.
fn run_archive(ws: &Workspace, archive: &Path, remap: &Path) -> Output {
    let mut cmd = crate::support::kprof_bin();
    cmd.args(["kprof", "run", "--archive"]).arg(archive).arg("--workspace-remap").arg(remap);
    cmd.env("CARGO", "/nonexistent/cargo");
    for (k, v) in replay_env(ws) {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// #12 item 3: an archive is unpacked entry by entry and refused, naming the entry, when
/// it could reach outside `--workspace-remap`: links, `..` and absolute names, a plan whose
/// working directory or executable lies outside, a manifest read through a link, another
/// schema. Nothing is written anywhere.
#[test]
fn hostile_archives_are_refused_naming_the_entry() {
    use crate::support::tarball::{manifest, with_manifest, write, Entry};
    let ws = Workspace::with_harness(&harness_entry("copy"));
    let real = real_archive_entries(&ws);
    let plan = manifest(&real);
    let there = tempfile::tempdir().unwrap();
    let outside = there.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("keep.txt"), "mine").unwrap();
    std::fs::write(outside.join("plan.json"), serde_json::to_vec(&plan).unwrap()).unwrap();
    let out_s = outside.display().to_string();

    let edited = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut m = plan.clone();
        f(&mut m);
        with_manifest(&real, &m)
    };
    let plus = |extra: Entry| {
        let mut e = real.clone();
        e.insert(0, extra);
        e
    };
    let cases: Vec<(&str, Vec<Entry>, &str)> = vec![
        ("profile-symlink", plus(Entry::symlink("workspace/profile", &out_s)), "workspace/profile"),
        ("dotdot", plus(Entry::file("workspace/../../outside/x.txt", "x")), "workspace/../../outside/x.txt"),
        ("absolute", plus(Entry::file(&format!("{out_s}/abs.txt"), "x")), "abs.txt"),
        ("hard-link", plus(Entry::hard_link("bin/sh", "/bin/sh")), "bin/sh"),
        (
            "manifest-symlink",
            real.iter()
                .map(|e| {
                    if e.name == "kprof-archive.json" {
                        Entry::symlink("kprof-archive.json", &format!("{out_s}/plan.json"))
                    } else {
                        e.clone()
                    }
                })
                .collect(),
            "kprof-archive.json",
        ),
        ("cwd-outside", edited(&|m| m["kernels"][0]["cwd"] = out_s.clone().into()), "cwd"),
        ("executable-outside", edited(&|m| m["executables"][0][1] = "/bin/true".into()), "/bin/true"),
        ("schema", edited(&|m| m["schema_version"] = 99.into()), "schema_version 99"),
    ];
    for (name, entries, named) in cases {
        let case = there.path().join(name);
        std::fs::create_dir_all(&case).unwrap();
        let archive = case.join("hostile.tar");
        write(&archive, &entries);
        let before = crate::support::snapshot::take(there.path());
        let out = run_archive(&ws, &archive, &case.join("unpacked"));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{name}: {stderr}");
        assert!(stderr.contains(named) && stderr.contains("help:"), "{name}: {stderr}");
        let after = crate::support::snapshot::take(there.path());
        let changed = crate::support::snapshot::changes(&before, &after, &[]);
        assert!(changed.is_empty(), "{name}: {changed:?}\n{stderr}");
    }
}

/// `run --archive ARCHIVE --workspace-remap REMAP [extra]` in `root`, without ncu; at most
/// 60 s (a run that hangs is reported as exit `None`).
pub(crate) fn run_archive_in(root: &Path, archive: &str, remap: &str, extra: &[&str]) -> Output {
    let mut cmd = crate::support::kprof_bin();
    cmd.args(["kprof", "run", "--archive", archive, "--workspace-remap", remap]).args(extra);
    cmd.current_dir(root)
        .env("NCU", "/nonexistent/ncu")
        .env("NO_COLOR", "1")
        .env_remove("GITHUB_STEP_SUMMARY");
    output_within(cmd, 60).unwrap_or_else(|| {
        let failed = Command::new("sh").args(["-c", "exit 99"]).output().unwrap();
        Output { status: failed.status, stdout: Vec::new(), stderr: b"ran past 60 s".to_vec() }
    })
}

/// A real `cargo kprof archive` of the `copy` kernel of a harness workspace with one CUDA
/// source: its entries, its plan, and its executable's entry name.
pub(crate) fn real_archive() -> (Workspace, Vec<Entry>, serde_json::Value, String) {
    let ws = Workspace::with_harness(&format!("{COPY}runtime = \"harness\"\n"));
    std::fs::create_dir_all(ws.root().join("kernels")).unwrap();
    std::fs::write(ws.root().join("kernels/copy.cu"), "__global__ void copy_kernel() {}\n").unwrap();
    let path = ws.root().join("real.tar");
    let out = ws.kprof(&["archive", "--kernel", "copy", "-o", path.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let entries = tarball::read(&path);
    let plan = tarball::manifest(&entries);
    let exe = plan["executables"][0][1].as_str().unwrap().to_string();
    (ws, entries, plan, exe)
}

/// F5, F8 and F12: archives that unpacked more than they hold (sparse entries, entries the
/// plan does not list), entries that collide, plans that skip the command line's checks,
/// an A/B archive given to `run`, and archive paths that cannot be read twice. Each is
/// refused with exit 3 before anything is written, naming the archive and the entry.
#[test]
fn archives_that_unpack_more_than_they_hold_are_refused() {
    let (_ws, real, plan, exe) = real_archive();
    let source = plan["sources"][0].as_str().unwrap().to_string();
    let source_entry = format!("workspace/{source}");
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let replaced = |name: &str, by: Entry| -> Vec<Entry> {
        real.iter().map(|e| if e.name == name { by.clone() } else { e.clone() }).collect()
    };
    let plus = |extra: Entry, first: bool| {
        let mut e = real.clone();
        if first {
            e.insert(0, extra);
        } else {
            e.push(extra);
        }
        e
    };
    let edited = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut m = plan.clone();
        f(&mut m);
        tarball::with_manifest(&real, &m)
    };
    let sparse_1_0 = [
        ("GNU.sparse.major", "1"),
        ("GNU.sparse.minor", "0"),
        ("GNU.sparse.name", exe.as_str()),
        ("GNU.sparse.realsize", "1073741824"),
    ];
    let sparse_0_1 = [
        ("GNU.sparse.size", "1073741824"),
        ("GNU.sparse.numblocks", "1"),
        ("GNU.sparse.map", "1073741820,4"),
    ];
    let pair_manifest = format!(
        "{{\"schema_version\": 1, \"kprof_version\": \"0.1.0\", \"base_asked\": \"main\", \"base_commit\": \"{}\", \"head_commit\": null}}",
        "a".repeat(40)
    );
    let pair = vec![
        Entry::file("kprof-ab.json", pair_manifest),
        Entry::file("head.tar", tarball::bytes(&real)),
        Entry::file("base.tar", tarball::bytes(&real)),
    ];
    let exe_under = format!("{exe}/x");
    // (case, entries, what stderr names, extra arguments)
    type Case<'a> = (&'a str, Vec<Entry>, Vec<&'a str>, &'a [&'a str]);
    let cases: Vec<Case<'_>> = vec![
        (
            "an old GNU sparse executable",
            replaced(&exe, Entry::gnu_sparse(&exe, b"tail".to_vec(), 64 << 20)),
            vec![&exe, "sparse"],
            &[],
        ),
        (
            "an old GNU sparse executable, dry run",
            replaced(&exe, Entry::gnu_sparse(&exe, b"tail".to_vec(), 64 << 20)),
            vec![&exe, "sparse"],
            &["--dry-run"],
        ),
        (
            "a PAX sparse executable (GNU 1.0)",
            replaced(&exe, Entry::pax(&exe, &sparse_1_0, b"1\n1073741820\n4\ntail".to_vec())),
            vec![&exe, "sparse"],
            &[],
        ),
        (
            "a PAX sparse source (GNU 0.1)",
            replaced(&source_entry, Entry::pax(&source_entry, &sparse_0_1, b"tail".to_vec())),
            vec![&source_entry, "sparse"],
            &["--dry-run"],
        ),
        (
            "a file the plan does not list",
            plus(Entry::file("workspace/extra.bin", vec![0u8; 64 << 10]), false),
            vec!["workspace/extra.bin", "kprof-archive.json"],
            &[],
        ),
        (
            "an executable the plan does not list",
            plus(Entry::file("bin/other", "x"), true),
            vec!["bin/other", "kprof-archive.json"],
            &[],
        ),
        (
            "a file under the executable",
            plus(Entry::file(&exe_under, "x"), true),
            vec![&exe_under, &exe],
            &[],
        ),
        (
            "a folder where a source is",
            plus(Entry::dir(&format!("{source_entry}/")), false),
            vec![&source_entry],
            &[],
        ),
        (
            "a launch count of 0",
            edited(&|m| m["kernels"][0]["window"]["launch_count"] = 0.into()),
            vec!["launch_count"],
            &[],
        ),
        (
            "a filter that is no regex",
            edited(&|m| m["kernels"][0]["filter"] = serde_json::json!({"mode": "regex", "pattern": "((("})),
            vec!["((("],
            &[],
        ),
        (
            "a case that is no regex",
            edited(&|m| m["kernels"][0]["case"] = "(((".into()),
            vec!["`case`", "((("],
            &[],
        ),
        (
            "a negative tolerance",
            edited(&|m| m["kernels"][0]["tolerance_pct"] = (-5.0).into()),
            vec!["tolerance_pct"],
            &[],
        ),
        (
            "a tracer the archive does not hold",
            edited(&|m| m["tracer"] = "bin/libkprof_tracer.so".into()),
            vec!["the tracer is `bin/libkprof_tracer.so`, not the packed file"],
            &[],
        ),
        (
            "a tracer that is another entry",
            edited(&|m| m["tracer"] = m["executables"][0][1].clone()),
            vec!["the tracer is `bin/", "not the packed file `bin/libkprof_tracer.so`"],
            &[],
        ),
        ("an A/B archive", pair, vec!["check --archive"], &[]),
    ];
    let mut failures = Vec::new();
    let mut n = 0;
    for (i, (case, entries, named, extra)) in cases.into_iter().enumerate() {
        n += 1;
        let archive = root.join(format!("case-{i:02}.tar"));
        tarball::write(&archive, &entries);
        let a = archive.display().to_string();
        let remap = format!("remap-{i:02}");
        let mut names = vec![a.as_str()];
        names.extend(named);
        let expect = Expect { code: 3, names: &names, allowed: &[] };
        failures.extend(verify(case, root, expect, || run_archive_in(root, &a, &remap, extra)));
    }

    // F8: archives that are not regular files, which the check pass would use up.
    let real_tar = root.join("real.tar");
    tarball::write(&real_tar, &real);
    // The snapshot reads every file of the root: the pipe lives beside it.
    let pipes = tempfile::tempdir().unwrap();
    let fifo = pipes.path().join("pipe.tar");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let fifo_s = fifo.display().to_string();
    n += 2;
    let expect = Expect { code: 3, names: &[&fifo_s, "not a regular file"], allowed: &[] };
    failures
        .extend(verify("a named pipe", root, expect, || run_archive_in(root, &fifo_s, "remap-fifo", &[])));
    let expect = Expect { code: 3, names: &["/dev/stdin", "not a regular file"], allowed: &[] };
    failures.extend(verify("a pipe on stdin", root, expect, || {
        let mut cmd = crate::support::kprof_bin();
        cmd.args(["kprof", "run", "--archive", "/dev/stdin", "--workspace-remap", "remap-stdin"]);
        cmd.current_dir(root).env("NCU", "/nonexistent/ncu").env("NO_COLOR", "1");
        cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
        cmd.stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let bytes = std::fs::read(&real_tar).unwrap();
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            stdin.write_all(&bytes).ok();
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        out
    }));
    assert_all(failures, n);
}

/// F12: an archive's recorded `privilege = "sudo"` was honoured on the GPU machine without
/// `--sudo` (an archive anyone hands over decided to run ncu as root), and the refusal that
/// followed blamed a `--sudo` nobody passed. Without `--sudo`, ncu runs directly, and a
/// note says what the archive asked for.
#[test]
fn an_archive_never_chooses_sudo() {
    let ws = Workspace::with_harness(&format!("{COPY}runtime = \"harness\"\nprivilege = \"sudo\"\n"));
    let archive = ws.root().join("k.tar");
    let out = ws.kprof(&["archive", "--kernel", "copy", "-o", archive.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plan = tarball::manifest(&tarball::read(&archive));
    assert_eq!(plan["kernels"][0]["privilege"], "sudo", "the archive records the manifest's privilege");

    let there = tempfile::tempdir().unwrap();
    let tools = there.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let ncu = crate::support::fake_ncu::write(&tools);
    crate::support::fake_sudo::write(&tools);
    let (ncu_argv, sudo_argv) = (tools.join("ncu_argv.txt"), tools.join("sudo_argv.txt"));
    let remap = there.path().join("unpacked");
    let mut cmd = crate::support::kprof_bin();
    cmd.args(["kprof", "run", "--archive"]).arg(&archive).arg("--workspace-remap").arg(&remap);
    cmd.env("CARGO", "/nonexistent/cargo").env("NCU", &ncu).env("KPROF_SKIP_GPU_CHECK", "1");
    cmd.env("FAKE_NCU_ARGV", &ncu_argv).env("FAKE_SUDO_ARGV", &sudo_argv);
    cmd.env("FAKE_SUDO_STDIN", tools.join("sudo_stdin.txt"));
    cmd.env("FAKE_NCU_REPLAY", crate::support::fixture_details("copy_20261129_213211"));
    cmd.env("PATH", crate::support::path_with(&[&tools]));
    let out = cmd.output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("packed with `privilege = \"sudo\"` for copy")
            && stderr.contains("without sudo unless --sudo is given"),
        "{stderr}"
    );
    assert!(!sudo_argv.exists(), "sudo ran: {}", std::fs::read_to_string(&sudo_argv).unwrap());
    assert!(std::fs::read_to_string(&ncu_argv).unwrap().contains("--log-file"));
}
