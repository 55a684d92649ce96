//! Issue 33: a known-issues base a user updates without a new binary (`doctor --known-issues
//! DIR`): entries checked like the built-in ones, a newer entry replacing a built-in one of the
//! same id, an older one ignored, and doctor saying which bases it used.

use crate::common::*;
use std::path::Path;
use std::process::Output;

const BUILT_IN: &str =
    include_str!("../../known-issues/entries/cr-953-bmg-eager-peer-pinning.toml");

fn doctor(dir: &Path, args: &[&str]) -> Output {
    let seed = fixture("seed-2622");
    let mut cmd = bin();
    cmd.env_clear()
        .args(["doctor", "--root", seed.to_str().unwrap(), "--known-issues"])
        .arg(dir)
        .args(args)
        .args(["--", "torchrun", "x.py"]);
    cmd.output().unwrap()
}

/// The text with its line wrapping undone.
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// cr-953 as a user would update it: a new title, dated `updated`.
fn cr_953(updated: &str, title: &str) -> String {
    BUILT_IN
        .replace(
            "updated = \"2026-12-05\"",
            &format!("updated = \"{updated}\""),
        )
        .replacen(
            "title = \"Battlemage: every large device allocation is pinned again in host RAM on each peer GPU\"",
            &format!("title = \"{title}\""),
            1,
        )
}

#[test]
fn a_newer_entry_replaces_the_built_in_one_and_doctor_names_the_bases() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("cr-953-bmg-eager-peer-pinning.toml"),
        cr_953("2027-01-10", "Battlemage: fixed title from the field"),
    )
    .unwrap();
    let out = doctor(dir.path(), &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains(
            "CRITICAL cr-953-bmg-eager-peer-pinning: Battlemage: fixed title from the field"
        ),
        "{text}"
    );
    assert!(text.contains("Known-issues base:\n  built-in ("), "{text}");
    assert!(
        words(&text).contains(&format!(
            "{} (1 entries, newest 2027-01-10); replaces cr-953-bmg-eager-peer-pinning",
            dir.path().display()
        )),
        "{text}"
    );

    let doc: serde_json::Value =
        serde_json::from_slice(&doctor(dir.path(), &["--json"]).stdout).unwrap();
    let bases = doc["bases"].as_array().unwrap();
    assert_eq!(bases.len(), 2, "{doc:#}");
    assert_eq!(bases[0]["origin"], "built-in");
    assert_eq!(bases[1]["replaced"][0], "cr-953-bmg-eager-peer-pinning");
}

#[test]
fn an_entry_not_newer_is_ignored_and_a_new_id_is_added() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("cr-953-bmg-eager-peer-pinning.toml"),
        cr_953("2026-11-01", "an older copy"),
    )
    .unwrap();
    let new = cr_953("2026-12-20", "A new defect").replace(
        "id = \"cr-953-bmg-eager-peer-pinning\"",
        "id = \"site-1-local-defect\"",
    );
    std::fs::write(dir.path().join("site-1-local-defect.toml"), new).unwrap();
    let out = doctor(dir.path(), &[]);
    let text = words(&String::from_utf8_lossy(&out.stdout));
    assert!(!text.contains("an older copy"), "{text}");
    assert!(text.contains("site-1-local-defect: A new defect"), "{text}");
    assert!(text.contains("adds site-1-local-defect"), "{text}");
    assert!(
        text.contains(
            "ignores cr-953-bmg-eager-peer-pinning: dated 2026-11-01, not newer than the base's 2026-12-05"
        ),
        "{text}"
    );
}

#[test]
fn a_bad_user_entry_is_refused_naming_its_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let bad = cr_953("2027-01-10", "t").replace(
        "link = \"https://github.com/vllm-project/vllm/issues/50269\"",
        "link = \"https://example.org/not-in-links\"",
    );
    let file = dir.path().join("cr-953-bmg-eager-peer-pinning.toml");
    std::fs::write(&file, bad).unwrap();
    let out = doctor(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}: field `quotes.link`", file.display())),
        "{err}"
    );
    let missing = doctor(&dir.path().join("absent"), &[]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read known-issues directory"));
}
