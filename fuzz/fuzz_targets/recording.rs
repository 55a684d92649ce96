#![no_main]
//! The recording reader: any bytes as a `.ledger` file must give a recording or a clear error.
use libfuzzer_sys::fuzz_target;
use std::io::Write;

fuzz_target!(|data: &[u8]| {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(data).unwrap();
    if let Ok(rec) = gpuledger::recording::open(f.path()) {
        let _ = gpuledger::timeline::analyze(&rec);
    }
});
