//! The minimal baseline for bench/scan.sh: getdents of /proc and of every /proc/PID/fd, and one
//! readlink per fd, nothing else. Prints the number of links read.

fn main() {
    let mut links = 0u64;
    for entry in std::fs::read_dir("/proc").expect("read /proc").flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok() {
                links += 1;
            }
        }
    }
    println!("{links}");
}
