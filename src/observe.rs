//! The observation step every view shares: a sample becomes a ledger, and the ledger its
//! findings — the rules' (`findings::analyze`), the kernel log's and the known issues' — always
//! on the whole machine, so that a filter applied afterwards hides verdicts and never changes
//! one.

use crate::clock::{self, Clock};
use crate::findings::window::Since;
use crate::findings::{self, Finding, Thresholds};
use crate::knowledge::{Base, KnownIssues};
use crate::ledger::Ledger;
use crate::root::Root;
use crate::sampler::{SampleError, Sampler};
use crate::snapshot::Snapshot;
use crate::sources::kernel_log::{LogCache, WholeLog};
use std::sync::Arc;

/// A ledger with every finding about it.
#[derive(Debug, Clone)]
pub struct Observation {
    /// The whole machine's ledger (with the kernel log's note in its scan notes).
    pub ledger: Ledger,
    /// The findings, ranked.
    pub findings: Vec<Finding>,
}

/// How the kernel log is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelLog {
    /// Not read: findings come from the sample alone.
    Off,
    /// Read again for every observation (one-shot views).
    Fresh,
    /// Read again at most every [`crate::sources::kernel_log::REREAD`] (views that sample in a
    /// loop: the journal fallback can take seconds, a sample must not).
    Cached,
}

/// Turns samples into observations; keeps what does not change between samples (the machine's
/// known-issue facts, a cached kernel log).
#[derive(Debug)]
pub struct Observer {
    thresholds: Thresholds,
    kernel: KernelLog,
    log: LogCache,
    base: Option<Base>,
    known: Option<KnownIssues>,
    registered: std::collections::BTreeMap<u32, u64>,
    since: Since,
    clock: Arc<dyn Clock>,
    engines: crate::ledger::EngineClock,
}

impl Observer {
    /// Findings from the rules alone, with these thresholds.
    pub fn new(thresholds: Thresholds) -> Observer {
        Observer {
            thresholds,
            kernel: KernelLog::Off,
            log: LogCache::default(),
            base: None,
            known: None,
            registered: Default::default(),
            since: Since::default(),
            clock: clock::system(),
            engines: Default::default(),
        }
    }

    /// Kernel-log findings before `since` are history (info); "now" is `clock`'s on the live
    /// machine, the log's last line in a capture tree.
    pub fn window(mut self, since: Since, clock: Arc<dyn Clock>) -> Observer {
        self.since = since;
        self.clock = clock;
        self
    }

    /// Host bytes each process has registered in place (pid → bytes, from its traced calls),
    /// put into every following ledger ([`Ledger::add_registered`]): no counter shows them.
    pub fn set_registered(&mut self, registered: std::collections::BTreeMap<u32, u64>) {
        self.registered = registered;
    }

    /// Adds the kernel log's findings, read as `how` says.
    pub fn kernel_log(mut self, how: KernelLog) -> Observer {
        self.kernel = how;
        self
    }

    /// Adds the known issues of `base` that apply to the machine (its facts are read at the
    /// first observation: package versions do not change under a running view).
    pub fn known_issues(mut self, base: Base) -> Observer {
        self.base = Some(base);
        self
    }

    /// Observes the snapshot `snap` of the machine behind `root`.
    pub fn observe(&mut self, root: &Root, snap: Snapshot) -> Observation {
        if let Some(base) = self.base.take() {
            self.known = Some(KnownIssues::with_base(base, root, &snap));
        }
        let mut ledger = Ledger::from_snapshot(snap);
        ledger.add_registered(&self.registered);
        self.engines.apply(&mut ledger);
        let mut found = findings::analyze(&ledger, &self.thresholds);
        if self.kernel != KernelLog::Off {
            if self.kernel == KernelLog::Fresh {
                self.log = LogCache::default();
            }
            let log = self.log.get(root, self.clock.now());
            let now_ms = root.is_live().then(|| self.clock.wall_ms());
            let cutoff = self.since.cutoff_usec(log, now_ms);
            findings::kernel::add(log, &mut ledger, &mut found, cutoff);
        }
        if let Some(k) = &self.known {
            k.extend(&mut found);
        }
        Observation {
            ledger,
            findings: found,
        }
    }

    /// Takes the sampler's next sample and observes it.
    pub fn sample(&mut self, sampler: &mut Sampler) -> Result<Observation, SampleError> {
        let snap = sampler.sample()?;
        Ok(self.observe(sampler.root(), snap))
    }

    /// The kernel log the last observation read (empty when it reads none).
    pub fn last_kernel_log(&self) -> Option<&WholeLog> {
        (self.kernel != KernelLog::Off).then(|| self.log.last())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Kind;

    /// A tree whose kernel log holds one OOM kill, and an empty sample of it.
    fn tree_with_oom() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("dev")).unwrap();
        let line = "6,1,5,-;Out of memory: Killed process 7 (x) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB\n";
        std::fs::write(dir.path().join("dev/kmsg"), line).unwrap();
        let root = Root::open(dir.path()).unwrap();
        (dir, root)
    }

    #[test]
    fn the_kernel_log_is_read_only_when_asked() {
        let (_dir, root) = tree_with_oom();
        let mut off = Observer::new(Thresholds::default());
        let seen = off.observe(&root, Snapshot::default());
        assert!(seen.findings.iter().all(|f| f.kind != Kind::KernelOomKill));
        assert!(off.last_kernel_log().is_none());
        for how in [KernelLog::Fresh, KernelLog::Cached] {
            let mut on = Observer::new(Thresholds::default()).kernel_log(how);
            let seen = on.observe(&root, Snapshot::default());
            let kinds: Vec<Kind> = seen.findings.iter().map(|f| f.kind).collect();
            assert_eq!(kinds, [Kind::KernelOomKill], "{how:?}");
            assert_eq!(on.last_kernel_log().map(|l| l.records.len()), Some(1));
        }
    }

    #[test]
    fn the_snapshot_moves_into_the_ledger() {
        let (_dir, root) = tree_with_oom();
        let snap = Snapshot {
            time_ms: 42,
            root: "the tree".into(),
            ..Snapshot::default()
        };
        let seen = Observer::new(Thresholds::default()).observe(&root, snap);
        assert_eq!(
            (seen.ledger.time_ms, seen.ledger.root.as_str()),
            (42, "the tree")
        );
    }
}
