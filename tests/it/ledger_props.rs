//! Property tests of the ledger's sums: a process's per-device totals equal the sum of the clients
//! it owns, and the sum over processes equals the sum over distinct clients (no double counting
//! however fds are dup'd or shared across processes).

use gpuledger::ledger::{Ledger, MemClass};
use gpuledger::snapshot::{DrmFd, ProcessSample, Snapshot};
use gpuledger::sources::drm_fdinfo::{FdInfo, RegionStats};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn client(id: u64, dev: u8, vram: u64, gtt: u64) -> FdInfo {
    let mut regions = BTreeMap::new();
    regions.insert(
        "vram0".to_string(),
        RegionStats {
            resident: Some(vram),
            total: Some(vram),
            ..Default::default()
        },
    );
    regions.insert(
        "gtt".to_string(),
        RegionStats {
            resident: Some(gtt),
            total: Some(gtt),
            ..Default::default()
        },
    );
    FdInfo {
        driver: Some("xe".into()),
        pdev: Some(format!("0000:{dev:02x}:00.0")),
        client_id: Some(id),
        regions,
        ..Default::default()
    }
}

proptest! {
    #[test]
    fn sums_are_consistent(
        clients in proptest::collection::vec((0u8..3, 0u64..(1 << 34), 0u64..(1 << 34)), 1..12),
        holders in proptest::collection::vec((0usize..12, 0u32..6), 1..40),
    ) {
        // Each (client index, pid) pair in `holders` is an fd of that pid on that client.
        let mut procs: BTreeMap<u32, ProcessSample> = BTreeMap::new();
        for (fd, &(ci, pid)) in holders.iter().enumerate() {
            let ci = ci % clients.len();
            let (dev, vram, gtt) = clients[ci];
            let p = procs.entry(100 + pid).or_insert_with(|| ProcessSample { pid: 100 + pid, comm: "p".into(), ..Default::default() });
            p.drm.push(DrmFd { fd: fd as u32, path: "/dev/dri/renderD128".into(), minor: None, info: client(ci as u64, dev, vram, gtt) });
        }
        let snap = Snapshot { processes: procs.into_values().collect(), page_size: 4096, ..Default::default() };
        let ledger = Ledger::from_snapshot(snap);
        let used: std::collections::BTreeSet<usize> = holders.iter().map(|(ci, _)| ci % clients.len()).collect();
        let expect_vram: u64 = used.iter().map(|&ci| clients[ci].1).sum();
        let expect_gtt: u64 = used.iter().map(|&ci| clients[ci].2).sum();
        let mut got_vram = 0;
        let mut got_gtt = 0;
        for p in &ledger.processes {
            for d in p.devices() {
                let owned: Vec<_> = ledger.clients.iter().filter(|c| c.owner == p.pid && c.device == d).collect();
                let vram: u64 = owned.iter().filter_map(|c| c.regions["vram0"].resident).sum();
                prop_assert_eq!(p.resident(d, MemClass::Device), vram);
                got_vram += p.resident(d, MemClass::Device);
                got_gtt += p.resident(d, MemClass::Host);
            }
        }
        prop_assert_eq!(got_vram, expect_vram);
        prop_assert_eq!(got_gtt, expect_gtt);
        prop_assert_eq!(ledger.clients.len(), used.len());
    }
}
