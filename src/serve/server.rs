//! The HTTP side of `serve` (axum routes on hyper connections, a small tokio runtime): `/metrics`, `/healthz`,
//! `/snapshot.json`, and `/` linking them.

use super::connections::{self, ConnectionLimits};
use super::metrics::{render_metrics, MetricsOptions};
use crate::findings::{analyze, Thresholds};
use crate::knowledge::KnownIssues;
use crate::ledger::{Filter, Ledger};
use crate::outputs::json;
use crate::sampler::Sampler;
use crate::sources::kernel_log::LogCache;
use axum::http::header;
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
<li><a href=\"/metrics\">/metrics</a>: Prometheus / OpenMetrics</li>\
<li><a href=\"/snapshot.json\">/snapshot.json</a>: the gpuledger.snapshot/1 document</li>\
<li><a href=\"/healthz\">/healthz</a>: liveness</li>\
</ul></body></html>\n";

#[derive(Default)]
struct Latest {
    metrics: String,
    snapshot: String,
}

/// Samples and renders. The machine's known-issue facts (versions, devices) are gathered from
/// the first sample only: package versions do not change under a running exporter.
fn render(
    sampler: &mut Sampler,
    t: &Thresholds,
    m: &MetricsOptions,
    filter: &Filter,
    known: &mut Option<KnownIssues>,
    kernel: &mut LogCache,
) -> Result<Latest, crate::sampler::SampleError> {
    let snap = sampler.sample()?;
    if known.is_none() {
        *known = KnownIssues::of_machine(sampler.root(), &snap).ok();
    }
    let mut whole = Ledger::from_snapshot(&snap);
    let mut findings = analyze(&whole, t);
    let log = kernel.get(sampler.root(), std::time::Instant::now());
    crate::findings::kernel::add(log, &mut whole, &mut findings);
    if let Some(k) = known {
        k.extend(&mut findings);
    }
    // Findings on the whole machine first: a filter hides verdicts, never changes one.
    let findings = filter.findings(&findings);
    let ledger = filter.ledger(&whole);
    Ok(Latest {
        metrics: render_metrics(&ledger, &findings, m),
        snapshot: json::render(&ledger, &findings),
    })
}

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
    mut sampler: Sampler,
    opts: ServeOptions,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    let mut known = None;
    let mut kernel = LogCache::default();
    let latest = Arc::new(RwLock::new(render(
        &mut sampler,
        &opts.thresholds,
        &opts.metrics,
        &opts.filter,
        &mut known,
        &mut kernel,
    )?));
    let writer = latest.clone();
    let (interval, t, m, f) = (
        opts.interval,
        opts.thresholds.clone(),
        opts.metrics,
        opts.filter.clone(),
    );
    std::thread::spawn(move || loop {
        std::thread::sleep(interval);
        if let Ok(l) = render(&mut sampler, &t, &m, &f, &mut known, &mut kernel) {
            *writer.write().unwrap_or_else(|e| e.into_inner()) = l;
        }
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
        let m = latest.clone();
        let s = latest.clone();
        let app =
            Router::new()
                .route(
                    "/metrics",
                    get(move || {
                        let body = m.read().unwrap_or_else(|e| e.into_inner()).metrics.clone();
                        async move {
                            (
                                [(
                                    header::CONTENT_TYPE,
                                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                                )],
                                body,
                            )
                                .into_response()
                        }
                    }),
                )
                .route("/", get(|| async { axum::response::Html(INDEX) }))
                .route("/healthz", get(|| async { "ok\n" }))
                .route(
                    "/snapshot.json",
                    get(move || {
                        let body = s.read().unwrap_or_else(|e| e.into_inner()).snapshot.clone();
                        async move {
                            ([(header::CONTENT_TYPE, "application/json")], body).into_response()
                        }
                    }),
                );
        connections::run(listener, app, opts.connections).await;
        Ok(())
    })
}
