//! The known-issues base: public defects of GPU runtimes and drivers as data
//! (`known-issues/`, embedded at build time), and the matcher that says which apply to a
//! machine and a job.
//!
//! Input: [`Facts`] (component versions, devices with their PCI ids and root ports, the job's
//! environment, the findings of a snapshot). Output: an [`Assessment`] whose [`Match`]es carry
//! the entry id, a severity (warning: versions and conditions; critical: also the entry's finding
//! signature; info: informational entries), the facts that matched and the workarounds.

mod base;
mod facts;
mod matcher;
mod schema;
pub mod topology;
mod version;
mod visible;

pub use base::{Base, KnowledgeError};
pub use facts::{dpkg_status, versions, DeviceFact, Facts, VersionFact};
pub use matcher::{assess, Assessment, Match, NotMatched};
pub use schema::{
    Component, Conditions, Entry, Family, Hardware, Signature, Status, Topology, Versions,
    Workaround,
};
pub use version::{Range, Version};
pub use visible::{ranks_of, visible};
