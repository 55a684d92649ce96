//! The NVIDIA backend's mapping on recorded NVML answers (a fake NvmlSource), and its absence.

use crate::common;
use gpuledger::findings::{analyze, Thresholds};
use gpuledger::ledger::{Ledger, MemClass};
use gpuledger::root::Root;
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use gpuledger::sources::nvml::{NvGpu, NvmlSource};

#[derive(Debug)]
struct Recorded(Vec<NvGpu>);

impl NvmlSource for Recorded {
    fn gpus(&self) -> Result<Vec<NvGpu>, String> {
        Ok(self.0.clone())
    }
}

fn recorded() -> Recorded {
    let text = std::fs::read_to_string(common::fixture("nvidia").join("nvml.json")).unwrap();
    Recorded(serde_json::from_str(&text).unwrap())
}

#[test]
fn nvml_usage_and_pinned_shmem_land_in_the_ledger() {
    let root = Root::open(&common::fixture("nvidia")).unwrap();
    let mut s =
        Sampler::new(root, Scope::All, SamplerOptions::default()).with_nvml(Box::new(recorded()));
    let snap = s.sample().unwrap();
    let ledger = Ledger::from_snapshot(snap);
    let dev = ledger.device("0000:18:00.0").expect("NVIDIA device listed");
    assert_eq!(dev.driver.as_deref(), Some("nvidia"));
    assert_eq!(dev.name.as_deref(), Some("NVIDIA H200"));
    assert_eq!(
        ledger.processes.len(),
        1,
        "only the process with NVIDIA fds"
    );
    let p = &ledger.processes[0];
    assert_eq!((p.pid, p.rank, p.has_nvidia_fds), (7001, Some(0), true));
    assert_eq!(p.home_device.as_deref(), Some("0000:18:00.0"));
    assert_eq!(p.resident("0000:18:00.0", MemClass::Device), 9126805504);
    let pinned = p.usage.iter().find(|u| u.region == "pinned-shmem").unwrap();
    assert_eq!(
        (pinned.class, pinned.resident),
        (MemClass::Host, Some(4194304 * 1024))
    );
    assert!(analyze(&ledger, &Thresholds::default())
        .iter()
        .all(|f| f.kind.as_str() != "peer_mirror"));
}

#[test]
fn a_capture_carries_its_nvml_answers() {
    let doc = common::json_of(
        &[
            "--root",
            common::fixture("nvidia").to_str().unwrap(),
            "--json",
        ],
        0,
    );
    assert_eq!(doc["devices"][0]["name"], "NVIDIA H200");
    assert_eq!(doc["processes"][0]["usage"][0]["resident"], 9126805504u64);
}

#[test]
fn without_nvml_nvidia_processes_are_listed_but_hold_no_counted_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("t");
    common::copy_fixture("nvidia", &copy);
    std::fs::remove_file(copy.join("nvml.json")).unwrap();
    let root = Root::open(&copy).unwrap();
    let mut s = Sampler::new(root, Scope::All, SamplerOptions::default());
    let ledger = Ledger::from_snapshot(s.sample().unwrap());
    assert!(ledger.devices.is_empty());
    assert!(ledger.processes[0].usage.is_empty());
    assert!(ledger.processes[0].has_nvidia_fds);
}

#[test]
fn live_machine_without_nvidia_library_is_no_error() {
    // CI machines have no libnvidia-ml: the snapshot must still work and list no NVIDIA device.
    let doc = common::json_of(&["--json"], 0);
    if gpuledger::sources::nvml::load().is_none() {
        assert!(doc["devices"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["driver"] != "nvidia"));
    }
}

/// NVML answers that change between samples: the device starts empty, then the job's process
/// holds memory and the device reports it in use.
#[derive(Debug)]
struct Growing {
    calls: std::sync::atomic::AtomicUsize,
    base: Vec<NvGpu>,
}

impl NvmlSource for Growing {
    fn gpus(&self) -> Result<Vec<NvGpu>, String> {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut gpus = self.base.clone();
        for g in &mut gpus {
            if n == 0 {
                g.memory_used = Some(0);
                g.processes.iter_mut().for_each(|p| p.1 = Some(0));
            } else {
                let held: u64 = g.processes.iter().filter_map(|p| p.1).sum();
                g.memory_used = Some(held + (600 << 20));
            }
        }
        Ok(gpus)
    }
}

/// The H200 case: a device total read on the first sample must not be compared with a later
/// sample's processes (`over_reported` "… but the device reports 0 B in use").
#[test]
fn device_memory_in_use_is_read_with_the_processes() {
    let root = Root::open(&common::fixture("nvidia")).unwrap();
    let source = Growing {
        calls: Default::default(),
        base: recorded().0,
    };
    let mut s =
        Sampler::new(root, Scope::All, SamplerOptions::default()).with_nvml(Box::new(source));
    s.sample().unwrap();
    let ledger = Ledger::from_snapshot(s.sample().unwrap());
    let used = ledger.device("0000:18:00.0").and_then(|d| d.vram_used);
    assert!(used.is_some_and(|u| u > 600 << 20), "{used:?}");
    let kinds: Vec<_> = analyze(&ledger, &Thresholds::default())
        .iter()
        .map(|f| f.kind.as_str())
        .collect();
    assert!(!kinds.contains(&"over_reported"), "{kinds:?}");
}
