//! Kernel log evidence: page-allocation failures, the OOM killer, and the GPU drivers' own lines.
//!
//! ref: Documentation/ABI/testing/dev-kmsg. Each read of `/dev/kmsg` returns one record
//! `prio,seq,usec,flags[,…];message` followed by optional continuation lines (` KEY=value`).
//! gpuledger opens it non-blocking, seeks to the end when a recording starts, and reads the new
//! records every sample. Where /dev/kmsg cannot be read, `journalctl -k` over the recording's
//! window is the fallback.
//!
//! A captured or simulated root keeps its kernel log as the regular file `ROOT/dev/kmsg`
//! ([`crate::layout::KMSG`]): the same records, one per line, continuation lines
//! (` KEY=value`) after their record. [`KernelLog`] tails either kind of root; for a captured one
//! it reads that file through [`Root`] and never opens the machine's own /dev/kmsg.

use crate::layout;
use crate::root::Root;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use thiserror::Error;

/// What a kernel line is evidence of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelEvent {
    /// `page allocation failure: order:N`.
    PageAllocationFailure,
    /// The OOM killer ran.
    OomKill,
    /// A line from a GPU driver (xe, i915, amdgpu, nouveau, nvidia, drm).
    Driver,
}

impl KernelEvent {
    /// snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            KernelEvent::PageAllocationFailure => "page_allocation_failure",
            KernelEvent::OomKill => "oom_kill",
            KernelEvent::Driver => "driver",
        }
    }
}

/// Where a GPU driver's own lines start (`xe 0000:03:00.0: …`, `[drm] …`, `NVRM: …`).
const DRIVER_PREFIXES: [&str; 9] = [
    "xe ",
    "i915 ",
    "amdgpu",
    "[drm",
    "drm:",
    "nouveau",
    "NVRM:",
    "nvidia-uvm",
    "nvidia ",
];

/// Classifies one kernel record: only the kernel's own records, by the shapes anchored where the
/// kernel prints them ([`super::kernel_lines`]), so no task or file name makes evidence.
pub fn classify(r: &KmsgRecord) -> Option<KernelEvent> {
    use super::kernel_lines::{leading_comm, shapes, trusted};
    let s = shapes()?;
    if !trusted(r) {
        return None;
    }
    let m = r.message.as_str();
    if leading_comm(&s.alloc, m).is_some() {
        return Some(KernelEvent::PageAllocationFailure);
    }
    if leading_comm(&s.oom_header, m).is_some()
        || s.oom_line.is_match(m)
        || s.oom_summary.is_match(m)
    {
        return Some(KernelEvent::OomKill);
    }
    DRIVER_PREFIXES
        .iter()
        .any(|d| m.starts_with(d))
        .then_some(KernelEvent::Driver)
}

/// One `/dev/kmsg` record: (sequence number, µs since boot, message).
pub fn parse_record(record: &str) -> Option<(u64, u64, String)> {
    let (head, body) = record.split_once(';')?;
    let mut f = head.split(',');
    let _prio = f.next()?;
    let seq = f.next()?.parse().ok()?;
    let usec = f.next()?.parse().ok()?;
    let msg = body.lines().next().unwrap_or("").to_string();
    Some((seq, usec, msg))
}

/// One kernel log record as `/dev/kmsg` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KmsgRecord {
    /// Syslog priority: facility × 8 + level (the kernel's own lines: the level, 0–7).
    pub prio: u32,
    /// Sequence number; increases by one per record, gaps mean records were lost.
    pub seq: u64,
    /// Microseconds since boot (CLOCK_MONOTONIC).
    pub usec: u64,
    /// The message, non-printable bytes escaped as `\xNN` as the kernel does.
    pub message: String,
    /// Continuation lines (` SUBSYSTEM=pci`, ` DEVICE=+pci:0000:03:00.0`), in order.
    pub dict: Vec<(String, String)>,
}

impl KmsgRecord {
    /// Parses one record (its first line and any continuation lines); `None` if malformed.
    pub fn parse(record: &str) -> Option<KmsgRecord> {
        let mut lines = record.lines();
        let (head, message) = lines.next()?.split_once(';')?;
        let mut f = head.split(',');
        let prio = f.next()?.parse().ok()?;
        let seq = f.next()?.parse().ok()?;
        let usec = f.next()?.parse().ok()?;
        let dict = lines.filter_map(dict_line).collect();
        Some(KmsgRecord {
            prio,
            seq,
            usec,
            message: message.to_string(),
            dict,
        })
    }
}

/// One record in the /dev/kmsg format, newline-terminated; continuation lines follow.
impl fmt::Display for KmsgRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{},{},{},-;{}",
            self.prio,
            self.seq,
            self.usec,
            escaped(&self.message)
        )?;
        for (k, v) in &self.dict {
            writeln!(f, " {}={}", escaped(k), escaped(v))?;
        }
        Ok(())
    }
}

/// The kernel's escaping (kernel/printk/printk.c `msg_add_ext_text`): control bytes and DEL
/// become `\xNN`, so a record never spans lines. Backslashes are left alone because messages are
/// kept in the escaped form the kernel gave them (its own `\x5c`), so printing a parsed record
/// gives back the same text.
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c < ' ' || c == '\u{7f}' {
            out.push_str(&format!("\\x{:02x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

fn dict_line(line: &str) -> Option<(String, String)> {
    let (k, v) = line.strip_prefix(' ')?.split_once('=')?;
    Some((k.to_string(), v.to_string()))
}

/// Splits a saved kernel log (records one per line, continuation lines starting with a space)
/// into records, oldest first. Malformed lines are skipped, with their continuation lines: a log
/// is evidence, not input to reject.
pub fn parse_log(text: &str) -> Vec<KmsgRecord> {
    let mut out: Vec<KmsgRecord> = Vec::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.starts_with(' ') {
            if let (Some(r), false, Some(kv)) = (out.last_mut(), skipping, dict_line(line)) {
                r.dict.push(kv);
            }
            continue;
        }
        let record = KmsgRecord::parse(line);
        skipping = record.is_none();
        out.extend(record);
    }
    out
}

/// A kernel log that could not be read from a captured root.
#[derive(Debug, Error)]
pub enum KmsgError {
    /// `ROOT/dev/kmsg` exists but is not a readable regular file within the size cap.
    #[error("cannot read the captured kernel log {path}")]
    Read {
        /// The path inside the root.
        path: &'static str,
        /// The cause.
        source: io::Error,
    },
}

/// A reader of new `/dev/kmsg` records on the live machine.
#[derive(Debug)]
pub struct Kmsg {
    file: File,
}

impl Kmsg {
    /// Opens `/dev/kmsg` positioned after the last record (None when not readable).
    pub fn open_at_end() -> Option<Kmsg> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(layout::LIVE_KMSG)
            .ok()?;
        file.seek(SeekFrom::End(0)).ok()?;
        Some(Kmsg { file })
    }

    /// Opens `/dev/kmsg` at its oldest record still in the ring buffer, non-blocking.
    pub(super) fn open_at_start() -> io::Result<Kmsg> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(layout::LIVE_KMSG)?;
        Ok(Kmsg { file })
    }

    /// The matching messages logged since the last call.
    pub fn read_new(&mut self) -> Vec<(KernelEvent, String)> {
        classified(self.read_records(usize::MAX))
    }

    /// The records present now, at most `max`; never waits for a new one (the fd is
    /// non-blocking, so the read that finds no record returns EAGAIN).
    pub(super) fn read_records(&mut self, max: usize) -> Vec<KmsgRecord> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 8192];
        let mut reads = 0usize;
        while out.len() < max && reads < max.saturating_mul(2) {
            reads += 1;
            match self.file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => out.extend(KmsgRecord::parse(&String::from_utf8_lossy(&buf[..n]))),
                // EPIPE: records were overwritten before we read them; EINVAL: a record longer
                // than the buffer. The kernel moved past either; go on with the next.
                Err(e) if matches!(e.raw_os_error(), Some(32) | Some(22)) => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => break,
            }
        }
        out
    }
}

fn classified(records: Vec<KmsgRecord>) -> Vec<(KernelEvent, String)> {
    records
        .into_iter()
        .filter_map(|r| classify(&r).map(|k| (k, r.message)))
        .collect()
}

/// Tails the captured kernel log `ROOT/dev/kmsg` of a non-live root, read whole through
/// [`Root`] on each call. The file may be replaced at any time (a `simulate --live` tree is
/// rewritten by atomic renames), so records are followed by sequence number, not by offset.
#[derive(Debug, Default)]
pub struct CapturedKmsg {
    last_seq: Option<u64>,
}

impl CapturedKmsg {
    /// A reader that has seen nothing: its first call returns every record already in the file,
    /// because a captured log is the past of that machine, not noise from before a recording.
    pub fn new() -> CapturedKmsg {
        CapturedKmsg::default()
    }

    /// Records with a sequence number above the last one returned, oldest first. A missing file
    /// is an empty log (not written yet). A log whose newest record is older than the last one
    /// returned was restarted (the tree was written anew) and is read from its start.
    pub fn read_new(&mut self, root: &Root) -> Result<Vec<KmsgRecord>, KmsgError> {
        let all = read_captured(root)?;
        let newest = all.iter().map(|r| r.seq).max();
        let after = match (self.last_seq, newest) {
            (Some(last), Some(n)) if n >= last => Some(last),
            _ => None,
        };
        let new: Vec<KmsgRecord> = all
            .into_iter()
            .filter(|r| after.is_none_or(|a| r.seq > a))
            .collect();
        if let Some(n) = newest {
            self.last_seq = Some(n);
        }
        Ok(new)
    }
}

fn read_captured(root: &Root) -> Result<Vec<KmsgRecord>, KmsgError> {
    match root.read_string(layout::KMSG) {
        Ok(text) => Ok(parse_log(&text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(KmsgError::Read {
            path: layout::KMSG,
            source,
        }),
    }
}

/// The kernel log of any root, tailed: the live `/dev/kmsg` from the moment it was opened, or a
/// captured root's `ROOT/dev/kmsg` from its first record.
#[derive(Debug)]
pub enum KernelLog {
    /// The running machine's `/dev/kmsg`.
    Live(Kmsg),
    /// A captured or simulated tree's `dev/kmsg` file.
    Captured(CapturedKmsg),
}

impl KernelLog {
    /// The log of `root`; `None` only for a live root whose /dev/kmsg cannot be opened (then
    /// `journal_since` is the fallback).
    pub fn open(root: &Root) -> Option<KernelLog> {
        if root.is_live() {
            Kmsg::open_at_end().map(KernelLog::Live)
        } else {
            Some(KernelLog::Captured(CapturedKmsg::new()))
        }
    }

    /// The evidence lines (classified messages) logged since the last call; `root` must be the
    /// root this log was opened for.
    pub fn read_new(&mut self, root: &Root) -> Result<Vec<(KernelEvent, String)>, KmsgError> {
        match self {
            KernelLog::Live(k) => Ok(k.read_new()),
            KernelLog::Captured(c) => Ok(classified(c.read_new(root)?)),
        }
    }
}

/// Every evidence record in a captured root's kernel log, oldest first, with what it is
/// evidence of (for a snapshot of a tree). A live root gives none: its log is only tailed.
pub fn kernel_evidence(root: &Root) -> Result<Vec<(KernelEvent, KmsgRecord)>, KmsgError> {
    if root.is_live() {
        return Ok(Vec::new());
    }
    Ok(read_captured(root)?
        .into_iter()
        .filter_map(|r| classify(&r).map(|k| (k, r)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any text parses without panicking into at most one record per line, and a parsed
        /// log written back in the /dev/kmsg format reads back as the same text.
        #[test]
        fn parse_log_is_total_and_printing_is_a_fixed_point(text in "(\\PC|[\n\r\t ,;=0-9])*") {
            let records = parse_log(&text);
            prop_assert!(records.len() <= text.lines().count());
            let printed: String = records.iter().map(ToString::to_string).collect();
            let again: String = parse_log(&printed).iter().map(ToString::to_string).collect();
            prop_assert_eq!(again, printed);
        }

        #[test]
        fn records_with_control_bytes_stay_one_record(
            prio in 0u32..192, seq: u64, usec: u64, message in "\\PC*", value in "\\PC*",
            cr in proptest::bool::ANY,
        ) {
            let message = if cr { format!("{message}\r\n\x1b[31m") } else { message };
            let r = KmsgRecord { prio, seq, usec, message, dict: vec![("DEVICE".into(), value)] };
            let parsed = parse_log(&r.to_string());
            prop_assert_eq!(parsed.len(), 1);
            prop_assert_eq!((parsed[0].prio, parsed[0].seq, parsed[0].usec), (prio, seq, usec));
            prop_assert_eq!(parsed[0].dict.len(), 1);
        }
    }

    #[test]
    fn classifies_recorded_dmesg() {
        let dmesg = "\
kwin_wayland: page allocation failure: order:0, mode:0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), nodemask=(null)
python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0
Out of memory: Killed process 4242 (python3) total-vm:9000000kB
xe 0000:03:00.0: [drm] GT0: Engine reset: engine_class=ccs
amdgpu 0000:c1:00.0: amdgpu: VM_L2_PROTECTION_FAULT_STATUS:0x00000000
usb 1-2: new high-speed USB device number 3 using xhci_hcd
";
        let kinds: Vec<Option<KernelEvent>> = dmesg
            .lines()
            .map(|m| {
                classify(&KmsgRecord {
                    prio: 4,
                    seq: 1,
                    usec: 1,
                    message: m.into(),
                    dict: Vec::new(),
                })
            })
            .collect();
        assert_eq!(
            kinds,
            [
                Some(KernelEvent::PageAllocationFailure),
                Some(KernelEvent::OomKill),
                Some(KernelEvent::OomKill),
                Some(KernelEvent::Driver),
                Some(KernelEvent::Driver),
                None
            ]
        );
    }

    #[test]
    fn parses_kmsg_records() {
        let r = "4,1234,5678901,-;kwin_wayland: page allocation failure: order:0\n SUBSYSTEM=mm\n";
        assert_eq!(
            parse_record(r),
            Some((
                1234,
                5678901,
                "kwin_wayland: page allocation failure: order:0".into()
            ))
        );
        assert_eq!(parse_record("garbage"), None);
    }

    #[test]
    fn saved_logs_round_trip_and_skip_garbage() {
        let text = "6,7,100,-;xe 0000:03:00.0: [drm] GT0: reset\n SUBSYSTEM=pci\n DEVICE=+pci:0000:03:00.0\n\
not a record\n ORPHAN=dropped\n4,8,200,-;python3: page allocation failure: order:0\n";
        let records = parse_log(text);
        assert_eq!(records.len(), 2);
        assert_eq!(
            records[0].dict.len(),
            2,
            "the orphaned continuation is not attached"
        );
        let printed: String = records.iter().map(|r| r.to_string()).collect();
        assert_eq!(parse_log(&printed), records);
        let hostile = KmsgRecord {
            prio: 4,
            seq: 1,
            usec: 1,
            message: "two\nlines".into(),
            dict: Vec::new(),
        };
        assert_eq!(hostile.to_string(), "4,1,1,-;two\\x0alines\n");
    }

    #[test]
    fn captured_log_is_tailed_by_sequence_number() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::open(dir.path()).unwrap();
        let mut tail = CapturedKmsg::new();
        assert!(tail.read_new(&root).unwrap().is_empty(), "no file yet");
        std::fs::create_dir_all(dir.path().join("dev")).unwrap();
        let log = |recs: &[(u64, &str)]| -> String {
            recs.iter()
                .map(|(s, m)| format!("4,{s},{s}00,-;{m}\n"))
                .collect()
        };
        let kmsg = dir.path().join("dev/kmsg");
        std::fs::write(&kmsg, log(&[(5, "a"), (6, "b")])).unwrap();
        assert_eq!(tail.read_new(&root).unwrap().len(), 2);
        std::fs::write(&kmsg, log(&[(5, "a"), (6, "b"), (7, "c")])).unwrap();
        let new = tail.read_new(&root).unwrap();
        assert_eq!(new.iter().map(|r| r.seq).collect::<Vec<_>>(), [7]);
        assert!(tail.read_new(&root).unwrap().is_empty());
        std::fs::write(&kmsg, log(&[(1, "restarted")])).unwrap();
        assert_eq!(tail.read_new(&root).unwrap()[0].message, "restarted");
        std::fs::remove_file(&kmsg).unwrap();
        std::fs::create_dir(&kmsg).unwrap();
        assert!(tail.read_new(&root).is_err(), "a directory is not a log");
    }
}
