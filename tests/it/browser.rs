//! The HTML views in a real browser: headless Chromium, driven over the DevTools protocol
//! (`support::cdp`), opens the pages `cargo kprof report` and `merge` write for the
//! demo's and the zoo's H200 recordings. Each page loads without a console error; the
//! verdict and the hot lines are visible; the roofline has its point; the SASS under a
//! line opens on demand; the index table sorts when a column's name is clicked; and a
//! kernel named as markup shows as text. Screenshots of two pages go to
//! `target/tmp/browser/`.
//!
//! Where no Chromium is found the tests skip and say so; `KPROF_REQUIRE_BROWSER=1` (CI
//! sets it once it has installed one) makes that a failure.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::html::{merged_zoo, reported_demo, reported_hostile, HOSTILE};
use crate::support::cdp::{find_chromium, Browser};

/// The browser, or `None` (after saying why) where there is none and none is required.
fn browser() -> Option<Browser> {
    match find_chromium() {
        Some(binary) => Some(Browser::launch(&binary)),
        None if std::env::var("KPROF_REQUIRE_BROWSER").as_deref() == Ok("1") => panic!(
            "KPROF_REQUIRE_BROWSER=1 but no Chromium was found (chromium, chromium-browser, google-chrome on \
             PATH, or KPROF_CHROMIUM): install one (Debian: apt-get install chromium)"
        ),
        None => {
            eprintln!(
                "skipped: no Chromium found (chromium, chromium-browser, google-chrome on PATH, or KPROF_CHROMIUM); \
                 install one (Debian: apt-get install chromium) to run the browser tests"
            );
            None
        }
    }
}

/// Where the screenshots go: under `target/`, never committed.
fn screenshot(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser").join(name)
}

/// `document.querySelector(selector)`'s text when it is rendered and visible, else null.
fn visible_text(selector: &str) -> String {
    format!(
        "(() => {{ const e = document.querySelector({}); \
         return e && e.checkVisibility() && e.getBoundingClientRect().height > 0 ? e.innerText : null; }})()",
        json!(selector)
    )
}

#[test]
fn a_profile_page_shows_its_verdict_roofline_and_hot_lines() {
    let Some(mut browser) = browser() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = reported_demo(tmp.path(), "hgemm_20261129_213211");
    let mut tab = browser.open(&dir.join("report.html"));
    assert_eq!(tab.errors(), Vec::<String>::new(), "console errors");
    let verdict = tab.eval(&visible_text("#verdict .verdict"));
    assert!(verdict.as_str().is_some_and(|v| v.contains("memory-bound")), "verdict not visible: {verdict}");
    let hot = tab.eval(&visible_text("#hot-lines"));
    assert!(
        hot.as_str().is_some_and(|h| h.contains("hgemm.cu:24") && h.contains("acc += __half2float")),
        "{hot}"
    );
    // The roofline: both ceilings, the binding one marked, and the kernel's point inside the plot.
    let roof = tab.eval(
        "(() => { const s = document.querySelector('svg.roofline'); const p = s.querySelector('circle.kernel-point'); \
         const f = s.querySelector('rect.axis').getBBox(); const c = p.getBBox(); \
         return { lines: s.querySelectorAll('line.roof').length, binding: s.querySelectorAll('line.roof.binding').length, \
                  points: s.querySelectorAll('circle.kernel-point').length, \
                  inside: c.x >= f.x && c.x + c.width <= f.x + f.width && c.y >= f.y && c.y + c.height <= f.y + f.height }; })()",
    );
    assert_eq!(roof, json!({ "lines": 2, "binding": 1, "points": 1, "inside": true }));
    // The SASS under the hottest line opens on demand.
    let sass = "#L1-24 details table.sass";
    assert_eq!(tab.eval(&visible_text(sass)), Value::Null, "the SASS shows before it is asked for");
    tab.click("#L1-24 details summary");
    let opened = tab.eval(&visible_text(sass));
    assert!(opened.as_str().is_some_and(|s| s.contains("HADD2.F32")), "the SASS did not open: {opened}");
    assert_eq!(tab.errors(), Vec::<String>::new(), "console errors");
    tab.screenshot(&screenshot("report-hgemm_naive.png"));
}

#[test]
fn every_demo_profile_page_loads_without_errors() {
    let Some(mut browser) = browser() else { return };
    let tmp = tempfile::tempdir().unwrap();
    for name in [
        "copy_20261129_213211",
        "fma_20261129_213211",
        "hgemm_tiled_20261129_213211",
        "occupancy_20261129_213211",
        "reduce_20261129_213211",
        "tiny_20261129_213211",
    ] {
        let dir = reported_demo(tmp.path(), name);
        let mut tab = browser.open(&dir.join("report.html"));
        assert_eq!(tab.errors(), Vec::<String>::new(), "{name}: console errors");
        let verdict = tab.eval(&visible_text("#verdict .verdict"));
        assert!(verdict.as_str().is_some_and(|v| !v.is_empty()), "{name}: no verdict visible");
    }
}

#[test]
fn a_kernel_named_as_markup_shows_as_text() {
    let Some(mut browser) = browser() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = reported_hostile(tmp.path());
    let mut tab = browser.open(&dir.join("report.html"));
    assert_eq!(tab.errors(), Vec::<String>::new(), "console errors");
    let found = tab.eval(
        "({ images: document.querySelectorAll('img').length, scripts: document.scripts.length, \
            title: document.title, name: document.querySelector('code.kernel-name').textContent })",
    );
    assert_eq!(found["images"], json!(0), "an <img> came from the kernel name");
    assert_eq!(found["scripts"], json!(1), "a <script> came from the kernel name");
    assert_ne!(found["title"], json!("owned"), "the kernel name ran");
    assert_eq!(found["name"], json!(HOSTILE));
}

#[test]
fn the_merged_zoo_index_sorts_and_links_each_report() {
    let Some(mut browser) = browser() else { return };
    let merged = merged_zoo();
    let mut tab = browser.open(&merged.join("index.html"));
    assert_eq!(tab.errors(), Vec::<String>::new(), "console errors");
    let column = |tab: &mut crate::support::cdp::Tab<'_>, n: usize| -> Vec<Value> {
        let expr = format!(
            "Array.from(document.querySelectorAll('#profiles tbody tr')).map(r => r.cells[{n}].getAttribute('data-v'))"
        );
        tab.eval(&expr).as_array().unwrap().clone()
    };
    let numbers =
        |v: &[Value]| -> Vec<f64> { v.iter().map(|x| x.as_str().unwrap().parse().unwrap()).collect() };
    assert_eq!(column(&mut tab, 4).len(), 28);
    // The duration column (the fifth), ascending on the first click, descending on the second.
    tab.click("#profiles thead th:nth-child(5) button");
    let up = numbers(&column(&mut tab, 4));
    assert!(up.windows(2).all(|w| w[0] <= w[1]), "not ascending: {up:?}");
    assert!(up.first() < up.last());
    tab.click("#profiles thead th:nth-child(5) button");
    let down = numbers(&column(&mut tab, 4));
    assert!(down.windows(2).all(|w| w[0] >= w[1]), "not descending: {down:?}");
    // The kernel column sorts by name.
    tab.click("#profiles thead th:nth-child(1) button");
    let names: Vec<String> = column(&mut tab, 0).iter().map(|v| v.as_str().unwrap().to_lowercase()).collect();
    assert!(names.windows(2).all(|w| w[0] <= w[1]), "names not sorted: {names:?}");
    let bars = tab.eval("document.querySelectorAll('#gpu-time .bar > span').length");
    assert_eq!(bars, json!(28));
    assert_eq!(tab.errors(), Vec::<String>::new(), "console errors");
    tab.screenshot(&screenshot("index-zoo.png"));
    // Each link reaches a page that loads.
    let link = tab.eval("document.querySelector('#profiles tbody a').getAttribute('href')");
    let mut report = browser.open(&merged.join(link.as_str().unwrap()));
    assert_eq!(report.errors(), Vec::<String>::new(), "console errors");
    assert!(report.eval(&visible_text("#verdict .verdict")).is_string());
}
