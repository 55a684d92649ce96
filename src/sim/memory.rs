//! What each simulated process holds on each card at a moment, scenario by scenario.

use super::cards::Card;
use super::params::{Backing, Scenario, SimParams};

const KIB: u64 = 1024;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
/// A rank's ordinary GTT on its home card at start (the seed's 627.7 MiB).
const BASE_GTT: u64 = 642_792 * KIB;
/// Of it, pinned host pages (the seed's 0.67 GiB of GPUActive over two ranks).
const BASE_PINNED: u64 = 351_272 * KIB;
/// A context's VRAM on a card a rank does not compute on (the seed's 186.8 MiB).
const CONTEXT_VRAM: u64 = 191_268 * KIB;
/// An amdgpu client's ordinary GTT (the runtime's staging and command buffers).
const AMDGPU_GTT: u64 = 512 * MIB;
/// A CUDA rank's memory on its own card before the allocator grows: context and weights.
const NVIDIA_BASE: u64 = GIB;
/// A CUDA context on a card the rank does not compute on.
const NVIDIA_CONTEXT: u64 = 500 * MIB;
/// A CUDA rank's pinned host buffers (`cudaHostAlloc`: the data loader's pinned batches).
const NVIDIA_PINNED: u64 = 512 * MIB;

/// One process's memory.
#[derive(Debug, Clone, Default)]
pub(super) struct ProcMem {
    /// The card it computes on.
    pub home: u32,
    /// (card, host-class bytes, device-local bytes) of each of its fds, home first.
    pub fds: Vec<(u32, u64, u64)>,
    /// Host pages the GPU driver pins for it (TTM pool pages, in GPUActive).
    pub pinned: u64,
    /// Pinned host memory in shared `/dev/zero` mappings (`cudaHostAlloc`, in Shmem and smaps).
    pub shmem_pinned: u64,
    /// (card whose allocation is mirrored, card holding the mirror, bytes).
    pub mirrors: Vec<(u32, u32, u64)>,
}

impl ProcMem {
    /// Host-class bytes on integrated cards: their working memory.
    pub fn integrated_host(&self, cards: &[Card]) -> u64 {
        self.fds
            .iter()
            .filter(|f| cards[f.0 as usize] == Card::XeIntegrated)
            .map(|f| f.1)
            .sum()
    }
}

/// The memory of process `r` (a rank, or the one process) once `made` bytes of allocator
/// segments exist.
pub(super) fn of(p: &SimParams, cards: &[Card], r: u32, made: u64) -> ProcMem {
    let n = cards.len() as u32;
    match p.scenario {
        Scenario::DdpPeerMirror | Scenario::SingleGpu | Scenario::DdpHealthy => {
            let spans = p.scenario != Scenario::SingleGpu;
            let seen = if spans {
                p.visibility.visible(r, n)
            } else {
                vec![r]
            };
            ddp(p, r, &seen, made)
        }
        Scenario::OneProcess => one_process(p, &p.visibility.visible(0, n), made),
        Scenario::Leak => ProcMem {
            home: r,
            fds: vec![(r, 64 * MIB + made, 2 * GIB)],
            pinned: 64 * MIB + made,
            ..Default::default()
        },
        Scenario::AmdgpuTp => ProcMem {
            home: r,
            fds: vec![(r, AMDGPU_GTT, GIB + made)],
            pinned: AMDGPU_GTT,
            ..Default::default()
        },
        Scenario::XeAmdgpu | Scenario::ApuDgpu => {
            working_sets(cards, &p.visibility.visible(0, n), made)
        }
        Scenario::NvidiaDdp => nvidia(r, &p.visibility.visible(r, n), made),
    }
}

/// A DDP rank on card `r` with a context on every card it sees; `ddp-peer-mirror` registers
/// every segment on the rank's fd to each peer it sees.
fn ddp(p: &SimParams, r: u32, seen: &[u32], made: u64) -> ProcMem {
    let registered = if p.scenario == Scenario::DdpHealthy {
        0
    } else {
        made
    };
    let peers: Vec<u32> = seen.iter().copied().filter(|&d| d != r).collect();
    let mut fds = vec![(r, BASE_GTT, 512 * MIB + made)];
    fds.extend(
        peers
            .iter()
            .map(|&d| (d, 4 * MIB + registered, CONTEXT_VRAM)),
    );
    let mirrors = peers
        .iter()
        .filter(|_| registered > 0)
        .map(|&d| (r, d, registered))
        .collect();
    let mirrored = if p.backing == Backing::Pinned {
        registered * peers.len() as u64
    } else {
        0
    };
    ProcMem {
        home: r,
        fds,
        pinned: BASE_PINNED + mirrored,
        shmem_pinned: 0,
        mirrors,
    }
}

/// One process over the cards it sees (intel/llvm#22873): each holds `made` of VRAM and, as
/// GTT on its fd, a registration of every other card's `made`.
fn one_process(p: &SimParams, seen: &[u32], made: u64) -> ProcMem {
    let others = seen.len().saturating_sub(1) as u64;
    let mirrored_per_card = made * others;
    let mut fds = vec![(0, BASE_GTT + mirrored_per_card, 512 * MIB + made)];
    fds.extend(
        seen.iter()
            .skip(1)
            .map(|&d| (d, 4 * MIB + mirrored_per_card, 512 * MIB + made)),
    );
    let mut mirrors = Vec::new();
    if made > 0 {
        for &holder in seen {
            for &source in seen.iter().filter(|&&s| s != holder) {
                mirrors.push((source, holder, made));
            }
        }
    }
    let pinned = p.backing == Backing::Pinned;
    ProcMem {
        home: 0,
        fds,
        pinned: BASE_PINNED
            + if pinned {
                mirrored_per_card * (others + 1)
            } else {
                0
            },
        shmem_pinned: 0,
        mirrors,
    }
}

/// One process computing on every card it sees, with no registration anywhere: each discrete
/// card holds `made` of VRAM beside its runtime's ordinary GTT; an integrated card holds it as
/// GTT (host RAM is its memory).
fn working_sets(cards: &[Card], seen: &[u32], made: u64) -> ProcMem {
    let mut m = ProcMem::default();
    for &d in seen {
        let (host, local, pinned) = match cards[d as usize] {
            Card::XeIntegrated => (512 * MIB + made, 0, 512 * MIB + made),
            Card::Amdgpu => (AMDGPU_GTT, 512 * MIB + made, AMDGPU_GTT),
            _ => (BASE_GTT, 512 * MIB + made, BASE_PINNED),
        };
        m.fds.push((d, host, local));
        m.pinned += pinned;
    }
    m
}

/// A CUDA rank on card `r` with a context on every card it sees: NVML's used memory per card,
/// pinned host buffers in a shared `/dev/zero` mapping, no fdinfo and no peer registration.
fn nvidia(r: u32, seen: &[u32], made: u64) -> ProcMem {
    let mut fds = vec![(r, 0, NVIDIA_BASE + made)];
    fds.extend(
        seen.iter()
            .filter(|&&d| d != r)
            .map(|&d| (d, 0, NVIDIA_CONTEXT)),
    );
    ProcMem {
        home: r,
        fds,
        pinned: 0,
        shmem_pinned: NVIDIA_PINNED,
        mirrors: Vec::new(),
    }
}
