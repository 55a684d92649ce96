//! `gpuledger record`: run or attach, sample every interval into a recording, summarise.

use crate::cli::{Globals, RecordPlan, RecordTarget};
use anyhow::{Context, Result};
use gpuledger::outputs::{calls_compare, show, show_calls};
use gpuledger::recording::follow::JobTarget;
use gpuledger::recording::job_target::job_target;
use gpuledger::recording::run::{record, Progress, RunError, Target};
use gpuledger::recording::trace::TracePlan;
use gpuledger::root::Root;
use gpuledger::timeline::RunSummary;
use gpuledger::units::human_bytes;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Progress lines between the job's own output come at most this often.
const PASSTHROUGH_PROGRESS_EVERY: Duration = Duration::from_secs(30);

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
            "[{:>6.1} s] {}  peak host-class {}  device-local {}  findings {}",
            p.elapsed.as_secs_f64(),
            gpuledger::units::count(p.samples as usize, "sample"),
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

/// Runs `record`'s plan.
pub fn run(g: &Globals, plan: RecordPlan) -> Result<ExitCode> {
    let root = g.open_root()?;
    say_why_untraced(&plan);
    let stop = Arc::new(AtomicBool::new(false));
    let Some(target) = target(&root, &plan, &stop)? else {
        // Stopped while waiting for the Slurm job: nothing was recorded, and the log says so.
        eprintln!(
            "gpuledger: record: stopped before the job's cgroup appeared (the job ended, or \
             never started on this node); nothing recorded, no {}",
            plan.output.display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    let output = &plan.output;
    if plan.force {
        if let Some(pid) = gpuledger::recording::writer::live_writer(output) {
            anyhow::bail!(
                "{} is being written by gpuledger record (pid {pid}); --force does not replace a \
                 recording in progress: stop that recorder first, or choose another -o",
                output.display()
            );
        }
        remove_unstarted(output);
    }
    let tty = std::io::stderr().is_terminal();
    let mut line = ProgressLine {
        passthrough: matches!(target, Target::Command { .. }),
        last: None,
    };
    let ended = record(root, &target, output, &plan.run, &stop, |p| {
        if let Some(text) = line.render(p).filter(|_| tty) {
            eprint!("{text}");
            let _ = std::io::stderr().flush();
        }
    });
    if tty {
        eprint!("{}", line.finish());
    }
    let mut end = match ended {
        Err(e @ RunError::Spawn(_)) => {
            remove_unstarted(output);
            return Err(e).context("nothing was recorded");
        }
        other => other.context("record")?,
    };
    let safe = gpuledger::recording::open(output)
        .map(|r| r.span)
        .unwrap_or(0);
    let write_failed = end.write_error.is_some();
    if let Some(e) = end.write_error.take() {
        eprintln!(
            "gpuledger: record: {:#}; recording stopped, {} safe in {} up to the last sample \
             written{}",
            anyhow::Error::from(e),
            gpuledger::units::count(safe, "sample"),
            output.display(),
            match &end.job {
                Some(_) => "; the job ran on to its end",
                None => "",
            }
        );
    }
    if let Ok(rec) = gpuledger::recording::open(output) {
        let summary = RunSummary::of(&rec);
        eprint!(
            "{}",
            show::render_text(&output.display().to_string(), &summary)
        );
        if let Some(calls) = &summary.calls {
            let width = gpuledger::outputs::wrap::DEFAULT_WIDTH;
            eprint!("{}", show_calls::render_calls(calls, width));
            eprint!(
                "{}",
                calls_compare::render_checks(&summary.call_checks, width)
            );
        }
    }
    Ok(match (write_failed, end.job) {
        // Samples were lost: a job that succeeded must not make the run look complete.
        (true, Some(e)) if e.exit_code() == 0 => ExitCode::FAILURE,
        (true, None) => ExitCode::FAILURE,
        (_, Some(e)) => ExitCode::from(e.exit_code()),
        (false, None) => ExitCode::SUCCESS,
    })
}

/// Removes the recording of a command that could not start (and SQLite's side files), so a
/// typo leaves nothing behind; `record` created the file, since it refuses an existing one (and
/// with `--force` the same removes the old recording first).
fn remove_unstarted(output: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut path = output.as_os_str().to_owned();
        path.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(path));
    }
}

/// Says on stderr why the command's API calls are not traced, when tracing was expected.
fn say_why_untraced(plan: &RecordPlan) {
    if let Some(TracePlan::Off(why)) = &plan.run.trace {
        if why.worth_saying() {
            eprintln!("gpuledger: API tracing off: {why}");
        }
    }
}

/// What to record; `None` when SIGINT or SIGTERM came while waiting for the Slurm job. The
/// signals stop an attached recording (a started command gets them forwarded instead).
fn target(root: &Root, plan: &RecordPlan, stop: &Arc<AtomicBool>) -> Result<Option<Target>> {
    if let RecordTarget::Command(argv) = &plan.target {
        return Ok(Some(Target::Command {
            argv: argv.clone(),
            env: Vec::new(),
        }));
    }
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let labels = || plan.labels.iter().cloned();
    Ok(match &plan.target {
        RecordTarget::Job(spec) => {
            let env = |k: &str| std::env::var(k).ok();
            match job_target(root, spec, plan.run.interval, stop, env)? {
                Some(mut j) => {
                    j.labels.extend(labels());
                    Some(Target::Job(j))
                }
                None => None,
            }
        }
        RecordTarget::All if !plan.labels.is_empty() => Some(Target::Job(JobTarget {
            follow: None,
            command: vec!["--all".into()],
            labels: labels().collect(),
        })),
        RecordTarget::Pids(pids) => Some(Target::Pids(pids.clone())),
        RecordTarget::All | RecordTarget::Command(_) => Some(Target::All),
    })
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
