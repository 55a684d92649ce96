//! Recordings of real jobs' shapes, written with the library's own recorder: the timeline rules
//! on them, and on generated series stored densely and only on change.

use gpuledger::findings::Kind;
use gpuledger::ledger::{HostTotals, Ledger, MemClass, ProcessRow, Usage, UsageSource};
use gpuledger::recording::{open, Recorder, RecordingMeta, HOLD_BAND};
use gpuledger::sources::drm_devices::DeviceInfo;
use gpuledger::timeline::{analyze, TimelineFinding};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;
const JAX_DEVICE: &str = "0000:00:06.0";
const JAX_INTERVAL_MS: u64 = 150;

/// The JAX 0.11 job recorded on the H200 (issue 34): `x = jnp.ones((8192,8192));
/// (x@x).block_until_ready(); sleep(4)` with XLA's default preallocation. Its VRAM as NVML
/// reported it, per sample of 150 ms: nothing while `import jax` runs, 540 MiB once the CUDA
/// context exists, 105.4 GiB (XLA's 75 % pool) from 2.7 s, 630 MiB as the process exits.
fn jax_vram() -> Vec<Option<u64>> {
    (0..44)
        .map(|k| match k {
            0..=4 => None,
            5..=17 => Some(540 * MIB),
            18..=41 => Some(107_930 * MIB),
            _ => Some(630 * MIB),
        })
        .collect()
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings/jax-prealloc/jax.ledger")
}

fn process(pid: u32, usage: Option<(u64, u64)>) -> ProcessRow {
    ProcessRow {
        pid,
        nspid: vec![],
        comm: "python3".into(),
        cmdline: vec!["python3".into(), "jax_prealloc.py".into()],
        rank: None,
        local_rank: None,
        home_device: usage.map(|_| JAX_DEVICE.to_string()),
        usage: usage
            .map(|(resident, shared)| Usage {
                device: JAX_DEVICE.into(),
                region: "vram".into(),
                class: MemClass::Device,
                source: UsageSource::Nvml,
                total: None,
                resident: Some(resident),
                shared: Some(shared),
                purgeable: None,
                active: None,
            })
            .into_iter()
            .collect(),
        env: Default::default(),
        shared_with_others: vec![],
        has_nvidia_fds: usage.is_some(),
        has_kfd_fd: false,
        cgroup: None,
        labels: Default::default(),
        engines: Vec::new(),
    }
}

/// Writes one process's series (`None`: no usage row that sample) with the recorder. `dense`
/// changes a field the rules never read at every sample, so the recorder stores a point for
/// every sample; otherwise it stores them only when the value changes, as it does on a machine.
fn write(path: &Path, series: &[Option<u64>], dense: bool) {
    let meta = RecordingMeta {
        command: vec!["python3".into(), "jax_prealloc.py".into()],
        root: "/".into(),
        interval_ms: JAX_INTERVAL_MS,
        started_ms: 1_764_800_000_000,
        kernel: Some("Linux version 6.18.44-fc-v236-gpu".into()),
    };
    let mut rec = Recorder::create(path, &meta).unwrap();
    rec.set_meta("driver_versions", r#"{"nvidia":"580.159.04 (NVML)"}"#)
        .unwrap();
    let device = DeviceInfo {
        id: JAX_DEVICE.into(),
        driver: Some("nvidia".into()),
        vendor: Some("0x10de".into()),
        name: Some("NVIDIA H200".into()),
        ..DeviceInfo::default()
    };
    for (k, v) in series.iter().enumerate() {
        let shared = if dense { k as u64 } else { 0 };
        let ledger = Ledger {
            time_ms: meta.started_ms + k as u64 * JAX_INTERVAL_MS,
            host: HostTotals {
                mem_total: Some(128 << 30),
                mem_available: Some(120 << 30),
                unaccounted: Some(2 << 30),
                ..HostTotals::default()
            },
            devices: vec![device.clone()],
            processes: vec![process(2882, v.map(|b| (b, shared)))],
            ..Ledger::default()
        };
        rec.add(&ledger, &[]).unwrap();
    }
    let end = meta.started_ms + series.len() as u64 * JAX_INTERVAL_MS;
    rec.finish(end, Some(0), None).unwrap();
}

fn of_kind(found: &[TimelineFinding], kind: Kind) -> Vec<&TimelineFinding> {
    found.iter().filter(|f| f.finding.kind == kind).collect()
}

/// Rewrites the committed fixture from `jax_vram` (`cargo test --test it -- --ignored
/// write_jax_fixture`).
#[test]
#[ignore]
fn write_jax_fixture() {
    let _ = std::fs::remove_file(fixture());
    write(&fixture(), &jax_vram(), false);
}

#[test]
fn jax_preallocation_is_a_hold_at_105_gib_released_on_exit() {
    let rec = open(&fixture()).unwrap();
    let found = analyze(&rec);
    // Written from the series before the rules ran: held 105.4 GiB from 2.7 s (sample 18) to
    // 6.15 s (sample 41); fell to 630 MiB for the last two samples, 104.8 GiB released.
    let plateau = of_kind(&found, Kind::Plateau);
    assert_eq!(plateau.len(), 1, "{found:#?}");
    let p = plateau[0];
    assert_eq!(p.finding.bytes, 107_930 * MIB);
    assert_eq!(p.t_s, 2.7);
    assert!(
        p.finding
            .message
            .contains("held 105.4 GiB from 2.7 s to 6.2 s (24 of its 44 samples)"),
        "{}",
        p.finding.message
    );
    let released = of_kind(&found, Kind::ReleasedOnExit);
    assert_eq!(released.len(), 1, "{found:#?}");
    let r = released[0];
    assert_eq!(r.finding.bytes, (107_930 - 630) * MIB);
    assert_eq!(r.t_s, 6.3);
    assert!(
        r.finding
            .message
            .contains("fell to 630.0 MiB as the process ended"),
        "{}",
        r.finding.message
    );
    assert!(of_kind(&found, Kind::Leak).is_empty());
    assert!(of_kind(&found, Kind::StepwiseGrowth).is_empty());
}

#[test]
fn the_jax_series_stored_densely_gives_the_same_findings() {
    let dir = tempfile::tempdir().unwrap();
    let (dense, sparse) = (
        dir.path().join("dense.ledger"),
        dir.path().join("sparse.ledger"),
    );
    write(&dense, &jax_vram(), true);
    write(&sparse, &jax_vram(), false);
    let messages = |p: &Path| -> Vec<String> {
        analyze(&open(p).unwrap())
            .into_iter()
            .map(|f| {
                format!(
                    "{} {} {} {}",
                    f.finding.kind.as_str(),
                    f.t_s,
                    f.finding.bytes,
                    f.finding.message
                )
            })
            .collect()
    };
    assert_eq!(messages(&dense), messages(&sparse));
}

/// A generated series: levels (in 8 MiB units, so some changes stay within a hold's band) each
/// held for some samples, after samples where the process shows no usage row yet. (A row that
/// vanishes later is not generated: the recorder writes no point for it, so the reader fills
/// its last value forward.)
fn series() -> impl Strategy<Value = Vec<Option<u64>>> {
    (
        0usize..6,
        proptest::collection::vec((0u64..40, 1usize..12), 1..10),
    )
        .prop_map(|(none, runs)| {
            std::iter::repeat_n(None, none)
                .chain(
                    runs.into_iter()
                        .flat_map(|(v, n)| std::iter::repeat_n(Some(v * 8 * MIB), n)),
                )
                .collect::<Vec<_>>()
        })
        .prop_filter("two samples at least", |s| s.len() >= 2)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn series_findings_hold_on_any_shape(s in series()) {
        let dir = tempfile::tempdir().unwrap();
        let (dense, sparse) = (dir.path().join("d.ledger"), dir.path().join("s.ledger"));
        write(&dense, &s, true);
        write(&sparse, &s, false);
        let (d, sp) = (open(&dense).unwrap(), open(&sparse).unwrap());
        let (fd, fs) = (analyze(&d), analyze(&sp));
        // Storing points only on change never changes a finding.
        prop_assert_eq!(&fd, &fs);
        let values: Vec<u64> = s.iter().map(|v| v.unwrap_or(0)).collect();
        let sample_time = |k: usize| (k as u64 * JAX_INTERVAL_MS) as f64 / 1000.0;
        for f in &fs {
            // Its time is a sample time of the recording.
            prop_assert!((0..s.len()).any(|k| sample_time(k) == f.t_s), "{:?}", f);
            let Some(h) = f.held else { continue };
            // The level is the value at the hold's first sample, kept to the band all along.
            prop_assert_eq!(values[h.from], h.value);
            for &v in &values[h.from..=h.to] {
                prop_assert!(v >= h.value && v - h.value <= HOLD_BAND, "{:?} {:?}", f, values);
            }
            if f.finding.kind == Kind::Plateau {
                prop_assert_eq!(f.finding.bytes, h.value);
                prop_assert_eq!(f.t_s, sample_time(h.from));
            }
        }
    }
}

#[test]
fn the_report_of_the_jax_recording_speaks_of_the_recorded_nvidia_machine() {
    let f = fixture();
    let out = crate::common::stdout_of(&["report", f.to_str().unwrap()], 0);
    for said in [
        "I tested with the latest released driver (installed here: NVIDIA driver 580.159.04 (NVML))",
        "| NVIDIA driver | 580.159.04 (NVML) |",
        "| GPU kernel modules loaded | nvidia (the devices' driver; /proc/modules was not read) |",
        "No finding was recorded at any sample of the recordings",
        "No kernel log captured: the recordings kept no kernel line",
        "-- python3 jax_prealloc.py`",
        "`plateau` at 2.7 s",
        "`released_on_exit` at 6.3 s",
    ] {
        assert!(out.contains(said), "missing {said:?}:\n{out}");
    }
    for never in [
        "No findings in the snapshot",
        "python: torch | not found",
        "1. Start the job.",
    ] {
        assert!(!out.contains(never), "{never:?}:\n{out}");
    }
}
