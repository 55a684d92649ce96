//! "Steps to reproduce" and the one-line description of what a recording ran: the command quoted
//! as a POSIX shell needs it (by `shlex`), or, for a recording that read a simulated or captured
//! tree instead of this machine, what it really was, never a command that cannot run. Secrets in
//! the commands are hidden ([`crate::redact`]): a bug report is written to be posted.

use super::escape::code;
use crate::ledger::{Ledger, ProcessRow};
use crate::recording::Recording;
use crate::redact;
use std::borrow::Cow;

/// What a recording observed, from its `command`, `root` and `kernel` metadata.
enum Origin {
    /// A simulation recorded on a simulated clock (`demo`): the simulate arguments.
    Simulated(Vec<String>),
    /// A command recorded while reading a simulated tree (`simulate --live` beside `--root`).
    SimulatedTree {
        /// The tree.
        root: String,
        /// The recorded command.
        argv: Vec<String>,
    },
    /// A command recorded against a captured tree that is not this machine.
    Tree {
        /// The tree.
        root: String,
        /// The recorded command.
        argv: Vec<String>,
    },
    /// An attach run (`--pid N…` or `--all`): the record arguments.
    Attach(Vec<String>),
    /// A command run and recorded on this machine.
    Live(Vec<String>),
}

fn origin(rec: &Recording) -> Origin {
    let argv = redact::argv(&rec.command());
    // The simulator's kernel names itself (sim/write.rs); no real kernel does.
    let simulated = rec
        .meta
        .get("kernel")
        .is_some_and(|k| k.contains("gpuledger-sim"));
    let root = rec.meta.get("root").cloned().unwrap_or_else(|| "/".into());
    let live_root = root == "/" || root.starts_with("/ (proc: ");
    if let [only] = argv.as_slice() {
        if simulated && only.starts_with("simulate ") {
            let mut args: Vec<String> = only.split_whitespace().map(String::from).collect();
            args.extend(["--out".into(), "DIR".into()]);
            return Origin::Simulated(args);
        }
    }
    if simulated {
        return Origin::SimulatedTree { root, argv };
    }
    if !live_root {
        return Origin::Tree { root, argv };
    }
    if is_attach(&argv) {
        return Origin::Attach(
            argv.iter()
                .flat_map(|a| a.split(' '))
                .map(String::from)
                .collect(),
        );
    }
    Origin::Live(argv)
}

/// `words` as one shell command line in a code span; words holding a NUL byte cannot be given
/// to a shell at all, so they are said to be missing rather than shown wrongly.
fn shell(words: &[&str]) -> String {
    match shlex::try_join(words.iter().copied()) {
        Ok(line) => code(&line),
        Err(_) => "(a command with a NUL byte in an argument, which no shell can pass)".into(),
    }
}

fn with<'a>(head: &[&'a str], tail: &'a [String]) -> Vec<&'a str> {
    head.iter()
        .copied()
        .chain(tail.iter().map(String::as_str))
        .collect()
}

/// Whether `argv` is an attach run's own arguments (`--all`, `--pid N`), not a command.
fn is_attach(argv: &[String]) -> bool {
    !argv.is_empty() && argv.iter().all(|a| a == "--all" || a.starts_with("--pid "))
}

/// `record`'s arguments for `argv` into `name`: `-o NAME -- CMD…`, or `-o NAME --all` /
/// `--pid N` for an attach run (never `-- --all`, which would run a command named `--all`).
fn record_args(name: &str, argv: &[String]) -> Vec<String> {
    let mut out = vec!["-o".to_string(), name.to_string()];
    if is_attach(argv) {
        out.extend(argv.iter().flat_map(|a| a.split(' ')).map(String::from));
    } else {
        out.push("--".into());
        out.extend(argv.iter().cloned());
    }
    out
}

/// The command line of the recorded job's first rank (or first process), for an attach run,
/// whose own command is only `--all` or `--pid N`, its secrets hidden.
fn job_command(rec: &Recording) -> Option<Cow<'_, str>> {
    rec.processes
        .iter()
        .filter(|p| !p.cmdline.trim().is_empty())
        .min_by_key(|p| (p.rank.unwrap_or(u32::MAX), p.first, p.pid))
        .map(|p| redact::line(&p.cmdline))
}

/// Variables a launcher sets per process (rank, size, job ids): never part of the command.
const LAUNCHER: [&str; 6] = [
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "ROLE_RANK",
];
/// Prefixes of the launchers' per-process variables.
const LAUNCHER_PREFIXES: [&str; 4] = ["OMPI_", "PMI_", "PMIX_", "SLURM_"];

/// The job's environment as recorded (the variables a recording added, and the allow-listed
/// ones of its first rank or process), without what a launcher sets per process: `K=V` words.
fn job_env(rec: &Recording) -> Vec<String> {
    let mut env: std::collections::BTreeMap<String, String> = rec
        .processes
        .iter()
        .min_by_key(|p| (p.rank.unwrap_or(u32::MAX), p.first, p.pid))
        .map(|p| p.env.clone())
        .unwrap_or_default();
    for kv in rec
        .meta
        .get("extra_env")
        .into_iter()
        .flat_map(|e| e.split(' '))
    {
        if let Some((k, v)) = kv.split_once('=') {
            env.insert(k.to_string(), v.to_string());
        }
    }
    without_launcher(&env)
}

/// Whether `k=v` is what gpuledger's own tracing put into the job (`record` sets it again).
pub(super) fn set_by_tracing(k: &str, v: &str) -> bool {
    let ours = |path: &str| path.ends_with(crate::recording::trace::TRACER_FILE);
    match k {
        crate::recording::trace::CUDA_INJECTION_ENV => ours(v),
        "LD_PRELOAD" => v.split([':', ' ']).filter(|p| !p.is_empty()).all(ours),
        _ => k.starts_with("GPULEDGER_TRACE"),
    }
}

/// `K=V` words of `env` but for what a launcher sets per process and what gpuledger's tracing
/// set.
fn without_launcher(env: &std::collections::BTreeMap<String, String>) -> Vec<String> {
    env.iter()
        .filter(|(k, v)| {
            !LAUNCHER.contains(&k.as_str())
                && !LAUNCHER_PREFIXES.iter().any(|l| k.starts_with(l))
                && !set_by_tracing(k, v)
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect()
}

/// "Start the job" with its recorded command line where the recording has one.
fn start_the_job(rec: &Recording) -> String {
    match job_command(rec) {
        Some(cmd) => format!("Start the job (as recorded: {})", code(&cmd)),
        None => "Start the job".into(),
    }
}

/// What the recording ran, for its heading.
pub(super) fn what_ran(rec: &Recording) -> String {
    match origin(rec) {
        Origin::Simulated(args) => format!("simulated by {}", shell(&with(&["gpuledger"], &args))),
        Origin::SimulatedTree { argv, .. } => {
            format!("{} beside a simulated machine", shell(&with(&[], &argv)))
        }
        Origin::Attach(args) => format!("attached with {}", shell(&with(&[], &args))),
        Origin::Tree { argv, .. } | Origin::Live(argv) => shell(&with(&[], &argv)),
    }
}

/// Steps for a report made from a snapshot: the GPU processes' own command lines and
/// environments as the snapshot saw them, then what to run while the job runs.
fn snapshot_steps(ledger: &Ledger) -> String {
    let jobs: Vec<&ProcessRow> = ledger
        .processes
        .iter()
        .filter(|p| !p.usage.is_empty() && !p.cmdline.is_empty())
        .collect();
    let Some(first) = jobs
        .iter()
        .min_by_key(|p| (p.rank.unwrap_or(u32::MAX), p.pid))
    else {
        return "1. Start the job (the snapshot saw no GPU process with a command line).\n2. While it runs: `gpuledger` (or `gpuledger record -o run.ledger -- CMD` to record it from the start).\n".into();
    };
    let env = without_launcher(&first.env);
    let record = if jobs.len() > 1 && first.rank.is_some() {
        format!(
            "Record the command that starts the {} ranks (their launcher is not in the snapshot): `gpuledger record -o run.ledger -- CMD`",
            jobs.len()
        )
    } else {
        format!(
            "{} records it from the start",
            shell(&with(
                &["gpuledger", "record", "-o", "run.ledger", "--"],
                &first.cmdline
            ))
        )
    };
    let words: Vec<&str> = first.cmdline.iter().map(String::as_str).collect();
    format!(
        "1. Start the job as the snapshot saw it ({} of {} GPU process{}): {}{}\n2. {record}; while it runs, `gpuledger` shows the same ledger as this report\n",
        match first.rank {
            Some(r) => format!("rank {r}"),
            None => format!("pid {}", first.pid),
        },
        jobs.len(),
        if jobs.len() == 1 { "" } else { "es" },
        shell(&words),
        if env.is_empty() {
            String::new()
        } else {
            format!(", with {}", code(&env.join(" ")))
        },
    )
}

/// The "Steps to reproduce" section body for the first recording, else for the snapshot.
pub(super) fn steps(recordings: &[(String, Recording)], ledger: &Ledger) -> String {
    let Some((name, rec)) = recordings.first() else {
        return snapshot_steps(ledger);
    };
    let n = name.as_str();
    let show = shell(&["gpuledger", "show", n]);
    match origin(rec) {
        Origin::Simulated(args) => format!(
            "{} was made from gpuledger's simulator, not from a job on hardware; nothing in it ran on a GPU.\n\n1. {} writes the simulated machine (`--live 60s` rewrites it in real time)\n2. `gpuledger --root DIR` reads it; `gpuledger demo` records this scenario with both backings\n",
            code(n),
            shell(&with(&["gpuledger"], &args)),
        ),
        Origin::SimulatedTree { root, argv } => format!(
            "{} read a simulated machine (the tree {}, written by `gpuledger simulate SCENARIO --live DURATION --out DIR`; the recording does not say which scenario), not this one.\n\n1. {}\n2. {show}\n",
            code(n),
            code(&root),
            shell(&with(&["gpuledger", "--root", &root, "record"], &record_args(n, &argv))),
        ),
        Origin::Tree { root, argv } => format!(
            "{} read the tree {}, not the machine the report was made on.\n\n1. {}\n2. {show}\n",
            code(n),
            code(&root),
            shell(&with(&["gpuledger", "--root", &root, "record"], &record_args(n, &argv))),
        ),
        Origin::Attach(args) => format!(
            "1. {}.\n2. {}\n3. {show}\n",
            start_the_job(rec),
            shell(&with(&["gpuledger", "record", "-o", n], &args)),
        ),
        Origin::Live(argv) if argv.is_empty() => format!(
            "1. Start the job (the recording {} does not name its command).\n2. {show}\n",
            code(n)
        ),
        Origin::Live(argv) => {
            let env = job_env(rec);
            let run = if env.is_empty() {
                argv
            } else {
                ["env".to_string()].into_iter().chain(env).chain(argv).collect()
            };
            let from = if run.first().map(String::as_str) == Some("env") {
                "The recorded command, with the job's allow-listed environment as recorded:"
            } else {
                "The recorded command (the job set none of the allow-listed variables):"
            };
            format!(
                "{from}\n\n1. {}\n2. {show}\n",
                shell(&with(&["gpuledger", "record", "-o", n, "--"], &run)),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steps_keep_the_jobs_variables_not_the_tracers_or_the_launchers() {
        let env: std::collections::BTreeMap<String, String> = [
            ("CUDA_HOME", "/usr/local/cuda"),
            ("CUDA_INJECTION64_PATH", "/opt/gl/libgpuledger_tracer.so"),
            ("GPULEDGER_TRACE_FD", "3:1234"),
            ("GPULEDGER_TRACE_SOCKET", "/run/gl.sock"),
            ("LD_PRELOAD", "/opt/gl/libgpuledger_tracer.so"),
            ("RANK", "0"),
            ("SLURM_JOB_ID", "7"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(without_launcher(&env), ["CUDA_HOME=/usr/local/cuda"]);
        // Another tool's injection or preload is the job's own and stays.
        let other: std::collections::BTreeMap<String, String> = [
            ("CUDA_INJECTION64_PATH", "/opt/nsys/libinj.so"),
            (
                "LD_PRELOAD",
                "/opt/gl/libgpuledger_tracer.so:/usr/lib/libjemalloc.so",
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(without_launcher(&other).len(), 2);
    }
}
