//! Installed packages, read from the package managers' own databases rather than by running
//! their tools: dpkg's status file, pacman's local database directory. Only rpm, whose database
//! is a binary format, is asked by running `/usr/bin/rpm`, by that fixed path and with an empty
//! environment, never a program found on `$PATH`.
//!
//! ref: dpkg's deb-control(5) and the status database (`Package:`, `Status:`, `Version:`
//! stanzas); pacman's `local/<name>-<version>-<release>/desc` layout (libalpm's db_local).

use crate::root::Root;
use std::process::Command;

/// Largest dpkg status file read (a desktop with 5,000 packages has about 8 MB).
const DPKG_STATUS_BYTES: u64 = 64 << 20;
/// The rpm program, by its fixed path.
pub const RPM: &str = "/usr/bin/rpm";

/// Where a list of packages came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackageDb {
    /// `var/lib/dpkg/status`.
    Dpkg,
    /// `var/lib/pacman/local`.
    Pacman,
    /// `/usr/bin/rpm -qa`.
    Rpm,
}

impl PackageDb {
    /// How reports name the source.
    pub fn as_str(self) -> &'static str {
        match self {
            PackageDb::Dpkg => "/var/lib/dpkg/status",
            PackageDb::Pacman => "/var/lib/pacman/local",
            PackageDb::Rpm => "/usr/bin/rpm -qa",
        }
    }
}

/// Installed packages whose names pass `keep`, from the first database that has any.
pub fn installed(
    root: &Root,
    keep: impl Fn(&str) -> bool,
) -> Option<(PackageDb, Vec<(String, String)>)> {
    [PackageDb::Dpkg, PackageDb::Pacman, PackageDb::Rpm]
        .into_iter()
        .find_map(|db| {
            let found: Vec<(String, String)> = read(root, db)?
                .into_iter()
                .filter(|(n, _)| keep(n))
                .collect();
            (!found.is_empty()).then_some((db, found))
        })
}

/// Largest `var/lib/dpkg/info/PKG.list` read (a runtime package lists a few hundred paths).
const DPKG_LIST_BYTES: u64 = 4 << 20;

/// The dpkg package, among those whose names pass `keep`, whose file list
/// (`var/lib/dpkg/info/NAME[:ARCH].list`) holds `path`.
pub fn dpkg_owner(root: &Root, path: &str, keep: impl Fn(&str) -> bool) -> Option<String> {
    let names = root.list_dir("var/lib/dpkg/info").ok()?;
    names.iter().find_map(|n| {
        let n = n.to_str()?;
        let stem = n.strip_suffix(".list")?;
        let package = stem.split_once(':').map_or(stem, |(p, _)| p);
        if !keep(package) {
            return None;
        }
        let raw = root
            .read_capped(format!("var/lib/dpkg/info/{n}"), DPKG_LIST_BYTES)
            .ok()?;
        String::from_utf8_lossy(&raw)
            .lines()
            .any(|l| l == path)
            .then(|| package.to_string())
    })
}

/// Every package `db` lists under `root` (rpm: on the live machine only).
fn read(root: &Root, db: PackageDb) -> Option<Vec<(String, String)>> {
    match db {
        PackageDb::Dpkg => {
            let text = root
                .read_capped("var/lib/dpkg/status", DPKG_STATUS_BYTES)
                .ok()?;
            Some(dpkg_status(&String::from_utf8_lossy(&text)))
        }
        PackageDb::Pacman => pacman_local(root),
        PackageDb::Rpm if root.is_live() => rpm_query(),
        PackageDb::Rpm => None,
    }
}

/// Installed packages of a dpkg status file (stanzas separated by blank lines).
pub fn dpkg_status(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for stanza in text.split("\n\n") {
        let field = |key: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
        };
        let installed = field("Status:").is_some_and(|s| s.ends_with(" installed"));
        if let (true, Some(name), Some(version)) = (installed, field("Package:"), field("Version:"))
        {
            out.push((name, version));
        }
    }
    out
}

/// Packages of pacman's local database: one directory `<name>-<version>-<release>` each.
fn pacman_local(root: &Root) -> Option<Vec<(String, String)>> {
    let names = root.list_dir("var/lib/pacman/local").ok()?;
    Some(
        names
            .iter()
            .filter_map(|n| pacman_entry(&n.to_string_lossy()))
            .collect(),
    )
}

/// `name-version-release` split at its last two dashes (names may hold dashes, versions not).
fn pacman_entry(dir: &str) -> Option<(String, String)> {
    let (rest, release) = dir.rsplit_once('-')?;
    let (name, version) = rest.rsplit_once('-')?;
    (!name.is_empty() && !version.is_empty() && !release.is_empty())
        .then(|| (name.to_string(), format!("{version}-{release}")))
}

/// `rpm -qa` by its fixed path, with an empty environment.
fn rpm_query() -> Option<Vec<(String, String)>> {
    let out = Command::new(RPM)
        .args(["-qa", "--qf", "%{NAME}\t%{VERSION}-%{RELEASE}\n"])
        .env_clear()
        .env("LC_ALL", "C")
        .output()
        .ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let (n, v) = l.split_once('\t')?;
                Some((n.to_string(), v.to_string()))
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dpkg_status_keeps_installed_packages_only() {
        let text = "Package: intel-opencl-icd\nStatus: install ok installed\nVersion: 26.22.38646.4-0\n\n\
                    Package: libze-intel-gpu1\nStatus: deinstall ok config-files\nVersion: 26.05.37020.3-0\n\n\
                    Package: broken\nStatus: install ok installed\n";
        assert_eq!(
            dpkg_status(text),
            vec![(
                "intel-opencl-icd".to_string(),
                "26.22.38646.4-0".to_string()
            )]
        );
    }

    #[test]
    fn databases_are_read_not_programs_run() {
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("var/lib/pacman/local");
        std::fs::create_dir_all(local.join("intel-compute-runtime-26.09.37435.7-1")).unwrap();
        std::fs::create_dir_all(local.join("bash-5.2.037-1")).unwrap();
        std::fs::write(local.join("ALPM_DB_VERSION"), "9\n").unwrap();
        let root = Root::open(dir.path()).unwrap();
        let (db, found) = installed(&root, |n| n.starts_with("intel")).unwrap();
        assert_eq!(db, PackageDb::Pacman);
        assert_eq!(
            found,
            vec![(
                "intel-compute-runtime".to_string(),
                "26.09.37435.7-1".to_string()
            )]
        );
        std::fs::create_dir_all(dir.path().join("var/lib/dpkg")).unwrap();
        std::fs::write(
            dir.path().join("var/lib/dpkg/status"),
            "Package: intel-opencl-icd\nStatus: install ok installed\nVersion: 26.22.1-0\n",
        )
        .unwrap();
        let (db, found) = installed(&root, |n| n.starts_with("intel")).unwrap();
        assert_eq!((db, found.len()), (PackageDb::Dpkg, 1));
    }

    #[test]
    fn a_dpkg_query_on_path_is_never_run() {
        // A `dpkg-query` planted first on $PATH would leave this file behind if it were run.
        let bin = tempfile::tempdir().unwrap();
        let canary = bin.path().join("ran");
        let fake = bin.path().join("dpkg-query");
        std::fs::write(&fake, format!("#!/bin/sh\ntouch {}\n", canary.display())).unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        for name in ["rpm", "pacman", "lspci"] {
            std::fs::copy(&fake, bin.path().join(name)).unwrap();
        }
        let path = format!(
            "{}:{}",
            bin.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let status = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "sources::packages::tests::gather_on_live",
                "--ignored",
            ])
            .env("PATH", path)
            .status()
            .unwrap();
        assert!(status.success());
        assert!(!canary.exists(), "a program found on $PATH was run");
    }

    /// Run by [`a_dpkg_query_on_path_is_never_run`] with a hostile `$PATH`.
    #[test]
    #[ignore = "run by a_dpkg_query_on_path_is_never_run with a planted $PATH"]
    fn gather_on_live() {
        let _ = crate::sources::system_info::gather(&Root::live(), &[], &["0000:00:00.0".into()]);
    }
}
