//! `record --cgroup` and `--slurm-job` on a real cgroup v2: a child cgroup is made under the
//! mounted hierarchy, processes are moved in and out, and the recording is read back. Needs a
//! writable cgroup v2 (root, or a delegated subtree); elsewhere each test says so and skips.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A cgroup made for one test below the cgroup2 mount; removed (after its processes) on drop.
struct TestCgroup {
    dir: PathBuf,
    mount: PathBuf,
}

impl TestCgroup {
    /// `None` (and a line saying why) when no writable cgroup v2 is mounted.
    fn make(name: &str) -> Option<TestCgroup> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let Some(mount) = mountinfo.lines().find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let point = left.split_whitespace().nth(4)?;
            (right.split_whitespace().next()? == "cgroup2").then(|| PathBuf::from(point))
        }) else {
            eprintln!("skipped: no cgroup2 mount in /proc/self/mountinfo");
            return None;
        };
        let dir = mount.join(format!("gpuledger-test-{name}-{}", std::process::id()));
        if let Err(e) = std::fs::create_dir(&dir) {
            eprintln!(
                "skipped: cgroup v2 at {} is not writable: {e}",
                mount.display()
            );
            return None;
        }
        Some(TestCgroup { dir, mount })
    }

    /// Starts `sleep secs` inside `sub` (made if missing): gpuledger's own test process is moved
    /// nowhere; the shell moves itself in, then becomes sleep.
    fn spawn(&self, sub: &str, secs: &str) -> Child {
        let dir = self.dir.join(sub);
        std::fs::create_dir_all(&dir).unwrap();
        let procs = dir.join("cgroup.procs");
        let child = Command::new("sh")
            .args(["-c", "echo $$ > \"$1\" && exec sleep \"$2\"", "sh"])
            .arg(&procs)
            .arg(secs)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !std::fs::read_to_string(&procs)
            .unwrap()
            .contains(&child.id().to_string())
        {
            assert!(
                Instant::now() < deadline,
                "the child never joined {procs:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        child
    }

    /// The path as /proc/PID/cgroup shows it.
    fn proc_path(&self) -> String {
        format!("/{}", self.dir.strip_prefix(&self.mount).unwrap().display())
    }

    fn remove(&self) {
        let mut dirs: Vec<PathBuf> = walk(&self.dir);
        dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for d in dirs {
            let _ = std::fs::remove_dir(d);
        }
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        self.remove();
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&e.path()));
        }
    }
    out
}

fn meta(ledger: &Path) -> std::collections::BTreeMap<String, String> {
    let conn = rusqlite::Connection::open(ledger).unwrap();
    let mut st = conn.prepare("SELECT key, value FROM meta").unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn wait_for(mut child: Child, limit: Duration) -> std::process::Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("record did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn follows_processes_into_child_cgroups_and_ends_when_the_last_one_leaves() {
    let Some(cg) = TestCgroup::make("follow") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let ledger = tmp.path().join("job.ledger");
    let mut first = cg.spawn("", "1");
    let record = bin()
        .args(["record", "--interval", "100ms", "-o"])
        .arg(&ledger)
        .args(["--cgroup", &cg.proc_path()])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    // Arrives later, one level down, and outlives the first: the run must last until it ends.
    let mut late = cg.spawn("step_0/user/task_0", "2");
    let start = Instant::now();
    let out = wait_for(record, Duration::from_secs(20));
    let (_, _) = (first.wait().unwrap(), late.wait().unwrap());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        start.elapsed() >= Duration::from_millis(1500),
        "record ended after {:?}, before the late process left",
        start.elapsed()
    );
    let m = meta(&ledger);
    assert_eq!(m["label.followed"], cg.dir.display().to_string());
    assert_eq!(m["label.slurm_steps"], "0");
    assert_eq!(m["label.user"], "root");
    assert_eq!(m["note"], "job ended: its last process left");
    assert!(m.contains_key("ended_ms"), "{m:?}");
    let shown = stdout_of(&["show", ledger.to_str().unwrap()], 0);
    assert!(shown.contains("labels    followed="), "{shown}");
}

#[test]
fn a_removed_cgroup_ends_the_run_and_sigterm_leaves_a_complete_recording() {
    let Some(cg) = TestCgroup::make("end") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let removed = tmp.path().join("removed.ledger");
    let empty = std::fs::create_dir(cg.dir.join("empty"));
    empty.unwrap();
    let record = |out: &Path, path: &str| {
        bin()
            .args(["record", "--interval", "100ms", "-o"])
            .arg(out)
            .args(["--cgroup", path])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // An empty cgroup is waited on until it is removed.
    let waiting = record(&removed, &format!("{}/empty", cg.proc_path()));
    std::thread::sleep(Duration::from_millis(500));
    std::fs::remove_dir(cg.dir.join("empty")).unwrap();
    let out = wait_for(waiting, Duration::from_secs(10));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(meta(&removed)["note"], "job ended: its cgroup was removed");

    let stopped = tmp.path().join("stopped.ledger");
    let mut sleeper = cg.spawn("", "30");
    let running = record(&stopped, cg.dir.to_str().unwrap());
    std::thread::sleep(Duration::from_millis(500));
    let _ = Command::new("kill")
        .args(["-TERM", &running.id().to_string()])
        .status();
    let out = wait_for(running, Duration::from_secs(10));
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = meta(&stopped);
    assert!(
        m.contains_key("ended_ms") && !m.contains_key("note"),
        "{m:?}"
    );
}

#[test]
fn slurm_job_finds_the_job_cgroup_and_labels_the_recording() {
    let Some(cg) = TestCgroup::make("slurm") else {
        return;
    };
    // A job id no real job on this machine has.
    let job = format!("9{}", std::process::id());
    let step = format!("system.slice/slurmstepd.scope/job_{job}/step_batch/user/task_0");
    // Long enough that a loaded machine starts `record` before the task ends: a job whose
    // cgroup is already empty is waited for (up to 60 s), as a job not started yet would be.
    let mut task = cg.spawn(&step, "4");
    let tmp = tempfile::tempdir().unwrap();
    let ledger = tmp.path().join("slurm.ledger");
    let record = bin()
        .args(["record", "--interval", "100ms", "--slurm-job", &job, "-o"])
        .arg(&ledger)
        .env("SLURM_JOB_ID", &job)
        .env("SLURM_JOB_USER", "alice")
        .env("SLURM_JOB_PARTITION", "gpu")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_for(record, Duration::from_secs(30));
    task.wait().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = meta(&ledger);
    assert_eq!(m["label.slurm_job"], job);
    assert_eq!(m["label.slurm_steps"], "batch");
    assert_eq!(m["label.user"], "alice");
    assert_eq!(m["label.partition"], "gpu");
    assert!(
        m["label.followed"].ends_with(&format!("job_{job}")),
        "{m:?}"
    );
    assert!(!m["label.node"].is_empty());
    assert_eq!(m["command"], format!("[\"--slurm-job\",\"{job}\"]"));
}

#[test]
fn a_missing_cgroup_or_job_is_a_clear_error() {
    let out = run(&[
        "record",
        "--cgroup",
        "/no/such/gpuledger-cgroup",
        "-o",
        "/tmp/x",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no cgroup directory \"/no/such/gpuledger-cgroup\"")
            && err.contains("/sys/fs/cgroup/no/such/gpuledger-cgroup"),
        "{err}"
    );
    let out = run(&["record", "--slurm-job", "12x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a Slurm job id"));
}

#[test]
fn guard_follows_the_cgroup_and_stops_every_member() {
    let Some(cg) = TestCgroup::make("guard") else {
        return;
    };
    let mut a = cg.spawn("", "30");
    let mut b = cg.spawn("step_0/user/task_0", "30");
    // A floor of 100 % of MemTotal is crossed at the first sample.
    let out = run(&[
        "guard",
        "--min-available",
        "100%",
        "--interval",
        "100ms",
        "--grace",
        "2s",
        "--cgroup",
        &cg.proc_path(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("sending SIGTERM to the job"), "{err}");
    for child in [&mut a, &mut b] {
        let status = child.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(15)
        );
    }
}

/// The followed cgroup's own `memory.max` is the one guard holds the job to (Slurm sets it on
/// `job_<id>`). A capture tree supplies the cgroup files, and a real process is its member, so
/// the SIGTERM is real.
#[test]
fn guard_holds_the_followed_cgroup_to_its_memory_max() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    copy_dir(&fixture("seed-2622"), &tree);
    let mut member = Command::new("sleep").arg("30").spawn().unwrap();
    let job = tree.join("sys/fs/cgroup/slurm/job_7");
    std::fs::create_dir_all(&job).unwrap();
    std::fs::write(job.join("cgroup.procs"), format!("{}\n", member.id())).unwrap();
    std::fs::write(job.join("memory.max"), "1073741824\n").unwrap();
    std::fs::write(job.join("memory.current"), "1072693248\n").unwrap();
    let out = run(&[
        "--root",
        tree.to_str().unwrap(),
        "guard",
        "--interval",
        "100ms",
        "--cgroup",
        "/slurm/job_7",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains("the job's cgroup /slurm/job_7 uses 1023.0 MiB of its memory.max 1.0 GiB"),
        "{err}"
    );
    let status = member.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(15)
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let t = e.file_type().unwrap();
        if t.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if t.is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}
