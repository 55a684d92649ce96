//! The report's facts that more than one section states (the driver, the frameworks, the
//! modules, what two recordings differ in), each computed once from one source: the machine
//! described (live, `--root` or the recording's own facts) and the recordings' `meta`.

use super::ReportInput;
use crate::recording::Recording;
use crate::sources::system_info::SystemInfo;
use std::collections::BTreeMap;

/// The driver a maintainer asks to be the latest: the Intel compute runtime's package, else the
/// NVIDIA driver (its module or NVML), else the ROCm release; `None` when none was found.
pub(super) fn installed_driver(s: &SystemInfo) -> Option<String> {
    let runtime = s.packages.iter().find(|(k, _)| {
        k.contains("intel-opencl-icd")
            || k.contains("compute-runtime")
            || k.contains("libze-intel-gpu")
    });
    runtime
        .map(|(k, v)| format!("{k} {v}"))
        .or_else(|| s.nvidia.as_ref().map(|v| format!("NVIDIA driver {v}")))
        .or_else(|| s.rocm.as_ref().map(|v| format!("ROCm {v}")))
}

fn json_map(rec: &Recording, key: &str) -> BTreeMap<String, String> {
    rec.meta
        .get(key)
        .and_then(|v| serde_json::from_str(v).ok())
        .unwrap_or_default()
}

/// The job's framework versions (torch, jax, CuPy, the CUDA runtime wheels…): what the machine
/// described found beside its Python processes, then what each recording kept of its job's.
pub(super) fn python(input: &ReportInput) -> BTreeMap<String, String> {
    let mut out = input.system.python.clone();
    for (_, rec) in input.recordings {
        for (k, v) in json_map(rec, "python") {
            out.entry(k).or_insert(v);
        }
    }
    out
}

/// The CUDA runtime the job used, and where that was read: PyTorch's build (`torch.cuda`),
/// else the `nvidia-cuda-runtime` wheel beside it.
pub(super) fn cuda_runtime(python: &BTreeMap<String, String>) -> Option<String> {
    if let Some(v) = python.get("torch.cuda") {
        return Some(format!("{v} (PyTorch's build)"));
    }
    python
        .iter()
        .find(|(k, _)| k.starts_with("nvidia-cuda-runtime"))
        .map(|(k, v)| format!("{v} (Python package {k})"))
}

/// The CUDA toolkit: `/usr/local/cuda/version.json` of the machine described, else the
/// `CUDA_VERSION` a recorded job's environment had (NVIDIA's containers set it), said as such.
pub(super) fn cuda_toolkit(input: &ReportInput) -> Option<String> {
    if let Some(v) = &input.system.cuda_toolkit {
        return Some(format!("{v} (/usr/local/cuda/version.json)"));
    }
    input
        .recordings
        .iter()
        .flat_map(|(_, r)| r.processes.iter())
        .find_map(|p| p.env.get("CUDA_VERSION"))
        .map(|v| format!("{v} (the job's CUDA_VERSION)"))
}

/// An NVIDIA mode as NVML gave it per GPU: `on`, `off`, or `on for 1 of 2 GPUs`; "not found"
/// where NVML gave it for none.
pub(super) fn nvidia_mode(
    ledger: &crate::ledger::Ledger,
    mode: impl Fn(&crate::sources::telemetry::Telemetry) -> Option<bool>,
) -> String {
    let said: Vec<bool> = ledger
        .devices
        .iter()
        .filter_map(|d| mode(&d.telemetry))
        .collect();
    let on = said.iter().filter(|m| **m).count();
    match (said.len(), on) {
        (0, _) => "not found (NVML did not say)".into(),
        (n, 0) => format!("off ({n} GPU{})", if n == 1 { "" } else { "s" }),
        (n, k) if k == n => format!("on ({n} GPU{})", if n == 1 { "" } else { "s" }),
        (n, k) => format!("on for {k} of {n} GPUs"),
    }
}

/// The GPU kernel modules loaded, from `/proc/modules` (live or as recorded), else the drivers
/// the devices are bound to, said as such.
pub(super) fn modules(input: &ReportInput) -> Option<String> {
    let mut modules = input.system.modules.clone();
    for (_, rec) in input.recordings {
        let kept: Vec<String> = rec
            .meta
            .get("modules")
            .and_then(|m| serde_json::from_str(m).ok())
            .unwrap_or_default();
        modules.extend(kept);
    }
    modules.sort();
    modules.dedup();
    if !modules.is_empty() {
        return Some(modules.join(", "));
    }
    let mut drivers: Vec<&str> = input
        .ledger
        .devices
        .iter()
        .filter_map(|d| d.driver.as_deref())
        .collect();
    drivers.sort();
    drivers.dedup();
    (!drivers.is_empty()).then(|| {
        format!(
            "{} (the devices' driver; /proc/modules was not read)",
            drivers.join(", ")
        )
    })
}

/// The facts a recording kept that a regression turns on: kernel, packages, driver and
/// framework versions, the job's allow-listed environment and its command.
fn kept(rec: &Recording) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some(k) = rec.meta.get("kernel") {
        out.insert("kernel".to_string(), k.clone());
    }
    for (key, what) in [
        ("packages", "package"),
        ("driver_versions", "driver"),
        ("python", "python"),
    ] {
        for (k, v) in json_map(rec, key) {
            out.insert(format!("{what} {k}"), v);
        }
    }
    let first = rec
        .processes
        .iter()
        .min_by_key(|p| (p.rank.unwrap_or(u32::MAX), p.first, p.pid));
    for (k, v) in first.map(|p| p.env.clone()).unwrap_or_default() {
        out.insert(format!("environment {k}"), v);
    }
    out.insert("command".to_string(), rec.command().join(" "));
    out
}

/// Whether a recording kept any version (recordings before gpuledger kept them have none).
fn has_versions(rec: &Recording) -> bool {
    ["packages", "driver_versions", "python"]
        .iter()
        .any(|k| !json_map(rec, k).is_empty())
}

/// The "Regression" section for two recordings: what the recordings show differs between A and
/// B, or that they cannot show it.
pub(super) fn regression(a: &Recording, b: &Recording) -> String {
    if !has_versions(a) || !has_versions(b) {
        return "not found: a recording keeps no runtime, driver or framework version (recorded by an older gpuledger, or on a machine where none was found), so what differs between A and B beyond the memory in \"Bad vs good\" is not known\n".into();
    }
    let (ka, kb) = (kept(a), kept(b));
    let mut keys: Vec<&String> = ka.keys().chain(kb.keys()).collect();
    keys.sort();
    keys.dedup();
    let none = "none".to_string();
    let differ: Vec<String> = keys
        .into_iter()
        .filter(|k| ka.get(*k) != kb.get(*k))
        .map(|k| {
            format!(
                "{k}: {} in A, {} in B",
                ka.get(k).unwrap_or(&none),
                kb.get(k).unwrap_or(&none)
            )
        })
        .collect();
    if differ.is_empty() {
        return "No: A and B kept the same kernel, driver, runtime and framework versions, environment and command; the difference in \"Bad vs good\" is not explained by a version\n".into();
    }
    let mut out = String::from(
        "Possibly: A and B differ in what the recordings kept (see \"Bad vs good\" for what the memory did):\n\n",
    );
    for d in differ {
        out.push_str(&format!("- {}\n", super::escape::text(&d)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::RecordedProcess;

    fn rec(meta: &[(&str, &str)], env: &[(&str, &str)]) -> Recording {
        Recording {
            meta: meta
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            processes: vec![RecordedProcess {
                pid: 1,
                comm: "python3".into(),
                cmdline: "python3 train.py".into(),
                rank: Some(0),
                local_rank: Some(0),
                env: env
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                first: 0,
                last: 3,
                labels: serde_json::Value::Null,
            }],
            ..Recording::default()
        }
    }

    #[test]
    fn regression_says_what_the_recordings_kept_differs() {
        let old = rec(&[("command", r#"["python3","train.py"]"#)], &[]);
        let a = rec(
            &[
                ("command", r#"["python3","train.py"]"#),
                (
                    "packages",
                    r#"{"libze-intel-gpu1":"26.22.38646.4-0ubuntu1"}"#,
                ),
                ("python", r#"{"torch":"2.11.0"}"#),
            ],
            &[("RANK", "0")],
        );
        let mut b = a.clone();
        b.meta.insert(
            "packages".into(),
            r#"{"libze-intel-gpu1":"26.05.37020.3-0ubuntu1"}"#.into(),
        );
        b.processes[0]
            .env
            .insert("NEOReadDebugKeys".into(), "1".into());
        assert!(regression(&old, &a).starts_with("not found: a recording keeps no"));
        assert!(regression(&a, &a.clone()).starts_with("No: A and B kept the same"));
        let r = regression(&a, &b);
        assert!(r.starts_with("Possibly: A and B differ"), "{r}");
        assert!(
            r.contains("package libze-intel-gpu1: 26.22.38646.4-0ubuntu1 in A, 26.05.37020.3-0ubuntu1 in B"),
            "{r}"
        );
        assert!(
            r.contains("environment NEOReadDebugKeys: none in A, 1 in B"),
            "{r}"
        );
        assert!(!r.contains("torch"), "the same torch is no difference: {r}");
    }

    #[test]
    fn the_driver_and_the_cuda_runtime_come_from_one_place_each() {
        let mut s = SystemInfo {
            nvidia: Some("580.159.04 (NVML)".into()),
            ..SystemInfo::default()
        };
        assert_eq!(
            installed_driver(&s).as_deref(),
            Some("NVIDIA driver 580.159.04 (NVML)")
        );
        s.packages
            .insert("intel-opencl-icd".into(), "26.22.38646.4".into());
        assert_eq!(
            installed_driver(&s).as_deref(),
            Some("intel-opencl-icd 26.22.38646.4")
        );
        assert_eq!(installed_driver(&SystemInfo::default()), None);
        let mut py: BTreeMap<String, String> =
            [("nvidia-cuda-runtime".to_string(), "13.0.96".to_string())].into();
        assert_eq!(
            cuda_runtime(&py).as_deref(),
            Some("13.0.96 (Python package nvidia-cuda-runtime)")
        );
        py.insert("torch.cuda".into(), "13.0".into());
        assert_eq!(cuda_runtime(&py).as_deref(), Some("13.0 (PyTorch's build)"));
        assert_eq!(cuda_runtime(&BTreeMap::new()), None);
    }
}
