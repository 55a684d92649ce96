//! A running `gpuledger serve` (the exporter) and what the tests ask it.

use super::bin;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `gpuledger serve`; killed when dropped.
pub struct Server {
    /// The process.
    pub child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts `cmd` (a `serve` listening on 127.0.0.1:`port`) and waits until it says it listens.
    pub fn spawn(cmd: &mut Command, port: u16) -> Server {
        let mut child = cmd.stderr(Stdio::piped()).spawn().expect("start serve");
        let mut line = String::new();
        BufReader::new(child.stderr.take().expect("piped stderr"))
            .read_line(&mut line)
            .expect("read serve's first line");
        assert!(line.contains("/metrics"), "{line}");
        Server {
            child,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    /// The body of `GET <base><path>` (no `Accept`: /metrics in the classic text format), which
    /// must answer 200 within 10 s.
    pub fn get(&self, path: &str) -> String {
        self.get_as(path, None).1
    }

    /// `/metrics` as Prometheus asks for it: OpenMetrics.
    pub fn openmetrics(&self) -> String {
        self.get_as("/metrics", Some(PROMETHEUS_ACCEPT)).1
    }

    /// The `Content-Type` and body of `GET <base><path>` with `Accept: accept` when given.
    pub fn get_as(&self, path: &str, accept: Option<&str>) -> (String, String) {
        let mut req = ureq::get(&format!("{}{path}", self.base)).timeout(Duration::from_secs(10));
        if let Some(a) = accept {
            req = req.set("Accept", a);
        }
        let resp = req.call().unwrap_or_else(|e| panic!("GET {path}: {e}"));
        let content_type = resp.header("Content-Type").unwrap_or_default().to_string();
        (content_type, resp.into_string().expect("a text body"))
    }
}

/// The `Accept` header Prometheus scrapes with (its default scrape protocols).
pub const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `gpuledger --root ROOT serve --listen 127.0.0.1:PORT EXTRA…` and waits until it listens.
pub fn serve_root(root: &Path, extra: &[&str]) -> Server {
    let port = free_port();
    Server::spawn(
        bin()
            .arg("--root")
            .arg(root)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(extra),
        port,
    )
}
