//! `capture`: writes the capture tree of a root (normally the live machine) for offline analysis:
//! host counters, the DRM devices, and for each process holding GPU fds its comm, cmdline, a
//! minimal status, the allow-listed environment, its GPU fd links and their fdinfo verbatim,
//! and the shared objects it mapped (the lines of its `proc/PID/maps` that name one).
//! A capture is made to be sent: secrets in command lines and environment values are hidden
//! unless asked for ([`Cmdlines`], [`crate::redact`]).

use crate::layout;
use crate::redact::{self, Cmdlines};
use crate::root::Root;
use crate::sampler::{SampleError, Sampler, SamplerOptions, Scope};
use crate::sources::{kernel_log, meminfo, proc_maps, proc_pid};
use crate::tree_writer::{ProcEntry, TreeWriter};
use serde::Serialize;
use std::io;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// A capture that could not be written.
#[derive(Debug, Error)]
pub enum CaptureError {
    /// The root could not be sampled.
    #[error(transparent)]
    Sample(#[from] SampleError),
    /// Writing the tree or the archive failed.
    #[error("cannot write capture {path}")]
    Write {
        /// Where.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

/// What a capture contains.
#[derive(Debug, Clone, Serialize)]
pub struct CaptureSummary {
    /// Processes written.
    pub processes: usize,
    /// DRM fds written.
    pub drm_fds: usize,
    /// Devices written.
    pub devices: usize,
}

#[derive(Serialize)]
struct Manifest<'a> {
    schema: &'static str,
    gpuledger_version: &'static str,
    time: String,
    source_root: &'a str,
    page_size: u64,
    summary: &'a CaptureSummary,
}

/// Writes the capture tree of `root` into `dest` (a directory).
pub fn capture_tree(
    root: Root,
    pids: Option<Vec<u32>>,
    cmdlines: Cmdlines,
    dest: &Path,
) -> Result<CaptureSummary, CaptureError> {
    let werr = |source| CaptureError::Write {
        path: dest.to_path_buf(),
        source,
    };
    let scope = match pids {
        Some(p) => Scope::Pids(p.into_iter().collect()),
        None => Scope::All,
    };
    let mut sampler = Sampler::new(root, scope, SamplerOptions::default());
    let snap = sampler.sample()?;
    let root = sampler.root();
    let w = TreeWriter::new(dest).map_err(werr)?;
    for (rel, text) in [
        (layout::MEMINFO, meminfo::read_meminfo(root)),
        (layout::VMSTAT, meminfo::read_vmstat(root)),
        (layout::VERSION, meminfo::read_version(root)),
        (layout::OS_RELEASE, root.read_string(layout::OS_RELEASE)),
    ] {
        if let Ok(t) = text {
            w.file(rel, t).map_err(werr)?;
        }
    }
    for d in &snap.devices {
        w.device(d).map_err(werr)?;
    }
    let mut drm_fds = 0;
    for p in &snap.processes {
        let (cmdline, env) = disclosed(&p.cmdline, &p.env, cmdlines);
        w.process(&ProcEntry {
            pid: p.pid,
            comm: &p.comm,
            cmdline: &cmdline,
            env: &env,
            ppid: p.ppid,
            nspid: &p.nspid,
        })
        .map_err(werr)?;
        if let Some(cg) = &p.cgroup {
            w.file(layout::proc_file(p.pid, "cgroup"), format!("0::{cg}\n"))
                .map_err(werr)?;
        }
        if let Some(b) = p.pinned_shmem.filter(|b| *b > 0) {
            // Only the total survives: one synthetic /dev/zero mapping of that resident size.
            let smaps = format!(
                "7f0000000000-7f0000001000 rw-s 00000000 00:01 1 /dev/zero (deleted)\nRss: {} kB\n",
                b / 1024
            );
            w.file(layout::proc_file(p.pid, "smaps"), smaps)
                .map_err(werr)?;
        }
        if !p.drm.is_empty() || !p.kfd_vram.is_empty() {
            // The shared objects only (the runtime the job loaded), one line each.
            if let Ok(objects) = proc_maps::read(root, p.pid) {
                let maps: String = objects
                    .iter()
                    .map(|o| format!("00000000-00000000 r-xp 00000000 00:00 0 {o}\n"))
                    .collect();
                w.file(layout::proc_file(p.pid, "maps"), maps)
                    .map_err(werr)?;
            }
        }
        for (slot, bytes) in &p.kfd_vram {
            w.file(layout::kfd_vram(p.pid, kfd_id(slot)), format!("{bytes}\n"))
                .map_err(werr)?;
        }
        for g in &p.other_gpu_fds {
            w.fd(p.pid, g.fd, &g.path, None).map_err(werr)?;
        }
        for f in &p.drm {
            // Verbatim: read again rather than re-print the parsed form.
            let Ok(raw) = proc_pid::read_fdinfo(root, p.pid, f.fd) else {
                continue;
            };
            w.fd(p.pid, f.fd, &f.path, Some(raw.as_bytes()))
                .map_err(werr)?;
            drm_fds += 1;
        }
    }
    for c in &snap.cgroups {
        let dir = layout::cgroup_dir(&c.path);
        let dmem = |m: &std::collections::BTreeMap<String, u64>| {
            m.iter()
                .map(|(k, v)| format!("{k} {v}\n"))
                .collect::<String>()
        };
        if let Some(v) = c.memory_current {
            w.file(format!("{dir}/memory.current"), format!("{v}\n"))
                .map_err(werr)?;
        }
        let max = c
            .memory_max
            .map(|v| v.to_string())
            .unwrap_or_else(|| "max".into());
        w.file(format!("{dir}/memory.max"), format!("{max}\n"))
            .map_err(werr)?;
        if !c.dmem_current.is_empty() {
            w.file(format!("{dir}/dmem.current"), dmem(&c.dmem_current))
                .map_err(werr)?;
            w.file(format!("{dir}/dmem.max"), dmem(&c.dmem_max))
                .map_err(werr)?;
        }
    }
    if !snap.dmem_capacity.is_empty() {
        let text: String = snap
            .dmem_capacity
            .iter()
            .map(|(k, v)| format!("{k} {v}\n"))
            .collect();
        w.file(layout::DMEM_CAPACITY, text).map_err(werr)?;
    }
    let kfd_slots: std::collections::BTreeSet<&String> = snap
        .processes
        .iter()
        .flat_map(|p| p.kfd_vram.iter().map(|(s, _)| s))
        .collect();
    for (n, slot) in kfd_slots.into_iter().enumerate() {
        let node = layout::kfd_node(n + 1);
        w.file(format!("{node}/gpu_id"), format!("{}\n", kfd_id(slot)))
            .map_err(werr)?;
        let (domain, loc) = pci_location(slot);
        w.file(
            format!("{node}/properties"),
            format!("location_id {loc}\ndomain {domain}\n"),
        )
        .map_err(werr)?;
    }
    carry_end_evidence(root, &w).map_err(werr)?;
    if !snap.nvml.is_empty() {
        let json = serde_json::to_string_pretty(&snap.nvml).expect("plain data");
        w.file(layout::NVML, json + "\n").map_err(werr)?;
    }
    let summary = CaptureSummary {
        processes: snap.processes.len(),
        drm_fds,
        devices: snap.devices.len(),
    };
    let manifest = Manifest {
        schema: "gpuledger.capture/1",
        gpuledger_version: env!("CARGO_PKG_VERSION"),
        time: crate::outputs::json::rfc3339(snap.time_ms),
        source_root: root.label(),
        page_size: snap.page_size,
        summary: &summary,
    };
    w.manifest(&manifest).map_err(werr)?;
    Ok(summary)
}

/// A process's command line and environment as the capture keeps them.
fn disclosed(
    cmdline: &[String],
    env: &std::collections::BTreeMap<String, String>,
    cmdlines: Cmdlines,
) -> (Vec<String>, Vec<(String, String)>) {
    match cmdlines {
        Cmdlines::AsIs => (cmdline.to_vec(), env.clone().into_iter().collect()),
        Cmdlines::Redacted => (
            redact::argv(cmdline),
            env.iter()
                .map(|(k, v)| (k.clone(), redact::env_value(k, v).into_owned()))
                .collect(),
        ),
    }
}

/// Writes a capture of `root` as a `.tar.zst` archive at `out` (or a tree, if `out` has no
/// archive suffix).
pub fn capture(
    root: Root,
    pids: Option<Vec<u32>>,
    cmdlines: Cmdlines,
    out: &Path,
) -> Result<CaptureSummary, CaptureError> {
    let name = out.to_string_lossy();
    if !(name.ends_with(".tar.zst") || name.ends_with(".tzst") || name.ends_with(".tar")) {
        return capture_tree(root, pids, cmdlines, out);
    }
    let tmp = crate::private::dir(crate::private::Kind::Capture).map_err(|source| {
        CaptureError::Write {
            path: out.to_path_buf(),
            source,
        }
    })?;
    let summary = capture_tree(root, pids, cmdlines, tmp.path())?;
    crate::archive::pack(tmp.path(), out).map_err(|source| CaptureError::Write {
        path: out.to_path_buf(),
        source,
    })?;
    Ok(summary)
}

/// The kernel log's evidence (the records that findings rest on, [`kernel_log::evidence`]: not
/// the rest of the log, which may hold more than GPU facts), the boot time that dates it, and a
/// captured or simulated root's job end travel with the capture, so a capture taken after a job
/// died still shows how. An unreadable log or job end is left out, as a vanished process is.
fn carry_end_evidence(root: &Root, w: &TreeWriter) -> io::Result<()> {
    let log = kernel_log::WholeLog::read(root);
    if !log.records.is_empty() {
        w.kmsg(&log.records)?;
    }
    if let Some(boot) = log.boot_s {
        w.file(layout::PROC_STAT, format!("btime {boot}\n"))?;
    }
    if root.is_live() {
        return Ok(());
    }
    if let Ok(Some(end)) = crate::sources::sim_job::read_job_end(root) {
        w.job_end(Some(&end))?;
    }
    Ok(())
}

/// A stable KFD gpu_id for a slot in a capture (the real ids are not kept, only the mapping).
fn kfd_id(slot: &str) -> u32 {
    let (domain, loc) = pci_location(slot);
    (domain << 16) + loc + 1 // never 0, which KFD uses for CPU nodes
}

/// (domain, bus << 8 | device << 3 | function) of a PCI slot `dddd:bb:dd.f`.
fn pci_location(slot: &str) -> (u32, u32) {
    let hex = |s: &str| u32::from_str_radix(s, 16).unwrap_or(0);
    let mut parts = slot.split([':', '.']);
    let (d, b, dev, f) = (parts.next(), parts.next(), parts.next(), parts.next());
    match (d, b, dev, f) {
        (Some(d), Some(b), Some(dev), Some(f)) => {
            (hex(d), (hex(b) << 8) | (hex(dev) << 3) | hex(f))
        }
        _ => (0, 0),
    }
}
