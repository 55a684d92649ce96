#![no_main]
//! The saved kernel log of a capture (`ROOT/dev/kmsg`) is untrusted: parsing never panics, keeps
//! at most one record per line, and a parsed log printed back reads back as the same text.
use gpuledger::sources::kmsg::{classify, parse_log};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let records = parse_log(&text);
    assert!(records.len() <= text.lines().count());
    for r in &records {
        let _ = classify(&r.message);
    }
    let printed: String = records.iter().map(ToString::to_string).collect();
    let again: String = parse_log(&printed).iter().map(ToString::to_string).collect();
    assert_eq!(again, printed);
});
