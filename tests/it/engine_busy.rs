//! Engine utilisation between two samples of a tree whose xe fdinfo counters advance (the
//! seed's 2 × B70 capture): cycles over total cycles, divided by the class's capacity, in the
//! ledger, the table and the metrics; one sample alone has none.

use crate::common;
use gpuledger::findings::Thresholds;
use gpuledger::ledger::EngineBasis;
use gpuledger::observe::Observer;
use gpuledger::outputs::table::render_snapshot;
use gpuledger::root::Root;
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use gpuledger::serve::{render_metrics, ExporterStats, MetricsOptions};
use std::path::Path;

/// Adds `by` to the value of `key` in one fdinfo file.
fn bump(file: &Path, key: &str, by: u64) {
    let text = common::read(file);
    let out: Vec<String> = text
        .lines()
        .map(|line| match line.split_once(":\t") {
            Some((k, v)) if k == key => format!("{k}:\t{}", v.parse::<u64>().unwrap() + by),
            _ => line.to_string(),
        })
        .collect();
    std::fs::write(file, out.join("\n") + "\n").unwrap();
}

#[test]
fn busy_share_comes_from_the_change_between_two_samples() {
    let (_dir, tree) = common::fixture_copy("seed-2622");
    let mut sampler = Sampler::new(
        Root::open(&tree).unwrap(),
        Scope::All,
        SamplerOptions::default(),
    );
    let mut observer = Observer::new(Thresholds::default());
    let first = observer.sample(&mut sampler).unwrap();
    assert!(first.ledger.processes.iter().all(|p| p.engines.is_empty()));
    assert!(!render_snapshot(&first.ledger, &first.findings).contains("BUSY"));

    // Rank 0 (pid 116400) ran its compute engines a quarter of the time on its own card (4
    // engines: 1000 busy cycles of 1000 elapsed is 25 % of the class), its render engine 60 %.
    let fdinfo = tree.join("proc/116400/fdinfo");
    let own = std::fs::read_dir(&fdinfo)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| common::read(p).contains("drm-pdev:\t0000:03:00.0"))
        .expect("rank 0 has an fd on 0000:03:00.0");
    for (key, by) in [
        ("drm-cycles-ccs", 1000),
        ("drm-total-cycles-ccs", 1000),
        ("drm-cycles-rcs", 600),
        ("drm-total-cycles-rcs", 1000),
    ] {
        bump(&own, key, by);
    }
    let second = observer.sample(&mut sampler).unwrap();
    let rank0 = second
        .ledger
        .processes
        .iter()
        .find(|p| p.pid == 116400)
        .unwrap();
    let on_own: Vec<(&str, u32, EngineBasis)> = rank0
        .engines
        .iter()
        .filter(|e| e.device == "0000:03:00.0")
        .map(|e| (e.engine.as_str(), e.permille, e.basis))
        .collect();
    assert_eq!(
        on_own,
        [
            ("ccs", 250, EngineBasis::Cycles),
            ("rcs", 600, EngineBasis::Cycles)
        ]
    );
    // Counters that did not move say idle, not unknown.
    assert!(rank0
        .engines
        .iter()
        .filter(|e| e.device != "0000:03:00.0")
        .all(|e| e.permille == 0));

    let table = render_snapshot(&second.ledger, &second.findings);
    assert!(table.contains("BUSY"), "{table}");
    assert!(table.contains("rcs 60%"), "{table}");
    let metrics = render_metrics(
        &second.ledger,
        &second.findings,
        &MetricsOptions::default(),
        &ExporterStats::default(),
    );
    let line = metrics
        .lines()
        .find(|l| {
            l.starts_with("gpuledger_process_engine_busy_ratio{")
                && l.contains("pid=\"116400\"")
                && l.contains("engine=\"ccs\"")
                && l.contains("0000:03:00.0")
        })
        .unwrap_or_else(|| panic!("{metrics}"));
    assert!(line.ends_with(" 0.25"), "{line}");
}
