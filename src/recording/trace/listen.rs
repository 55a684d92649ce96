//! The channel a traced job's events come in on, and the thread that reads it.
//!
//! The job inherits one end of a Unix datagram socket pair (its number and inode in
//! `GPULEDGER_TRACE_FD`): no path, no permissions to get wrong, and a job that drops privileges
//! (`setpriv`, `su`) keeps it. A process of the job that closed inherited descriptors (Python's
//! `subprocess` does by default) finds a socket in a directory made 0700 and a socket made 0600
//! whatever the umask (`GPULEDGER_TRACE_SOCKET`). Both carry the sender's credentials from the
//! kernel (`SO_PASSCRED`): an event counts only when the kernel's pid is one of the job's
//! processes ([`Senders`]), and it is stored under that pid (a job in a pid namespace reports
//! its own numbering); others are dropped and counted as foreign.
//!
//! The reader never makes the sampler wait: it decodes outside the lock and holds it only to
//! append, the sampler only to swap the batch out. At most [`PENDING_MAX`] events (4 Ki) wait between
//! two samples; the rest are dropped and counted (a job flooding its own channel loses its own
//! events, never the sampling).

use super::senders::Senders;
use super::CUDA_INJECTION_ENV;
use gpuledger_trace_wire::{
    Event, Inherited, EVENTS_PER_DATAGRAM, EVENT_BYTES, FD_ENV, SOCKET_ENV,
};
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
use std::fs::Permissions;
use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Events kept in memory between two samples at most; more are dropped and counted.
pub const PENDING_MAX: usize = 1 << 12;
/// The fallback socket's directory and socket modes.
const DIR_MODE: u32 = 0o700;
const SOCKET_MODE: u32 = 0o600;
/// Datagrams read from one socket before the other is looked at.
const BURST: usize = 256;
/// How often the reader looks at its stop flag when nothing arrives.
const POLL: Duration = Duration::from_millis(50);

/// What came in since the last [`Listener::take`].
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Taken {
    /// Events from the job's processes, each with the kernel's pid of its sender.
    pub events: Vec<Event>,
    /// Events lost on this side: beyond [`PENDING_MAX`], or undecodable.
    pub lost: u64,
    /// Events from processes outside the job, not counted anywhere.
    pub foreign: u64,
}

#[derive(Debug, Default)]
struct Shared {
    events: Mutex<Vec<Event>>,
    lost: AtomicU64,
    foreign: AtomicU64,
    /// Datagrams accepted from the job, all along.
    accepted: AtomicU64,
    stop: AtomicBool,
}

/// The job's trace channel, read by a thread into a bounded inbox.
#[derive(Debug)]
pub struct Listener {
    /// The job's end, until the job has started.
    job_end: Option<OwnedFd>,
    inherited: Inherited,
    dir: tempfile::TempDir,
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Listener {
    /// Makes the socket pair and the fallback socket, and starts reading both.
    pub fn bind() -> std::io::Result<Listener> {
        let (ours, theirs) = UnixDatagram::pair()?;
        rustix::net::sockopt::set_socket_passcred(&ours, true)?;
        let inode = rustix::fs::fstat(&theirs)?.st_ino;
        let dir = tempfile::Builder::new()
            .prefix("gpuledger-trace-")
            .permissions(Permissions::from_mode(DIR_MODE))
            .tempdir()?;
        // The umask can only take bits away; set the modes themselves.
        std::fs::set_permissions(dir.path(), Permissions::from_mode(DIR_MODE))?;
        let path = dir.path().join("events.sock");
        let fallback = UnixDatagram::bind(&path)?;
        std::fs::set_permissions(&path, Permissions::from_mode(SOCKET_MODE))?;
        rustix::net::sockopt::set_socket_passcred(&fallback, true)?;
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        let senders = Senders::descendants_of_self();
        let thread = std::thread::Builder::new()
            .name("trace-listener".into())
            .spawn(move || read_loop(&[ours, fallback], &s, senders))?;
        Ok(Listener {
            inherited: Inherited {
                fd: theirs.as_raw_fd(),
                inode,
            },
            job_end: Some(theirs.into()),
            dir,
            shared,
            thread: Some(thread),
        })
    }

    /// The fallback socket's path.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("events.sock")
    }

    /// The job's end of the pair, for the job to inherit (`None` once it has started).
    pub fn job_end(&self) -> Option<BorrowedFd<'_>> {
        self.job_end.as_ref().map(|fd| fd.as_fd())
    }

    /// Closes gpuledger's copy of the job's end, once the job holds its own.
    pub fn job_started(&mut self) {
        self.job_end = None;
    }

    /// The environment a traced job gets.
    pub fn env(&self, library: &Path) -> Vec<(String, String)> {
        vec![
            (
                CUDA_INJECTION_ENV.to_string(),
                library.display().to_string(),
            ),
            (FD_ENV.to_string(), self.inherited.to_env()),
            (SOCKET_ENV.to_string(), self.socket().display().to_string()),
        ]
    }

    /// Takes what arrived so far.
    pub fn take(&self) -> Taken {
        let events = {
            let mut e = self.shared.events.lock().unwrap_or_else(|p| p.into_inner());
            std::mem::take(&mut *e)
        };
        Taken {
            events,
            lost: self.shared.lost.swap(0, Ordering::Relaxed),
            foreign: self.shared.foreign.swap(0, Ordering::Relaxed),
        }
    }

    /// Datagrams accepted from the job so far.
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::Relaxed)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn read_loop(socks: &[UnixDatagram; 2], shared: &Shared, mut senders: Senders) {
    let mut buf = vec![0u8; EVENT_BYTES * EVENTS_PER_DATAGRAM * 2];
    for s in socks {
        if s.set_nonblocking(true).is_err() {
            return;
        }
    }
    let timeout = Timespec::try_from(POLL).expect("a short timeout");
    while !shared.stop.load(Ordering::Relaxed) {
        let mut fds = socks.each_ref().map(|s| PollFd::new(s, PollFlags::IN));
        if rustix::event::poll(&mut fds, Some(&timeout)).is_err() {
            continue;
        }
        // socks[0] is the job's end of the pair: only processes holding the inherited fd can
        // send on it, so its senders are the job's even when they exited before their last
        // datagram was read (their ancestry can no longer be walked then); the fallback path
        // (socks[1]) is checked against the ancestry.
        for (i, s) in socks.iter().enumerate() {
            for _ in 0..BURST {
                match receive(s, &mut buf) {
                    Some((n, pid)) => admit(&buf[..n], pid, i == 0, shared, &mut senders),
                    None => break,
                }
            }
        }
    }
}

/// One datagram and the kernel's pid of its sender (0 when none came); `None` when none waits.
fn receive(sock: &UnixDatagram, buf: &mut [u8]) -> Option<(usize, u32)> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmCredentials(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut iov = [IoSliceMut::new(buf)];
    let msg = rustix::net::recvmsg(sock, &mut iov, &mut control, RecvFlags::DONTWAIT).ok()?;
    let pid = control
        .drain()
        .find_map(|m| match m {
            RecvAncillaryMessage::ScmCredentials(c) => Some(c.pid.as_raw_nonzero().get() as u32),
            _ => None,
        })
        .unwrap_or(0);
    Some((msg.bytes, pid))
}

/// Counts a datagram from `pid` into the inbox, or as foreign, lost; `inherited` when it came
/// on the job's end of the socket pair.
fn admit(datagram: &[u8], pid: u32, inherited: bool, shared: &Shared, senders: &mut Senders) {
    let count = (datagram.len() / EVENT_BYTES).max(1) as u64;
    let member = match inherited {
        true => senders.admit(pid),
        false => senders.in_job(pid),
    };
    if !member {
        shared.foreign.fetch_add(count, Ordering::Relaxed);
        return;
    }
    shared.accepted.fetch_add(1, Ordering::Relaxed);
    let Ok(mut events) = Event::decode_all(datagram) else {
        shared.lost.fetch_add(count, Ordering::Relaxed);
        return;
    };
    for e in &mut events {
        e.pid = pid;
    }
    let mut inbox = shared.events.lock().unwrap_or_else(|p| p.into_inner());
    if inbox.len() + events.len() <= PENDING_MAX {
        inbox.extend(events);
    } else {
        drop(inbox);
        shared.lost.fetch_add(count, Ordering::Relaxed);
    }
}
