//! `report`: golden Markdown on fixtures, with and without recordings; redaction; "not found".

use crate::common;
use common::*;

#[test]
fn intel_template_golden_on_the_seed() {
    let root = fixture("seed-2622");
    let out = stdout_of(&["--root", root.to_str().unwrap(), "report"], 0);
    assert_golden("report-seed-2622-intel.md", &out);
    for section in [
        "## Pre-submission checklist",
        "## GPU hardware",
        "## DRI devices information",
        "## Detailed GPU information",
        "## Driver version and installation",
        "## Linux distribution and kernel",
        "## Observed behaviour",
        "## Expected behaviour",
        "## Steps to reproduce",
        "## Reproduction rate",
        "## Regression",
        "## System logs",
    ] {
        assert!(out.contains(section), "missing {section}");
    }
    assert!(out.contains("fd4 /dev/dri/renderD129 (0000:04:00.0): drm-resident-gtt: 8913000 KiB  drm-resident-vram0: 191268 KiB"));
    assert!(
        out.contains("| GPU runtime packages | not found |"),
        "a capture has no package database"
    );
    assert!(!out.contains("HF_TOKEN") && !out.contains("/home/user"));
}

#[test]
fn generic_template_with_two_recordings_has_the_diff() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(run(&["demo", "--keep", tmp.path().to_str().unwrap()])
        .status
        .success());
    let a = tmp.path().join("A-pinned.ledger");
    let b = tmp.path().join("B-registered-only.ledger");
    let root = fixture("seed-2605");
    let out = stdout_of(
        &[
            "--root",
            root.to_str().unwrap(),
            "report",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--template",
            "generic",
        ],
        0,
    );
    let out = out.replace(tmp.path().to_str().unwrap(), "<DIR>");
    assert_golden("report-seed-2605-generic-diff.md", &out);
    assert!(out.contains("#### Bad vs good"));
    assert!(out.contains("A shows the peer-mirror pinning"));
    assert!(!out.contains("## Pre-submission checklist"));
}

#[test]
fn writes_a_file_and_redacts() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("proc/sys/kernel")).unwrap();
    std::fs::write(
        root.join("proc/meminfo"),
        "MemTotal: 1024 kB\nMemAvailable: 512 kB\n",
    )
    .unwrap();
    std::fs::write(
        root.join("proc/version"),
        "Linux version 6.18.0 (alice@buildbox) #1 SMP\n",
    )
    .unwrap();
    std::fs::write(root.join("proc/sys/kernel/hostname"), "gpu-node-17\n").unwrap();
    let out_file = tmp.path().join("bug.md");
    stdout_of(
        &[
            "--root",
            root.to_str().unwrap(),
            "report",
            "--redact",
            "-o",
            out_file.to_str().unwrap(),
        ],
        0,
    );
    let text = std::fs::read_to_string(&out_file).unwrap();
    assert!(
        text.contains("(<user>@<host>)") && !text.contains("alice") && !text.contains("buildbox"),
        "{text}"
    );
    assert!(text.contains("not found: no GPU device"));
    let unredacted = stdout_of(&["--root", root.to_str().unwrap(), "report"], 0);
    assert!(unredacted.contains("alice@buildbox"));
}

/// Lines outside fenced code blocks: a fence opens with 3+ backticks and closes only with a
/// line of at least as many, as CommonMark has it.
fn outside_fences(md: &str) -> Vec<&str> {
    let mut open: Option<usize> = None;
    let mut out = Vec::new();
    for line in md.lines() {
        let ticks = line.len() - line.trim_start_matches('`').len();
        match open {
            None if ticks >= 3 => open = Some(ticks),
            None => out.push(line),
            Some(n) if ticks >= n && line[ticks..].trim().is_empty() => open = None,
            Some(_) => {}
        }
    }
    assert!(open.is_none(), "a fence was left open:\n{md}");
    out
}

#[test]
fn hostile_names_and_environment_cannot_inject_markup() {
    let (_tmp, root) = fixture_copy("amdgpu");
    std::fs::write(root.join("proc/3100/comm"), "<script>alert(1)</script>\n").unwrap();
    std::fs::write(
        root.join("proc/3100/environ"),
        "HIP_VISIBLE_DEVICES=1\0NCCL_DEBUG=x\x1b[2J```\n## Injected | [x](http://e) <img src=x>\0",
    )
    .unwrap();
    let out = stdout_of(&["--root", root.to_str().unwrap(), "report"], 0);
    assert!(
        !out.chars().any(|c| c.is_control() && c != '\n'),
        "a control character passed through raw:\n{out}"
    );
    let text = outside_fences(&out);
    for bad in ["<script", "<img", "## Injected", "](http"] {
        assert!(
            !text.iter().any(|l| l.contains(bad)),
            "{bad:?} outside a code block:\n{out}"
        );
    }
    assert!(
        out.contains("pid 3100 (&lt;script&gt;alert(1)&lt;/script&gt;) has 2.0 GiB"),
        "the finding names the process, escaped:\n{out}"
    );
    // Verbatim where it is code: in a fence longer than the backticks inside, controls visible.
    assert!(
        out.contains("````\nHIP_VISIBLE_DEVICES=1\nNCCL_DEBUG=x\\x1b[2J```\\n## Injected | [x](http://e) <img src=x>\n````\n"),
        "{out}"
    );
    assert!(out.contains("pid 3100 (<script>alert(1)</script>, home 0000:08:00.0)"));
}

#[test]
fn redaction_replaces_whole_tokens_only() {
    let (_tmp, root) = fixture_copy("amdgpu");
    std::fs::create_dir_all(root.join("proc/sys/kernel")).unwrap();
    std::fs::write(root.join("proc/sys/kernel/hostname"), "vm\n").unwrap();
    std::fs::write(
        root.join("proc/cmdline"),
        "BOOT_IMAGE=/vmlinuz-6.18 root=/dev/vda1 kvm_amd.nested_pvm=1 nfsroot=vm:/srv/a\n",
    )
    .unwrap();
    std::fs::write(
        root.join("proc/version"),
        "Linux version 6.18.0 (a@vm) #1 SMP\n",
    )
    .unwrap();
    std::fs::write(
        root.join("proc/3100/environ"),
        "CCL_ROOT=/home/a/oneapi/ccl\0NCCL_COMM_ID=vm:29500\0NCCL_SOCKET_IFNAME=vmnet0\0",
    )
    .unwrap();
    let r = root.to_str().unwrap();
    let out = stdout_of(&["--root", r, "report", "--redact"], 0);
    for kept in [
        "BOOT\\_IMAGE=/vmlinuz-6.18 root=/dev/vda1 kvm\\_amd.nested\\_pvm=1 nfsroot=&lt;host&gt;:/srv/a",
        "CCL_ROOT=/home/<user>/oneapi/ccl",
        "NCCL_COMM_ID=<host>:29500",
        "NCCL_SOCKET_IFNAME=vmnet0",
        "Linux version 6.18.0 `(<user>@<host>)` `#1` SMP",
        "1. Start the job",
    ] {
        assert!(out.contains(kept), "missing {kept:?}:\n{out}");
    }
    assert!(!out.contains("p<host>") && !out.contains("a@vm") && !out.contains("/home/a/"));
    let plain = stdout_of(&["--root", r, "report"], 0);
    assert!(plain.contains("NCCL_COMM_ID=vm:29500") && plain.contains("`(a@vm)`"));
}

fn record(args: &[&str]) {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn steps_keep_the_command_quoting() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("quoted.ledger");
    let rec = rec.to_str().unwrap();
    let script = "trap \"echo it's over\" TERM; exit 0";
    record(&[
        "record",
        "-o",
        rec,
        "--interval",
        "50ms",
        "--",
        "sh",
        "-c",
        script,
    ]);
    let root = fixture("amdgpu");
    let out = stdout_of(&["--root", root.to_str().unwrap(), "report", rec], 0);
    let line = out
        .lines()
        .find(|l| l.starts_with("1. `gpuledger record"))
        .unwrap_or_else(|| panic!("no record step:\n{out}"));
    let cmd = line
        .strip_prefix("1. `")
        .and_then(|l| l.strip_suffix('`'))
        .unwrap();
    assert_eq!(
        shlex::split(cmd).unwrap(),
        ["gpuledger", "record", "-o", rec, "--", "sh", "-c", script],
        "{line}"
    );
    assert!(
        line.ends_with(r#" -- sh -c "trap \"echo it's over\" TERM; exit 0"`"#),
        "{line}"
    );
}

#[test]
fn simulated_recordings_say_so() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    let rec = tmp.path().join("sim.ledger");
    let rec = rec.to_str().unwrap();
    {
        let _sim = live_sim(&tree, "30s", &[]);
        let t = tree.to_str().unwrap();
        record(&[
            "--root",
            t,
            "record",
            "-o",
            rec,
            "--interval",
            "100ms",
            "--",
            "sleep",
            "0.5",
        ]);
    }
    let out = stdout_of(&["--root", tree.to_str().unwrap(), "report", rec], 0);
    assert!(out.contains("read a simulated machine"), "{out}");
    let step = format!(
        "1. `gpuledger --root {} record -o {rec} -- sleep 0.5`",
        tree.display()
    );
    assert!(out.contains(&step), "missing {step}:\n{out}");
    assert!(!out.contains("1. `gpuledger record -o"), "{out}");

    let demo = tmp.path().join("demo");
    record(&["demo", "--keep", demo.to_str().unwrap()]);
    let a = demo.join("A-pinned.ledger");
    let out = stdout_of(
        &[
            "--root",
            tree.to_str().unwrap(),
            "report",
            a.to_str().unwrap(),
        ],
        0,
    );
    assert!(out.contains("made from gpuledger's simulator"), "{out}");
    assert!(out.contains(
        "1. `gpuledger simulate ddp-peer-mirror --ranks 2 --backing pinned --out DIR` writes"
    ));
    assert!(!out.contains("-- simulate"), "{out}");
}

#[test]
fn nvidia_driver_comes_from_the_captured_nvml_answers() {
    let root = fixture("nvidia");
    let out = stdout_of(&["--root", root.to_str().unwrap(), "report"], 0);
    assert!(out.contains("| NVIDIA driver | 580.159 (NVML) |"), "{out}");
    assert!(
        out.contains("| kernel driver nvidia | 580.159 (NVML) |"),
        "{out}"
    );
    assert!(!out.contains("NVIDIA driver | not found"));
}

#[test]
fn usage_rows_name_the_interface_they_came_from() {
    let report = |f: &str| stdout_of(&["--root", fixture(f).to_str().unwrap(), "report"], 0);
    let amd = report("amdgpu");
    assert!(!amd.contains("NVML") && !amd.contains("smaps"), "{amd}");
    assert!(amd.contains("drm-resident-vram: 14680064 KiB"));
    let nv = report("nvidia");
    assert!(nv.contains("  NVML vram on 0000:18:00.0: 8.5 GiB"), "{nv}");
    assert!(
        nv.contains("  smaps pinned-shmem on 0000:18:00.0: 4.0 GiB"),
        "{nv}"
    );
    assert!(report("rocm-kfd").contains("  KFD kfd-vram on 0000:c1:00.0: 11.0 GiB"));
    let json = json_of(
        &["--root", fixture("nvidia").to_str().unwrap(), "--json"],
        0,
    );
    let sources: Vec<&str> = json["processes"][0]["usage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["source"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["nvml", "smaps"]);
}

/// Issue 23 items 8 and 17: a recording made on `gpu_node_17`, reported elsewhere with
/// `--redact`, keeps the name nowhere (heading, error lines, reproduce steps), not even in its
/// Markdown-escaped form; the job's `@user`, `#1` and URLs stay inert.
#[test]
fn redaction_hides_the_recorded_host_and_job_text_links_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("gpu_node_17.ledger");
    let rec = rec.to_str().unwrap();
    let script = "echo 'RuntimeError: CUDA error on gpu_node_17, ask @torvalds, see #1 and https://x.org/a'; exit 1";
    let out = run(&[
        "record",
        "-o",
        rec,
        "--interval",
        "50ms",
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert!(!out.status.success(), "the job fails on purpose");
    let db = rusqlite::Connection::open(rec).unwrap();
    db.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES ('hostname', 'gpu_node_17')",
        [],
    )
    .unwrap();
    drop(db);
    let root = fixture("amdgpu");
    let r = root.to_str().unwrap();
    let plain = stdout_of(&["--root", r, "report", rec], 0);
    assert!(
        plain.contains("gpu_node_17") && plain.contains("@torvalds"),
        "{plain}"
    );
    let redacted = stdout_of(&["--root", r, "report", "--redact", rec], 0);
    for leak in ["gpu_node_17", "gpu\\_node\\_17", "node_17"] {
        assert!(!redacted.contains(leak), "{leak} in:\n{redacted}");
    }
    assert!(redacted.contains("<host>"));
    for line in outside_fences(&plain) {
        for word in ["@torvalds", "#1", "https://x.org/a"] {
            let mut rest = line;
            while let Some(i) = rest.find(word) {
                let before = &rest[..i];
                assert!(
                    before.matches('`').count() % 2 == 1,
                    "{word} outside a code span: {line}"
                );
                rest = &rest[i + word.len()..];
            }
        }
    }
}

/// Issue 24: `report a.ledger` without `--root` described the machine it ran on ("no GPU
/// device") and its reproduce step read `record … -- --all`. It describes the recorded machine
/// and warns that the one it is written on differs.
#[test]
fn report_from_a_recording_describes_the_recorded_machine() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("seed.ledger");
    let seed = fixture("seed-2622");
    let mut child = bin()
        .args(["--root", seed.to_str().unwrap(), "record", "--all"])
        .args(["--interval", "50ms", "-o"])
        .arg(&rec)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    child.kill().unwrap();
    child.wait().unwrap();
    let out = stdout_of(&["report", rec.to_str().unwrap()], 0);
    assert!(
        out.contains("This report describes the machine the recording"),
        "{out}"
    );
    assert!(
        out.contains("Warning: the machine it was written on differs"),
        "{out}"
    );
    assert!(
        out.contains("| 0000:03:00.0 | 0x8086:0xe223 | Intel Arc Pro B70 (Battlemage G31) | xe |")
    );
    assert!(!out.contains("no GPU device"));
    assert!(
        out.contains("| kernel | Linux version 7.1.3-cachyos"),
        "the recorded kernel"
    );
    assert!(out.contains("`peer_mirror`"), "the recording's findings");
    let related = out.split("## Possibly related").nth(1).unwrap_or_default();
    assert!(
        related.contains("- **critical** `cr-953-bmg-eager-peer-pinning`: Battlemage"),
        "the known issues are matched against the recorded B70s, not this machine: {related}"
    );
    let step = out
        .lines()
        .find(|l| l.starts_with("1. `gpuledger --root"))
        .unwrap_or_else(|| panic!("no record step:\n{out}"));
    assert!(
        step.ends_with(" record -o seed.ledger --all`") || step.contains("seed.ledger --all`"),
        "{step}"
    );
    assert!(!out.contains("-- --all"));
}

#[test]
fn the_table_and_possibly_related_quote_one_package_database() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("seed");
    let copied = std::process::Command::new("cp")
        .args([
            "-r",
            fixture("seed-2622").to_str().unwrap(),
            tree.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(copied.success());
    std::fs::create_dir_all(tree.join("var/lib/dpkg")).unwrap();
    std::fs::write(
        tree.join("var/lib/dpkg/status"),
        "Package: libze-intel-gpu1\nStatus: install ok installed\nVersion: 26.22.38646.4-0ubuntu1\n\n",
    )
    .unwrap();
    let out = stdout_of(&["--root", tree.to_str().unwrap(), "report"], 0);
    for said in [
        "installed here: libze-intel-gpu1 26.22.38646.4-0ubuntu1)",
        "| libze-intel-gpu1 | 26.22.38646.4-0ubuntu1 (/var/lib/dpkg/status) |",
        "intel-compute-runtime 26.22.38646.4-0ubuntu1 from package libze-intel-gpu1 (/var/lib/dpkg/status)",
    ] {
        assert!(out.contains(said), "missing {said:?}:\n{out}");
    }
    assert!(
        !out.contains("| GPU runtime packages | not found |"),
        "{out}"
    );
    assert!(
        !out.contains("0ubuntu1, 26.22"),
        "each version once:\n{out}"
    );
}
