#![no_main]
//! The recording reader: any bytes as a `.ledger` file must give a recording or a clear error,
//! and what it gives must go through the timeline analysis, `show` and `plot`.
use libfuzzer_sys::fuzz_target;
use std::io::Write;

fuzz_target!(|data: &[u8]| {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(data).unwrap();
    if let Ok(rec) = gpuledger::recording::open(f.path()) {
        let found = gpuledger::timeline::analyze(&rec);
        let _ = gpuledger::outputs::show::render_json(&rec, &found);
        let _ = gpuledger::outputs::plot::render_html(&[("fuzz".to_string(), rec)]);
    }
});
