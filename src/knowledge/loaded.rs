//! Component versions from what the GPU processes actually loaded: the shared objects in their
//! `/proc/PID/maps` ([`proc_maps`]), versioned by the file name (components with
//! `soname_version`) or by the dpkg package that owns the file. A machine may have several
//! runtimes installed (a distribution's and one under /opt); the loaded one is the job's.

use super::base::Base;
use super::facts::{dpkg_status, VersionFact};
use crate::root::Root;
use crate::snapshot::Snapshot;
use crate::sources::packages::dpkg_owner;
use crate::sources::proc_maps;
use crate::sources::system_info::SystemInfo;
use std::collections::BTreeMap;

/// Most GPU processes whose maps are read for one machine (ranks of one job load one runtime).
const MAX_PROCESSES: usize = 16;

/// One fact per (component, version, library) that a GPU process of `snap` loaded, naming the
/// first process seen with it.
pub fn versions(base: &Base, root: &Root, snap: &Snapshot, sys: &SystemInfo) -> Vec<VersionFact> {
    let wanted = |name: &str| {
        base.components
            .values()
            .any(|c| c.libraries.iter().any(|l| name.starts_with(l.as_str())))
    };
    let installed = installed(root, sys);
    let mut out: Vec<VersionFact> = Vec::new();
    let gpu = snap
        .processes
        .iter()
        .filter(|p| !p.drm.is_empty() || !p.other_gpu_fds.is_empty() || !p.kfd_vram.is_empty());
    for p in gpu.take(MAX_PROCESSES) {
        let Ok(objects) = proc_maps::read(root, p.pid) else {
            continue;
        };
        for path in objects.iter().filter(|o| wanted(file_name(o))) {
            for fact in of_library(base, root, &installed, path, p.pid) {
                let seen = out.iter().any(|f| {
                    (&f.component, &f.version, &f.source)
                        == (&fact.component, &fact.version, &fact.source)
                });
                if !seen {
                    out.push(fact);
                }
            }
        }
    }
    out
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Installed packages (name → version): `sys`'s, and in a capture tree its dpkg status file.
fn installed(root: &Root, sys: &SystemInfo) -> BTreeMap<String, String> {
    let mut out = sys.packages.clone();
    if !root.is_live() {
        if let Ok(text) = root.read_string("var/lib/dpkg/status") {
            out.extend(dpkg_status(&text));
        }
    }
    out
}

/// The versions one loaded library gives, for each component that names it.
fn of_library(
    base: &Base,
    root: &Root,
    installed: &BTreeMap<String, String>,
    path: &str,
    pid: u32,
) -> Vec<VersionFact> {
    let name = file_name(path);
    let mut out = Vec::new();
    for (component, c) in &base.components {
        if !c.libraries.iter().any(|l| name.starts_with(l.as_str())) {
            continue;
        }
        let from_name = c
            .soname_version
            .then(|| proc_maps::soname_version(path))
            .flatten()
            .map(|v| (v.to_string(), format!("{path} loaded by pid {pid}")));
        let from_package = || {
            let keep = |p: &str| c.packages.iter().any(|x| p.starts_with(x.as_str()));
            let owner = dpkg_owner(root, path, keep)?;
            let v = installed.get(&owner)?;
            Some((
                v.clone(),
                format!("{path} loaded by pid {pid}, from package {owner}"),
            ))
        };
        if let Some((version, source)) = from_name.or_else(from_package) {
            out.push(VersionFact {
                component: component.clone(),
                version,
                source,
                loaded_by: Some(pid),
            });
        }
    }
    out
}
