//! How a recorded job ended, in one wording for show, diff, experiment and report.

use crate::recording::Recording;
use serde::Serialize;
use std::fmt;

/// Kernel lines of a recording that explain a job's death.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct KernelEvidence {
    /// Page-allocation failure lines.
    pub page_allocation_failures: usize,
    /// OOM-killer lines.
    pub oom_kills: usize,
}

impl KernelEvidence {
    fn of(rec: &Recording) -> KernelEvidence {
        KernelEvidence {
            page_allocation_failures: rec.kernel_count("page_allocation_failure"),
            oom_kills: rec.kernel_count("oom_kill"),
        }
    }

    fn any(self) -> bool {
        self.page_allocation_failures + self.oom_kills > 0
    }
}

impl fmt::Display for KernelEvidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kernel log: {} page-allocation failures, {} OOM kills",
            self.page_allocation_failures, self.oom_kills
        )
    }
}

/// How the job of a recording ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "end", rename_all = "snake_case")]
pub enum JobEnd {
    /// It exited with a code.
    Exited {
        /// Exit code.
        code: i64,
        /// Kernel lines in the recording.
        kernel: KernelEvidence,
    },
    /// It was killed by a signal.
    Killed {
        /// Signal number.
        signal: i64,
        /// Kernel lines in the recording.
        kernel: KernelEvidence,
    },
    /// Its processes vanished while sampling went on, with no exit status recorded.
    Died {
        /// Kernel lines in the recording.
        kernel: KernelEvidence,
    },
    /// No end was recorded and its processes were seen to the last sample: still running, or
    /// the recorder was killed.
    Running,
}

impl JobEnd {
    /// Reads the end from `meta` (exit_code, signal) and, without them, from whether samples
    /// continued after the last process was seen.
    pub fn of(rec: &Recording) -> JobEnd {
        let num = |k: &str| rec.meta.get(k).and_then(|v| v.parse::<i64>().ok());
        let kernel = KernelEvidence::of(rec);
        if let Some(code) = num("exit_code") {
            return JobEnd::Exited { code, kernel };
        }
        if let Some(signal) = num("signal") {
            return JobEnd::Killed { signal, kernel };
        }
        let last_seen = rec.processes.iter().map(|p| p.last).max();
        match last_seen {
            Some(last) if last.saturating_add(1) < rec.span => JobEnd::Died { kernel },
            _ => JobEnd::Running,
        }
    }

    /// Whether the job ended by itself with code 0.
    pub fn succeeded(self) -> bool {
        matches!(self, JobEnd::Exited { code: 0, .. })
    }
}

impl fmt::Display for JobEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (head, kernel) = match self {
            JobEnd::Exited { code, kernel } => (exited(*code), kernel),
            JobEnd::Killed { signal, kernel } => {
                (format!("killed by signal {}", signal_word(*signal)), kernel)
            }
            JobEnd::Died { kernel } => ("died (its processes vanished)".to_string(), kernel),
            JobEnd::Running => return f.write_str("still running, or the recorder was killed"),
        };
        if kernel.any() {
            write!(f, "{head}; {kernel}")
        } else {
            f.write_str(&head)
        }
    }
}

/// "exited with code N", and for 129–192 what a shell means by it: a process it waited for
/// was killed by signal N − 128 (`sh -c 'job & wait'`, a wrapper script).
fn exited(code: i64) -> String {
    match code.checked_sub(128).filter(|s| (1..=64).contains(s)) {
        Some(s) => format!(
            "exited with code {code}: 128 + signal {}, a process it waited for was killed",
            signal_word(s)
        ),
        None => format!("exited with code {code}"),
    }
}

/// A signal's number with its name where it is one a job commonly dies of.
fn signal_word(signal: i64) -> String {
    let name = match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => return signal.to_string(),
    };
    format!("{signal} ({name})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::RecordedProcess;

    fn rec(meta: &[(&str, &str)], last_seen: usize, span: usize, pafs: usize) -> Recording {
        let mut r = Recording {
            meta: meta
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            span,
            processes: vec![RecordedProcess {
                pid: 1,
                comm: "python3".into(),
                cmdline: String::new(),
                rank: None,
                local_rank: None,
                env: Default::default(),
                first: 0,
                labels: serde_json::Value::Null,
                last: last_seen,
            }],
            ..Recording::default()
        };
        if pafs > 0 {
            r.kernel_counts
                .insert("page_allocation_failure".into(), pafs);
        }
        r
    }

    #[test]
    fn one_wording_per_end() {
        let exited = JobEnd::of(&rec(&[("exit_code", "3"), ("signal", "9")], 4, 5, 0));
        assert_eq!(exited.to_string(), "exited with code 3");
        assert!(!exited.succeeded());
        let killed = JobEnd::of(&rec(&[("signal", "9")], 4, 5, 2));
        assert_eq!(
            killed.to_string(),
            "killed by signal 9 (SIGKILL); kernel log: 2 page-allocation failures, 0 OOM kills"
        );
        let shell = JobEnd::of(&rec(&[("exit_code", "137")], 4, 5, 0));
        assert_eq!(
            shell.to_string(),
            "exited with code 137: 128 + signal 9 (SIGKILL), a process it waited for was killed"
        );
        let plain = JobEnd::of(&rec(&[("exit_code", "255")], 4, 5, 0));
        assert_eq!(plain.to_string(), "exited with code 255");
        let died = JobEnd::of(&rec(&[], 2, 5, 7));
        assert_eq!(
            died.to_string(),
            "died (its processes vanished); kernel log: 7 page-allocation failures, 0 OOM kills"
        );
        assert_eq!(JobEnd::of(&rec(&[], 4, 5, 0)), JobEnd::Running);
        assert_eq!(
            JobEnd::Running.to_string(),
            "still running, or the recorder was killed"
        );
        assert!(JobEnd::of(&rec(&[("exit_code", "0")], 4, 5, 0)).succeeded());
    }
}
