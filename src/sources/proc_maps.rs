//! `/proc/PID/maps`: the shared objects a process has mapped, i.e. the GPU runtime it actually
//! loaded (`libze_intel_gpu.so.1.13.38646`, `libigdrcl.so`, `libcuda.so.580.95.05`), which may
//! differ from what the package database says is installed.
//!
//! Each line is `start-end perms offset dev inode [path]`; the path, when there is one, starts
//! at the sixth field and may hold spaces; a mapping of a replaced file ends in ` (deleted)`.
// ref: Documentation/filesystems/proc.rst ("/proc/PID/maps"), fs/proc/task_mmu.c show_map_vma

use crate::layout;
use crate::root::Root;
use std::collections::BTreeSet;
use std::io;

/// The most of one maps file read: a large CUDA or PyTorch process maps a few thousand
/// regions (about 150 bytes each).
pub const MAPS_CAP: u64 = 8 << 20;

/// The distinct shared-object paths (`*.so`, `*.so.N…`) of `text`, a maps file, sorted.
pub fn shared_objects(text: &str) -> Vec<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let Some(path) = path_of(line) else {
            continue;
        };
        let path = path.strip_suffix(" (deleted)").unwrap_or(path);
        let name = path.rsplit('/').next().unwrap_or(path);
        if name.ends_with(".so") || name.contains(".so.") {
            out.insert(path.to_string());
        }
    }
    out.into_iter().collect()
}

/// The path field of one maps line: what follows the fifth field, when it is absolute.
fn path_of(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    for _ in 0..5 {
        let end = rest.find(char::is_whitespace)?;
        rest = rest[end..].trim_start();
    }
    rest.starts_with('/').then_some(rest.trim_end())
}

/// The shared objects process `pid` has mapped, read through `root` (at most [`MAPS_CAP`]).
pub fn read(root: &Root, pid: u32) -> io::Result<Vec<String>> {
    let raw = root.read_capped(layout::proc_file(pid, "maps"), MAPS_CAP)?;
    Ok(shared_objects(&String::from_utf8_lossy(&raw)))
}

/// The version in a shared object's file name after `.so.` (`libcuda.so.580.95.05` →
/// `580.95.05`), when it is all dotted digits.
pub fn soname_version(path: &str) -> Option<&str> {
    let name = path.rsplit('/').next()?;
    let (_, v) = name.split_once(".so.")?;
    let dotted = !v.is_empty()
        && v.split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    dotted.then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MAPS: &str = "\
5581a8e00000-5581a8e2b000 r--p 00000000 103:02 1311236                   /usr/bin/python3.12
7f2a10000000-7f2a10021000 rw-p 00000000 00:00 0
7f2a1c000000-7f2a1c4a0000 r-xp 00000000 103:02 2102233                   /usr/lib/x86_64-linux-gnu/libze_intel_gpu.so.1.13.38646
7f2a1c4a0000-7f2a1c4b0000 r--p 004a0000 103:02 2102233                   /usr/lib/x86_64-linux-gnu/libze_intel_gpu.so.1.13.38646
7f2a1d000000-7f2a1d100000 r-xp 00000000 103:02 2102240                   /opt/my libs/libigdrcl.so (deleted)
7f2a1e000000-7f2a1e001000 rw-s 00000000 00:06 1025                       /dev/dri/renderD128
7ffd5c5e0000-7ffd5c601000 rw-p 00000000 00:00 0                          [stack]
";

    #[test]
    fn shared_objects_are_listed_once_with_spaces_and_deletion_handled() {
        assert_eq!(
            shared_objects(MAPS),
            [
                "/opt/my libs/libigdrcl.so",
                "/usr/lib/x86_64-linux-gnu/libze_intel_gpu.so.1.13.38646",
            ]
        );
    }

    #[test]
    fn soname_versions_are_dotted_digits() {
        assert_eq!(
            soname_version("/usr/lib/libcuda.so.580.95.05"),
            Some("580.95.05")
        );
        assert_eq!(soname_version("/usr/lib/libigdrcl.so"), None);
        assert_eq!(soname_version("/usr/lib/libfoo.so.1a"), None);
        assert_eq!(soname_version("libx.so."), None);
    }

    proptest! {
        /// Any absolute path of a shared object in the sixth field comes back as written.
        #[test]
        fn the_path_field_is_read_whole(dir in "/[a-z ]{1,12}", name in "lib[a-z_]{1,8}\\.so(\\.[0-9]{1,3}){0,3}") {
            let path = format!("{dir}/{name}");
            let line = format!("7f00-7f01 r-xp 00000000 103:02 42    {path}\n");
            prop_assert_eq!(shared_objects(&line), vec![path]);
        }

        #[test]
        fn no_input_panics(text in "\\PC{0,200}") {
            let _ = shared_objects(&text);
            let _ = soname_version(&text);
        }
    }
}
