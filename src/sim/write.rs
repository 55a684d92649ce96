//! Writes a [`SimState`] as a capture tree; a [`LiveWriter`] rewrites it in place as time passes.

use super::SimState;
use crate::tree_writer::TreeWriter;
use std::collections::BTreeSet;
use std::io;

/// Rewrites a tree as a simulation advances; processes that left are removed.
#[derive(Debug)]
pub struct LiveWriter {
    w: TreeWriter,
    written: BTreeSet<u32>,
    devices_done: bool,
}

impl LiveWriter {
    /// Starts a tree with its fixed files (version, os-release, manifest).
    pub fn new(w: TreeWriter, scenario: &str) -> io::Result<LiveWriter> {
        w.file(
            "proc/version",
            "Linux version 7.1.3-gpuledger-sim (simulated) #1 SMP\n",
        )?;
        w.file(
            "etc/os-release",
            "NAME=\"gpuledger simulation\"\nID=gpuledger-sim\n",
        )?;
        let manifest = serde_json::json!({
            "schema": "gpuledger.capture/1",
            "gpuledger_version": env!("CARGO_PKG_VERSION"),
            "simulated": scenario,
            "page_size": 4096,
        });
        w.file("gpuledger-capture.json", format!("{manifest:#}\n"))?;
        Ok(LiveWriter {
            w,
            written: BTreeSet::new(),
            devices_done: false,
        })
    }

    /// Writes `state`, replacing each file atomically.
    pub fn write(&mut self, state: &SimState) -> io::Result<()> {
        if !self.devices_done {
            for d in &state.devices {
                self.w.device(d)?;
            }
            self.devices_done = true;
        }
        let now: BTreeSet<u32> = state.processes.iter().map(|p| p.pid).collect();
        for gone in self.written.difference(&now) {
            self.w.remove(format!("proc/{gone}"))?;
        }
        for p in &state.processes {
            let dir = format!("proc/{}", p.pid);
            if !self.written.contains(&p.pid) {
                self.w
                    .file(format!("{dir}/comm"), format!("{}\n", p.comm))?;
                self.w.file(
                    format!("{dir}/cmdline"),
                    nul_joined(p.cmdline.iter().cloned()),
                )?;
                self.w.file(
                    format!("{dir}/environ"),
                    nul_joined(p.env.iter().map(|(k, v)| format!("{k}={v}"))),
                )?;
                self.w.file(
                    format!("{dir}/status"),
                    format!("Name:\t{}\nPPid:\t{}\nNSpid:\t{}\n", p.comm, p.ppid, p.pid),
                )?;
                self.w.file(
                    format!("{dir}/stat"),
                    format!(
                        "{} ({}) S {} {} {} 0\n",
                        p.pid, p.comm, p.ppid, p.pid, p.pid
                    ),
                )?;
                std::fs::create_dir_all(self.w.base().join(format!("{dir}/fd")))?;
            }
            for (fd, minor, text) in &p.fds {
                self.w.file(format!("{dir}/fdinfo/{fd}"), text)?;
                if !self.written.contains(&p.pid) {
                    self.w
                        .symlink(format!("{dir}/fd/{fd}"), format!("/dev/dri/{minor}"))?;
                }
            }
        }
        self.written = now;
        self.w.file("proc/vmstat", &state.vmstat)?;
        self.w.file("proc/meminfo", &state.meminfo)
    }
}

fn nul_joined(items: impl Iterator<Item = String>) -> Vec<u8> {
    items
        .flat_map(|s| s.into_bytes().into_iter().chain(std::iter::once(0)))
        .collect()
}
