//! guard with API tracing, through the library's guard loop on a copy of the NVIDIA capture tree: the started job
//! (a Python script sending what the tracer in a CUDA job would, in the tracer's wire format, on
//! the channel it inherited) is heard; a process outside the job that forges calls through the
//! fallback socket, under the job's pid, is refused and counted, and never trips the limit.
//!
//! guard makes its process the job's subreaper and signals the family it follows, so each test
//! runs it in a process of its own (this test binary again, that test alone): in the shared
//! test process it would adopt, and stop, the children of tests running beside it.

use gpuledger::findings::Thresholds;
use gpuledger::guard::machine::Response;
use gpuledger::guard::run::{guard, Event, GuardPlan, JobStart};
use gpuledger::guard::Policy;
use gpuledger::recording::trace::{Losses, TracePlan};
use gpuledger::root::Root;
use gpuledger::units::SizeSpec;
use gpuledger_trace_wire::{Api, Event as Call, Op, Platform, EVENT_BYTES, SOCKET_ENV};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const GIB: u64 = 1 << 30;

/// The job: it takes the place of the NVIDIA capture's CUDA process (pid 7001, 4 GiB of pinned
/// host memory) in the copy of the tree at `root`; 1 GiB registered and unregistered, then
/// 3 GiB that stays when `register`; it says its pid and fallback socket in `said`, then lives
/// `secs` seconds.
fn job(root: &Path, said: &Path, register: bool, secs: f64) -> Vec<String> {
    let script = format!(
        r#"
import os, socket, struct, time
me = str(os.getpid())
os.rename("{root}/proc/7001", "{root}/proc/" + me)
for d, _, files in os.walk("{root}"):
    for n in files:
        p = os.path.join(d, n)
        if not os.path.islink(p):
            b = open(p, "rb").read()
            open(p, "wb").write(b.replace(b"7001", me.encode()))
s = socket.socket(fileno=int(os.environ["GPULEDGER_TRACE_FD"].split(":")[0]))
def ev(op, size):
    return struct.pack("<QIIBBBBiQQIi", time.time_ns(), 1, 1, 3, op, 0, 0, -1, size, 0x7f0000000000, 0, 0)
s.send(ev(0, {gib}) + ev(1, 0))
if {register}:
    s.send(ev(0, 3 * {gib}))
with open("{said}.tmp", "w") as f:
    f.write("%d %s\n" % (os.getpid(), os.environ["{SOCKET_ENV}"]))
os.rename("{said}.tmp", "{said}")
time.sleep({secs})
"#,
        gib = GIB,
        register = if register { "True" } else { "False" },
        said = said.display(),
        root = root.display(),
    );
    vec!["python3".into(), "-c".into(), script]
}

/// The pid and fallback socket the job said, once it has.
fn said(path: &Path) -> (u32, PathBuf) {
    let start = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(path) {
            let (pid, sock) = s.trim_end().split_once(' ').unwrap();
            return (pid.parse().unwrap(), PathBuf::from(sock));
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the job never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn plan(tracer: &Path, argv: Vec<String>) -> GuardPlan {
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
        start: JobStart::Command(argv),
    }
}

/// A copy of the NVIDIA capture tree, for the job to take its CUDA process's place in.
fn tree(dir: &Path) -> PathBuf {
    let root = dir.join("tree");
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(crate::common::fixture("nvidia"))
        .arg(&root)
        .status();
    assert!(copied.is_ok_and(|s| s.success()));
    root
}

/// An empty library: it only has to be named and preloadable (the job makes no GPU calls).
fn empty_tracer(dir: &Path) -> PathBuf {
    let tracer = dir.join("libgpuledger_tracer.so");
    let built = std::process::Command::new("cc")
        .args(["-shared", "-x", "c", "/dev/null", "-o"])
        .arg(&tracer)
        .status();
    assert!(
        built.is_ok_and(|s| s.success()),
        "cc builds an empty library"
    );
    tracer
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

/// Round three's attack: another process sends 192 GiB of `cudaHostRegister` under the job's
/// pid. The kernel says who sent it: refused, counted, and the job runs to its end.
#[test]
fn calls_forged_by_a_process_outside_the_job_never_trip_the_limit() {
    if !in_own_process("calls_forged_by_a_process_outside_the_job_never_trip_the_limit") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let tracer = empty_tracer(tmp.path());
    let said_at = tmp.path().join("said");
    let forger = {
        let said_at = said_at.clone();
        std::thread::spawn(move || {
            let (pid, socket) = said(&said_at);
            let e = Call {
                t_ns: 0,
                pid,
                tid: pid,
                api: Api::Registered,
                op: Op::Alloc,
                platform: Platform::Cuda,
                device: None,
                bytes: 192 * GIB,
                address: 0x1000,
                flags: 0,
                result: 0,
            };
            let mut b = [0u8; EVENT_BYTES];
            e.encode(&mut b);
            UnixDatagram::unbound()
                .unwrap()
                .send_to(&b, socket)
                .unwrap()
        })
    };
    let mut tripped = 0;
    let mut losses = Vec::new();
    let root = tree(tmp.path());
    let argv = job(&root, &said_at, false, 1.5);
    let code = guard(
        Root::open(&root).unwrap(),
        &plan(&tracer, argv),
        |e| match e {
            Event::Tripped { .. } => tripped += 1,
            Event::TraceLosses { losses: l, ending } => losses.push((l, ending)),
            _ => {}
        },
    )
    .unwrap();
    assert_eq!(forger.join().unwrap(), EVENT_BYTES, "the forgery was sent");
    assert_eq!((code, tripped), (0, 0), "the job ran to its end");
    let ending = Losses {
        lost: 0,
        foreign: 1,
    };
    assert_eq!(losses.last(), Some(&(ending, true)), "{losses:?}");
}
