//! What the exporter discloses and what its readers cost (issue 23, items 11 and 12): command
//! lines in /snapshot.json are redacted unless `--show-cmdline`, and slow readers of a large
//! /snapshot.json share the one rendering instead of each holding a copy.

use crate::common;
use common::*;
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

fn get(url: &str) -> String {
    ureq::get(url)
        .timeout(Duration::from_secs(10))
        .call()
        .unwrap()
        .into_string()
        .unwrap()
}

const SECRETS: [&str; 3] = ["hf_S3cretT0kenValue", "wJalrXUtnFEMIK7MDENG", "pAssW0rd99"];

#[test]
fn secret_looking_arguments_are_redacted_unless_asked_for() {
    let (_tmp, tree) = fixture_copy("seed-2622");
    let argv = [
        "/usr/bin/python3",
        "train.py",
        &format!("--hf-token={}", SECRETS[0]),
        &format!("AWS_SECRET_ACCESS_KEY={}", SECRETS[1]),
        "--db",
        &format!("postgres://admin:{}@db:5432/x", SECRETS[2]),
        "--epochs",
        "3",
    ];
    std::fs::write(tree.join("proc/116400/cmdline"), argv.join("\0") + "\0").unwrap();

    let s = serve_root(&tree, &["--interval", "1s"]);
    let snap = get(&format!("{}/snapshot.json", s.base));
    let metrics = get(&format!("{}/metrics", s.base));
    for secret in SECRETS {
        assert!(!snap.contains(secret), "{secret} disclosed in {snap}");
        assert!(!metrics.contains(secret), "{secret} disclosed in /metrics");
    }
    let doc: serde_json::Value = serde_json::from_str(&snap).unwrap();
    let cmdline = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == 116400)
        .map(|p| p["cmdline"].clone())
        .unwrap();
    assert_eq!(
        cmdline,
        "/usr/bin/python3 train.py --hf-token=<redacted> AWS_SECRET_ACCESS_KEY=<redacted> \
         --db postgres://admin:<redacted>@db:5432/x --epochs 3"
    );
    drop(s);

    let s = serve_root(&tree, &["--interval", "1s", "--show-cmdline"]);
    let snap = get(&format!("{}/snapshot.json", s.base));
    for secret in SECRETS {
        assert!(
            snap.contains(secret),
            "--show-cmdline shows {secret} as it is"
        );
    }
}

/// xe-two-tile's one DRM client repeated `pids` times, each with a command line of `arg_bytes`.
fn many_clients(base: &Path, pids: u32, arg_bytes: usize) {
    copy_fixture("xe-two-tile", base);
    let fdinfo = std::fs::read_to_string(base.join("proc/1383/fdinfo/8")).unwrap();
    std::fs::remove_dir_all(base.join("proc/1383")).unwrap();
    let arg = "x".repeat(arg_bytes);
    for i in 0..pids {
        let pid = 2000 + i;
        let d = base.join(format!("proc/{pid}"));
        std::fs::create_dir_all(d.join("fd")).unwrap();
        std::fs::create_dir(d.join("fdinfo")).unwrap();
        std::fs::write(d.join("comm"), "worker\n").unwrap();
        std::fs::write(d.join("cmdline"), format!("python3\0{arg}\0")).unwrap();
        std::os::unix::fs::symlink("/dev/dri/renderD128", d.join("fd/5")).unwrap();
        let info = fdinfo.replace("drm-client-id:\t173", &format!("drm-client-id:\t{pid}"));
        std::fs::write(d.join("fdinfo/5"), info).unwrap();
    }
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn slow_readers_share_one_snapshot_rendering() {
    const READERS: usize = 100;
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    many_clients(&tree, 1000, 2000);
    let s = serve_root(&tree, &["--interval", "60s"]);
    let size = get(&format!("{}/snapshot.json", s.base)).len() as u64;
    assert!(size > 3_000_000, "the snapshot is {size} bytes");
    let before = rss_kib(s.child.id());
    let addr: std::net::SocketAddr = s.base.trim_start_matches("http://").parse().unwrap();
    // Each reader asks for the snapshot, reads 1 byte of it, and stops reading. Its receive
    // buffer is 4 KiB, so the kernel cannot take the response off the exporter's hands.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let readers: Vec<std::net::TcpStream> = (0..READERS)
        .map(|_| {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.set_recv_buffer_size(4096).unwrap();
            let c = rt.block_on(socket.connect(addr)).unwrap();
            let mut c = c.into_std().unwrap();
            c.set_nonblocking(false).unwrap();
            c.write_all(b"GET /snapshot.json HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let _ = c.read(&mut [0u8; 1]).unwrap();
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let after = rss_kib(s.child.id());
    let grown = after.saturating_sub(before) * 1024;
    eprintln!("{READERS} slow readers of a {size}-byte snapshot: RSS {before} KiB -> {after} KiB");
    // A private copy each would be READERS × size (390 MB here); shared, a few buffers.
    assert!(
        grown < 5 * size,
        "RSS grew by {grown} bytes for {READERS} readers of {size} bytes"
    );
    drop(readers);
}
