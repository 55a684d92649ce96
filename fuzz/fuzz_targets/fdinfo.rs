#![no_main]
//! fdinfo parser: never panics; what it parses obeys the parser's own invariants.
use gpuledger::sources::drm_fdinfo::FdInfo;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let info = FdInfo::parse(&text);
    let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(info.malformed as usize <= lines);
    for name in info.regions.keys().chain(info.engines.keys()) {
        assert!(!name.is_empty() && !name.contains(char::is_whitespace));
    }
});
