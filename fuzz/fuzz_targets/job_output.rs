#![no_main]
//! Job-output line parsers: the error classifier and the device-memory failure reader never
//! panic, and a size they read back is one the line could hold.
use gpuledger::job_output::{classify, device_oom};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let line = String::from_utf8_lossy(data);
    let _ = classify(&line);
    if let Some(o) = device_oom(&line) {
        assert!(o.asked.is_none_or(|b| b < u64::MAX));
    }
});
