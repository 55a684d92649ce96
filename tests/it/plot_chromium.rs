//! `plot`: a self-contained A/B page from two simulated recordings, rendered by headless
//! Chromium; its DOM is checked and its screenshot decoded to find both runs' colours.

use crate::common;
use common::*;
use std::path::Path;
use std::process::Command;

/// Run A's and run B's line colours (chart.rs).
const A_RGB: [u8; 3] = [0, 114, 178];
const B_RGB: [u8; 3] = [213, 94, 0];

fn headless(browser: &Path, user_dir: &Path) -> Command {
    let mut c = Command::new(browser);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", user_dir.display()));
    c
}

/// The demo's two recordings (pinned vs registered-only backing), plotted; returns the page's path.
fn ab_page(dir: &Path) -> std::path::PathBuf {
    assert!(run(&["demo", "--keep", dir.to_str().unwrap()])
        .status
        .success());
    let page = dir.join("report.html");
    stdout_of(
        &[
            "plot",
            dir.join("A-pinned.ledger").to_str().unwrap(),
            dir.join("B-registered-only.ledger").to_str().unwrap(),
            "-o",
            page.to_str().unwrap(),
        ],
        0,
    );
    page
}

/// The `<svg>` elements of one `<section id=…>`.
fn svgs_of<'a>(html: &'a str, id: &str) -> Vec<&'a str> {
    let start = html.find(&format!("<section id=\"{id}\">")).unwrap();
    let end = start + html[start..].find("</section>").unwrap();
    html[start..end].split("<svg").skip(1).collect()
}

/// The text drawn inside an SVG (tick labels, axis captions), in order.
fn texts(svg: &str) -> Vec<&str> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| Some(t.split_once('>')?.1.split_once('<')?.0))
        .collect()
}

fn assert_static_page(html: &str) {
    // Only the SVG namespace URI may appear: no scripts, stylesheets, images or links to fetch.
    let outside = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(
        !html.contains("<script")
            && !html.contains("<link")
            && !html.contains("<img")
            && !outside.contains("href=\"http")
            && !outside.contains("src=\"http")
            && !outside.contains("url(http"),
        "self-contained, no scripts"
    );
    // Each rank's home card holds its VRAM; host-class memory sits on every card.
    for (id, least) in [("device-local", 2), ("host-class", 4)] {
        let svgs = svgs_of(html, id);
        assert!(
            svgs.len() >= least,
            "{id}: {least} charts or more, got {}",
            svgs.len()
        );
        assert!(
            svgs.iter().all(|s| texts(s) == texts(svgs[0])),
            "{id}: every small multiple has the same axes"
        );
        assert!(
            svgs.iter().any(|s| s.contains("#0072B2"))
                && svgs.iter().any(|s| s.contains("#D55E00")),
            "{id}: A and B overlaid"
        );
    }
    assert!(html.contains("<polygon"), "allocator steps marked");
}

/// The page's head and its two chart grids, nothing else.
fn charts_only(html: &str) -> String {
    let head = &html[..html.find("<body>").unwrap() + "<body>".len()];
    let grids: String = ["device-local", "host-class"]
        .iter()
        .map(|id| {
            let start = html.find(&format!("<section id=\"{id}\">")).unwrap();
            let end = start + html[start..].find("</section>").unwrap();
            &html[start..end]
        })
        .collect();
    format!("{head}{grids}</body></html>")
}

/// A 1400 px wide screenshot of `page`, written beside it as `name`.
fn screenshot(browser: &Path, profile: &Path, page: &Path, name: &str) -> std::path::PathBuf {
    let png = page.with_file_name(name);
    let shot = headless(browser, profile)
        .args([
            "--window-size=1400,2200",
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
    png
}

/// Pixels within a small distance of `rgb` (antialiased edges differ, line cores do not).
fn pixels_near(png: &[u8], rgb: [u8; 3]) -> (usize, usize) {
    let mut dec = png::Decoder::new(png);
    dec.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = dec.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = info.color_type.samples();
    assert!(step >= 3, "colour screenshot, got {:?}", info.color_type);
    let px: Vec<&[u8]> = buf[..info.buffer_size()].chunks(step).collect();
    let near = px
        .iter()
        .filter(|p| (0..3).all(|i| p[i].abs_diff(rgb[i]) <= 12))
        .count();
    let white = px.iter().filter(|p| p[..3] == [255, 255, 255]).count();
    (near, px.len() - white)
}

#[test]
fn ab_page_overlays_runs_and_renders_in_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let page = ab_page(tmp.path());
    let html = std::fs::read_to_string(&page).unwrap();
    assert_static_page(&html);
    let Some(browser) = chromium() else {
        return;
    };
    let browser = browser.as_path();
    let profile = tmp.path().join("profile");
    let dom = headless(browser, &profile)
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    for want in [
        "<table class=\"ranks\">",
        "rank 0 · home 0000:03:00.0",
        "not pinned (bookkeeping)",
        "<tr class=\"verdict\"><td colspan=\"11\">A shows the peer-mirror pinning",
        "released_on_exit",
    ] {
        assert!(dom.contains(want), "DOM lacks {want:?}");
    }
    let png = screenshot(browser, &profile, &page, "report.png");
    if let Some(keep) = std::env::var_os("GPULEDGER_KEEP_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }
    let bytes = std::fs::read(&png).unwrap();
    let (_, inked) = pixels_near(&bytes, A_RGB);
    eprintln!("screenshot: {} bytes, {inked} inked pixels", bytes.len());
    assert!(
        inked > 100_000,
        "a page with charts and tables, not a blank one ({inked} inked pixels)"
    );
    // The tables' A/B headers wear the run colours too: count the lines on the charts alone.
    let charts = tmp.path().join("charts.html");
    std::fs::write(&charts, charts_only(&html)).unwrap();
    let bytes = std::fs::read(screenshot(browser, &profile, &charts, "charts.png")).unwrap();
    let ((a, _), (b, _)) = (pixels_near(&bytes, A_RGB), pixels_near(&bytes, B_RGB));
    eprintln!("charts: A {a} px, B {b} px");
    assert!(
        a > 1_000 && b > 1_000,
        "both runs' lines on screen: A {a} px, B {b} px"
    );

    let single = tmp.path().join("single.html");
    stdout_of(
        &[
            "plot",
            tmp.path().join("A-pinned.ledger").to_str().unwrap(),
            "-o",
            single.to_str().unwrap(),
        ],
        0,
    );
    std::fs::write(
        &single,
        charts_only(&std::fs::read_to_string(&single).unwrap()),
    )
    .unwrap();
    let bytes = std::fs::read(screenshot(browser, &profile, &single, "single.png")).unwrap();
    let ((a, _), (b, _)) = (pixels_near(&bytes, A_RGB), pixels_near(&bytes, B_RGB));
    assert!(
        a > 1_000 && b < 50,
        "one run draws A's colour only: A {a} px, B {b} px"
    );
}

/// Eight ranks, A pinned and B registered-only, recorded through the library's simulator.
fn eight_rank_pair(dir: &Path) -> [std::path::PathBuf; 2] {
    use gpuledger::sim::{run::record, Backing, Scenario, SimParams, Simulation};
    [("A", Backing::Pinned), ("B", Backing::RegisteredOnly)].map(|(name, backing)| {
        let mut p = SimParams::new(Scenario::DdpPeerMirror);
        p.ranks = 8;
        p.backing = backing;
        let file = dir.join(format!("{name}.ledger"));
        let t = gpuledger::findings::Thresholds::default();
        record(&Simulation::new(p), &dir.join(name), &file, 120, &t).unwrap();
        file
    })
}

#[test]
fn eight_ranks_share_one_scale_per_class_and_stay_small() {
    let tmp = tempfile::tempdir().unwrap();
    let [a, b] = eight_rank_pair(tmp.path());
    let page = tmp.path().join("report.html");
    stdout_of(
        &[
            "plot",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "-o",
            page.to_str().unwrap(),
        ],
        0,
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert_static_page(&html);
    let ranks = html
        .split("<table class=\"ranks\">")
        .nth(1)
        .unwrap()
        .split("</table>")
        .next()
        .unwrap();
    for r in 0..8 {
        assert!(
            ranks.contains(&format!("<tr><th>rank {r}</th>")),
            "rank {r} has a row"
        );
    }
    let charts = svgs_of(&html, "device-local").len() + svgs_of(&html, "host-class").len();
    eprintln!(
        "8 ranks: {charts} charts, {} KiB of HTML",
        html.len() / 1024
    );
    assert!(
        charts >= 16,
        "every rank's home and mirrored peers drawn: {charts}"
    );
    assert!(
        html.contains("rank × device pairs held less than"),
        "near-empty peer charts are listed, not drawn"
    );
    assert!(
        html.len() < 8 << 20,
        "downsampled lines keep the page small: {} bytes",
        html.len()
    );
}
