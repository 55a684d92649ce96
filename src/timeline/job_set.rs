//! Several recordings of one job, one per node (a Slurm or torchrun multi-node job), read as one
//! job: per-rank peaks across nodes, the node that fared worst, every finding with its node, and
//! one merged summary that `diff` compares with another set.

use super::summary::RunSummary;
use crate::ledger::DriverHeld;
use crate::recording::{RecordedFinding, Recording};
use serde::Serialize;
use std::collections::BTreeSet;

/// Meta keys that name a recording's node, first found wins (the Slurm prolog's label, then the
/// recorder's host name).
const NODE_KEYS: [&str; 2] = ["label.node", "hostname"];
/// Meta keys that name the job a recording belongs to.
const JOB_KEYS: [&str; 2] = ["label.slurm_job", "label.pod"];

/// One node's recording.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRun {
    /// The node: its recorded label, else the file's name.
    pub node: String,
    /// The recording's file.
    pub file: String,
    /// The job id the recording names, when it names one.
    pub job: Option<String>,
    /// Its summary.
    pub summary: RunSummary,
}

/// One rank's peaks on its node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankPeak {
    /// Rank, when the process had one.
    pub rank: Option<u32>,
    /// Node.
    pub node: String,
    /// Pid on that node.
    pub pid: u32,
    /// Peak device-local bytes on its home device.
    pub device_local: u64,
    /// Peak host-class bytes over all its devices.
    pub host: u64,
    /// Peak host-class bytes on devices other than its home.
    pub peer_host: u64,
}

/// A finding and the node it was recorded on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeFinding {
    /// Node.
    pub node: String,
    /// The finding.
    pub finding: RecordedFinding,
}

/// The recordings of one job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobSet {
    /// One entry per recording, in the order given.
    pub nodes: Vec<NodeRun>,
    /// Set when the recordings name different jobs: the merged view is still shown.
    pub warning: Option<String>,
}

impl JobSet {
    /// Reads `(file, recording)` pairs as one job. Two recordings that carry the same node label
    /// keep their file name beside it, so no node is hidden behind another.
    pub fn of(runs: &[(String, Recording)]) -> JobSet {
        let mut nodes: Vec<NodeRun> = runs
            .iter()
            .map(|(file, rec)| NodeRun {
                node: first_meta(rec, &NODE_KEYS).unwrap_or_else(|| stem(file)),
                file: file.clone(),
                job: first_meta(rec, &JOB_KEYS),
                summary: RunSummary::of(rec),
            })
            .collect();
        let names: Vec<String> = nodes.iter().map(|n| n.node.clone()).collect();
        for n in &mut nodes {
            if names.iter().filter(|x| **x == n.node).count() > 1 {
                n.node = format!("{} ({})", n.node, stem(&n.file));
            }
        }
        let jobs: BTreeSet<&str> = nodes.iter().filter_map(|n| n.job.as_deref()).collect();
        let warning = if jobs.len() > 1 {
            let list: Vec<&str> = jobs.into_iter().collect();
            Some(format!(
                "the recordings name different jobs ({}): they are shown together, but they are \
                 not one job",
                list.join(", ")
            ))
        } else if jobs.is_empty() && runs.len() > 1 {
            unlike_one_job(runs)
        } else {
            None
        };
        JobSet { nodes, warning }
    }

    /// Every process's peaks with its node, by rank (processes without a rank last).
    pub fn rank_peaks(&self) -> Vec<RankPeak> {
        let mut out = Vec::new();
        for n in &self.nodes {
            let s = &n.summary;
            let pids: BTreeSet<u32> = s.peaks.iter().map(|p| p.pid).collect();
            for pid in pids {
                let mine = s.peaks.iter().filter(|p| p.pid == pid);
                let home = mine.clone().find(|p| p.home);
                out.push(RankPeak {
                    rank: s.peaks.iter().find(|p| p.pid == pid).and_then(|p| p.rank),
                    node: n.node.clone(),
                    pid,
                    device_local: home.map_or(0, |p| p.device_local),
                    host: mine.clone().map(|p| p.host).sum(),
                    peer_host: mine.filter(|p| !p.home).map(|p| p.host).sum(),
                });
            }
        }
        out.sort_by_key(|r| (r.rank.is_none(), r.rank, r.node.clone(), r.pid));
        out
    }

    /// The node that fared worst: the most severe finding, then the most driver-held host memory
    /// at its peak, then the lowest MemAvailable.
    pub fn worst_node(&self) -> Option<&NodeRun> {
        self.nodes.iter().max_by_key(|n| {
            let s = &n.summary;
            (
                s.worst_finding().map(|f| f.peak.severity),
                s.driver_held_bytes().unwrap_or(0),
                u64::MAX - s.mem_available_low.unwrap_or(u64::MAX),
            )
        })
    }

    /// Every recorded finding with its node, most severe first.
    pub fn findings(&self) -> Vec<NodeFinding> {
        let mut out: Vec<NodeFinding> = self
            .nodes
            .iter()
            .flat_map(|n| {
                n.summary.findings.iter().map(|f| NodeFinding {
                    node: n.node.clone(),
                    finding: f.clone(),
                })
            })
            .collect();
        out.sort_by(|a, b| {
            b.finding
                .peak
                .severity
                .cmp(&a.finding.peak.severity)
                .then(a.finding.peak.kind.cmp(&b.finding.peak.kind))
                .then(a.node.cmp(&b.node))
        });
        out
    }

    /// One summary for the whole job, for `diff`: peaks and findings of every node (each device
    /// written `NODE/DEVICE`, so equal PCI slots on two nodes stay apart), host counters summed
    /// over nodes where they add up (driver-held, GPUActive, unaccounted: what the job cost in
    /// all), MemAvailable at the lowest node, the longest duration.
    pub fn merged(&self) -> RunSummary {
        let mut nodes = self.nodes.iter();
        let Some(first) = nodes.next() else {
            return RunSummary::of(&Recording::default());
        };
        let mut m = first.summary.clone();
        if self.nodes.len() == 1 {
            return m;
        }
        prefix_devices(&mut m, &first.node);
        for n in nodes {
            let mut s = n.summary.clone();
            prefix_devices(&mut s, &n.node);
            m.ranks.extend(s.ranks);
            m.duration_s = m.duration_s.max(s.duration_s);
            m.samples += s.samples;
            m.peaks.extend(s.peaks);
            m.peer_host.extend(s.peer_host);
            m.mem_available_low = min_opt(m.mem_available_low, s.mem_available_low);
            m.driver_held_peak = add_held(m.driver_held_peak, s.driver_held_peak);
            m.gpu_active_peak = add_opt(m.gpu_active_peak, s.gpu_active_peak);
            m.unaccounted_peak = add_opt(m.unaccounted_peak, s.unaccounted_peak);
            m.findings.extend(s.findings);
            m.timeline.extend(s.timeline);
            m.kernel.extend(s.kernel);
            for (k, v) in s.kernel_counts {
                *m.kernel_counts.entry(k).or_default() += v;
            }
        }
        m
    }
}

/// Why recordings that name no job look like separate runs rather than one job's nodes: one
/// host recorded twice, different programs (nodes of one job run the same launcher, with
/// per-node arguments such as `--node-rank`), or sample times that do not overlap.
fn unlike_one_job(runs: &[(String, Recording)]) -> Option<String> {
    let mut why = Vec::new();
    let mut hosts = BTreeSet::new();
    let twice: BTreeSet<String> = runs
        .iter()
        .filter_map(|(_, r)| first_meta(r, &NODE_KEYS))
        .filter(|h| !hosts.insert(h.clone()))
        .collect();
    if !twice.is_empty() {
        let list: Vec<&str> = twice.iter().map(String::as_str).collect();
        why.push(format!("{} recorded more than once", list.join(", ")));
    }
    let programs: BTreeSet<String> = runs
        .iter()
        .filter_map(|(_, r)| r.command().into_iter().next())
        .map(|p| match p.rsplit_once('/') {
            Some((_, name)) => name.to_string(),
            None => p,
        })
        .collect();
    if programs.len() > 1 {
        let list: Vec<&str> = programs.iter().map(String::as_str).collect();
        why.push(format!("different programs ({})", list.join(", ")));
    }
    let spans: Vec<(u64, u64)> = runs
        .iter()
        .filter(|(_, r)| r.host.samples > 0)
        .map(|(_, r)| (r.host.first_ms, r.host.last_ms))
        .collect();
    let apart = spans
        .iter()
        .any(|a| spans.iter().any(|b| a.1 < b.0 || b.1 < a.0));
    if apart {
        why.push("times that do not overlap".into());
    }
    (!why.is_empty()).then(|| {
        format!(
            "the recordings name no job and look like separate runs ({}): they are shown \
             together as one job's nodes; show each file alone, or compare two with diff",
            why.join("; ")
        )
    })
}

fn first_meta(rec: &Recording, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| rec.meta.get(*k))
        .filter(|v| !v.is_empty())
        .cloned()
}

/// The file's name without directories and without `.ledger`.
fn stem(file: &str) -> String {
    let name = std::path::Path::new(file)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.to_string());
    name.strip_suffix(".ledger").unwrap_or(&name).to_string()
}

fn prefix_devices(s: &mut RunSummary, node: &str) {
    let at = |d: &str| format!("{node}/{d}");
    for p in &mut s.peaks {
        p.device = at(&p.device);
    }
    let findings = s.findings.iter_mut().map(|f| &mut f.peak);
    for f in findings.chain(s.timeline.iter_mut().map(|t| &mut t.finding)) {
        f.device = f.device.as_deref().map(at);
        f.peer = f.peer.as_deref().map(at);
        f.message = format!("[{node}] {}", f.message);
    }
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

fn add_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.saturating_add(y)),
        (x, y) => x.or(y),
    }
}

fn add_held(a: Option<DriverHeld>, b: Option<DriverHeld>) -> Option<DriverHeld> {
    match (a, b) {
        (Some(x), Some(y)) => Some(DriverHeld {
            bytes: x.bytes.saturating_add(y.bytes),
            counter: x.counter,
            counter_bytes: x.counter_bytes.saturating_add(y.counter_bytes),
            pinned_shmem: x.pinned_shmem.saturating_add(y.pinned_shmem),
            reclaimable_pool: add_opt(x.reclaimable_pool, y.reclaimable_pool),
            other_unaccounted: add_opt(x.other_unaccounted, y.other_unaccounted),
        }),
        (x, y) => x.or(y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::HostSummary;

    /// A recording made on `host` of `command`, sampled from `from` to `to` ms.
    fn run(host: &str, command: &[&str], from: u64, to: u64) -> (String, Recording) {
        let command = serde_json::to_string(command).unwrap();
        let rec = Recording {
            meta: [("hostname", host), ("command", command.as_str())]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            host: HostSummary {
                samples: 3,
                first_ms: from,
                last_ms: to,
                ..HostSummary::default()
            },
            ..Recording::default()
        };
        (format!("{host}.ledger"), rec)
    }

    #[test]
    fn nodes_of_one_multi_node_launch_are_not_flagged() {
        let node = |host, rank| {
            run(
                host,
                &["/usr/bin/torchrun", "--node-rank", rank, "t.py"],
                0,
                9,
            )
        };
        let set = JobSet::of(&[node("gpu-07", "0"), node("gpu-08", "1")]);
        assert_eq!(set.warning, None);
    }

    #[test]
    fn one_host_twice_other_programs_or_apart_in_time_are_flagged() {
        let why = |runs: &[(String, Recording)]| JobSet::of(runs).warning.unwrap_or_default();
        let w = why(&[
            run("vm", &["python3"], 0, 9),
            run("vm", &["python3"], 5, 20),
        ]);
        assert!(w.contains("vm recorded more than once"), "{w}");
        let w = why(&[run("a", &["sleep"], 0, 9), run("b", &["/bin/sh"], 0, 9)]);
        assert!(w.contains("different programs (sh, sleep)"), "{w}");
        let w = why(&[run("a", &["x"], 0, 9), run("b", &["x"], 10, 20)]);
        assert!(w.contains("times that do not overlap"), "{w}");
    }
}
