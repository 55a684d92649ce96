//! Starting to trace a command (`record`, `guard`): the socket bound, the environment the job
//! gets, and whether the library also goes into the job's `LD_PRELOAD` as the Level Zero
//! interposer; and, for a caller that keeps no recording, the calls turned into what the
//! ledger needs ([`Registrations`]).

use super::Listener;
use crate::recording::trace_ze::{self, ZeOff};
use crate::recording::Resolver;
use std::collections::BTreeMap;
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

    /// Takes the calls received since the last call; the registered bytes still live, per pid.
    pub fn live(&mut self) -> BTreeMap<u32, u64> {
        let (mut events, _lost) = self.started.listener.take();
        for e in &mut events {
            self.resolver.resolve(e);
        }
        self.resolver.registered_by_pid()
    }
}
