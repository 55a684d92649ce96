//! A child job: started by gpuledger, signals forwarded to it, its exit status passed on.
//!
//! Signals that another process sends to gpuledger (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1/2)
//! are forwarded to the child. A SIGINT from the terminal (Ctrl-C) already reaches a child that
//! shares gpuledger's process group, so it is not sent twice; a child in its own process group
//! (`guard`, which must be able to signal the whole job) gets it forwarded too.

use rustix::event::{PollFd, PollFlags, Timespec};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::iterator::SignalsInfo;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A running child with signal forwarding.
#[derive(Debug)]
pub struct Job {
    child: Child,
    handle: signal_hook::iterator::Handle,
    /// Readable once the child has ended (before it is reaped); `None` where the kernel has no
    /// pidfds (before 5.3).
    pidfd: Option<Arc<OwnedFd>>,
    /// The last signal forwarded and not yet taken ([`Job::take_signal`]); 0 for none.
    received: Arc<AtomicI32>,
}

/// How a child process exited: its code or the signal that killed it (what `record` and `guard`
/// exit with; `timeline::JobEnd` is how a recorded job ended, read back from the recording).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// Signal, when it was killed by one.
    pub signal: Option<i32>,
}

impl Exit {
    fn from_status(s: ExitStatus) -> Exit {
        Exit {
            code: s.code(),
            signal: s.signal(),
        }
    }

    /// The status to exit with: the child's code, or 128 + signal as a shell reports it.
    pub fn exit_code(&self) -> u8 {
        match (self.code, self.signal) {
            (Some(c), _) => c.clamp(0, 255) as u8,
            (None, Some(s)) => (128 + s).clamp(0, 255) as u8,
            _ => 1,
        }
    }
}

impl Job {
    /// Starts `argv` in gpuledger's process group and begins forwarding signals to it.
    pub fn spawn(argv: &[String]) -> io::Result<Job> {
        Job::spawn_with(argv, &[], None, false, false)
    }

    /// Like [`Job::spawn`], with extra environment variables for the child.
    pub fn spawn_env(argv: &[String], env: &[(String, String)]) -> io::Result<Job> {
        Job::spawn_with(argv, env, None, false, false)
    }

    /// Like [`Job::spawn_env`], with the child's stdout and stderr on pipes that the caller reads
    /// (and must keep reading, or the child blocks on a full pipe), and `inherit` left open in
    /// the child under its own number.
    pub fn spawn_piped(
        argv: &[String],
        env: &[(String, String)],
        inherit: Option<BorrowedFd<'_>>,
    ) -> io::Result<(Job, Option<ChildStdout>, Option<ChildStderr>)> {
        let mut job = Job::spawn_with(argv, env, inherit, false, true)?;
        let (out, err) = (job.child.stdout.take(), job.child.stderr.take());
        Ok((job, out, err))
    }

    /// Starts `argv` as the leader of a new process group (its pgid is its pid), with extra
    /// environment variables and `inherit` left open in the child under its own number.
    pub fn spawn_group(
        argv: &[String],
        env: &[(String, String)],
        inherit: Option<BorrowedFd<'_>>,
    ) -> io::Result<Job> {
        Job::spawn_with(argv, env, inherit, true, false)
    }

    fn spawn_with(
        argv: &[String],
        env: &[(String, String)],
        inherit: Option<BorrowedFd<'_>>,
        own_group: bool,
        piped: bool,
    ) -> io::Result<Job> {
        let (prog, args) = argv.split_first().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "no command given after --")
        })?;
        let mut cmd = Command::new(prog);
        cmd.args(args)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        if own_group {
            cmd.process_group(0);
        }
        if piped {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        if let Some(fd) = inherit {
            let raw = fd.as_raw_fd();
            // SAFETY: between fork and exec the closure only clears the descriptor's close-on-exec
            // flag with one fcntl system call, which is async-signal-safe and allocates nothing;
            // the descriptor stays open in the parent (borrowed) until the child has started.
            unsafe {
                cmd.pre_exec(move || {
                    let fd = BorrowedFd::borrow_raw(raw);
                    rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?;
                    Ok(())
                });
            }
        }
        let child = cmd
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot start {prog:?}: {e}")))?;
        // A pidfd taken while the child cannot have been reaped: forwarding after it exits and
        // its pid is reused reaches nobody.
        let pidfd = rustix::process::Pid::from_raw(child.id() as i32)
            .and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok())
            .map(Arc::new);
        let forward = pidfd.clone();
        let received = Arc::new(AtomicI32::new(0));
        let noted = received.clone();
        let mut signals =
            SignalsInfo::<WithOrigin>::new([SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2])?;
        let handle = signals.handle();
        std::thread::spawn(move || {
            for info in signals.forever() {
                let from_terminal = !own_group && info.signal == SIGINT && info.process.is_none();
                if from_terminal {
                    continue;
                }
                if let (Some(fd), Ok(sig)) = (&forward, signal_from_raw(info.signal)) {
                    let _ = rustix::process::pidfd_send_signal(fd, sig);
                    noted.store(info.signal, Ordering::SeqCst);
                }
            }
        });
        Ok(Job {
            child,
            handle,
            pidfd,
            received,
        })
    }

    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The signal last forwarded to the child since the previous call, if any: a caller that
    /// holds the rest of the job (guard) passes it on to every process of it.
    pub fn take_signal(&self) -> Option<rustix::process::Signal> {
        signal_from_raw(self.received.swap(0, Ordering::SeqCst)).ok()
    }

    /// Returns the end of the job if it has ended.
    pub fn try_wait(&mut self) -> io::Result<Option<Exit>> {
        Ok(self.child.try_wait()?.map(Exit::from_status))
    }

    /// Sleeps for `pause`, or less when the job ends first (its exit is left for
    /// [`Job::try_wait`] to collect): a loop that samples every interval sees the end at once.
    pub fn pause_until_end(&self, pause: Duration) {
        let Some(fd) = &self.pidfd else {
            return std::thread::sleep(pause);
        };
        let mut fds = [PollFd::new(fd.as_ref(), PollFlags::IN)];
        let timeout = Timespec::try_from(pause).unwrap_or(Timespec {
            tv_sec: i64::MAX,
            tv_nsec: 0,
        });
        // EINTR (a forwarded signal) ends the pause early, which costs one extra sample.
        if rustix::event::poll(&mut fds, Some(&timeout)).is_err() {
            std::thread::sleep(pause);
        }
    }

    /// Waits for the job to end.
    pub fn wait(&mut self) -> io::Result<Exit> {
        self.child.wait().map(Exit::from_status)
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        self.handle.close();
    }
}

fn signal_from_raw(sig: i32) -> Result<rustix::process::Signal, ()> {
    use rustix::process::Signal;
    Ok(match sig {
        SIGTERM => Signal::TERM,
        SIGINT => Signal::INT,
        SIGHUP => Signal::HUP,
        SIGQUIT => Signal::QUIT,
        SIGUSR1 => Signal::USR1,
        SIGUSR2 => Signal::USR2,
        _ => return Err(()),
    })
}
