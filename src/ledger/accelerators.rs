//! Usage that does not come from DRM fdinfo: NVIDIA (NVML, CUDA pinned memory) and ROCm KFD.

use super::{MemClass, Usage, UsageSource};
use crate::snapshot::ProcessSample;
use crate::sources::nvml::NvGpu;

/// NVML's used GPU memory as region `vram`, and CUDA pinned host memory (shared `/dev/zero`
/// mappings) as host-class region `pinned-shmem` on the process's first NVIDIA GPU.
pub(super) fn nvidia_usage(nvml: &[NvGpu], p: &ProcessSample) -> Vec<Usage> {
    let usage = |device: &str, region: &str, class, source, bytes: Option<u64>| Usage {
        device: device.to_string(),
        region: region.to_string(),
        class,
        source,
        total: bytes,
        resident: bytes,
        shared: None,
        purgeable: None,
        active: None,
    };
    let mut out: Vec<Usage> = nvml
        .iter()
        .filter_map(|g| {
            let (_, used) = g.processes.iter().find(|(pid, _)| *pid == p.pid)?;
            Some(usage(
                &g.bus_id,
                "vram",
                MemClass::Device,
                UsageSource::Nvml,
                *used,
            ))
        })
        .collect();
    if let (Some(first), Some(pinned)) = (
        out.first().map(|u| u.device.clone()),
        p.pinned_shmem.filter(|b| *b > 0),
    ) {
        out.push(usage(
            &first,
            "pinned-shmem",
            MemClass::Host,
            UsageSource::Smaps,
            Some(pinned),
        ));
    }
    out
}

/// KFD (ROCm compute) VRAM as region `kfd-vram`: only what exceeds the device-local bytes the
/// process's DRM clients already show on that device. Kernels where KFD shares the render node's
/// VM count KFD buffers in fdinfo too, older ones do not; taking the larger of the two per device
/// never counts a buffer twice and never drops one.
pub(super) fn kfd_usage(p: &ProcessSample, usage: &[Usage]) -> Vec<Usage> {
    p.kfd_vram
        .iter()
        .filter_map(|(dev, bytes)| {
            let drm: u64 = usage
                .iter()
                .filter(|u| u.device == *dev && u.class == MemClass::Device)
                .filter_map(|u| u.resident)
                .sum();
            let extra = bytes.saturating_sub(drm);
            (extra > 0).then(|| Usage {
                device: dev.clone(),
                region: "kfd-vram".into(),
                class: MemClass::Device,
                source: UsageSource::Kfd,
                total: Some(extra),
                resident: Some(extra),
                shared: None,
                purgeable: None,
                active: None,
            })
        })
        .collect()
}
