use super::*;
use crate::recording::CallRow;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn row(pid: u32, api: Api, peak_live: u64) -> CallRow {
    CallRow {
        pid,
        platform: Platform::Cuda,
        api,
        device: (!api.is_host()).then_some(0),
        calls: 2,
        peak_live,
        live_at_end: 0,
        largest: peak_live,
        large_allocs: (0, 0),
        pow2_allocs: (0, 0),
        failed: Vec::new(),
        out_of_memory: 0,
        first_out_of_memory: None,
        live: Vec::new(),
    }
}

fn peak(pid: u32, device_local: u64, host: u64) -> Peak {
    Peak {
        pid,
        rank: None,
        device: "0000:00:06.0".into(),
        device_local,
        host,
        home: true,
    }
}

fn table(rows: Vec<CallRow>) -> CallTable {
    CallTable {
        state: "on: lib".into(),
        rows,
        ..Default::default()
    }
}

fn check(peaks: &[Peak], rows: Vec<CallRow>, pid: u32, class: CheckClass) -> CallCheck {
    cross_check(peaks, &table(rows))
        .into_iter()
        .find(|c| c.pid == pid && c.class == class)
        .expect("a check for the traced process")
}

#[test]
fn the_h200_run_agrees_device_within_a_context_and_host_within_the_margin() {
    // tests/gpu/results/h200-2026-12-03-trace.txt: NVML 1.607 GiB against 1 GiB of cuMemAlloc,
    // pinned shmem 532 MiB against 512 MiB of cuMemHostAlloc, 2 GiB registered (a host row the
    // ledger adds from the calls).
    let peaks = [peak(542, 1_725_956_096, 532 * MIB + 2 * GIB)];
    let rows = vec![
        row(542, Api::Device, GIB),
        row(542, Api::HostPinned, 512 * MIB),
        row(542, Api::Registered, 2 * GIB),
        row(542, Api::Managed, 256 * MIB),
    ];
    let d = check(&peaks, rows.clone(), 542, CheckClass::Device);
    assert_eq!(d.agreement, Agreement::Context);
    let h = check(&peaks, rows, 542, CheckClass::Host);
    assert_eq!(h.agreement, Agreement::Within);
    assert_eq!(h.registered_peak, 2 * GIB);
}

#[test]
fn a_driver_pinning_more_host_memory_than_asked_is_counter_larger() {
    // compute-runtime#953's shape: 9 GiB of GTT on the peer's fd, 0 host calls made.
    let peaks = [peak(7, 9 * GIB, 9 * GIB)];
    let rows = vec![
        row(7, Api::Device, 9 * GIB),
        row(7, Api::HostPinned, 10 * MIB),
    ];
    let h = check(&peaks, rows, 7, CheckClass::Host);
    assert_eq!(h.agreement, Agreement::CounterLarger(9 * GIB - 10 * MIB));
}

#[test]
fn device_memory_beyond_a_context_is_counter_larger_not_context() {
    let peaks = [peak(7, 5 * GIB, 0)];
    let d = check(
        &peaks,
        vec![row(7, Api::Device, GIB)],
        7,
        CheckClass::Device,
    );
    assert_eq!(d.agreement, Agreement::CounterLarger(4 * GIB));
}

#[test]
fn calls_no_counter_saw_are_calls_larger() {
    let d = check(&[], vec![row(9, Api::Vmm, 3 * GIB)], 9, CheckClass::Device);
    assert_eq!(d.counter_peak, 0);
    assert_eq!(d.agreement, Agreement::CallsLarger(3 * GIB));
}

#[test]
fn a_process_that_only_registers_gets_a_host_check() {
    let checks = cross_check(
        &[peak(3, 0, GIB)],
        &table(vec![row(3, Api::Registered, GIB)]),
    );
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].class, CheckClass::Host);
    assert_eq!(checks[0].registered_peak, GIB);
    assert_eq!(checks[0].agreement, Agreement::Within);
    // A process with no GPU device has no row to carry it: the calls are larger.
    let checks = cross_check(&[], &table(vec![row(3, Api::Registered, GIB)]));
    assert_eq!(checks[0].agreement, Agreement::CallsLarger(GIB));
}

#[test]
fn diff_sums_each_api_kind_per_run() {
    let a = table(vec![row(1, Api::Device, GIB), row(2, Api::Device, GIB)]);
    let b = table(vec![row(1, Api::Device, GIB), row(1, Api::HostPinned, MIB)]);
    let d = diff_calls(Some(&a), Some(&b));
    assert_eq!(d.len(), 2);
    assert_eq!(d[0].api, Api::Device);
    assert_eq!(d[0].calls, [4, 2]);
    assert_eq!(d[0].peak_live, [2 * GIB, GIB]);
    assert_eq!(d[1].api, Api::HostPinned);
    assert_eq!(d[1].calls, [0, 2]);
    assert_eq!(d[1].only_one(), Some(("A", "B", 1)));
    assert!(diff_calls(None, None).is_empty());
    // A run that was not traced has no zeros to compare.
    let off = CallTable {
        state: "off: --no-trace".into(),
        ..Default::default()
    };
    let d = diff_calls(Some(&a), Some(&off));
    assert_eq!(d[0].traced, [true, false]);
    assert_eq!(d[0].only_one(), None);
}

#[test]
fn live_bytes_are_summed_over_processes_in_time_order() {
    let mut a = row(1, Api::Device, GIB);
    a.live = vec![(100, GIB), (300, 0)];
    let mut b = row(2, Api::Device, GIB);
    b.live = vec![(200, 2 * GIB), (300, GIB)];
    let live = live_by_api(&table(vec![a, b]));
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].api, Api::Device);
    assert_eq!(live[0].points, vec![(100, GIB), (200, 3 * GIB), (300, GIB)]);
}
