//! The integration tests, one binary (one link instead of one per topic): each module is a topic
//! that runs the built `gpuledger` on fixtures (capture trees under `tests/fixtures/`) and
//! simulated trees, or drives the library; `common` holds the shared scaffolding.

mod capture_roundtrip;
mod cgroup_follow;
mod cli;
mod common;
mod deploy_dashboard;
mod doctor;
mod experiment;
mod flags;
mod fleet;
mod guard;
mod guard_trace;
mod hardening;
mod help;
mod hostile_files;
mod hostile_trees;
mod job_evidence;
mod job_set;
mod jobs_kfd;
mod kernel_findings;
mod knowledge;
mod known_views;
mod kubernetes;
mod ledger_props;
mod live_machine;
mod mirror_props;
mod nvml_fake;
mod one_verdict;
mod oracle;
mod output_hardening;
mod plot_chromium;
mod project;
mod report;
mod scaling;
mod serve;
mod serve_exposure;
mod simulate;
mod snapshot_fixtures;
mod timeline_record;
mod top_tmux;
mod trace_record;
mod trace_views;
mod views;
mod width;
mod ze_trace;
