//! The table of open exporter connections, in accept order, with whether each has a request in
//! flight: what lets the accept loop close the oldest idle connection first.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;
use tokio::time::Instant;

#[derive(Debug)]
struct Entry {
    in_flight: usize,
    idle_since: Instant,
    close: Arc<Notify>,
}

/// Open connections keyed by accept order (lower = older).
#[derive(Debug, Default)]
pub(crate) struct ConnTable {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    conns: BTreeMap<u64, Entry>,
}

impl ConnTable {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock leaves only counters behind; keep serving.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Connections open now.
    pub(crate) fn len(&self) -> usize {
        self.lock().conns.len()
    }

    /// Registers a new connection, idle from now.
    pub(crate) fn insert(self: &Arc<Self>) -> Tracked {
        let mut inner = self.lock();
        let id = inner.next;
        inner.next += 1;
        let close = Arc::new(Notify::new());
        inner.conns.insert(
            id,
            Entry {
                in_flight: 0,
                idle_since: Instant::now(),
                close: close.clone(),
            },
        );
        Tracked(Arc::new(TrackedInner {
            id,
            table: self.clone(),
            close,
        }))
    }

    /// Tells the oldest connection with no request in flight to close and forgets it at once,
    /// so the slot is free for the caller. False when every connection is busy.
    pub(crate) fn close_oldest_idle(&self) -> bool {
        let mut inner = self.lock();
        let Some(id) = inner
            .conns
            .iter()
            .find(|(_, e)| e.in_flight == 0)
            .map(|(id, _)| *id)
        else {
            return false;
        };
        if let Some(e) = inner.conns.remove(&id) {
            // notify_one keeps a permit if the connection task is not waiting right now.
            e.close.notify_one();
        }
        true
    }

    fn update(&self, id: u64, f: impl FnOnce(&mut Entry)) {
        if let Some(e) = self.lock().conns.get_mut(&id) {
            f(e);
        }
    }
}

#[derive(Debug)]
struct TrackedInner {
    id: u64,
    table: Arc<ConnTable>,
    close: Arc<Notify>,
}

impl Drop for TrackedInner {
    fn drop(&mut self) {
        self.table.lock().conns.remove(&self.id);
    }
}

/// One connection's handle in the table; the entry goes when the last clone is dropped.
#[derive(Debug, Clone)]
pub(crate) struct Tracked(Arc<TrackedInner>);

impl Tracked {
    /// Marks a request in flight until the returned guard is dropped.
    pub(crate) fn begin_request(&self) -> Busy {
        self.0.table.update(self.0.id, |e| e.in_flight += 1);
        Busy(self.clone())
    }

    /// Since when the connection has had no request in flight; None while one is.
    pub(crate) fn idle_since(&self) -> Option<Instant> {
        let inner = self.0.table.lock();
        let e = inner.conns.get(&self.0.id)?;
        (e.in_flight == 0).then_some(e.idle_since)
    }

    /// Resolves when the table asks this connection to close.
    pub(crate) async fn closed(&self) {
        self.0.close.notified().await;
    }
}

/// A request in flight on a tracked connection.
pub(crate) struct Busy(Tracked);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0 .0.table.update(self.0 .0.id, |e| {
            e.in_flight = e.in_flight.saturating_sub(1);
            e.idle_since = Instant::now();
        });
    }
}
