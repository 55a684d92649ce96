//! Secrets in command lines stay on the machine (issue 31, item 6): the round-three spellings
//! that leaked through serve are hidden in `/snapshot.json`, in a capture and in a report, and
//! the rest of the command reads as it was.

use crate::common;
use common::*;

/// The round-three attack spellings in one command line, each with its own secret.
const ATTACK: [&str; 23] = [
    "/usr/bin/python3",
    "train.py",
    "--password",
    "-Zq1dash",
    "--clientSecret=Zq2client",
    "--passphrase",
    "Zq3phrase",
    "--jwt=Zq4jwt",
    "--db=postgres://admin:Zq5/slash@db:5432/x",
    "-H",
    "Authorization: Bearer Zq6bearer",
    "--opt=a=b,token=Zq7later",
    "--token:Zq8colon",
    "python train.py --api-key Zq9title",
    "sshpass",
    "-p",
    "Zq10p",
    "mysql",
    "-pZq11glued",
    "--epochs",
    "3",
    "--tokenizer",
    "gpt2",
];

const SECRETS: [&str; 11] = [
    "Zq1dash",
    "Zq2client",
    "Zq3phrase",
    "Zq4jwt",
    "Zq5/slash",
    "Zq6bearer",
    "Zq7later",
    "Zq8colon",
    "Zq9title",
    "Zq10p",
    "Zq11glued",
];

/// The attack as `/snapshot.json` must show it (elements joined by spaces).
const SHOWN: &str = "/usr/bin/python3 train.py --password <redacted> --clientSecret=<redacted> \
    --passphrase <redacted> --jwt=<redacted> --db=postgres://admin:<redacted>@db:5432/x -H \
    Authorization: Bearer <redacted> --opt=a=b,token=<redacted> --token:<redacted> python \
    train.py --api-key <redacted> sshpass -p <redacted> mysql -p<redacted> --epochs 3 \
    --tokenizer gpt2";

fn assert_hidden(what: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{what} discloses {secret}:\n{text}");
    }
}

/// seed-2622 with rank 0 started as [`ATTACK`].
fn attacked_tree() -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, tree) = fixture_copy("seed-2622");
    std::fs::write(tree.join("proc/116400/cmdline"), ATTACK.join("\0") + "\0").unwrap();
    (tmp, tree)
}

#[test]
fn serve_hides_every_round_three_spelling() {
    let (_tmp, tree) = attacked_tree();
    let s = serve_root(&tree, &["--interval", "1s"]);
    let snap = s.get("/snapshot.json");
    assert_hidden("/snapshot.json", &snap);
    assert_hidden("/metrics", &s.get("/metrics"));
    let doc: serde_json::Value = serde_json::from_str(&snap).unwrap();
    let rank0 = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == 116400)
        .unwrap();
    assert_eq!(rank0["cmdline"], SHOWN);
}

#[test]
fn capture_hides_secrets_unless_asked() {
    let (tmp, tree) = attacked_tree();
    let root = tree.to_str().unwrap();
    let out = tmp.path().join("cap");
    let err = run(&["--root", root, "capture", "-o", out.to_str().unwrap()]);
    assert!(err.status.success(), "{err:?}");
    assert!(String::from_utf8_lossy(&err.stderr).contains("secrets in command lines redacted"));
    let cmdline = std::fs::read(out.join("proc/116400/cmdline")).unwrap();
    let argv: Vec<String> = String::from_utf8(cmdline)
        .unwrap()
        .trim_end_matches('\0')
        .split('\0')
        .map(String::from)
        .collect();
    assert_eq!(argv.len(), ATTACK.len(), "one element per argument still");
    assert_eq!(argv.join(" "), SHOWN);

    let plain = tmp.path().join("plain");
    let as_is = ["--root", root, "capture", "--show-cmdline", "-o"];
    assert!(run(&[&as_is[..], &[plain.to_str().unwrap()]].concat())
        .status
        .success());
    let kept = std::fs::read(plain.join("proc/116400/cmdline")).unwrap();
    assert_eq!(kept, (ATTACK.join("\0") + "\0").into_bytes());
}

#[test]
fn report_hides_the_recorded_command_s_secrets() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("job.ledger");
    let rec = rec.to_str().unwrap();
    let job = [
        &[
            "record",
            "-o",
            rec,
            "--interval",
            "50ms",
            "--",
            "sh",
            "-c",
            "exit 0",
            "sh",
        ][..],
        &ATTACK[..],
    ]
    .concat();
    let out = run(&job);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let root = fixture("amdgpu");
    let report = stdout_of(&["--root", root.to_str().unwrap(), "report", rec], 0);
    assert_hidden("report", &report);
    assert!(
        report.contains("--api-key <redacted>") && report.contains("--tokenizer gpt2"),
        "{report}"
    );
}
