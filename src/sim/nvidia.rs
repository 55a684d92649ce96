//! What a machine with NVIDIA cards shows of a CUDA job: NVML's per-process used memory (saved
//! as `nvml.json`, as `capture` saves it), the `/dev/nvidia*` fds of each rank and the shared
//! `/dev/zero` mapping that holds `cudaHostAlloc` memory in its smaps.

use super::memory::ProcMem;
use super::state::SimFd;
use crate::sources::nvml::NvGpu;

/// An H200's VRAM as NVML reports it.
const H200_TOTAL: u64 = 150_754_820_096;
/// NVML's PCI id of an H200: device 0x2335, vendor 0x10de.
const H200_PCI_ID: u32 = 0x2335_10de;

/// NVML's answers for cards at `slots`, given each process's (pid, memory): every process is
/// listed on every card where it holds memory (a context or more).
pub(super) fn nvml(slots: &[String], procs: &[(u32, ProcMem)]) -> Vec<NvGpu> {
    slots
        .iter()
        .enumerate()
        .map(|(i, slot)| {
            let processes: Vec<(u32, Option<u64>)> = procs
                .iter()
                .filter_map(|(pid, m)| {
                    let (_, _, used) = m.fds.iter().find(|f| f.0 as usize == i)?;
                    Some((*pid, Some(*used)))
                })
                .collect();
            NvGpu {
                bus_id: slot.clone(),
                name: "NVIDIA H200".into(),
                memory_total: Some(H200_TOTAL),
                memory_used: Some(processes.iter().filter_map(|p| p.1).sum()),
                driver_version: Some("580.159".into()),
                pci_device_id: Some(H200_PCI_ID),
                processes,
                telemetry: crate::sources::telemetry::Telemetry {
                    temperature_mc: Some(41_000),
                    power_uw: Some(310_000_000),
                    power_cap_uw: Some(700_000_000),
                    clock_mhz: Some(1_980),
                    clock_max_mhz: Some(1_980),
                    link_speed: Some("Gen 5".into()),
                    link_width: Some(16),
                    link_max_speed: Some("Gen 5".into()),
                    link_max_width: Some(16),
                    utilization_percent: Some(87),
                    persistence: Some(true),
                    mig: Some(false),
                    ..Default::default()
                },
            }
        })
        .collect()
}

/// The control nodes every CUDA process holds beside its cards' nodes.
pub(super) fn control_fds() -> [SimFd; 2] {
    [("/dev/nvidiactl", 3), ("/dev/nvidia-uvm", 4)].map(|(target, fd)| SimFd {
        fd,
        target: target.into(),
        fdinfo: None,
    })
}

/// smaps with one shared `/dev/zero` mapping of `bytes` resident (ref: CUDA's pinned host
/// allocations, fs/proc/task_mmu.c `show_smap`) and the heap.
pub(super) fn smaps(bytes: u64) -> String {
    let kib = bytes / 1024;
    format!(
        "7f3a00000000-{end:x} rw-s 00000000 00:01 2049 /dev/zero (deleted)\n\
         Size:            {kib} kB\nRss:             {kib} kB\nShared_Dirty:    {kib} kB\n\
         55d000000000-55d000100000 rw-p 00000000 00:00 0 [heap]\n\
         Size:               1024 kB\nRss:                512 kB\n",
        end = 0x7f3a_0000_0000u64 + bytes
    )
}
