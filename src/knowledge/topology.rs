//! PCI topology of the GPUs: the root port each sits under, and whether the kernel publishes
//! peer-to-peer memory for it.
//!
//! ref: Documentation/ABI/testing/sysfs-bus-pci. `/sys/bus/pci/devices/<slot>` links to the
//! device's place in the hierarchy, `/sys/devices/pci<domain>:<bus>/<root port>/…/<slot>`: the
//! component after the host bridge (`pci0000:00`) is the root port. drivers/pci/p2pdma.c adds a
//! `p2pmem/` group (`size`, `available`, `published`) only to devices that offer P2P memory; the
//! kernel's per-pair verdict (`pci_p2pdma_distance`: same switch, or a whitelisted host bridge) is
//! not exported to sysfs, so two GPUs under different root ports are only a risk, not a verdict.

use crate::root::Root;
use serde::Serialize;
use std::path::Path;

/// Where one device sits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placement {
    /// PCI slot.
    pub slot: String,
    /// Its root port (`0000:00:01.0`), when the sysfs link resolves.
    pub root_port: Option<String>,
    /// The PCI devices between the root port and it (switch ports).
    pub path: Vec<String>,
    /// Whether `p2pmem/` exists for it.
    pub p2pmem: bool,
}

/// Placement of `slot` under `root`.
pub fn placement(root: &Root, slot: &str) -> Placement {
    let rel = format!("sys/bus/pci/devices/{slot}");
    let real = root.resolve(Path::new(&rel), true).ok().and_then(|p| {
        if root.is_live() {
            std::fs::canonicalize(p).ok()
        } else {
            Some(p)
        }
    });
    let chain: Vec<String> = real
        .as_deref()
        .map(|p| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .skip_while(|c| !is_host_bridge(c))
                .skip(1)
                .collect()
        })
        .unwrap_or_default();
    let root_port = chain.first().filter(|c| c.as_str() != slot).cloned();
    let path = if chain.len() > 2 {
        chain[1..chain.len() - 1].to_vec()
    } else {
        Vec::new()
    };
    Placement {
        slot: slot.to_string(),
        root_port,
        path,
        p2pmem: root.list_dir(format!("{rel}/p2pmem")).is_ok(),
    }
}

/// `pci0000:00`: a PCI host bridge's directory under /sys/devices.
fn is_host_bridge(c: &str) -> bool {
    c.strip_prefix("pci")
        .is_some_and(|r| r.len() == 7 && r.as_bytes()[4] == b':')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_port_and_switch_path() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        let devpath = "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:03:00.0";
        std::fs::create_dir_all(base.join(devpath).join("p2pmem")).unwrap();
        std::fs::create_dir_all(base.join("sys/bus/pci/devices")).unwrap();
        std::os::unix::fs::symlink(
            format!("../../../../{devpath}"),
            base.join("sys/bus/pci/devices/0000:03:00.0"),
        )
        .unwrap();
        let root = Root::open(base).unwrap();
        let p = placement(&root, "0000:03:00.0");
        assert_eq!(p.root_port.as_deref(), Some("0000:00:01.0"));
        assert_eq!(p.path, vec!["0000:01:00.0", "0000:02:01.0"]);
        assert!(p.p2pmem);
        let missing = placement(&root, "0000:09:00.0");
        assert_eq!(missing.root_port, None);
        assert!(!missing.p2pmem);
    }
}
