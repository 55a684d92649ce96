//! The schema of a known-issues entry (`known-issues/entries/*.toml`) and of the base's two
//! vocabularies (`families.toml`, `components.toml`). Unknown fields are errors, so a typo in a
//! contributed entry fails the schema test instead of being ignored.

use crate::findings::{Backing, Kind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One known issue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Stable id; equals the file name without `.toml`.
    pub id: String,
    /// One line.
    pub title: String,
    /// What happens, in a sentence or two.
    pub summary: String,
    /// Upstream state.
    pub status: Status,
    /// Only worth knowing (matches at `info`, never warning or critical).
    #[serde(default)]
    pub informational: bool,
    /// When a person last checked the links, `YYYY-MM-DD`.
    pub last_checked: String,
    /// When the entry's facts last changed, `YYYY-MM-DD`; absent: `last_checked`. An entry of a
    /// user's base replaces a built-in one of the same id only when this date is later.
    pub updated: Option<String>,
    /// Public upstream reports (`https://` URLs). gpuledger's own limitations are no entries.
    pub links: Vec<String>,
    /// The vendor's internal tracker id, when public (e.g. `GSD-13038`).
    pub tracker: Option<String>,
    /// The words or numbers of the reports the entry rests on; at least one.
    #[serde(default)]
    pub quotes: Vec<Quote>,
    /// What the entry asserts, each marked confirmed or suspected; at least one.
    #[serde(default)]
    pub claims: Vec<Claim>,
    /// Affected versions of one component; absent when the issue is not tied to a release.
    pub versions: Option<Versions>,
    /// Which devices.
    #[serde(default)]
    pub hardware: Hardware,
    /// What else must hold.
    #[serde(default)]
    pub conditions: Conditions,
    /// The finding the issue produces; a match with it present is critical.
    pub signature: Option<Signature>,
    /// What to do, each with its caveat.
    #[serde(default)]
    pub workarounds: Vec<Workaround>,
}

impl Entry {
    /// The date the entry's facts are from: `updated`, else `last_checked`.
    pub fn date(&self) -> &str {
        self.updated.as_deref().unwrap_or(&self.last_checked)
    }
}

/// A quote or the numbers of one public report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quote {
    /// The report (one of the entry's `links`).
    pub link: String,
    /// When it was written there, `YYYY-MM-DD`.
    pub date: String,
    /// Who wrote it: the component's vendor, a project maintainer, or a reporter.
    pub by: Speaker,
    /// Its words or numbers, short.
    pub text: String,
    /// Where the words were taken from when not from the report itself (a copy of the thread
    /// that was not at hand, words as another report quotes them).
    pub note: Option<String>,
}

/// Who a quote is from: a statement on the record or a user's measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Speaker {
    /// An employee of the component's vendor, speaking for it (Intel on an Intel runtime).
    Vendor,
    /// A maintainer of the project the report is filed against.
    Maintainer,
    /// A user reporting what they ran and measured.
    Reporter,
}

impl Speaker {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Speaker::Vendor => "vendor",
            Speaker::Maintainer => "maintainer",
            Speaker::Reporter => "reporter",
        }
    }
}

/// One thing an entry asserts, and how sure the reports make it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// The assertion, in our words.
    pub claim: String,
    /// Confirmed (measured or stated by the maintainers) or suspected.
    pub confidence: Confidence,
}

/// How sure a claim is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Measured in a report (with a control) or stated by the maintainers.
    Confirmed,
    /// A hypothesis in the thread: not reproduced, or contradicted by another report.
    Suspected,
}

impl Confidence {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Confirmed => "confirmed",
            Confidence::Suspected => "suspected",
        }
    }
}

/// Upstream state of an issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Open upstream.
    Open,
    /// Closed without a fixed release (nothing says the defect went away).
    Closed,
    /// Fixed in `versions.fixed`.
    Fixed,
}

impl Status {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Open => "open",
            Status::Closed => "closed",
            Status::Fixed => "fixed",
        }
    }
}

/// Affected versions: `introduced` (else the earliest of `reported`) up to `fixed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Versions {
    /// A name from `components.toml`.
    pub component: String,
    /// The release that introduced it, when known.
    pub introduced: Option<String>,
    /// The change that introduced it, when known.
    pub introduced_by: Option<String>,
    /// The first fixed release, when one exists.
    pub fixed: Option<String>,
    /// Releases a report saw it on.
    #[serde(default)]
    pub reported: Vec<String>,
    /// What is known and unknown about the range.
    pub note: Option<String>,
}

/// Devices an entry applies to; empty lists match any device.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hardware {
    /// PCI `vendor:device`, lower-case hex without `0x` (`8086:e223`).
    #[serde(default)]
    pub devices: Vec<String>,
    /// Names from `families.toml`.
    #[serde(default)]
    pub families: Vec<String>,
    /// PCI vendor ids (`10de`).
    #[serde(default)]
    pub vendors: Vec<String>,
}

/// Further conditions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conditions {
    /// At least this many matching devices visible to the job (after its device masks).
    pub min_visible: Option<u32>,
    /// How the matching devices must be connected.
    pub topology: Option<Topology>,
    /// Variables the job's environment must have (`"*"`: any value).
    #[serde(default)]
    pub env_present: BTreeMap<String, String>,
    /// When the job's environment has all of these, a workaround is in effect: no match.
    #[serde(default)]
    pub env_workaround: BTreeMap<String, String>,
    /// The Linux release that fixes the defect: a running kernel at or after it does not match.
    pub kernel_fixed: Option<String>,
    /// The entry matches only when its `[signature]` finding is seen: for defects whose
    /// hardware and versions are too common to say anything alone.
    #[serde(default)]
    pub needs_signature: bool,
}

/// PCI topology conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Topology {
    /// Two matching devices sit under different PCIe root ports.
    DifferentRootPorts,
}

/// The finding an issue produces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    /// Finding kind.
    pub kind: Kind,
    /// Required backing (peer_mirror), if any.
    pub backing: Option<Backing>,
    /// Kernel-log finding kinds that stand for the signature once the job is gone: a critical
    /// one (the failing task was a GPU job process, or its stack ran through TTM or a GPU
    /// driver) on matching hardware is the end, seen after the fact.
    #[serde(default)]
    pub after_exit: Vec<Kind>,
}

/// A workaround and what it costs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workaround {
    /// What to do.
    pub what: String,
    /// Its caveat.
    pub caveat: String,
    /// The environment it sets, when it is one: the job can then try it as an `experiment`
    /// control.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// What a report measured with it, beside the same job without it; ranks workarounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measured>,
}

/// A workaround measured side by side with the default: host RAM the driver held with and
/// without it, and whether throughput changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measured {
    /// The report (one of the entry's `links`).
    pub link: String,
    /// When it was measured there, `YYYY-MM-DD`.
    pub date: String,
    /// What ran: machine and workload, in a few words.
    pub setup: String,
    /// Host RAM held by the driver with the workaround, as the report writes it (`0.3 GiB`).
    pub host_held: String,
    /// Host RAM held by the driver without it, the same job, as the report writes it.
    pub baseline_held: String,
    /// What happened to throughput.
    pub throughput: Throughput,
}

impl Measured {
    /// The measurement in the report's numbers: `host RAM 0.3 GiB (12.6 GiB without it),
    /// throughput unchanged; 4x B70, … (2026-10-04)`.
    pub fn sentence(&self) -> String {
        format!(
            "host RAM {} ({} without it), {}; {} ({})",
            self.host_held,
            self.baseline_held,
            self.throughput.as_str(),
            self.setup,
            self.date
        )
    }

    /// `host_held` in bytes (checked when the base loads; 0 if it does not parse).
    pub fn host_held_bytes(&self) -> u64 {
        crate::units::parse_bytes(&self.host_held).unwrap_or(0)
    }

    /// `baseline_held` in bytes (checked when the base loads; 0 if it does not parse).
    pub fn baseline_held_bytes(&self) -> u64 {
        crate::units::parse_bytes(&self.baseline_held).unwrap_or(0)
    }

    /// The share of the default's host RAM still held with the workaround, in per mille: the
    /// measure workarounds are ranked by (setups differ in size, the share does not).
    pub fn held_per_mille(&self) -> u64 {
        self.host_held_bytes().saturating_mul(1000) / self.baseline_held_bytes().max(1)
    }
}

/// Throughput with a workaround against without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Throughput {
    /// The same, as measured.
    Unchanged,
    /// The report did not measure it.
    NotMeasured,
    /// Lower with the workaround.
    Lower,
}

impl Throughput {
    /// Lower-case words.
    pub fn as_str(self) -> &'static str {
        match self {
            Throughput::Unchanged => "throughput unchanged",
            Throughput::NotMeasured => "throughput not measured",
            Throughput::Lower => "throughput lower",
        }
    }
}

/// A device family (`families.toml`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Family {
    /// Human name.
    pub name: String,
    /// PCI `vendor:device` ids.
    pub devices: Vec<String>,
}

/// Where a component's version is found (`components.toml`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    /// Package name prefixes.
    #[serde(default)]
    pub packages: Vec<String>,
    /// Kernel modules whose `/sys/module/<m>/version` gives the version.
    #[serde(default)]
    pub modules: Vec<String>,
    /// Python distributions (exact names) found beside the job's Python processes (`torch`).
    #[serde(default)]
    pub python: Vec<String>,
    /// File-name prefixes of its shared objects (`libze_intel_gpu.so`): a GPU process that
    /// mapped one loaded this component; its version is that file's package's.
    #[serde(default)]
    pub libraries: Vec<String>,
    /// The version after `.so.` in a library's file name is the component's (`libcuda.so.580.95.05`).
    #[serde(default)]
    pub soname_version: bool,
}
