//! Writes capture trees (DESIGN.md "Capture / fixture tree"): used by `capture` and `simulate`.
//! Files are replaced atomically (write to a temporary name, then rename) so a reader of a tree
//! that is being rewritten never sees a half-written file.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A capture tree being written under `base`.
#[derive(Debug, Clone)]
pub struct TreeWriter {
    base: PathBuf,
}

impl TreeWriter {
    /// A writer rooted at `base` (created if missing).
    pub fn new(base: &Path) -> io::Result<TreeWriter> {
        std::fs::create_dir_all(base)?;
        Ok(TreeWriter {
            base: base.to_path_buf(),
        })
    }

    /// The tree's directory.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// Writes `rel` atomically.
    pub fn file(&self, rel: impl AsRef<Path>, data: impl AsRef<[u8]>) -> io::Result<()> {
        let path = self.base.join(rel.as_ref());
        let dir = path.parent().unwrap_or(&self.base);
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(data.as_ref())?;
        tmp.persist(&path).map_err(|e| e.error)?;
        Ok(())
    }

    /// Creates (or atomically replaces) the symlink `rel` → `target`.
    pub fn symlink(&self, rel: impl AsRef<Path>, target: impl AsRef<Path>) -> io::Result<()> {
        let path = self.base.join(rel.as_ref());
        let dir = path.parent().unwrap_or(&self.base);
        std::fs::create_dir_all(dir)?;
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

    /// Writes a DRM device: `sys/class/<class>/<minor>/device` → a PCI-style device dir.
    pub fn device(&self, dev: &crate::sources::drm_devices::DeviceInfo) -> io::Result<()> {
        let dir = format!("sys/devices/gpuledger/{}", dev.id);
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
            ("mem_info_gtt_total", dev.gtt_total),
            ("mem_info_gtt_used", dev.gtt_used),
        ] {
            if let (Some(v), false) = (v, dev.minors.is_empty()) {
                self.file(format!("{dir}/{name}"), format!("{v}\n"))?;
            }
        }
        for m in &dev.minors {
            let class = if m.starts_with("accel") {
                "accel"
            } else {
                "drm"
            };
            self.symlink(
                format!("sys/class/{class}/{m}/device"),
                format!("../../../devices/gpuledger/{}", dev.id),
            )?;
        }
        Ok(())
    }
}
