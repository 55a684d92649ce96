//! The known-issues base: public defects of GPU runtimes and drivers as data
//! (`known-issues/`, embedded at build time), and the matcher that says which apply to a
//! machine and a job.
//!
//! Use: `let base = Base::embedded()?;` then build [`Facts`] — [`Facts::of_machine`] from a
//! snapshot, its findings and `system_info` (versions from packages, `/sys/module/*/version`,
//! NVML, or `var/lib/dpkg/status` in a capture tree; devices with PCI ids and root ports), plus
//! `facts.env` = the job's allow-listed environment (device masks, debug keys) — and call
//! [`assess`]`(&base, &facts)`. The [`Assessment`] holds [`Match`]es (entry id, title, severity,
//! the facts that matched as sentences, workarounds with caveats, links, upstream status), most
//! severe first, and [`NotMatched`] entries whose hardware is present, each with the reason.
//!
//! Severity: an entry matches when its hardware is present, its conditions hold (visible devices
//! after masks, topology, environment, no workaround in effect, a kernel before
//! `kernel_fixed` or an unknown one) and a detected version of its
//! component lies in its range (entries without `[versions]` skip that test): warning; with a
//! finding of its signature among `facts.findings` (kind, and backing when given): critical;
//! informational entries: info. No version found for the component is a [`NotMatched`] unless
//! the signature is present: then the entry matches, its version unknown. Each match and the
//! assessment carry a [`NextStep`]: the first workaround, how to measure it, the alternatives.
//!
//! Every entry rests on public reports: `quotes` (link, date, words or numbers) and `claims`
//! marked confirmed or suspected. gpuledger's own blind spots are not entries: [`limitations`]
//! lists them for `doctor`, and they never become findings.

mod base;
mod facts;
mod known;
mod limits;
mod loaded;
mod matcher;
mod next_step;
mod overlay;
mod schema;
pub mod topology;
mod version;
mod visible;

pub use base::{Base, KnowledgeError};
pub use facts::{dpkg_status, kernel_release, versions, DeviceFact, Facts, VersionFact};
pub use known::{finding, findings, KnownIssues};
pub use limits::{limitations, Limitation};
pub use matcher::{assess, Assessment, Evidence, Match, NotMatched, VersionCheck};
pub use next_step::{Alternative, NextStep};
pub use overlay::{directories, BaseSource, SYSTEM_DIR};
pub use schema::{
    Claim, Component, Conditions, Confidence, Entry, Family, Hardware, Measured, Quote, Signature,
    Speaker, Status, Throughput, Topology, Versions, Workaround,
};
pub use version::{Range, Version};
pub use visible::{ranks_of, visible};
