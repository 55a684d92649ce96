//! What a bug report needs about the machine: kernel, distribution, driver module versions,
//! `/dev/dri/by-path`, the kernel command line and loaded GPU modules, installed GPU runtime
//! packages (dpkg's or pacman's database, `/usr/bin/rpm`; else the versioned sonames of the
//! runtime libraries),
//! NVIDIA and ROCm versions, and the PyTorch / oneCCL found beside a Python process.
//!
//! Only what is found is reported; package managers and library directories are looked at only
//! on the live machine (a capture carries its os-release and proc/version).

use super::packages;
use crate::layout;
use crate::root::Root;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Names of packages and libraries that belong to a GPU compute stack.
const STACK: [&str; 14] = [
    "intel-compute-runtime",
    "intel-opencl-icd",
    "libze-intel-gpu",
    "intel-level-zero-gpu",
    "libze1",
    "level-zero",
    "libigc",
    "intel-igc",
    "libigdgmm",
    "intel-gmmlib",
    "intel-ocloc",
    "oneccl",
    "rocm",
    "nvidia-driver",
];
const LIBS: [&str; 4] = [
    "libze_intel_gpu.so",
    "libigc.so",
    "libigdgmm.so",
    "libze_loader.so",
];

/// Facts about the machine, each `None` when not found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SystemInfo {
    /// `/proc/version`.
    pub kernel: Option<String>,
    /// `/proc/cmdline`.
    pub cmdline: Option<String>,
    /// os-release `PRETTY_NAME`.
    pub distro: Option<String>,
    /// Hostname.
    pub hostname: Option<String>,
    /// Loaded GPU kernel modules (`/proc/modules`: xe, i915, amdgpu, nvidia…).
    pub modules: Vec<String>,
    /// `/sys/module/<driver>/version` where present.
    pub driver_versions: BTreeMap<String, String>,
    /// `/dev/dri/by-path` entry → target.
    pub by_path: Vec<(String, String)>,
    /// Installed GPU stack packages (name → version) and how they were found.
    pub packages: BTreeMap<String, String>,
    /// Where `packages` came from (the dpkg or pacman database, rpm, sonames).
    pub packages_source: Option<String>,
    /// `/proc/driver/nvidia/version` first line.
    pub nvidia: Option<String>,
    /// `/opt/rocm/.info/version`.
    pub rocm: Option<String>,
    /// The CUDA toolkit's version (`/usr/local/cuda/version.json`, `cuda.version`).
    pub cuda_toolkit: Option<String>,
    /// Python packages found beside a recorded Python process (torch, oneccl_bindings_for_pytorch).
    pub python: BTreeMap<String, String>,
    /// `lspci -vvv -k -s SLOT` per PCI slot (live machine, where lspci exists).
    pub lspci: BTreeMap<String, String>,
}

fn text(root: &Root, rel: &str) -> Option<String> {
    root.read_string(rel)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Largest `version.json` of a CUDA toolkit read (the real one is a few KiB).
const CUDA_VERSION_JSON_BYTES: u64 = 1 << 20;

/// `usr/local/cuda/version.json`'s `cuda.version` (what `nvcc` would be built from).
fn cuda_toolkit(root: &Root) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Part {
        version: String,
    }
    #[derive(serde::Deserialize)]
    struct VersionJson {
        cuda: Part,
    }
    let bytes = root
        .read_capped("usr/local/cuda/version.json", CUDA_VERSION_JSON_BYTES)
        .ok()?;
    serde_json::from_slice::<VersionJson>(&bytes)
        .ok()
        .map(|v| v.cuda.version)
}

/// Gathers everything findable under `root`; `python_pids` are processes to look beside and
/// `pci_slots` the GPUs to describe with lspci.
pub fn gather(root: &Root, python_pids: &[u32], pci_slots: &[String]) -> SystemInfo {
    let mut s = SystemInfo {
        kernel: text(root, layout::VERSION),
        cmdline: text(root, layout::KERNEL_CMDLINE),
        hostname: text(root, layout::HOSTNAME),
        nvidia: text(root, layout::NVIDIA_VERSION).and_then(|t| t.lines().next().map(String::from)),
        rocm: text(root, "opt/rocm/.info/version"),
        cuda_toolkit: cuda_toolkit(root),
        ..Default::default()
    };
    s.distro = text(root, layout::OS_RELEASE).and_then(|t| {
        t.lines()
            .find_map(|l| {
                l.strip_prefix("PRETTY_NAME=")
                    .or_else(|| l.strip_prefix("NAME="))
            })
            .map(|v| v.trim_matches('"').to_string())
    });
    let gpu_modules = [
        "xe",
        "i915",
        "amdgpu",
        "nvidia",
        "nvidia_uvm",
        "nvidia_drm",
        "msm",
        "panfrost",
        "panthor",
        "v3d",
        "ivpu",
        "amdxdna",
    ];
    if let Some(m) = text(root, layout::MODULES) {
        s.modules = m
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| gpu_modules.contains(n))
            .map(String::from)
            .collect();
    }
    for d in gpu_modules {
        if let Some(v) = text(root, &layout::module_version(d)) {
            s.driver_versions.insert(d.to_string(), v);
        }
    }
    if let Ok(names) = root.list_dir(layout::DRI_BY_PATH) {
        for n in names {
            let n = n.to_string_lossy().into_owned();
            if let Ok(t) = root.read_link(layout::dri_by_path(&n)) {
                s.by_path.push((n, t.display().to_string()));
            }
        }
        s.by_path.sort();
    }
    // The package databases are files under the root (a capture tree keeps dpkg's), so the
    // report's table and the known-issue matcher read the same packages.
    (s.packages, s.packages_source) = packages(root);
    if root.is_live() {
        let start = std::time::Instant::now();
        for &pid in python_pids {
            // Each tree has its own budget; together they never hold a snapshot up for long.
            if start.elapsed() > PYTHON_TOTAL_BUDGET {
                break;
            }
            s.python.extend(python_packages(root, pid));
        }
        for slot in pci_slots.iter().filter(|s| s.contains(':')) {
            let lspci = LSPCI.iter().find(|p| Path::new(p).is_file());
            if let Some(out) = lspci.and_then(|p| run(p, &["-vvv", "-k", "-s", slot])) {
                s.lspci.insert(slot.clone(), out.trim_end().to_string());
            }
        }
    }
    s
}

/// Where lspci is looked for: fixed paths, never `$PATH`.
const LSPCI: [&str; 3] = ["/usr/bin/lspci", "/usr/sbin/lspci", "/sbin/lspci"];

/// Runs the program at the fixed path `cmd` with an empty environment; its stdout on success.
fn run(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd)
        .args(args)
        .env_clear()
        .env("LC_ALL", "C")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn in_stack(name: &str) -> bool {
    STACK.iter().any(|s| name.starts_with(s))
}

/// GPU stack packages from the package database under `root` (see [`packages::installed`]),
/// else, on the live machine, the versioned sonames of the runtime libraries.
fn packages(root: &Root) -> (BTreeMap<String, String>, Option<String>) {
    if let Some((db, found)) = packages::installed(root, in_stack) {
        return (found.into_iter().collect(), Some(db.as_str().to_string()));
    }
    if !root.is_live() {
        return (BTreeMap::new(), None);
    }
    let found = sonames();
    let source = (!found.is_empty()).then(|| "library sonames".to_string());
    (found, source)
}

fn sonames() -> BTreeMap<String, String> {
    let dirs = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
        "/opt/intel/oneapi/lib",
    ];
    let mut out = BTreeMap::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            for lib in LIBS {
                if let Some(ver) = name.strip_prefix(lib).and_then(|v| v.strip_prefix('.')) {
                    let longer = out
                        .get(lib)
                        .is_none_or(|old: &String| ver.len() > old.len());
                    if ver.contains('.') && longer {
                        out.insert(lib.to_string(), ver.to_string());
                    }
                }
            }
        }
    }
    out
}

/// Time one process's Python tree may take to read (a hung network mount costs this, no more).
const PYTHON_TREE_BUDGET: Duration = Duration::from_millis(500);
/// Time all the Python trees of one snapshot may take together.
const PYTHON_TOTAL_BUDGET: Duration = Duration::from_secs(1);
/// Largest `torch/version.py` read (the real one is a few hundred bytes).
const VERSION_PY_BYTES: u64 = 64 << 10;
/// Most entries read from one directory of the Python tree.
const PYTHON_DIR_ENTRIES: usize = 100_000;

/// Python distributions whose versions a report gives (names as pip normalises them), and the
/// name prefixes of the families built per CUDA or ROCm version (`jax-cuda13-plugin`).
const FRAMEWORKS: [&str; 14] = [
    "torch",
    "torchvision",
    "jax",
    "jaxlib",
    "triton",
    "timm",
    "transformers",
    "sentence-transformers",
    "lightning",
    "pytorch-lightning",
    "intel-extension-for-pytorch",
    "oneccl-bind-pt",
    "tensorflow",
    "onnxruntime-gpu",
];
const FRAMEWORK_FAMILIES: [&str; 6] = [
    "jax-cuda",
    "jax-rocm",
    "cupy",
    "nvidia-cuda-runtime",
    "nvidia-nccl",
    "nvidia-cudnn",
];

/// A `NAME-VERSION.dist-info` directory name as (normalised name, version), for the
/// distributions of [`FRAMEWORKS`] and [`FRAMEWORK_FAMILIES`].
fn dist_info(dir: &str) -> Option<(String, String)> {
    let stem = dir.strip_suffix(".dist-info")?;
    let (name, version) = stem.split_once('-')?;
    let name = name.to_ascii_lowercase().replace(['_', '.'], "-");
    let known = FRAMEWORKS.contains(&name.as_str())
        || FRAMEWORK_FAMILIES.iter().any(|f| name.starts_with(f));
    (known && !version.is_empty()).then(|| (name, version.to_string()))
}

/// The site directories (`…/site-packages`, `…/dist-packages`) of the files a process has
/// mapped: where the interpreter of a virtual environment really loads its packages from.
fn mapped_sites(root: &Root, pid: u32) -> BTreeSet<PathBuf> {
    let files = crate::sources::proc_pid::mapped_files(root, pid).unwrap_or_default();
    files.iter().filter_map(|f| site_of(f)).collect()
}

/// The site directory a file lies under, if any.
fn site_of(file: &Path) -> Option<PathBuf> {
    file.ancestors()
        .find(|a| {
            a.file_name()
                .is_some_and(|n| n == "site-packages" || n == "dist-packages")
        })
        .map(Path::to_path_buf)
}

/// Framework versions (torch, jax, CuPy, the CUDA runtime wheels, …) of a Python process's own
/// environment: the site directories of what it has mapped and those beside its interpreter,
/// `torch/version.py`'s version and CUDA (`torch.cuda`) and the `dist-info` names. The trees
/// belong to whoever runs the process, so they are read under [`Root::user_tree`]'s rule (no
/// links out of them, regular files only, capped, within [`PYTHON_TREE_BUDGET`]).
pub fn python_packages(root: &Root, pid: u32) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut sites = mapped_sites(root, pid);
    if let Some(prefix) = root
        .read_link(layout::proc_file(pid, "exe"))
        .ok()
        .and_then(|exe| exe.parent().and_then(Path::parent).map(Path::to_path_buf))
    {
        sites.extend(interpreter_sites(root, &prefix));
    }
    let start = std::time::Instant::now();
    for site in sites {
        let left = PYTHON_TREE_BUDGET.saturating_sub(start.elapsed());
        if let Ok(tree) = root.user_tree(&site, left) {
            read_site(&tree, &mut out);
        }
    }
    out
}

/// `lib*/python3*/{site,dist}-packages` under an interpreter's prefix.
fn interpreter_sites(root: &Root, prefix: &Path) -> Vec<PathBuf> {
    let Ok(tree) = root.user_tree(prefix, PYTHON_TREE_BUDGET) else {
        return Vec::new();
    };
    let mut sites = Vec::new();
    for lib in ["lib", "lib64", "local/lib"] {
        let Ok(names) = tree.list(lib, PYTHON_DIR_ENTRIES) else {
            continue;
        };
        for n in names
            .iter()
            .filter(|n| n.to_string_lossy().starts_with("python3"))
        {
            let dir = prefix.join(lib).join(n);
            sites.push(dir.join("site-packages"));
            sites.push(dir.join("dist-packages"));
        }
    }
    sites
}

/// One site directory's framework versions into `out`.
fn read_site(tree: &crate::root::UserTree, out: &mut BTreeMap<String, String>) {
    if let Ok(v) = tree.read("torch/version.py", VERSION_PY_BYTES) {
        let v = String::from_utf8_lossy(&v);
        let value = |key: &str| {
            v.lines()
                .find_map(|l| l.strip_prefix(key))
                .map(|x| x.trim().trim_matches(['\'', '"']).to_string())
                .filter(|x| !x.is_empty() && x != "None")
        };
        if let Some(ver) = value("__version__ = ") {
            out.insert("torch".into(), ver);
        }
        if let Some(cuda) = value("cuda = ") {
            out.insert("torch.cuda".into(), cuda);
        }
    }
    for n in tree.list(".", PYTHON_DIR_ENTRIES).unwrap_or_default() {
        if let Some((name, version)) = dist_info(&n.to_string_lossy()) {
            out.entry(name).or_insert(version);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cuda_toolkit_version_from_its_version_json() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("usr/local/cuda");
        std::fs::create_dir_all(&dir).unwrap();
        let root = Root::open(t.path()).unwrap();
        assert_eq!(cuda_toolkit(&root), None);
        std::fs::write(
            dir.join("version.json"),
            r#"{"cuda": {"name": "CUDA SDK", "version": "13.0.2"}, "cuda_cudart": {"version": "13.0.96"}}"#,
        )
        .unwrap();
        assert_eq!(cuda_toolkit(&root).as_deref(), Some("13.0.2"));
    }

    #[test]
    fn torch_and_oneccl_beside_the_interpreter() {
        // A stand-in interpreter: /bin/sleep copied into a venv layout with torch installed.
        let venv = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(venv.path().join("bin")).unwrap();
        let site = venv.path().join("lib/python3.12/site-packages");
        std::fs::create_dir_all(site.join("torch")).unwrap();
        for d in [
            "oneccl_bind_pt-2.8.0+xpu.dist-info",
            "jax-0.11.2.dist-info",
            "jax_cuda13_plugin-0.11.2.dist-info",
            "cupy_cuda13x-14.2.0.dist-info",
            "nvidia_cuda_runtime-13.0.96.dist-info",
            "requests-2.32.0.dist-info",
        ] {
            std::fs::create_dir_all(site.join(d)).unwrap();
        }
        std::fs::write(
            site.join("torch/version.py"),
            "__version__ = '2.13.0+xpu'\ngit_version = 'x'\ncuda = None\n",
        )
        .unwrap();
        let exe = venv.path().join("bin/python3");
        std::fs::copy("/bin/sleep", &exe).unwrap();
        let mut child = Command::new(&exe).arg("5").spawn().unwrap();
        let found = python_packages(&Root::live(), child.id());
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(found.get("torch").map(String::as_str), Some("2.13.0+xpu"));
        let names: Vec<&str> = found.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "cupy-cuda13x",
                "jax",
                "jax-cuda13-plugin",
                "nvidia-cuda-runtime",
                "oneccl-bind-pt",
                "torch"
            ],
            "no torch.cuda for `cuda = None`, nothing outside the frameworks"
        );
        assert_eq!(found["oneccl-bind-pt"], "2.8.0+xpu");
        assert_eq!(found["nvidia-cuda-runtime"], "13.0.96");
    }

    #[test]
    fn sites_of_mapped_files_and_dist_info_names() {
        let lib = Path::new("/opt/torch/.venv/lib/python3.12/site-packages/torch/lib/libc10.so");
        assert_eq!(
            site_of(lib),
            Some(PathBuf::from(
                "/opt/torch/.venv/lib/python3.12/site-packages"
            ))
        );
        assert_eq!(
            site_of(Path::new("/usr/lib/x86_64-linux-gnu/libcuda.so.1")),
            None
        );
        assert_eq!(
            dist_info("jaxlib-0.11.2.dist-info"),
            Some(("jaxlib".into(), "0.11.2".into()))
        );
        assert_eq!(dist_info("torch.libs"), None);
        assert_eq!(dist_info("numpy-2.5.2.dist-info"), None);
    }

    /// A venv whose interpreter is a running stand-in (/bin/sleep copied to bin/python3).
    fn venv_with(version_py: impl FnOnce(&Path)) -> (tempfile::TempDir, std::process::Child) {
        let venv = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(venv.path().join("bin")).unwrap();
        let torch = venv.path().join("lib/python3.12/site-packages/torch");
        std::fs::create_dir_all(&torch).unwrap();
        version_py(&torch.join("version.py"));
        let exe = venv.path().join("bin/python3");
        std::fs::copy("/bin/sleep", &exe).unwrap();
        let child = Command::new(&exe).arg("30").spawn().unwrap();
        (venv, child)
    }

    fn timed_read(mut child: std::process::Child) -> (BTreeMap<String, String>, Duration) {
        let start = std::time::Instant::now();
        let found = python_packages(&Root::live(), child.id());
        let took = start.elapsed();
        child.kill().unwrap();
        child.wait().unwrap();
        (found, took)
    }

    #[test]
    fn a_fifo_version_py_does_not_hang() {
        let (_venv, child) = venv_with(|p| {
            rustix::fs::mknodat(
                rustix::fs::CWD,
                p,
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o644),
                0,
            )
            .unwrap()
        });
        let (found, took) = timed_read(child);
        assert!(found.is_empty());
        assert!(took < Duration::from_secs(2), "took {took:?}");
    }

    #[test]
    fn a_version_py_linked_to_dev_zero_or_out_of_the_venv_is_not_read() {
        for target in ["/dev/zero", "/etc/hostname", "/proc/self/environ"] {
            let (_venv, child) = venv_with(|p| std::os::unix::fs::symlink(target, p).unwrap());
            let (found, took) = timed_read(child);
            assert!(found.is_empty(), "{target}: {found:?}");
            assert!(took < Duration::from_secs(2), "{target}: took {took:?}");
        }
    }

    #[test]
    fn a_huge_version_py_is_not_read_whole() {
        let (_venv, child) = venv_with(|p| {
            let f = std::fs::File::create(p).unwrap();
            f.set_len(8 << 30).unwrap();
        });
        let (found, took) = timed_read(child);
        assert!(found.is_empty());
        assert!(took < Duration::from_secs(2), "took {took:?}");
    }
}
