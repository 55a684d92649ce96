//! What a simulated run is: its scenario, backing and parameters (`simulate`'s options and the
//! environment the simulated job obeys).

use super::visibility::{self, Visibility};

pub(super) const KIB: u64 = 1024;
pub(super) const MIB: u64 = 1 << 20;
pub(super) const GIB: u64 = 1 << 30;
/// The seed's repeated segment, 3,174,400 KiB as measured there. (The report calls it a
/// 512×2048×795 fp32 buffer, but that is 3,256,320 KiB; 3,174,400 KiB is 512×2048×775 fp32.)
pub const SEED_SEGMENT: u64 = 3_174_400 * KIB;

/// What is simulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// The seed: DDP ranks whose segments are mirrored as GTT on every peer device.
    DdpPeerMirror,
    /// One rank on one GPU, healthy.
    SingleGpu,
    /// One process whose host-class memory grows until the end.
    Leak,
    /// Two tensor-parallel ranks on amdgpu, no mirror.
    AmdgpuTp,
    /// DDP ranks with a context on every device and no peer registrations (a runtime without
    /// the defect): nothing is mirrored.
    DdpHealthy,
    /// One process over `ranks` devices (intel/llvm#22873): each device's GTT mirrors the
    /// allocations on the others.
    OneProcess,
    /// One process computing on an integrated GPU (host RAM is its memory) and on `ranks`
    /// discrete cards: nothing is mirrored, and the integrated GPU's working memory is no
    /// blowup.
    ApuDgpu,
    /// One process over `ranks` cards alternating xe and amdgpu (both DRM fdinfo), a working
    /// set on each: nothing is mirrored.
    XeAmdgpu,
    /// DDP ranks on NVIDIA cards: `/dev/nvidia*` fds on every card they see (no DRM fdinfo),
    /// usage from NVML, pinned host buffers from `cudaHostAlloc`: nothing is mirrored.
    NvidiaDdp,
}

impl Scenario {
    /// Every scenario.
    pub const ALL: [Scenario; 9] = [
        Scenario::DdpPeerMirror,
        Scenario::SingleGpu,
        Scenario::Leak,
        Scenario::AmdgpuTp,
        Scenario::DdpHealthy,
        Scenario::OneProcess,
        Scenario::ApuDgpu,
        Scenario::XeAmdgpu,
        Scenario::NvidiaDdp,
    ];

    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::DdpPeerMirror => "ddp-peer-mirror",
            Scenario::SingleGpu => "single-gpu",
            Scenario::Leak => "leak",
            Scenario::AmdgpuTp => "amdgpu-tp",
            Scenario::DdpHealthy => "ddp-healthy",
            Scenario::OneProcess => "one-process",
            Scenario::ApuDgpu => "apu-dgpu",
            Scenario::XeAmdgpu => "xe-amdgpu",
            Scenario::NvidiaDdp => "nvidia-ddp",
        }
    }

    /// Parses a command-line name.
    pub fn parse(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether the job is one process over its cards (no ranks).
    pub fn one_process(self) -> bool {
        matches!(
            self,
            Scenario::OneProcess | Scenario::ApuDgpu | Scenario::XeAmdgpu
        )
    }
}

/// What the runtime does with a peer registration: back it with pinned host pages or keep it as
/// bookkeeping. The switch is compute-runtime's `EnableDeferBacking` debug key: "Enable defer
/// backing for bmg" (NEO-13403, first in 26.09.37435) turned it on by default for Battlemage,
/// and with it on every peer registration's host-RAM mirror is pinned (intel/compute-runtime#953).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backing {
    /// Every peer registration backed by pinned host pages at once: compute-runtime 26.09+ on
    /// Battlemage (`EnableDeferBacking=1`, the default; 26.22 measured 25.9 GiB pinned).
    Pinned,
    /// Registrations kept as bookkeeping, not backed: compute-runtime 26.05, or 26.09+ with
    /// `NEOReadDebugKeys=1 EnableDeferBacking=0` (0.67 GiB pinned in the seed).
    RegisteredOnly,
}

impl Backing {
    /// Every backing.
    pub const ALL: [Backing; 2] = [Backing::Pinned, Backing::RegisteredOnly];

    /// Command-line name (`simulate --backing`).
    pub fn name(self) -> &'static str {
        match self {
            Backing::Pinned => "pinned",
            Backing::RegisteredOnly => "registered-only",
        }
    }
}

/// Parameters of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct SimParams {
    /// Scenario.
    pub scenario: Scenario,
    /// Ranks (one GPU each); for `apu-dgpu` the discrete cards beside the integrated one.
    pub ranks: u32,
    /// Peer-registration backing.
    pub backing: Backing,
    /// Host RAM.
    pub host_mem: u64,
    /// Device segments each rank's caching allocator creates, in order.
    pub segments: Vec<u64>,
    /// Length of the simulated run, seconds.
    pub duration_s: f64,
    /// Whether the kernel has GPUActive (Linux 7.1+); without it only the residual shows pins.
    pub gpu_accounting: bool,
    /// The cards each process sees (its device mask).
    pub visibility: Visibility,
    /// Environment the ranks see (debug keys, masks), as the simulator was given it.
    pub env: Vec<(String, String)>,
}

impl SimParams {
    /// The defaults of a scenario.
    pub fn new(scenario: Scenario) -> SimParams {
        let (ranks, segments) = match scenario {
            Scenario::DdpPeerMirror
            | Scenario::DdpHealthy
            | Scenario::OneProcess
            | Scenario::XeAmdgpu
            | Scenario::NvidiaDdp => (2, vec![SEED_SEGMENT; 6]),
            Scenario::SingleGpu => (1, vec![SEED_SEGMENT; 4]),
            Scenario::Leak => (1, vec![256 * MIB; 40]),
            Scenario::AmdgpuTp => (2, vec![16 * GIB; 4]),
            Scenario::ApuDgpu => (1, vec![2 * GIB; 4]),
        };
        SimParams {
            scenario,
            ranks,
            backing: Backing::Pinned,
            host_mem: 64 * GIB,
            segments,
            duration_s: 60.0,
            gpu_accounting: true,
            visibility: Visibility::All,
            env: Vec::new(),
        }
    }

    /// Applies the runtime variables the simulated job would obey: `NEOReadDebugKeys=1` with
    /// `EnableDeferBacking=0` → registrations not backed ([`Backing::RegisteredOnly`]); a one-device mask (`ZE_AFFINITY_MASK`,
    /// `ROCR_VISIBLE_DEVICES`, `CUDA_VISIBLE_DEVICES`) → each rank sees its own card only.
    pub fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) {
        let debug = get("NEOReadDebugKeys").as_deref() == Some("1");
        let masks = ["xe", "amdgpu", "nvidia"].map(visibility::mask_var);
        for name in ["NEOReadDebugKeys", "EnableDeferBacking"]
            .into_iter()
            .chain(masks)
        {
            if let Some(v) = get(name) {
                self.env.push((name.to_string(), v));
            }
        }
        if debug && get("EnableDeferBacking").as_deref() == Some("0") {
            self.backing = Backing::RegisteredOnly;
        }
        let one_card = |m: String| !m.contains(',') && !m.is_empty();
        if masks.into_iter().any(|v| get(v).is_some_and(one_card)) {
            self.visibility = Visibility::Own;
        }
    }
}
