//! gpuledger: who holds GPU memory and driver-held host RAM, per process × device × region.
//!
//! The pipeline (DESIGN.md): [`root::Root`] → [`sources`] → [`snapshot::Snapshot`] (built by
//! [`sampler::Sampler`]) → [`ledger::Ledger`] → [`findings`] → [`outputs`].

#![warn(missing_docs)]

pub mod archive;
pub mod capture;
pub mod clock;
pub mod experiment;
pub mod findings;
pub mod guard;
pub mod job;
pub mod job_output;
pub mod knowledge;
pub mod layout;
pub mod ledger;
pub mod outputs;
pub mod recording;
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
