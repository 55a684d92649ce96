//! Writes a [`SimState`] as a capture tree; a [`LiveWriter`] rewrites it in place as time passes.

use super::{SimProcess, SimState};
use crate::clock::Clock;
use crate::layout;
use crate::tree_writer::{ProcEntry, TreeWriter};
use std::collections::BTreeSet;
use std::io;

/// Rewrites a tree as a simulation advances; processes that left are removed.
#[derive(Debug)]
pub struct LiveWriter {
    w: TreeWriter,
    written: BTreeSet<u32>,
    devices_done: bool,
    /// Kernel records and job end as last written, so unchanged files are not rewritten.
    kmsg_written: Option<usize>,
    job_ended: Option<bool>,
}

impl LiveWriter {
    /// Starts a tree with its fixed files (version, os-release, manifest).
    pub fn new(w: TreeWriter, scenario: &str) -> io::Result<LiveWriter> {
        w.file(
            layout::VERSION,
            "Linux version 7.1.3-gpuledger-sim (simulated) #1 SMP\n",
        )?;
        w.file(
            layout::OS_RELEASE,
            "NAME=\"gpuledger simulation\"\nID=gpuledger-sim\n",
        )?;
        w.manifest(&serde_json::json!({
            "schema": "gpuledger.capture/1",
            "gpuledger_version": env!("CARGO_PKG_VERSION"),
            "simulated": scenario,
            "page_size": 4096,
        }))?;
        Ok(LiveWriter {
            w,
            written: BTreeSet::new(),
            devices_done: false,
            kmsg_written: None,
            job_ended: None,
        })
    }

    /// Writes `state`, replacing each file atomically.
    pub fn write(&mut self, state: &SimState) -> io::Result<()> {
        if !self.devices_done {
            for d in &state.devices {
                self.w.device(d)?;
            }
            // The boot time that dates the kernel log: the simulated clock stands at `t_s` now.
            let now_s = crate::clock::SystemClock.wall_ms() / 1000;
            let up_s = super::death::boot_usec(state.t_s) / 1_000_000;
            let btime = format!("btime {}\n", now_s.saturating_sub(up_s));
            self.w.file(layout::PROC_STAT, btime)?;
            self.devices_done = true;
        }
        let now: BTreeSet<u32> = state.processes.iter().map(|p| p.pid).collect();
        for &gone in self.written.difference(&now) {
            self.w.remove_process(gone)?;
        }
        for p in &state.processes {
            self.process(p)?;
        }
        self.written = now;
        self.w.file(layout::VMSTAT, &state.vmstat)?;
        self.w.file(layout::MEMINFO, &state.meminfo)?;
        if !state.nvml.is_empty() {
            let nvml = serde_json::to_string_pretty(&state.nvml).map_err(io::Error::other)?;
            self.w.file(layout::NVML, nvml + "\n")?;
        }
        let truth = serde_json::to_string_pretty(&state.truth).map_err(io::Error::other)?;
        self.w.file(layout::SIM_TRUTH, truth + "\n")?;
        self.end_evidence(state)
    }

    fn process(&self, p: &SimProcess) -> io::Result<()> {
        let new = !self.written.contains(&p.pid);
        if new {
            self.w.process(&ProcEntry {
                pid: p.pid,
                comm: &p.comm,
                cmdline: &p.cmdline,
                env: &p.env,
                ppid: Some(p.ppid),
                nspid: &[p.pid],
            })?;
            self.w.file(
                layout::proc_file(p.pid, "stat"),
                format!(
                    "{} ({}) S {} {} {} 0\n",
                    p.pid, p.comm, p.ppid, p.pid, p.pid
                ),
            )?;
        }
        for f in &p.fds {
            let text = f.fdinfo.as_deref().map(str::as_bytes);
            match text {
                Some(t) if !new => self.w.fdinfo(p.pid, f.fd, t)?,
                _ if !new => {}
                _ => self.w.fd(p.pid, f.fd, &f.target, text)?,
            }
        }
        if let Some(smaps) = &p.smaps {
            self.w.file(layout::proc_file(p.pid, "smaps"), smaps)?;
        }
        Ok(())
    }

    /// The kernel log and the job's end, rewritten only when they change (a reader tailing
    /// `dev/kmsg` then re-reads it only when there is something new).
    fn end_evidence(&mut self, state: &SimState) -> io::Result<()> {
        // No file until the kernel has logged something: a missing log reads as an empty one.
        let logged = state.kernel_log.len();
        if logged > 0 && self.kmsg_written != Some(logged) {
            self.w.kmsg(&state.kernel_log)?;
            self.kmsg_written = Some(logged);
        }
        if self.job_ended != Some(state.job_end.is_some()) {
            self.w.job_end(state.job_end.as_ref())?;
            self.job_ended = Some(state.job_end.is_some());
        }
        Ok(())
    }
}
