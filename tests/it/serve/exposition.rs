//! A strict reader of the OpenMetrics text that `serve` writes, and the hostile-input property
//! that tests/it/serve.rs (proptest) and fuzz/fuzz_targets/exposition.rs (libFuzzer) both check.
//!
//! It accepts only what the OpenMetrics 1.0 ABNF allows for gauges and counters: `# HELP`/`# TYPE` before a
//! family's samples, samples of one family together, label values quoted with only `\\`, `\"`
//! and `\n` escapes, no repeated label name or series, and a single `# EOF` at the very end.

use gpuledger::ledger::{Ledger, MemClass, ProcessRow, Usage};
use gpuledger::sources::drm_devices::DeviceInfo;
use std::collections::BTreeSet;

/// Label pairs as written (unescaped).
pub type Labels = Vec<(String, String)>;

/// One sample: family name, label pairs as written (unescaped), value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Labels,
    pub value: f64,
}

fn is_name(s: &str, colon: bool) -> bool {
    let mut chars = s.chars();
    let ok_first = |c: char| c.is_ascii_alphabetic() || c == '_' || (colon && c == ':');
    chars.next().is_some_and(ok_first) && chars.all(|c| ok_first(c) || c.is_ascii_digit())
}

/// Reads a quoted label value from `s` (just after the opening quote); returns it and the rest.
fn label_value(s: &str) -> Result<(String, &str), String> {
    let mut out = String::new();
    let mut it = s.char_indices();
    while let Some((i, c)) = it.next() {
        match c {
            '"' => return Ok((out, &s[i + 1..])),
            '\\' => match it.next() {
                Some((_, '\\')) => out.push('\\'),
                Some((_, '"')) => out.push('"'),
                Some((_, 'n')) => out.push('\n'),
                other => return Err(format!("bad escape {other:?} in {s:?}")),
            },
            c => out.push(c),
        }
    }
    Err(format!("unterminated label value {s:?}"))
}

fn labels(mut s: &str) -> Result<(Labels, &str), String> {
    let mut out = Labels::new();
    if let Some(rest) = s.strip_prefix('}') {
        return Ok((out, rest));
    }
    loop {
        let (name, rest) = s.split_once("=\"").ok_or(format!("no label in {s:?}"))?;
        if !is_name(name, false) || out.iter().any(|(k, _)| k == name) {
            return Err(format!("bad or repeated label name {name:?}"));
        }
        let (value, rest) = label_value(rest)?;
        out.push((name.to_string(), value));
        if let Some(rest) = rest.strip_prefix(',') {
            s = rest;
        } else if let Some(rest) = rest.strip_prefix('}') {
            return Ok((out, rest));
        } else {
            return Err(format!("expected , or }} before {rest:?}"));
        }
    }
}

fn sample(line: &str) -> Result<Sample, String> {
    let end = line
        .find(['{', ' '])
        .ok_or(format!("no value in {line:?}"))?;
    let name = &line[..end];
    let (labels, rest) = match line[end..].strip_prefix('{') {
        Some(rest) => labels(rest)?,
        None => (Vec::new(), &line[end..]),
    };
    let value = rest
        .strip_prefix(' ')
        .filter(|v| !v.is_empty() && !v.contains(' '))
        .ok_or(format!("bad value part {rest:?}"))?;
    let value = value.parse().map_err(|_| format!("bad number {value:?}"))?;
    let name = name.to_string();
    Ok(Sample {
        name,
        labels,
        value,
    })
}

/// Parses `text` strictly; every sample must belong to a family declared gauge or counter by
/// `# TYPE` (a counter's samples named `<family>_total`).
pub fn parse(text: &str) -> Result<Vec<Sample>, String> {
    let body = text.strip_suffix("# EOF\n").ok_or("missing final # EOF")?;
    if !body.is_empty() && !body.ends_with('\n') {
        return Err("# EOF does not start a line".into());
    }
    let (mut declared, mut done) = (BTreeSet::new(), BTreeSet::new());
    let (mut current, mut seen) = (String::new(), BTreeSet::new());
    let mut out = Vec::new();
    // Split on \n alone: `lines()` would also eat a \r that a label value may hold.
    for line in body.split_terminator('\n') {
        if let Some(meta) = line.strip_prefix("# ") {
            let mut parts = meta.splitn(3, ' ');
            let (kind, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            match kind {
                "HELP" => {}
                "TYPE" => {
                    // A counter's samples are named `<family>_total` (OpenMetrics).
                    let sample_name = match parts.next() {
                        Some("gauge") => name.to_string(),
                        Some("counter") => format!("{name}_total"),
                        other => return Err(format!("bad type {other:?} of {name:?}")),
                    };
                    if !is_name(name, true) || !declared.insert(sample_name.clone()) {
                        return Err(format!("bad or repeated family {name:?}"));
                    }
                    if sample_name != current {
                        done.insert(std::mem::replace(&mut current, sample_name));
                    }
                    continue;
                }
                _ => return Err(format!("bad metadata line {line:?}")),
            }
            if name != current {
                done.insert(std::mem::replace(&mut current, name.to_string()));
            }
            continue;
        }
        let s = sample(line)?;
        if s.name != current || done.contains(&s.name) || !declared.contains(&s.name) {
            return Err(format!("sample outside its family: {line:?}"));
        }
        if !seen.insert((s.name.clone(), s.labels.clone())) {
            return Err(format!("repeated series {line:?}"));
        }
        out.push(s);
    }
    Ok(out)
}

/// Renders a ledger whose every string field comes from `words` (processes named `words[i]`,
/// device and region names, job labels, device info), parses it strictly and checks that the
/// per-process and device series are exactly the expected ones. Err says what was wrong.
pub fn check_hostile_render(words: &[String]) -> Result<(), String> {
    let w = |i: usize| {
        words
            .get(i % words.len().max(1))
            .cloned()
            .unwrap_or_default()
    };
    let device = DeviceInfo {
        id: w(0),
        minors: vec![w(1)],
        driver: Some(w(2)),
        vendor: Some(w(3)),
        device: Some(w(4)),
        name: Some(w(5)),
        runtime_status: None,
        vram_total: None,
        vram_used: None,
        vis_vram_total: None,
        vis_vram_used: None,
        gtt_total: None,
        gtt_used: None,
        local_totals: Default::default(),
        integrated: None,
        telemetry: Default::default(),
    };
    let processes: Vec<ProcessRow> = (0..words.len().clamp(1, 3))
        .map(|i| process(i, &w))
        .collect();
    let mut expected = BTreeSet::new();
    for (i, p) in processes.iter().enumerate() {
        for u in &p.usage {
            let mut l = vec![
                ("pid", p.pid.to_string()),
                ("comm", p.comm.clone()),
                ("rank", i.to_string()),
                ("device", u.device.clone()),
                ("region", u.region.clone()),
                ("class", "host".to_string()),
            ];
            // Kubernetes labels under names the Prometheus Operator does not add: the pod's
            // namespace and name where known, else only its uid.
            let j = &p.labels;
            let named = j.pod_name.is_some();
            for (k, v) in [
                ("k8s_namespace", j.namespace.as_ref().filter(|_| named)),
                ("k8s_pod", j.pod_name.as_ref()),
                ("k8s_pod_uid", j.pod.as_ref().filter(|_| !named)),
                ("k8s_container_id", j.container.as_ref()),
                ("job", j.job.as_ref()),
            ] {
                l.extend(v.cloned().map(|v| (k, v)));
            }
            expected.insert(
                l.into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect::<Vec<_>>(),
            );
        }
    }
    let ledger = Ledger {
        devices: vec![device.clone()],
        processes,
        ..Default::default()
    };
    let text =
        gpuledger::serve::render_metrics(&ledger, &[], &Default::default(), &Default::default());
    let samples = parse(&text).map_err(|e| format!("{e}\n{text}"))?;
    let of = |name: &str| -> Vec<Vec<(String, String)>> {
        let f = samples.iter().filter(|s| s.name == name);
        f.map(|s| s.labels.clone()).collect()
    };
    let got: BTreeSet<_> = of("gpuledger_process_memory_bytes").into_iter().collect();
    if got != expected || of("gpuledger_process_memory_bytes").len() != expected.len() {
        return Err(format!(
            "process series {got:?}\nexpected {expected:?}\n{text}"
        ));
    }
    let info = vec![vec![
        ("device".to_string(), device.id),
        ("driver".to_string(), w(2)),
        ("vendor".to_string(), w(3)),
        ("device_id".to_string(), w(4)),
        ("name".to_string(), w(5)),
    ]];
    if of("gpuledger_device_info") != info {
        return Err(format!("device series differ\n{text}"));
    }
    let families = [
        "gpuledger_device_info",
        "gpuledger_process_memory_bytes",
        "gpuledger_sample_timestamp_seconds",
        "gpuledger_build_info",
        "gpuledger_scan_duration_seconds",
        "gpuledger_scan_errors_total",
    ];
    match samples
        .iter()
        .find(|s| !families.contains(&s.name.as_str()))
    {
        Some(s) => Err(format!("unexpected series {s:?}\n{text}")),
        None => Ok(()),
    }
}

/// Process `i` of the hostile ledger: 1 GiB resident on up to two regions named by words.
fn process(i: usize, w: &impl Fn(usize) -> String) -> ProcessRow {
    let usage = |k: usize| Usage {
        device: w(i + k),
        region: w(i + k + 1),
        class: MemClass::Host,
        total: None,
        resident: Some(1 << 30),
        shared: None,
        purgeable: None,
        active: None,
        source: Default::default(),
    };
    let mut usage = vec![usage(0), usage(2)];
    usage.dedup_by(|a, b| a.device == b.device && a.region == b.region);
    ProcessRow {
        pid: 1000 + i as u32,
        nspid: vec![],
        comm: w(i),
        cmdline: vec![w(i + 1), w(i + 2)],
        rank: Some(i as u32),
        local_rank: None,
        home_device: None,
        usage,
        env: Default::default(),
        shared_with_others: vec![],
        has_nvidia_fds: false,
        has_kfd_fd: false,
        cgroup: None,
        labels: gpuledger::sources::cgroup::JobLabels {
            pod: Some(w(i + 3)),
            container: Some(w(i + 4)),
            job: (i % 2 == 0).then(|| w(i + 5)),
            namespace: (i % 3 == 0).then(|| w(i + 6)),
            pod_name: (i % 3 == 0).then(|| w(i + 7)),
            ..Default::default()
        },
        engines: Vec::new(),
    }
}
