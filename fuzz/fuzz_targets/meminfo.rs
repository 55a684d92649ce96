#![no_main]
//! meminfo and vmstat parsers: never panic.
use gpuledger::sources::meminfo::{parse_meminfo, parse_vmstat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let m = parse_meminfo(&text);
    assert!(m.values.len() + m.malformed as usize <= text.lines().count());
    let _ = parse_vmstat(&text, |_| true);
});
