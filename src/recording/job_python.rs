//! The frameworks of a recorded job's Python (torch, jax, CuPy, the CUDA runtime wheels), read
//! from the first Python process that uses a GPU: by then it has imported them, so the site
//! directories it mapped are the ones it really loads from (a process seen before its first
//! import maps none, and its interpreter's own folders may not hold them).

use crate::ledger::Ledger;
use crate::root::Root;
use std::collections::BTreeMap;

/// Reads that came back empty before the recording stops looking.
const TRIES: u32 = 20;

/// What was found so far, and how often it was looked for.
#[derive(Debug, Default)]
pub struct JobPython {
    found: BTreeMap<String, String>,
    tries: u32,
}

impl JobPython {
    /// Looks in `ledger`'s first Python process with a GPU device open, until something is
    /// found or [`TRIES`] reads found nothing; the versions as JSON the first time they are found.
    pub fn look(&mut self, root: &Root, ledger: &Ledger) -> Option<String> {
        if !self.found.is_empty() || self.tries >= TRIES {
            return None;
        }
        let p = ledger.processes.iter().find(|p| {
            p.comm.starts_with("python")
                && (!p.usage.is_empty() || p.has_nvidia_fds || p.has_kfd_fd)
        })?;
        self.tries += 1;
        self.found = crate::sources::system_info::python_packages(root, p.pid);
        (!self.found.is_empty()).then(|| serde_json::to_string(&self.found).expect("strings"))
    }
}
