#![no_main]
//! Capture-archive reading: any bytes as a `--root` archive give a root or a clear error, and
//! the properties that matter hold: nothing outside the extraction directory is created or
//! changed (a canary directory sits beside it, reachable by `../` link targets), nothing is left
//! behind after a refusal, and every path read through the root resolves inside it.
use gpuledger::archive::extract_in;
use gpuledger::root::Root;
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};

const CANARY: &[u8] = b"untouched";

fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    out.sort();
    out
}

/// Every path under `dir`, not following links.
fn tree(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir.join(rel)).into_iter().flatten().flatten() {
        let r = rel.join(e.file_name());
        let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
        out.push(r.clone());
        if is_dir {
            tree(dir, &r, out);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let sandbox = tempfile::tempdir().unwrap();
    let canary = sandbox.path().join("canary");
    std::fs::create_dir(&canary).unwrap();
    std::fs::write(canary.join("file"), CANARY).unwrap();
    let parent = sandbox.path().join("parent");
    std::fs::create_dir(&parent).unwrap();
    let input = sandbox.path().join("in.tar");
    std::fs::write(&input, data).unwrap();
    let before = listing(sandbox.path());

    match extract_in(&input, &parent) {
        Ok(dir) => {
            assert_eq!(listing(&parent), vec![dir.path().to_path_buf()]);
            let root = Root::open(dir.path()).unwrap();
            let base = dir.path().canonicalize().unwrap();
            let mut paths = Vec::new();
            tree(dir.path(), Path::new(""), &mut paths);
            for rel in paths {
                if let Ok(real) = root.resolve(&rel, true) {
                    assert!(real.starts_with(&base), "{rel:?} resolved to {real:?}");
                }
                if let Ok(bytes) = root.read(&rel) {
                    assert_ne!(bytes, CANARY, "{rel:?} read the canary outside the root");
                }
            }
        }
        Err(_) => assert!(listing(&parent).is_empty(), "a refused archive left files"),
    }
    assert_eq!(listing(sandbox.path()), before, "something appeared beside the root");
    assert_eq!(listing(&canary), vec![canary.join("file")]);
    assert_eq!(std::fs::read(canary.join("file")).unwrap(), CANARY);
});
