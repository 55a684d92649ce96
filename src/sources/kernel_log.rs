//! The whole kernel log of a root, read once, for the views that show post-mortem findings
//! (snapshot, `top`, `serve`, `doctor`, `report`).
//!
//! Live: `/dev/kmsg` opened non-blocking at its oldest record, every record present read, never
//! waiting for a new one (ref: Documentation/ABI/testing/dev-kmsg). Where it cannot be opened
//! (`kernel.dmesg_restrict`, no CAP_SYSLOG, a container): `journalctl -k -b -o json` with a time
//! and output budget (ref: systemd.journal-fields(7), `_SOURCE_MONOTONIC_TIMESTAMP`). A captured
//! or simulated tree: its `dev/kmsg` file through [`Root`]. Only the evidence records are kept
//! ([`evidence`]): the classified lines and the task line and stack after each page-allocation
//! failure, so neither memory nor a capture holds the rest of the log.
//!
//! The kernel log's clock is µs since boot; `btime` of `proc/stat` (ref: Documentation/
//! filesystems/proc.rst, "btime") gives the boot's wall-clock time, for a tree when it kept one.

use super::kmsg::{classify, parse_log, KernelEvent, Kmsg, KmsgRecord};
use crate::layout;
use crate::root::Root;
use serde::{Deserialize, Serialize};
use std::io::{self, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Records read from a live log at most (the ring buffer rarely holds more than ~20 k).
const MAX_RECORDS: usize = 200_000;
/// Lines asked of journalctl: the newest of this boot.
const JOURNAL_LINES: &str = "50000";
/// Bytes of journalctl output read at most.
const JOURNAL_BYTES: u64 = 64 << 20;
/// Time journalctl may take before it is killed.
const JOURNAL_TIME: Duration = Duration::from_secs(5);
/// Where journalctl is looked for (fixed paths, not `$PATH`).
const JOURNALCTL: [&str; 2] = ["/usr/bin/journalctl", "/bin/journalctl"];
/// Records after a page-allocation failure that can hold its task line and stack.
const FAILURE_TAIL: usize = 48;

/// Where a kernel log came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogOrigin {
    /// The running machine's `/dev/kmsg`.
    DevKmsg,
    /// `journalctl -k` of the current boot.
    Journal,
    /// A captured or simulated tree's `dev/kmsg` file.
    Tree,
}

impl LogOrigin {
    /// How the findings name their evidence.
    pub fn as_str(self) -> &'static str {
        match self {
            LogOrigin::DevKmsg => "kernel log (/dev/kmsg)",
            LogOrigin::Journal => "kernel log (journalctl -k)",
            LogOrigin::Tree => "kernel log (dev/kmsg of the tree)",
        }
    }
}

/// The evidence records of a root's kernel log, as far back as it goes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WholeLog {
    /// Evidence records, oldest first.
    pub records: Vec<KmsgRecord>,
    /// Where they came from; `None` when no log could be read.
    pub origin: Option<LogOrigin>,
    /// Why the log could not be read, said once in the views' notes.
    pub unreadable: Option<String>,
    /// Wall-clock time of boot, seconds since the epoch, where known.
    pub boot_s: Option<u64>,
}

impl WholeLog {
    /// Reads the kernel log of `root`: never blocks longer than the journal's time budget.
    pub fn read(root: &Root) -> WholeLog {
        let boot_s = boot_time_s(root);
        let (records, origin, unreadable) = if root.is_live() {
            read_live()
        } else {
            // A tree that captured no `dev/kmsg` has no log: not an empty one.
            match read_tree(root) {
                Ok(Some(r)) => (r, Some(LogOrigin::Tree), None),
                Ok(None) => (Vec::new(), None, None),
                Err(e) => (Vec::new(), None, Some(e)),
            }
        };
        WholeLog {
            records,
            origin,
            unreadable,
            boot_s,
        }
    }
}

/// How old a [`LogCache`]'s log may be before it is read again.
pub const REREAD: Duration = Duration::from_secs(15);

/// A kernel log read again at most every [`REREAD`], for the views that sample in a loop
/// (`top`, `serve`): the journal fallback can take seconds, a sample must not. The live
/// `/dev/kmsg` is read whole once and then tailed: its fd stays open after the last record read,
/// so a later read returns only the records logged since (ref: Documentation/ABI/testing/
/// dev-kmsg, "every read() returns the next record"), never the whole ring again.
#[derive(Debug, Default)]
pub struct LogCache {
    log: WholeLog,
    read_at: Option<Instant>,
    tail: Option<Tail>,
}

/// The open live `/dev/kmsg` of a [`LogCache`], and the evidence filter's state between reads.
#[derive(Debug)]
struct Tail {
    kmsg: Kmsg,
    filter: Evidence,
}

impl LogCache {
    /// The log of `root` as of `now`, or of the last read when that is younger than [`REREAD`].
    pub fn get(&mut self, root: &Root, now: Instant) -> &WholeLog {
        let fresh = self
            .read_at
            .is_some_and(|t| now.saturating_duration_since(t) < REREAD);
        if fresh {
            return &self.log;
        }
        self.read_at = Some(now);
        match &mut self.tail {
            Some(t) => {
                let new = t.kmsg.read_records(MAX_RECORDS);
                self.log.records.extend(t.filter.keep(new));
                let over = self.log.records.len().saturating_sub(MAX_RECORDS);
                self.log.records.drain(..over);
            }
            None if root.is_live() => match Kmsg::open_at_start() {
                Ok(mut kmsg) => {
                    let mut filter = Evidence::default();
                    self.log = WholeLog {
                        records: filter.keep(kmsg.read_records(MAX_RECORDS)),
                        origin: Some(LogOrigin::DevKmsg),
                        unreadable: None,
                        boot_s: boot_time_s(root),
                    };
                    self.tail = Some(Tail { kmsg, filter });
                }
                Err(_) => self.log = WholeLog::read(root),
            },
            None => self.log = WholeLog::read(root),
        }
        &self.log
    }

    /// The log as last read (empty before the first [`LogCache::get`]).
    pub fn last(&self) -> &WholeLog {
        &self.log
    }
}

fn read_live() -> (Vec<KmsgRecord>, Option<LogOrigin>, Option<String>) {
    let kmsg_error = match Kmsg::open_at_start() {
        Ok(mut k) => {
            let records = evidence(k.read_records(MAX_RECORDS));
            return (records, Some(LogOrigin::DevKmsg), None);
        }
        Err(e) => e,
    };
    match read_journal() {
        Ok(records) => (evidence(records), Some(LogOrigin::Journal), None),
        Err(j) => (
            Vec::new(),
            None,
            Some(format!(
                "{}: {kmsg_error}; journalctl -k: {j}",
                layout::LIVE_KMSG
            )),
        ),
    }
}

fn read_tree(root: &Root) -> Result<Option<Vec<KmsgRecord>>, String> {
    match root.read_string(layout::KMSG) {
        Ok(text) => Ok(Some(evidence(parse_log(&text)))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", layout::KMSG)),
    }
}

/// The records findings rest on: every classified record, and after a page-allocation failure
/// the records up to its `Mem-Info:` (the failing task's `CPU: … PID: … Comm: …` line and its
/// stack), at most [`FAILURE_TAIL`] of them.
pub fn evidence(records: Vec<KmsgRecord>) -> Vec<KmsgRecord> {
    Evidence::default().keep(records)
}

/// The filter of [`evidence`], for a log read in pieces: how many records after the last
/// page-allocation failure are still its task line and stack.
#[derive(Debug, Default)]
struct Evidence {
    tail: usize,
}

impl Evidence {
    /// The evidence among `records`, which follow the records this filter saw before.
    fn keep(&mut self, records: Vec<KmsgRecord>) -> Vec<KmsgRecord> {
        let mut out = Vec::new();
        for r in records {
            let kind = classify(&r);
            if kind == Some(KernelEvent::PageAllocationFailure) {
                self.tail = FAILURE_TAIL;
                out.push(r);
            } else if kind.is_some() {
                out.push(r);
            } else if self.tail > 0 {
                self.tail = if r.message.starts_with("Mem-Info:") {
                    0
                } else {
                    self.tail - 1
                };
                if self.tail > 0 {
                    out.push(r);
                }
            }
        }
        out
    }
}

/// `btime` of the root's `proc/stat`: the boot's wall-clock time in seconds since the epoch.
pub fn boot_time_s(root: &Root) -> Option<u64> {
    let text = root.read_string(layout::PROC_STAT).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// `journalctl -k -b -o json`, the newest lines of this boot, within the time and byte budget.
fn read_journal() -> Result<Vec<KmsgRecord>, String> {
    run_journal(&["-b", "-n", JOURNAL_LINES])
}

/// The kernel's journal lines since `since_unix_s` with what each is evidence of (the fallback
/// where /dev/kmsg is closed), within the same budgets; none when journalctl cannot run.
pub fn journal_since(since_unix_s: u64) -> Vec<(KernelEvent, String)> {
    let since = format!("--since=@{since_unix_s}");
    run_journal(&[since.as_str()])
        .unwrap_or_default()
        .into_iter()
        .filter_map(|r| classify(&r).map(|k| (k, r.message)))
        .collect()
}

/// `journalctl -k --no-pager -q -o json EXTRA…` from a fixed path (never `$PATH`), killed past
/// its time budget and read up to its byte budget.
fn run_journal(extra: &[&str]) -> Result<Vec<KmsgRecord>, String> {
    let exe = JOURNALCTL
        .iter()
        .find(|p| std::path::Path::new(p).is_file())
        .ok_or("not installed")?;
    let mut child = Command::new(exe)
        .args(["-k", "--no-pager", "-q", "-o", "json"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let stdout = child.stdout.take().ok_or("no output")?;
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let read = stdout.take(JOURNAL_BYTES).read_to_end(&mut buf);
        read.map(|_| buf)
    });
    let deadline = Instant::now() + JOURNAL_TIME;
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(s) => break Some(s),
            None if Instant::now() >= deadline => break None,
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    if status.is_none() {
        // Over the budget: stop it; what it printed so far is still used.
        let _ = child.kill();
        let _ = child.wait();
    }
    let out = reader
        .join()
        .map_err(|_| "reader failed")?
        .map_err(|e| e.to_string())?;
    match status {
        Some(s) if !s.success() && out.is_empty() => Err(format!("exited with {s}")),
        _ => Ok(journal_records(&String::from_utf8_lossy(&out))),
    }
}

/// Records from journalctl's JSON lines: MESSAGE (a string, or bytes when not UTF-8), PRIORITY
/// and SYSLOG_FACILITY (the record's priority is facility × 8 + level, as /dev/kmsg gives it),
/// and the kernel's own timestamp `_SOURCE_MONOTONIC_TIMESTAMP` (µs since boot).
pub fn journal_records(text: &str) -> Vec<KmsgRecord> {
    let field = |v: &serde_json::Value, k: &str| -> Option<u64> {
        v.get(k)
            .and_then(|x| x.as_str())
            .and_then(|s| s.parse().ok())
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .enumerate()
        .filter_map(|(i, v)| {
            let message = match v.get("MESSAGE")? {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Array(bytes) => {
                    let b: Vec<u8> = bytes
                        .iter()
                        .filter_map(|x| x.as_u64().and_then(|n| u8::try_from(n).ok()))
                        .collect();
                    String::from_utf8_lossy(&b).into_owned()
                }
                _ => return None,
            };
            let usec = field(&v, "_SOURCE_MONOTONIC_TIMESTAMP")
                .or_else(|| field(&v, "__MONOTONIC_TIMESTAMP"))?;
            Some(KmsgRecord {
                prio: (field(&v, "SYSLOG_FACILITY").unwrap_or(0) as u32)
                    .saturating_mul(8)
                    .saturating_add(field(&v, "PRIORITY").map_or(6, |p| p as u32 & 7)),
                seq: i as u64,
                usec,
                message,
                dict: Vec::new(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any journal output parses without panicking, into at most one record per line, each
        /// with the message it carried.
        #[test]
        fn journal_parsing_is_total(lines in proptest::collection::vec("\\PC{0,80}", 0..10), msg in "\\PC{0,40}", usec: u64) {
            let mut text = lines.join("\n");
            let record = serde_json::json!({"MESSAGE": msg, "_SOURCE_MONOTONIC_TIMESTAMP": usec.to_string()});
            text.push('\n');
            text.push_str(&record.to_string());
            let records = journal_records(&text);
            prop_assert!(records.len() <= text.lines().count());
            let last = records.last().unwrap();
            prop_assert_eq!((&last.message, last.usec), (&msg, usec));
        }
    }

    fn rec(seq: u64, message: &str) -> KmsgRecord {
        KmsgRecord {
            prio: 4,
            seq,
            usec: seq * 10,
            message: message.into(),
            dict: Vec::new(),
        }
    }

    #[test]
    fn evidence_keeps_failures_with_their_task_and_drops_the_rest() {
        let log = vec![
            rec(1, "usb 1-2: new high-speed USB device"),
            rec(
                2,
                "python3: page allocation failure: order:0, mode:0x100dc2(GFP_HIGHUSER)",
            ),
            rec(
                3,
                "CPU: 0 UID: 1000 PID: 4001 Comm: python3 Not tainted 7.1.3 #1",
            ),
            rec(4, " ttm_pool_alloc+0x2bd/0x690 [ttm]"),
            rec(5, "Mem-Info:"),
            rec(6, "active_anon:0 inactive_anon:0"),
            rec(7, "Out of memory: Killed process 7 (x) total-vm:1kB"),
        ];
        let kept: Vec<u64> = evidence(log).iter().map(|r| r.seq).collect();
        assert_eq!(kept, [2, 3, 4, 7]);
    }

    #[test]
    fn evidence_read_in_pieces_is_the_evidence_of_the_whole() {
        let log: Vec<KmsgRecord> = [
            "python3: page allocation failure: order:0, mode:0x100dc2(GFP_HIGHUSER)",
            "CPU: 0 UID: 1000 PID: 4001 Comm: python3 Not tainted 7.1.3 #1",
            " ttm_pool_alloc+0x2bd/0x690 [ttm]",
            "Mem-Info:",
            "usb 1-2: new high-speed USB device",
            "Out of memory: Killed process 7 (x) total-vm:1kB",
        ]
        .iter()
        .enumerate()
        .map(|(i, m)| rec(i as u64, m))
        .collect();
        let whole = evidence(log.clone());
        for cut in 0..=log.len() {
            let mut filter = Evidence::default();
            let mut pieces = filter.keep(log[..cut].to_vec());
            pieces.extend(filter.keep(log[cut..].to_vec()));
            assert_eq!(pieces, whole, "cut after {cut}");
        }
    }

    #[test]
    fn journal_json_lines_become_records() {
        let text = r#"{"MESSAGE":"NVRM: Xid (PCI:0000:0a:00): 31, pid=13332","PRIORITY":"4","_SOURCE_MONOTONIC_TIMESTAMP":"14328198504"}
not json
{"MESSAGE":[120,101,32,255],"PRIORITY":"3","__MONOTONIC_TIMESTAMP":"5"}
{"PRIORITY":"3"}
"#;
        let r = journal_records(text);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].prio, r[0].usec), (4, 14_328_198_504));
        assert_eq!(r[1].message, "xe \u{fffd}");
    }

    #[test]
    fn boot_time_comes_from_proc_stat() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(dir.path().join("proc/stat"), "cpu 1 2\nbtime 1764780000\n").unwrap();
        let root = Root::open(dir.path()).unwrap();
        assert_eq!(boot_time_s(&root), Some(1_764_780_000));
        let log = WholeLog::read(&root);
        assert_eq!(
            log.origin, None,
            "no dev/kmsg in the tree: no log, not an empty one"
        );
        assert!(log.records.is_empty() && log.unreadable.is_none());
        std::fs::create_dir_all(dir.path().join("dev")).unwrap();
        std::fs::write(dir.path().join("dev/kmsg"), "").unwrap();
        let log = WholeLog::read(&Root::open(dir.path()).unwrap());
        assert_eq!(log.origin, Some(LogOrigin::Tree));
        assert!(log.records.is_empty() && log.unreadable.is_none());
    }

    #[test]
    fn the_cache_reads_again_only_when_old() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("dev")).unwrap();
        let root = Root::open(dir.path()).unwrap();
        let mut cache = LogCache::default();
        let t0 = Instant::now();
        assert!(cache.get(&root, t0).records.is_empty());
        let line = "6,1,5,-;Out of memory: Killed process 7 (x) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB\n";
        std::fs::write(dir.path().join("dev/kmsg"), line).unwrap();
        assert!(
            cache.get(&root, t0 + REREAD / 2).records.is_empty(),
            "cached"
        );
        assert_eq!(cache.get(&root, t0 + REREAD).records.len(), 1, "read again");
    }

    #[test]
    fn an_unreadable_tree_log_says_why() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("dev/kmsg")).unwrap();
        let root = Root::open(dir.path()).unwrap();
        let log = WholeLog::read(&root);
        assert!(log.unreadable.is_some());
    }
}
