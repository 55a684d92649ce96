//! The simulator as an oracle: over sweeps of scenarios, ranks, backing, device visibility and
//! time, gpuledger's findings equal the ground truth the model writes beside every tree
//! (`gpuledger-sim/truth.json`): no miss, no false positive, the same home, the same backing and
//! severity, in the library's findings, the snapshot JSON, `show --json` of a recording, top's
//! model and `/metrics`.

use crate::common;
use common::*;
use gpuledger::findings::{analyze, Finding, Kind, Thresholds};
use gpuledger::ledger::{Filter, Ledger};
use gpuledger::root::Root;
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use gpuledger::serve::metrics::{render_metrics, ExporterStats, MetricsOptions};
use gpuledger::sim::truth::{ExpectedFinding, Truth};
use gpuledger::sim::{Backing, LiveWriter, Scenario, SimParams, Simulation, Visibility};
use gpuledger::sources::kernel_log::WholeLog;
use gpuledger::tree_writer::TreeWriter;
use std::path::Path;

/// The identity of a peer_mirror finding: what must match the truth exactly.
type Key = (u32, Option<u32>, String, String, String, String);

fn key_of_expected(f: &ExpectedFinding) -> Key {
    (
        f.pid.unwrap_or(0),
        f.rank,
        f.device.clone().unwrap_or_default(),
        f.peer.clone().unwrap_or_default(),
        format!("{:?}", f.backing.map(|b| b.backing())),
        f.severity.as_str().to_string(),
    )
}

fn key_of(f: &Finding) -> Key {
    (
        f.pid.unwrap_or(0),
        f.rank,
        f.device.clone().unwrap_or_default(),
        f.peer.clone().unwrap_or_default(),
        format!("{:?}", f.backing),
        f.severity.as_str().to_string(),
    )
}

fn expected(truth: &Truth) -> Vec<Key> {
    let mut v: Vec<Key> = truth
        .findings
        .iter()
        .filter(|f| f.kind == Kind::PeerMirror)
        .map(key_of_expected)
        .collect();
    v.sort();
    v
}

fn found(findings: &[Finding]) -> Vec<Key> {
    let mut v: Vec<Key> = findings
        .iter()
        .filter(|f| f.kind == Kind::PeerMirror)
        .map(key_of)
        .collect();
    v.sort();
    v
}

/// (pid, severity) of every page-allocation failure finding.
fn post_mortem(findings: &[Finding]) -> Vec<(u32, String)> {
    let mut v: Vec<(u32, String)> = findings
        .iter()
        .filter(|f| f.kind == Kind::KernelPageAllocFailure)
        .map(|f| (f.pid.unwrap_or(0), f.severity.as_str().to_string()))
        .collect();
    v.sort();
    v
}

fn post_mortem_expected(truth: &Truth) -> Vec<(u32, String)> {
    let mut v: Vec<(u32, String)> = truth
        .findings
        .iter()
        .filter(|f| f.kind == Kind::KernelPageAllocFailure)
        .map(|f| (f.pid.unwrap_or(0), f.severity.as_str().to_string()))
        .collect();
    v.sort();
    v
}

fn read_truth(dir: &Path) -> Truth {
    let text = std::fs::read_to_string(dir.join("gpuledger-sim/truth.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// One case of the sweep.
#[derive(Debug, Clone, Copy)]
struct Case {
    scenario: Scenario,
    ranks: u32,
    backing: Backing,
    visibility: Visibility,
}

impl Case {
    fn simulation(self) -> Simulation {
        let mut p = SimParams::new(self.scenario);
        p.ranks = self.ranks;
        p.backing = self.backing;
        p.visibility = self.visibility;
        Simulation::new(p)
    }
}

/// Runs `case` second by second (every `step` s) through the real tree writer, sampler, ledger
/// and findings; returns the number of states checked.
fn sweep(case: Case, step: usize) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let sim = case.simulation();
    let mut writer = LiveWriter::new(TreeWriter::new(dir.path()).unwrap(), "oracle").unwrap();
    let t = Thresholds::default();
    let mut checked = 0;
    for second in (0..=sim.params().duration_s as usize).step_by(step) {
        let state = sim.state_at(second as f64);
        writer.write(&state).unwrap();
        let mut sampler = Sampler::new(
            Root::open(dir.path()).unwrap(),
            Scope::All,
            SamplerOptions::default(),
        );
        let ledger = Ledger::from_snapshot(sampler.sample().unwrap());
        let mut ledger = ledger;
        let mut findings = analyze(&ledger, &t);
        let log = WholeLog::read(sampler.root());
        gpuledger::findings::kernel::add(&log, &mut ledger, &mut findings, None);
        assert_eq!(
            post_mortem(&findings),
            post_mortem_expected(&state.truth),
            "{case:?} at {second} s: kernel-log findings differ from the truth"
        );
        assert_eq!(
            found(&findings),
            expected(&state.truth),
            "{case:?} at {second} s: findings differ from the truth\n{:#?}",
            findings
                .iter()
                .map(|f| f.message.as_str())
                .collect::<Vec<_>>()
        );
        if let Some(ceiling) = state.truth.driver_held_ceiling {
            let over: Vec<&Finding> = findings
                .iter()
                .filter(|f| f.kind == Kind::DriverHeldHost && f.severity > ceiling)
                .collect();
            assert!(
                over.is_empty(),
                "{case:?} at {second} s: driver_held_host above {ceiling:?}: {over:#?}"
            );
        }
        views_agree(
            &ledger,
            &findings,
            &state.truth,
            &format!("{case:?} at {second} s"),
        );
        let held = ledger.host.driver_held().map_or(0, |d| d.bytes);
        assert!(
            held.abs_diff(state.truth.driver_held) <= state.truth.driver_held / 100 + 4096,
            "{case:?} at {second} s: driver-held {held} vs truth {}",
            state.truth.driver_held
        );
        checked += 1;
    }
    checked
}

/// The scenarios whose model mirrors (swept with both backings) and the healthy ones (one
/// backing: nothing is registered, so backing changes nothing).
const MIRRORING: [Scenario; 2] = [Scenario::DdpPeerMirror, Scenario::OneProcess];
const HEALTHY: [Scenario; 4] = [
    Scenario::DdpHealthy,
    Scenario::ApuDgpu,
    Scenario::XeAmdgpu,
    Scenario::NvidiaDdp,
];

/// Every scenario × `ranks` × backing × visibility (all, own card, pairs).
/// The snapshot JSON, top's model and `/metrics` of one state name the truth's peer_mirror
/// findings (the library's are checked by the caller).
fn views_agree(ledger: &Ledger, findings: &[Finding], truth: &Truth, what: &str) {
    let want = expected(truth);
    let doc: serde_json::Value =
        serde_json::from_str(&gpuledger::outputs::json::render_line(ledger, findings)).unwrap();
    let mut json: Vec<Key> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "peer_mirror")
        .map(|f| key_of(&serde_json::from_value::<Finding>(f.clone()).unwrap()))
        .collect();
    json.sort();
    assert_eq!(json, want, "{what}: snapshot JSON");
    let top = Filter::resolve(ledger, &[], &[])
        .unwrap()
        .findings(findings);
    assert_eq!(found(&top), want, "{what}: top's model");
    let metrics = render_metrics(
        ledger,
        findings,
        &MetricsOptions::default(),
        &ExporterStats::default(),
    );
    let series = metrics
        .lines()
        .filter(|l| l.starts_with("gpuledger_finding_bytes{") && l.contains("peer_mirror"))
        .count();
    assert_eq!(series, want.len(), "{what}: /metrics");
}

fn cases(ranks: impl Iterator<Item = u32> + Clone) -> Vec<Case> {
    let mut out = Vec::new();
    let backings = |s: Scenario| {
        if MIRRORING.contains(&s) {
            vec![Backing::Pinned, Backing::RegisteredOnly]
        } else {
            vec![Backing::Pinned]
        }
    };
    for scenario in MIRRORING.into_iter().chain(HEALTHY) {
        for r in ranks.clone() {
            for &backing in &backings(scenario) {
                for visibility in Visibility::ALL {
                    out.push(Case {
                        scenario,
                        ranks: r,
                        backing,
                        visibility,
                    });
                }
            }
        }
    }
    out
}

/// Seconds between checked states: every second with `GPULEDGER_ORACLE_FULL=1`, else `coarse`
/// (CI's budget), which still lands between every two segments of the run (they are 5 s
/// apart in every swept scenario but apu-dgpu's 7.5 s).
fn step(coarse: usize) -> usize {
    match std::env::var("GPULEDGER_ORACLE_FULL").as_deref() {
        Ok("1") => 1,
        _ => coarse,
    }
}

/// CPU seconds this thread has used (utime + stime of `/proc/thread-self/stat`, in the
/// kernel's 100 Hz clock ticks), so a sweep's cost reads the same on a busy machine.
fn thread_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let after_comm = stat.rsplit(')').next().unwrap_or_default();
    let fields: Vec<f64> = after_comm
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    // utime and stime are fields 14 and 15; the state (field 3) is no number, so fields 4..
    // are 0.. here.
    fields
        .get(10)
        .zip(fields.get(11))
        .map_or(0.0, |(u, s)| (u + s) / 100.0)
}

/// Runs `cases` every `step` seconds; prints and returns (cases, states).
fn sweep_all(what: &str, cases: &[Case], step: usize) -> (usize, usize) {
    let (start, cpu) = (std::time::Instant::now(), thread_cpu_s());
    let states: usize = cases.iter().map(|&c| sweep(c, step)).sum();
    eprintln!(
        "oracle {what}: {} cases, {states} states, {:.1} s wall, {:.1} s CPU",
        cases.len(),
        start.elapsed().as_secs_f64(),
        thread_cpu_s() - cpu
    );
    (cases.len(), states)
}

#[test]
fn findings_equal_the_truth_for_1_to_8_ranks() {
    let all = cases(1..=8);
    let (n, states) = sweep_all("1-8 ranks", &all, step(2));
    assert_eq!(n, 8 * 3 * (2 * 2 + 4));
    assert!(states >= n * 31);
}

#[test]
fn findings_equal_the_truth_for_9_to_16_ranks() {
    let all = cases(9..=16);
    let (n, states) = sweep_all("9-16 ranks", &all, step(6));
    assert!(states >= n * 11);
}

#[test]
fn findings_equal_the_truth_for_64_ranks() {
    // 64 ranks × 64 devices is 4,096 clients a state.
    let all = cases([64].into_iter());
    let (n, states) = sweep_all("64 ranks", &all, step(15));
    assert!(states >= n * 5);
}

#[test]
fn a_healthy_start_up_has_no_peer_mirror_in_any_view() {
    for ranks in [4u32, 8] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("s");
        let r = ranks.to_string();
        stdout_of(
            &[
                "simulate",
                "ddp-peer-mirror",
                "--ranks",
                &r,
                "--at",
                "5s",
                "--out",
                out.to_str().unwrap(),
            ],
            0,
        );
        assert!(read_truth(&out).findings.is_empty());
        let doc = json_of(&["--root", out.to_str().unwrap(), "--json"], 0);
        let kinds: Vec<&str> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["kind"].as_str())
            .collect();
        assert!(!kinds.contains(&"peer_mirror"), "{ranks} ranks: {kinds:?}");
        let code = run(&["--root", out.to_str().unwrap(), "--fail-on", "critical"])
            .status
            .code();
        assert_eq!(code, Some(0), "{ranks} ranks at start-up: no CRITICAL");
    }
}

/// The snapshot JSON and /metrics of the binary name the same findings as the truth, and the
/// home a finding names is the one the process table marks.
#[test]
fn snapshot_json_and_metrics_match_the_truth() {
    for (scenario, ranks, at, visible) in [
        ("ddp-peer-mirror", "4", "8s", "all"),
        ("ddp-peer-mirror", "3", "45s", "all"),
        ("ddp-peer-mirror", "4", "45s", "pairs"),
        ("ddp-peer-mirror", "4", "45s", "own"),
        ("one-process", "2", "45s", "all"),
        ("one-process", "3", "10s", "all"),
        ("ddp-healthy", "4", "45s", "all"),
        ("apu-dgpu", "1", "45s", "all"),
        ("xe-amdgpu", "4", "45s", "pairs"),
        ("nvidia-ddp", "4", "3s", "all"),
        ("nvidia-ddp", "4", "45s", "all"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("s");
        let o = out.to_str().unwrap();
        stdout_of(
            &[
                "simulate",
                scenario,
                "--ranks",
                ranks,
                "--at",
                at,
                "--visible",
                visible,
                "--out",
                o,
            ],
            0,
        );
        let truth = read_truth(&out);
        let doc = json_of(&["--root", o, "--json"], 0);
        let mut keys: Vec<Key> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["kind"] == "peer_mirror")
            .map(|f| serde_json::from_value::<Finding>(f.clone()).unwrap())
            .map(|f| key_of(&f))
            .collect();
        keys.sort();
        assert_eq!(keys, expected(&truth), "{scenario} {ranks} {at}: JSON");
        for f in doc["findings"].as_array().unwrap() {
            if f["kind"] != "peer_mirror" {
                continue;
            }
            let pid = f["pid"].as_u64().unwrap();
            let home = doc["processes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["pid"].as_u64() == Some(pid))
                .map(|p| p["home_device"].clone())
                .unwrap();
            let home = home.as_str().unwrap();
            // The table's home is named where it is the mirrored device, and only there: one
            // card is never both the home and the peer.
            let msg = f["message"].as_str().unwrap();
            let named = msg.contains(&format!("home {home}"));
            assert_eq!(
                named,
                f["device"] == home,
                "{scenario}: the home {home} is named where it is the device: {msg}"
            );
            assert!(named || !msg.contains("home "), "{scenario}: {msg}");
        }
        let mut sampler = Sampler::new(Root::open(&out).unwrap(), Scope::All, Default::default());
        let ledger = Ledger::from_snapshot(sampler.sample().unwrap());
        let findings = analyze(&ledger, &Thresholds::default());
        let top = Filter::resolve(&ledger, &[], &[])
            .unwrap()
            .findings(&findings);
        assert_eq!(found(&top), expected(&truth), "{scenario}: top's model");
        let metrics = render_metrics(
            &ledger,
            &findings,
            &MetricsOptions::default(),
            &ExporterStats::default(),
        );
        let series = metrics
            .lines()
            .filter(|l| l.starts_with("gpuledger_finding_bytes{") && l.contains("peer_mirror"))
            .count();
        assert_eq!(
            series,
            truth
                .findings
                .iter()
                .filter(|f| f.kind == Kind::PeerMirror)
                .count(),
            "{scenario}: /metrics\n{metrics}"
        );
    }
}

/// A recording of a simulated run: `show --json` lists a peer_mirror over time exactly for the
/// (pid, peer) pairs the truth ever expected, at the worst severity the truth gave them.
#[test]
fn show_json_of_a_recording_matches_the_truth_over_time() {
    for (ranks, backing) in [
        (2, Backing::Pinned),
        (3, Backing::RegisteredOnly),
        (4, Backing::Pinned),
    ] {
        let case = Case {
            scenario: Scenario::DdpPeerMirror,
            ranks,
            backing,
            visibility: Visibility::All,
        };
        let sim = case.simulation();
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        let ledger_path = dir.path().join("run.ledger");
        gpuledger::sim::run::record(&sim, &tree, &ledger_path, 60, &Thresholds::default()).unwrap();
        let mut want: Vec<(u64, String, String)> = Vec::new();
        for s in 0..=60 {
            let truth = sim.state_at(f64::from(s)).truth;
            for f in truth
                .findings
                .into_iter()
                .filter(|f| f.kind == Kind::PeerMirror)
            {
                let k = (
                    u64::from(f.pid.unwrap()),
                    f.peer.unwrap(),
                    f.severity.as_str().to_string(),
                );
                if !want.contains(&k) {
                    want.push(k);
                }
            }
        }
        want.sort();
        let doc = json_of(&["show", ledger_path.to_str().unwrap(), "--json"], 0);
        let text = doc.to_string();
        let mut got: Vec<(u64, String, String)> = Vec::new();
        collect_peer_mirrors(&doc, &mut got);
        got.sort();
        got.dedup();
        assert_eq!(got, want, "{case:?}: show --json\n{text}");
    }
}

/// Every peer_mirror object anywhere in a `show --json` document, as (pid, peer, severity).
fn collect_peer_mirrors(v: &serde_json::Value, out: &mut Vec<(u64, String, String)>) {
    match v {
        serde_json::Value::Object(m) => {
            if m.get("kind").and_then(|k| k.as_str()) == Some("peer_mirror") {
                if let (Some(pid), Some(peer), Some(sev)) = (
                    m.get("pid").and_then(|p| p.as_u64()),
                    m.get("peer").and_then(|p| p.as_str()),
                    m.get("severity").and_then(|p| p.as_str()),
                ) {
                    out.push((pid, peer.to_string(), sev.to_string()));
                }
            }
            m.values().for_each(|x| collect_peer_mirrors(x, out));
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_peer_mirrors(x, out)),
        _ => {}
    }
}

/// 8 ranks × 7 peers of one kind and severity read as one line in the table, each with `-v`,
/// and the JSON keeps every finding.
#[test]
fn many_findings_of_one_shape_are_one_line_in_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s");
    let o = out.to_str().unwrap();
    let args = [
        "simulate",
        "ddp-peer-mirror",
        "--ranks",
        "8",
        "--backing",
        "registered-only",
        "--at",
        "20s",
        "--out",
        o,
    ];
    stdout_of(&args, 0);
    let table = stdout_of(&["--root", o], 0);
    let flowed = table.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = flowed.split("peer_mirror: ").nth(1).unwrap_or_default();
    assert!(
        line.contains("56 findings, 8 processes × 8 peers") && line.contains("-v lists each"),
        "{table}"
    );
    let each = stdout_of(&["--root", o, "-v"], 0);
    assert_eq!(each.matches("peer_mirror:").count(), 56, "{each}");
    let doc = json_of(&["--root", o, "--json"], 0);
    assert_eq!(doc["findings"].as_array().unwrap().len(), 56);
}
