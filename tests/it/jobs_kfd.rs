//! Job labels (Kubernetes, Slurm), cgroup memory and dmem, pid namespaces, and ROCm KFD processes.

use crate::common;
use common::*;
use serde_json::Value;

fn snap(name: &str) -> Value {
    json_of(&["--root", fixture(name).to_str().unwrap(), "--json"], 0)
}

#[test]
fn pod_and_slurm_labels_cgroup_memory_and_dmem() {
    let doc = snap("k8s-slurm-dmem");
    let procs = doc["processes"].as_array().unwrap();
    let pod = procs.iter().find(|p| p["pid"] == 5001).unwrap();
    assert_eq!(pod["pod"], "3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b");
    assert_eq!(
        pod["container"],
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
    );
    assert_eq!(pod["job"], Value::Null);
    assert_eq!(
        pod["nspid"],
        serde_json::json!([5001, 7]),
        "pid inside the container shown, none invented"
    );
    let slurm = procs.iter().find(|p| p["pid"] == 5002).unwrap();
    assert_eq!(
        (slurm["job"].as_str(), slurm["rank"].as_u64()),
        (Some("4242"), Some(3))
    );
    assert_eq!(slurm["nspid"], serde_json::json!([]));
    let cgs = doc["cgroups"].as_array().unwrap();
    let pod_cg = cgs
        .iter()
        .find(|c| c["path"].as_str().unwrap().contains("kubepods"))
        .unwrap();
    assert_eq!(
        (
            pod_cg["memory_current"].as_u64(),
            pod_cg["memory_max"].as_u64()
        ),
        (Some(20 << 30), Some(24 << 30))
    );
    assert_eq!(pod_cg["gpu_host_class"], 2u64 << 30);
    assert_eq!(pod_cg["dmem_current"]["drm/0000:03:00.0/vram0"], 6u64 << 30);
    assert_eq!(pod_cg["dmem_max"]["drm/0000:03:00.0/vram0"], 8u64 << 30);
    assert!(
        pod_cg["dmem_max"].get("drm/0000:03:00.0/stolen").is_none(),
        "`max` is no number"
    );
    let slurm_cg = cgs
        .iter()
        .find(|c| c["path"].as_str().unwrap().contains("job_4242"))
        .unwrap();
    assert_eq!(
        slurm_cg["memory_max"],
        Value::Null,
        "memory.max `max` = unlimited"
    );
    assert_eq!(
        doc["dmem_capacity"]["drm/0000:03:00.0/vram0"],
        12465995776u64
    );
}

#[test]
fn kfd_processes_are_merged_without_double_counting() {
    let doc = snap("rocm-kfd");
    let procs = doc["processes"].as_array().unwrap();
    assert!(
        procs.iter().all(|p| p["pid"] != 6002),
        "opening /dev/kfd without memory is no GPU use"
    );
    let p1 = procs.iter().find(|p| p["pid"] == 6001).unwrap();
    let usage = p1["usage"].as_array().unwrap();
    let drm = usage.iter().find(|u| u["region"] == "vram").unwrap();
    let kfd = usage.iter().find(|u| u["region"] == "kfd-vram").unwrap();
    assert_eq!(drm["resident"], 1u64 << 30);
    assert_eq!(
        kfd["resident"],
        11u64 << 30,
        "KFD's 12 GiB minus the 1 GiB the DRM client already shows"
    );
    let p3 = procs.iter().find(|p| p["pid"] == 6003).unwrap();
    assert_eq!(p3["usage"][0]["resident"], 4u64 << 30);
    assert_eq!(
        p3["home_device"], "0000:c1:00.0",
        "gpu_id mapped through the KFD topology"
    );
    let over: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "over_reported")
        .collect();
    assert_eq!(over.len(), 1);
    assert_eq!(over[0]["bytes"], 16u64 << 30);
    assert_eq!(doc["devices"][0]["vram_used"], 10u64 << 30);
    assert_eq!(doc["devices"][0]["vram_total"], 192u64 << 30);
}

/// The label names of a sample line (`name{k="v",…} value`; these values hold no `"`).
fn label_names(line: &str) -> Vec<&str> {
    let inner = line.split_once('{').and_then(|(_, r)| r.rsplit_once('}'));
    inner
        .map(|(labels, _)| {
            labels
                .split(',')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, _)| k)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn metrics_carry_job_labels_only_when_present() {
    let s = serve_root(&fixture("k8s-slurm-dmem"), &["--min-process-bytes", "1MiB"]);
    let text = s.get("/metrics");
    let pod_line = text
        .lines()
        .find(|l| l.starts_with("gpuledger_process_memory_bytes{pid=\"5001\""))
        .unwrap();
    // Namespace and name from the kubelet's /var/log/pods/<namespace>_<name>_<uid>, under names
    // the Prometheus Operator's target labels (namespace, pod, container) do not collide with.
    assert!(
        pod_line.contains(
            "k8s_namespace=\"ml-team\",k8s_pod=\"trainer-0\",k8s_container_id=\"0123456789abcdef"
        ),
        "{pod_line}"
    );
    for taken in ["namespace", "pod", "container", "pod_name", "k8s_pod_uid"] {
        assert!(
            !label_names(pod_line).contains(&taken),
            "{taken}: {pod_line}"
        );
    }
    let slurm_line = text
        .lines()
        .find(|l| l.starts_with("gpuledger_process_memory_bytes{pid=\"5002\""))
        .unwrap();
    assert!(
        slurm_line.contains("job=\"4242\"") && !slurm_line.contains("k8s_"),
        "{slurm_line}"
    );
}

#[test]
fn a_pod_whose_name_is_unknown_is_labelled_by_its_uid() {
    let (_tmp, tree) = fixture_copy("k8s-slurm-dmem");
    std::fs::remove_dir_all(tree.join("var/log/pods")).unwrap();
    let s = serve_root(&tree, &["--min-process-bytes", "1MiB"]);
    let text = s.get("/metrics");
    let pod_line = text
        .lines()
        .find(|l| l.starts_with("gpuledger_process_memory_bytes{pid=\"5001\""))
        .unwrap();
    assert!(
        pod_line.contains("k8s_pod_uid=\"3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b\""),
        "{pod_line}"
    );
    let names = label_names(pod_line);
    assert!(
        !names.contains(&"k8s_pod") && !names.contains(&"k8s_namespace"),
        "{pod_line}"
    );
}

#[test]
fn per_job_series_carry_no_pid_and_add_up_the_ranks_processes() {
    let root = fixture("k8s-slurm-dmem");
    let per_process = serve_root(&root, &["--min-process-bytes", "1MiB"]).get("/metrics");
    let per_job = serve_root(
        &root,
        &["--min-process-bytes", "1MiB", "--series", "per-job"],
    )
    .get("/metrics");
    let series = |text: &str, name: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with(&format!("{name}{{")))
            .map(String::from)
            .collect()
    };
    for name in ["gpuledger_process_memory_bytes", "gpuledger_finding_bytes"] {
        let (a, b) = (series(&per_process, name), series(&per_job, name));
        assert_eq!(a.is_empty(), b.is_empty(), "{name}");
        assert!(b.iter().all(|l| !label_names(l).contains(&"pid")), "{b:#?}");
        assert!(
            b.iter()
                .all(|l| !label_names(l).contains(&"k8s_container_id")),
            "{b:#?}"
        );
        let total = |v: &[String]| -> f64 {
            v.iter()
                .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
                .sum()
        };
        assert_eq!(total(&a), total(&b), "{name}: the same bytes, fewer keys");
        assert!(b.len() <= a.len());
    }
    let rank0 = series(&per_job, "gpuledger_process_memory_bytes");
    assert!(
        rank0
            .iter()
            .any(|l| l.contains("rank=\"0\"") && l.contains("k8s_pod=\"trainer-0\"")),
        "{rank0:#?}"
    );
}

#[test]
fn proc_option_reads_another_procfs_mount() {
    let out = run(&["--proc", "/no/such/proc"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--proc /no/such/proc: no procfs there"));
    let doc = json_of(&["--proc", "/proc", "--json"], 0);
    assert!(doc["root"].as_str().unwrap().contains("(proc: /proc)"));
    assert!(doc["scan"]["processes"].as_u64().unwrap() > 0);
}
