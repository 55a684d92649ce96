//! Where events go: the job's end of the socket pair gpuledger started it with
//! (`GPULEDGER_TRACE_FD`, inherited: no path, and it survives a privilege drop), or, in a process
//! where that descriptor was closed, the socket named in `GPULEDGER_TRACE_SOCKET`.
//!
//! The inherited descriptor is used only while it is still that socket (its inode is checked
//! before each datagram): a process that closed the number and opened something else under it
//! never gets events written into it.

use gpuledger_trace_wire::{Inherited, FD_ENV, SOCKET_ENV};
use std::io;
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;

/// The trace channel of this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Channel {
    /// The inherited end of gpuledger's socket pair.
    Inherited(Inherited),
    /// A socket path (a process without the inherited descriptor, or an older gpuledger).
    Path(PathBuf),
}

impl Channel {
    /// The channel named in the environment (`var` reads it): the inherited descriptor when it
    /// is open in this process, else the socket path; `None` when neither is there.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Option<Channel> {
        let inherited = var(FD_ENV)
            .and_then(|v| Inherited::parse(&v))
            .filter(|c| is_open(*c));
        match inherited {
            Some(c) => Some(Channel::Inherited(c)),
            None => var(SOCKET_ENV)
                .filter(|s| !s.is_empty())
                .map(|s| Channel::Path(s.into())),
        }
    }
}

/// Whether `c`'s descriptor is open here and is still the socket gpuledger made.
pub fn is_open(c: Inherited) -> bool {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a `stat` into the buffer it is given; on failure it writes nothing and
    // the buffer is not read.
    let ok = unsafe { libc::fstat(c.fd, st.as_mut_ptr()) } == 0;
    if !ok {
        return false;
    }
    // SAFETY: fstat succeeded, so it filled the buffer.
    let st = unsafe { st.assume_init() };
    st.st_mode & libc::S_IFMT == libc::S_IFSOCK && st.st_ino == c.inode
}

/// A way to send datagrams on a channel, owned by one thread.
#[derive(Debug)]
pub enum Sender {
    /// On the inherited descriptor (shared by the job's processes, never closed here).
    Inherited(Inherited),
    /// From an unbound socket of this process to the path.
    Path(UnixDatagram, PathBuf),
}

impl Sender {
    /// A sender on `c`; `None` when no socket can be made.
    pub fn new(c: &Channel) -> Option<Sender> {
        Some(match c {
            Channel::Inherited(i) => Sender::Inherited(*i),
            Channel::Path(p) => {
                let s = UnixDatagram::unbound().ok()?;
                s.set_nonblocking(true).ok()?;
                Sender::Path(s, p.clone())
            }
        })
    }

    /// Sends one datagram without blocking (`WouldBlock` while the reader's queue is full) and
    /// without a SIGPIPE.
    pub fn send(&self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Sender::Path(s, p) => s.send_to(bytes, p).map(drop),
            Sender::Inherited(c) => {
                if !is_open(*c) {
                    return Err(io::ErrorKind::NotConnected.into());
                }
                // SAFETY: `bytes` is a valid buffer of its length; send only reads it.
                let n = unsafe {
                    libc::send(
                        c.fd,
                        bytes.as_ptr().cast(),
                        bytes.len(),
                        libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                    )
                };
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(())
                }
            }
        }
    }

    /// This process's own socket, which a forked child must close (the inherited one it keeps).
    pub fn own_fd(&self) -> Option<i32> {
        use std::os::unix::io::AsRawFd;
        match self {
            Sender::Path(s, _) => Some(s.as_raw_fd()),
            Sender::Inherited(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::io::AsRawFd;

    fn inherited(s: &UnixDatagram) -> Inherited {
        let inode = std::fs::metadata(format!("/proc/self/fd/{}", s.as_raw_fd()))
            .map(|m| m.ino())
            .unwrap();
        Inherited {
            fd: s.as_raw_fd(),
            inode,
        }
    }

    #[test]
    fn the_inherited_socket_is_used_and_the_path_only_without_it() {
        let (ours, theirs) = UnixDatagram::pair().unwrap();
        let c = inherited(&theirs);
        let env = |fd: String| {
            move |k: &str| match k {
                FD_ENV => Some(fd.clone()),
                SOCKET_ENV => Some("/run/x.sock".to_string()),
                _ => None,
            }
        };
        let got = Channel::from_env(env(c.to_env())).unwrap();
        assert_eq!(got, Channel::Inherited(c));
        Sender::new(&got).unwrap().send(b"hello").unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(ours.recv(&mut buf).unwrap(), 5);
        // Another inode under the number (closed and reused): the path.
        let stale = Inherited {
            inode: c.inode + 1,
            ..c
        };
        assert_eq!(
            Channel::from_env(env(stale.to_env())),
            Some(Channel::Path("/run/x.sock".into()))
        );
        assert_eq!(Channel::from_env(|_| None), None);
    }

    #[test]
    fn a_descriptor_reused_for_a_file_gets_nothing_written() {
        let (_ours, theirs) = UnixDatagram::pair().unwrap();
        let c = inherited(&theirs);
        let sender = Sender::new(&Channel::Inherited(c)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::File::create(dir.path().join("f")).unwrap();
        // The number now names the file (as after a close and an open).
        // SAFETY: both descriptors are open and owned here; dup2 replaces the second in one step.
        assert!(unsafe { libc::dup2(f.as_raw_fd(), theirs.as_raw_fd()) } >= 0);
        assert!(sender.send(b"event").is_err());
        assert_eq!(std::fs::metadata(dir.path().join("f")).unwrap().len(), 0);
    }
}
