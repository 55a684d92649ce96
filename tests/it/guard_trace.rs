//! guard with API tracing, through the library's guard loop: the started job gets the socket in
//! its environment, the calls that reach it (sent here in the tracer's wire format, as the
//! library in a CUDA job would) become registered host memory in each sample's ledger, and
//! `--max-job-host-gpu` trips on bytes no counter shows. The machine is the NVIDIA capture tree
//! (pid 7001 holds 4 GiB of pinned host memory), so no GPU is needed.
//!
//! guard makes its process the job's subreaper and signals the family it follows, so the test
//! runs it in a process of its own (this test binary again, this test alone): in the shared
//! test process it would adopt, and stop, the children of tests running beside it.

use crate::common::fixture;
use gpuledger::findings::Thresholds;
use gpuledger::guard::machine::Response;
use gpuledger::guard::run::{guard, Event, GuardPlan, JobStart};
use gpuledger::guard::{Policy, Trip};
use gpuledger::ledger::{MemClass, UsageSource};
use gpuledger::recording::trace::TracePlan;
use gpuledger::root::Root;
use gpuledger::units::SizeSpec;
use gpuledger_trace_wire::{Api, Event as Call, Op, Platform, EVENT_BYTES, SOCKET_ENV};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const GIB: u64 = 1 << 30;
/// The fixture's CUDA process.
const PID: u32 = 7001;

fn call(op: Op, bytes: u64) -> [u8; EVENT_BYTES] {
    let e = Call {
        t_ns: 0,
        pid: PID,
        tid: PID,
        api: Api::Registered,
        op,
        platform: Platform::Cuda,
        device: None,
        bytes,
        address: 0x7f00_0000_0000,
        flags: 0,
        result: 0,
    };
    let mut b = [0u8; EVENT_BYTES];
    e.encode(&mut b);
    b
}

/// Waits for the job to write the socket path it was given, then sends it `calls`.
fn send_when_ready(said: PathBuf, calls: Vec<[u8; EVENT_BYTES]>) {
    std::thread::spawn(move || {
        let start = Instant::now();
        let socket = loop {
            match std::fs::read_to_string(&said) {
                Ok(s) if s.ends_with('\n') => break PathBuf::from(s.trim_end()),
                _ if start.elapsed() > Duration::from_secs(10) => panic!("the job never started"),
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        let sock = UnixDatagram::unbound().unwrap();
        for c in calls {
            sock.send_to(&c, &socket).unwrap();
        }
    });
}

fn plan(tracer: &Path, said: &Path) -> GuardPlan {
    let script = format!("echo \"${SOCKET_ENV}\" > {}; exec sleep 30", said.display());
    GuardPlan {
        policy: Policy {
            min_available: SizeSpec::Bytes(0),
            max_driver_held: None,
            max_job_host_gpu: Some(6 * GIB),
        },
        grace: Duration::from_secs(2),
        interval: Duration::from_millis(100),
        response: Response::Term,
        thresholds: Thresholds::default(),
        trace: TracePlan::On(tracer.to_path_buf()),
        start: JobStart::Command(vec!["sh".into(), "-c".into(), script]),
    }
}

/// Set in the process that runs the guard.
const ALONE: &str = "GPULEDGER_TEST_GUARD_ALONE";

/// Runs the test `name` of this module in a new process of this test binary; `true` there.
fn in_own_process(name: &str) -> bool {
    if std::env::var_os(ALONE).is_some() {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            &format!("guard_trace::{name}"),
            "--exact",
            "--test-threads=1",
        ])
        .env(ALONE, "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

#[test]
fn registered_host_memory_from_the_calls_trips_the_job_host_ceiling() {
    if !in_own_process("registered_host_memory_from_the_calls_trips_the_job_host_ceiling") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The library only has to be named and preloadable: the job (a shell) makes no GPU calls.
    let tracer = tmp.path().join("libgpuledger_tracer.so");
    let built = std::process::Command::new("cc")
        .args(["-shared", "-x", "c", "/dev/null", "-o"])
        .arg(&tracer)
        .status();
    assert!(
        built.is_ok_and(|s| s.success()),
        "cc builds an empty library"
    );
    let said = tmp.path().join("socket-path");
    // 1 GiB registered and unregistered, then 3 GiB that stays: 4 GiB pinned + 3 GiB > 6 GiB.
    let mut calls = vec![call(Op::Alloc, GIB), call(Op::Free, 0)];
    calls.push(call(Op::Alloc, 3 * GIB));
    send_when_ready(said.clone(), calls);
    let root = Root::open(&fixture("nvidia")).unwrap();
    let mut tripped = Vec::new();
    let code = guard(root, &plan(&tracer, &said), |e| {
        if let Event::Tripped { trip, ledger, .. } = e {
            let p = ledger.processes.iter().find(|p| p.pid == PID).unwrap();
            let registered: u64 = p
                .usage
                .iter()
                .filter(|u| u.source == UsageSource::ApiTrace && u.class == MemClass::Host)
                .filter_map(|u| u.resident)
                .sum();
            tripped.push((trip.clone(), registered));
        }
    })
    .unwrap();
    assert_eq!(code, 4, "guard stopped the job");
    assert_eq!(tripped.len(), 1, "{tripped:?}");
    let (trip, registered) = &tripped[0];
    assert_eq!(*registered, 3 * GIB, "the freed GiB is not counted");
    match trip {
        Trip::JobHostGpu { held, max } => {
            assert_eq!(*max, 6 * GIB);
            assert_eq!(*held, 7 * GIB, "4 GiB pinned + 3 GiB registered");
        }
        other => panic!("tripped on {other:?}"),
    }
}
