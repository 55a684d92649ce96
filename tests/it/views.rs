//! The familiar flags on the views: --pid/--device filters, --format csv, --loop (JSON Lines,
//! timestamps, Ctrl-C and closed pipes), --sort and --color, on capture-tree fixtures.

use crate::common;
use common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;

fn root(name: &str) -> String {
    fixture(name).to_str().unwrap().to_string()
}

fn json_with(name: &str, extra: &[&str]) -> Value {
    let r = root(name);
    let mut args = vec!["--root", r.as_str(), "--format", "json"];
    args.extend_from_slice(extra);
    json_of(&args, 0)
}

fn pids(doc: &Value) -> Vec<u64> {
    doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pid"].as_u64().unwrap())
        .collect()
}

fn usage_devices(doc: &Value) -> Vec<String> {
    let mut d: Vec<String> = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["usage"].as_array().unwrap().iter())
        .map(|u| u["device"].as_str().unwrap().to_string())
        .collect();
    d.sort();
    d.dedup();
    d
}

#[test]
fn csv_golden_seed_2622() {
    let r = root("seed-2622");
    let out = stdout_of(&["--root", &r, "--format", "csv"], 0);
    let mut reader = csv::Reader::from_reader(out.as_bytes());
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 16, "2 ranks × 2 devices × 4 xe regions");
    let time = rows[0][0].to_string();
    assert!(rows.iter().all(|r| r[0] == *time), "one time per snapshot");
    // Bytes are integers: rank 0's VRAM on its home card, 9,355,696 KiB.
    assert!(rows.iter().any(|r| &r[1] == "116400"
        && &r[5] == "0000:03:00.0"
        && &r[7] == "vram0"
        && &r[11] == "9580232704"));
    assert_golden("seed-2622.csv", &out.replace(&time, "TIME"));
}

#[test]
fn device_ids_are_slots_minors_or_indexes_and_select_the_same_rows() {
    let by_slot = json_with("apu-plus-dgpu", &["--device", "0000:03:00.0"]);
    assert_eq!(usage_devices(&by_slot), ["0000:03:00.0"]);
    for id in ["03:00.0", "card1", "renderD129", "0"] {
        let doc = json_with("apu-plus-dgpu", &["--device", id]);
        assert_eq!(doc["processes"], by_slot["processes"], "--device {id}");
        assert_eq!(doc["devices"].as_array().unwrap().len(), 1, "--device {id}");
    }
    // The APU by its index, with --id as nvidia-smi spells it.
    let apu = json_with("apu-plus-dgpu", &["--id", "1"]);
    assert_eq!(usage_devices(&apu), ["0000:c4:00.0"]);
}

#[test]
fn pid_filter_shows_that_process_only() {
    let doc = json_with("seed-2622", &["--pid", "116401"]);
    assert_eq!(pids(&doc), [116401]);
    let mirrors: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "peer_mirror")
        .collect();
    assert_eq!(mirrors.len(), 1);
    assert_eq!(mirrors[0]["pid"], 116401);
    let both = json_with("seed-2622", &["--pid", "116400,116401"]);
    assert_eq!(pids(&both), [116400, 116401]);
}

#[test]
fn unknown_pids_and_devices_are_errors_not_empty_output() {
    let r = root("seed-2622");
    for (args, want) in [
        (vec!["--pid", "999999"], "--pid 999999: no such process"),
        (
            vec!["--pid", "116400", "--pid", "1"],
            "--pid 1: no such process",
        ),
        (
            vec!["--device", "card9"],
            "0=0000:03:00.0 (card0 renderD128)",
        ),
        (vec!["--device", "2"], "matches none of the devices"),
    ] {
        let mut full = vec!["--root", r.as_str()];
        full.extend(args.iter());
        let out = run(&full);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: printed a snapshot anyway");
    }
}

#[test]
fn a_filter_never_changes_a_verdict() {
    // One process over two B70s: each card's GTT mirrors the other's VRAM. Shown through one
    // card, both mirrors (home or peer on it) keep their pinned, critical verdict, and the
    // host-wide finding is the same sentence.
    let whole = json_with("b70-one-process", &[]);
    let card1 = json_with("b70-one-process", &["--device", "card1"]);
    assert_eq!(usage_devices(&card1), ["0000:04:00.0"]);
    assert_eq!(card1["findings"], whole["findings"]);
    // The dGPU of an APU machine: the integrated GPU's 24 GiB is hidden from the table, yet
    // driver_held_host still says it is the integrated GPU's working memory (info, not warning).
    let whole = json_with("apu-plus-dgpu", &[]);
    let dgpu = json_with("apu-plus-dgpu", &["--device", "card1"]);
    assert_eq!(dgpu["findings"], whole["findings"]);
    assert_eq!(dgpu["findings"][0]["severity"], "info");
    assert_eq!(dgpu["host"], whole["host"], "host totals are machine-wide");
}

#[test]
fn sort_orders_table_json_and_csv() {
    let r = root("seed-2622");
    // Rank 1 holds more host-class memory than rank 0 (9.2 vs 9.1 GiB).
    assert_eq!(
        pids(&json_with("seed-2622", &["--sort", "host"])),
        [116401, 116400]
    );
    assert_eq!(
        pids(&json_with("seed-2622", &["--sort", "rank"])),
        [116400, 116401]
    );
    let csv = stdout_of(&["--root", &r, "--format", "csv", "--sort", "host"], 0);
    let first = csv.lines().nth(1).unwrap();
    assert!(first.contains(",116401,"), "{first}");
    let table = stdout_of(&["--root", &r, "--sort", "host"], 0);
    let at = |pid: &str| table.find(&format!("  {pid}  ")).unwrap();
    assert!(at("116401") < at("116400"), "{table}");
}

#[test]
fn loop_prints_json_lines_and_stops_after_count() {
    let r = root("seed-2622");
    for fmt in [&["--format", "json"][..], &["--json"][..]] {
        let mut args = vec!["--root", r.as_str(), "-l", "50ms", "--count", "3"];
        args.extend_from_slice(fmt);
        let out = stdout_of(&args, 0);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        for l in lines {
            let doc: Value = serde_json::from_str(l).unwrap();
            assert_eq!(doc["schema"], "gpuledger.snapshot/1");
        }
    }
}

#[test]
fn loop_table_has_one_timestamp_per_snapshot_and_csv_one_header() {
    let r = root("seed-2622");
    let table = stdout_of(&["--root", &r, "--loop", "20ms", "--count", "3"], 0);
    assert_eq!(table.matches("──── 20").count(), 3, "{table}");
    assert_eq!(table.matches("Host memory").count(), 3);
    let csv = stdout_of(
        &[
            "--root", &r, "-l", "20ms", "--count", "2", "--format", "csv",
        ],
        0,
    );
    assert_eq!(csv.matches("time,pid,").count(), 1, "{csv}");
    assert_eq!(csv.lines().count(), 1 + 2 * 16);
}

#[test]
fn loop_ends_with_status_0_on_ctrl_c_and_on_a_closed_pipe() {
    let r = root("seed-2622");
    let mut child = bin()
        .args(["--root", &r, "-l", "10s", "--format", "json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with('{'));
    // In the middle of a 10 s wait: the loop must notice at once, not at the next snapshot.
    let started = std::time::Instant::now();
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(rest.is_empty(), "nothing after the interrupt: {rest}");

    // `| head -1`: the reader goes away, the next write fails with EPIPE.
    let mut child = bin()
        .args(["--root", &r, "-l", "10ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The table's stdout with `env` set and `args` added.
fn table_with_env(env: &[(&str, &str)], args: &[&str]) -> String {
    let r = root("seed-2622");
    let mut cmd = bin();
    cmd.env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR");
    cmd.args(["--root", &r])
        .args(args)
        .envs(env.iter().copied());
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    String::from_utf8(out.stdout).unwrap()
}

/// Environment, arguments, whether the table comes out coloured.
type ColourCase = (
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
    bool,
);

#[test]
fn colour_follows_color_no_color_and_clicolor_force() {
    const RED: &str = "\u{1b}[31mCRITICAL";
    let cases: [ColourCase; 8] = [
        (&[], &[], false), // not a terminal
        (&[("CLICOLOR_FORCE", "1")], &[], true),
        (&[("CLICOLOR_FORCE", "0")], &[], false),
        (&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")], &[], false),
        (&[("NO_COLOR", "")], &[], false), // empty NO_COLOR is unset, and still no terminal
        (&[], &["--color", "always"], true),
        (&[("NO_COLOR", "1")], &["--color", "always"], true),
        (&[("CLICOLOR_FORCE", "1")], &["--color", "never"], false),
    ];
    for (env, args, coloured) in cases {
        let out = table_with_env(env, args);
        assert_eq!(out.contains(RED), coloured, "{env:?} {args:?}");
        assert_eq!(out.contains('\u{1b}'), coloured, "{env:?} {args:?}");
    }
    // JSON and CSV are data: never coloured.
    let json = table_with_env(&[], &["--color", "always", "--format", "json"]);
    assert!(!json.contains('\u{1b}'));
    let plain = table_with_env(&[], &["--color", "never"]);
    let forced = table_with_env(&[], &["--color", "always"]);
    let stripped = forced
        .replace("\u{1b}[1m", "")
        .replace("\u{1b}[31m", "")
        .replace("\u{1b}[0m", "");
    assert_eq!(stripped, plain, "colour changes no column");
}

#[test]
fn serve_shows_only_the_filtered_process_and_its_index_links_the_endpoints() {
    let server = serve_root(&fixture("seed-2622"), &["--pid", "116401"]);
    let body = server.get("/snapshot.json");
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(pids(&doc), [116401]);
    let metrics = server.get("/metrics");
    assert!(metrics.contains("pid=\"116401\""), "{metrics}");
    assert!(!metrics.contains("pid=\"116400\""), "{metrics}");
    let index = server.get("/");
    for link in ["/metrics", "/snapshot.json", "/healthz"] {
        assert!(index.contains(&format!("href=\"{link}\"")), "{index}");
    }
}

#[test]
fn serve_refuses_a_pid_it_cannot_see() {
    let r = root("seed-2622");
    let out = run(&[
        "--root",
        &r,
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--pid",
        "999999",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--pid 999999"));
}

#[test]
fn show_filters_a_recording_without_changing_its_findings() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("seed.ledger");
    run_ok(&mut record_tree(
        &fixture("seed-2622"),
        "50ms",
        "200ms",
        &ledger,
    ));
    let file = ledger.to_str().unwrap();
    let whole = json_of(&["show", file, "--json"], 0);
    let one = json_of(&["show", file, "--json", "--pid", "116401"], 0);
    let peak_pids: Vec<u64> = one["peaks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(peak_pids, [116401, 116401]);
    let kept: Vec<&Value> = one["recorded_findings"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    assert!(!kept.is_empty());
    for f in kept {
        assert!(f["pid"] == 116401 || f["pid"].is_null(), "{f}");
        assert!(
            whole["recorded_findings"].as_array().unwrap().contains(f),
            "{f}"
        );
    }
    // Device 1 is 0000:04:00.0: home of rank 1, peer of rank 0's mirror; both mirrors show.
    let text = stdout_of(&["show", file, "--device", "1", "--color", "always"], 0);
    // The verdict line, both mirrors, the machine-wide driver_held_host and cr-953 (their
    // signature; no version recorded: cannot be ruled out).
    assert_eq!(text.matches("\u{1b}[31mCRITICAL").count(), 5, "{text}");
    assert!(!text.contains("0000:03:00.0 *"), "{text}");
    let out = run(&["show", file, "--pid", "1"]);
    assert_eq!(out.status.code(), Some(1));
    // Two nodes' recordings of one job: pids and slots repeat across nodes, so no filter.
    let out = run(&["show", file, file, "--pid", "116401"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("filters one recording"));
    let out = run(&["show", file, "--device", "card1"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("0=0000:03:00.0, 1=0000:04:00.0"));
}
