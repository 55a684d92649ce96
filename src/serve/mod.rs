//! `serve`: a Prometheus exporter (text format 0.0.4, or OpenMetrics when asked for). A
//! background thread samples on the interval and
//! renders the metrics text and the snapshot JSON once; every scrape is served that one rendering
//! (shared, never copied), so a scrape never costs a /proc scan however often it comes, and slow
//! readers do not multiply the snapshot in memory.
//!
//! What it discloses to anyone who reaches its port: per-process GPU memory with pid, comm, rank
//! and job labels (/metrics), and the whole snapshot with command lines, allow-listed environment
//! and cgroup paths (/snapshot.json). Secrets in command lines and environment values are replaced
//! unless `--show-cmdline` is given ([`crate::redact`]).

mod classic_text;
mod conn_table;
mod connections;
mod device_metrics;
mod family;
pub mod metrics;
mod negotiate;
mod process_metrics;
mod sampling;
mod server;

pub use connections::ConnectionLimits;
pub use metrics::{render_metrics, ExporterStats, MetricsOptions, Series};
pub use server::{serve, ServeError, ServeOptions};
