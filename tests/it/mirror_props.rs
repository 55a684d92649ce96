//! Properties of the peer_mirror rule (docs/DESIGN.md, "Findings"): contexts on any number of
//! devices and ordinary host buffers on a process's own card never make a mirror; a real mirror
//! stays found whatever contexts surround it; thresholds move findings monotonically.

use gpuledger::findings::{analyze, Finding, Kind, Thresholds};
use gpuledger::ledger::Ledger;
use gpuledger::snapshot::{DrmFd, ProcessSample, Snapshot};
use gpuledger::sources::drm_fdinfo::{FdInfo, RegionStats};
use gpuledger::sources::nvml::NvGpu;
use gpuledger::sources::proc_pid::{GpuFd, GpuFdKind};
use proptest::prelude::*;
use std::collections::BTreeMap;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn region(bytes: u64) -> RegionStats {
    RegionStats {
        resident: Some(bytes),
        total: Some(bytes),
        ..Default::default()
    }
}

/// An xe client on device `dev` with `vram` and `gtt` resident.
fn fd(pid: u32, dev: u8, vram: u64, gtt: u64) -> DrmFd {
    let mut regions = BTreeMap::new();
    regions.insert("vram0".to_string(), region(vram));
    regions.insert("gtt".to_string(), region(gtt));
    DrmFd {
        fd: 10 + u32::from(dev),
        path: format!("/dev/dri/renderD{}", 128 + u32::from(dev)),
        minor: None,
        info: FdInfo {
            driver: Some("xe".into()),
            pdev: Some(format!("0000:{:02x}:00.0", 3 + dev)),
            client_id: Some(u64::from(pid) * 100 + u64::from(dev)),
            regions,
            ..Default::default()
        },
    }
}

/// (device, VRAM, GTT) of a context.
type Context = (u8, u64, u64);
/// (home device, home VRAM, home GTT, contexts on other devices).
type Proc = (u8, u64, u64, Vec<Context>);

/// One process per entry: (home device, home VRAM, home GTT, contexts on other devices as
/// (device, VRAM, GTT)); host counters pin every host-class byte (the worst case for backing).
fn ledger(procs: &[Proc]) -> Ledger {
    let mut pinned = 0;
    let processes = procs
        .iter()
        .enumerate()
        .map(|(i, (home, vram, gtt, contexts))| {
            let pid = 1000 + i as u32;
            let mut drm = vec![fd(pid, *home, *vram, *gtt)];
            pinned += gtt;
            for &(d, v, g) in contexts.iter().filter(|c| c.0 != *home) {
                if drm.iter().all(|f| f.fd != 10 + u32::from(d)) {
                    drm.push(fd(pid, d, v, g));
                    pinned += g;
                }
            }
            ProcessSample {
                pid,
                comm: "python3".into(),
                drm,
                ..Default::default()
            }
        })
        .collect();
    let mut meminfo = BTreeMap::new();
    meminfo.insert("MemTotal".to_string(), 256 * GIB);
    meminfo.insert("MemAvailable".to_string(), 128 * GIB);
    meminfo.insert("GPUActive".to_string(), pinned);
    Ledger::from_snapshot(Snapshot {
        processes,
        meminfo,
        page_size: 4096,
        ..Default::default()
    })
}

fn mirrors(l: &Ledger, t: &Thresholds) -> Vec<Finding> {
    analyze(l, t)
        .into_iter()
        .filter(|f| f.kind == Kind::PeerMirror)
        .collect()
}

/// A context: up to the context floor of VRAM and a little GTT.
fn context() -> impl Strategy<Value = Context> {
    (0u8..16, 0u64..=512 * MIB, 0u64..64 * MIB)
}

/// A process: home device, working set, ordinary host buffers below the owning-card rule's
/// floor, contexts on other devices.
fn process() -> impl Strategy<Value = Proc> {
    (
        0u8..16,
        0u64..32 * GIB,
        0u64..GIB,
        proptest::collection::vec(context(), 0..16),
    )
}

/// (home card, used memory there, pinned host buffers, cards seen besides the home with the
/// context each holds there).
type CudaRank = (u8, u64, u64, Vec<(u8, u64)>);

/// CUDA ranks as NVML and smaps show them: used memory per card, `cudaHostAlloc` memory as
/// pinned shared mappings (no fdinfo on NVIDIA).
fn cuda_ledger(ranks: &[CudaRank]) -> Ledger {
    let mut gpus: Vec<NvGpu> = (0..8u8)
        .map(|d| NvGpu {
            bus_id: format!("0000:{:02x}:00.0", 0x18 + d),
            name: "NVIDIA H200".into(),
            memory_total: Some(141 * GIB),
            memory_used: None,
            driver_version: None,
            pci_device_id: None,
            processes: Vec::new(),
            telemetry: Default::default(),
        })
        .collect();
    let processes = ranks
        .iter()
        .enumerate()
        .map(|(i, (home, used, pinned, seen))| {
            let pid = 2000 + i as u32;
            gpus[usize::from(*home)].processes.push((pid, Some(*used)));
            for &(d, ctx) in seen.iter().filter(|s| s.0 != *home) {
                let g = &mut gpus[usize::from(d)];
                if g.processes.iter().all(|p| p.0 != pid) {
                    g.processes.push((pid, Some(ctx)));
                }
            }
            ProcessSample {
                pid,
                comm: "python3".into(),
                env: BTreeMap::from([("RANK".to_string(), i.to_string())]),
                other_gpu_fds: vec![GpuFd {
                    fd: 4,
                    path: "/dev/nvidia0".into(),
                    kind: GpuFdKind::Nvidia,
                    minor: None,
                }],
                pinned_shmem: Some(*pinned),
                ..Default::default()
            }
        })
        .collect();
    let mut meminfo = BTreeMap::new();
    meminfo.insert("MemTotal".to_string(), 2048 * GIB);
    meminfo.insert("MemAvailable".to_string(), 1024 * GIB);
    meminfo.insert("GPUActive".to_string(), 0);
    Ledger::from_snapshot(Snapshot {
        processes,
        nvml: gpus,
        meminfo,
        page_size: 4096,
        ..Default::default()
    })
}

/// A CUDA rank: home card, used memory, pinned host buffers, contexts on other cards.
fn cuda_rank() -> impl Strategy<Value = CudaRank> {
    (
        0u8..8,
        0u64..64 * GIB,
        0u64..64 * GIB,
        proptest::collection::vec((0u8..8, 0u64..=512 * MIB), 0..8),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Pinned host buffers (`cudaHostAlloc`) belong to no card: whatever cards a rank sees and
    /// however large they are against its working set, they never make a mirror.
    #[test]
    fn pinned_host_buffers_never_make_a_mirror(
        ranks in proptest::collection::vec(cuda_rank(), 1..8)
    ) {
        let l = cuda_ledger(&ranks);
        let found = mirrors(&l, &Thresholds::default());
        prop_assert!(found.is_empty(), "{:#?}", found.iter().map(|f| &f.message).collect::<Vec<_>>());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn contexts_and_own_card_host_buffers_never_make_a_mirror(
        procs in proptest::collection::vec(process(), 1..8)
    ) {
        let l = ledger(&procs);
        let found = mirrors(&l, &Thresholds::default());
        prop_assert!(found.is_empty(), "{:#?}", found.iter().map(|f| &f.message).collect::<Vec<_>>());
    }

    #[test]
    fn a_mirror_is_found_whatever_contexts_surround_it(
        set in 2 * GIB..32 * GIB,
        contexts in proptest::collection::vec(context(), 0..14),
    ) {
        // Rank on device 0 with `set` of VRAM, mirrored as GTT on its fd to device 1.
        let mut others: Vec<(u8, u64, u64)> = vec![(1, 190 * MIB, set)];
        others.extend(contexts.into_iter().filter(|c| c.0 > 1));
        let l = ledger(&[(0, set, 600 * MIB, others)]);
        let found = mirrors(&l, &Thresholds::default());
        prop_assert_eq!(found.len(), 1);
        prop_assert_eq!(found[0].peer.as_deref(), Some("0000:04:00.0"));
        prop_assert_eq!(found[0].device.as_deref(), Some("0000:03:00.0"));
    }

    #[test]
    fn raising_a_threshold_never_adds_a_finding(
        procs in proptest::collection::vec((0u8..4, 0u64..16 * GIB, 0u64..16 * GIB,
            proptest::collection::vec((0u8..4, 0u64..16 * GIB, 0u64..16 * GIB), 0..4)), 1..5),
        low in 0u64..4 * GIB,
        extra in 0u64..4 * GIB,
        ratio in 0.0f64..0.9,
        ratio_extra in 0.0f64..0.1,
    ) {
        let l = ledger(&procs);
        let key = |f: &Finding| (f.pid, f.peer.clone());
        let at = |min: u64, min_ratio: f64| {
            let t = Thresholds { peer_min_bytes: min, peer_min_ratio: min_ratio, ..Default::default() };
            mirrors(&l, &t).iter().map(key).collect::<std::collections::BTreeSet<_>>()
        };
        let loose = at(low, ratio);
        prop_assert!(at(low + extra, ratio).is_subset(&loose));
        prop_assert!(at(low, ratio + ratio_extra).is_subset(&loose));
    }

    #[test]
    fn lowering_the_max_ratio_never_adds_a_finding(
        procs in proptest::collection::vec((0u8..4, 0u64..16 * GIB, 0u64..16 * GIB,
            proptest::collection::vec((0u8..4, 0u64..16 * GIB, 0u64..16 * GIB), 0..4)), 1..5),
        high in 1.0f64..4.0,
        cut in 0.0f64..0.9,
    ) {
        let l = ledger(&procs);
        let at = |max_ratio: f64| {
            let t = Thresholds { peer_max_ratio: max_ratio, ..Default::default() };
            mirrors(&l, &t).iter().map(|f| (f.pid, f.peer.clone())).collect::<std::collections::BTreeSet<_>>()
        };
        prop_assert!(at(high - cut).is_subset(&at(high)));
    }
}
