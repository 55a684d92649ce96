//! API-level tracing of a started command: whether to trace ([`plan`]), and the channel the
//! tracer library in the job sends its events on ([`Listener`]).
//!
//! The tracer (`tracer/`, `libgpuledger_tracer.so`) is taken from `GPULEDGER_TRACER` or from
//! beside the gpuledger binary. Tracing is never stacked on another tool: when the job's
//! environment already sets `CUDA_INJECTION64_PATH`, or the command is a profiler that injects
//! its own (nsys, ncu, unitrace), it stays off and says why. Whether the same library also goes
//! into the job's `LD_PRELOAD` as the Level Zero interposer is decided in `trace_ze`.

use std::path::{Path, PathBuf};

/// The tracer library's file name.
pub const TRACER_FILE: &str = "libgpuledger_tracer.so";
/// The environment variable naming the tracer library (overrides the one beside the binary).
pub const TRACER_ENV: &str = "GPULEDGER_TRACER";
/// The variable the CUDA driver loads an injection library from.
pub const CUDA_INJECTION_ENV: &str = "CUDA_INJECTION64_PATH";
/// Commands that inject their own tracer into the job.
const PROFILERS: [&str; 5] = [
    "nsys",
    "ncu",
    "nv-nsight-cu-cli",
    "unitrace",
    "compute-sanitizer",
];

/// Why a recording is not traced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceOff {
    /// `--no-trace`.
    NotWanted,
    /// No tracer library beside the binary or in `GPULEDGER_TRACER`.
    NoTracer(PathBuf),
    /// The job's environment already names an injection library.
    InjectionSet(String),
    /// The command is a profiler with its own injection.
    UnderProfiler(String),
    /// Only a command that `record` starts can be traced.
    NotStarted,
    /// The command is gpuledger itself (`record -- gpuledger guard …`): the inner one traces
    /// its own job, where the numbers are acted on.
    Nested,
    /// A captured or simulated tree (`--root`) has no live job to load a tracer into.
    NotLive,
    /// The socket could not be made.
    Socket(String),
    /// The tracer was put into the job, but no event of the job arrived.
    Silent(PathBuf),
}

impl TraceOff {
    /// Whether a user who did not ask for `--no-trace` should be told: tracing was expected and
    /// another tool or the machine stood in the way. Not for an attach mode, a captured tree or
    /// a build without the tracer library (the common case; a recording says so in its meta).
    pub fn worth_saying(&self) -> bool {
        !matches!(
            self,
            TraceOff::NotWanted | TraceOff::NotStarted | TraceOff::NotLive | TraceOff::NoTracer(_)
        )
    }
}

impl std::fmt::Display for TraceOff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TraceOff::NotWanted => write!(f, "--no-trace"),
            TraceOff::NoTracer(p) => write!(f, "no tracer library at {} (build it with `cargo build --release -p gpuledger-tracer` and put {TRACER_FILE} beside gpuledger, or set {TRACER_ENV})", p.display()),
            TraceOff::InjectionSet(v) => write!(f, "the job already sets {CUDA_INJECTION_ENV}={v}; another tool traces it"),
            TraceOff::UnderProfiler(p) => write!(f, "the command runs under {p}, which injects its own tracer"),
            TraceOff::NotStarted => write!(f, "only a command gpuledger starts (after --) can be traced"),
            TraceOff::Nested => write!(f, "the command is gpuledger, which traces its own job (this recording keeps its samples, not its calls)"),
            TraceOff::NotLive => write!(f, "the machine is a captured or simulated tree (--root)"),
            TraceOff::Socket(e) => write!(f, "cannot create the trace socket: {e}"),
            TraceOff::Silent(p) => write!(f, "{} was injected but sent nothing: the job made no CUDA or Level Zero call, or a program in it cleared its environment or closed inherited descriptors and could not reach the fallback socket (sudo does both; setpriv keeps them), or the loader refused the library (setuid programs, another architecture)", p.display()),
        }
    }
}

/// Whether and with which library to trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TracePlan {
    /// Trace with this library.
    On(PathBuf),
    /// Do not, for this reason.
    Off(TraceOff),
}

/// Decides tracing for `argv` (empty: an attach mode) on the live machine (`live`); `wanted` is
/// false with `--no-trace`;
/// `var` reads the environment the job will inherit; `exe_dir` is the gpuledger binary's folder.
pub fn plan(
    wanted: bool,
    live: bool,
    argv: &[String],
    var: impl Fn(&str) -> Option<String>,
    exe_dir: Option<&Path>,
) -> TracePlan {
    if !wanted {
        return TracePlan::Off(TraceOff::NotWanted);
    }
    let Some(first) = argv.first() else {
        return TracePlan::Off(TraceOff::NotStarted);
    };
    if !live {
        return TracePlan::Off(TraceOff::NotLive);
    }
    let name = file_name(first);
    if name == "gpuledger" {
        return TracePlan::Off(TraceOff::Nested);
    }
    // An enclosing gpuledger's own tracer is no other tool: this one takes the job over, so
    // the calls reach the process that acts on them (a guard started by a recorded script).
    if let Some(v) =
        var(CUDA_INJECTION_ENV).filter(|v| !v.is_empty() && file_name(v) != TRACER_FILE)
    {
        return TracePlan::Off(TraceOff::InjectionSet(v));
    }
    if PROFILERS.contains(&name.as_str()) {
        return TracePlan::Off(TraceOff::UnderProfiler(name));
    }
    let lib = library(var, exe_dir);
    if lib.is_file() {
        TracePlan::On(lib)
    } else {
        TracePlan::Off(TraceOff::NoTracer(lib))
    }
}

/// The last component of `path`, empty when it has none.
fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The tracer library: `GPULEDGER_TRACER`, else beside the gpuledger binary (`exe_dir`), made
/// absolute with its links resolved where it exists: the file checked here is the file the
/// job's loader opens (a relative path would be resolved from the job's directory, and one
/// without a slash searched for in the library path).
pub fn library(var: impl Fn(&str) -> Option<String>, exe_dir: Option<&Path>) -> PathBuf {
    let named = match var(TRACER_ENV).filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => exe_dir.unwrap_or(Path::new(".")).join(TRACER_FILE),
    };
    std::fs::canonicalize(&named).unwrap_or(named)
}

mod listen;
mod senders;
mod start;
#[cfg(test)]
mod tests;

pub use listen::{Listener, Taken, PENDING_MAX};
pub use senders::Senders;
pub use start::{Losses, Registrations, Started};
