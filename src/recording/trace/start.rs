//! Starting to trace a command (`record`, `guard`): the socket bound, the environment the job
//! gets, and whether the library also goes into the job's `LD_PRELOAD` as the Level Zero
//! interposer; and, for a caller that keeps no recording, the calls turned into what the
//! ledger needs ([`Registrations`]).

use super::Listener;
use crate::recording::trace_ze::{self, ZeOff};
use crate::recording::Resolver;
use gpuledger_trace_wire::Op;
use std::collections::BTreeMap;
use std::os::fd::BorrowedFd;
use std::path::Path;

/// A bound socket and the environment that sends a job's calls to it.
#[derive(Debug)]
pub struct Started {
    /// Reads the job's events.
    pub listener: Listener,
    /// Variables to add to the job's environment.
    pub env: Vec<(String, String)>,
    /// Whether Level Zero calls are traced too, or why not.
    pub level_zero: Result<(), ZeOff>,
}

impl Started {
    /// Binds the socket and prepares the environment for tracing with `library`.
    pub fn begin(library: &Path) -> std::io::Result<Started> {
        let listener = Listener::bind()?;
        let mut env = listener.env(library);
        let level_zero = trace_ze::level_zero_live(library);
        if level_zero.is_ok() {
            let existing = std::env::var(trace_ze::PRELOAD_ENV).ok();
            let value = trace_ze::preload_value(library, existing.as_deref());
            env.push((trace_ze::PRELOAD_ENV.to_string(), value));
        }
        Ok(Started {
            listener,
            env,
            level_zero,
        })
    }

    /// Why Level Zero is not traced, when that is worth saying: a loader is there but another
    /// tool holds its entry points (no loader at all is the common, silent case).
    pub fn level_zero_notice(&self) -> Option<&ZeOff> {
        self.level_zero
            .as_ref()
            .err()
            .filter(|why| **why != ZeOff::NoLoader)
    }
}

/// Events that never counted: lost between the job and gpuledger (the tracer's own drops, a
/// full inbox, undecodable datagrams) and sent by processes outside the job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Losses {
    /// Lost on the way.
    pub lost: u64,
    /// From processes outside the job, refused.
    pub foreign: u64,
}

impl Losses {
    /// Adds `other`'s counts.
    pub fn add(&mut self, other: Losses) {
        self.lost += other.lost;
        self.foreign += other.foreign;
    }

    /// Whether anything was lost or refused.
    pub fn any(&self) -> bool {
        self.lost > 0 || self.foreign > 0
    }
}

/// Host memory a traced job registered in place (`cuMemHostRegister`), kept current from its
/// calls without a recording: what `guard` adds to each sample's ledger.
#[derive(Debug)]
pub struct Registrations {
    started: Started,
    resolver: Resolver,
}

impl Registrations {
    /// Follows the calls arriving at `started`'s socket.
    pub fn new(started: Started) -> Registrations {
        Registrations {
            started,
            resolver: Resolver::default(),
        }
    }

    /// Takes the calls received since the last call: the registered bytes still live, per pid,
    /// and the events lost or refused since then.
    pub fn live(&mut self) -> (BTreeMap<u32, u64>, Losses) {
        let taken = self.started.listener.take();
        let mut losses = Losses {
            lost: taken.lost,
            foreign: taken.foreign,
        };
        for mut e in taken.events {
            if e.op == Op::Dropped {
                losses.lost += e.bytes;
            }
            self.resolver.resolve(&mut e);
        }
        (self.resolver.registered_by_pid(), losses)
    }

    /// The job's end of the channel, for it to inherit when it starts.
    pub fn job_end(&self) -> Option<BorrowedFd<'_>> {
        self.started.listener.job_end()
    }

    /// Closes gpuledger's copy of the job's end once the job holds its own.
    pub fn job_started(&mut self) {
        self.started.listener.job_started();
    }

    /// Whether any event of the job arrived.
    pub fn heard(&self) -> bool {
        self.started.listener.accepted() > 0
    }
}
