//! `visual/profile_summary.png` and the before/after picture, drawn from real H200
//! recordings (`fixtures/h200/demo-full`, `demo-stages`), decoded and checked pixel-wise.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use cargo_kprof::analyze::hotspots::{self, Hotspot};
use cargo_kprof::analyze::summary::KernelSummary;
use cargo_kprof::analyze::{Analysis, AnalyzeOptions};
use cargo_kprof::ncu::parse::SourcePage;
use cargo_kprof::profile::dir::ProfileDir;
use cargo_kprof::report;

use crate::support::{copy_dir, recordings};
use cargo_kprof::report::visual::{self, PanelRect, VisualInput};

/// Imports a demo kernel's `--set full` pages (raw, source, details) into `out`.
fn import_demo(kernel: &str, out: &Path) -> ProfileDir {
    let full = recordings().join("demo-full");
    report::import(
        &[full.join(format!("{kernel}_full_raw.csv"))],
        Some(&full.join(format!("{kernel}_source.csv"))),
        Some(&full.join(format!("{kernel}_full_details.csv"))),
        None,
        out,
        &AnalyzeOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{kernel}: {e:#}"))
    .0
}

/// An imported demo kernel, analysed again to get the analysis in hand, with its hotspots.
struct Profile {
    analysis: Analysis,
    hot: Vec<Hotspot>,
}

fn profile(kernel: &str, out: &Path) -> Profile {
    let dir = import_demo(kernel, out);
    let analysis = report::refresh(&dir, &AnalyzeOptions::default()).unwrap();
    assert!(analysis.warnings.is_empty(), "{kernel}: {:?}", analysis.warnings);
    let source = recordings().join(format!("demo-full/{kernel}_source.csv"));
    let page = SourcePage::parse(&std::fs::read_to_string(&source).unwrap(), "source").unwrap();
    Profile { analysis, hot: hotspots::hotspots(&page, &|_, _| None) }
}

fn input<'a>(p: &'a Profile, kernel: &'a KernelSummary) -> VisualInput<'a> {
    let device = p.analysis.summary.device.clone().unwrap();
    VisualInput {
        title: format!("{} — {device}", kernel.kernel),
        kernel,
        verdict: p.analysis.decision.kernels.first(),
        hotspots: &p.hot,
        source_collected: true,
        device: visual::ceilings_for(&device),
    }
}

/// A decoded 8-bit RGB picture.
struct Picture {
    w: u32,
    h: u32,
    rgb: Vec<u8>,
}

fn decode(bytes: &[u8]) -> Picture {
    let mut reader = png::Decoder::new(Cursor::new(bytes)).read_info().expect("a PNG");
    let mut rgb = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut rgb).expect("a PNG frame");
    assert_eq!((info.color_type, info.bit_depth), (png::ColorType::Rgb, png::BitDepth::Eight));
    rgb.truncate(info.buffer_size());
    Picture { w: info.width, h: info.height, rgb }
}

impl Picture {
    fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        let i = 3 * (y as usize * self.w as usize + x as usize);
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// Pixels inside a panel, its frame left out.
    fn inside(&self, r: &PanelRect) -> impl Iterator<Item = [u8; 3]> + '_ {
        let (x0, y0, x1, y1) = (r.x + 4, r.y + 4, r.x + r.w - 4, r.y + r.h - 4);
        (y0..y1).flat_map(move |y| (x0..x1).map(move |x| self.pixel(x, y)))
    }

    /// The share of a panel's pixels that are not white, below its title (the top 44
    /// pixels) except in the headers, which have none.
    fn ink(&self, r: &PanelRect) -> f64 {
        let title = if r.name.contains("header") { 0 } else { 40 };
        let r = &PanelRect { y: r.y + title, h: r.h - title, ..*r };
        let (mut ink, mut all) = (0usize, 0usize);
        for p in self.inside(r) {
            all += 1;
            if p != [255, 255, 255] {
                ink += 1;
            }
        }
        ink as f64 / all as f64
    }

    /// Pixels of exactly one colour in a panel.
    fn count(&self, r: &PanelRect, color: [u8; 3]) -> usize {
        self.inside(r).filter(|p| *p == color).count()
    }
}

/// Every panel carries drawing: at least `min` of its pixels are not white.
fn assert_panels_drawn(what: &str, pic: &Picture, panels: &[PanelRect], min: f64) {
    let inks: Vec<(&str, f64)> = panels.iter().map(|r| (r.name, pic.ink(r))).collect();
    assert!(inks.iter().all(|(_, ink)| *ink >= min), "{what}: a panel is (nearly) blank: {inks:?}");
}

fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(temp_files(&p));
        } else if p.extension().is_some_and(|e| e == "tmp") {
            out.push(p);
        }
    }
    out
}

/// The bars' colours (see src/visual.rs).
const MEMORY_BLUE: [u8; 3] = [52, 116, 196];
const STALL_RED: [u8; 3] = [192, 57, 43];

#[test]
fn import_writes_a_profile_summary_png_for_every_demo_kernel() {
    let tmp = tempfile::tempdir().unwrap();
    for kernel in ["copy", "fma", "hgemm_naive", "hgemm_tiled", "occupancy", "tiny", "reduce"] {
        let dir = import_demo(kernel, &tmp.path().join(kernel));
        let path = dir.visual_summary_path();
        assert!(path.ends_with("visual/profile_summary.png"), "{}", path.display());
        let pic = decode(&std::fs::read(&path).unwrap_or_else(|e| panic!("{kernel}: {e}")));
        assert_eq!((pic.w, pic.h), (visual::SUMMARY_WIDTH, visual::SUMMARY_HEIGHT), "{kernel}");
        let layout = visual::summary_layout();
        // reduce's source page has no line info: its hotspot panel only says so.
        let (with_data, message) = match kernel {
            "reduce" => (&layout[..5], &layout[5..]),
            _ => (&layout[..], &layout[..0]),
        };
        assert_panels_drawn(kernel, &pic, with_data, 0.02);
        assert_panels_drawn(kernel, &pic, message, 0.004);
        assert_eq!(temp_files(dir.path()), Vec::<PathBuf>::new(), "{kernel}");
        let report = std::fs::read_to_string(dir.final_report_path()).unwrap();
        assert!(!report.contains("profile_summary.png was not written"), "{kernel}: {report}");
    }
}

#[test]
fn stage_and_full_pages_with_flop_counts_get_their_roofline_point() {
    // The roofline stage counts FLOPs, so the point is drawn (a red disc in that panel).
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("fma");
    copy_dir(&recordings().join("demo-stages/fma_20261129_213211"), &dst);
    let dir = ProfileDir::at(&dst);
    let a = report::refresh(&dir, &AnalyzeOptions::default()).unwrap();
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    assert!(a.summary.kernels[0].get("arithmetic_intensity").is_some_and(|v| v > 0.0));
    let pic = decode(&std::fs::read(dir.visual_summary_path()).unwrap());
    let roofline = visual::summary_layout()[2];
    assert_eq!(roofline.name, "roofline");
    assert!(pic.count(&roofline, [214, 39, 40]) > 60, "no roofline point drawn");
    // A --set full page counts FLOPs per elapsed cycle, not in total: the summary derives
    // the totals (rate x cycles), the same 2^35 FFMAs the roofline stage counted, and the
    // point is drawn there too.
    let full = import_demo("fma", &tmp.path().join("full"));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(full.metrics_summary_path()).unwrap()).unwrap();
    let ffma = summary["kernels"][0]["ffma_thread_inst"].as_f64().unwrap();
    let counted = a.summary.kernels[0].get("ffma_thread_inst").unwrap();
    assert_eq!(counted, 34_359_738_368.0);
    assert!((ffma / counted - 1.0).abs() < 1e-6, "{ffma} derived vs {counted} counted");
    let pic = decode(&std::fs::read(full.visual_summary_path()).unwrap());
    assert!(pic.count(&roofline, [214, 39, 40]) > 60, "no roofline point for the full page");
}

#[test]
fn comparison_puts_before_and_after_side_by_side_on_shared_scales() {
    let tmp = tempfile::tempdir().unwrap();
    let naive = profile("hgemm_naive", &tmp.path().join("naive"));
    let tiled = profile("hgemm_tiled", &tmp.path().join("tiled"));
    let copy = profile("copy", &tmp.path().join("copy"));
    let (kn, kt, kc) = (
        &naive.analysis.summary.kernels[0],
        &tiled.analysis.summary.kernels[0],
        &copy.analysis.summary.kernels[0],
    );
    let bytes = visual::comparison_png(&input(&naive, kn), &input(&tiled, kt)).unwrap();
    let pic = decode(&bytes);
    assert_eq!((pic.w, pic.h), (2 * visual::SUMMARY_WIDTH, visual::SUMMARY_HEIGHT + visual::COMPARISON_BAND));
    assert!(pic.w > visual::SUMMARY_WIDTH);
    let panels: Vec<PanelRect> = visual::comparison_layout().into_iter().map(|(_, r)| r).collect();
    assert_eq!(panels.len(), 13);
    assert_panels_drawn("comparison", &pic, &panels, 0.02);

    // Shared scales: next to copy's 298 warps per issue, naive's 13.4 gets far shorter
    // stall bars than in its own picture, where the axis ends near 15.
    let alone = decode(&visual::profile_summary_png(&input(&naive, kn)).unwrap());
    let stalls = visual::summary_layout()[4];
    assert_eq!(stalls.name, "stall reasons");
    let with_copy = decode(&visual::comparison_png(&input(&naive, kn), &input(&copy, kc)).unwrap());
    let before_stalls = visual::comparison_layout()
        .into_iter()
        .find(|(side, r)| *side == "before" && r.name == "stall reasons")
        .unwrap()
        .1;
    let (own, shared) = (alone.count(&stalls, STALL_RED), with_copy.count(&before_stalls, STALL_RED));
    assert!(shared * 5 < own, "stall bars {shared} px next to copy, {own} px alone");
    // Speed of light is 0-100 % in every picture: the same bars in both.
    let sol = visual::summary_layout()[1];
    let before_sol = visual::comparison_layout()
        .into_iter()
        .find(|(s, r)| *s == "before" && r.name == sol.name)
        .unwrap()
        .1;
    assert_eq!(alone.count(&sol, MEMORY_BLUE), with_copy.count(&before_sol, MEMORY_BLUE));
}

#[test]
fn a_field_not_collected_is_not_drawn_as_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let naive = profile("hgemm_naive", &tmp.path().join("naive"));
    let real = &naive.analysis.summary.kernels[0];
    for field in [
        "duration_ns",
        "sm_throughput_pct",
        "dram_throughput_pct",
        "achieved_occupancy_pct",
        "occupancy_limit_shared_mem",
        "block_size",
    ] {
        let with = |v: Option<f64>| {
            let mut k = real.clone();
            k.fields.insert(field.into(), v);
            visual::profile_summary_png(&input(&naive, &k)).unwrap()
        };
        assert_ne!(with(None), with(Some(0.0)), "{field}: None is drawn as 0");
    }
    // Nothing collected at all, no verdict, no hotspots, no device: still a whole picture.
    let mut empty = real.clone();
    empty.fields.values_mut().for_each(|v| *v = None);
    empty.top_stalls.clear();
    let bare = VisualInput {
        title: "nothing collected".into(),
        kernel: &empty,
        verdict: None,
        hotspots: &[],
        source_collected: false,
        device: None,
    };
    let pic = decode(&visual::profile_summary_png(&bare).unwrap());
    assert_eq!((pic.w, pic.h), (visual::SUMMARY_WIDTH, visual::SUMMARY_HEIGHT));
    assert_panels_drawn("nothing collected", &pic, &visual::summary_layout(), 0.003);
    // No memory bar in speed of light: only the legend's swatch is blue.
    let sol = visual::summary_layout()[1];
    assert!(pic.count(&sol, MEMORY_BLUE) <= 14 * 14, "{}", pic.count(&sol, MEMORY_BLUE));
    let full = decode(&visual::profile_summary_png(&input(&naive, real)).unwrap());
    assert!(full.count(&sol, MEMORY_BLUE) > 20 * 14 * 14, "{}", full.count(&sol, MEMORY_BLUE));
}

#[test]
fn the_basic_stage_alone_still_gets_a_picture() {
    // A real page with most fields absent (no memory stage, no stalls, no source).
    let tmp = tempfile::tempdir().unwrap();
    let basic = recordings().join("demo-stages/copy_20261129_213211/details/01_basic_raw.csv");
    let (dir, _) =
        report::import(&[basic], None, None, None, &tmp.path().join("p"), &AnalyzeOptions::default())
            .unwrap();
    let pic = decode(&std::fs::read(dir.visual_summary_path()).unwrap());
    assert_panels_drawn("basic stage", &pic, &visual::summary_layout(), 0.003);
}

#[test]
fn a_picture_that_cannot_be_written_is_a_warning_and_leaves_no_temporary_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = import_demo("hgemm_naive", &tmp.path().join("h"));
    // A directory where the picture goes: the rename into place fails.
    let path = dir.visual_summary_path();
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir_all(path.join("in-the-way")).unwrap();
    let a = report::refresh(&dir, &AnalyzeOptions::default()).expect("the analysis succeeds");
    assert_eq!(a.warnings.len(), 1, "{:?}", a.warnings);
    assert!(a.warnings[0].contains("visual/profile_summary.png was not written"), "{:?}", a.warnings);
    assert_eq!(temp_files(dir.path()), Vec::<PathBuf>::new());
    assert!(dir.metrics_summary_path().is_file() && dir.bottleneck_decision_path().is_file());
    let report = std::fs::read_to_string(dir.final_report_path()).unwrap();
    assert!(report.contains("visual/profile_summary.png was not written"), "{report}");
    // With the way clear again, the next analysis draws it.
    std::fs::remove_dir_all(&path).unwrap();
    let a = report::refresh(&dir, &AnalyzeOptions::default()).unwrap();
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    assert_eq!(decode(&std::fs::read(&path).unwrap()).w, visual::SUMMARY_WIDTH);
}

#[test]
fn the_same_profile_draws_the_same_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let p = profile("occupancy", &tmp.path().join("o"));
    let k = &p.analysis.summary.kernels[0];
    let first = visual::profile_summary_png(&input(&p, k)).unwrap();
    assert_eq!(first, visual::profile_summary_png(&input(&p, k)).unwrap());
    assert_eq!(first, std::fs::read(tmp.path().join("o/visual/profile_summary.png")).unwrap());
}

const HOT_PURPLE: [u8; 3] = [142, 68, 173];

/// What `auto` collects (basic, source, a memory follow-up: no FLOP counts) draws no empty
/// panel: the binding ceiling stands where the roofline cannot, the hot lines are there,
/// and a kernel at full theoretical occupancy has no limiter marked red.
#[test]
fn a_default_runs_picture_has_hot_lines_a_binding_ceiling_and_no_false_limiter() {
    let tmp = tempfile::tempdir().unwrap();
    let d = recordings().join("demo-stages/hgemm_20261129_213211/details");
    let (dir, _) = report::import(
        &[d.join("01_basic_raw.csv"), d.join("03_memory_raw.csv")],
        Some(&d.join("07_source_raw.csv")),
        None,
        None,
        &tmp.path().join("hgemm"),
        &AnalyzeOptions::default(),
    )
    .unwrap();
    let pic = decode(&std::fs::read(dir.visual_summary_path()).unwrap());
    let [_, _, roof, occ, _, hot] = visual::summary_layout();
    assert!(pic.count(&roof, MEMORY_BLUE) > 100 * 20, "L1/TEX's bar: {}", pic.count(&roof, MEMORY_BLUE));
    assert!(pic.count(&hot, HOT_PURPLE) > 100 * 10, "hot lines: {}", pic.count(&hot, HOT_PURPLE));
    assert_eq!(pic.count(&occ, STALL_RED), 0, "a limiter marked at 100 % theoretical occupancy");
    // Below full occupancy the limiter is marked.
    let o = recordings().join("demo-stages/occupancy_20261129_213211/details/01_basic_raw.csv");
    let (dir, _) =
        report::import(&[o], None, None, None, &tmp.path().join("occ"), &AnalyzeOptions::default()).unwrap();
    let pic = decode(&std::fs::read(dir.visual_summary_path()).unwrap());
    assert!(pic.count(&occ, STALL_RED) > 100, "the limiter: {}", pic.count(&occ, STALL_RED));
}
