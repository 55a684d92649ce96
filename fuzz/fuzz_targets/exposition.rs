#![no_main]
//! Any text as process names, cmdlines, device and region names and job labels: the rendered
//! exposition parses strictly and holds exactly the expected series (no injected line).
//! The reader and the property live in tests/it/serve/exposition.rs, shared with the proptest.
#[path = "../../tests/it/serve/exposition.rs"]
mod exposition;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // 0xff never occurs in UTF-8, so it splits the input into words without limiting them.
    let words: Vec<String> = data
        .split(|b| *b == 0xff)
        .take(8)
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    if let Err(e) = exposition::check_hostile_render(&words) {
        panic!("{e}");
    }
});
