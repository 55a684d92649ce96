//! Writes capture trees (docs/DESIGN.md, "Capture tree"): the one writer used by `capture`,
//! `simulate` and the tests; [`layout`] says where each file goes. Files are replaced atomically
//! (write to a temporary name, then rename) so a reader of a tree that is being rewritten never
//! sees a half-written file.

use crate::layout;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// A directory that cannot be made into a fresh tree.
#[derive(Debug, Error)]
pub enum FreshTreeError {
    /// It holds files and replacing them was not asked for.
    #[error("{} is not empty; pass --force to replace what it holds, or choose another directory", path.display())]
    NotEmpty {
        /// The directory.
        path: PathBuf,
    },
    /// It is the filesystem root, which is never cleared.
    #[error("refusing to clear {}: give a directory of its own", path.display())]
    FilesystemRoot {
        /// The directory.
        path: PathBuf,
    },
    /// It is a symbolic link: clearing it would clear the directory it points to.
    #[error("{} is a symbolic link (to {}); give the directory itself, not a link to it", path.display(), target.display())]
    Symlink {
        /// The directory given.
        path: PathBuf,
        /// Where the link points.
        target: PathBuf,
    },
    /// It could not be read, cleared or created.
    #[error("cannot prepare {}", path.display())]
    Io {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

/// The per-process files of a tree: `comm`, `cmdline`, `environ` and a minimal `status`.
#[derive(Debug, Clone, Copy)]
pub struct ProcEntry<'a> {
    /// Pid.
    pub pid: u32,
    /// `comm`, without the newline.
    pub comm: &'a str,
    /// Arguments (NUL-joined in the file).
    pub cmdline: &'a [String],
    /// Environment, already allow-listed (written `KEY=value`, NUL-joined).
    pub env: &'a [(String, String)],
    /// `PPid:` of `status`, when known.
    pub ppid: Option<u32>,
    /// `NSpid:` of `status` (outermost first); empty leaves the line out.
    pub nspid: &'a [u32],
}

/// A capture tree being written under `base`.
#[derive(Debug, Clone)]
pub struct TreeWriter {
    base: PathBuf,
}

impl TreeWriter {
    /// A writer rooted at `base` (created if missing).
    pub fn new(base: &Path) -> io::Result<TreeWriter> {
        make_dirs(base)?;
        Ok(TreeWriter {
            base: base.to_path_buf(),
        })
    }

    /// A writer for a tree that starts empty: `base` is created if missing; if it holds anything,
    /// that is an error unless `replace`, in which case its entries are removed first. A `base` that
    /// is a symlink is refused, and removal never follows a symlink, so nothing outside `base` is
    /// touched.
    pub fn fresh(base: &Path, replace: bool) -> Result<TreeWriter, FreshTreeError> {
        let io_err = |source| FreshTreeError::Io {
            path: base.to_path_buf(),
            source,
        };
        let Some(dir) = own_directory(base)? else {
            return TreeWriter::new(base).map_err(io_err);
        };
        let entries: Vec<std::fs::DirEntry> = std::fs::read_dir(&dir)
            .and_then(|list| list.collect())
            .map_err(io_err)?;
        if !entries.is_empty() {
            if !replace {
                return Err(FreshTreeError::NotEmpty {
                    path: base.to_path_buf(),
                });
            }
            if dir == Path::new("/") {
                return Err(FreshTreeError::FilesystemRoot {
                    path: base.to_path_buf(),
                });
            }
            for e in entries {
                let path = e.path();
                let is_dir = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
                let gone = if is_dir {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
                gone.map_err(io_err)?;
            }
        }
        TreeWriter::new(&dir).map_err(io_err)
    }

    /// The tree's directory.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// Writes `rel` atomically.
    pub fn file(&self, rel: impl AsRef<Path>, data: impl AsRef<[u8]>) -> io::Result<()> {
        let path = self.base.join(rel.as_ref());
        let dir = path.parent().unwrap_or(&self.base);
        make_dirs(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(data.as_ref())?;
        tmp.persist(&path).map_err(|e| e.error)?;
        Ok(())
    }

    /// Creates (or atomically replaces) the symlink `rel` → `target`.
    pub fn symlink(&self, rel: impl AsRef<Path>, target: impl AsRef<Path>) -> io::Result<()> {
        let path = self.base.join(rel.as_ref());
        let dir = path.parent().unwrap_or(&self.base);
        make_dirs(dir)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(target, &tmp)?;
        std::fs::rename(&tmp, &path)
    }

    /// Removes `rel` and everything under it, if present.
    pub fn remove(&self, rel: impl AsRef<Path>) -> io::Result<()> {
        match std::fs::remove_dir_all(self.base.join(rel.as_ref())) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Writes a process's `comm`, `cmdline`, `environ` and `status`, and creates its `fd/`
    /// directory (a process always has one, even with no GPU fds).
    pub fn process(&self, p: &ProcEntry<'_>) -> io::Result<()> {
        let pid = p.pid;
        self.file(layout::proc_file(pid, "comm"), format!("{}\n", p.comm))?;
        self.file(layout::proc_file(pid, "cmdline"), nul_joined(p.cmdline))?;
        let env: Vec<String> = p.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        self.file(layout::proc_file(pid, "environ"), nul_joined(&env))?;
        let mut status = format!("Name:\t{}\n", p.comm);
        if let Some(pp) = p.ppid {
            status.push_str(&format!("PPid:\t{pp}\n"));
        }
        if !p.nspid.is_empty() {
            let ns: Vec<String> = p.nspid.iter().map(u32::to_string).collect();
            status.push_str(&format!("NSpid:\t{}\n", ns.join("\t")));
        }
        self.file(layout::proc_file(pid, "status"), status)?;
        make_dirs(&self.base.join(layout::fd_dir(pid)))
    }

    /// Writes fd `fd` of `pid`: the link text as the kernel shows it and, for DRM fds, the
    /// fdinfo text verbatim.
    pub fn fd(
        &self,
        pid: u32,
        fd: u32,
        target: impl AsRef<Path>,
        fdinfo: Option<&[u8]>,
    ) -> io::Result<()> {
        // fdinfo first: a reader that finds the link always finds its fdinfo.
        if let Some(text) = fdinfo {
            self.fdinfo(pid, fd, text)?;
        }
        self.symlink(layout::fd_link(pid, fd), target)
    }

    /// Rewrites only the fdinfo of fd `fd` of `pid` (its link is unchanged).
    pub fn fdinfo(&self, pid: u32, fd: u32, text: impl AsRef<[u8]>) -> io::Result<()> {
        self.file(layout::fdinfo(pid, fd), text)
    }

    /// Removes process `pid` from the tree (it exited).
    pub fn remove_process(&self, pid: u32) -> io::Result<()> {
        self.remove(layout::proc_dir(pid))
    }

    /// Writes the manifest (`gpuledger-capture.json`) as pretty JSON.
    pub fn manifest(&self, manifest: &impl serde::Serialize) -> io::Result<()> {
        let json = serde_json::to_string_pretty(manifest).map_err(io::Error::other)?;
        self.file(layout::MANIFEST, json + "\n")
    }

    /// Writes the kernel log (`dev/kmsg`) as the records given, replacing the file.
    pub fn kmsg(&self, records: &[crate::sources::kmsg::KmsgRecord]) -> io::Result<()> {
        let text: String = records.iter().map(|r| r.to_string()).collect();
        self.file(layout::KMSG, text)
    }

    /// Writes how a simulated job ended (`gpuledger-sim/job.json`); `None` removes it (running).
    pub fn job_end(&self, end: Option<&crate::sources::sim_job::JobEnd>) -> io::Result<()> {
        match end {
            Some(e) => {
                let json = serde_json::to_string_pretty(e).map_err(io::Error::other)?;
                self.file(layout::SIM_JOB_END, json + "\n")
            }
            None => match std::fs::remove_file(self.base.join(layout::SIM_JOB_END)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
        }
    }

    /// Writes a DRM device: `sys/class/<class>/<minor>/device` → a PCI-style device dir.
    pub fn device(&self, dev: &crate::sources::drm_devices::DeviceInfo) -> io::Result<()> {
        let dir = layout::device_dir(&dev.id);
        let opt = |v: &Option<String>| v.clone().unwrap_or_default();
        self.file(format!("{dir}/vendor"), format!("{}\n", opt(&dev.vendor)))?;
        self.file(format!("{dir}/device"), format!("{}\n", opt(&dev.device)))?;
        let mut uevent = String::new();
        if let Some(d) = &dev.driver {
            uevent.push_str(&format!("DRIVER={d}\n"));
            self.symlink(
                format!("{dir}/driver"),
                format!("../../../bus/pci/drivers/{d}"),
            )?;
        }
        uevent.push_str(&format!("PCI_SLOT_NAME={}\n", dev.id));
        self.file(format!("{dir}/uevent"), uevent)?;
        if let Some(s) = &dev.runtime_status {
            self.file(format!("{dir}/power/runtime_status"), format!("{s}\n"))?;
        }
        for (name, v) in [
            ("mem_info_vram_total", dev.vram_total),
            ("mem_info_vram_used", dev.vram_used),
            ("mem_info_vis_vram_total", dev.vis_vram_total),
            ("mem_info_vis_vram_used", dev.vis_vram_used),
            ("mem_info_gtt_total", dev.gtt_total),
            ("mem_info_gtt_used", dev.gtt_used),
        ] {
            if let (Some(v), false) = (v, dev.minors.is_empty()) {
                self.file(format!("{dir}/{name}"), format!("{v}\n"))?;
            }
        }
        for (region, bytes) in &dev.local_totals {
            let file = match region.strip_prefix("vram") {
                Some(n) => format!("{dir}/tile{n}/physical_vram_size_bytes"),
                None => format!("{dir}/lmem_total_bytes"),
            };
            self.file(file, format!("{bytes}\n"))?;
        }
        let (files, card_files) =
            crate::sources::telemetry::files(&dev.telemetry, dev.driver.as_deref());
        for (rel, v) in files {
            self.file(format!("{dir}/{rel}"), v)?;
        }
        for m in &dev.minors {
            self.symlink(
                layout::class_device_link(m),
                layout::device_link_target(&dev.id),
            )?;
            if m.starts_with("card") {
                for (rel, v) in &card_files {
                    self.file(format!("{}/{m}/{rel}", layout::class_dir("drm")), v)?;
                }
            }
        }
        Ok(())
    }
}

/// The real path of the directory `base` names (`None` when it does not exist), found from the
/// directory itself, opened without following a link in its last component: a symlinked `base`
/// is refused, and what is cleared is the directory that was opened.
/// Creates `dir` and its missing parents as 0755 whatever the umask (a tree's files are 0600: it
/// holds process command lines and environments).
fn make_dirs(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)
}

fn own_directory(base: &Path) -> Result<Option<PathBuf>, FreshTreeError> {
    let io_err = |source| FreshTreeError::Io {
        path: base.to_path_buf(),
        source,
    };
    // `dir/` would follow a link named `dir`; its components name it without the slash.
    let named: PathBuf = base.components().collect();
    match std::fs::symlink_metadata(&named) {
        Ok(m) if m.file_type().is_symlink() => {
            let target = std::fs::read_link(&named).map_err(io_err)?;
            return Err(FreshTreeError::Symlink {
                path: base.to_path_buf(),
                target,
            });
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(e)),
    }
    let fd = rustix::fs::open(
        &named,
        rustix::fs::OFlags::RDONLY
            | rustix::fs::OFlags::DIRECTORY
            | rustix::fs::OFlags::NOFOLLOW
            | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(|e| io_err(e.into()))?;
    let fd_path = crate::layout::self_fd(std::os::fd::AsRawFd::as_raw_fd(&fd));
    std::fs::read_link(crate::layout::live(&fd_path))
        .map(Some)
        .map_err(io_err)
}

fn nul_joined(items: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for i in items {
        out.extend_from_slice(i.as_bytes());
        out.push(0);
    }
    out
}
