//! Size of a 24 h recording at 1 Hz of 16 processes × 8 devices, for the README's figure.
//! Every process holds vram0 and gtt on each device; values change the way real jobs do: a step
//! every few minutes per series plus a slowly moving GTT, so most samples write no points.
//!
//! usage: recording_size [HOURS] (default 24)

use gpuledger::findings::{analyze, Thresholds};
use gpuledger::ledger::{Ledger, MemClass, ProcessRow, Usage};
use gpuledger::recording::{Recorder, RecordingMeta};
use std::time::Instant;

fn main() {
    let hours: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(24);
    let path = std::env::temp_dir().join(format!("gpuledger-size-{}.ledger", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let mut rec = Recorder::create(
        &path,
        &RecordingMeta {
            command: vec!["synthetic".into()],
            ..Default::default()
        },
    )
    .unwrap();
    let t = Thresholds::default();
    let start = Instant::now();
    let samples = hours * 3600;
    for s in 0..samples {
        let mut ledger = Ledger {
            time_ms: s * 1000,
            ..Default::default()
        };
        ledger.host.mem_total = Some(512 << 30);
        ledger.host.mem_available = Some((300 << 30) - (s % 600) * 4096);
        ledger.host.gpu_active = Some((20 << 30) + (s / 300) % 7 * (1 << 20));
        ledger.host.unaccounted = ledger.host.gpu_active;
        for p in 0..16u32 {
            let mut usage = Vec::new();
            for d in 0..8u64 {
                let step = (s + u64::from(p) * 37 + d * 11) / 240;
                for (region, class, bytes) in [
                    (
                        "vram0",
                        MemClass::Device,
                        (8u64 << 30) + step % 5 * (512 << 20),
                    ),
                    (
                        "gtt",
                        MemClass::Host,
                        (600u64 << 20) + (s / 60 + d) % 3 * (4 << 20),
                    ),
                ] {
                    usage.push(Usage {
                        device: format!("0000:{:02x}:00.0", 3 + d),
                        region: region.into(),
                        class,
                        source: Default::default(),
                        total: Some(bytes),
                        resident: Some(bytes),
                        shared: Some(0),
                        purgeable: None,
                        active: None,
                    });
                }
            }
            ledger.processes.push(ProcessRow {
                pid: 1000 + p,
                nspid: vec![],
                comm: "python3".into(),
                cmdline: vec!["python3".into(), "train.py".into()],
                rank: Some(p),
                local_rank: Some(p % 8),
                home_device: None,
                usage,
                env: Default::default(),
                shared_with_others: vec![],
                has_nvidia_fds: false,
                has_kfd_fd: false,
                cgroup: None,
                labels: Default::default(),
                engines: Vec::new(),
            });
        }
        let found = analyze(&ledger, &t);
        rec.add(&ledger, &found).unwrap();
    }
    rec.finish(samples * 1000, Some(0), None).unwrap();
    drop(rec);
    let size = std::fs::metadata(&path).unwrap().len();
    println!(
        "{hours} h at 1 Hz, 16 processes x 8 devices x 2 regions: {samples} samples, {:.1} MiB, written in {:.1} s",
        size as f64 / (1 << 20) as f64,
        start.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_file(&path);
}
