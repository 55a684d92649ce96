//! The exporter's connection handling: hyper's HTTP/1 connection builder under axum, with limits
//! so that idle or hostile clients cannot starve real scrapers.
//!
//! - hyper's header-read timeout closes a connection that has not sent a whole request head in
//!   time. hyper starts that clock whenever it waits for a head, so it also ends a kept-alive
//!   connection that sends no next request.
//! - An idle timeout closes a connection with no request in flight for that long (a client that
//!   stops reading its response is idle here too, so it cannot pin a connection).
//! - At most `max_connections` are open. At the cap the oldest idle connection is closed so the
//!   newest client is served; when every connection is busy the newcomer is refused instead.
//! - Accept errors (EMFILE when the descriptor limit is hit) never end or spin the loop: it
//!   closes the oldest idle connection and backs off briefly.

use super::conn_table::{ConnTable, Tracked};
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

/// hyper's per-connection buffer cap (its minimum is 8 KiB): a request head is far smaller, and
/// response bodies are queued by reference, not buffered.
const MAX_BUF_BYTES: usize = 16 * 1024;

/// Connection limits of the exporter.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Time a client has to send a whole request head (also the keep-alive wait for the next
    /// request, since hyper restarts this clock whenever it waits for one). Default 5 s.
    pub header_read_timeout: Duration,
    /// A connection with no request in flight for this long is closed. Default 30 s.
    pub idle_timeout: Duration,
    /// Most connections open at once. Default 512, and never more than half of the soft
    /// RLIMIT_NOFILE so that sampling /proc keeps descriptors to work with.
    pub max_connections: usize,
    /// Pause after an accept error before accepting again. Default 50 ms.
    pub accept_backoff: Duration,
    /// Listen backlog (the kernel caps it at net.core.somaxconn). Default 1024.
    pub listen_backlog: u32,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(30),
            max_connections: 512,
            accept_backoff: Duration::from_millis(50),
            listen_backlog: 1024,
        }
    }
}

impl ConnectionLimits {
    /// `max_connections`, lowered to half of the soft descriptor limit, and at least 1.
    pub fn effective_max_connections(&self) -> usize {
        let nofile = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        let by_fds = nofile.map_or(usize::MAX, |n| usize::try_from(n / 2).unwrap_or(usize::MAX));
        self.max_connections.min(by_fds).max(1)
    }
}

/// Accepts and serves connections on `listener` with `app` until the runtime stops.
pub(crate) async fn run(listener: TcpListener, app: Router, limits: ConnectionLimits) {
    let table = Arc::new(ConnTable::default());
    let cap = limits.effective_max_connections();
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                if table.len() >= cap && !table.close_oldest_idle() {
                    // Every connection is busy with a request: refusing the newcomer keeps
                    // the ones in flight alive.
                    drop(stream);
                    continue;
                }
                let tracked = table.insert();
                tokio::spawn(serve_connection(stream, app.clone(), tracked, limits));
            }
            Err(e) if is_per_connection(&e) => {}
            Err(_) => {
                // Out of descriptors (or another transient failure): make room and back off
                // rather than retry in a tight loop.
                table.close_oldest_idle();
                tokio::time::sleep(limits.accept_backoff).await;
            }
        }
    }
}

/// Errors that concern only the connection being accepted, not the listener.
fn is_per_connection(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused
    )
}

async fn serve_connection(
    stream: TcpStream,
    app: Router,
    tracked: Tracked,
    limits: ConnectionLimits,
) {
    let router = TowerToHyperService::new(app);
    let activity = tracked.clone();
    let service = hyper::service::service_fn(move |req| {
        let busy = activity.begin_request();
        let fut = hyper::service::Service::call(&router, req);
        async move {
            let response = fut.await;
            drop(busy);
            response
        }
    });
    let mut builder = http1::Builder::new();
    // Vectored writes queue the shared body (a reference count) instead of flattening it into
    // a per-connection copy; the read and header buffers stay small.
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true)
        .writev(true)
        .max_buf_size(MAX_BUF_BYTES);
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let closed = tracked.closed();
    tokio::pin!(closed);
    let mut deadline = Instant::now() + limits.idle_timeout;
    loop {
        tokio::select! {
            // A connection error (bad request, header timeout, reset) only ends this connection.
            _ = conn.as_mut() => return,
            () = &mut closed => return,
            () = tokio::time::sleep_until(deadline) => {
                match tracked.idle_since() {
                    Some(since) if since + limits.idle_timeout <= Instant::now() => return,
                    Some(since) => deadline = since + limits.idle_timeout,
                    None => deadline = Instant::now() + limits.idle_timeout,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    /// Serves a `/healthz` router with `limits` on a background runtime; returns its address.
    fn start(limits: ConnectionLimits) -> std::net::SocketAddr {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let addr = std_listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = TcpListener::from_std(std_listener).unwrap();
                let app = Router::new().route("/healthz", get(|| async { "ok\n" }));
                run(listener, app, limits).await;
            });
        });
        addr
    }

    fn closed(c: &TcpStream) -> bool {
        c.set_nonblocking(true).unwrap();
        let r = (&*c).read(&mut [0u8; 1]);
        !matches!(r, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    }

    fn healthz(addr: std::net::SocketAddr) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn at_the_cap_the_oldest_idle_connection_makes_room() {
        let addr = start(ConnectionLimits {
            max_connections: 2,
            ..Default::default()
        });
        let oldest = TcpStream::connect(addr).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let newer = TcpStream::connect(addr).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(healthz(addr).ends_with("ok\n"));
        assert!(closed(&oldest), "the oldest idle connection was kept");
        assert!(!closed(&newer), "a newer idle connection was closed");
    }

    #[test]
    fn a_connection_idle_past_the_idle_timeout_is_closed() {
        let addr = start(ConnectionLimits {
            header_read_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_millis(300),
            ..Default::default()
        });
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let t = std::time::Instant::now();
        let mut buf = Vec::new();
        let r = c.read_to_end(&mut buf);
        assert!(r.is_ok() || r.is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset));
        let waited = t.elapsed();
        assert!(
            waited >= Duration::from_millis(250) && waited < Duration::from_secs(3),
            "{waited:?}"
        );
    }
}
