#![no_main]
//! /proc/PID/status and environ filtering: never panic, never keep a credential-looking name.
use gpuledger::sources::proc_pid::{filter_environ, parse_status};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = parse_status(&text);
    let pairs: Vec<String> = text.split('\0').map(String::from).collect();
    for k in filter_environ(&pairs).keys() {
        assert!(!k.to_ascii_uppercase().contains("TOKEN"));
    }
});
