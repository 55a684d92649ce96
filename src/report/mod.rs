//! `report`: a Markdown bug report a maintainer can act on without asking back. The
//! `intel-compute-runtime` template follows that project's Linux GPU driver issue form (checklist,
//! GPU hardware, DRI devices, hardware info, driver version and installation, distribution,
//! kernel, packages, behaviour, steps, reproduction rate, regression, logs); `generic` is the same
//! evidence without the form's fields. Whatever was not found says "not found".

mod calls;
mod escape;
mod evidence;
mod facts;
pub mod recorded;
mod related;
mod sections;
mod steps;

use crate::findings::Finding;
use crate::knowledge::Assessment;
use crate::ledger::Ledger;
use crate::recording::Recording;
use crate::redact::hosts;
use crate::sources::system_info::SystemInfo;

/// Which template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Template {
    /// intel/compute-runtime's issue form.
    IntelComputeRuntime,
    /// A plain report for any driver or runtime.
    Generic,
}

/// Everything a report is made from.
#[derive(Debug)]
pub struct ReportInput<'a> {
    /// Template.
    pub template: Template,
    /// Hide hostnames and user names.
    pub redact: bool,
    /// List every finding instead of folding many of one kind and severity into one line (`-v`).
    pub each: bool,
    /// The current snapshot's ledger (the machine or `--root`).
    pub ledger: &'a Ledger,
    /// Its findings.
    pub findings: &'a [Finding],
    /// Facts about the machine.
    pub system: &'a SystemInfo,
    /// Zero, one or two recordings (name, recording): with two, the diff table is included.
    pub recordings: &'a [(String, Recording)],
    /// Entries of the known-issues base that match the machine and the findings of the
    /// snapshot and the recordings.
    pub related: &'a Assessment,
    /// For each run that is a multi-node job: its nodes as `show` prints them (the recording
    /// above is its worst node).
    pub nodes: &'a [String],
    /// The node names of those runs, hidden by `--redact` like the hostname.
    pub node_names: &'a [String],
    /// The kernel log of the machine or `--root` (its findings are in `findings`).
    pub kernel_log: &'a crate::sources::kernel_log::WholeLog,
    /// Which machine the report describes when that is a recording's, not the one it is
    /// written on ([`recorded::note`]), shown under the heading.
    pub machine_note: Option<String>,
}

/// Renders the report.
pub fn render(input: &ReportInput) -> String {
    if !input.redact {
        return sections::render(input);
    }
    // The machine's name, each recording's (its host and its job's node label) and the nodes'.
    let recorded = input.recordings.iter().flat_map(|(_, r)| {
        ["hostname", "label.node"]
            .into_iter()
            .filter_map(|k| r.meta.get(k).map(String::as_str))
    });
    let hosts = hosts::host_list(
        input
            .system
            .hostname
            .as_deref()
            .into_iter()
            .chain(recorded)
            .chain(input.node_names.iter().map(String::as_str)),
    );
    let out = hosts::with_hosts(&hosts, || sections::render(input));
    hosts::redact(&out, &hosts)
}

/// Fills the NVIDIA driver version from NVML's answers (live, or saved in a capture) where
/// `/proc/driver/nvidia/version` was not readable: a capture keeps NVML's answers but not /proc's
/// driver file, and NVIDIA's module is out of tree, so /sys/module has no version either.
pub fn nvidia_from_nvml(system: &mut SystemInfo, nvml: &[crate::sources::nvml::NvGpu]) {
    let Some(version) = nvml.iter().find_map(|g| g.driver_version.as_deref()) else {
        return;
    };
    let said = format!("{version} (NVML)");
    if system.nvidia.is_none() {
        system.nvidia = Some(said.clone());
    }
    system
        .driver_versions
        .entry("nvidia".into())
        .or_insert(said);
}
