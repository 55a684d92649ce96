//! Per-process files under `/proc/PID`: the fd table, comm, cmdline, status and an allow-listed
//! environment.
//!
//! ref: Documentation/filesystems/proc.rst; fs/proc/fd.c (fd links, fdinfo header), fs/proc/array.c
//! (status: `PPid`, `Uid`, `NSpid`). fd links read `/dev/dri/renderD128` for DRM devices; on the live
//! machine any character device with major 226 (DRM) or 261 (accel) counts too, whatever its path
//! (device nodes bind-mounted into containers).

use crate::layout;
use crate::root::{DirHandle, Root};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

/// DRM character-device major.
pub const DRM_MAJOR: u32 = 226;
/// Compute-accelerator (`/dev/accel/accelN`) major.
pub const ACCEL_MAJOR: u32 = 261;

/// What kind of GPU device an fd points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuFdKind {
    /// A DRM or accel node: its fdinfo carries drm-usage-stats.
    Drm,
    /// AMD's `/dev/kfd` (ROCm compute).
    Kfd,
    /// An NVIDIA node (`/dev/nvidia*`, `/dev/nvidiactl`, `/dev/nvidia-uvm`).
    Nvidia,
}

/// One fd of a process that points at a GPU device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuFd {
    /// The fd number.
    pub fd: u32,
    /// The link text, e.g. `/dev/dri/renderD128`.
    pub path: String,
    /// What it points at.
    pub kind: GpuFdKind,
    /// The DRM minor's sysfs name (`renderD128`, `card0`, `accel0`) when known.
    pub minor: Option<String>,
}

/// The result of reading one fd table.
#[derive(Debug, Default)]
pub struct FdTable {
    /// Number of fds in the table.
    pub count: usize,
    /// Every fd number in the table.
    pub numbers: Vec<u32>,
    /// How many links were read (`readlinkat` calls): the table's cost.
    pub links_read: u32,
    /// The GPU fds among them.
    pub gpu: Vec<GpuFd>,
    /// Entries whose link could not be read, with the error (on a live machine, usually an fd
    /// closed between getdents and readlink).
    pub failed: Vec<(u32, io::Error)>,
}

/// Numeric entries of `/proc`.
pub fn list_pids(root: &Root) -> io::Result<Vec<u32>> {
    let dir = root.open_dir("proc")?;
    let mut pids: Vec<u32> = dir
        .names()?
        .iter()
        .filter_map(|n| n.to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    Ok(pids)
}

/// Opens `/proc/PID/fd`.
pub fn open_fd_dir(root: &Root, pid: u32) -> io::Result<DirHandle> {
    root.open_dir(layout::fd_dir(pid))
}

/// The number of open fds from `st_size` of `/proc/PID/fd` (Linux ≥ 6.2; 0 on older kernels).
pub fn fd_count(root: &Root, pid: u32) -> io::Result<u64> {
    root.size_of(layout::fd_dir(pid))
}

/// Reads the links of an fd table and keeps the GPU ones; the link of a number for which
/// `known_other` holds is not read (the caller knows it for a non-GPU fd from an earlier read).
pub fn read_fd_table(
    root: &Root,
    dir: &DirHandle,
    known_other: impl Fn(u32) -> bool,
) -> io::Result<FdTable> {
    let names = dir.names()?;
    let mut table = FdTable {
        count: names.len(),
        numbers: Vec::with_capacity(names.len()),
        ..FdTable::default()
    };
    for name in names {
        let Some(fd) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        table.numbers.push(fd);
        if known_other(fd) {
            continue;
        }
        table.links_read += 1;
        let link = match dir.read_link(&name) {
            Ok(link) => link,
            Err(e) => {
                // Not known: read again next time (the number may be open by then).
                table.numbers.pop();
                table.failed.push((fd, e));
                continue;
            }
        };
        let text = link.to_string_lossy();
        let found = match classify_link(&text) {
            Some(kind) => Some((kind, minor_from_path(kind, &text))),
            None if root.is_live() && may_be_moved_node(&text) => dir
                .char_device(&name)
                .filter(|(major, _)| [DRM_MAJOR, ACCEL_MAJOR].contains(major))
                .map(|(major, minor)| {
                    let sys = root.read_link(layout::char_device(major, minor)).ok();
                    let name =
                        sys.and_then(|p| Some(p.file_name()?.to_string_lossy().into_owned()));
                    (GpuFdKind::Drm, name)
                }),
            None => None,
        };
        if let Some((kind, minor)) = found {
            table.gpu.push(GpuFd {
                fd,
                path: text.into_owned(),
                kind,
                minor,
            });
        }
    }
    table.gpu.sort_by_key(|g| g.fd);
    Ok(table)
}

/// Classifies an fd link by its text.
pub fn classify_link(text: &str) -> Option<GpuFdKind> {
    if text.starts_with(layout::DRI_NODE_PREFIX) || text.starts_with(layout::ACCEL_NODE_PREFIX) {
        return Some(GpuFdKind::Drm);
    }
    if text == layout::KFD_NODE {
        return Some(GpuFdKind::Kfd);
    }
    if text.starts_with(layout::NVIDIA_NODE_PREFIX) {
        return Some(GpuFdKind::Nvidia);
    }
    None
}

fn minor_from_path(kind: GpuFdKind, text: &str) -> Option<String> {
    if kind != GpuFdKind::Drm {
        return None;
    }
    let name = Path::new(text).file_name()?.to_str()?;
    is_minor_name(name).then(|| name.to_string())
}

/// `card0`, `renderD128`, `controlD64`, `accel0`.
pub fn is_minor_name(name: &str) -> bool {
    ["card", "renderD", "controlD", "accel"].iter().any(|p| {
        name.strip_prefix(p)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Device nodes outside /dev/dri that could still be a DRM node (a container's own path);
/// the common non-GPU nodes are skipped so they cost no stat.
fn may_be_moved_node(text: &str) -> bool {
    const COMMON: [&str; 8] = [
        "/dev/null",
        layout::DEV_ZERO,
        "/dev/urandom",
        "/dev/random",
        "/dev/ptmx",
        "/dev/full",
        "/dev/console",
        "/dev/fuse",
    ];
    text.starts_with("/dev/")
        && !COMMON.contains(&text)
        && !text.starts_with("/dev/pts/")
        && !text.starts_with("/dev/tty")
        && !text.starts_with("/dev/shm/")
}

/// Resident bytes of the process's shared `/dev/zero` mappings (`cudaHostAlloc` pinned memory)
/// from `/proc/PID/smaps`.
pub fn read_dev_zero_rss(root: &Root, pid: u32) -> io::Result<u64> {
    // smaps of a CUDA process runs to several MiB (one entry per mapping).
    let raw = root.read_capped(layout::proc_file(pid, "smaps"), 64 << 20)?;
    Ok(dev_zero_rss(&String::from_utf8_lossy(&raw)))
}

/// Sums `Rss:` of the smaps entries whose path is `/dev/zero` (also `(deleted)`).
pub fn dev_zero_rss(smaps: &str) -> u64 {
    let mut in_zero = false;
    let mut total = 0u64;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.contains('-') && !first.ends_with(':') {
            // A mapping header: `start-end perms offset dev inode [path]`.
            in_zero = line
                .split_whitespace()
                .nth(5)
                .is_some_and(|p| p == layout::DEV_ZERO);
        } else if in_zero && first == "Rss:" {
            let kb: u64 = line
                .split_whitespace()
                .nth(1)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            total = total.saturating_add(kb.saturating_mul(1024));
        }
    }
    total
}

/// The process's start time (`starttime`, field 22 of `/proc/PID/stat`, clock ticks since
/// boot): with the pid it names one process, whatever pid reuse does.
pub fn read_start_time(root: &Root, pid: u32) -> io::Result<u64> {
    let text = root.read(layout::proc_file(pid, "stat"))?;
    parse_start_time(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("proc/{pid}/stat has no start time"),
        )
    })
}

/// `starttime` of a `/proc/PID/stat` line: the 20th field after the `)` that ends `comm`
/// (ref: proc_pid_stat(5); comm may hold spaces and parentheses, so the last `)` counts).
pub fn parse_start_time(stat: &[u8]) -> Option<u64> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    rest.split_ascii_whitespace().nth(19)?.parse().ok()
}

/// `/proc/PID/fdinfo/N`, whole.
pub fn read_fdinfo(root: &Root, pid: u32, fd: u32) -> io::Result<String> {
    root.read_string(layout::fdinfo(pid, fd))
}

/// `/proc/PID/comm` without the newline.
pub fn read_comm(root: &Root, pid: u32) -> io::Result<String> {
    Ok(root
        .read_string(layout::proc_file(pid, "comm"))?
        .trim_end_matches('\n')
        .to_string())
}

/// `/proc/PID/cmdline` split at NULs (invalid UTF-8 replaced).
pub fn read_cmdline(root: &Root, pid: u32) -> io::Result<Vec<String>> {
    let raw = root.read(layout::proc_file(pid, "cmdline"))?;
    Ok(split_nul(&raw))
}

fn split_nul(raw: &[u8]) -> Vec<String> {
    raw.split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// Fields of `/proc/PID/status` that gpuledger uses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// Parent pid.
    pub ppid: Option<u32>,
    /// Real uid.
    pub uid: Option<u32>,
    /// The pid in each nested pid namespace, outermost first.
    pub nspid: Vec<u32>,
}

/// Parses `/proc/PID/status`.
pub fn parse_status(text: &str) -> Status {
    let mut s = Status::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let mut nums = v.split_whitespace().filter_map(|n| n.parse::<u32>().ok());
        match k {
            "PPid" => s.ppid = nums.next(),
            "Uid" => s.uid = nums.next(),
            "NSpid" => s.nspid = nums.collect(),
            _ => {}
        }
    }
    s
}

/// Reads and parses `/proc/PID/status`.
pub fn read_status(root: &Root, pid: u32) -> io::Result<Status> {
    Ok(parse_status(
        &root.read_string(layout::proc_file(pid, "status"))?,
    ))
}

/// The parent pid from `/proc/PID/stat` (field 4, after the parenthesised comm).
pub fn read_ppid(root: &Root, pid: u32) -> io::Result<Option<u32>> {
    let text = root.read_string(layout::proc_file(pid, "stat"))?;
    Ok(parse_stat_ppid(&text))
}

fn parse_stat_ppid(text: &str) -> Option<u32> {
    let after = &text[text.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// The process's start time in clock ticks since boot (`/proc/PID/stat` field 22): with the pid,
/// it names one process across pid reuse.
pub fn read_start_ticks(root: &Root, pid: u32) -> io::Result<Option<u64>> {
    let text = root.read_string(layout::proc_file(pid, "stat"))?;
    Ok(parse_stat_start(&text))
}

fn parse_stat_start(text: &str) -> Option<u64> {
    let after = &text[text.rfind(')')? + 1..];
    // Field 3 (state) is the first after the comm; field 22 is 19 further.
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Reads `/proc/PID/environ` keeping only allow-listed names (see [`env_allowed`]).
pub fn read_environ(root: &Root, pid: u32) -> io::Result<BTreeMap<String, String>> {
    let raw = root.read(layout::proc_file(pid, "environ"))?;
    Ok(filter_environ(&split_nul(&raw)))
}

/// Keeps the allow-listed `NAME=value` pairs.
pub fn filter_environ(pairs: &[String]) -> BTreeMap<String, String> {
    let neo = pairs.iter().any(|p| p.starts_with("NEOReadDebugKeys="));
    pairs
        .iter()
        .filter_map(|p| p.split_once('='))
        .filter(|(k, _)| env_allowed(k, neo))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Rank and launcher variables, device-visibility masks, GPU runtime and framework allocator
/// knobs (ZE_, SYCL_, ONEAPI_, UR_, CCL_, NCCL_, CUDA_, PYTORCH_, XLA_, JAX_, CUPY_, HIP_, HSA_) and, when `NEOReadDebugKeys` is set, NEO debug keys. Never anything that
/// looks like a credential.
pub fn env_allowed(name: &str, neo_debug: bool) -> bool {
    const EXACT: [&str; 18] = [
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "ROLE_RANK",
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "PMI_RANK",
        "PMI_SIZE",
        "PMIX_RANK",
        "MPI_LOCALRANKID",
        "SLURM_PROCID",
        "SLURM_LOCALID",
        "SLURM_JOB_ID",
        "SLURM_NTASKS",
        "NEOReadDebugKeys",
    ];
    const PREFIXES: [&str; 13] = [
        "ZE_", "SYCL_", "ONEAPI_", "UR_", "CCL_", "NCCL_", "CUDA_", "PYTORCH_", "XLA_", "JAX_",
        "CUPY_", "HIP_", "HSA_",
    ];
    const NEO_PREFIXES: [&str; 6] = ["Enable", "Disable", "Force", "Override", "Print", "Use"];
    let upper = name.to_ascii_uppercase();
    if [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "_KEY",
        "AUTH",
    ]
    .iter()
    .any(|bad| upper.contains(bad))
    {
        return false;
    }
    EXACT.contains(&name)
        || name.ends_with("_VISIBLE_DEVICES")
        || PREFIXES.iter().any(|p| name.starts_with(p))
        || (neo_debug
            && NEO_PREFIXES.iter().any(|p| {
                name.strip_prefix(p)
                    .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
            }))
}

/// Largest `/proc/PID/maps` read (a PyTorch process maps a few thousand files, about 1 MB).
const MAPS_BYTES: u64 = 16 << 20;

/// The files a process has mapped, each once (`/proc/PID/maps`' path column).
pub fn mapped_files(root: &Root, pid: u32) -> io::Result<BTreeSet<PathBuf>> {
    let raw = root.read_capped(layout::proc_file(pid, "maps"), MAPS_BYTES)?;
    Ok(parse_maps(&String::from_utf8_lossy(&raw)))
}

/// The absolute paths of maps lines (proc(5): address, perms, offset, dev, inode, pathname;
/// the first five hold no `/` after a space), without the ` (deleted)` a removed file gets;
/// `[heap]`, `[stack]` and anonymous mappings have none.
pub fn parse_maps(text: &str) -> BTreeSet<PathBuf> {
    text.lines()
        .filter_map(|l| l.find(" /").map(|k| l[k + 1..].trim_end()))
        .map(|p| p.strip_suffix(" (deleted)").unwrap_or(p))
        .map(PathBuf::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn start_time_is_the_twentieth_field_after_comm() {
        let stat =
            b"4242 (a b) c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 987654 123 45\n";
        assert_eq!(parse_start_time(stat), Some(987654));
        assert_eq!(parse_start_time(b"4242 (x) S 1 2"), None);
        assert_eq!(parse_start_time(b"no parenthesis"), None);
        let own = read_start_time(&Root::live(), std::process::id()).unwrap();
        assert!(own > 0);
    }

    proptest! {
        #[test]
        fn start_time_survives_any_comm(comm in "[ -~]{0,16}", start in any::<u64>()) {
            let stat = format!("7 ({comm}) R 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 {start} 1 2\n");
            prop_assert_eq!(parse_start_time(stat.as_bytes()), Some(start));
        }
    }

    #[test]
    fn classifies_links() {
        assert_eq!(classify_link("/dev/dri/renderD128"), Some(GpuFdKind::Drm));
        assert_eq!(classify_link("/dev/accel/accel0"), Some(GpuFdKind::Drm));
        assert_eq!(classify_link("/dev/kfd"), Some(GpuFdKind::Kfd));
        assert_eq!(classify_link("/dev/nvidia-uvm"), Some(GpuFdKind::Nvidia));
        assert_eq!(classify_link("socket:[123]"), None);
        assert_eq!(classify_link("/home/u/dri/renderD128"), None);
        assert!(
            is_minor_name("renderD128") && is_minor_name("card1") && !is_minor_name("card1-DP-1")
        );
    }

    #[test]
    fn environ_allow_list() {
        let env: Vec<String> = [
            "RANK=1",
            "LOCAL_RANK=1",
            "HOME=/root",
            "AWS_SECRET_ACCESS_KEY=x",
            "ZE_AFFINITY_MASK=0",
            "NCCL_P2P_DISABLE=1",
            "CUDA_VISIBLE_DEVICES=0,1",
            "EnableDeferBacking=0",
            "NCCL_AUTH_TOKEN=s",
            "XLA_PYTHON_CLIENT_PREALLOCATE=false",
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
            "CUDA_API_KEY=k",
        ]
        .map(String::from)
        .to_vec();
        let kept = filter_environ(&env);
        assert_eq!(
            kept.keys().collect::<Vec<_>>(),
            [
                "CUDA_VISIBLE_DEVICES",
                "LOCAL_RANK",
                "NCCL_P2P_DISABLE",
                "PYTORCH_CUDA_ALLOC_CONF",
                "RANK",
                "XLA_PYTHON_CLIENT_PREALLOCATE",
                "ZE_AFFINITY_MASK"
            ]
        );
        let mut with_neo = env.clone();
        with_neo.push("NEOReadDebugKeys=1".into());
        let kept = filter_environ(&with_neo);
        assert_eq!(kept["EnableDeferBacking"], "0");
        assert!(!kept.contains_key("HOME"));
    }

    #[test]
    fn status_and_stat() {
        let s = parse_status(
            "Name:\tpython3\nPPid:\t10\nUid:\t1000\t1000\t1000\t1000\nNSpid:\t4242\t7\n",
        );
        assert_eq!(
            s,
            Status {
                ppid: Some(10),
                uid: Some(1000),
                nspid: vec![4242, 7]
            }
        );
        assert_eq!(parse_stat_ppid("123 (a) b) c) S 77 123 123 0"), Some(77));
        assert_eq!(parse_stat_ppid("garbage"), None);
    }

    #[test]
    fn dev_zero_mappings() {
        let smaps = "7f0000000000-7f0100000000 rw-s 00000000 00:01 1025 /dev/zero (deleted)\n\
Size:            4194304 kB\nRss:             4194304 kB\n\
7f0200000000-7f0200001000 rw-p 00000000 00:00 0 \nRss:                   4 kB\n\
7f0300000000-7f0300001000 r--p 00000000 fd:01 99 /usr/lib/libc.so.6\nRss:                   8 kB\n";
        assert_eq!(dev_zero_rss(smaps), 4194304 * 1024);
    }

    #[test]
    fn cmdline_non_utf8() {
        assert_eq!(
            split_nul(b"py\xffthon\0-c\0\0"),
            vec!["py\u{fffd}thon", "-c"]
        );
    }

    proptest! {
        #[test]
        fn status_never_panics(s in "(?s).{0,300}") {
            let _ = parse_status(&s);
            let _ = parse_stat_ppid(&s);
            let _ = filter_environ(&s.split('\0').map(String::from).collect::<Vec<_>>());
        }
    }

    #[test]
    fn maps_paths() {
        let text = "7f00-7f01 r-xp 00000000 08:01 12 /opt/v/lib/python3.12/site-packages/torch/lib/libtorch.so\n\
                    7f01-7f02 rw-p 00000000 00:00 0 \n\
                    7f02-7f03 rw-p 00000000 00:00 0                          [heap]\n\
                    7f03-7f04 r--p 00000000 08:01 13                         /tmp/a b.so (deleted)\n";
        let got: Vec<PathBuf> = parse_maps(text).into_iter().collect();
        assert_eq!(
            got,
            [
                PathBuf::from("/opt/v/lib/python3.12/site-packages/torch/lib/libtorch.so"),
                PathBuf::from("/tmp/a b.so")
            ]
        );
    }

    proptest::proptest! {
        #[test]
        fn maps_give_back_each_path(
            paths in proptest::collection::vec("(/[a-z0-9 ._-]{1,12}){1,4}", 0..8),
            junk in proptest::collection::vec("[\\PC]{0,40}", 0..4),
        ) {
            let mut text = String::new();
            for (k, p) in paths.iter().enumerate() {
                text.push_str(&format!("{k:x}-{:x} r-xp 00000000 08:01 {k}   {p}\n", k + 1));
            }
            for j in &junk {
                text.push_str(&format!("0-1 rw-p 00000000 00:00 0 [{}]\n", j.replace(['/', '\n', '\r'], "")));
            }
            let got = parse_maps(&text);
            for p in &paths {
                let p = p.trim_end();
                let p = p.strip_suffix(" (deleted)").unwrap_or(p);
                proptest::prop_assert!(got.contains(Path::new(p)), "{:?} {:?}", p, got);
            }
            proptest::prop_assert!(got.len() <= paths.len());
        }
    }
}
