//! Where CUPTI may be: the toolkit named by `CUDA_HOME` / `CUDA_PATH`, `/usr/local/cuda`, the
//! job's own Python wheels (`site-packages/nvidia/cu*/lib`, `nvidia/cuda_cupti/lib`, found from
//! the libraries already mapped into the process), then the dynamic loader's own search.

use std::path::{Path, PathBuf};

/// CUPTI sonames to try for a driver of `major` (CUDA 12 and 13 share the structs read here).
pub fn sonames(major: u32) -> Vec<String> {
    let mut v: Vec<u32> = [13, 12].into_iter().filter(|m| *m <= major).collect();
    v.sort_by_key(|m| (*m != major, u32::MAX - m));
    v.into_iter().map(|m| format!("libcupti.so.{m}")).collect()
}

/// Library folders of a toolkit at `home`.
fn toolkit_dirs(home: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Ok(rd) = std::fs::read_dir(home.join("targets")) {
        let mut t: Vec<PathBuf> = rd.flatten().map(|e| e.path().join("lib")).collect();
        t.sort();
        dirs.extend(t);
    }
    dirs.push(home.join("lib64"));
    dirs.push(home.join("extras/CUPTI/lib64"));
    dirs
}

/// `site-packages` folders of the libraries mapped into this process (`/proc/self/maps` text).
fn site_packages(maps: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for line in maps.lines() {
        let Some(path) = line.split_whitespace().nth(5) else {
            continue;
        };
        let Some(i) = path.find("/site-packages/") else {
            continue;
        };
        let sp = PathBuf::from(&path[..i + "/site-packages".len()]);
        if !out.contains(&sp) {
            out.push(sp);
        }
    }
    out
}

/// Library folders inside a `site-packages`.
fn wheel_dirs(sp: &Path) -> Vec<PathBuf> {
    let nv = sp.join("nvidia");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&nv)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("cu"))
                })
                .map(|p| p.join("lib"))
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs.push(nv.join("cuda_cupti/lib"));
    dirs
}

/// Candidate library paths in order; `homes` are CUDA_HOME, CUDA_PATH (where set) and
/// /usr/local/cuda; the bare sonames (the loader's search) come last.
pub fn candidates(major: u32, homes: &[PathBuf], maps: &str) -> Vec<PathBuf> {
    let names = sonames(major);
    let mut dirs: Vec<PathBuf> = homes.iter().flat_map(|h| toolkit_dirs(h)).collect();
    dirs.extend(site_packages(maps).iter().flat_map(|s| wheel_dirs(s)));
    let mut out: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .filter(|p| p.exists())
        .collect();
    out.extend(names.iter().map(PathBuf::from));
    out
}

/// The toolkit homes from the environment, then /usr/local/cuda.
pub fn homes() -> Vec<PathBuf> {
    let mut h: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .collect();
    h.push(PathBuf::from("/usr/local/cuda"));
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_matching_soname_first_and_none_newer_than_the_driver() {
        assert_eq!(sonames(13), ["libcupti.so.13", "libcupti.so.12"]);
        assert_eq!(sonames(12), ["libcupti.so.12"]);
        assert!(sonames(11).is_empty());
    }

    #[test]
    fn finds_toolkit_and_wheel_copies_in_order() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("cuda");
        let lib = home.join("targets/x86_64-linux/lib");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("libcupti.so.13"), "").unwrap();
        let sp = t.path().join("venv/lib/python3.12/site-packages");
        let wheel = sp.join("nvidia/cu13/lib");
        std::fs::create_dir_all(&wheel).unwrap();
        std::fs::write(wheel.join("libcupti.so.13"), "").unwrap();
        std::fs::write(wheel.join("libcudart.so.13"), "").unwrap();
        let maps = format!(
            "7f00-7f10 r-xp 00000000 08:01 12 {}\n7f20-7f30 r--p 0 0:0 0 [heap]\n",
            wheel.join("libcudart.so.13").display()
        );
        let got = candidates(13, &[home, t.path().join("nothing")], &maps);
        assert_eq!(
            got,
            [
                lib.join("libcupti.so.13"),
                wheel.join("libcupti.so.13"),
                PathBuf::from("libcupti.so.13"),
                PathBuf::from("libcupti.so.12"),
            ]
        );
    }
}
