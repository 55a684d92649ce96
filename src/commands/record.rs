//! `gpuledger record`: run or attach, sample every interval into a recording, summarise.

use super::UsageError;
use crate::cli::{JobArgs, RecordArgs};
use anyhow::{Context, Result};
use gpuledger::findings::Thresholds;
use gpuledger::outputs::{calls_compare, show, show_calls};
use gpuledger::recording::follow::JobTarget;
use gpuledger::recording::run::{record, Progress, RunError, RunOptions, Target};
use gpuledger::recording::trace::{self, TraceOff, TracePlan};
use gpuledger::root::Root;
use gpuledger::sources::cgroup::labels;
use gpuledger::sources::cgroup_procs::{find_slurm_job, resolve_cgroup, Follow, FollowError};
use gpuledger::timeline::RunSummary;
use gpuledger::units::human_bytes;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// How long `--slurm-job` waits for the job to appear: a prolog runs before slurmstepd has
/// created the job's cgroup and processes.
const SLURM_WAIT: Duration = Duration::from_secs(60);

/// Progress lines between the job's own output come at most this often.
const PASSTHROUGH_PROGRESS_EVERY: Duration = Duration::from_secs(30);

/// `gpuledger-<UTC time>-<pid>.ledger`: the pid keeps two recorders started in the same second
/// apart, and a name taken by an older file moves on to `-2`, `-3`…
fn default_output() -> PathBuf {
    let t = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let stem = format!(
        "gpuledger-{}-{}",
        t.replace([':', '-'], "").trim_end_matches('Z'),
        std::process::id()
    );
    (1u32..)
        .map(|n| match n {
            1 => PathBuf::from(format!("{stem}.ledger")),
            n => PathBuf::from(format!("{stem}-{n}.ledger")),
        })
        .find(|p| !p.exists())
        .unwrap_or_else(|| PathBuf::from(format!("{stem}.ledger")))
}

/// The progress line on a terminal's stderr. Attached, nothing else writes there, so one line
/// is redrawn in place; while a started command's output passes through, a line of its own
/// every [`PASSTHROUGH_PROGRESS_EVERY`], so neither breaks the other's lines.
#[derive(Debug)]
struct ProgressLine {
    passthrough: bool,
    last: Option<Duration>,
}

impl ProgressLine {
    /// What to write to stderr for this progress, if anything.
    fn render(&mut self, p: &Progress) -> Option<String> {
        let text = format!(
            "[{:>6.1} s] {} samples  peak host-class {}  device-local {}  findings {}",
            p.elapsed.as_secs_f64(),
            p.samples,
            human_bytes(p.peak_host),
            human_bytes(p.peak_local),
            p.findings
        );
        if !self.passthrough {
            return Some(format!("\r{text}\x1b[K"));
        }
        let due = match self.last {
            None => p.elapsed >= PASSTHROUGH_PROGRESS_EVERY,
            Some(last) => p.elapsed >= last + PASSTHROUGH_PROGRESS_EVERY,
        };
        due.then(|| {
            self.last = Some(p.elapsed);
            format!("gpuledger: {text}\n")
        })
    }

    /// What ends the progress before the summary: the redrawn line is cleared.
    fn finish(&self) -> &'static str {
        if self.passthrough {
            ""
        } else {
            "\r\x1b[K"
        }
    }
}

/// Runs `record`; clap has checked the interval and that exactly one target is given.
pub fn run(ctx: &super::Ctx, args: &RecordArgs, t: &Thresholds) -> Result<ExitCode> {
    let root = ctx.open_root()?;
    let opts = RunOptions {
        interval: args.interval,
        duration: args.duration,
        thresholds: t.clone(),
        rates: args.rates.clone(),
        trace: Some(trace_plan(args, root.is_live())?),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let Some(target) = target(&root, args, &stop)? else {
        // Stopped while waiting for the Slurm job: nothing was recorded.
        return Ok(ExitCode::SUCCESS);
    };
    let output = args.output.clone().unwrap_or_else(default_output);
    let tty = std::io::stderr().is_terminal();
    let mut line = ProgressLine {
        passthrough: matches!(target, Target::Command { .. }),
        last: None,
    };
    let ended = record(root, &target, &output, &opts, &stop, |p| {
        if let Some(text) = line.render(p).filter(|_| tty) {
            eprint!("{text}");
            let _ = std::io::stderr().flush();
        }
    });
    if tty {
        eprint!("{}", line.finish());
    }
    let end = match ended {
        Err(e @ RunError::Spawn(_)) => {
            remove_unstarted(&output);
            return Err(e).context("nothing was recorded");
        }
        other => other.context("record")?,
    };
    if let Some(e) = &end.write_error {
        eprintln!(
            "gpuledger: recording stopped, {} is intact up to the last sample: {e}",
            output.display()
        );
    }
    if let Ok(rec) = gpuledger::recording::open(&output) {
        let summary = RunSummary::of(&rec);
        eprint!(
            "{}",
            show::render_text(&output.display().to_string(), &summary)
        );
        if let Some(calls) = &summary.calls {
            eprint!("{}", show_calls::render_calls(calls));
            eprint!("{}", calls_compare::render_checks(&summary.call_checks));
        }
    }
    Ok(match end.job {
        Some(e) => ExitCode::from(e.exit_code()),
        None => ExitCode::SUCCESS,
    })
}

/// Removes the recording of a command that could not start (and SQLite's side files), so a
/// typo leaves nothing behind; `record` created the file, since it refuses an existing one.
fn remove_unstarted(output: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut path = output.as_os_str().to_owned();
        path.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(path));
    }
}

/// Whether to trace the command's API calls; says why not on stderr when tracing was expected.
fn trace_plan(args: &RecordArgs, live: bool) -> Result<TracePlan> {
    let exe = std::env::current_exe().ok();
    let plan = trace::plan(
        !args.no_trace,
        live,
        &args.command,
        |k| std::env::var(k).ok(),
        exe.as_deref().and_then(std::path::Path::parent),
    );
    match &plan {
        TracePlan::Off(why) if args.trace => {
            return Err(UsageError(format!("--trace: cannot trace: {why}")).into())
        }
        // A build without the tracer library is the common case: the recording says why it
        // has no calls, and stderr stays the job's.
        TracePlan::Off(
            TraceOff::NotWanted | TraceOff::NotStarted | TraceOff::NotLive | TraceOff::NoTracer(_),
        )
        | TracePlan::On(_) => {}
        TracePlan::Off(why) => eprintln!("gpuledger: API tracing off: {why}"),
    }
    Ok(plan)
}

/// What to record; `None` when SIGINT or SIGTERM came while waiting for the Slurm job. The
/// signals stop an attached recording (a started command gets them forwarded instead).
fn target(root: &Root, args: &RecordArgs, stop: &Arc<AtomicBool>) -> Result<Option<Target>> {
    if !args.command.is_empty() {
        return Ok(Some(Target::Command {
            argv: args.command.clone(),
            env: Vec::new(),
        }));
    }
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let labels = || args.labels.iter().cloned();
    Ok(match job_target(root, &args.job, args.interval, stop)? {
        Some(mut j) => {
            j.labels.extend(labels());
            Some(Target::Job(j))
        }
        None if stop.load(Ordering::SeqCst) => None,
        None if args.all && !args.labels.is_empty() => Some(Target::Job(JobTarget {
            follow: None,
            command: vec!["--all".into()],
            labels: labels().collect(),
        })),
        None if !args.pids.is_empty() => Some(Target::Pids(args.pids.clone())),
        None => Some(Target::All),
    })
}

/// The job of `--cgroup` or `--slurm-job` with its labels; `None` without either, or when `stop`
/// was raised while waiting for the Slurm job to appear.
pub(super) fn job_target(
    root: &Root,
    args: &JobArgs,
    poll: Duration,
    stop: &AtomicBool,
) -> Result<Option<JobTarget>> {
    let mut labels = BTreeMap::new();
    if let Ok(u) = rustix::system::uname().nodename().to_str() {
        labels.insert("node".to_string(), u.to_string());
    }
    let (follow, command) = match (&args.cgroup, &args.slurm_job) {
        (Some(path), _) => {
            let dir = resolve_cgroup(root, path)?;
            let from_path = labels_of(&dir);
            labels.extend(from_path);
            (
                Follow::Cgroup(dir),
                vec!["--cgroup".to_string(), path.clone()],
            )
        }
        (None, Some(id)) => {
            let Some(follow) = wait_for_slurm_job(root, id, poll, stop)? else {
                return Ok(None);
            };
            labels.insert("slurm_job".into(), id.clone());
            // The prolog's environment describes this job only when it is this job's.
            if std::env::var("SLURM_JOB_ID").is_ok_and(|j| &j == id) {
                for (var, label) in [
                    ("SLURM_JOB_USER", "user"),
                    ("SLURM_JOB_PARTITION", "partition"),
                ] {
                    if let Ok(v) = std::env::var(var).map(|v| v.trim().to_string()) {
                        if !v.is_empty() {
                            labels.insert(label.to_string(), v);
                        }
                    }
                }
            }
            (follow, vec!["--slurm-job".to_string(), id.clone()])
        }
        (None, None) => return Ok(None),
    };
    labels.insert("followed".into(), follow.describe());
    Ok(Some(JobTarget {
        follow: Some(follow),
        command,
        labels,
    }))
}

/// Pod, container and Slurm job read from the cgroup's path.
fn labels_of(dir: &str) -> BTreeMap<String, String> {
    // Labels are read from the path below the hierarchy's root, where the managers' own
    // subtrees start (`/system.slice/slurmstepd.scope/…`).
    let below = ["sys/fs/cgroup/unified", "sys/fs/cgroup"]
        .iter()
        .find_map(|m| dir.strip_prefix(m))
        .unwrap_or(dir);
    let l = labels(below, None);
    [
        ("pod", l.pod),
        ("container", l.container),
        ("slurm_job", l.job),
    ]
    .into_iter()
    .filter_map(|(k, v)| Some((k.to_string(), v?)))
    .collect()
}

/// Finds the Slurm job, retrying every `poll` for [`SLURM_WAIT`]; `None` when stopped first.
fn wait_for_slurm_job(
    root: &Root,
    id: &str,
    poll: Duration,
    stop: &AtomicBool,
) -> Result<Option<Follow>, FollowError> {
    let start = Instant::now();
    loop {
        match find_slurm_job(root, id) {
            Ok(f) => return Ok(Some(f)),
            Err(e) if start.elapsed() >= SLURM_WAIT || !root.is_live() => return Err(e),
            Err(_) if stop.load(Ordering::SeqCst) => return Ok(None),
            Err(_) => std::thread::sleep(poll.max(Duration::from_millis(200))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> Progress {
        Progress {
            elapsed: Duration::from_secs(secs),
            samples: secs * 2,
            ..Progress::default()
        }
    }

    #[test]
    fn attached_progress_is_one_line_redrawn_and_cleared() {
        let mut line = ProgressLine {
            passthrough: false,
            last: None,
        };
        let first = line.render(&at(1)).unwrap();
        assert!(first.starts_with("\r[   1.0 s] 2 samples"), "{first:?}");
        assert!(
            first.ends_with("\x1b[K") && !first.contains('\n'),
            "{first:?}"
        );
        assert!(line.render(&at(2)).is_some(), "every sample redraws");
        assert_eq!(line.finish(), "\r\x1b[K");
    }

    #[test]
    fn beside_a_jobs_output_progress_is_a_whole_line_every_30_s() {
        let mut line = ProgressLine {
            passthrough: true,
            last: None,
        };
        let printed: Vec<u64> = (0..=95)
            .filter(|&s| line.render(&at(s)).is_some())
            .collect();
        assert_eq!(printed, [30, 60, 90]);
        let text = line.render(&at(200)).unwrap();
        assert!(text.starts_with("gpuledger: [ 200.0 s]") && text.ends_with('\n'));
        assert!(!text.contains('\r'), "{text:?}");
        assert_eq!(line.finish(), "");
    }
}
