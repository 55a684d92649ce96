//! How many of a vendor's devices a job sees after its device masks, and how many ranks its
//! launcher starts.
//!
//! Masks: Level Zero `ZE_AFFINITY_MASK` (`0,1` or sub-devices `0.0,1.1`: root indices count),
//! oneAPI `ONEAPI_DEVICE_SELECTOR` (`level_zero:0,1`, `level_zero:*`; `!` exclusions are not
//! modelled and leave the count unchanged), `CUDA_VISIBLE_DEVICES`, `HIP_VISIBLE_DEVICES` /
//! `ROCR_VISIBLE_DEVICES`.

use std::collections::{BTreeMap, BTreeSet};

/// Devices of `vendor` (`8086`, `10de`, `1002`) visible out of `present`, and the masks that
/// decided it (`NAME=value`).
pub fn visible(
    vendor: &str,
    present: usize,
    env: &BTreeMap<String, String>,
) -> (usize, Vec<String>) {
    let names: &[&str] = match vendor {
        "8086" => &["ZE_AFFINITY_MASK", "ONEAPI_DEVICE_SELECTOR"],
        "10de" => &["CUDA_VISIBLE_DEVICES"],
        "1002" => &["HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"],
        _ => &[],
    };
    let mut count = present;
    let mut used = Vec::new();
    for &name in names {
        let Some(value) = env.get(name) else { continue };
        let limit = if name == "ONEAPI_DEVICE_SELECTOR" {
            selector_count(value, present)
        } else {
            Some(list_count(value, present))
        };
        if let Some(n) = limit {
            count = count.min(n);
            used.push(format!("{name}={value}"));
        }
    }
    (count, used)
}

/// Distinct root indices below `present` in a comma list (`0,1`, `0.0,0.1,1`).
fn list_count(value: &str, present: usize) -> usize {
    let roots: BTreeSet<usize> = value
        .split(',')
        .filter_map(|t| t.trim().split('.').next()?.parse().ok())
        .filter(|&i| i < present)
        .collect();
    roots.len()
}

/// Devices a oneAPI selector keeps; `None` when it does not restrict Level Zero devices.
fn selector_count(value: &str, present: usize) -> Option<usize> {
    let mut total = None;
    for term in value.split(';') {
        let Some((backend, devices)) = term.trim().split_once(':') else {
            continue;
        };
        if backend.starts_with('!') || devices.contains('!') {
            return None;
        }
        if !matches!(backend, "level_zero" | "*") {
            continue;
        }
        let n = if devices.split(',').any(|d| matches!(d.trim(), "*" | "gpu")) {
            present
        } else {
            list_count(devices, present)
        };
        total = Some(total.unwrap_or(0usize).max(n));
    }
    // A selector naming only other backends hides every Level Zero device.
    Some(total.unwrap_or(0))
}

/// Ranks a launcher command starts: torchrun / `torch.distributed.run` `--nproc-per-node N`
/// (also `--nproc_per_node`, `=N`), mpirun / mpiexec `-n N` / `-np N`.
pub fn ranks_of(cmd: &[String]) -> Option<(u32, String)> {
    let launcher = cmd.iter().any(|a| {
        let base = a.rsplit('/').next().unwrap_or(a);
        matches!(base, "torchrun" | "mpirun" | "mpiexec") || a == "torch.distributed.run"
    });
    if !launcher {
        return None;
    }
    const FLAGS: [&str; 4] = ["--nproc-per-node", "--nproc_per_node", "-np", "-n"];
    for (i, a) in cmd.iter().enumerate() {
        for flag in FLAGS {
            let value = if a == flag {
                cmd.get(i + 1).map(String::as_str)
            } else {
                a.strip_prefix(flag).and_then(|r| r.strip_prefix('='))
            };
            if let Some(n) = value.and_then(|v| v.parse::<u32>().ok()) {
                return Some((n, format!("{flag} {n}")));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn masks() {
        let e = BTreeMap::new();
        assert_eq!(visible("8086", 4, &e).0, 4);
        assert_eq!(visible("8086", 4, &env(&[("ZE_AFFINITY_MASK", "0")])).0, 1);
        assert_eq!(
            visible("8086", 4, &env(&[("ZE_AFFINITY_MASK", "0.0,0.1,1")])).0,
            2
        );
        assert_eq!(
            visible("8086", 2, &env(&[("ZE_AFFINITY_MASK", "0,7")])).0,
            1
        );
        let sel = |v| visible("8086", 4, &env(&[("ONEAPI_DEVICE_SELECTOR", v)])).0;
        assert_eq!(sel("level_zero:0"), 1);
        assert_eq!(sel("level_zero:*"), 4);
        assert_eq!(sel("opencl:*"), 0);
        assert_eq!(sel("level_zero:!1"), 4);
        assert_eq!(
            visible("10de", 8, &env(&[("CUDA_VISIBLE_DEVICES", "2,3")])).0,
            2
        );
        assert_eq!(visible("10de", 8, &env(&[("ZE_AFFINITY_MASK", "0")])).0, 8);
    }

    #[test]
    fn launcher_ranks() {
        let c = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            ranks_of(&c("torchrun --nproc-per-node=4 train.py")).map(|r| r.0),
            Some(4)
        );
        assert_eq!(
            ranks_of(&c("/usr/bin/torchrun --nproc_per_node 2 t.py")).map(|r| r.0),
            Some(2)
        );
        assert_eq!(ranks_of(&c("mpirun -np 8 ./a")).map(|r| r.0), Some(8));
        assert_eq!(
            ranks_of(&c(
                "python -m torch.distributed.run --nproc-per-node=3 t.py"
            ))
            .map(|r| r.0),
            Some(3)
        );
        assert_eq!(ranks_of(&c("python train.py -n 4")), None);
    }
}
