#![no_main]
//! Capture-archive reading: any bytes as a `--root` archive give a root or a clear error, and
//! the properties that matter hold: nothing outside the extraction directory is created or
//! changed (a canary directory sits beside it, reachable by `../` link targets), nothing is left
//! behind after a refusal, every path read through the root resolves inside it, and an unpacked
//! tree stays within the archive budget. Inputs starting with `L` or `P` are not read as they are
//! but build archives in the shapes that once got past the budget ([`shaped`]).
use gpuledger::archive::{extract_in, MAX_DIRS, MAX_TOTAL_BYTES};
use gpuledger::root::Root;
use libfuzzer_sys::fuzz_target;
use std::io::Read;
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

/// A tar header of `kind` for `name` whose size field says `size`.
fn header(kind: tar::EntryType, name: &str, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(0o644);
    let gnu = h.as_gnu_mut().unwrap();
    let n = name.len().min(gnu.name.len());
    gnu.name[..n].copy_from_slice(&name.as_bytes()[..n]);
    h.set_cksum();
    h
}

/// Archives built from a few fuzzed numbers: `L count name target` is many symlinks with long
/// names and targets (the symlink-name bomb, against the total of link text); `P count size
/// scale ustar` is files whose pax `size` record disagrees with their ustar size (against the
/// byte caps). Anything else is `None`: the raw bytes are the archive.
fn shaped(data: &[u8]) -> Option<Vec<u8>> {
    let (&tag, rest) = data.split_first()?;
    let n = |i: usize| usize::from(rest.get(i).copied().unwrap_or(0));
    let mut b = tar::Builder::new(Vec::new());
    match tag {
        b'L' => {
            let dirs = format!("{}/", "n".repeat(200)).repeat(n(1) % 20);
            let target = "t".repeat(n(2) * 20);
            for i in 0..n(0) * 16 {
                let mut h = header(tar::EntryType::Symlink, "", 0);
                b.append_link(&mut h, format!("l/{dirs}{i}"), &target).ok()?;
            }
        }
        b'P' => {
            let pax = (n(1) * n(2) * 1024) as u64;
            let record = format!(" size={pax}\n");
            let len = (1..).find(|l: &usize| format!("{l}{record}").len() == *l)?;
            let record = format!("{len}{record}");
            for i in 0..n(0) {
                let x = header(tar::EntryType::XHeader, "PaxHeader", record.len() as u64);
                b.append(&x, record.as_bytes()).ok()?;
                let h = header(tar::EntryType::Regular, &format!("f{i}"), n(3) as u64);
                b.append(&h, std::io::repeat(0).take(pax.min(1 << 20))).ok()?;
            }
        }
        _ => return None,
    }
    b.into_inner().ok()
}

fuzz_target!(|data: &[u8]| {
    let sandbox = tempfile::tempdir().unwrap();
    let canary = sandbox.path().join("canary");
    std::fs::create_dir(&canary).unwrap();
    std::fs::write(canary.join("file"), CANARY).unwrap();
    let parent = sandbox.path().join("parent");
    std::fs::create_dir(&parent).unwrap();
    let input = sandbox.path().join("in.tar");
    std::fs::write(&input, shaped(data).as_deref().unwrap_or(data)).unwrap();
    let before = listing(sandbox.path());

    match extract_in(&input, &parent) {
        Ok(dir) => {
            assert_eq!(listing(&parent), vec![dir.path().to_path_buf()]);
            let root = Root::open(dir.path()).unwrap();
            let base = dir.path().canonicalize().unwrap();
            let mut paths = Vec::new();
            tree(dir.path(), Path::new(""), &mut paths);
            let meta: Vec<_> = paths
                .iter()
                .filter_map(|p| std::fs::symlink_metadata(dir.path().join(p)).ok())
                .collect();
            let bytes: u64 = meta.iter().filter(|m| m.is_file()).map(|m| m.len()).sum();
            assert!(bytes <= MAX_TOTAL_BYTES, "{bytes} bytes unpacked");
            assert!(meta.iter().filter(|m| m.is_dir()).count() <= MAX_DIRS);
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
