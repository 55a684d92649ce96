//! deploy/kubernetes: the PrometheusRule generated from deploy/'s rule files, the kustomization,
//! the DaemonSet's arguments, and that its two capabilities are the ones reading fdinfo needs.

use crate::common;
use common::*;
use std::path::Path;
use std::process::{Command, Stdio};

const RULE_HEADER: &str = "\
# Generated from deploy/alerts.yml and deploy/recording-rules.yml by tests/it/kubernetes.rs:
# edit those files and run `UPDATE_DEPLOY=1 cargo test --test it kubernetes`. The Prometheus Operator
# picks rules up by its ruleSelector; add the label yours selects (often `release: <release>`).
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: gpuledger
  labels:
    app.kubernetes.io/name: gpuledger
spec:
  groups:
";

/// The PrometheusRule that deploy/'s rule files give: their groups, indented under `spec`.
fn prometheus_rule() -> String {
    let mut out = String::from(RULE_HEADER);
    for f in ["alerts.yml", "recording-rules.yml"] {
        let text = read(&deploy().join(f));
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("groups:"), "{f} starts with `groups:`");
        for line in lines {
            if !line.is_empty() {
                out.push_str("  ");
            }
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn prometheus_rule_is_generated_from_the_rule_files() {
    let path = deploy().join("kubernetes/prometheusrule.yaml");
    let want = prometheus_rule();
    if std::env::var_os("UPDATE_DEPLOY").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    assert!(
        read(&path) == want,
        "{} is out of date: run UPDATE_DEPLOY=1 cargo test --test it kubernetes",
        path.display()
    );
}

#[test]
fn kustomization_lists_every_manifest() {
    let dir = deploy().join("kubernetes");
    let kust = read(&dir.join("kustomization.yaml"));
    let mut manifests: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") && n != "kustomization.yaml")
        .collect();
    manifests.sort();
    let listed: Vec<&str> = kust
        .lines()
        .skip_while(|l| *l != "resources:")
        .skip(1)
        .map_while(|l| l.strip_prefix("  - "))
        .collect();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, manifests);
}

/// The DaemonSet's `args:` line, read as the JSON array it is written as.
fn daemonset_args() -> Vec<String> {
    let text = read(&deploy().join("kubernetes/daemonset.yaml"));
    let line = text
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("args: "))
        .expect("an args: line");
    serde_json::from_str(line).unwrap()
}

#[test]
fn daemonset_args_start_the_exporter() {
    let args = daemonset_args();
    assert_eq!(
        args[..5],
        ["serve", "--proc", "/host/proc", "--listen", ":9464"]
    );
    // The same arguments, with this machine's /proc for the host's and a free port for 9464.
    let port = free_port();
    let args: Vec<String> = args
        .iter()
        .map(|a| match a.as_str() {
            "/host/proc" => "/proc".to_string(),
            ":9464" => format!(":{port}"),
            _ => a.clone(),
        })
        .collect();
    let mut child = bin().args(&args).stderr(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stderr.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let body = ureq::get(&format!("http://127.0.0.1:{port}/metrics")).call();
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.contains("/metrics"), "{line}");
    let body = body.unwrap().into_string().unwrap();
    assert!(
        body.contains("gpuledger_host_memory_total_bytes "),
        "{body}"
    );
}

/// The capabilities the DaemonSet adds, as setpriv names them (`+sys_ptrace`).
fn daemonset_caps() -> Vec<String> {
    let text = read(&deploy().join("kubernetes/daemonset.yaml"));
    let line = text
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("add: "))
        .expect("a capabilities add: line");
    let caps: Vec<String> = serde_json::from_str(line).unwrap();
    caps.iter()
        .map(|c| format!("+{}", c.to_lowercase()))
        .collect()
}

/// A process of user nobody (65534) holding fd 0 open; killed when dropped.
struct OtherUser(std::process::Child);

impl Drop for OtherUser {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn other_user_process() -> OtherUser {
    let child = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sleep",
            "60",
        ])
        .stdin(std::fs::File::open(deploy().join("alerts.yml")).unwrap())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    // Until setpriv has switched uid and exec'd, the pid is still root's setpriv.
    while !read(Path::new(&status)).contains("Uid:\t65534\t65534\t65534") {
        assert!(
            std::time::Instant::now() < deadline,
            "setpriv did not start sleep"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    OtherUser(child)
}

/// Which of listing `/proc/PID/fd`, readlink on fd 0 and reading fdinfo 0 succeed with only
/// `caps` in the bounding set (uid 0 gets exactly its bounding set on exec).
fn reads_with(caps: &[String], pid: u32) -> [bool; 3] {
    let bounding = format!(
        "--bounding-set=-all{}",
        caps.iter().map(|c| format!(",{c}")).collect::<String>()
    );
    let run = |cmd: &[&str]| {
        Command::new("setpriv")
            .args([bounding.as_str(), "--inh-caps=-all", "--"])
            .args(cmd)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
    };
    let fd = format!("/proc/{pid}/fd");
    [
        run(&["ls", &fd]),
        run(&["readlink", &format!("{fd}/0")]),
        run(&["cat", &format!("/proc/{pid}/fdinfo/0")]),
    ]
}

#[test]
fn daemonset_capabilities_are_needed_and_enough() {
    if !rustix::process::geteuid().is_root() {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root");
        eprintln!("skipped: dropping capabilities to test them needs root");
        return;
    }
    let caps = daemonset_caps();
    assert_eq!(caps, ["+sys_ptrace", "+dac_read_search"]);
    let p = other_user_process();
    let pid = p.0.id();
    assert_eq!(
        reads_with(&caps, pid),
        [true; 3],
        "both together read everything"
    );
    assert_eq!(reads_with(&[], pid), [false; 3], "without them nothing");
    // Each alone falls short, so neither can be dropped.
    assert_eq!(
        reads_with(&caps[..1], pid),
        [false, false, true],
        "SYS_PTRACE alone"
    );
    assert_eq!(
        reads_with(&caps[1..], pid),
        [true, false, false],
        "DAC_READ_SEARCH alone"
    );
}
