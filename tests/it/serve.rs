//! The exporter: endpoints and values, cardinality, load, and a real Prometheus scraping it.

use crate::common;
mod exposition;
use common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn metric(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .find_map(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
                .then(|| l.rsplit(' ').next()?.parse().ok())?
        })
}

#[test]
fn endpoints_and_values() {
    let s = serve_root(&fixture("seed-2622"), &["--interval", "1s"]);
    let text = s.get("/metrics");
    assert!(
        text.lines()
            .any(|l| l == format!("gpuledger_host_gpu_active_bytes {}", 27158118u64 * 1024)),
        "{text}"
    );
    let peer = [
        ("pid", "116400"),
        ("rank", "0"),
        ("device", "0000:04:00.0"),
        ("region", "gtt"),
    ];
    assert_eq!(
        metric(&text, "gpuledger_process_memory_bytes", &peer),
        Some(8913000.0 * 1024.0)
    );
    assert_eq!(
        metric(
            &text,
            "gpuledger_findings",
            &[("kind", "peer_mirror"), ("severity", "critical")]
        ),
        Some(2.0)
    );
    assert_eq!(
        metric(
            &text,
            "gpuledger_finding_bytes",
            &[
                ("kind", "peer_mirror"),
                ("rank", "1"),
                ("backing", "pinned")
            ]
        ),
        Some(9011816.0 * 1024.0)
    );
    assert!(
        text.contains("gpuledger_device_info{device=\"0000:03:00.0\",driver=\"xe\""),
        "{text}"
    );
    assert_eq!(s.get("/healthz"), "ok\n");
    let snap: serde_json::Value = serde_json::from_str(&s.get("/snapshot.json")).unwrap();
    assert_eq!(snap["schema"], "gpuledger.snapshot/1");
    let err = ureq::get(&format!("{}/nope", s.base)).call().unwrap_err();
    assert!(matches!(err, ureq::Error::Status(404, _)));
}

#[test]
fn busy_port_is_a_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = run(&[
        "--root",
        fixture("seed-2605").to_str().unwrap(),
        "serve",
        "--listen",
        &addr,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("cannot listen on {addr}")));
}

fn rss_kb(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let l = s.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    l.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn concurrent_scrapes_are_all_answered_and_memory_stays_flat() {
    let secs: u64 = std::env::var("GPULEDGER_LOAD_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let s = serve_root(&fixture("seed-2622"), &["--interval", "200ms"]);
    let url = format!("{}/metrics", s.base);
    for _ in 0..50 {
        s.get("/metrics");
    }
    let before = rss_kb(s.child.id());
    let end = Instant::now() + Duration::from_secs(secs);
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(10))
        .build();
    let results: Vec<(usize, usize, Vec<Duration>)> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..200)
            .map(|_| {
                let (url, agent) = (url.clone(), agent.clone());
                sc.spawn(move || {
                    let (mut ok, mut failed, mut lat) = (0, 0, Vec::new());
                    while Instant::now() < end {
                        let t = Instant::now();
                        let req = agent.get(&url).set("Accept", PROMETHEUS_ACCEPT);
                        match req.call().map(|r| r.into_string()) {
                            Ok(Ok(body)) if body.ends_with("# EOF\n") => ok += 1,
                            _ => failed += 1,
                        }
                        lat.push(t.elapsed());
                    }
                    (ok, failed, lat)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ok: usize = results.iter().map(|r| r.0).sum();
    let failed: usize = results.iter().map(|r| r.1).sum();
    let mut lat: Vec<Duration> = results.into_iter().flat_map(|r| r.2).collect();
    lat.sort();
    let p99 = lat[lat.len() * 99 / 100];
    let after = rss_kb(s.child.id());
    eprintln!("200 concurrent scrapers for {secs} s: {ok} answered, {failed} failed, p99 {p99:?}, RSS {before} kB -> {after} kB");
    assert_eq!(failed, 0);
    assert!(ok >= 200);
    assert!(
        after < before + 20 * 1024,
        "RSS grew from {before} kB to {after} kB"
    );
}

#[test]
fn deploy_files_pass_promtool() {
    if prometheus().is_none() {
        return;
    }
    let deploy = repo_path("deploy");
    for (check, file) in [
        ("check config", "prometheus.yml"),
        ("check rules", "alerts.yml"),
        ("test rules", "rules-test.yml"),
    ] {
        run_ok(
            Command::new("promtool")
                .args(check.split(' '))
                .arg(deploy.join(file)),
        );
    }
    let dash: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(deploy.join("grafana-dashboard.json")).unwrap(),
    )
    .unwrap();
    assert!(dash["panels"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["targets"][0]["expr"]
            .as_str()
            .unwrap()
            .contains("gpuledger_")));
    let unit = std::fs::read_to_string(deploy.join("gpuledger.service")).unwrap();
    assert!(unit.contains("ExecStart=/usr/local/bin/gpuledger serve --listen 127.0.0.1:9464"));
}

#[test]
fn prometheus_scrapes_a_live_simulation() {
    let Some(prom) = prometheus() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("sim");
    let _sim = live_sim(&tree, "20s", &[]);
    let s = serve_root(&tree, &["--interval", "250ms"]);
    let target = s.base.trim_start_matches("http://").to_string();
    let config = tmp.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: gpuledger\n    static_configs:\n      - targets: [\"{target}\"]\n"),
    )
    .unwrap();
    let port = free_port();
    let mut p = Command::new(prom)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            tmp.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let q = "gpuledger_process_memory_bytes{rank=\"0\",device=\"0000:04:00.0\",region=\"gtt\"}";
    let seg = 3_174_400f64 * 1024.0;
    let base = 4.0 * 1048576.0;
    let deadline = Instant::now() + Duration::from_secs(25);
    let mut best = 0.0f64;
    while Instant::now() < deadline && best < base + 6.0 * seg {
        std::thread::sleep(Duration::from_millis(500));
        let Ok(resp) = ureq::get(&format!("http://127.0.0.1:{port}/api/v1/query"))
            .query("query", q)
            .call()
        else {
            continue;
        };
        let v: serde_json::Value = serde_json::from_str(&resp.into_string().unwrap()).unwrap();
        if let Some(val) = v["data"]["result"][0]["value"][1].as_str() {
            let b: f64 = val.parse().unwrap();
            let steps = (b - base) / seg;
            assert!(
                (steps - steps.round()).abs() < 1e-9 && (0.0..=6.0).contains(&steps),
                "{b} is no step of the model"
            );
            best = best.max(b);
        }
    }
    let _ = p.kill();
    let _ = p.wait();
    assert_eq!(
        best,
        base + 6.0 * seg,
        "Prometheus saw rank 0's peer-fd GTT reach the full mirror"
    );
}

#[test]
fn malformed_requests_and_slow_clients_do_not_stop_it() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    let s = serve_root(&fixture("seed-2605"), &["--interval", "1s"]);
    let addr = s.base.trim_start_matches("http://").to_string();
    for junk in [
        &b"\x00\xff\xfe garbage\r\n\r\n"[..],
        b"GET /metrics HTTP/9.9\r\n\r\n",
        b"GET /metrics\r\nHost: x\r\n\r\n",
        &[b'A'; 70_000][..],
    ] {
        let mut c = TcpStream::connect(&addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = c.write_all(junk);
        let mut buf = Vec::new();
        let _ = c.read_to_end(&mut buf);
    }
    // Slowloris: many connections that send half a request and then nothing.
    let before = rss_kb(s.child.id());
    let slow: Vec<TcpStream> = (0..300)
        .filter_map(|_| {
            let mut c = TcpStream::connect(&addr).ok()?;
            c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                .ok()?;
            Some(c)
        })
        .collect();
    assert!(slow.len() >= 250);
    let t = Instant::now();
    assert!(s.openmetrics().ends_with("# EOF\n"));
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "answers others while slow clients hang"
    );
    let after = rss_kb(s.child.id());
    drop(slow);
    assert_eq!(s.get("/healthz"), "ok\n");
    assert!(
        after < before + 30 * 1024,
        "RSS {before} kB -> {after} kB with 300 slow clients"
    );
}

const EVIL: &str = "evil\"} 1\ngpuledger_fake_metric{x=\"y\\\"\\n\r";

/// Series whose values change from sample to sample whatever the machine does (time, the
/// exporter's own scan figures).
fn timed(name: &str) -> bool {
    [
        "gpuledger_sample_timestamp_seconds",
        "gpuledger_scan_duration_seconds",
        "gpuledger_scan_errors_total",
    ]
    .iter()
    .any(|t| name.starts_with(t))
}

#[test]
fn hostile_process_names_cannot_inject_series() {
    let (_tmp, tree) = fixture_copy("seed-2622");
    let pid = tree.join("proc/116400");
    std::fs::write(pid.join("comm"), format!("{EVIL}\n")).unwrap();
    std::fs::write(pid.join("cmdline"), format!("{EVIL}\0--x=\"}} 1\n\0")).unwrap();
    let mut env = std::fs::read(pid.join("environ")).unwrap();
    env.extend_from_slice(format!("SLURM_JOB_ID={EVIL}\0").as_bytes());
    std::fs::write(pid.join("environ"), env).unwrap();

    let plain = serve_root(&fixture("seed-2622"), &["--interval", "1s"]);
    let evil = serve_root(&tree, &["--interval", "200ms"]);
    let want = exposition::parse(&plain.openmetrics()).unwrap();
    let text = evil.openmetrics();
    let got = exposition::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(!text.contains("\ngpuledger_fake_metric"), "{text}");
    // Expected: the plain fixture's series, with pid 116400 named EVIL and its series and
    // findings carrying job=EVIL.
    let expected: Vec<_> = want
        .iter()
        .filter(|s| !timed(&s.name))
        .map(|s| {
            let mut labels = s.labels.clone();
            let evil_pid = labels.contains(&("pid".into(), "116400".into()));
            // Its findings carry its job label too.
            if evil_pid && s.name == "gpuledger_finding_bytes" {
                labels.push(("job".into(), EVIL.into()));
            }
            if evil_pid && s.name.starts_with("gpuledger_process_memory") {
                for (k, v) in labels.iter_mut() {
                    if k == "comm" {
                        *v = EVIL.into();
                    }
                }
                labels.push(("job".into(), EVIL.into()));
            }
            (s.name.clone(), labels, s.value)
        })
        .collect();
    let got: Vec<_> = got
        .into_iter()
        .filter(|s| !timed(&s.name))
        .map(|s| (s.name, s.labels, s.value))
        .collect();
    assert!(got
        .iter()
        .any(|(_, l, _)| l.contains(&("comm".into(), EVIL.into()))));
    let mut sorted_got = got.clone();
    sorted_got.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mut sorted_want = expected;
    sorted_want.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(sorted_got, sorted_want, "{text}");
    // Series come out in the same order from every sample (the exporter re-renders every 200 ms).
    std::thread::sleep(Duration::from_millis(500));
    let untimed =
        |t: &str| -> Vec<String> { t.lines().filter(|l| !timed(l)).map(String::from).collect() };
    assert_eq!(untimed(&evil.openmetrics()), untimed(&text));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    #[test]
    fn any_label_bytes_render_as_valid_exposition(
        words in proptest::collection::vec("(?s)[\\\\\"\n\r{}=, #a-z0-9\\PC]{0,24}", 1..8)
    ) {
        let r = exposition::check_hostile_render(&words);
        proptest::prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

/// Raises this test process's descriptor limit so it can hold `n` sockets.
fn raise_nofile(n: u64) {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut lim = getrlimit(Resource::Nofile);
    if lim.current.is_some_and(|c| c < n) {
        lim.current = Some(lim.maximum.map_or(n, |m| m.min(n)));
        setrlimit(Resource::Nofile, lim).unwrap();
    }
}

/// `serve` on `root` under `ulimit -n NOFILE`.
fn serve_limited(root: &std::path::Path, nofile: u32) -> Server {
    let port = free_port();
    Server::spawn(
        Command::new("bash")
            .arg("-c")
            .arg(format!("ulimit -n {nofile} && exec \"$@\""))
            .arg("bash")
            .arg(env!("CARGO_BIN_EXE_gpuledger"))
            .arg("--root")
            .arg(root)
            .args([
                "serve",
                "--interval",
                "1s",
                "--listen",
                &format!("127.0.0.1:{port}"),
            ]),
        port,
    )
}

#[test]
fn idle_connection_flood_does_not_starve_real_clients() {
    raise_nofile(4096);
    let s = serve_limited(&fixture("seed-2622"), 1024);
    let addr = s.base.trim_start_matches("http://").to_string();
    let t = Instant::now();
    let idle: Vec<std::net::TcpStream> = (0..1100)
        .map(|_| std::net::TcpStream::connect(&addr).unwrap())
        .collect();
    eprintln!("1100 idle connections opened in {:?}", t.elapsed());
    let t = Instant::now();
    for _ in 0..5 {
        let one = Instant::now();
        assert_eq!(s.get("/healthz"), "ok\n");
        assert!(s.openmetrics().ends_with("# EOF\n"));
        assert!(
            one.elapsed() < Duration::from_secs(3),
            "{:?}",
            one.elapsed()
        );
    }
    eprintln!(
        "5 x (/healthz + /metrics) with 1100 idle connections held: {:?}",
        t.elapsed()
    );
    // At the cap the oldest idle connections went first; the newest are still held.
    assert!(
        closed_by_server(&idle[0]),
        "oldest idle connection still open"
    );
    assert!(
        !closed_by_server(&idle[1099]),
        "newest idle connection closed"
    );
}

/// Whether the server has closed `c` (EOF or reset) rather than leaving it open and silent.
fn closed_by_server(c: &std::net::TcpStream) -> bool {
    use std::io::Read;
    c.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    !matches!((&*c).read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

#[test]
fn idle_and_kept_alive_connections_are_closed_after_the_header_timeout() {
    use std::io::{Read, Write};
    let s = serve_root(&fixture("seed-2605"), &["--interval", "1s"]);
    let addr = s.base.trim_start_matches("http://").to_string();
    let silent = std::net::TcpStream::connect(&addr).unwrap();
    let mut kept = std::net::TcpStream::connect(&addr).unwrap();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let t = Instant::now();
    let waits: Vec<Duration> = [silent, kept]
        .into_iter()
        .map(|mut c| {
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut buf = Vec::new();
            // Ends at the server's close (EOF or reset), or at the 10 s read timeout.
            let r = c.read_to_end(&mut buf);
            let timed_out = matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
            assert!(!timed_out, "connection still open after 10 s");
            t.elapsed()
        })
        .collect();
    eprintln!(
        "idle connection closed after {:?}, kept-alive one after {:?}",
        waits[0], waits[1]
    );
    for w in waits {
        assert!(
            w >= Duration::from_secs(4) && w < Duration::from_secs(8),
            "{w:?}"
        );
    }
}

#[test]
fn device_memory_and_driver_held_parts() {
    let s = serve_root(&fixture("amdgpu-meminfo"), &["--interval", "1s"]);
    let text = s.get("/metrics");
    let mem = |device: &str, region: &str, kind: &str| {
        metric(
            &text,
            &format!("gpuledger_device_memory_{kind}_bytes"),
            &[("device", device), ("region", region)],
        )
    };
    assert_eq!(
        mem("0000:03:00.0", "vram", "total"),
        Some(24560.0 * 1048576.0)
    );
    assert_eq!(
        mem("0000:03:00.0", "vram", "used"),
        Some(3.0 * 1073741824.0 + 300.0 * 1048576.0)
    );
    assert_eq!(
        mem("0000:03:00.0", "gtt", "total"),
        Some(32.0 * 1073741824.0)
    );
    // The CPU-visible window of VRAM is its own region, never added to the VRAM total.
    assert_eq!(
        mem("0000:03:00.0", "vis_vram", "total"),
        Some(256.0 * 1048576.0)
    );
    assert_eq!(
        mem("0000:03:00.0", "vis_vram", "used"),
        Some(120.0 * 1048576.0)
    );
    // The suspended card: amdgpu's mem_info reads do not wake it, so its numbers are there.
    assert_eq!(
        mem("0000:08:00.0", "vram", "total"),
        Some(16.0 * 1073741824.0)
    );
    assert_eq!(mem("0000:08:00.0", "vram", "used"), Some(0.0));
    assert_eq!(
        metric(
            &text,
            "gpuledger_driver_held_bytes",
            &[("part", "kernel_counter"), ("counter", "GPUActive")]
        ),
        Some(3_200_000.0 * 1024.0)
    );
    assert_eq!(
        metric(
            &text,
            "gpuledger_driver_held_bytes",
            &[("part", "pinned_shmem"), ("counter", "GPUActive")]
        ),
        None,
        "a zero part is not written"
    );
    drop(s);

    // xe: capacity from dmem.capacity only; no used series is invented for it.
    let s = serve_root(&fixture("xe-suspended"), &["--interval", "1s"]);
    let text = s.get("/metrics");
    for device in ["0000:03:00.0", "0000:04:00.0"] {
        assert_eq!(
            metric(
                &text,
                "gpuledger_device_memory_total_bytes",
                &[("device", device), ("region", "vram0")]
            ),
            Some(12.0 * 1073741824.0)
        );
    }
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("gpuledger_device_memory_used_bytes{")),
        "{text}"
    );
}
