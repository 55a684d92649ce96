//! Optional programs some tests drive (Prometheus, Chromium): a test skips without them on a
//! developer's machine; CI (`.ci/run`) installs them, so there a missing one fails.

use std::path::PathBuf;

/// The first of `paths` that exists, or None after a line saying the test skips; panics in CI.
fn installed(paths: &[&str], package: &str) -> Option<PathBuf> {
    let found = paths.iter().map(PathBuf::from).find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install Debian's {package} package"
        );
        eprintln!("skipped: {package} not installed here");
    }
    found
}

/// Prometheus (Debian's package also brings `promtool`).
pub fn prometheus() -> Option<PathBuf> {
    installed(
        &["/usr/bin/prometheus", "/usr/local/bin/prometheus"],
        "prometheus",
    )
}

/// Chromium, to render plot pages.
pub fn chromium() -> Option<PathBuf> {
    installed(
        &["/usr/bin/chromium", "/usr/bin/chromium-browser"],
        "chromium",
    )
}
