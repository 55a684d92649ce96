//! Runs a simulation on a simulated clock and records it, without waiting in real time (for
//! `demo` and tests).

use super::{LiveWriter, Simulation, Visibility};
use crate::findings::Thresholds;
use crate::recording::session::{step, StepError};
use crate::recording::{Recorder, RecordingError, RecordingMeta};
use crate::root::{Root, RootError};
use crate::sampler::{Sampler, SamplerOptions, Scope};
use crate::sources::kmsg::{KernelLog, KmsgError};
use crate::tree_writer::TreeWriter;
use std::path::Path;
use thiserror::Error;

/// A simulated recording that failed.
#[derive(Debug, Error)]
pub enum SimRunError {
    /// Writing the tree failed.
    #[error("writing the simulated tree")]
    Tree(#[from] std::io::Error),
    /// Opening it as a root failed.
    #[error(transparent)]
    Root(#[from] RootError),
    /// A recording step failed.
    #[error(transparent)]
    Step(#[from] StepError),
    /// The recording could not be created or finished.
    #[error(transparent)]
    Recording(#[from] RecordingError),
    /// The tree's kernel log could not be read.
    #[error(transparent)]
    Kernel(#[from] KmsgError),
}

/// Simulates `sim` in `samples` steps over its duration into the tree `dir` (left in its final
/// state), recording every step to `out`.
pub fn record(
    sim: &Simulation,
    dir: &Path,
    out: &Path,
    samples: u32,
    t: &Thresholds,
) -> Result<(), SimRunError> {
    let p = sim.params();
    let mut writer = LiveWriter::new(TreeWriter::new(dir)?, p.scenario.name())?;
    let start_ms = 1_800_000_000_000u64;
    writer.write(&sim.state_at(0.0))?;
    let root = Root::open(dir)?;
    let mut klog = KernelLog::open(&root);
    let mut sampler = Sampler::new(root, Scope::All, SamplerOptions::default());
    let meta = RecordingMeta {
        command: vec![format!(
            "simulate {} --ranks {} --backing {}{}",
            p.scenario.name(),
            p.ranks,
            p.backing.name(),
            match p.visibility {
                Visibility::All => String::new(),
                v => format!(" --visible {}", v.name()),
            }
        )],
        root: dir.display().to_string(),
        interval_ms: (p.duration_s * 1000.0 / f64::from(samples)) as u64,
        started_ms: start_ms,
        kernel: Some("7.1.3-gpuledger-sim".into()),
    };
    let mut rec = Recorder::create(out, &meta)?;
    let mut observer = crate::recording::session::observer(t);
    let mut died = false;
    let mut job_end = None;
    for i in 0..=samples {
        let t_s = p.duration_s * f64::from(i) / f64::from(samples);
        let state = sim.state_at(t_s);
        died |= state.died;
        writer.write(&state)?;
        job_end = job_end.or(state.job_end);
        step(
            &mut sampler,
            &mut rec,
            &mut observer,
            Some(start_ms + (t_s * 1000.0) as u64),
        )?;
        if let Some(k) = klog.as_mut() {
            rec.add_kernel(&k.read_new(sampler.root())?)?;
        }
    }
    let end = start_ms + (p.duration_s * 1000.0) as u64;
    if died {
        rec.set_meta("note", "job died: host memory exhausted by pinned pages")?;
    }
    // The launcher's status as the tree's job end says (torchrun exits 1 when a rank died).
    let exit = job_end.as_ref().map_or(Some(0), |e| e.exit_code);
    rec.finish(end, exit, job_end.and_then(|e| e.signal))?;
    Ok(())
}
