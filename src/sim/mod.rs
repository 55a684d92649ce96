//! `simulate`: a model of a machine running a multi-GPU job, written as a capture tree so the
//! whole pipeline (sampler, ledger, findings, record, guard, serve) runs on it unchanged.
//!
//! ## The `ddp-peer-mirror` model (GSD-13038)
//! N ranks (torchrun children of one launcher), one home GPU each: xe, Arc Pro B70 (8086:e223),
//! 32 GiB VRAM. Every rank opens a render node on every device (a Level Zero context spanning all
//! cards). At start each rank holds the seed's baseline: 627 MiB GTT on its home fd, 512 MiB of
//! VRAM there (contexts, kernels) and ~190 MiB VRAM on each peer fd. Then the caching allocator
//! creates large device segments (default: six of the seed's 3,174,400 KiB step, a ~18.2 GiB
//! working set, the seed's "~18.5 GiB") at regular times; each segment is added to `drm-resident-vram0` on the home fd
//! *and* registered as `drm-resident-gtt` on the rank's fd to every peer.
//! - `pinned` (compute-runtime 26.09+ on Battlemage, where `EnableDeferBacking=1` is the default;
//!   26.22 measured): every registration is backed by pinned host pages, so GPUActive rises and
//!   MemFree / MemAvailable fall by the segment size per peer.
//! - `registered-only` (26.05, or `EnableDeferBacking=0`): the registrations stay bookkeeping;
//!   GPUActive stays at the seed's 0.67 GiB.
//!
//! Host RAM is finite (`--host-mem`, default 64 GiB, of which 30 % is other use): when pinned
//! memory would pass what is left, the job dies at that moment, as the seed's did without an OOM
//! kill, and the tree shows it the way a real machine would: every rank's pid and the launcher's
//! are gone (torchrun tears the other ranks down and exits 1), `dev/kmsg` holds each rank's
//! order-0 page-allocation failure, and `gpuledger-sim/job.json` holds the end: time, exit
//! status 1, and the output tail with the runtime's `UR_RESULT_ERROR_OUT_OF_RESOURCES`. Otherwise the job ends at 90 % of the run and its memory is released.
//! The simulator also reads its own environment the way the runtime would: `NEOReadDebugKeys=1
//! EnableDeferBacking=0` makes the backing `registered-only`, a one-device `ZE_AFFINITY_MASK`,
//! `ROCR_VISIBLE_DEVICES` or `CUDA_VISIBLE_DEVICES` confines every rank to its own card.
//!
//! Visibility (`--visible`, [`Visibility`]): every card (no mask), each rank its own card, or
//! pairs of cards; a masked rank carries its mask in its environment, numbered per runtime, and
//! opens contexts (and registers segments) only on the cards it sees.
//!
//! Other scenarios: `single-gpu` (healthy), `leak` (host memory grows to the end), `amdgpu-tp`
//! (2 ranks of tensor parallel on amdgpu MI300X, `vram`/`gtt`/`cpu` with legacy keys, no mirror),
//! `ddp-healthy` (the same DDP job on a runtime that registers nothing on peers: contexts on every
//! card, no mirror) and `one-process` (one process over `--ranks` devices, intel/llvm#22873: each
//! device's GTT mirrors the allocations on the others). The fleet's shapes, none of which
//! mirrors anything: `apu-dgpu` (one process on an integrated xe GPU, whose fdinfo has no VRAM
//! region and whose working set is GTT, beside `--ranks` discrete cards), `xe-amdgpu` (one
//! process over cards alternating xe and amdgpu) and `nvidia-ddp` (CUDA ranks: `/dev/nvidia*`
//! fds on every card they see, no fdinfo, NVML's answers in `nvml.json`, 512 MiB of
//! `cudaHostAlloc` each as a shared `/dev/zero` mapping in smaps).
//!
//! Every state carries its ground truth ([`truth::Truth`]), written as `gpuledger-sim/truth.json`:
//! the mirrors the model made and the findings gpuledger must report for them.

mod cards;
mod death;
mod fdinfo_text;
mod memory;
mod model;
mod nvidia;
mod params;
pub mod run;
mod state;
pub mod truth;
mod visibility;
mod write;

pub use crate::sources::sim_job::{read_job_end, JobEnd, JobEndError, JobOutcome, JOB_END_SCHEMA};
pub use model::Simulation;
pub use params::{Backing, Scenario, SimParams};
pub use state::{SimFd, SimProcess, SimState};
pub use visibility::Visibility;
pub use write::LiveWriter;
