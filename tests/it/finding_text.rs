//! A finding's text and its JSON fields say the same thing: the pid, the devices and the bytes
//! the JSON gives appear in the message, and the message names no PCI device the JSON does not
//! carry (so one card is never "home" and "peer", and a mirror's text names the card whose memory
//! is mirrored and the card whose fd holds it). Over every fixture tree and a few simulated ones.

use crate::common;
use common::*;
use gpuledger::units::human_bytes;
use serde_json::Value;
use std::path::Path;

/// The PCI addresses (`dddd:bb:dd.f`, lower-case hex) in `text`.
fn pci_addresses(text: &str) -> Vec<&str> {
    let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    let shape = |w: &[u8]| {
        w.iter().enumerate().all(|(i, &b)| match i {
            4 | 7 => b == b':',
            10 => b == b'.',
            _ => hex(b),
        })
    };
    let bytes = text.as_bytes();
    (0..bytes.len().saturating_sub(11))
        .filter(|&i| shape(&bytes[i..i + 12]))
        .filter(|&i| i == 0 || !hex(bytes[i - 1]))
        .map(|i| &text[i..i + 12])
        .collect()
}

/// The PCI addresses right after `role` ("home ", "peer ") in `text`.
fn role_devices<'a>(text: &'a str, role: &str) -> Vec<&'a str> {
    text.match_indices(role)
        .filter_map(|(i, _)| text.get(i + role.len()..i + role.len() + 12))
        .filter(|rest| pci_addresses(rest).len() == 1)
        .collect()
}

/// What is wrong with one finding's text against its fields, if anything.
fn disagreement(f: &Value) -> Option<String> {
    let msg = f["message"].as_str()?;
    let fields: Vec<&str> = ["device", "peer"]
        .iter()
        .filter_map(|k| f[*k].as_str())
        .collect();
    let mut wrong = Vec::new();
    for d in fields.iter().filter(|d| !msg.contains(**d)) {
        wrong.push(format!("device {d} of the JSON is not in the text"));
    }
    if let Some(pid) = f["pid"].as_u64() {
        if !msg.contains(&format!("pid {pid}")) {
            wrong.push(format!("pid {pid} is not in the text"));
        }
    }
    let bytes = f["bytes"].as_u64().unwrap_or(0);
    if bytes > 0 && !msg.contains(&human_bytes(bytes)) {
        wrong.push(format!("{} is not in the text", human_bytes(bytes)));
    }
    for a in pci_addresses(msg)
        .into_iter()
        .filter(|a| !fields.contains(a))
    {
        wrong.push(format!("{a} is in the text but in no field"));
    }
    // A device named in a role is the field of that role: "home X" the device, "peer X" the
    // peer (the card whose fd holds the mirror).
    for (role, field) in [("home ", "device"), ("peer ", "peer")] {
        for named in role_devices(msg, role) {
            if f[field].as_str() != Some(named) {
                wrong.push(format!("\"{role}{named}\" but {field} is {}", f[field]));
            }
        }
    }
    (!wrong.is_empty()).then(|| format!("{}: {}\n    {msg}", f["kind"], wrong.join("; ")))
}

/// Every disagreement among the findings of `gpuledger --root TREE --json`, named by `what`.
fn disagreements(what: &str, tree: &Path) -> Vec<String> {
    let doc = json_of(&["--root", tree.to_str().unwrap(), "--json"], 0);
    let findings = doc["findings"].as_array().expect("a findings array");
    findings
        .iter()
        .filter_map(disagreement)
        .map(|d| format!("{what}: {d}"))
        .collect()
}

#[test]
fn the_pci_scanner_finds_addresses_and_nothing_else() {
    assert_eq!(
        pci_addresses("on peer 0000:04:00.0 = 9 % of 0000:03:00.0; 12:34:56.7 at 10:00:00.0"),
        ["0000:04:00.0", "0000:03:00.0"]
    );
    assert!(pci_addresses("0000:04:00").is_empty());
}

/// The text the seed's one-process fixture had, "home" and "peer" one card, is caught.
#[test]
fn one_card_as_home_and_peer_is_a_disagreement() {
    let f = serde_json::json!({
        "kind": "peer_mirror", "pid": 7100, "bytes": 4_402_341_478u64,
        "device": "0000:03:00.0", "peer": "0000:04:00.0",
        "message": "pid 7100 (python3, home 0000:04:00.0) holds 4.1 GiB of host-class memory \
                    on peer 0000:04:00.0 = 102 % of its VRAM on 0000:03:00.0",
    });
    let d = disagreement(&f).expect("a disagreement");
    assert!(
        d.contains("\"home 0000:04:00.0\" but device is \"0000:03:00.0\""),
        "{d}"
    );
    let mut right = f.clone();
    right["message"] = "pid 7100 (python3) holds 4.1 GiB of host-class memory on peer \
                        0000:04:00.0 = 102 % of its VRAM on 0000:03:00.0"
        .into();
    assert_eq!(disagreement(&right), None);
}

#[test]
fn every_fixture_finding_says_in_words_what_its_fields_say() {
    let mut wrong = Vec::new();
    let mut seen = 0;
    for entry in std::fs::read_dir(repo_path("tests/fixtures")).unwrap() {
        let tree = entry.unwrap().path();
        if tree.join("proc").is_dir() {
            seen += 1;
            let name = tree.file_name().unwrap().to_string_lossy().into_owned();
            wrong.extend(disagreements(&name, &tree));
        }
    }
    assert!(seen >= 17, "only {seen} fixture trees");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_simulated_finding_says_in_words_what_its_fields_say() {
    let tmp = tempfile::tempdir().unwrap();
    let mut wrong = Vec::new();
    let runs: [&[&str]; 6] = [
        &["ddp-peer-mirror", "--at", "20s"],
        &["ddp-peer-mirror", "--ranks", "8"],
        &[
            "ddp-peer-mirror",
            "--ranks",
            "4",
            "--visible",
            "pairs",
            "--at",
            "20s",
        ],
        &["one-process", "--ranks", "3", "--at", "20s"],
        &["one-process", "--backing", "registered-only", "--at", "20s"],
        &["amdgpu-tp", "--at", "20s"],
    ];
    for (i, args) in runs.into_iter().enumerate() {
        let tree = tmp.path().join(i.to_string());
        let out = tree.to_str().unwrap();
        stdout_of(&[&["simulate"], args, &["--out", out]].concat(), 0);
        wrong.extend(disagreements(&args.join(" "), &tree));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
