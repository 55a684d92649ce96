//! The exporter: endpoints and values, cardinality, load, and a real Prometheus scraping it.

mod common;
use common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn get(url: &str) -> String {
    ureq::get(url)
        .timeout(Duration::from_secs(5))
        .call()
        .unwrap()
        .into_string()
        .unwrap()
}

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
    let text = get(&format!("{}/metrics", s.base));
    assert_eq!(
        metric(
            &text,
            "gpuledger_host_memory_bytes",
            &[("kind", "gpu_active")]
        ),
        Some(27158118.0 * 1024.0)
    );
    let peer = [
        ("pid", "116400"),
        ("rank", "0"),
        ("device", "0000:04:00.0"),
        ("region", "gtt"),
        ("kind", "resident"),
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
    assert_eq!(get(&format!("{}/healthz", s.base)), "ok\n");
    let snap: serde_json::Value =
        serde_json::from_str(&get(&format!("{}/snapshot.json", s.base))).unwrap();
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
        get(&url);
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
                        match agent.get(&url).call().map(|r| r.into_string()) {
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

fn prometheus_bin() -> Option<std::path::PathBuf> {
    ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.exists())
}

#[test]
fn deploy_files_pass_promtool() {
    let Some(_) = prometheus_bin() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install Debian's prometheus package"
        );
        eprintln!("skipped: promtool not installed here");
        return;
    };
    let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    let out = Command::new("promtool")
        .arg("check")
        .arg("config")
        .arg(deploy.join("prometheus.yml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new("promtool")
        .arg("check")
        .arg("rules")
        .arg(deploy.join("alerts.yml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
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
    let Some(prom) = prometheus_bin() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install Debian's prometheus package"
        );
        eprintln!("skipped: prometheus not installed here");
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
    let q = "gpuledger_process_memory_bytes{rank=\"0\",device=\"0000:04:00.0\",region=\"gtt\",kind=\"resident\"}";
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
    assert!(get(&format!("{}/metrics", s.base)).ends_with("# EOF\n"));
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "answers others while slow clients hang"
    );
    let after = rss_kb(s.child.id());
    drop(slow);
    assert_eq!(get(&format!("{}/healthz", s.base)), "ok\n");
    assert!(
        after < before + 30 * 1024,
        "RSS {before} kB -> {after} kB with 300 slow clients"
    );
}
