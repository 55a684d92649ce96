//! AMD ROCm compute (KFD): per-process VRAM that DRM fdinfo does not show on every kernel.
//!
//! ref: drivers/gpu/drm/amd/amdkfd/kfd_process.c (`/sys/class/kfd/kfd/proc/<pid>/vram_<gpu_id>`,
//! bytes) and kfd_topology.c (`topology/nodes/<n>/gpu_id`, `properties` with `domain` and
//! `location_id` = bus << 8 | device << 3 | function). AMD's SMI library reads the same files.

use crate::layout;
use crate::root::Root;
use std::collections::{BTreeMap, BTreeSet};

/// `gpu_id` → PCI slot (`0000:c1:00.0`) from the KFD topology.
pub fn topology(root: &Root) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(nodes) = root.list_dir(layout::KFD_NODES) else {
        return out;
    };
    for n in nodes {
        let n = n.to_string_lossy();
        let Ok(id) = root.read_string(format!("{}/gpu_id", layout::kfd_node(&n))) else {
            continue;
        };
        let id = id.trim().to_string();
        if id == "0" || id.is_empty() {
            continue; // CPU node
        }
        let props = root
            .read_string(format!("{}/properties", layout::kfd_node(&n)))
            .unwrap_or_default();
        let get = |k: &str| {
            props
                .lines()
                .find_map(|l| l.strip_prefix(k)?.trim().parse::<u32>().ok())
        };
        if let Some(loc) = get("location_id ") {
            let domain = get("domain ").unwrap_or(0);
            out.insert(
                id,
                format!(
                    "{domain:04x}:{:02x}:{:02x}.{}",
                    loc >> 8,
                    (loc >> 3) & 0x1f,
                    loc & 7
                ),
            );
        }
    }
    out
}

/// PCI slots of GPU nodes that share the package with CPU cores (APUs): kfd_topology.c sets
/// `cpu_cores_count` in a node's `properties` for the CPU cores of that node, and an APU's single
/// node has both `simd_count` and `cpu_cores_count`; a discrete GPU's node has no CPU cores.
pub fn apu_slots(root: &Root) -> BTreeSet<String> {
    let topo = topology(root);
    let Ok(nodes) = root.list_dir(layout::KFD_NODES) else {
        return BTreeSet::new();
    };
    nodes
        .iter()
        .filter_map(|n| {
            let n = n.to_string_lossy();
            let id = root
                .read_string(format!("{}/gpu_id", layout::kfd_node(&n)))
                .ok()?;
            let props = root
                .read_string(format!("{}/properties", layout::kfd_node(&n)))
                .ok()?;
            let cores = props.lines().find_map(|l| {
                l.strip_prefix("cpu_cores_count ")?
                    .trim()
                    .parse::<u32>()
                    .ok()
            })?;
            (cores > 0).then(|| topo.get(id.trim()).cloned()).flatten()
        })
        .collect()
}

/// The process's VRAM per PCI slot (only non-zero amounts).
pub fn process_vram(root: &Root, pid: u32, topo: &BTreeMap<String, String>) -> Vec<(String, u64)> {
    let dir = layout::kfd_proc_dir(pid);
    let Ok(names) = root.list_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for n in names {
        let n = n.to_string_lossy();
        let Some(id) = n.strip_prefix("vram_") else {
            continue;
        };
        let Some(bytes) = root
            .read_string(format!("{dir}/{n}"))
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
        else {
            continue;
        };
        if bytes > 0 {
            let slot = topo
                .get(id)
                .cloned()
                .unwrap_or_else(|| format!("kfd-gpu-{id}"));
            out.push((slot, bytes));
        }
    }
    out.sort();
    out
}
