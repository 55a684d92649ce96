use super::*;
use crate::recording::{open, Recorder, RecordingMeta, Resolver};
use gpuledger_trace_wire::{Api, Event, Op, Platform, EVENT_BYTES, FD_ENV};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixDatagram;
use std::time::Duration;

fn argv(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
}

#[test]
fn plan_uses_the_library_beside_the_binary_unless_told_otherwise() {
    let t = tempfile::tempdir().unwrap();
    let none = |_: &str| None;
    let job = argv(&["python", "train.py"]);
    assert_eq!(
        plan(true, true, &job, none, Some(t.path())),
        TracePlan::Off(TraceOff::NoTracer(t.path().join(TRACER_FILE)))
    );
    std::fs::write(t.path().join(TRACER_FILE), "").unwrap();
    assert_eq!(
        plan(true, true, &job, none, Some(t.path())),
        TracePlan::On(t.path().join(TRACER_FILE))
    );
    assert_eq!(
        plan(false, true, &job, none, Some(t.path())),
        TracePlan::Off(TraceOff::NotWanted)
    );
    assert_eq!(
        plan(true, true, &[], none, Some(t.path())),
        TracePlan::Off(TraceOff::NotStarted)
    );
    assert_eq!(
        plan(true, false, &job, none, Some(t.path())),
        TracePlan::Off(TraceOff::NotLive)
    );
}

#[test]
fn plan_never_stacks_on_another_tool() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join(TRACER_FILE), "").unwrap();
    let injected = |k: &str| (k == CUDA_INJECTION_ENV).then(|| "/opt/nsys/libinj.so".to_string());
    let off = plan(true, true, &argv(&["python"]), injected, Some(t.path()));
    assert_eq!(
        off,
        TracePlan::Off(TraceOff::InjectionSet("/opt/nsys/libinj.so".into()))
    );
    let nsys = plan(
        true,
        true,
        &argv(&["/usr/bin/nsys", "profile", "python"]),
        |_| None,
        Some(t.path()),
    );
    assert_eq!(nsys, TracePlan::Off(TraceOff::UnderProfiler("nsys".into())));
    let env_lib = t.path().join("other.so");
    std::fs::write(&env_lib, "").unwrap();
    let named = |k: &str| (k == TRACER_ENV).then(|| env_lib.display().to_string());
    assert_eq!(
        plan(true, true, &argv(&["python"]), named, None),
        TracePlan::On(env_lib.clone())
    );
}

#[test]
fn a_nested_gpuledger_traces_its_own_job() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join(TRACER_FILE), "").unwrap();
    // `record -- gpuledger guard …`: the outer one leaves the job to the inner one.
    let guard = argv(&["/usr/local/bin/gpuledger", "guard", "--", "python"]);
    assert_eq!(
        plan(true, true, &guard, |_| None, Some(t.path())),
        TracePlan::Off(TraceOff::Nested)
    );
    // A guard started by a recorded script inherits the recorder's tracer and takes it over.
    let outer = |k: &str| (k == CUDA_INJECTION_ENV).then(|| format!("/opt/gl/{TRACER_FILE}"));
    assert_eq!(
        plan(true, true, &argv(&["python"]), outer, Some(t.path())),
        TracePlan::On(t.path().join(TRACER_FILE).canonicalize().unwrap())
    );
}

fn event(pid: u32, api: Api, op: Op, bytes: u64, address: u64, result: i32) -> Event {
    Event {
        t_ns: 1_700_000_000_000_000_000,
        pid,
        tid: pid,
        api,
        op,
        platform: Platform::Cuda,
        device: if api.is_host() { None } else { Some(0) },
        bytes,
        address,
        flags: 0,
        result,
    }
}

/// A job that sends, on the channel it inherited, an event claiming to be pid 1 and a datagram
/// that is not events.
const SENDER: &str = r#"
import os, socket, struct
fd = int(os.environ["GPULEDGER_TRACE_FD"].split(":")[0])
s = socket.socket(fileno=fd)
s.send(struct.pack("<QIIBBBBiQQIi", 1, 1, 1, 1, 0, 0, 0, 0, 10, 16, 0, 0))
s.send(b"junk")
"#;

#[test]
fn listener_keeps_the_job_s_events_under_the_kernel_pid_and_refuses_others() {
    let l = Listener::bind().unwrap();
    let lib = Path::new("/x/libgpuledger_tracer.so");
    let env = l.env(lib);
    assert!(env.contains(&(CUDA_INJECTION_ENV.into(), lib.display().to_string())));
    // gpuledger itself is not the job: its events through the fallback socket are refused.
    let mut b = [0u8; EVENT_BYTES];
    event(7, Api::Device, Op::Alloc, 10, 0x10, 0).encode(&mut b);
    UnixDatagram::unbound()
        .unwrap()
        .send_to(&b, l.socket())
        .unwrap();
    let argv = argv(&["python3", "-c", SENDER]);
    let mut job = crate::job::Job::spawn_piped(&argv, &env, l.job_end()).unwrap();
    assert_eq!(
        job.0.wait().unwrap().code,
        Some(0),
        "the job sent its events"
    );
    let start = std::time::Instant::now();
    let mut got = Taken::default();
    while (got.events.len(), got.lost, got.foreign) != (1, 1, 1)
        && start.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(5));
        let t = l.take();
        got.events.extend(t.events);
        got.lost += t.lost;
        got.foreign += t.foreign;
    }
    assert_eq!(
        (got.events.len(), got.lost, got.foreign),
        (1, 1, 1),
        "{got:?}"
    );
    assert_eq!(
        got.events[0].pid,
        job.0.pid(),
        "the kernel's pid, not the one claimed"
    );
    assert_eq!(l.accepted(), 2);
}

#[test]
fn the_fallback_socket_is_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let l = Listener::bind().unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(l.socket().parent().unwrap()), 0o700);
    assert_eq!(mode(&l.socket()), 0o600);
    let fd = l.env(Path::new("/x.so"));
    let value = &fd.iter().find(|(k, _)| k == FD_ENV).unwrap().1;
    let inherited = gpuledger_trace_wire::Inherited::parse(value).unwrap();
    assert_eq!(Some(inherited.fd), l.job_end().map(|f| f.as_raw_fd()));
}

#[test]
fn recorded_calls_read_back_per_kind_with_frees_resolved_and_failures_kept() {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("r.ledger");
    let mut rec = Recorder::create(&path, &RecordingMeta::default()).unwrap();
    rec.set_meta("trace", "on: /x/lib.so").unwrap();
    let gib = 1u64 << 30;
    let mut first = vec![
        event(7, Api::Tracer, Op::Started, 0, 0, 0),
        event(7, Api::Registered, Op::Alloc, 2 * gib, 0x9000, 0),
        event(7, Api::Device, Op::Alloc, gib, 0x100, 0),
        // cuMemAllocManaged, then freed by cuMemFree (which the tracer calls device).
        event(7, Api::Managed, Op::Alloc, gib / 2, 0x200, 0),
        event(7, Api::Device, Op::Free, 0, 0x200, 0),
        event(7, Api::Vmm, Op::Alloc, 2 << 20, 0, 800),
    ];
    let mut resolver = Resolver::default();
    rec.add_calls(&mut first, Losses::default(), &mut resolver)
        .unwrap();
    let mut second = vec![
        event(7, Api::Registered, Op::Free, 0, 0x9000, 0),
        event(7, Api::Tracer, Op::Dropped, 3, 0, 0),
    ];
    let losses = Losses {
        lost: 2,
        foreign: 4,
    };
    rec.add_calls(&mut second, losses, &mut resolver).unwrap();
    drop(rec);
    let c = open(&path).unwrap().calls.unwrap();
    assert_eq!(c.started, [7]);
    assert_eq!((c.dropped, c.foreign), (5, 4));
    let row = |api: Api| c.rows.iter().find(|r| r.api == api).unwrap();
    let reg = row(Api::Registered);
    assert_eq!(
        (reg.calls, reg.peak_live, reg.live_at_end, reg.device),
        (2, 2 * gib, 0, None)
    );
    let managed = row(Api::Managed);
    assert_eq!(
        (managed.calls, managed.peak_live, managed.live_at_end),
        (2, gib / 2, 0)
    );
    assert_eq!(row(Api::Device).live_at_end, gib);
    let vmm = row(Api::Vmm);
    assert_eq!(
        vmm.failed,
        [("CUDA_ERROR_NOT_PERMITTED (800)".to_string(), 1)]
    );
    assert_eq!(vmm.peak_live, 0);
}

#[test]
fn a_recording_without_trace_has_no_calls() {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("r.ledger");
    drop(Recorder::create(&path, &RecordingMeta::default()).unwrap());
    assert_eq!(open(&path).unwrap().calls, None);
}

/// compute-runtime#953's calls read back: a range made resident on the peer twice counts once,
/// an eviction takes it away, freeing the allocation ends a residency left in place, and a call
/// the interposer answered itself counts as a call but makes nothing resident.
#[test]
fn residency_counts_each_range_once_per_device_until_evicted_or_freed() {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("r.ledger");
    let mut rec = Recorder::create(&path, &RecordingMeta::default()).unwrap();
    rec.set_meta("trace", "on: /x/lib.so").unwrap();
    let gib = 1u64 << 30;
    let ze = |api, op, device, addr, flags| Event {
        platform: Platform::LevelZero,
        device: Some(device),
        flags,
        ..event(9, api, op, gib, addr, 0)
    };
    let own = gpuledger_trace_wire::residency_flags(Some(0), false);
    let skipped = gpuledger_trace_wire::residency_flags(Some(0), true);
    let mut events = vec![
        ze(Api::Device, Op::Alloc, 0, 0x100, 0),
        ze(Api::PeerResidency, Op::MakeResident, 1, 0x100, own),
        ze(Api::PeerResidency, Op::MakeResident, 1, 0x100, own),
        ze(Api::PeerResidency, Op::Evict, 1, 0x100, own),
        ze(Api::PeerResidency, Op::Evict, 1, 0x100, own),
        ze(Api::PeerResidency, Op::MakeResident, 1, 0x100, own),
        ze(Api::Device, Op::Free, 0, 0x100, 0),
        ze(Api::PeerResidency, Op::MakeResident, 1, 0x200, skipped),
    ];
    rec.add_calls(&mut events, Losses::default(), &mut Resolver::default())
        .unwrap();
    drop(rec);
    let c = open(&path).unwrap().calls.unwrap();
    let peer = c.rows.iter().find(|r| r.api == Api::PeerResidency).unwrap();
    assert_eq!(peer.device, Some(1));
    assert_eq!((peer.calls, peer.peak_live, peer.live_at_end), (6, gib, 0));
    assert_eq!(c.skipped_peer_residency, 1);
}

#[test]
fn a_relative_tracer_path_names_the_file_checked_wherever_the_job_runs() {
    let file = tempfile::Builder::new()
        .prefix(".tracer-test-")
        .suffix(".so")
        .tempfile_in(".")
        .unwrap();
    let rel = file
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let named = |k: &str| (k == TRACER_ENV).then(|| rel.clone());
    let lib = library(named, None);
    assert!(lib.is_absolute(), "{}", lib.display());
    assert_eq!(lib, std::fs::canonicalize(file.path()).unwrap());
}
