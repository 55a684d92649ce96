//! The command-line edge: value parsers (good and bad values), exit codes (2 usage, 1 runtime),
//! error chains printed once, archives by content, completions and the man page.

use crate::common;
use common::*;
use std::io::Write;
use std::process::Stdio;

/// A root that cannot be opened: a command that gets as far as opening it has parsed its flags.
const NO_ROOT: &str = "/no/such/gpuledger-root";

/// A pid that cannot exist (above pid_max): guard gets past its flags, then finds no process.
const NO_PID: &str = "999999999";

fn stderr_of(args: &[&str]) -> (Option<i32>, String) {
    let out = run(args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Each row: arguments, exit code, a piece of stderr that must be there ("" for none).
fn check(rows: &[(&[&str], i32, &str)]) {
    for (args, code, want) in rows {
        let (got, err) = stderr_of(args);
        assert_eq!(got, Some(*code), "gpuledger {args:?}\n{err}");
        assert!(
            err.contains(want),
            "gpuledger {args:?}: want {want:?} in\n{err}"
        );
    }
}

#[test]
fn sizes_are_binary_and_absolute_where_a_share_makes_no_sense() {
    let seed = fixture("seed-2605");
    let seed = seed.to_str().unwrap();
    let project = |v: &'static str| -> Vec<&'static str> {
        vec![
            "project",
            "--ranks",
            "2",
            "--host-mem",
            "64GiB",
            "--vram-per-rank",
            v,
        ]
    };
    let good = [
        "1GiB", "512MiB", "1.5GiB", "4096B", "64KiB", "100B", "1TiB", "2 gib", "0",
    ];
    for v in good {
        check(&[(&project(v), 0, "")]);
    }
    let bad = [
        ("30GB", "gpuledger uses binary units; write 30GiB"),
        ("30", "30 is a bare number; write 30GiB or 30MiB"),
        ("512MB", "write 512MiB"),
        ("10%", "takes an absolute size"),
        ("lots", "invalid size \"lots\""),
        ("1.2.3GiB", "invalid size"),
        ("99999999999TiB", "invalid size"),
    ];
    for (v, msg) in bad {
        check(&[(&project(v), 2, msg)]);
    }
    check(&[
        (
            &[
                "project",
                "--ranks",
                "2",
                "--vram-per-rank",
                "1GiB",
                "--host-mem",
                "0",
            ],
            2,
            "more than 0",
        ),
        (
            &[
                "--root",
                seed,
                "guard",
                "--max-driver-held",
                "8GB",
                "--pid",
                NO_PID,
            ],
            2,
            "write 8GiB",
        ),
        (
            &[
                "--root",
                seed,
                "guard",
                "--max-job-host-gpu",
                "5%",
                "--pid",
                NO_PID,
            ],
            2,
            "absolute size",
        ),
        (
            &["--root", NO_ROOT, "serve", "--min-process-bytes", "64MB"],
            2,
            "write 64MiB",
        ),
        (
            &["--root", NO_ROOT, "serve", "--min-process-bytes", "1MiB"],
            1,
            "cannot open root",
        ),
        (
            &[
                "simulate",
                "leak",
                "--out",
                NO_ROOT,
                "--segments",
                "1GiB,2GB",
            ],
            2,
            "write 2GiB",
        ),
    ]);
}

#[test]
fn shares_are_0_to_100_percent_and_sizes_must_fit_the_machine() {
    let seed = fixture("seed-2605");
    let seed = seed.to_str().unwrap();
    let guard = |v: &'static str| -> Vec<&str> {
        vec![
            "--root",
            seed,
            "guard",
            "--min-available",
            v,
            "--pid",
            NO_PID,
        ]
    };
    // Past the flags, guard finds no such process: exit 1.
    for v in ["0%", "10%", "100%", "12.5%", "1GiB"] {
        check(&[(&guard(v), 1, "is a running process")]);
    }
    for (v, msg) in [
        ("200%", "give a share from 0% to 100%"),
        ("%", "invalid"),
        ("ten%", "invalid"),
        ("30GB", "write 30GiB"),
    ] {
        check(&[(&guard(v), 2, msg)]);
    }
    let (code, err) = stderr_of(&guard("100TiB"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("more than this machine's MemTotal"), "{err}");
}

#[test]
fn intervals_are_10ms_or_more_everywhere() {
    let seed = fixture("seed-2605");
    let seed = seed.to_str().unwrap();
    for v in ["0", "0s", "5ms", "9ms"] {
        check(&[
            (
                &["--root", seed, "guard", "--interval", v, "--pid", NO_PID],
                2,
                "10ms or more",
            ),
            (&["serve", "--interval", v], 2, "10ms or more"),
            (&["top", "--interval", v], 2, "10ms or more"),
            (&["record", "--all", "--interval", v], 2, "10ms or more"),
            (
                &["experiment", "--interval", v, "--", "true"],
                2,
                "10ms or more",
            ),
        ]);
    }
    check(&[
        (
            &[
                "--root",
                seed,
                "guard",
                "--interval",
                "10ms",
                "--pid",
                NO_PID,
            ],
            1,
            "running process",
        ),
        (
            &["--root", NO_ROOT, "serve", "--interval", "2m"],
            1,
            "cannot open root",
        ),
        (&["serve", "--interval", "soon"], 2, "write it like 500ms"),
        (
            &[
                "--root", seed, "guard", "--grace", "forever", "--pid", NO_PID,
            ],
            2,
            "invalid duration",
        ),
        (
            &["--root", seed, "guard", "--grace", "0s", "--pid", NO_PID],
            1,
            "running process",
        ),
    ]);
}

#[test]
fn listen_takes_port_only_and_host_names() {
    for v in [":0", "localhost:0", "127.0.0.1:0", "[::1]:0"] {
        check(&[(
            &["--root", NO_ROOT, "serve", "--listen", v],
            1,
            "cannot open root",
        )]);
    }
    for v in [
        "9464",
        "localhost",
        "host.invalid:9464",
        ":port",
        "1.2.3.4:99999",
    ] {
        check(&[(&["serve", "--listen", v], 2, "write HOST:PORT or :PORT")]);
    }
}

#[test]
fn usage_errors_exit_2_and_runtime_errors_1() {
    check(&[
        (&["--no-such-flag"], 2, "unexpected argument"),
        (&["record", "--all", "--pid", "1"], 2, "cannot be used with"),
        (&["record"], 2, "required"),
        (&["guard", "--min-available", "10%"], 2, "required"),
        (
            &["guard", "--pid", "1", "--", "true"],
            2,
            "cannot be used with",
        ),
        (&["project", "--ranks", "4"], 2, "--vram-per-rank"),
        (
            &["project", "--ranks", "1025", "--vram-per-rank", "1GiB"],
            2,
            "2..=1024",
        ),
        (
            &["simulate", "nope", "--out", NO_ROOT],
            2,
            "possible values: ddp-peer-mirror",
        ),
        (
            &["simulate", "leak", "--out", NO_ROOT, "--ranks", "0"],
            2,
            "1..=64",
        ),
        (
            &["--threshold", "peer.min_bytes=lots"],
            2,
            "threshold peer.min_bytes",
        ),
        (&["experiment"], 2, "required"),
        (&["--proc", NO_ROOT], 2, "no procfs there"),
        (&["show", NO_ROOT], 1, "cannot read recording"),
    ]);
}

#[test]
fn the_cause_of_an_error_prints_once() {
    let (code, err) = stderr_of(&["--root", NO_ROOT]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    let (code, err) = stderr_of(&["show", NO_ROOT]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let seed = fixture("seed-2605");
    let (code, err) = stderr_of(&["--root", seed.to_str().unwrap(), "serve", "--listen", &addr]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(err.matches("in use").count(), 1, "{err}");
}

#[test]
fn explain_knows_every_kind_and_lists_them_for_an_unknown_one() {
    for kind in [
        "peer_mirror",
        "own_card_mirror",
        "driver_held_host",
        "host_pressure",
        "evicted_to_host",
        "over_reported",
        "stepwise_growth",
        "plateau",
        "leak",
        "released_on_exit",
    ] {
        let text = stdout_of(&["--explain", kind], 0);
        assert!(text.starts_with(&format!("{kind}: ")), "{text}");
        assert!(text.contains("What to do"), "{kind}: {text}");
    }
    check(&[(&["--explain", "leek"], 2, "released_on_exit")]);
}

#[test]
fn top_without_a_terminal_says_so() {
    let out = bin()
        .arg("top")
        .stdin(Stdio::null())
        .output()
        .expect("run gpuledger");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("needs a terminal") && err.contains("record --all"),
        "{err}"
    );
}

#[test]
fn capture_refuses_to_overwrite_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("x.tar.zst");
    std::fs::write(&out, b"keep me").unwrap();
    let seed = fixture("seed-2605");
    let args = [
        "--root",
        seed.to_str().unwrap(),
        "capture",
        "-o",
        out.to_str().unwrap(),
    ];
    check(&[(&args, 1, "--force")]);
    assert_eq!(std::fs::read(&out).unwrap(), b"keep me");
    check(&[(&[&args[..], &["--force"]].concat(), 0, "wrote")]);
    assert_eq!(std::fs::read(&out).unwrap()[..4], [0x28, 0xb5, 0x2f, 0xfd]);
    let empty = tmp.path().join("tree");
    std::fs::create_dir(&empty).unwrap();
    let into_dir = [
        "--root",
        seed.to_str().unwrap(),
        "capture",
        "-o",
        empty.to_str().unwrap(),
    ];
    check(&[(&into_dir, 0, "wrote"), (&into_dir, 1, "already exists")]);
    std::fs::write(empty.join("stale"), b"from an older capture").unwrap();
    check(&[(&[&into_dir[..], &["--force"]].concat(), 0, "wrote")]);
    assert!(
        !empty.join("stale").exists(),
        "a forced capture tree replaces the old one"
    );
    assert!(empty.join("proc/meminfo").exists());
}

#[test]
fn gzip_archives_are_read_by_content_whatever_their_name() {
    let tmp = tempfile::tempdir().unwrap();
    let seed = fixture("seed-2605");
    // Named .tar.zst on purpose: the content decides.
    let gz = tmp.path().join("capture.tar.zst");
    let enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    let mut tar = tar::Builder::new(enc);
    tar.follow_symlinks(false);
    tar.append_dir_all(".", &seed).unwrap();
    tar.into_inner().unwrap().finish().unwrap();
    let from_dir = json_of(&["--root", seed.to_str().unwrap(), "--json"], 0);
    let from_gz = json_of(&["--root", gz.to_str().unwrap(), "--json"], 0);
    assert_eq!(from_dir["host"], from_gz["host"]);
    assert_eq!(from_dir["processes"], from_gz["processes"]);
    assert!(!from_gz["processes"].as_array().unwrap().is_empty());
}

#[test]
fn garbage_archives_never_echo_raw_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let mut header = vec![0u8; 512];
    let name = b"\x1b[2J\x07evil\xff\xfe";
    header[..name.len()].copy_from_slice(name);
    let mut zstd_junk = vec![0x28, 0xb5, 0x2f, 0xfd];
    zstd_junk.extend_from_slice(b"\x1b]0;pwned\x07\xff\x00garbage");
    for (file, bytes) in [("hdr.tar.zst", header), ("junk.tar.zst", zstd_junk)] {
        let path = tmp.path().join(file);
        std::fs::File::create(&path)
            .unwrap()
            .write_all(&bytes)
            .unwrap();
        let out = run(&["--root", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8(out.stderr).expect("error output is UTF-8");
        assert!(!err.contains('\x1b') && !err.contains('\x07'), "{err:?}");
        assert!(err.contains("capture archive"), "{err}");
    }
}

#[test]
fn bad_values_are_quoted_escaped() {
    let cases: [&[&str]; 2] = [
        &["serve", "--interval", "\x1b[2J\x07"],
        &["--explain", "ab\rX\x1b[2J"],
    ];
    for args in cases {
        let (code, err) = stderr_of(args);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            !err.contains(['\x1b', '\x07', '\r']),
            "raw control characters in {err:?}"
        );
    }
    let (_, err) = stderr_of(&["--explain", "ab\rX"]);
    assert!(
        err.contains("'ab\\rX'"),
        "the value is quoted, escaped: {err}"
    );
}

#[test]
fn completions_and_man_page_come_from_the_command_line_definition() {
    let bash = stdout_of(&["completions", "bash"], 0);
    for sub in [
        "record",
        "guard",
        "serve",
        "capture",
        "completions",
        "--min-available",
    ] {
        assert!(bash.contains(sub), "bash completion lacks {sub}");
    }
    for shell in ["zsh", "fish"] {
        assert!(stdout_of(&["completions", shell], 0).contains("gpuledger"));
    }
    check(&[(&["completions", "tcsh"], 2, "possible values")]);
    let man = stdout_of(&["man"], 0);
    assert!(man.contains(".TH gpuledger"), "{man}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS"] {
        assert!(man.contains(section), "man page lacks {section}");
    }
    let page = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(page.path(), &man).unwrap();
    let Ok(rendered) = std::process::Command::new("man")
        .arg("-l")
        .arg(page.path())
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
    else {
        return; // no man(1) here: the roff headers above are what can be checked
    };
    let text = String::from_utf8_lossy(&rendered.stdout);
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    assert!(
        text.contains("SYNOPSIS") && text.contains("--root"),
        "{text}"
    );
}

#[test]
fn view_flags_good_and_bad_values() {
    let seed = fixture("seed-2622");
    let seed = seed.to_str().unwrap();
    let with_root = |args: &[&'static str]| -> Vec<&str> {
        let mut v = vec!["--root", seed];
        v.extend_from_slice(args);
        v
    };
    let good: [&[&str]; 12] = [
        &["--format", "table"],
        &["--format", "csv"],
        &["--format", "json", "--sort", "pid"],
        &["--json", "--sort", "local"],
        &["-l", "10ms", "--count", "1"],
        &["--loop", "1s", "--count", "1", "--format", "csv"],
        &["--color", "never", "--sort", "host"],
        &["--pid", "116400,116401"],
        &["--device", "0000:03:00.0", "--device", "renderD129"],
        &["--id", "1", "--pid", "116401"],
        &["--color=always", "--sort", "rank"],
        &["--explain", "leak", "--color", "auto"],
    ];
    for args in good {
        let args = with_root(args);
        let out = run(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "gpuledger {args:?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let bad: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            with_root(&["--format", "xml"]),
            2,
            "possible values: table, json, csv",
        ),
        (
            with_root(&["--json", "--format", "csv"]),
            2,
            "cannot be used with",
        ),
        (
            with_root(&["--sort", "size"]),
            2,
            "possible values: host, local, pid, rank",
        ),
        (
            with_root(&["--color", "sometimes"]),
            2,
            "possible values: auto, always, never",
        ),
        (with_root(&["-l", "0"]), 2, "10ms"),
        (with_root(&["--loop", "5ms"]), 2, "10ms"),
        (with_root(&["--loop", "soon"]), 2, "--loop"),
        (with_root(&["--count", "3"]), 2, "--loop"),
        (with_root(&["-l", "1s", "--count", "0"]), 2, "--count"),
        (with_root(&["--pid", "abc"]), 2, "--pid"),
        (with_root(&["--pid", "-3"]), 2, "unexpected argument"),
        (with_root(&["--pid", "999999"]), 1, "no such process"),
        (
            with_root(&["--device", "card9"]),
            1,
            "matches none of the devices",
        ),
        (with_root(&["top", "--sort", "size"]), 2, "possible values"),
        (with_root(&["serve", "--device", "9"]), 1, "matches none"),
        (vec!["show", NO_ROOT, "--pid", "x"], 2, "--pid"),
    ];
    for (args, code, want) in &bad {
        check(&[(args.as_slice(), *code, want)]);
    }
}

#[test]
fn a_bare_number_is_refused_with_the_units_to_add() {
    let seed = fixture("seed-2605");
    let seed = seed.to_str().unwrap();
    check(&[
        (
            &["--root", seed, "guard", "--max-driver-held", "10", "--", "sleep", "3"],
            2,
            "10 is a bare number; write 10GiB or 10MiB",
        ),
        (
            &["--root", seed, "guard", "--min-available", "5", "--pid", NO_PID],
            2,
            "5 is a bare number; write 5GiB, 5MiB or 5%",
        ),
        (
            &["--root", NO_ROOT, "serve", "--min-process-bytes", "64"],
            2,
            "64 is a bare number",
        ),
        (
            &["--threshold", "peer.min_bytes=1GB"],
            2,
            "threshold peer.min_bytes: invalid size \"1GB\": gpuledger uses binary units; write 1GiB",
        ),
        (
            &["--threshold", "driver_held.min_bytes=1024"],
            2,
            "1024 is a bare number; write 1024GiB or 1024MiB",
        ),
    ]);
}

#[test]
fn short_units_are_read_as_binary_and_the_reading_is_said_once() {
    let args = |size: &'static str, host: &'static str| {
        run(&[
            "project",
            "--ranks",
            "8",
            "--vram-per-rank",
            size,
            "--host-mem",
            host,
        ])
    };
    let short = args("8G", "64Gi");
    let long = args("8GiB", "64GiB");
    assert_eq!(short.status.code(), Some(0));
    assert_eq!(short.stdout, long.stdout, "8G and 8GiB are the same size");
    let err = String::from_utf8_lossy(&short.stderr);
    assert_eq!(err.matches("8G read as 8 GiB").count(), 1, "{err}");
    assert_eq!(err.matches("64Gi read as 64 GiB").count(), 1, "{err}");
    assert!(long.stderr.is_empty(), "a spelled-out unit needs no note");
}

/// `record` started in `dir`, with the fixture as its root (no live /proc needed).
fn record_in(dir: &std::path::Path, args: &[&str]) -> std::process::Command {
    let mut cmd = bin();
    let seed = fixture("seed-2605");
    cmd.current_dir(dir)
        .args([
            "--root",
            seed.to_str().unwrap(),
            "record",
            "--interval",
            "20ms",
        ])
        .args(args);
    cmd
}

fn ledgers_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn record_takes_a_command_without_the_double_dash() {
    let dir = tempfile::tempdir().unwrap();
    let out = record_in(dir.path(), &["-o", "a.ledger", "sh", "-c", "exit 3"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "the job's status: {err}");
    assert_eq!(ledgers_in(dir.path()), ["a.ledger"]);
    let show = stdout_of(&["show", dir.path().join("a.ledger").to_str().unwrap()], 0);
    assert!(show.contains("sh -c"), "{show}");
}

#[test]
fn a_command_that_cannot_start_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["-o", "typo.ledger", "--", "/no/such/gpuledger-command"][..],
        &["/no/such/gpuledger-command", "--flag"][..],
    ] {
        let out = record_in(dir.path(), args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("nothing was recorded"), "{err}");
        assert!(err.contains("No such file or directory"), "{err}");
    }
    assert_eq!(ledgers_in(dir.path()), Vec::<String>::new());
}

#[test]
fn default_recording_names_never_collide() {
    let dir = tempfile::tempdir().unwrap();
    let jobs: Vec<_> = (0..3)
        .map(|_| {
            record_in(dir.path(), &["true"])
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for job in jobs {
        let out = job.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(
            !err.contains('\r'),
            "no progress redraws off a terminal: {err:?}"
        );
    }
    let names = ledgers_in(dir.path());
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names
        .iter()
        .all(|n| n.starts_with("gpuledger-") && n.ends_with(".ledger")));
}

#[test]
fn a_snapshot_option_before_a_command_is_refused_not_ignored() {
    check(&[
        (&["--json", "show", NO_ROOT], 2, "--json before a command"),
        (&["--pid", "1", "top"], 2, "--pid before a command"),
        (
            &["--sort", "host", "record", "true"],
            2,
            "gpuledger show --json FILE",
        ),
        // Global options belong before or after the command alike.
        (
            &["--root", NO_ROOT, "show", NO_ROOT],
            1,
            "cannot read recording",
        ),
    ]);
}
