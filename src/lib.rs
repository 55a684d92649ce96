//! gpuledger: who holds GPU memory and driver-held host RAM, per process × device × region.
//!
//! The pipeline (docs/DESIGN.md): [`root::Root`] → [`sources`] → [`snapshot::Snapshot`] (built by
//! [`sampler::Sampler`]) → [`ledger::Ledger`] → [`findings`] → [`outputs`], the middle three
//! joined in one step, [`observe`]; over time, samples go into a [`recording`] that [`timeline`]
//! reads back for timeline findings and diffs. The layers
//! and where each command lives: docs/ARCHITECTURE.md.

#![warn(missing_docs)]

pub mod archive;
pub mod capture;
pub mod clock;
pub mod doctor;
pub mod experiment;
pub mod findings;
pub mod guard;
pub mod job;
pub mod job_output;
pub mod knowledge;
pub mod layout;
pub mod ledger;
pub mod observe;
pub mod outputs;
pub mod private;
pub mod recording;
pub mod redact;
pub mod report;
pub mod root;
pub mod sampler;
pub mod serve;
pub mod sim;
pub mod snapshot;
pub mod sources;
pub mod timeline;
pub mod tree_writer;
pub mod units;
