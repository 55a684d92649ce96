//! Getting events out of the job: [`emit`] stamps an event and pushes it into the static ring
//! (no allocation, no blocking); a writer thread, started at the first event of each process,
//! sends the ring's events in datagrams on the process's [`Channel`]. While the
//! reader's queue is full the writer waits (a bounded while: [`PATIENCE`]), so a burst of calls
//! fills the ring rather than being lost; what the ring cannot hold, or a reader that is gone or
//! stays stuck cannot take, is dropped and counted; the counts go out as [`Op::Dropped`] events,
//! the last one when the process exits.
//!
//! Fork: the child handler empties the ring, forgets the parent's writer thread (it does not
//! exist in the child) and closes the parent's own socket (an inherited channel it keeps); the
//! child's first event starts its own writer.

use crate::channel::{Channel, Sender};
use crate::ring::{Ring, CAPACITY};
use gpuledger_trace_wire::{Api, Event, Op, Platform, EVENTS_PER_DATAGRAM, EVENT_BYTES};
use std::cell::Cell;
use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

static RING: Ring<CAPACITY> = Ring::new();
/// Where events go; set once at initialisation.
static SOCKET: OnceLock<Channel> = OnceLock::new();
/// A writer thread runs in this process.
static WRITER: AtomicBool = AtomicBool::new(false);
/// Someone is taking events out of the ring (the writer, or the exit flush).
static DRAINING: AtomicBool = AtomicBool::new(false);
/// The writer's own socket, closed by a forked child.
static SOCKET_FD: AtomicI32 = AtomicI32::new(-1);
static PID: AtomicU32 = AtomicU32::new(0);

thread_local! {
    static TID: Cell<u32> = const { Cell::new(0) };
}

/// How long the writer sleeps when the ring is empty.
const IDLE: Duration = Duration::from_millis(2);
/// How long the exit flush waits for the writer to let go of the ring.
const EXIT_WAIT: Duration = Duration::from_millis(200);
/// How long the writer keeps trying a datagram while the reader's queue is full.
const PATIENCE: Duration = Duration::from_millis(100);
/// How long the exit flush may spend sending, in all.
const EXIT_SEND: Duration = Duration::from_millis(300);
/// The pause between two tries of a datagram the reader's queue had no room for.
const RETRY: Duration = Duration::from_micros(50);

/// Sets where events go and registers the fork and exit handlers; `false` when it was set before.
pub fn init(socket: Channel) -> bool {
    if SOCKET.set(socket).is_err() {
        return false;
    }
    PID.store(std::process::id(), Ordering::Relaxed);
    // SAFETY: registering plain `extern "C"` functions that catch every panic themselves.
    unsafe {
        libc::pthread_atfork(None, None, Some(after_fork_child));
        libc::atexit(at_exit);
    }
    true
}

fn tid() -> u32 {
    TID.with(|t| {
        if t.get() == 0 {
            // SAFETY: gettid has no preconditions.
            t.set(unsafe { libc::gettid() } as u32);
        }
        t.get()
    })
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Whether events have somewhere to go (a channel was named at initialisation).
pub fn enabled() -> bool {
    SOCKET.get().is_some()
}

/// This process's id as the tracer knows it (re-read in a forked child).
pub fn pid() -> u32 {
    PID.load(Ordering::Relaxed)
}

/// A blank event of this process and thread, now.
pub fn stamp(api: Api, op: Op, platform: Platform) -> Event {
    Event {
        t_ns: now_ns(),
        pid: PID.load(Ordering::Relaxed),
        tid: tid(),
        api,
        op,
        platform,
        device: None,
        bytes: 0,
        address: 0,
        flags: 0,
        result: 0,
    }
}

/// Queues an event; starts this process's writer thread at its first event.
pub fn emit(e: &Event) {
    if SOCKET.get().is_none() {
        return;
    }
    RING.push(e);
    // A plain load first: the swap (a write to a shared line) happens once per process.
    if !WRITER.load(Ordering::Acquire)
        && !WRITER.swap(true, Ordering::AcqRel)
        && std::thread::Builder::new()
            .name("gpuledger-trace".into())
            .spawn(writer)
            .is_err()
    {
        WRITER.store(false, Ordering::Release);
    }
}

fn socket() -> Option<Sender> {
    Sender::new(SOCKET.get()?)
}

/// Sends `bytes`, trying again while the reader's queue is full, for `patience` at most; `false`
/// when it did not go (the reader is gone, or stayed full).
fn send_patiently(sock: &Sender, bytes: &[u8], patience: Duration) -> bool {
    let start = Instant::now();
    loop {
        match sock.send(bytes) {
            Ok(_) => return true,
            Err(e) if e.kind() == ErrorKind::WouldBlock && start.elapsed() < patience => {
                std::thread::sleep(RETRY)
            }
            Err(_) => return false,
        }
    }
}

/// Sends one datagram of up to [`EVENTS_PER_DATAGRAM`] events, waiting up to `patience` for
/// room; the number taken from the ring.
fn send_batch(sock: &Sender, patience: Duration) -> usize {
    let mut buf = [0u8; EVENT_BYTES * EVENTS_PER_DATAGRAM];
    let mut n = 0;
    while n < EVENTS_PER_DATAGRAM {
        match RING.pop() {
            Some(b) => buf[n * EVENT_BYTES..(n + 1) * EVENT_BYTES].copy_from_slice(&b),
            None => break,
        }
        n += 1;
    }
    if n > 0 && !send_patiently(sock, &buf[..n * EVENT_BYTES], patience) {
        RING.add_dropped(n as u64);
    }
    n
}

/// Sends the dropped count as an event (`final_one`: even when it is 0).
fn send_dropped(sock: &Sender, final_one: bool) {
    let n = RING.take_dropped();
    if n == 0 && !final_one {
        return;
    }
    let mut e = stamp(Api::Tracer, Op::Dropped, Platform::Cuda);
    e.bytes = n;
    let mut b = [0u8; EVENT_BYTES];
    e.encode(&mut b);
    if sock.send(&b).is_err() {
        RING.add_dropped(n);
    }
}

fn writer() {
    let _ = std::panic::catch_unwind(|| {
        let Some(sock) = socket() else {
            return;
        };
        if let Some(fd) = sock.own_fd() {
            SOCKET_FD.store(fd, Ordering::Release);
        }
        loop {
            if DRAINING
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                let mut sent = 0;
                while send_batch(&sock, PATIENCE) > 0 {
                    sent += 1;
                }
                send_dropped(&sock, false);
                DRAINING.store(false, Ordering::Release);
                if sent > 0 {
                    continue;
                }
            }
            std::thread::sleep(IDLE);
        }
    });
}

/// Sends what is left and the final dropped count, from the calling thread.
pub fn flush_now() {
    let Some(sock) = socket() else {
        return;
    };
    let start = Instant::now();
    while DRAINING
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        if start.elapsed() > EXIT_WAIT {
            return;
        }
        std::thread::yield_now();
    }
    let deadline = Instant::now() + EXIT_SEND;
    while send_batch(&sock, deadline.saturating_duration_since(Instant::now())) > 0 {}
    send_dropped(&sock, true);
    DRAINING.store(false, Ordering::Release);
}

extern "C" fn at_exit() {
    let _ = std::panic::catch_unwind(flush_now);
}

extern "C" fn after_fork_child() {
    let _ = std::panic::catch_unwind(|| {
        RING.reset();
        WRITER.store(false, Ordering::Release);
        DRAINING.store(false, Ordering::Release);
        PID.store(std::process::id(), Ordering::Relaxed);
        TID.with(|t| t.set(0));
        let fd = SOCKET_FD.swap(-1, Ordering::AcqRel);
        if fd >= 0 {
            // SAFETY: the fd belonged to the parent's writer thread, which does not exist here;
            // nothing else in the child uses it.
            unsafe { libc::close(fd) };
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader socket whose queue is full: datagrams sent until the kernel refuses one.
    use std::os::unix::net::UnixDatagram;

    fn full_reader(dir: &std::path::Path) -> (UnixDatagram, Sender) {
        let path = dir.join("r");
        let reader = UnixDatagram::bind(&path).unwrap();
        let sender = Sender::new(&Channel::Path(path)).unwrap();
        while sender.send(&[0u8; EVENT_BYTES]).is_ok() {}
        (reader, sender)
    }

    #[test]
    fn a_full_queue_is_waited_for_while_the_reader_catches_up() {
        let dir = tempfile::tempdir().unwrap();
        let (reader, sender) = full_reader(dir.path());
        let drain = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            let mut buf = [0u8; EVENT_BYTES];
            reader.recv(&mut buf).unwrap();
            reader
        });
        let start = Instant::now();
        assert!(send_patiently(&sender, &[1u8; EVENT_BYTES], PATIENCE));
        assert!(
            start.elapsed() >= Duration::from_millis(15),
            "it waited for room"
        );
        drop(drain.join().unwrap());
    }

    #[test]
    fn a_stuck_or_gone_reader_costs_at_most_the_patience() {
        let dir = tempfile::tempdir().unwrap();
        let (reader, sender) = full_reader(dir.path());
        let start = Instant::now();
        let patience = Duration::from_millis(30);
        assert!(!send_patiently(&sender, &[1u8; EVENT_BYTES], patience));
        let took = start.elapsed();
        assert!(took >= patience && took < patience * 10, "{took:?}");
        drop(reader);
        let start = Instant::now();
        assert!(!send_patiently(&sender, &[1u8; EVENT_BYTES], PATIENCE));
        assert!(
            start.elapsed() < PATIENCE,
            "a gone reader is not waited for"
        );
    }
}
