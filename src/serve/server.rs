//! The HTTP side of `serve` (axum routes on hyper connections, a small tokio runtime): `/metrics`
//! (negotiated: [`Exposition`]), `/healthz`, `/snapshot.json`, and `/` linking them.

use super::connections::{self, ConnectionLimits};
use super::metrics::MetricsOptions;
use super::negotiate::Exposition;
use super::sampling::{Latest, RenderOptions, Renderer};
use crate::findings::window::Since;
use crate::findings::Thresholds;
use crate::ledger::Filter;
use crate::sampler::Sampler;
use axum::http::{header, HeaderMap};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use thiserror::Error;

/// What `serve` needs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to bind.
    pub listen: SocketAddr,
    /// Sampling interval.
    pub interval: Duration,
    /// Finding thresholds.
    pub thresholds: Thresholds,
    /// Cardinality bounds.
    pub metrics: MetricsOptions,
    /// Timeouts and the connection cap.
    pub connections: ConnectionLimits,
    /// `--pid`/`--device`: what /metrics and /snapshot.json show (findings are computed on the
    /// whole machine first, so a filter never changes a verdict).
    pub filter: Filter,
    /// `--show-cmdline`: command lines in /snapshot.json as they are; by default secret-looking
    /// arguments and environment values are redacted ([`crate::redact`]).
    pub show_cmdline: bool,
    /// `--since`: kernel-log findings before it are history.
    pub since: Since,
}

/// The exporter could not run.
#[derive(Debug, Error)]
pub enum ServeError {
    /// Binding failed.
    #[error("cannot listen on {addr}; pick another --listen address or port")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The runtime failed.
    #[error("exporter")]
    Io(#[from] std::io::Error),
    /// The first sample failed.
    #[error(transparent)]
    Sample(#[from] crate::sampler::SampleError),
}

/// `/`: what a person who opens the exporter in a browser needs, links to every endpoint.
const INDEX: &str =
    "<!doctype html><html><head><meta charset=\"utf-8\"><title>gpuledger</title></head><body>\
<h1>gpuledger exporter</h1><ul>\
<li><a href=\"/metrics\">/metrics</a>: Prometheus text format 0.0.4, or OpenMetrics when the \
request's Accept asks for it</li>\
<li><a href=\"/snapshot.json\">/snapshot.json</a>: the gpuledger.snapshot/1 document</li>\
<li><a href=\"/healthz\">/healthz</a>: liveness</li>\
</ul></body></html>\n";

/// Binds with an explicit backlog: tokio's default (128 here) overflowed under a burst of
/// connects, and a dropped SYN costs the client a one-second retransmit.
fn bind(addr: SocketAddr, backlog: u32) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(backlog)
}

/// Samples in the background and serves until the process is stopped. `ready` is called with
/// the bound address once the first sample is in.
pub fn serve(
    sampler: Sampler,
    opts: ServeOptions,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    let mut renderer = Renderer::first(
        sampler,
        RenderOptions {
            thresholds: opts.thresholds.clone(),
            metrics: opts.metrics,
            filter: opts.filter.clone(),
            show_cmdline: opts.show_cmdline,
            since: opts.since,
        },
    )?;
    let latest = Arc::new(RwLock::new(renderer.latest()));
    let writer = latest.clone();
    let interval = opts.interval;
    std::thread::spawn(move || loop {
        std::thread::sleep(interval);
        let next = renderer.tick();
        *writer.write().unwrap_or_else(|e| e.into_inner()) = next;
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = bind(opts.listen, opts.connections.listen_backlog).map_err(|source| {
            ServeError::Bind {
                addr: opts.listen,
                source,
            }
        })?;
        ready(listener.local_addr()?);
        connections::run(listener, router(latest), opts.connections).await;
        Ok(())
    })
}

/// The routes. A body is the shared rendering itself (a reference count, not a copy).
fn router(latest: Arc<RwLock<Latest>>) -> Router {
    let current = move || latest.read().unwrap_or_else(|e| e.into_inner()).clone();
    let snapshot = current.clone();
    Router::new()
        .route(
            "/metrics",
            get(move |headers: HeaderMap| {
                let exposition = Exposition::negotiate(&headers);
                let body = current().metrics(exposition);
                let content_type = exposition.content_type();
                async move { ([(header::CONTENT_TYPE, content_type)], body).into_response() }
            }),
        )
        .route("/", get(|| async { axum::response::Html(INDEX) }))
        .route("/healthz", get(|| async { "ok\n" }))
        .route(
            "/snapshot.json",
            get(move || {
                let body = snapshot().snapshot;
                async move { ([(header::CONTENT_TYPE, "application/json")], body).into_response() }
            }),
        )
}
