//! Kernel log evidence: page-allocation failures, the OOM killer, and the GPU drivers' own lines.
//!
//! ref: Documentation/ABI/testing/dev-kmsg. Each read of `/dev/kmsg` returns one record
//! `prio,seq,usec,flags[,…];message` followed by optional continuation lines (` KEY=value`).
//! gpuledger opens it non-blocking, seeks to the end when a recording starts, and reads the new
//! records every sample. Where /dev/kmsg cannot be read, `journalctl -k` over the recording's
//! window is the fallback.

use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;

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

/// Classifies one kernel message.
pub fn classify(msg: &str) -> Option<KernelEvent> {
    if msg.contains("page allocation failure: order:") {
        return Some(KernelEvent::PageAllocationFailure);
    }
    if msg.contains("invoked oom-killer")
        || msg.contains("Out of memory: Killed process")
        || msg.contains("oom-kill:")
    {
        return Some(KernelEvent::OomKill);
    }
    let driver = [
        "xe ",
        "i915 ",
        "amdgpu",
        "[drm",
        "drm:",
        "nouveau",
        "NVRM:",
        "nvidia-uvm",
    ];
    driver
        .iter()
        .any(|d| msg.contains(d))
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

/// A reader of new `/dev/kmsg` records.
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
            .open("/dev/kmsg")
            .ok()?;
        file.seek(SeekFrom::End(0)).ok()?;
        Some(Kmsg { file })
    }

    /// The matching messages logged since the last call.
    pub fn read_new(&mut self) -> Vec<(KernelEvent, String)> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 8192];
        loop {
            match self.file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let rec = String::from_utf8_lossy(&buf[..n]);
                    if let Some((_, _, msg)) = parse_record(&rec) {
                        if let Some(kind) = classify(&msg) {
                            out.push((kind, msg));
                        }
                    }
                }
                // EPIPE: records were overwritten before we read them; go on with the next.
                Err(e) if e.raw_os_error() == Some(32) => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => break,
            }
        }
        out
    }
}

/// `journalctl -k` lines since `since_unix_s`, classified (fallback where /dev/kmsg is closed).
pub fn journal_since(since_unix_s: u64) -> Vec<(KernelEvent, String)> {
    let Ok(out) = std::process::Command::new("journalctl")
        .args([
            "-k",
            "--no-pager",
            "-o",
            "cat",
            &format!("--since=@{since_unix_s}"),
        ])
        .output()
    else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| classify(l).map(|k| (k, l.to_string())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let kinds: Vec<Option<KernelEvent>> = dmesg.lines().map(classify).collect();
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
}
