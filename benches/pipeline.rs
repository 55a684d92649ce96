//! Micro-benchmarks of the snapshot pipeline's stages (`cargo bench`); the whole-machine comparison
//! with fuser, lsof and a raw scan is `bench/scan.sh`.

use gpuledger::findings::{analyze, Thresholds};
use gpuledger::ledger::Ledger;
use gpuledger::root::Root;
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use gpuledger::sources::drm_fdinfo::FdInfo;
use std::path::Path;

fn main() {
    divan::main();
}

fn fixture(name: &str) -> Root {
    Root::open(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .unwrap()
}

#[divan::bench]
fn parse_xe_fdinfo(b: divan::Bencher) {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/xe-two-tile/proc/1383/fdinfo/8"),
    )
    .unwrap();
    b.bench(|| FdInfo::parse(divan::black_box(&text)));
}

#[divan::bench]
fn sample_fixture_seed_2622(b: divan::Bencher) {
    let mut s = Sampler::new(fixture("seed-2622"), Scope::All, SamplerOptions::default());
    b.bench_local(|| s.sample().unwrap());
}

#[divan::bench]
fn ledger_and_findings_seed_2622(b: divan::Bencher) {
    let snap = Sampler::new(fixture("seed-2622"), Scope::All, SamplerOptions::default())
        .sample()
        .unwrap();
    let t = Thresholds::default();
    b.with_inputs(|| snap.clone()).bench_values(|snap| {
        let l = Ledger::from_snapshot(divan::black_box(snap));
        analyze(&l, &t)
    });
}

#[divan::bench(sample_count = 20)]
fn live_incremental_sample(b: divan::Bencher) {
    let mut s = Sampler::new(Root::live(), Scope::All, SamplerOptions::default());
    s.sample().unwrap();
    b.bench_local(|| s.sample().unwrap());
}

/// A simulated DDP job of `ranks` ranks, each with an fd on every device (ranks² GPU clients),
/// with its segments mirrored on every peer: the per-client cost, which must stay linear.
fn simulated_clients(ranks: u32) -> (tempfile::TempDir, Root) {
    use gpuledger::sim::{LiveWriter, Scenario, SimParams, Simulation};
    let dir = tempfile::tempdir().unwrap();
    let mut p = SimParams::new(Scenario::DdpPeerMirror);
    p.ranks = ranks;
    p.backing = gpuledger::sim::Backing::RegisteredOnly;
    let sim = Simulation::new(p);
    let w = gpuledger::tree_writer::TreeWriter::new(dir.path()).unwrap();
    LiveWriter::new(w, "bench")
        .unwrap()
        .write(&sim.state_at(20.0))
        .unwrap();
    let root = Root::open(dir.path()).unwrap();
    (dir, root)
}

/// Sample, ledger and findings of 4,096 and 16,384 clients (64 and 128 ranks): the whole
/// snapshot pipeline per client.
#[divan::bench(args = [64, 128], sample_count = 5)]
fn snapshot_per_client(b: divan::Bencher, ranks: u32) {
    let (_dir, root) = simulated_clients(ranks);
    let mut s = Sampler::new(root, Scope::All, SamplerOptions::default());
    let t = Thresholds::default();
    b.counter(divan::counter::ItemsCount::new(
        ranks as usize * ranks as usize,
    ))
    .bench_local(|| {
        let l = Ledger::from_snapshot(s.sample().unwrap());
        analyze(&l, &t)
    });
}
