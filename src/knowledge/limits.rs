//! What gpuledger itself cannot see, by GPU vendor. These are limits of the tool, not defects
//! of a runtime, so they are not known-issue entries and never findings: `doctor` prints the
//! ones that concern the machine's GPUs, and README.md's "Limitations" section lists them all.

use super::facts::Facts;
use serde::Serialize;

/// One blind spot of gpuledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limitation {
    /// Stable name.
    pub id: &'static str,
    /// The PCI vendor whose GPUs it concerns (`10de`).
    pub vendor: &'static str,
    /// What is not seen and what to watch instead.
    pub text: &'static str,
}

const ALL: &[Limitation] = &[Limitation {
    id: "nvidia-host-register",
    vendor: "10de",
    text: "memory pinned with cudaHostRegister moves no kernel counter (no meminfo field, GPU \
           counter or per-process pinned-shmem figure; measured on an H200, driver 580.159): a \
           snapshot cannot see it; a job started by `gpuledger record` or `guard` with the tracer \
           library installed has its calls traced, which attribute it to the process",
}];

/// The limitations that concern the GPUs among `facts.devices`.
pub fn limitations(facts: &Facts) -> Vec<Limitation> {
    ALL.iter()
        .filter(|l| facts.devices.iter().any(|d| d.vendor() == Some(l.vendor)))
        .copied()
        .collect()
}
