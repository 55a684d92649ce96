//! The known-issues base: its schema (a bad entry fails with the file and the field), and every
//! entry matched on facts built for it and not matched one version outside its range.

use gpuledger::findings::{Backing, Finding, Kind, Severity};
use gpuledger::knowledge::{
    assess, Base, DeviceFact, Entry, Facts, KnowledgeError, Topology, Version, VersionFact,
};
use std::path::Path;

fn dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/known-issues"))
}

fn vocab(name: &str) -> String {
    std::fs::read_to_string(dir().join(name)).unwrap()
}

/// Loads a base of the real vocabularies and one entry file.
fn with_entry(file: &str, text: &str) -> Result<Base, KnowledgeError> {
    Base::from_texts(
        &vocab("families.toml"),
        &vocab("components.toml"),
        &[(file, text)],
    )
}

#[test]
fn the_base_loads_and_matches_the_directory() {
    let embedded = Base::embedded().expect("embedded base passes its schema");
    let on_disk = Base::from_dir(dir()).expect("known-issues/ passes its schema");
    assert_eq!(
        embedded.entries, on_disk.entries,
        "rebuild: the embedded base is stale"
    );
    assert!(embedded.entries.len() >= 11);
    for id in [
        "cr-953-bmg-eager-peer-pinning",
        "llvm-22873-sycl-malloc-device-gtt",
    ] {
        assert!(embedded.entry(id).is_some(), "{id}");
    }
    assert!(
        embedded
            .entry("nvidia-cuda-host-register-uncounted")
            .is_none(),
        "gpuledger's own limitations are not known issues"
    );
}

/// Every entry cites a public report with its words or numbers and says how sure each claim is.
#[test]
fn every_entry_quotes_its_sources_and_grades_its_claims() {
    let base = Base::embedded().unwrap();
    for e in &base.entries {
        assert!(!e.quotes.is_empty(), "{}: no quotes", e.id);
        assert!(!e.claims.is_empty(), "{}: no claims", e.id);
        for q in &e.quotes {
            assert!(e.links.contains(&q.link), "{}: {}", e.id, q.link);
            assert!(q.link.starts_with("https://github.com/"), "{}", q.link);
        }
    }
}

const GOOD: &str = r#"
id = "x-1"
title = "t"
summary = "s"
status = "open"
last_checked = "2026-12-03"
links = ["https://example.org/1"]
[[quotes]]
link = "https://example.org/1"
date = "2026-08-06"
by = "reporter"
text = "+8.07 GiB"
[[claims]]
claim = "c"
confidence = "confirmed"
[versions]
component = "intel-compute-runtime"
introduced = "26.09.37435"
fixed = "26.40"
[hardware]
families = ["bmg"]
[[workarounds]]
what = "w"
caveat = "c"
[workarounds.measured]
link = "https://example.org/1"
date = "2026-10-04"
setup = "4x B70"
host_held = "0.3 GiB"
baseline_held = "12.6 GiB"
throughput = "unchanged"
"#;

#[test]
fn bad_entries_name_the_file_and_the_field() {
    assert!(with_entry("x-1.toml", GOOD).is_ok());
    // (change, the field the error must name)
    let cases = [
        (
            GOOD.replace("summary = \"s\"", "summary = \"s\"\nseverity = \"high\""),
            "severity",
        ),
        (
            GOOD.replace("introduced = \"26.09.37435\"", "introduced = \"soon\""),
            "versions.introduced",
        ),
        (
            GOOD.replace("fixed = \"26.40\"", "fixed = \"26.01\""),
            "versions.fixed",
        ),
        (
            GOOD.replace("families = [\"bmg\"]", "families = [\"bmgg\"]"),
            "hardware.families",
        ),
        (
            GOOD.replace("last_checked = \"2026-12-03\"", "last_checked = \"Dec 3\""),
            "last_checked",
        ),
        (GOOD.replace("id = \"x-1\"", "id = \"x-2\""), "id"),
        (
            GOOD.replace("https://example.org/1", "http://example.org/1"),
            "links",
        ),
        (
            GOOD.replace(
                "component = \"intel-compute-runtime\"",
                "component = \"neo\"",
            ),
            "versions.component",
        ),
        (
            GOOD.replace("status = \"open\"", "status = \"wontfix\""),
            "status",
        ),
        (
            GOOD.replace("[hardware]", "[hardware]\ndevices = [\"8086:E223\"]"),
            "hardware.devices",
        ),
        (GOOD.replace("title = \"t\"\n", ""), "title"),
        (
            GOOD.replace(
                "links = [\"https://example.org/1\"]",
                "links = [\"README.md\"]",
            ),
            "links",
        ),
        (without_table(GOOD, "[[quotes]]"), "quotes"),
        (without_table(GOOD, "[[claims]]"), "claims"),
        (
            GOOD.replace(
                "link = \"https://example.org/1\"",
                "link = \"https://example.org/2\"",
            ),
            "quotes.link",
        ),
        (
            GOOD.replace("date = \"2026-08-06\"", "date = \"Aug 6\""),
            "quotes.date",
        ),
        (
            GOOD.replace("text = \"+8.07 GiB\"", "text = \" \""),
            "quotes.text",
        ),
        (
            GOOD.replace("confidence = \"confirmed\"", "confidence = \"likely\""),
            "confidence",
        ),
        (
            GOOD.replace(
                "[hardware]",
                "[conditions]\nkernel_fixed = \"rc1\"\n[hardware]",
            ),
            "conditions.kernel_fixed",
        ),
        (
            GOOD.replace(
                "[hardware]",
                "[conditions]\nneeds_signature = true\n[hardware]",
            ),
            "conditions.needs_signature",
        ),
        (GOOD.replace("by = \"reporter\"", "by = \"someone\""), "by"),
        (GOOD.replace("by = \"reporter\"\n", ""), "by"),
        (
            GOOD.replace(
                "status = \"open\"",
                "status = \"open\"\nupdated = \"later\"",
            ),
            "updated",
        ),
        (
            GOOD.replace(
                "link = \"https://example.org/1\"\ndate = \"2026-10-04\"",
                "link = \"https://example.org/9\"\ndate = \"2026-10-04\"",
            ),
            "workarounds.measured.link",
        ),
        (
            GOOD.replace("host_held = \"0.3 GiB\"", "host_held = \"13 GiB\""),
            "workarounds.measured.host_held",
        ),
        (
            GOOD.replace("host_held = \"0.3 GiB\"", "host_held = \"a little\""),
            "host_held",
        ),
        (
            GOOD.replace(
                "baseline_held = \"12.6 GiB\"",
                "baseline_held = \"0 GiB\"\n",
            ),
            "workarounds.measured.baseline_held",
        ),
        (
            GOOD.replace("throughput = \"unchanged\"", "throughput = \"same\""),
            "throughput",
        ),
    ];
    for (text, field) in cases {
        let err = with_entry("x-1.toml", &text).expect_err(field).to_string();
        assert!(
            err.contains("known-issues/entries/x-1.toml"),
            "{field}: {err}"
        );
        assert!(err.contains(field), "{field}: {err}");
    }
}

/// `text` without the TOML table that starts with the line `header` (up to the next table).
fn without_table(text: &str, header: &str) -> String {
    let mut out = Vec::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.starts_with('[') {
            skipping = line == header;
        }
        if !skipping {
            out.push(line);
        }
    }
    out.join("\n")
}

/// A version just below `v`: `26.09.37435` → `26.09.37434.99999`, `2.14.0` → `2.13.99999`.
fn just_below(v: &str) -> String {
    let mut parts: Vec<u64> = v.split('.').map(|p| p.parse().unwrap()).collect();
    let i = parts.iter().rposition(|&p| p > 0).expect(v);
    parts.truncate(i + 1);
    parts[i] -= 1;
    let mut s: Vec<String> = parts.iter().map(u64::to_string).collect();
    s.push("99999".into());
    s.join(".")
}

fn lowest(e: &Entry) -> Option<String> {
    let v = e.versions.as_ref()?;
    v.introduced
        .clone()
        .or_else(|| v.reported.iter().min_by_key(|r| Version::parse(r)).cloned())
}

/// Facts that satisfy `e`'s hardware and conditions, with `version` of its component.
fn facts_for(base: &Base, e: &Entry, version: Option<&str>) -> Facts {
    let id = e
        .hardware
        .devices
        .first()
        .cloned()
        .or_else(|| {
            e.hardware
                .families
                .first()
                .map(|f| base.families[f].devices[0].clone())
        })
        .or_else(|| e.hardware.vendors.first().map(|v| format!("{v}:0001")))
        .unwrap_or_else(|| "8086:0001".into());
    let n = e.conditions.min_visible.unwrap_or(1).max(2);
    let devices = (0..n)
        .map(|i| DeviceFact {
            slot: format!("0000:{:02x}:00.0", i + 3),
            vendor: id.split(':').next().map(String::from),
            pci_id: Some(id.clone()),
            driver: Some("xe".into()),
            root_port: Some(format!("0000:00:0{}.0", i + 1)),
        })
        .collect();
    let versions = match (&e.versions, version) {
        (Some(v), Some(ver)) => vec![VersionFact {
            component: v.component.clone(),
            version: ver.to_string(),
            source: "test".into(),
            loaded_by: None,
        }],
        _ => Vec::new(),
    };
    let env = e
        .conditions
        .env_present
        .iter()
        .map(|(k, v)| (k.clone(), v.replace('*', "1")))
        .collect();
    // An entry that needs its signature is seen with it or not at all.
    let findings = match &e.signature {
        Some(sig) if e.conditions.needs_signature => {
            vec![finding(sig.kind, sig.backing.or(Some(Backing::Pinned)))]
        }
        _ => Vec::new(),
    };
    Facts {
        versions,
        devices,
        env,
        findings,
        kernel: None,
        command: Vec::new(),
    }
}

fn finding(kind: Kind, backing: Option<Backing>) -> Finding {
    Finding {
        kind,
        severity: Severity::Critical,
        message: "seen".into(),
        pid: Some(1),
        rank: Some(0),
        device: None,
        peer: None,
        bytes: 1 << 30,
        ratio: None,
        backing,
        source: None,
        issue: None,
    }
}

#[test]
fn an_entry_that_needs_its_signature_matches_only_with_it() {
    let text = GOOD.replace(
        "[hardware]",
        "[conditions]\nneeds_signature = true\n[signature]\nkind = \"host_pressure\"\n[hardware]",
    );
    let base = with_entry("x-1.toml", &text).unwrap();
    let e = base.entry("x-1").unwrap();
    let mut facts = facts_for(&base, e, Some("26.22"));
    let with = assess(&base, &facts);
    let m = with
        .matches
        .iter()
        .find(|m| m.id == "x-1")
        .expect("matches");
    assert!(m.facts.iter().any(|f| f.contains("host_pressure")), "{m:?}");
    facts.findings.clear();
    let without = assess(&base, &facts);
    assert!(without.matches.iter().all(|m| m.id != "x-1"));
    let why = &without
        .not_matched
        .iter()
        .find(|n| n.id == "x-1")
        .unwrap()
        .reason;
    assert_eq!(why, "no host_pressure finding, which the issue needs");
}

#[test]
fn every_entry_matches_its_own_facts_and_not_one_version_below() {
    let base = Base::embedded().unwrap();
    for e in &base.entries {
        let low = lowest(e);
        let facts = facts_for(&base, e, low.as_deref());
        let a = assess(&base, &facts);
        let m = a
            .matches
            .iter()
            .find(|m| m.id == e.id)
            .unwrap_or_else(|| panic!("{} did not match: {a:?}", e.id));
        let expect = match (e.informational, e.conditions.needs_signature) {
            (true, _) => Severity::Info,
            (false, true) => Severity::Critical,
            (false, false) => Severity::Warning,
        };
        assert_eq!(m.severity, expect, "{}", e.id);
        assert!(!m.facts.is_empty() && !m.links.is_empty(), "{}", e.id);
        if let Some(sig) = &e.signature {
            let mut with = facts.clone();
            with.findings
                .push(finding(sig.kind, sig.backing.or(Some(Backing::Pinned))));
            let m = assess(&base, &with)
                .matches
                .into_iter()
                .find(|m| m.id == e.id)
                .unwrap();
            assert_eq!(
                m.severity,
                if e.informational {
                    Severity::Info
                } else {
                    Severity::Critical
                },
                "{}",
                e.id
            );
            assert!(
                m.facts.iter().any(|f| f.contains(sig.kind.as_str())),
                "{}: {:?}",
                e.id,
                m.facts
            );
        }
        if let Some(low) = low {
            let below = just_below(&low);
            let a = assess(&base, &facts_for(&base, e, Some(&below)));
            assert!(
                a.matches.iter().all(|m| m.id != e.id),
                "{} matched {below}",
                e.id
            );
            let why = a
                .not_matched
                .iter()
                .find(|n| n.id == e.id)
                .expect("said why");
            assert!(
                why.reason.contains("outside the affected range"),
                "{}: {}",
                e.id,
                why.reason
            );
        }
        if e.conditions.topology == Some(Topology::DifferentRootPorts) {
            let mut one_port = facts.clone();
            for d in &mut one_port.devices {
                d.root_port = Some("0000:00:01.0".into());
            }
            assert!(
                assess(&base, &one_port)
                    .matches
                    .iter()
                    .all(|m| m.id != e.id),
                "{}",
                e.id
            );
        }
    }
}

#[test]
fn a_fixed_release_and_later_do_not_match() {
    let base = with_entry("x-1.toml", GOOD).unwrap();
    let e = &base.entries[0];
    for (version, applies) in [
        ("26.39.99999.9", true),
        ("26.40", false),
        ("26.40.1", false),
        ("26.09.37435.0", true),
    ] {
        let a = assess(&base, &facts_for(&base, e, Some(version)));
        assert_eq!(a.matches.len() == 1, applies, "{version}: {a:?}");
    }
}

#[test]
fn cr_953_on_the_seed_machine() {
    let base = Base::embedded().unwrap();
    let e = base.entry("cr-953-bmg-eager-peer-pinning").unwrap();
    let find = |facts: &Facts| {
        assess(&base, facts)
            .matches
            .into_iter()
            .find(|m| m.id == e.id)
    };
    let mut facts = facts_for(&base, e, Some("26.31.39395.13-0"));
    facts
        .findings
        .push(finding(Kind::PeerMirror, Some(Backing::NotPinned)));
    assert_eq!(
        find(&facts).unwrap().severity,
        Severity::Warning,
        "not-pinned mirrors are not the signature"
    );
    facts
        .findings
        .push(finding(Kind::PeerMirror, Some(Backing::Pinned)));
    assert_eq!(find(&facts).unwrap().severity, Severity::Critical);
    for mask in [
        ("ZE_AFFINITY_MASK", "1"),
        ("ONEAPI_DEVICE_SELECTOR", "level_zero:0"),
    ] {
        let mut masked = facts.clone();
        masked.env.insert(mask.0.into(), mask.1.into());
        assert!(find(&masked).is_none(), "{mask:?}: one visible GPU");
    }
    let mut debug = facts.clone();
    debug.env.insert("NEOReadDebugKeys".into(), "1".into());
    assert!(
        find(&debug).is_some(),
        "NEOReadDebugKeys alone changes nothing"
    );
    debug.env.insert("EnableDeferBacking".into(), "0".into());
    assert!(find(&debug).is_none());
    let why = assess(&base, &debug)
        .not_matched
        .into_iter()
        .find(|n| n.id == e.id)
        .unwrap();
    assert!(
        why.reason.starts_with("workaround in effect"),
        "{}",
        why.reason
    );
    let old = facts_for(&base, e, Some("26.05.37020.3-0"));
    assert!(find(&old).is_none(), "26.05 predates the change");
}

#[derive(Debug)]
struct RecordedNvml(Vec<gpuledger::sources::nvml::NvGpu>);

impl gpuledger::sources::nvml::NvmlSource for RecordedNvml {
    fn gpus(&self) -> Result<Vec<gpuledger::sources::nvml::NvGpu>, String> {
        Ok(self.0.clone())
    }
}

#[test]
fn nvidia_gpus_are_facts_and_their_blind_spot_a_limitation() {
    use gpuledger::root::Root;
    use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
    let fixture = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/nvidia"
    ));
    let answers = std::fs::read_to_string(fixture.join("nvml.json")).unwrap();
    let nvml = RecordedNvml(serde_json::from_str(&answers).unwrap());
    let root = Root::open(fixture).unwrap();
    let mut s = Sampler::new(root, Scope::All, SamplerOptions::default()).with_nvml(Box::new(nvml));
    let snap = s.sample().unwrap();
    let base = Base::embedded().unwrap();
    let sys = gpuledger::sources::system_info::gather(s.root(), &[], &[]);
    let (facts, places) = Facts::of_machine(&base, s.root(), &snap, &sys, Vec::new());
    assert_eq!(places.len(), facts.devices.len());
    let gpu = facts
        .devices
        .iter()
        .find(|d| d.slot == "0000:18:00.0")
        .expect("the H200");
    assert_eq!(gpu.vendor(), Some("10de"));
    assert!(
        assess(&base, &facts).matches.is_empty(),
        "no known issue for an NVIDIA GPU: gpuledger's own blind spot is not a finding"
    );
    let limits = gpuledger::knowledge::limitations(&facts);
    assert_eq!(limits.len(), 1, "{limits:?}");
    assert!(limits[0].text.contains("cudaHostRegister"), "{limits:?}");
}

#[test]
fn the_jobs_torch_is_a_version_fact() {
    let base = Base::embedded().unwrap();
    let sys = gpuledger::sources::system_info::SystemInfo {
        python: [("torch".to_string(), "2.14.0+xpu".to_string())].into(),
        ..Default::default()
    };
    let root = gpuledger::root::Root::open(&fixture_dir("seed-2622")).unwrap();
    let found = gpuledger::knowledge::versions(&base, &sys, &root);
    let torch = found
        .iter()
        .find(|v| v.component == "pytorch")
        .expect("pytorch");
    assert_eq!(torch.version, "2.14.0+xpu");
    assert!(
        torch.source.contains("Python package torch"),
        "{}",
        torch.source
    );
}

fn fixture_dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[test]
fn a_kernel_with_the_fix_does_not_match_cr_916() {
    let base = Base::embedded().unwrap();
    let e = base.entry("cr-916-a770-two-device-context").unwrap();
    let mut facts = facts_for(&base, e, Some("26.22.38646.4-0"));
    let find = |facts: &Facts| assess(&base, facts);
    for (kernel, applies, says) in [
        (None, true, "kernel release not known"),
        (
            Some("7.0.0-29-generic"),
            true,
            "before the fix in Linux 7.1",
        ),
        (Some("7.1.0-rc1"), false, "has the fix"),
        (Some("7.1.3-arch1-1"), false, "has the fix"),
    ] {
        facts.kernel = kernel.map(String::from);
        let a = find(&facts);
        let m = a.matches.iter().find(|m| m.id == e.id);
        assert_eq!(m.is_some(), applies, "{kernel:?}: {a:?}");
        let text = match m {
            Some(m) => m.facts.join("; "),
            None => a
                .not_matched
                .iter()
                .find(|n| n.id == e.id)
                .map(|n| n.reason.clone())
                .unwrap_or_default(),
        };
        assert!(text.contains(says), "{kernel:?}: {text}");
    }
    assert_eq!(
        gpuledger::knowledge::kernel_release("Linux version 7.1.3-arch1-1 (gcc 15) #1 SMP"),
        Some("7.1.3-arch1-1".to_string())
    );
    assert!(
        gpuledger::knowledge::limitations(&facts).is_empty(),
        "no NVIDIA GPU, no NVIDIA limitation"
    );
}

#[test]
fn matches_carry_their_claims_with_confidence() {
    use gpuledger::knowledge::Confidence;
    let base = Base::embedded().unwrap();
    let e = base.entry("cr-952-bmg-4x-b60-out-of-resources").unwrap();
    let a = assess(&base, &facts_for(&base, e, Some("26.22.38646.6")));
    let m = a.matches.iter().find(|m| m.id == e.id).expect("matched");
    assert!(
        m.claims
            .iter()
            .any(|c| c.confidence == Confidence::Suspected && c.claim.contains("host RAM")),
        "the host-RAM cause is a suspicion: {:?}",
        m.claims
    );
    let f = gpuledger::knowledge::finding(m);
    assert!(
        f.message
            .contains("suspected, not confirmed: The peer mirrors of #953"),
        "{}",
        f.message
    );
    let e = base.entry("cr-986-affinity-mask-two-devices").unwrap();
    let a = assess(&base, &facts_for(&base, e, Some("26.27.39122.11")));
    let m = a.matches.iter().find(|m| m.id == e.id).expect("matched");
    let f = gpuledger::knowledge::finding(m);
    assert!(!f.message.contains("suspected"), "{}", f.message);
}

proptest::proptest! {
    /// The release is the third word of a `/proc/version` line and the first of a bare one.
    #[test]
    fn kernel_release_reads_proc_version(release in "[0-9][0-9a-z.+_-]{0,30}", rest in ".{0,40}") {
        let line = format!("Linux version {release} {rest}");
        proptest::prop_assert_eq!(
            gpuledger::knowledge::kernel_release(&line),
            Some(release.clone())
        );
        proptest::prop_assert_eq!(gpuledger::knowledge::kernel_release(&release), Some(release));
    }

    /// No input panics; blank input has no release, other text its first word.
    #[test]
    fn kernel_release_never_panics(text in "\\PC{0,80}") {
        let got = gpuledger::knowledge::kernel_release(&text);
        match text.split_whitespace().next() {
            None => proptest::prop_assert!(got.is_none()),
            Some(first) if first != "Linux" => {
                proptest::prop_assert_eq!(got.as_deref(), Some(first))
            }
            Some(_) => {}
        }
    }
}

/// Issue 32: the signature with no version found is "cannot be ruled out", never "none
/// applies"; without the signature the entry stays unmatched.
#[test]
fn a_signature_without_a_version_matches_as_cannot_be_ruled_out() {
    use gpuledger::knowledge::{Evidence, VersionCheck};
    let base = Base::embedded().unwrap();
    let e = base.entry("cr-953-bmg-eager-peer-pinning").unwrap();
    let bare = facts_for(&base, e, None);
    let a = assess(&base, &bare);
    assert!(a.matches.iter().all(|m| m.id != e.id));
    let why = a.not_matched.iter().find(|n| n.id == e.id).unwrap();
    assert_eq!(why.reason, "no intel-compute-runtime version found");
    let mut seen = bare.clone();
    let mut unsure = finding(Kind::PeerMirror, Some(Backing::Pinned));
    unsure.severity = Severity::Warning;
    seen.findings.push(unsure);
    let a = assess(&base, &seen);
    let m = a.matches.iter().find(|m| m.id == e.id).expect("matched");
    assert_eq!(
        (m.severity, m.evidence, m.version),
        (
            Severity::Warning,
            Evidence::Signature,
            VersionCheck::Unknown
        ),
        "the signature's own severity"
    );
    assert!(m
        .facts
        .iter()
        .any(|f| f.starts_with("intel-compute-runtime version unknown, cannot be ruled out")));
    let step = a.next_step.expect("a next step");
    assert_eq!(step.issue, e.id);
    assert!(step.first.what.contains("EnableDeferBacking=0"));
}

/// With one signature, the entry whose range starts at the introducing release ranks above
/// those that start at the earliest report, and its workaround comes first.
#[test]
fn matches_rank_by_evidence_then_version_and_fold_into_one_finding() {
    use gpuledger::knowledge::VersionCheck;
    let base = Base::embedded().unwrap();
    let e = base.entry("cr-953-bmg-eager-peer-pinning").unwrap();
    let mut facts = facts_for(&base, e, Some("26.22.38646.4-0ubuntu1"));
    facts
        .findings
        .push(finding(Kind::PeerMirror, Some(Backing::Pinned)));
    let a = assess(&base, &facts);
    let ids: Vec<&str> = a.matches.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids[0], e.id, "{ids:?}");
    assert_eq!(a.matches[0].version, VersionCheck::InIntroducedRange);
    assert!(a.matches.len() > 1, "{ids:?}");
    let keys: Vec<_> = a
        .matches
        .iter()
        .map(|m| (m.severity, m.evidence, m.version))
        .collect();
    assert!(keys.windows(2).all(|w| w[0] >= w[1]), "{keys:?}");
    let found: Vec<Finding> = gpuledger::knowledge::findings(&a)
        .into_iter()
        .filter(|f| f.severity == Severity::Critical)
        .collect();
    assert_eq!(found.len(), 1, "one signature, one finding: {found:#?}");
    assert_eq!(found[0].issue.as_deref(), Some(e.id.as_str()));
    for other in a.matches[1..]
        .iter()
        .filter(|m| m.severity == Severity::Critical)
    {
        assert!(found[0].message.contains(&other.id), "{}", other.id);
    }
    let step = a.next_step.unwrap();
    let masks = step
        .alternatives
        .iter()
        .filter(|alt| alt.workaround.env.contains_key("ZE_AFFINITY_MASK"))
        .count();
    assert_eq!(masks, 1, "one device per process is one alternative");
    assert!(found[0]
        .message
        .ends_with(&format!("next step: {}", step.sentence())));
}

/// The dead job: a critical page-allocation failure stands for cr-953's signature; a warning
/// one (not a GPU job process) does not.
#[test]
fn a_gpu_page_allocation_failure_names_cr_953_after_the_job_is_gone() {
    use gpuledger::knowledge::Evidence;
    let base = Base::embedded().unwrap();
    let e = base.entry("cr-953-bmg-eager-peer-pinning").unwrap();
    let mut facts = facts_for(&base, e, None);
    let mut other = finding(Kind::KernelPageAllocFailure, None);
    other.severity = Severity::Warning;
    facts.findings.push(other);
    assert!(assess(&base, &facts).matches.iter().all(|m| m.id != e.id));
    facts
        .findings
        .push(finding(Kind::KernelPageAllocFailure, None));
    let a = assess(&base, &facts);
    let m = &a.matches[0];
    assert_eq!(
        (m.id.as_str(), m.severity, m.evidence),
        (e.id.as_str(), Severity::Critical, Evidence::AfterExit)
    );
    assert!(m.facts.iter().any(|f| f.contains("after the job is gone")));
}
