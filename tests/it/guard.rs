//! guard on real child processes, with host counters from capture and simulated trees.

use crate::common;
use common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn seed() -> String {
    fixture("seed-2622").to_str().unwrap().to_string()
}

/// `gpuledger --root SEED guard ARGS…`, run to its end.
fn guard_on_seed(args: &[&str]) -> std::process::Output {
    let seed = seed();
    let mut all = vec!["--root", seed.as_str(), "guard"];
    all.extend(args);
    run(&all)
}

/// `setpriv` flags that run a program as user nobody, without groups.
const AS_NOBODY: [&str; 3] = ["--reuid=65534", "--regid=65534", "--clear-groups"];

#[test]
fn stops_the_job_when_memory_is_below_the_floor() {
    let start = Instant::now();
    let out = guard_on_seed(&[
        "--min-available",
        "50%",
        "--interval",
        "100ms",
        "--",
        "sleep",
        "30",
    ]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(start.elapsed() < Duration::from_secs(10));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("MemAvailable 28.0 GiB is below the floor 32.0 GiB; sending SIGTERM"),
        "{err}"
    );
    assert!(
        err.contains(
            "rank 0 (pid 116400) on 0000:04:00.0: 186.8 MiB device-local, 8.5 GiB host-class"
        ),
        "{err}"
    );
    assert!(
        err.contains("peer_mirror: rank 0 (pid 116400, home 0000:03:00.0)"),
        "{err}"
    );
}

#[test]
fn driver_held_ceiling_and_json_events() {
    let out = guard_on_seed(&[
        "--max-driver-held",
        "10GiB",
        "--min-available",
        "1%",
        "--json",
        "--interval",
        "100ms",
        "--",
        "sleep",
        "30",
    ]);
    assert_eq!(out.status.code(), Some(4));
    let line = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap()
        .to_string();
    let ev: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(ev["event"], "term");
    assert_eq!(ev["trip"]["reason"], "driver_held");
    assert_eq!(ev["trip"]["source"], "GPUActive");
    assert_eq!(ev["driver_held"]["bytes"], 27158118u64 * 1024);
    assert_eq!(ev["driver_held"]["counter"], "GPUActive");
    assert_eq!(ev["pids"].as_array().unwrap().len(), 1);
}

#[test]
fn action_none_only_warns_and_passes_the_exit_status() {
    let out = guard_on_seed(&[
        "--min-available",
        "50%",
        "--action",
        "none",
        "--interval",
        "100ms",
        "--",
        "sh",
        "-c",
        "sleep 0.5; exit 5",
    ]);
    assert_eq!(
        out.status.code(),
        Some(5),
        "never signalled, exits as the job"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("gpuledger guard: watching pid ")
            && err.contains(
                " every 0.1 s; warns (--action none) at: MemAvailable below 50% of MemTotal\n"
            ),
        "says first what it watches: {err}"
    );
    assert_eq!(
        err.matches("warning only").count(),
        1,
        "one warning per crossing: {err}"
    );
    let out = guard_on_seed(&["--min-available", "1%", "--", "sh", "-c", "exit 6"]);
    assert_eq!(out.status.code(), Some(6));
}

/// Writes `ROOT/proc/meminfo` with 64 GiB MemTotal and `avail_gib` GiB MemAvailable.
fn set_available(root: &std::path::Path, avail_gib: u64) {
    std::fs::create_dir_all(root.join("proc")).unwrap();
    let text = format!(
        "MemTotal: {} kB\nMemAvailable: {} kB\n",
        64 << 20,
        avail_gib << 20
    );
    std::fs::write(root.join("proc/meminfo"), text).unwrap();
}

#[test]
fn sigkill_after_grace_when_sigterm_is_ignored() {
    // A root whose memory falls only after the job has set its trap (no race with the first sample).
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    set_available(root, 60);
    let child = bin()
        .args([
            "--root",
            root.to_str().unwrap(),
            "guard",
            "--min-available",
            "50%",
            "--grace",
            "500ms",
            "--interval",
            "100ms",
            "--json",
            "--",
        ])
        .args(["sh", "-c", "trap '' TERM; sleep 30 & wait; sleep 30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(600));
    set_available(root, 10);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        events
            .iter()
            .map(|e| e["event"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["term", "kill"]
    );
}

#[test]
fn pid_mode_signals_only_the_guarded_pid() {
    let mut victim = Command::new("sleep").arg("30").spawn().unwrap();
    let mut bystander = Command::new("sleep").arg("30").spawn().unwrap();
    let out = guard_on_seed(&[
        "--min-available",
        "50%",
        "--interval",
        "100ms",
        "--pid",
        &victim.id().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        victim.wait().unwrap().code().is_none(),
        "victim got a signal"
    );
    assert!(
        bystander.try_wait().unwrap().is_none(),
        "a process outside the guarded set is untouched"
    );
    bystander.kill().unwrap();
    bystander.wait().unwrap();
    // A guarded pid that exits by itself: guard ends quietly with 0 and signals nothing else.
    let mut short = Command::new("sleep").arg("0.3").spawn().unwrap();
    let pid = short.id().to_string();
    let waiter = std::thread::spawn(move || short.wait().unwrap());
    let out = guard_on_seed(&[
        "--min-available",
        "1%",
        "--interval",
        "100ms",
        "--pid",
        &pid,
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(waiter.join().unwrap().success());
    let out = run(&["guard", "--pid", "999999999"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn acts_when_a_live_simulation_crosses_the_floor() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("sim");
    let sim = live_sim(&tree, "8s", &[]);
    let start = Instant::now();
    let out = run(&[
        "--root",
        tree.to_str().unwrap(),
        "guard",
        "--min-available",
        "25%",
        "--interval",
        "100ms",
        "--",
        "sleep",
        "30",
    ]);
    let took = start.elapsed();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        took > Duration::from_secs(1),
        "must not act before the simulated memory falls ({took:?})"
    );
    assert!(took < Duration::from_secs(8), "{took:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("peer_mirror"));
    drop(sim);
}

/// The cgroup v2 directory this test process is in (guard, its child, makes the job's cgroup
/// below it, so a directory beside the job's is one below this), or why there is none.
fn own_cgroup() -> Result<std::path::PathBuf, String> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let (mount_root, mount_point) = mountinfo
        .lines()
        .find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let f: Vec<&str> = left.split_whitespace().collect();
            right
                .starts_with("cgroup2 ")
                .then(|| (f[3].to_string(), f[4].to_string()))
        })
        .ok_or("no cgroup2 mount")?;
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let below = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .and_then(|p| p.strip_prefix(mount_root.trim_end_matches('/')))
        .ok_or_else(|| format!("no cgroup v2 path of our own in {own:?}"))?;
    Ok(std::path::Path::new(&mount_point).join(below.trim_start_matches('/')))
}

/// Why a cgroup v2 of a job's own cannot be made here, or None when it can (probed the way guard
/// makes one: a child directory of this process's own cgroup that a process can be moved into).
fn cgroup_unwritable() -> Option<String> {
    static PROBES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let parent = match own_cgroup() {
        Ok(dir) => dir,
        Err(why) => return Some(why),
    };
    let n = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = parent.join(format!("gpuledger-test-probe-{}-{n}", std::process::id()));
    if let Err(e) = std::fs::create_dir(&probe) {
        return Some(format!("cannot create {}: {e}", probe.display()));
    }
    // A short-lived shell moves itself in, so the test process never changes cgroup.
    let moved = Command::new("sh")
        .args(["-c", "echo $$ > \"$1/cgroup.procs\"", "sh"])
        .arg(&probe)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let _ = std::fs::remove_dir(&probe);
    (!moved).then(|| format!("cannot move a process into {}", probe.display()))
}

/// Whether `pid` is gone (or only a zombie that its new parent has not reaped yet).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

/// Waits up to `limit` for every pid in `pids` to be [`gone`].
fn all_gone_within(pids: &[u32], limit: Duration) {
    let deadline = Instant::now() + limit;
    while !pids.iter().all(|&p| gone(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills the listed pids when dropped, so a failing test leaves no `sleep 1000` behind.
struct Reaper(Vec<u32>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for &pid in &self.0 {
            if !gone(pid) {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
        }
    }
}

/// Waits for each file to hold a pid (written by the process itself).
fn read_pids(files: &[std::path::PathBuf]) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    files
        .iter()
        .map(|f| loop {
            if let Some(pid) = std::fs::read_to_string(f)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                break pid;
            }
            assert!(Instant::now() < deadline, "{} never written", f.display());
            std::thread::sleep(Duration::from_millis(20));
        })
        .collect()
}

/// A job that starts one `setsid` descendant that ignores SIGTERM and one that double-forks into
/// a new session, each writing its pid to a file in `dir`; both have their output on /dev/null so that a survivor
/// would not hold the test's pipes open.
fn escaping_job(dir: &std::path::Path, then: &str) -> Vec<String> {
    let script = format!(
        "setsid sh -c 'trap \"\" TERM; echo $$ > {d}/a; exec sleep 1000' </dev/null >/dev/null 2>&1 &\n\
         sh -c 'setsid sh -c \"echo \\$\\$ > {d}/b; exec sleep 1000\" </dev/null >/dev/null 2>&1 &'\n\
         {then}\n",
        d = dir.display()
    );
    std::fs::write(dir.join("job.sh"), script).unwrap();
    vec!["sh".into(), dir.join("job.sh").to_str().unwrap().into()]
}

#[test]
fn stopping_the_job_reaches_descendants_that_left_its_session() {
    if let Some(why) = cgroup_unwritable() {
        eprintln!("SKIPPED: cgroup v2 is not writable here ({why}); the fallback test covers this");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    set_available(&root, 60);
    let job = escaping_job(tmp.path(), "sleep 30");
    let child = bin()
        .args([
            "--root",
            root.to_str().unwrap(),
            "guard",
            "--min-available",
            "50%",
        ])
        .args(["--interval", "100ms", "--grace", "2s", "--"])
        .args(&job)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pids = read_pids(&[tmp.path().join("a"), tmp.path().join("b")]);
    let _reaper = Reaper(pids.clone());
    for &pid in &pids {
        let sid = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let fields: Vec<&str> = sid.rsplit_once(") ").unwrap().1.split(' ').collect();
        assert_eq!(
            fields[3],
            pid.to_string(),
            "pid {pid} leads its own session"
        );
    }
    set_available(&root, 10);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(!err.contains("process group only"), "{err}");
    assert!(
        err.contains("the job outlived --grace 2s; killed its cgroup"),
        "the descendant that ignores SIGTERM is killed after --grace: {err}"
    );
    all_gone_within(&pids, Duration::from_secs(2));
    for &pid in &pids {
        assert!(gone(pid), "descendant {pid} survived guard: {err}");
    }
}

#[test]
fn what_the_main_process_leaves_behind_is_stopped_with_it() {
    if let Some(why) = cgroup_unwritable() {
        eprintln!("SKIPPED: cgroup v2 is not writable here ({why})");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let job = escaping_job(
        tmp.path(),
        &format!(
            "while [ ! -s {0}/a ] || [ ! -s {0}/b ]; do sleep 0.05; done; exit 3",
            tmp.path().display()
        ),
    );
    let out = bin()
        .args([
            "--root",
            &seed(),
            "guard",
            "--min-available",
            "1%",
            "--grace",
            "2s",
            "--",
        ])
        .args(&job)
        .output()
        .unwrap();
    let pids = read_pids(&[tmp.path().join("a"), tmp.path().join("b")]);
    let _reaper = Reaper(pids.clone());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "exits as the job: {err}");
    assert!(
        err.contains("stopping the 2 process(es) it left behind"),
        "{err}"
    );
    for &pid in &pids {
        assert!(gone(pid), "leftover {pid} survived: {err}");
    }
}

#[test]
fn without_a_writable_cgroup_guard_warns_once_and_uses_the_process_group() {
    let as_nobody = rustix::process::geteuid().is_root();
    if as_nobody && Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("SKIPPED: running as root without setpriv, so no cgroup is unwritable here");
        return;
    }
    if !as_nobody && cgroup_unwritable().is_none() {
        eprintln!("SKIPPED: this user can write a cgroup, so guard does not fall back");
        return;
    }
    let gpuledger = env!("CARGO_BIN_EXE_gpuledger");
    let user = |program: &str| {
        let mut c = Command::new(if as_nobody { "setpriv" } else { program });
        if as_nobody {
            c.args(AS_NOBODY).arg(program);
        }
        c
    };
    let meminfo = format!("{}/proc/meminfo", seed());
    let reachable = user("sh")
        .args([
            "-c",
            "test -x \"$1\" && test -r \"$2\"",
            "sh",
            gpuledger,
            &meminfo,
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !reachable {
        eprintln!("SKIPPED: user nobody cannot run {gpuledger} or read the fixtures here");
        return;
    }
    let mut cmd = user(gpuledger);
    let out = cmd
        .current_dir("/")
        .args([
            "--root",
            &seed(),
            "guard",
            "--min-available",
            "50%",
            "--interval",
            "100ms",
        ])
        .args(["--", "sh", "-c", "sleep 30 & wait"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert_eq!(
        err.matches("containment is by process group only").count(),
        1,
        "{err}"
    );
    assert!(err.contains("cannot create"), "says why: {err}");
    assert!(err.contains("sending SIGTERM to the job"), "{err}");
}

/// Copies a fixture tree (files and symlinks) to `to`.
fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if kind.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// The fixture's smaps with the `/dev/zero` (cudaHostAlloc) mapping resized to `gib` GiB.
fn pinned_smaps(gib: u64) -> String {
    let kib = gib << 20;
    format!(
        "7f3a00000000-7f3b00000000 rw-s 00000000 00:01 2049 /dev/zero (deleted)\n\
         Size: {kib} kB\nRss: {kib} kB\nShared_Dirty: {kib} kB\n"
    )
}

#[test]
fn job_host_gpu_ceiling_trips_within_two_intervals() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("nvidia");
    copy_tree(&fixture("nvidia"), &root);
    let smaps = root.join("proc/7001/smaps");
    std::fs::write(&smaps, pinned_smaps(4)).unwrap();
    let interval = Duration::from_millis(250);
    let mut child = bin()
        .args([
            "--root",
            root.to_str().unwrap(),
            "guard",
            "--max-job-host-gpu",
            "6GiB",
        ])
        .args(["--interval", "250ms", "--json", "--", "sleep", "30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            let _ = tx.send((Instant::now(), line.unwrap()));
        }
    });
    assert!(
        rx.recv_timeout(Duration::from_millis(1200)).is_err(),
        "4 GiB pinned is under the 6 GiB ceiling"
    );
    // Atomic replace, as a kernel file changes: the reader sees the old or the new text.
    let next = root.join("proc/7001/.smaps.new");
    std::fs::write(&next, pinned_smaps(8)).unwrap();
    let crossed = Instant::now();
    std::fs::rename(&next, &smaps).unwrap();
    let (at, line) = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("guard acted");
    let out = child.wait_with_output().unwrap();
    let stopped = crossed.elapsed();
    let trip_latency = at - crossed;
    eprintln!("job_host_gpu trip latency {trip_latency:?}, job stopped after {stopped:?}");
    assert_eq!(out.status.code(), Some(4));
    let ev: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(ev["event"], "term");
    assert_eq!(ev["trip"]["reason"], "job_host_gpu");
    assert_eq!(ev["trip"]["held"], 8u64 << 30);
    assert_eq!(ev["job_host_gpu"], 8u64 << 30);
    assert!(
        trip_latency < 2 * interval,
        "tripped after {trip_latency:?}"
    );
    assert!(stopped < 2 * interval, "job stopped after {stopped:?}");
}

/// Removes a cgroup directory when dropped (once its processes are gone).
struct CgroupDir(std::path::PathBuf);

impl Drop for CgroupDir {
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(3);
        while self.0.exists() && std::fs::remove_dir(&self.0).is_err() && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn a_job_that_moves_itself_out_of_its_cgroup_is_still_stopped_and_reported() {
    if let Some(why) = cgroup_unwritable() {
        eprintln!("SKIPPED: cgroup v2 is not writable here ({why})");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    set_available(&root, 60);
    let sibling = own_cgroup()
        .unwrap()
        .join(format!("gpuledger-test-sibling-{}", std::process::id()));
    std::fs::create_dir(&sibling).unwrap();
    let _sibling = CgroupDir(sibling.clone());
    let procs = sibling.join("cgroup.procs");
    // a: a child that moves itself into a sibling cgroup and ignores SIGTERM; b: the same from
    // a double fork, so its parent is gone before guard could see it inside.
    let script = format!(
        "sh -c 'echo $$ > {p}; trap \"\" TERM; echo $$ > {d}/a; exec sleep 1000' </dev/null >/dev/null 2>&1 &\n\
         sh -c 'sh -c \"echo \\$\\$ > {p}; trap \\\"\\\" TERM; echo \\$\\$ > {d}/b; exec sleep 1000\" </dev/null >/dev/null 2>&1 &'\n\
         sleep 30\n",
        p = procs.display(),
        d = tmp.path().display()
    );
    std::fs::write(tmp.path().join("job.sh"), script).unwrap();
    let child = bin()
        .args(["--root", root.to_str().unwrap(), "guard"])
        .args([
            "--min-available",
            "50%",
            "--interval",
            "100ms",
            "--grace",
            "1s",
        ])
        .args(["--", "sh", tmp.path().join("job.sh").to_str().unwrap()])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pids = read_pids(&[tmp.path().join("a"), tmp.path().join("b")]);
    let _reaper = Reaper(pids.clone());
    let inside = std::fs::read_to_string(&procs).unwrap();
    for pid in &pids {
        assert!(inside.lines().any(|l| l == pid.to_string()), "{pid} moved");
    }
    // Give guard a few samples to see them, then cross the floor.
    std::thread::sleep(Duration::from_millis(500));
    set_available(&root, 10);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    for pid in &pids {
        assert!(
            err.contains(&format!("process {pid} of the job left its cgroup")),
            "escape of {pid} reported: {err}"
        );
    }
    assert!(!err.contains("still running as guard exits"), "{err}");
    all_gone_within(&pids, Duration::from_secs(2));
    for &pid in &pids {
        assert!(
            gone(pid),
            "{pid} left the job's cgroup and survived guard: {err}"
        );
    }
}

#[test]
fn without_a_cgroup_a_group_member_that_ignores_sigterm_is_killed_after_the_grace() {
    if !rustix::process::geteuid().is_root()
        || Command::new("setpriv").arg("--version").output().is_err()
    {
        eprintln!("SKIPPED: needs root and setpriv to run guard as a user without a cgroup");
        return;
    }
    let gpuledger = env!("CARGO_BIN_EXE_gpuledger");
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    set_available(&root, 60);
    // User nobody writes its pid file in the temporary directory and reads the root's meminfo.
    let mode = std::os::unix::fs::PermissionsExt::from_mode;
    std::fs::set_permissions(tmp.path(), mode(0o777)).unwrap();
    for p in [root.clone(), root.join("proc")] {
        std::fs::set_permissions(&p, mode(0o755)).unwrap();
    }
    let reachable = Command::new("setpriv")
        .args(AS_NOBODY)
        .args(["sh", "-c"])
        .arg("test -x \"$1\" && test -r \"$2\" && test -w \"$3\"")
        .args(["sh", gpuledger])
        .arg(root.join("proc/meminfo"))
        .arg(tmp.path())
        .status()
        .is_ok_and(|s| s.success());
    if !reachable {
        eprintln!("SKIPPED: user nobody cannot run {gpuledger} or use a temporary directory here");
        return;
    }
    // The leader dies of SIGTERM; its child in the same group ignores it.
    let job = format!(
        "sh -c 'trap \"\" TERM; echo $$ > {d}/a; exec sleep 1000' </dev/null >/dev/null 2>&1 & sleep 30",
        d = tmp.path().display()
    );
    let child = Command::new("setpriv")
        .args(AS_NOBODY)
        .arg(gpuledger)
        .current_dir("/")
        .args(["--root", root.to_str().unwrap(), "guard"])
        .args([
            "--min-available",
            "50%",
            "--interval",
            "100ms",
            "--grace",
            "500ms",
        ])
        .args(["--", "sh", "-c", &job])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pids = read_pids(&[tmp.path().join("a")]);
    let _reaper = Reaper(pids.clone());
    std::thread::sleep(Duration::from_millis(300));
    set_available(&root, 10);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("process group only"), "{err}");
    all_gone_within(&pids, Duration::from_secs(2));
    assert!(
        gone(pids[0]),
        "the SIGTERM-ignoring group member survived: {err}"
    );
}

#[test]
fn guard_and_record_return_when_the_job_ends_not_an_interval_later() {
    let job = ["sh", "-c", "sleep 0.3; exit 3"];
    // The job's status, well before the 60 s interval would have ended the pause.
    let returns_with_the_job = |what: &str, start: Instant, out: std::process::Output| {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{what}: {err}");
        let took = start.elapsed();
        assert!(took < Duration::from_secs(20), "{what} took {took:?}");
    };
    let start = Instant::now();
    let out = guard_on_seed(&[&["--interval", "60s", "--"][..], &job].concat());
    returns_with_the_job("guard", start, out);

    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("job.ledger");
    let start = Instant::now();
    let out = record_job(None, "60s", &ledger, &job).output().unwrap();
    returns_with_the_job("record", start, out);
}

/// A tmux server of its own for one test, killed when dropped.
struct TmuxServer(String);

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .status();
    }
}

#[test]
fn what_a_running_tmux_server_starts_for_the_job_is_said_not_hidden() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("SKIPPED: no tmux here (CI installs it)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let socket = format!("gpuledger-test-{}", std::process::id());
    let server = TmuxServer(socket.clone());
    // The user's server, running before the job.
    let started = Command::new("tmux")
        .args(["-L", &server.0, "new-session", "-d", "sleep 600"])
        .status()
        .unwrap();
    assert!(started.success());
    let pid_file = tmp.path().join("escaped");
    let job = format!(
        "tmux -L {socket} new-session -d 'echo $$ > {}; exec sleep 1000'; sleep 30",
        pid_file.display()
    );
    let root = tmp.path().join("root");
    set_available(&root, 60);
    let child = bin()
        .args(["--root", root.to_str().unwrap(), "guard", "--json"])
        .args(["--min-available", "50%", "--interval", "100ms", "--"])
        .args(["sh", "-c", &job])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let escaped = read_pids(&[pid_file])[0];
    let _reaper = Reaper(vec![escaped]);
    set_available(&root, 10);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        !gone(escaped),
        "a process outside the job is not guard's to stop"
    );
    assert!(
        err.contains("a tmux server that was already running")
            && err.contains(&escaped.to_string()),
        "{err}"
    );
    let events = String::from_utf8_lossy(&out.stdout);
    let handed = events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "handed_off")
        .unwrap_or_else(|| panic!("no handed_off event in {events}"));
    let pids = handed["pids"].as_array().unwrap();
    assert!(pids.contains(&serde_json::json!(escaped)), "{handed}");
}

#[test]
fn a_signal_sent_to_guard_reaches_every_process_of_the_job_and_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let (child_pid, got) = (tmp.path().join("child"), tmp.path().join("got"));
    // The main process waits on through its own SIGTERM; its child notes the one it receives.
    let script = tmp.path().join("child.sh");
    std::fs::write(
        &script,
        format!(
            "trap 'echo child > {got}; exit 0' TERM\necho $$ > {pid}\nwhile :; do sleep 0.05; done\n",
            got = got.display(),
            pid = child_pid.display()
        ),
    )
    .unwrap();
    let job = format!(
        "trap 'echo main' TERM; sh {} 2>/dev/null & wait; wait",
        script.display()
    );
    let root = tmp.path().join("root");
    set_available(&root, 60);
    let guard = bin()
        .args(["--root", root.to_str().unwrap(), "guard", "--json"])
        .args(["--min-available", "10%", "--interval", "100ms", "--"])
        .args(["sh", "-c", &job])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let child = read_pids(&[child_pid])[0];
    let _reaper = Reaper(vec![child]);
    std::thread::sleep(Duration::from_millis(300));
    let status = Command::new("kill")
        .args(["-TERM", &guard.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = guard.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        std::fs::read_to_string(&got).unwrap_or_default(),
        "child\n",
        "{err}"
    );
    assert!(
        err.contains("received SIGTERM; passed it to the job's"),
        "{err}"
    );
    let events = String::from_utf8_lossy(&out.stdout);
    let relayed = events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "relayed")
        .unwrap_or_else(|| panic!("no relayed event in {events}"));
    assert_eq!(relayed["signal"], "SIGTERM");
    let pids = relayed["pids"].as_array().unwrap();
    assert!(pids.contains(&serde_json::json!(child)), "{relayed}");
}
