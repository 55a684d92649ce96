#![no_main]
//! Capture-archive reading: any bytes as a `--root` archive must give a root or a clear error,
//! and whatever is unpacked stays inside the temporary directory.
use gpuledger::root::Root;
use libfuzzer_sys::fuzz_target;
use std::io::Write;

fuzz_target!(|data: &[u8]| {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(data).unwrap();
    if let Ok(root) = Root::open(f.path()) {
        let _ = root.read("proc/meminfo");
        let _ = root.list_dir("proc");
    }
});
