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

    /// The body of `GET <base><path>`, which must answer 200 within 10 s.
    pub fn get(&self, path: &str) -> String {
        ureq::get(&format!("{}{path}", self.base))
            .timeout(Duration::from_secs(10))
            .call()
            .unwrap_or_else(|e| panic!("GET {path}: {e}"))
            .into_string()
            .expect("a text body")
    }
}

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
