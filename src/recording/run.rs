//! A whole recording run: start or attach, sample every interval, collect kernel evidence,
//! finish. Used by `record` and `experiment`.

use super::follow::{Follower, JobTarget};
use super::session::{step, StepError};
use super::trace::{Listener, Losses, Started, TraceOff, TracePlan};
use super::Resolver;
use super::{Recorder, RecordingError, RecordingMeta};
use crate::findings::{Finding, Thresholds};
use crate::job::{Exit, Job};
use crate::job_output::Capture;
use crate::job_output::RateSpec;
use crate::ledger::{Ledger, MemClass};
use crate::root::Root;
use crate::sampler::{SampleError, Sampler, SamplerOptions, Scope};
use crate::sources::kernel_log;
use crate::sources::kmsg::KernelLog;
use crate::sources::meminfo::read_version;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use thiserror::Error;

/// What to record.
#[derive(Debug, Clone)]
pub enum Target {
    /// Start this command with these extra environment variables.
    Command {
        /// argv.
        argv: Vec<String>,
        /// Extra environment.
        env: Vec<(String, String)>,
    },
    /// Attach to these pids and their descendants.
    Pids(Vec<u32>),
    /// Every process.
    All,
    /// Every process of a job (a cgroup, a Slurm job) as they come and go.
    Job(JobTarget),
}

/// How to record.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Sampling interval.
    pub interval: Duration,
    /// Stop after this long (attach modes).
    pub duration: Option<Duration>,
    /// Finding thresholds.
    pub thresholds: Thresholds,
    /// `--rate` series to take from a started command's output.
    pub rates: Vec<RateSpec>,
    /// API-level tracing of a started command (`record --trace`); `None`: not considered.
    pub trace: Option<TracePlan>,
}

/// Running peaks, for progress lines.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// Samples written.
    pub samples: u64,
    /// Peak host-class resident total.
    pub peak_host: u64,
    /// Peak device-local resident total.
    pub peak_local: u64,
    /// Most findings seen in one sample.
    pub findings: usize,
    /// Time since the start.
    pub elapsed: Duration,
}

impl Progress {
    fn update(&mut self, l: &Ledger, f: &[Finding]) {
        let sum = |c| l.resident_total(c);
        self.peak_host = self.peak_host.max(sum(MemClass::Host));
        self.peak_local = self.peak_local.max(sum(MemClass::Device));
        self.findings = self.findings.max(f.len());
    }
}

/// How a run went.
#[derive(Debug)]
pub struct RunEnd {
    /// The command's end (None in attach modes or when stopped).
    pub job: Option<Exit>,
    /// Set when writing failed mid-run; the file is intact up to the last sample.
    pub write_error: Option<RecordingError>,
}

/// A run that could not start.
#[derive(Debug, Error)]
pub enum RunError {
    /// The command could not be started.
    #[error("cannot start the command: {0}")]
    Spawn(std::io::Error),
    /// The recording could not be created or finished.
    #[error(transparent)]
    Recording(#[from] RecordingError),
    /// Waiting for the job failed.
    #[error("waiting for the command: {0}")]
    Wait(std::io::Error),
}

/// The process's monotonic wall time, as the sampler stamps samples.
fn now_ms() -> u64 {
    crate::clock::wall_ms()
}

/// Records `target` into a new file `out`. `stop` ends an attach run early; `tick` sees progress.
pub fn record(
    root: Root,
    target: &Target,
    out: &Path,
    opts: &RunOptions,
    stop: &AtomicBool,
    mut tick: impl FnMut(&Progress),
) -> Result<RunEnd, RunError> {
    let live = root.is_live();
    let command = match target {
        Target::Command { argv, .. } => argv.clone(),
        Target::Pids(p) => p.iter().map(|p| format!("--pid {p}")).collect(),
        Target::All => vec!["--all".into()],
        Target::Job(j) => j.command.clone(),
    };
    let started_ms = now_ms();
    let meta = RecordingMeta {
        command,
        root: root.label().to_string(),
        interval_ms: opts.interval.as_millis() as u64,
        started_ms,
        kernel: read_version(&root).ok(),
    };
    let mut recorder = Recorder::create(out, &meta)?;
    if live {
        // The runtime versions this run saw, for `diff` and `report`.
        let sys = crate::sources::system_info::gather(&root, &[], &[]);
        if !sys.packages.is_empty() {
            recorder.set_meta(
                "packages",
                &serde_json::to_string(&sys.packages).expect("strings"),
            )?;
        }
        // The recorded machine, for `report` without `--root` and for `--redact`.
        if let Some(h) = &sys.hostname {
            recorder.set_meta("hostname", h)?;
        }
        if let Some(d) = &sys.distro {
            recorder.set_meta("distro", d)?;
        }
        if !sys.driver_versions.is_empty() {
            let versions = serde_json::to_string(&sys.driver_versions).expect("strings");
            recorder.set_meta("driver_versions", &versions)?;
        }
        if !sys.modules.is_empty() {
            let modules = serde_json::to_string(&sys.modules).expect("strings");
            recorder.set_meta("modules", &modules)?;
        }
    }
    if let Target::Command { env, .. } = target {
        if !env.is_empty() {
            let e: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            recorder.set_meta("extra_env", &e.join(" "))?;
        }
    }
    let mut follower = match target {
        Target::Job(j) => Some(Follower::start(j, &mut recorder)?),
        _ => None,
    };
    let mut trace_env = Vec::new();
    let mut listener = match (target, &opts.trace) {
        (Target::Command { .. }, Some(plan)) => start_trace(plan, &mut recorder, &mut trace_env)?,
        _ => None,
    };
    let mut resolver = Resolver::default();
    // The file exists before the command starts, so a bad -o never leaves an unrecorded job.
    let (mut job, mut capture) = match target {
        Target::Command { argv, env } => {
            let mut env = env.clone();
            env.append(&mut trace_env);
            let channel = listener.as_ref().and_then(|(l, _)| l.job_end());
            let (job, capture) = start_captured(argv, &env, channel, opts, &mut recorder)?;
            if let Some((l, _)) = listener.as_mut() {
                l.job_started();
            }
            (Some(job), Some(capture))
        }
        _ => (None, None),
    };
    let scope = match (target, &job, live) {
        (_, Some(j), true) => Scope::Tree([j.pid()].into()),
        (Target::Pids(p), _, _) => Scope::Tree(p.iter().copied().collect()),
        (Target::Job(_), _, _) => Scope::Pids(Default::default()),
        _ => Scope::All,
    };
    // The live kernel log from now on, or a captured tree's `dev/kmsg` from its first record.
    let mut kmsg = KernelLog::open(&root);
    // Which kernel log the recording reads, so that no line kept means none logged.
    let log_source = match (&kmsg, live) {
        (Some(_), true) => "/dev/kmsg",
        (Some(_), false) => "dev/kmsg of the tree",
        (None, true) => "journalctl -k",
        (None, false) => "none",
    };
    recorder.set_meta("kernel_log", log_source)?;
    let mut sampler = Sampler::new(root, scope, SamplerOptions::default());
    let mut observer = super::session::observer(&opts.thresholds);
    let start = Instant::now();
    let mut progress = Progress::default();
    let mut python = super::job_python::JobPython::default();
    let mut write_error: Option<RecordingError> = None;
    let end = loop {
        let t0 = Instant::now();
        let ended = match job.as_mut() {
            Some(j) => j.try_wait().map_err(RunError::Wait)?,
            None => None,
        };
        if let Some(f) = follower.as_mut() {
            match f.refresh(sampler.root(), &mut recorder) {
                Ok(Some(scope)) => sampler.set_scope(scope),
                Ok(None) => break None,
                Err(e) => write_error = Some(e),
            }
        }
        // The calls first: host memory registered so far is part of this sample's ledger.
        if let (Some((l, _)), None) = (&listener, &write_error) {
            write_error = add_taken(&mut recorder, l, &mut resolver).err();
        }
        if write_error.is_none() {
            observer.set_registered(resolver.registered_by_pid());
            match step(&mut sampler, &mut recorder, &mut observer, None) {
                Ok((ledger, found)) => {
                    progress.samples = recorder.samples();
                    progress.update(&ledger, &found);
                    if live {
                        if let Some(json) = python.look(sampler.root(), &ledger) {
                            write_error = recorder.set_meta("python", &json).err();
                        }
                    }
                }
                // A simulated tree that the command has not written yet.
                Err(StepError::Sample(SampleError::NoProc { .. })) if !live => {}
                Err(StepError::Sample(_)) => {}
                Err(StepError::Write(e)) => write_error = Some(e),
            }
            if let (Some(c), None) = (&capture, &write_error) {
                write_error = recorder.add_output(&c.take()).err();
            }
            if let (Some(k), None) = (kmsg.as_mut(), &write_error) {
                let lines = k.read_new(sampler.root()).unwrap_or_default();
                if let Err(e) = recorder.add_kernel(&lines) {
                    write_error = Some(e);
                }
            }
        }
        let ended = match (ended, job.is_none() && !live) {
            (None, true) => simulated_end(sampler.root(), &mut recorder),
            (e, _) => e,
        };
        progress.elapsed = start.elapsed();
        tick(&progress);
        if let Some(e) = ended {
            break Some(e);
        }
        let timed_out = job.is_none() && opts.duration.is_some_and(|d| start.elapsed() >= d);
        if stop.load(Ordering::SeqCst) || timed_out {
            break None;
        }
        if write_error.is_some() {
            match job.as_mut() {
                Some(j) => break Some(j.wait().map_err(RunError::Wait)?),
                None => break None,
            }
        }
        let pause = opts.interval.saturating_sub(t0.elapsed());
        match job.as_ref() {
            // The job's end cuts the pause short: its last sample is taken as it ends.
            Some(j) => j.pause_until_end(pause),
            None => std::thread::sleep(pause),
        }
    };
    if write_error.is_none() {
        let mut finish = || -> Result<(), RecordingError> {
            if kmsg.is_none() && live {
                recorder.add_kernel(&kernel_log::journal_since(started_ms / 1000))?;
            }
            if let Some((l, lib)) = &listener {
                // The job's last events (its exit flush) are in flight when it is reaped.
                std::thread::sleep(TRACE_TAIL);
                add_taken(&mut recorder, l, &mut resolver)?;
                if l.accepted() == 0 {
                    let why = TraceOff::Silent(lib.clone());
                    recorder.set_meta("trace", &format!("off: {why}"))?;
                }
            }
            if let Some(c) = capture.take() {
                let (batch, tail, counts) = c.finish(OUTPUT_WAIT);
                recorder.add_output(&batch)?;
                recorder.finish_output(&tail, &counts)?;
            }
            recorder.finish(
                now_ms(),
                end.and_then(|e| e.code),
                end.and_then(|e| e.signal),
            )
        };
        write_error = finish().err();
    }
    Ok(RunEnd {
        job: end,
        write_error,
    })
}

/// How long a finished job's output may stay open (a daemon it started holds the pipes).
const OUTPUT_WAIT: Duration = Duration::from_secs(2);

/// How long the recording waits for a finished job's last traced events.
const TRACE_TAIL: Duration = Duration::from_millis(200);

/// Stores the events `l` received since the last sample, with what was lost or refused.
fn add_taken(
    recorder: &mut Recorder,
    l: &Listener,
    resolver: &mut Resolver,
) -> Result<(), RecordingError> {
    let mut taken = l.take();
    let losses = Losses {
        lost: taken.lost,
        foreign: taken.foreign,
    };
    recorder.add_calls(&mut taken.events, losses, resolver)
}

/// Notes the trace plan in `meta.trace` (and `meta.trace_level_zero`) and, when tracing, opens
/// the channel the job sends on; the environment the traced job gets goes into `env`, and the
/// library comes back with the listener (the recording says tracing was off when no event came).
/// Level Zero tracing kept out because another tool watches the job is said once on stderr.
fn start_trace(
    plan: &TracePlan,
    recorder: &mut Recorder,
    env: &mut Vec<(String, String)>,
) -> Result<Option<(Listener, PathBuf)>, RecordingError> {
    let (state, listener) = match plan {
        TracePlan::On(lib) => match Started::begin(lib) {
            Ok(started) => {
                if let Some(why) = started.level_zero_notice() {
                    eprintln!("gpuledger: Level Zero tracing off: {why}");
                }
                let ze = match &started.level_zero {
                    Ok(()) => "on".to_string(),
                    Err(why) => format!("off: {why}"),
                };
                recorder.set_meta("trace_level_zero", &ze)?;
                let Started {
                    listener,
                    env: job_env,
                    ..
                } = started;
                env.extend(job_env);
                (
                    format!("on: {}", lib.display()),
                    Some((listener, lib.clone())),
                )
            }
            Err(e) => (format!("off: {}", TraceOff::Socket(e.to_string())), None),
        },
        TracePlan::Off(why) => (format!("off: {why}"), None),
    };
    recorder.set_meta("trace", &state)?;
    Ok(listener)
}

/// Starts the command with its output captured and the marker file named in its environment.
fn start_captured(
    argv: &[String],
    env: &[(String, String)],
    channel: Option<BorrowedFd<'_>>,
    opts: &RunOptions,
    recorder: &mut Recorder,
) -> Result<(Job, Capture), RunError> {
    let mut capture = Capture::prepare(opts.rates.clone()).map_err(RunError::Spawn)?;
    recorder.start_output(&opts.rates)?;
    let mut all = env.to_vec();
    all.extend(capture.env());
    let (job, out, err) = Job::spawn_piped(argv, &all, channel).map_err(RunError::Spawn)?;
    capture.attach(out, err);
    Ok((job, capture))
}

/// The end of the job in a simulated tree (`gpuledger-sim/job.json`), when it has ended; its way
/// of dying goes into the recording's note.
fn simulated_end(root: &Root, recorder: &mut Recorder) -> Option<Exit> {
    let end = crate::sources::sim_job::read_job_end(root).ok().flatten()?;
    if end.outcome == crate::sources::sim_job::JobOutcome::HostMemoryExhausted {
        // The first error line is the cause; the launcher's own complaints follow it.
        let error = end
            .output_tail
            .iter()
            .find(|l| l.to_ascii_lowercase().contains("error"))
            .or(end.output_tail.last());
        let note = match error {
            Some(line) => format!("job died: host memory exhausted; its output: {line}"),
            None => "job died: host memory exhausted".to_string(),
        };
        // A note that cannot be written is not worth failing the run for.
        let _ = recorder.set_meta("note", &note);
    }
    Some(Exit {
        code: end.exit_code,
        signal: end.signal,
    })
}
