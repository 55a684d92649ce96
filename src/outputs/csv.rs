//! `--format csv`: one row per process × device × region, like `nvidia-smi --format=csv,nounits`:
//! a header row, bytes as plain integers, an empty field where the kernel gave no number (never
//! 0). Quoting is the `csv` crate's: comm and cmdline come from the machine and may hold anything.
//! Text fields also go through [`safe`]: a CSV is read in a terminal (`cat`, `column`) as often as
//! in a spreadsheet, so ESC and other control bytes are written visibly (`\e`, `\n`), never raw.

use crate::ledger::{Ledger, UsageSource};
use crate::outputs::json::rfc3339;
use crate::outputs::safe_text::safe;

/// The header row, in column order.
pub const HEADER: [&str; 16] = [
    "time",
    "pid",
    "rank",
    "local_rank",
    "comm",
    "device",
    "home",
    "region",
    "class",
    "source",
    "total",
    "resident",
    "shared",
    "purgeable",
    "active",
    "cmdline",
];

/// Writing the CSV failed (it goes to memory, so only an encoding fault of the writer).
#[derive(Debug, thiserror::Error)]
#[error("cannot write CSV")]
pub struct CsvError(#[from] pub csv::Error);

/// The rows of one snapshot, with the header row when `header` is set (a `--loop` prints it
/// once, before the first snapshot).
pub fn render(ledger: &Ledger, header: bool) -> Result<String, CsvError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    if header {
        w.write_record(HEADER)?;
    }
    let time = rfc3339(ledger.time_ms);
    let num = |v: Option<u64>| v.map(|n| n.to_string()).unwrap_or_default();
    for p in &ledger.processes {
        let cmdline = safe(&p.cmdline.join(" "));
        let comm = safe(&p.comm);
        for u in &p.usage {
            let home = p.home_device.as_deref() == Some(u.device.as_str());
            w.write_record([
                time.as_str(),
                &p.pid.to_string(),
                &num(p.rank.map(u64::from)),
                &num(p.local_rank.map(u64::from)),
                &comm,
                &safe(&u.device),
                if home { "yes" } else { "no" },
                &safe(&u.region),
                u.class.as_str(),
                source_name(u.source),
                &num(u.total),
                &num(u.resident),
                &num(u.shared),
                &num(u.purgeable),
                &num(u.active),
                &cmdline,
            ])?;
        }
    }
    let bytes = w
        .into_inner()
        .map_err(|e| CsvError(csv::Error::from(e.into_error())))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The source as the JSON document names it.
fn source_name(s: UsageSource) -> &'static str {
    match s {
        UsageSource::DrmFdinfo => "drm_fdinfo",
        UsageSource::Kfd => "kfd",
        UsageSource::Nvml => "nvml",
        UsageSource::Smaps => "smaps",
        UsageSource::ApiTrace => "api_trace",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::{MemClass, ProcessRow, Usage};

    #[test]
    fn hostile_names_are_quoted_and_absent_numbers_empty() {
        let mut l = Ledger::default();
        l.processes.push(ProcessRow {
            pid: 7,
            nspid: vec![],
            comm: "a,\"b\"\nc".into(),
            cmdline: vec!["x".into(), "y,z\u{1b}[2J".into()],
            rank: Some(3),
            local_rank: None,
            home_device: Some("0000:03:00.0".into()),
            usage: vec![Usage {
                device: "0000:03:00.0".into(),
                region: "vram0".into(),
                class: MemClass::Device,
                source: UsageSource::DrmFdinfo,
                total: Some(4096),
                resident: Some(1024),
                shared: None,
                purgeable: None,
                active: Some(0),
            }],
            env: Default::default(),
            shared_with_others: vec![],
            has_nvidia_fds: false,
            has_kfd_fd: false,
            cgroup: None,
            labels: Default::default(),
            engines: Vec::new(),
        });
        let out = render(&l, true).unwrap();
        let mut r = csv::Reader::from_reader(out.as_bytes());
        assert_eq!(r.headers().unwrap().iter().collect::<Vec<_>>(), HEADER);
        let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 1);
        let row: Vec<&str> = rows[0].iter().collect();
        assert_eq!(
            row[1..],
            [
                "7",
                "3",
                "",
                "a,\"b\"\\nc",
                "0000:03:00.0",
                "yes",
                "vram0",
                "device",
                "drm_fdinfo",
                "4096",
                "1024",
                "",
                "",
                "0",
                "x y,z\\e[2J"
            ]
        );
        assert!(!out.bytes().any(|b| b == 0x1b), "raw ESC in {out:?}");
        assert!(!render(&l, false).unwrap().starts_with("time,"));
    }
}
