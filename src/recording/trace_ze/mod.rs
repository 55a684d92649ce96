//! Whether a traced job also gets the Level Zero interposer: the tracer library goes into the
//! job's `LD_PRELOAD` when the machine has a Level Zero loader, unless another tool already
//! watches the job's Level Zero calls (a preloaded library naming the same entry points, or the
//! loader's tracing layer, which unitrace and similar tools turn on). Never stacked.

use std::path::{Path, PathBuf};

/// The variable the dynamic linker preloads libraries from.
pub const PRELOAD_ENV: &str = "LD_PRELOAD";
/// The loader's switch for its tracing layer (tools such as unitrace set it).
pub const TRACING_LAYER_ENV: &str = "ZE_ENABLE_TRACING_LAYER";
/// The loader's shared object name.
const LOADER: &str = "libze_loader.so.1";
/// Where distributions and oneAPI put the loader, beside `ldconfig`'s cache and
/// `LD_LIBRARY_PATH`.
const LOADER_DIRS: [&str; 6] = [
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
    "/usr/local/lib64",
    "/opt/intel/oneapi/redist/lib",
];
/// Entry points whose presence in a preloaded library means it interposes Level Zero.
const ENTRY_POINTS: [&[u8]; 2] = [b"zeContextMakeMemoryResident", b"zeMemAllocDevice"];

/// Why the Level Zero interposer stays out of a traced job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZeOff {
    /// No Level Zero loader on the machine: nothing to interpose.
    NoLoader,
    /// The job already preloads a library naming the loader's memory entry points.
    Preloaded(PathBuf),
    /// The job turns the loader's tracing layer on.
    TracingLayer(String),
    /// The tracer's path holds a space or colon, which `LD_PRELOAD` reads as a separator.
    UnpreloadablePath(PathBuf),
}

impl std::fmt::Display for ZeOff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ZeOff::NoLoader => write!(f, "no Level Zero loader ({LOADER}) on this machine"),
            ZeOff::Preloaded(p) => write!(f, "the job preloads {}, which names the Level Zero memory calls; another tool traces it", p.display()),
            ZeOff::TracingLayer(v) => write!(f, "the job sets {TRACING_LAYER_ENV}={v}; another tool traces its Level Zero calls"),
            ZeOff::UnpreloadablePath(p) => write!(f, "the tracer's path {} holds a space or colon, which {PRELOAD_ENV} cannot carry (move it, or name another path in GPULEDGER_TRACER)", p.display()),
        }
    }
}

/// What the job's environment and the machine say, gathered by the caller.
pub struct ZeInputs<'a> {
    /// The job's environment.
    pub var: &'a dyn Fn(&str) -> Option<String>,
    /// `ldconfig -p`'s output, when it ran.
    pub ldconfig: Option<&'a str>,
    /// The start of a file's contents (`None`: unreadable).
    pub read: &'a dyn Fn(&Path) -> Option<Vec<u8>>,
    /// Whether a path is a file.
    pub is_file: &'a dyn Fn(&Path) -> bool,
}

/// `Ok(())` when the interposer goes in; why not otherwise. `tracer` is gpuledger's own
/// library (a preload of it is no other tool).
pub fn level_zero(tracer: &Path, i: &ZeInputs) -> Result<(), ZeOff> {
    if tracer.to_string_lossy().contains([':', ' ']) {
        return Err(ZeOff::UnpreloadablePath(tracer.to_path_buf()));
    }
    if let Some(v) = (i.var)(TRACING_LAYER_ENV).filter(|v| matches!(v.as_str(), "1" | "true")) {
        return Err(ZeOff::TracingLayer(v));
    }
    for lib in preloads((i.var)(PRELOAD_ENV).as_deref()) {
        if lib.file_name() == tracer.file_name() {
            continue;
        }
        let names = (i.read)(&lib).is_some_and(|bytes| {
            ENTRY_POINTS
                .iter()
                .any(|e| bytes.windows(e.len()).any(|w| w == *e))
        });
        if names {
            return Err(ZeOff::Preloaded(lib));
        }
    }
    if i.ldconfig.is_some_and(|t| t.contains(LOADER)) {
        return Ok(());
    }
    let from_env = (i.var)("LD_LIBRARY_PATH").unwrap_or_default();
    let dirs = from_env
        .split(':')
        .filter(|d| !d.is_empty())
        .chain(LOADER_DIRS);
    let mut found = dirs.map(|d| Path::new(d).join(LOADER));
    if found.any(|p| (i.is_file)(&p)) {
        Ok(())
    } else {
        Err(ZeOff::NoLoader)
    }
}

/// From a recording's `meta.trace_level_zero`, why Level Zero was not traced when that is worth
/// saying: another tool watched the job (a machine without a loader is not).
pub fn off_worth_saying(state: &str) -> Option<&str> {
    state
        .strip_prefix("off: ")
        .filter(|why| *why != ZeOff::NoLoader.to_string())
}

/// The libraries in an `LD_PRELOAD` value (separated by colons or spaces, as ld.so reads it).
fn preloads(value: Option<&str>) -> Vec<PathBuf> {
    value
        .unwrap_or_default()
        .split([':', ' '])
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// The job's `LD_PRELOAD` with the tracer first, once (an enclosing gpuledger's copy of it
/// dropped from the rest).
pub fn preload_value(tracer: &Path, existing: Option<&str>) -> String {
    let rest = preloads(existing)
        .into_iter()
        .filter(|lib| lib.file_name() != tracer.file_name());
    std::iter::once(tracer.to_path_buf())
        .chain(rest)
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}

/// Most bytes of a preloaded library read to look for Level Zero entry points (a real
/// interposer is far smaller; `LD_PRELOAD=/dev/zero` or a huge file costs no more than this).
pub const MAX_LIBRARY_BYTES: u64 = 64 << 20;

/// A preloaded library's bytes: only a regular file, at most [`MAX_LIBRARY_BYTES`].
fn read_library(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_LIBRARY_BYTES).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// [`level_zero`] on the live machine, with the environment gpuledger was started in.
pub fn level_zero_live(tracer: &Path) -> Result<(), ZeOff> {
    let ldconfig = ["/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .iter()
        .find_map(|c| std::process::Command::new(c).arg("-p").output().ok())
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    let var = |k: &str| std::env::var(k).ok();
    let read = |p: &Path| read_library(p).ok();
    let is_file = |p: &Path| p.is_file();
    level_zero(
        tracer,
        &ZeInputs {
            var: &var,
            ldconfig: ldconfig.as_deref(),
            read: &read,
            is_file: &is_file,
        },
    )
}

#[cfg(test)]
mod tests;
