//! `experiment`: run a command as given and once per control (an environment change), and say
//! which control removes the effect. The built-in controls are the ones the seed's maintainers
//! and reporters ran by hand; debug keys among them are for diagnosis, never for production.

use crate::timeline::{JobEnd, Registrations, RunSummary};
use thiserror::Error;

/// One control: a name, what it tests, and the environment it sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Control {
    /// Name used on the command line.
    pub name: String,
    /// What it isolates.
    pub about: String,
    /// Variables it sets.
    pub env: Vec<(String, String)>,
}

fn c(name: &str, about: &str, env: &[(&str, &str)]) -> Control {
    Control {
        name: name.into(),
        about: about.into(),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

/// The built-in controls.
pub fn builtin() -> Vec<Control> {
    vec![
        c(
            "single-device",
            "only the first device visible to each rank",
            &[
                ("ZE_AFFINITY_MASK", "0"),
                ("CUDA_VISIBLE_DEVICES", "0"),
                ("HIP_VISIBLE_DEVICES", "0"),
            ],
        ),
        c(
            "no-defer-backing",
            "compute-runtime's BMG defer-backing off (debug key)",
            &[("NEOReadDebugKeys", "1"), ("EnableDeferBacking", "0")],
        ),
        c(
            "no-peer-access",
            "zeDeviceCanAccessPeer forced false (debug key)",
            &[
                ("NEOReadDebugKeys", "1"),
                ("ForceZeDeviceCanAccessPerReturnValue", "0"),
            ],
        ),
        c(
            "usm-resident",
            "Unified Runtime's v1 Level Zero adapter, device USM made resident on its own device only",
            &[("SYCL_UR_USE_LEVEL_ZERO_V2", "0"), ("UR_L0_USM_RESIDENT", "0x1")],
        ),
        c(
            "no-usm-pools",
            "the three USM pools off (debug keys)",
            &[
                ("NEOReadDebugKeys", "1"),
                ("EnableHostUsmAllocationPool", "0"),
                ("EnableDeviceUsmAllocationPool", "0"),
                ("EnableUsmAllocationPoolManager", "0"),
            ],
        ),
        c(
            "exact-pinned",
            "PyTorch's pinned host allocator pins exact sizes and caches no large block",
            &[(
                "PYTORCH_ALLOC_CONF",
                "pinned_max_round_threshold_mb:1,pinned_max_cached_size_mb:1",
            )],
        ),
        c(
            "nccl-no-p2p",
            "NCCL peer-to-peer transport off",
            &[("NCCL_P2P_DISABLE", "1")],
        ),
    ]
}

pub use gpuledger_trace_wire::SKIP_PEER_RESIDENCY_ENV;

/// The opt-in control that answers peer residency calls without the driver.
const SKIP_PEER_RESIDENCY: &str = "skip-peer-residency";

/// gpuledger's tracer library, as `record` finds it.
fn tracer_library() -> std::path::PathBuf {
    let exe = std::env::current_exe().ok();
    crate::recording::trace::library(
        |k| std::env::var(k).ok(),
        exe.as_deref().and_then(std::path::Path::parent),
    )
}

/// Controls run only when named, never by default: diagnostics that may slow or break the job.
/// `skip-peer-residency` preloads gpuledger's Level Zero interposer (`tracer`), which answers
/// `zeContextMakeMemoryResident` on a device other than the allocation's own with success,
/// without making the memory resident there (what the compute-runtime#968 reporter's shim did):
/// kernels that then touch that memory from the peer may fault or slow down.
pub fn opt_in() -> Vec<Control> {
    let lib = tracer_library();
    let preload = crate::recording::trace_ze::preload_value(
        &lib,
        std::env::var(crate::recording::trace_ze::PRELOAD_ENV)
            .ok()
            .as_deref(),
    );
    vec![c(
        SKIP_PEER_RESIDENCY,
        "peer zeContextMakeMemoryResident answered without reaching the driver (diagnostic: may slow or break the job)",
        &[
            (SKIP_PEER_RESIDENCY_ENV, "1"),
            (crate::recording::trace_ze::PRELOAD_ENV, &preload),
        ],
    )]
}

/// A control that could not be understood or cannot run.
#[derive(Debug, Error, PartialEq)]
pub enum ControlError {
    /// Neither a built-in or opt-in name nor `NAME:VAR=VAL,…`.
    #[error(
        "unknown control {0:?}: use a built-in name (--list-controls) or NAME:VAR=VAL,VAR=VAL"
    )]
    Unknown(String),
    /// `skip-peer-residency` without the tracer library to preload.
    #[error("control skip-peer-residency preloads gpuledger's tracer library, not found at {}: build it with `cargo build --release -p gpuledger-tracer` and put it beside gpuledger, or set GPULEDGER_TRACER", .0.display())]
    NoTracer(std::path::PathBuf),
}

/// Parses `--controls`: built-in or opt-in names, or `NAME:VAR=VAL,…`.
pub fn parse_controls(list: &[String]) -> Result<Vec<Control>, ControlError> {
    let mut known = builtin();
    known.extend(opt_in());
    list.iter()
        .map(|item| {
            if let Some(k) = known.iter().find(|k| k.name == *item) {
                let lib = tracer_library();
                if k.name == SKIP_PEER_RESIDENCY && !lib.is_file() {
                    return Err(ControlError::NoTracer(lib));
                }
                return Ok(k.clone());
            }
            let (name, assigns) = item
                .split_once(':')
                .ok_or_else(|| ControlError::Unknown(item.clone()))?;
            let env = assigns
                .split(',')
                .map(|a| {
                    a.split_once('=')
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                })
                .collect::<Option<Vec<_>>>()
                .filter(|e| !e.is_empty() && !name.is_empty())
                .ok_or_else(|| ControlError::Unknown(item.clone()))?;
            Ok(Control {
                name: name.into(),
                about: "user-defined".into(),
                env,
            })
        })
        .collect()
}

/// The measures compared across runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Measures {
    /// Configuration name (`as given` or the control).
    pub name: String,
    /// Largest peer-fd host-class bytes of any rank.
    pub peer_host: u64,
    /// Driver-held host memory peak (the ledger's definition, as recorded).
    pub driver_held: Option<u64>,
    /// MemAvailable low point.
    pub mem_available_low: Option<u64>,
    /// Seconds.
    pub duration_s: f64,
    /// How the last run ended (`None` without runs).
    pub end: Option<JobEnd>,
    /// Whether a pinned peer_mirror finding was recorded.
    pub pinned_mirror: bool,
}

fn median(mut v: Vec<u64>) -> Option<u64> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

/// Measures of a configuration's runs (medians over repeats).
pub fn measure(name: &str, runs: &[RunSummary]) -> Measures {
    let each = |f: &dyn Fn(&RunSummary) -> Option<u64>| median(runs.iter().filter_map(f).collect());
    let last = runs.last();
    Measures {
        name: name.into(),
        peer_host: each(&|r| r.peer_host.iter().map(|p| p.bytes).max()).unwrap_or(0),
        driver_held: each(&|r| r.driver_held_bytes()),
        mem_available_low: each(&|r| r.mem_available_low),
        duration_s: last.map(|r| r.duration_s).unwrap_or(0.0),
        end: last.map(|r| r.job_end),
        pinned_mirror: runs
            .iter()
            .any(|r| r.registrations() == Registrations::Pinned),
    }
}

/// One line naming the control(s) that remove the effect seen as given.
pub fn verdict(base: &Measures, controls: &[Measures]) -> String {
    let held = |m: &Measures| m.driver_held.unwrap_or(0);
    if !base.pinned_mirror {
        return "The run as given shows no pinned peer mirror: there is no effect for a control to remove.".into();
    }
    let removes: Vec<&Measures> = controls
        .iter()
        .filter(|m| !m.pinned_mirror && held(m) * 2 < held(base))
        .collect();
    if removes.is_empty() {
        return "No control removes the effect: every run still pins peer mirrors.".into();
    }
    let names: Vec<String> = removes
        .iter()
        .map(|m| {
            format!(
                "{} (driver-held {} → {})",
                m.name,
                crate::units::human_bytes(held(base)),
                crate::units::human_bytes(held(m))
            )
        })
        .collect();
    format!(
        "Removes the effect: {}. Debug keys are for diagnosis only, not for production.",
        names.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_builtin_and_user_controls() {
        let c = parse_controls(&["no-defer-backing".into(), "mine:FOO=1,BAR=2".into()]).unwrap();
        assert_eq!(c[0].env[1], ("EnableDeferBacking".into(), "0".into()));
        assert_eq!(
            c[1].env,
            vec![("FOO".into(), "1".into()), ("BAR".into(), "2".into())]
        );
        let resident = &parse_controls(&["usm-resident".into()]).unwrap()[0];
        assert_eq!(
            resident.env,
            vec![
                ("SYCL_UR_USE_LEVEL_ZERO_V2".into(), "0".into()),
                ("UR_L0_USM_RESIDENT".into(), "0x1".into())
            ]
        );
        assert!(parse_controls(&["nope".into()]).is_err());
        assert!(parse_controls(&["x:".into()]).is_err());
    }

    #[test]
    fn skip_peer_residency_runs_only_when_named_and_preloads_the_tracer() {
        assert!(builtin().iter().all(|c| c.name != "skip-peer-residency"));
        let c = &opt_in()[0];
        assert_eq!(c.name, "skip-peer-residency");
        assert_eq!(c.env[0], (SKIP_PEER_RESIDENCY_ENV.into(), "1".into()));
        let (k, v) = &c.env[1];
        assert_eq!(k, "LD_PRELOAD");
        assert!(
            v.starts_with(&tracer_library().display().to_string()),
            "{v}"
        );
        // Without the library beside the test binary (nor in GPULEDGER_TRACER), naming it is
        // an error that says how to build it; with one, it parses.
        match parse_controls(&["skip-peer-residency".into()]) {
            Err(ControlError::NoTracer(p)) => assert!(!p.is_file()),
            Ok(c) => assert!(tracer_library().is_file() && c[0].env == opt_in()[0].env),
            Err(e) => panic!("{e}"),
        }
    }
}
