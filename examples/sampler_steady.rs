//! Steady-state cost of repeated sampling on the live machine, for bench/scan.sh: samples at
//! `--hz` for `--seconds`, reports CPU time per wall second, and (with `--watch PATH`) how long
//! after PATH is opened by a new fd in an existing process the sampler reports it.
//!
//! usage: sampler_steady [HZ] [SECONDS] [WATCH_PID]   (WATCH_PID: a process that will open a
//! `/dev/dri/…` path after the warm-up; its appearance is timed)

use gpuledger::root::Root;
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use std::time::{Duration, Instant};

/// CPU time of this process's main thread (the sampler's), in seconds: the first field of
/// /proc/self/schedstat, in ns (utime and stime in /proc/self/stat count 10 ms ticks, too coarse
/// for a share near 1 %).
fn cpu_seconds() -> f64 {
    let text = std::fs::read_to_string("/proc/self/schedstat").expect("read /proc/self/schedstat");
    let ns: f64 = text
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .expect("schedstat's first field");
    ns / 1e9
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let hz: f64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10.0);
    let seconds: f64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(10.0);
    let watch: Option<u32> = args.get(3).and_then(|a| a.parse().ok());
    let mut sampler = Sampler::new(Root::live(), Scope::All, SamplerOptions::default());
    let t0 = Instant::now();
    let first = sampler.sample().expect("sample");
    let full = t0.elapsed();
    println!(
        "first full sample: {:.1} ms over {} processes",
        full.as_secs_f64() * 1e3,
        first.stats.processes
    );
    let period = Duration::from_secs_f64(1.0 / hz);
    // Warm-up: let every process get its first fd-count check.
    let warm_end = Instant::now() + Duration::from_secs(2);
    while Instant::now() < warm_end {
        sampler.sample().expect("sample");
        std::thread::sleep(period);
    }
    if let Some(pid) = watch {
        let _ = std::fs::write(format!("/tmp/gpuledger-bench-go-{pid}"), b"go");
    }
    let (c0, w0) = (cpu_seconds(), Instant::now());
    let links0 = sampler.links_read();
    let mut samples = 0u64;
    let mut tables = 0u64;
    let mut seen_after: Option<Duration> = None;
    while w0.elapsed().as_secs_f64() < seconds {
        let tick = Instant::now();
        let snap = sampler.sample().expect("sample");
        samples += 1;
        tables += snap.stats.fd_tables_read as u64;
        if let (Some(pid), None) = (watch, seen_after) {
            if snap.processes.iter().any(|p| p.pid == pid) {
                seen_after = Some(w0.elapsed());
            }
        }
        std::thread::sleep(period.saturating_sub(tick.elapsed()));
    }
    let wall = w0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - c0;
    println!(
        "steady state at {hz} Hz: {samples} samples in {wall:.1} s, CPU {:.2} % of one core, {:.1} fd tables re-read and {:.1} links read per sample",
        cpu / wall * 100.0,
        tables as f64 / samples.max(1) as f64,
        (sampler.links_read() - links0) as f64 / samples.max(1) as f64
    );
    if watch.is_some() {
        match seen_after {
            Some(d) => println!(
                "new GPU fd seen {:.0} ms after it was opened",
                d.as_secs_f64() * 1e3
            ),
            None => println!("new GPU fd NOT seen within {seconds} s"),
        }
    }
}
