//! The HTML views, read as files: `report.html` from `cargo kprof report` on the H200
//! recordings (self-contained, the same bytes when rendered again, every program string
//! escaped, under 1 MB for a source page of 2,000 lines, the comparison once one lands),
//! `report --open`, and `index.html` of a merged root. `browser.rs` opens them in a browser.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{copy_dir, recordings, text, write_script};

fn kprof(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = crate::support::kprof_bin();
    cmd.arg("kprof").args(args).env("NO_COLOR", "1").env_remove("GITHUB_STEP_SUMMARY").env_remove("BROWSER");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn ok(out: &Output) {
    assert!(out.status.success(), "stdout:\n{}\nstderr:\n{}", text(&out.stdout), text(&out.stderr));
}

/// A copy of the recorded demo profile `name` (`fixtures/h200/demo-stages/`), reported.
pub fn reported_demo(tmp: &Path, name: &str) -> PathBuf {
    let dir = tmp.join(name);
    copy_dir(&recordings().join("demo-stages").join(name), &dir);
    ok(&kprof(&["report", dir.to_str().unwrap()], &[]));
    dir
}

/// A copy of `fixtures/h200/demo-stages/hgemm_*` whose kernel is named as markup.
pub const HOSTILE: &str = "hgemm_naive<img src=x onerror=alert(1)><script>document.title='owned'</script>";

/// The demo's hgemm profile with its kernel renamed to [`HOSTILE`] in every page.
pub fn reported_hostile(tmp: &Path) -> PathBuf {
    let dir = tmp.join("hostile_20261129_213211");
    copy_dir(&recordings().join("demo-stages/hgemm_20261129_213211"), &dir);
    for e in std::fs::read_dir(dir.join("details")).unwrap() {
        let path = e.unwrap().path();
        let page = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, page.replace("hgemm_naive", HOSTILE)).unwrap();
    }
    ok(&kprof(&["report", dir.to_str().unwrap()], &[]));
    dir
}

/// What makes a page fetch something: it has none.
fn assert_self_contained(html: &str) {
    for fetch in [" src=", "<link", "url(", "@import", "http://", "https://", "//cdn"] {
        assert!(!html.contains(fetch), "the page would fetch something: {fetch}");
    }
    for href in html.split("href=\"").skip(1).map(|h| h.split('"').next().unwrap()) {
        assert!(href.starts_with('#') || !href.contains(':'), "a link off the page's directory: {href}");
    }
}

#[test]
fn a_profile_gets_a_self_contained_page_that_renders_the_same_again() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = reported_demo(tmp.path(), "hgemm_20261129_213211");
    let page = std::fs::read(dir.join("report.html")).unwrap();
    let html = String::from_utf8(page.clone()).unwrap();
    assert_self_contained(&html);
    for shown in [
        "hgemm_naive on NVIDIA H200",
        "memory-bound",
        "class=\"kernel-point\"",
        "roof compute binding",
        "hgemm.cu:24",
        "acc += __half2float(A[(size_t)row * k + i]) * __half2float(B[(size_t)i * n + col]);",
        "<details><summary>",
        "HADD2.F32 R25, -RZ, R10.H0_H0",
        "id=\"explain-1\"",
        "Where the ceilings come from",
    ] {
        assert!(html.contains(shown), "report.html lacks {shown}");
    }
    ok(&kprof(&["report", dir.to_str().unwrap()], &[]));
    assert!(std::fs::read(dir.join("report.html")).unwrap() == page, "a second rendering differs");
}

#[test]
fn a_hostile_kernel_name_is_text() {
    let tmp = tempfile::tempdir().unwrap();
    let html = std::fs::read_to_string(reported_hostile(tmp.path()).join("report.html")).unwrap();
    assert!(!html.contains("<img") && !html.contains("<script>document"), "markup from a kernel name");
    assert!(
        html.contains("hgemm_naive&#60;img src=x onerror=alert(1)&#62;")
            || html.contains("hgemm_naive&lt;img src=x")
    );
}

#[test]
fn open_starts_the_browser_on_the_page() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = reported_demo(tmp.path(), "copy_20261129_213211");
    let opened = tmp.path().join("opened.txt");
    let browser = write_script(
        &tmp.path().join("browser"),
        &format!("printf '%s' \"$1\" > {0}.part && mv {0}.part {0}\n", opened.display()),
    );
    let out = kprof(&["report", dir.to_str().unwrap(), "--open"], &[("BROWSER", &browser)]);
    ok(&out);
    assert!(text(&out.stderr).contains("report.html in a browser"), "{}", text(&out.stderr));
    // The browser is not waited for.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !opened.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(std::fs::read_to_string(&opened).unwrap(), dir.join("report.html").to_str().unwrap());
    let missing = tmp.path().join("no-such-browser");
    let out = kprof(&["report", dir.to_str().unwrap(), "--open"], &[("BROWSER", &missing)]);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("set BROWSER"), "{}", text(&out.stderr));
}

/// Where no browser can start (no `BROWSER`, no display), `--open` says the page's URL
/// instead of claiming to have opened it; `report` names the files it rewrote.
#[test]
fn open_without_a_browser_prints_the_url_and_report_lists_what_it_rewrote() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a profile");
    copy_dir(&recordings().join("demo-stages").join("copy_20261129_213211"), &dir);
    let out = crate::support::kprof_bin()
        .args(["kprof", "report", dir.to_str().unwrap(), "--open"])
        .env("NO_COLOR", "1")
        .env_remove("BROWSER")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    ok(&out);
    let stderr = text(&out.stderr);
    let url = format!("file://{}/report.html", dir.to_str().unwrap().replace(' ', "%20"));
    assert!(stderr.contains(&format!("the page is {url}")), "{stderr}");
    assert!(!stderr.contains("Opening") && !stderr.contains("Opened"), "{stderr}");
    let rewrote = stderr.lines().find(|l| l.contains("Rewrote")).unwrap_or_else(|| panic!("{stderr}"));
    for f in ["final_report.md", "report.html", "details/bottleneck_decision.json"] {
        assert!(rewrote.contains(f), "{rewrote}");
    }
    assert!(!rewrote.contains("01_basic_raw.csv"), "the pages are read, not rewritten: {rewrote}");
}

#[test]
fn a_source_page_of_2000_lines_makes_a_page_under_1_mb() {
    use cargo_kprof::report::html::{load, render_profile};
    let tmp = tempfile::tempdir().unwrap();
    let dir = reported_demo(tmp.path(), "hgemm_20261129_213211");
    let mut data = load::load(&cargo_kprof::profile::ProfileDir::at(&dir)).unwrap().unwrap();
    let row = |kind: &str, line: u32, n: u32, samples: f64| load::HotRow {
        kind: kind.into(),
        function: "hgemm_naive".into(),
        file: "/opt/cargo-kprof/examples/demo/kernels/big.cu".into(),
        line,
        address: if kind == "sass" { format!("0x7ff8ed7a{:04x}", line * 16 + n) } else { String::new() },
        source: if kind == "sass" {
            "HADD2.F32 R25, -RZ, R10.H0_H0".into()
        } else {
            format!(
                "acc{line} += __half2float(A[(size_t)row * k + i]) * __half2float(B[(size_t)i * n + col]);"
            )
        },
        samples,
        pct_of_kernel: samples / 20.0,
        top_stalls: "long_sb=318326; not_selected=1995; math=1125".into(),
    };
    data.hotspots = (1..=2000u32)
        .rev()
        .flat_map(|line| {
            let samples = f64::from(line);
            std::iter::once(row("cuda", line, 0, samples))
                .chain((0..12).map(move |n| row("sass", line, n, samples / 12.0)))
        })
        .collect();
    let html = render_profile(&data).unwrap();
    assert!(html.matches("<tr id=\"L1-").count() == 2000, "every line is listed");
    assert!(html.len() < 1_000_000, "report.html of 2,000 lines weighs {} bytes", html.len());
    assert!(html.contains("SASS is kept under the 100 hottest of the 2000 lines with samples."));
}

#[test]
fn a_comparison_lands_in_the_page() {
    let tmp = tempfile::tempdir().unwrap();
    let base = reported_demo(tmp.path(), "hgemm_20261129_213211");
    let current = tmp.path().join("hgemm_20261129_230000");
    copy_dir(&base, &current);
    ok(&kprof(&["report", current.to_str().unwrap()], &[]));
    ok(&kprof(&["compare", current.to_str().unwrap(), "--baseline", base.to_str().unwrap()], &[]));
    let html = std::fs::read_to_string(current.join("report.html")).unwrap();
    for shown in [
        "id=\"comparison\"",
        "Against profile hgemm_20261129_213211",
        "Hot lines, side by side",
        "achieved occupancy",
    ] {
        assert!(html.contains(shown), "report.html lacks {shown}");
    }
}

#[test]
fn an_ab_check_shows_its_interval() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("hgemm_tiled_20261201_013241");
    copy_dir(&recordings().join("ab-runs/bank/head/profile/hgemm_tiled_20261201_013241"), &dir);
    ok(&kprof(&["report", dir.to_str().unwrap()], &[]));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for shown in [
        "A/B check against base 2839adc2f1f4 (main)",
        "class=\"ab-interval\"",
        "+428.1 % [+427.8, +428.5]",
        "bank conflicts",
    ] {
        assert!(html.contains(shown), "report.html lacks {shown}");
    }
}

/// The zoo's 28 recorded `auto` profiles, each with its `report.html` rendered from the
/// recorded analysis, merged into one root: made once per test run (under `target/tmp/`)
/// and shared.
pub fn merged_zoo() -> &'static Path {
    static ZOO: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ZOO.get_or_init(|| {
        // One folder per test process: a runner that starts each test in a process of its
        // own would otherwise have several rebuild one folder at once. Folders of processes
        // that have ended are removed first.
        let parent = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let alive_known = Path::new("/proc/self").exists();
        for e in std::fs::read_dir(parent).into_iter().flatten().flatten().filter(|_| alive_known) {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("html-zoo-") {
                if !Path::new("/proc").join(pid).exists() {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let tmp = parent.join(format!("html-zoo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let shard = tmp.join("zoo");
        copy_dir(&recordings().join("zoo-auto"), &shard);
        let ids: Vec<String> = std::fs::read_dir(&shard)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("details").is_dir())
            .map(|p| p.to_str().unwrap().to_string())
            .collect();
        assert_eq!(ids.len(), 28);
        for id in &ids {
            cargo_kprof::report::html::write_profile(&cargo_kprof::profile::ProfileDir::at(id)).unwrap();
        }
        let merged = tmp.join("merged");
        ok(&kprof(&["merge", shard.to_str().unwrap(), "--output-dir", merged.to_str().unwrap()], &[]));
        merged
    })
}

#[test]
fn a_merged_root_gets_an_index_page() {
    let html = std::fs::read_to_string(merged_zoo().join("index.html")).unwrap();
    assert_self_contained(&html);
    assert_eq!(html.matches("<tr><td data-v=").count(), 28);
    assert_eq!(html.matches("/report.html\"><code class=\"kernel-name\">").count(), 28);
    for shown in
        ["Merged from an unsplit run", "uncoalesced-global", "predicted saving", "GPU time per kernel"]
    {
        assert!(html.contains(shown), "index.html lacks {shown}");
    }
}

#[test]
fn the_index_draws_gpu_time_from_the_launch_census() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("profile");
    copy_dir(&recordings().join("third-party/gemm-several/profile"), &root);
    ok(&kprof(&["report", root.join("gemm_20261130_231229").to_str().unwrap()], &[]));
    cargo_kprof::report::index::write(&root).unwrap();
    let html = std::fs::read_to_string(root.join("index.html")).unwrap();
    assert!(html.contains("from the launch census"), "{html}");
    // Both kernels the census saw, the profiled one and the other, costliest first.
    let naive = html.find("30.249 ms over 1 launch(es)").expect("hgemm_naive's bar");
    let tiled = html.find("15.120 ms over 1 launch(es)").expect("hgemm_tiled's bar");
    assert!(naive < tiled);
    assert!(!root.join("ab.html").exists(), "no A/B check, no ab.html");
}
