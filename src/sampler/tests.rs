//! The sampler's cadences, driven by a manual clock: nothing here sleeps to make time pass.

use super::*;
use crate::clock::ManualClock;
use std::path::Path;

const XE: &str = "0000:03:00.0";

fn write(base: &Path, rel: &str, text: &str) {
    let path = base.join(rel);
    std::fs::create_dir_all(path.parent().expect("a file under the tree")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn link(base: &Path, rel: &str, target: &str) {
    let path = base.join(rel);
    std::fs::create_dir_all(path.parent().expect("a link under the tree")).expect("mkdir");
    if std::fs::symlink_metadata(&path).is_ok() {
        std::fs::remove_file(&path).expect("unlink");
    }
    std::os::unix::fs::symlink(target, path).expect("symlink");
}

/// A PCI device `slot` driven by xe with DRM minor `minor`, in `runtime_status` `power`.
fn device(base: &Path, slot: &str, minor: &str, power: &str) {
    let dir = format!("sys/devices/pci0000:00/{slot}");
    write(base, &format!("{dir}/vendor"), "0x8086\n");
    write(base, &format!("{dir}/device"), "0xe223\n");
    write(
        base,
        &format!("{dir}/uevent"),
        &format!("DRIVER=xe\nPCI_SLOT_NAME={slot}\n"),
    );
    write(
        base,
        &format!("{dir}/power/runtime_status"),
        &format!("{power}\n"),
    );
    link(
        base,
        &format!("sys/class/drm/{minor}/device"),
        &format!("../../../devices/pci0000:00/{slot}"),
    );
}

/// xe's fdinfo layout (xe_drm_client.c) for client `id`.
fn xe_fdinfo(id: u64) -> String {
    format!(
        "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t1034\ndrm-driver:\txe\n\
         drm-client-id:\t{id}\ndrm-pdev:\t{XE}\ndrm-total-gtt:\t4 MiB\ndrm-resident-gtt:\t4 MiB\n"
    )
}

/// A capture tree with one process (pid 4242) holding fd 5 on card0 of a suspended xe device.
fn asleep_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = dir.path();
    write(
        b,
        "proc/meminfo",
        "MemTotal: 16384000 kB\nMemAvailable: 8192000 kB\n",
    );
    write(b, "proc/vmstat", "nr_free_pages 1000\n");
    write(b, "proc/4242/comm", "python3\n");
    write(b, "proc/4242/cmdline", "python3\0train.py\0");
    write(b, "proc/4242/status", "Name:\tpython3\nPPid:\t1\n");
    link(b, "proc/4242/fd/5", "/dev/dri/card0");
    write(b, "proc/4242/fdinfo/5", &xe_fdinfo(1));
    device(b, XE, "card0", "suspended");
    dir
}

fn sampler(dir: &Path, clock: &Arc<ManualClock>) -> Sampler {
    let root = Root::open(dir).expect("root");
    Sampler::new(root, Scope::All, SamplerOptions::default()).with_clock(clock.clone())
}

/// The client id that the sample read from pid 4242's fd 5.
fn client_id(s: &mut Sampler) -> Option<u64> {
    let snap = s.sample().expect("sample");
    let p = snap.processes.iter().find(|p| p.pid == 4242)?;
    p.drm.iter().find(|d| d.fd == 5)?.info.client_id
}

#[test]
fn a_suspended_devices_fdinfo_is_reread_only_every_asleep_period() {
    let dir = asleep_tree();
    let clock = ManualClock::new();
    let mut s = sampler(dir.path(), &clock);
    assert_eq!(client_id(&mut s), Some(1));
    assert_eq!(s.sample().expect("sample").stats.asleep_devices, vec![XE]);
    // Reading xe fdinfo wakes the GPU: a changed file must not be seen until 30 s have passed.
    write(dir.path(), "proc/4242/fdinfo/5", &xe_fdinfo(2));
    for _ in 0..29 {
        clock.advance(Duration::from_secs(1));
        assert_eq!(client_id(&mut s), Some(1), "re-read before 30 s");
    }
    clock.advance(Duration::from_millis(999));
    assert_eq!(client_id(&mut s), Some(1), "re-read before 30 s");
    clock.advance(Duration::from_millis(1));
    assert_eq!(client_id(&mut s), Some(2), "not re-read after 30 s");
    write(dir.path(), "proc/4242/fdinfo/5", &xe_fdinfo(3));
    clock.advance(Duration::from_secs(1));
    assert_eq!(client_id(&mut s), Some(2), "the 30 s restart at each read");
}

#[test]
fn an_awake_devices_fdinfo_is_read_every_sample() {
    let dir = asleep_tree();
    device(dir.path(), XE, "card0", "active");
    let clock = ManualClock::new();
    let mut s = sampler(dir.path(), &clock);
    assert_eq!(client_id(&mut s), Some(1));
    write(dir.path(), "proc/4242/fdinfo/5", &xe_fdinfo(2));
    assert_eq!(client_id(&mut s), Some(2), "same instant, fresh counters");
}

#[test]
fn devices_are_relisted_every_device_period() {
    let dir = asleep_tree();
    let clock = ManualClock::new();
    let mut s = sampler(dir.path(), &clock);
    let listed = |s: &mut Sampler| s.sample().expect("sample").devices.len();
    assert_eq!(listed(&mut s), 1);
    device(dir.path(), "0000:04:00.0", "card1", "active");
    clock.advance(Duration::from_millis(9_999));
    assert_eq!(listed(&mut s), 1, "sysfs re-listed before 10 s");
    clock.advance(Duration::from_millis(1));
    assert_eq!(listed(&mut s), 2, "sysfs not re-listed after 10 s");
}

#[test]
fn a_device_that_wakes_is_read_at_the_next_device_listing() {
    let dir = asleep_tree();
    let clock = ManualClock::new();
    let mut s = sampler(dir.path(), &clock);
    assert_eq!(client_id(&mut s), Some(1));
    device(dir.path(), XE, "card0", "active");
    write(dir.path(), "proc/4242/fdinfo/5", &xe_fdinfo(2));
    clock.advance(Duration::from_secs(5));
    assert_eq!(client_id(&mut s), Some(1), "still listed asleep");
    clock.advance(Duration::from_secs(5));
    assert_eq!(client_id(&mut s), Some(2), "awake once re-listed");
}

/// A live child that opens one more fd when told to on stdin.
struct Child(std::process::Child);

impl Child {
    fn spawn() -> Child {
        let c = std::process::Command::new("sh")
            .args(["-c", "read x; exec 7</dev/null; read y"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        Child(c)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Waits (on the real process, not the clock) until the child is blocked reading stdin, so
    /// its fd table holds still.
    fn wait_blocked(&self) {
        let wchan = format!("/proc/{}/wchan", self.pid());
        let deadline = Instant::now() + Duration::from_secs(10);
        while !std::fs::read_to_string(&wchan).is_ok_and(|w| w.contains("pipe_read")) {
            assert!(
                Instant::now() < deadline,
                "the child never blocked on stdin"
            );
            std::thread::yield_now();
        }
    }

    /// Makes the child open fd 7 and waits until it has and is blocked again.
    fn open_one_more(&mut self) {
        use std::io::Write;
        let stdin = self.0.stdin.as_mut().expect("piped stdin");
        stdin.write_all(b"\n").expect("tell the child");
        let fd7 = format!("/proc/{}/fd/7", self.pid());
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::symlink_metadata(&fd7).is_err() {
            assert!(Instant::now() < deadline, "the child never opened fd 7");
            std::thread::yield_now();
        }
        self.wait_blocked();
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn fd_counts_are_checked_every_check_period_and_tables_reread_every_rescan_period() {
    let mut child = Child::spawn();
    child.wait_blocked();
    let clock = ManualClock::new();
    let scope = Scope::Pids(BTreeSet::from([child.pid()]));
    let mut s =
        Sampler::new(Root::live(), scope, SamplerOptions::default()).with_clock(clock.clone());
    if !s.fd_count_in_size {
        eprintln!("skipped: this kernel does not report fd counts in st_size (Linux < 6.2)");
        return;
    }
    let mut step = |by_ms: u64| {
        clock.advance(Duration::from_millis(by_ms));
        s.sample().expect("sample").stats.fd_tables_read
    };
    assert_eq!(step(0), 1, "a new process gets a full scan");
    assert_eq!(step(500), 0, "checked before check_period");
    assert_eq!(step(500), 0, "count unchanged at the check");
    child.open_one_more();
    assert_eq!(step(500), 0, "checked before check_period");
    assert_eq!(step(500), 1, "a changed count re-reads the table");
    // The last full read was at t = 2 s; the next rotation is due at 32 s.
    assert_eq!(step(29_000), 0, "rescanned before rescan_period");
    assert_eq!(step(999), 0, "checked before check_period");
    assert_eq!(step(1), 1, "not rescanned after rescan_period");
}

#[test]
fn fresh_options_reread_every_table_at_every_sample() {
    let mut child = Child::spawn();
    child.wait_blocked();
    let clock = ManualClock::new();
    let scope = Scope::Pids(BTreeSet::from([child.pid()]));
    let mut s =
        Sampler::new(Root::live(), scope, SamplerOptions::fresh()).with_clock(clock.clone());
    let reads = |s: &mut Sampler| s.sample().expect("sample").stats.fd_tables_read;
    assert_eq!(reads(&mut s), 1);
    assert_eq!(
        reads(&mut s),
        1,
        "the clock has not moved, the table is still re-read"
    );
    child.open_one_more();
    assert_eq!(reads(&mut s), 1);
}
