//! `plot`: a self-contained page, rendered by headless Chromium to a PNG and its DOM checked.

mod common;
use common::*;
use std::process::Command;

fn chromium() -> Option<&'static str> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
}

fn headless(user_dir: &std::path::Path) -> Command {
    let mut c = Command::new(chromium().unwrap());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .arg(format!("--user-data-dir={}", user_dir.display()));
    c
}

#[test]
fn plot_page_is_self_contained_and_renders() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(run(&["demo", "--keep", tmp.path().to_str().unwrap()])
        .status
        .success());
    let (a, b) = (
        tmp.path().join("A-eager.ledger"),
        tmp.path().join("B-deferred.ledger"),
    );
    let page = tmp.path().join("report.html");
    let out = run(&[
        "plot",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // Only the SVG namespace URI may appear: no scripts, stylesheets, images or links to fetch.
    let outside = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(
        !html.contains("<script") && !html.contains("<link") && !outside.contains("http"),
        "self-contained, no scripts"
    );
    assert_eq!(
        html.matches("<svg").count(),
        10,
        "4 rank×device timelines + host, for each run"
    );
    let Some(_) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install Debian's chromium package"
        );
        eprintln!("skipped the browser part: chromium not installed here");
        return;
    };
    let profile = tmp.path().join("profile");
    let dom = headless(&profile)
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("rank 0 (pid 4001) on 0000:03:00.0"),
        "chart titles rendered"
    );
    assert!(
        dom.contains("stepwise_growth") && dom.contains("released_on_exit"),
        "findings table"
    );
    assert!(
        dom.contains("A shows the peer-mirror pinning"),
        "diff section"
    );
    let png = tmp.path().join("report.png");
    let shot = headless(&profile)
        .args([
            "--window-size=1600,2400",
            &format!("--screenshot={}", png.display()),
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        shot.status.success(),
        "{}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        bytes.len() > 30_000,
        "a page with charts, not a blank screenshot ({} bytes)",
        bytes.len()
    );
}
