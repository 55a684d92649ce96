//! Passing a job's output through while collecting its evidence.

use super::collect::lock;
use super::markers::push_bounded;
use super::{
    now_ms, Batch, Collector, Counts, MarkerFile, OutputLine, RateSpec, Stream, MARKERS_ENV,
};
use std::io::{self, Read, Write};
use std::process::{ChildStderr, ChildStdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the marker file is read.
const MARKER_POLL: Duration = Duration::from_millis(50);

/// Copies `reader` to `out` as each read returns, and feeds its lines to `sink`. A write that
/// fails (the reader of gpuledger's own output went away) stops the copying, not the collecting,
/// so the job is neither blocked nor killed by it.
pub fn pump<R: Read, W: Write>(
    mut reader: R,
    mut out: Option<W>,
    stream: Stream,
    sink: &Mutex<Collector>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut line: Vec<u8> = Vec::with_capacity(256);
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        if let Some(w) = out.as_mut() {
            if w.write_all(chunk).and_then(|()| w.flush()).is_err() {
                out = None;
            }
        }
        let t = now_ms();
        let mut rest = chunk;
        let mut sink = lock(sink);
        while let Some(at) = rest.iter().position(|b| *b == b'\n') {
            push_bounded(&mut line, &rest[..at]);
            sink.line(stream, t, &line);
            line.clear();
            rest = &rest[at + 1..];
        }
        push_bounded(&mut line, rest);
    }
    if !line.is_empty() {
        lock(sink).line(stream, now_ms(), &line);
    }
}

/// A started job's output capture: two pumps and the marker reader.
#[derive(Debug)]
pub struct Capture {
    sink: Arc<Mutex<Collector>>,
    markers: Arc<Mutex<MarkerFile>>,
    pumps: Vec<JoinHandle<()>>,
    marker_thread: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
}

impl Capture {
    /// Creates the marker file; call [`Capture::env`] for the job's environment, then
    /// [`Capture::attach`] once it runs.
    pub fn prepare(rates: Vec<RateSpec>) -> io::Result<Capture> {
        Ok(Capture {
            sink: Arc::new(Mutex::new(Collector::new(rates))),
            markers: Arc::new(Mutex::new(MarkerFile::create()?)),
            pumps: Vec::new(),
            marker_thread: None,
            stop: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Variables for the job: the marker file, and `PYTHONUNBUFFERED=1` unless gpuledger's own
    /// environment sets it (a pipe would otherwise hold Python's output back in 8 KiB blocks).
    pub fn env(&self) -> Vec<(String, String)> {
        let path = self
            .markers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .path()
            .display()
            .to_string();
        let mut env = vec![(MARKERS_ENV.to_string(), path)];
        if std::env::var_os("PYTHONUNBUFFERED").is_none() {
            env.push(("PYTHONUNBUFFERED".into(), "1".into()));
        }
        env
    }

    /// Starts passing the job's output through and reading its markers.
    pub fn attach(&mut self, stdout: Option<ChildStdout>, stderr: Option<ChildStderr>) {
        if let Some(r) = stdout {
            let sink = self.sink.clone();
            self.pumps.push(std::thread::spawn(move || {
                pump(r, Some(io::stdout()), Stream::Stdout, &sink)
            }));
        }
        if let Some(r) = stderr {
            let sink = self.sink.clone();
            self.pumps.push(std::thread::spawn(move || {
                pump(r, Some(io::stderr()), Stream::Stderr, &sink)
            }));
        }
        let (sink, markers, stop) = (self.sink.clone(), self.markers.clone(), self.stop.clone());
        self.marker_thread = Some(std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let mut m = markers.lock().unwrap_or_else(|e| e.into_inner());
                // An unreadable marker file loses markers, never the job's run.
                let _ = m.read_new(now_ms(), &sink);
                drop(m);
                std::thread::sleep(MARKER_POLL);
            }
        }));
    }

    /// What arrived since the last call.
    pub fn take(&self) -> Batch {
        lock(&self.sink).take()
    }

    /// After the job ended: waits up to `wait` for its output to close (a daemon it left behind
    /// may hold the pipes open; its later output still passes through), reads the marker file a
    /// last time and returns what is left, the tail and the totals.
    pub fn finish(mut self, wait: Duration) -> (Batch, Vec<OutputLine>, Counts) {
        let start = Instant::now();
        while self.pumps.iter().any(|p| !p.is_finished()) && start.elapsed() < wait {
            std::thread::sleep(Duration::from_millis(10));
        }
        for p in std::mem::take(&mut self.pumps) {
            if p.is_finished() {
                let _ = p.join();
            }
        }
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.marker_thread.take() {
            let _ = t.join();
        }
        let _ = self
            .markers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .read_new(now_ms(), &self.sink);
        let mut sink = lock(&self.sink);
        (sink.take(), sink.tail(), sink.counts().clone())
    }
}

impl Drop for Capture {
    /// A capture dropped without [`Capture::finish`] (the recording failed) stops its marker
    /// reader; the pumps end with the job's output.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}
