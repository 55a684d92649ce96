//! API-level tracing of a started command: whether to trace ([`plan`]), and the socket the
//! tracer library in the job sends its events to ([`Listener`]).
//!
//! The tracer (`tracer/`, `libgpuledger_tracer.so`) is taken from `GPULEDGER_TRACER` or from
//! beside the gpuledger binary. Tracing is never stacked on another tool: when the job's
//! environment already sets `CUDA_INJECTION64_PATH`, or the command is a profiler that injects
//! its own (nsys, ncu, unitrace), it stays off and says why. Whether the same library also goes
//! into the job's `LD_PRELOAD` as the Level Zero interposer is decided in `trace_ze`.

use gpuledger_trace_wire::{Event, EVENTS_PER_DATAGRAM, EVENT_BYTES, SOCKET_ENV};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The tracer library's file name.
pub const TRACER_FILE: &str = "libgpuledger_tracer.so";
/// The environment variable naming the tracer library (overrides the one beside the binary).
pub const TRACER_ENV: &str = "GPULEDGER_TRACER";
/// The variable the CUDA driver loads an injection library from.
pub const CUDA_INJECTION_ENV: &str = "CUDA_INJECTION64_PATH";
/// Events kept in memory between two samples at most; more are counted as dropped.
const PENDING_MAX: usize = 1 << 20;
/// Commands that inject their own tracer into the job.
const PROFILERS: [&str; 5] = [
    "nsys",
    "ncu",
    "nv-nsight-cu-cli",
    "unitrace",
    "compute-sanitizer",
];

/// Why a recording is not traced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceOff {
    /// `--no-trace`.
    NotWanted,
    /// No tracer library beside the binary or in `GPULEDGER_TRACER`.
    NoTracer(PathBuf),
    /// The job's environment already names an injection library.
    InjectionSet(String),
    /// The command is a profiler with its own injection.
    UnderProfiler(String),
    /// Only a command that `record` starts can be traced.
    NotStarted,
    /// A captured or simulated tree (`--root`) has no live job to load a tracer into.
    NotLive,
    /// The socket could not be made.
    Socket(String),
}

impl TraceOff {
    /// Whether a user who did not ask for `--no-trace` should be told: tracing was expected and
    /// another tool or the machine stood in the way. Not for an attach mode, a captured tree or
    /// a build without the tracer library (the common case; a recording says so in its meta).
    pub fn worth_saying(&self) -> bool {
        !matches!(
            self,
            TraceOff::NotWanted | TraceOff::NotStarted | TraceOff::NotLive | TraceOff::NoTracer(_)
        )
    }
}

impl std::fmt::Display for TraceOff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TraceOff::NotWanted => write!(f, "--no-trace"),
            TraceOff::NoTracer(p) => write!(f, "no tracer library at {} (build it with `cargo build --release -p gpuledger-tracer` and put {TRACER_FILE} beside gpuledger, or set {TRACER_ENV})", p.display()),
            TraceOff::InjectionSet(v) => write!(f, "the job already sets {CUDA_INJECTION_ENV}={v}; another tool traces it"),
            TraceOff::UnderProfiler(p) => write!(f, "the command runs under {p}, which injects its own tracer"),
            TraceOff::NotStarted => write!(f, "only a command gpuledger starts (after --) can be traced"),
            TraceOff::NotLive => write!(f, "the machine is a captured or simulated tree (--root)"),
            TraceOff::Socket(e) => write!(f, "cannot create the trace socket: {e}"),
        }
    }
}

/// Whether and with which library to trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TracePlan {
    /// Trace with this library.
    On(PathBuf),
    /// Do not, for this reason.
    Off(TraceOff),
}

/// Decides tracing for `argv` (empty: an attach mode) on the live machine (`live`); `wanted` is
/// false with `--no-trace`;
/// `var` reads the environment the job will inherit; `exe_dir` is the gpuledger binary's folder.
pub fn plan(
    wanted: bool,
    live: bool,
    argv: &[String],
    var: impl Fn(&str) -> Option<String>,
    exe_dir: Option<&Path>,
) -> TracePlan {
    if !wanted {
        return TracePlan::Off(TraceOff::NotWanted);
    }
    let Some(first) = argv.first() else {
        return TracePlan::Off(TraceOff::NotStarted);
    };
    if !live {
        return TracePlan::Off(TraceOff::NotLive);
    }
    if let Some(v) = var(CUDA_INJECTION_ENV).filter(|v| !v.is_empty()) {
        return TracePlan::Off(TraceOff::InjectionSet(v));
    }
    let name = Path::new(first)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if PROFILERS.contains(&name.as_str()) {
        return TracePlan::Off(TraceOff::UnderProfiler(name));
    }
    let lib = library(var, exe_dir);
    if lib.is_file() {
        TracePlan::On(lib)
    } else {
        TracePlan::Off(TraceOff::NoTracer(lib))
    }
}

/// The tracer library: `GPULEDGER_TRACER`, else beside the gpuledger binary (`exe_dir`).
pub fn library(var: impl Fn(&str) -> Option<String>, exe_dir: Option<&Path>) -> PathBuf {
    match var(TRACER_ENV).filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => exe_dir.unwrap_or(Path::new(".")).join(TRACER_FILE),
    }
}

#[derive(Debug, Default)]
struct Inbox {
    events: Vec<Event>,
    /// Datagrams or events `record` could not take (full inbox, undecodable).
    lost: u64,
}

/// The socket the job's tracer sends to, read by a thread into a bounded inbox.
#[derive(Debug)]
pub struct Listener {
    dir: tempfile::TempDir,
    inbox: Arc<Mutex<Inbox>>,
    stop: Arc<AtomicBool>,
    received: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Listener {
    /// Binds a socket in a new private folder and starts reading it.
    pub fn bind() -> std::io::Result<Listener> {
        let dir = tempfile::Builder::new()
            .prefix("gpuledger-trace-")
            .tempdir()?;
        let sock = UnixDatagram::bind(dir.path().join("events.sock"))?;
        sock.set_read_timeout(Some(Duration::from_millis(50)))?;
        let inbox = Arc::new(Mutex::new(Inbox::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let received = Arc::new(AtomicU64::new(0));
        let (i, s, r) = (inbox.clone(), stop.clone(), received.clone());
        let thread = std::thread::Builder::new()
            .name("trace-listener".into())
            .spawn(move || read_loop(&sock, &i, &s, &r))?;
        Ok(Listener {
            dir,
            inbox,
            stop,
            received,
            thread: Some(thread),
        })
    }

    /// The socket's path.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("events.sock")
    }

    /// The environment a traced job gets.
    pub fn env(&self, library: &Path) -> Vec<(String, String)> {
        vec![
            (
                CUDA_INJECTION_ENV.to_string(),
                library.display().to_string(),
            ),
            (SOCKET_ENV.to_string(), self.socket().display().to_string()),
        ]
    }

    /// Takes the events received so far and the count of those lost on this side.
    pub fn take(&self) -> (Vec<Event>, u64) {
        let mut i = self.inbox.lock().unwrap_or_else(|p| p.into_inner());
        (std::mem::take(&mut i.events), std::mem::take(&mut i.lost))
    }

    /// Datagrams received so far.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn read_loop(sock: &UnixDatagram, inbox: &Mutex<Inbox>, stop: &AtomicBool, received: &AtomicU64) {
    let mut buf = vec![0u8; EVENT_BYTES * EVENTS_PER_DATAGRAM * 2];
    while !stop.load(Ordering::Relaxed) {
        let n = match sock.recv(&mut buf) {
            Ok(n) => n,
            Err(_) => continue,
        };
        received.fetch_add(1, Ordering::Relaxed);
        let mut i = inbox.lock().unwrap_or_else(|p| p.into_inner());
        match Event::decode_all(&buf[..n]) {
            Ok(ev) if i.events.len() + ev.len() <= PENDING_MAX => i.events.extend(ev),
            Ok(ev) => i.lost += ev.len() as u64,
            Err(_) => i.lost += (n / EVENT_BYTES).max(1) as u64,
        }
    }
}

mod start;
#[cfg(test)]
mod tests;

pub use start::{Registrations, Started};
