//! `serve`: a Prometheus / OpenMetrics exporter. A background thread samples on the interval and
//! renders the metrics text and the snapshot JSON once; scrapes only copy the latest rendering, so
//! a scrape never costs a /proc scan however often it comes.

mod conn_table;
mod connections;
mod family;
pub mod metrics;
mod server;

pub use connections::ConnectionLimits;
pub use metrics::{render_metrics, MetricsOptions};
pub use server::{serve, ServeError, ServeOptions};
