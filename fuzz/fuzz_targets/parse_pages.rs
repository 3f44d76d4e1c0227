//! Feeds arbitrary bytes to every ncu page parser: each must return `Ok` or `Err`, and an
//! error must point at a line of its input.
//!
//! Run with `cargo +nightly fuzz run parse_pages` from the repository root; seed the corpus
//! with the recordings, unpacked (`NAME.gz` is the recorded `NAME`, gzip-compressed), e.g.
//! `for f in fixtures/h200/misc/* fixtures/h200/demo-full/copy_*; do zcat -f "$f" >
//! "fuzz/corpus/parse_pages/$(basename "${f%.gz}")"; done`.
#![no_main]

use cargo_kprof::ncu::parse::{parse_number, scan_log, DetailsPage, RawPage, SourcePage};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines = text.split('\n').count();
    let _ = scan_log(&text);
    let _ = parse_number(&text);
    let errors = [
        RawPage::parse(&text, "fuzz").err(),
        DetailsPage::parse(&text, "fuzz").err(),
        SourcePage::parse(&text, "fuzz").err(),
    ];
    for err in errors.into_iter().flatten() {
        assert!((1..=lines).contains(&err.line), "{err} (input has {lines} lines)");
    }
    if let Ok(page) = RawPage::parse(&text, "fuzz") {
        for launch in page.launches() {
            let _ = (launch.kernel_name(), launch.id(), launch.number("gpu__time_duration.sum"));
        }
    }
});
