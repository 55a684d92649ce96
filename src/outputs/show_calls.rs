//! `show`'s "by call" table: per process × API kind × device, the calls the job's tracer saw,
//! the bytes live at their peak, the largest single call and the failed calls with their error.

use super::text_table::{render_fit, Align};
use super::wrap;
use crate::recording::CallTable;
use crate::units::human_bytes;

/// The "by call" section of a traced recording, fitted to `width` columns; a line saying why
/// when tracing was off; nothing when no process of the job loaded the tracer (a job that never
/// used CUDA).
pub fn render_calls(t: &CallTable, width: usize) -> String {
    if let Some(why) = t.state.strip_prefix("off: ") {
        let line = format!("By call: not traced ({why})");
        return format!("\n{}", wrap::paragraph("", &line, width));
    }
    let ze_off = t
        .level_zero
        .as_deref()
        .and_then(crate::recording::trace_ze::off_worth_saying);
    if t.started.is_empty() && t.off.is_empty() && t.rows.is_empty() {
        return match ze_off {
            Some(why) => {
                let line = format!("By call: Level Zero not traced ({why})");
                format!("\n{}", wrap::paragraph("", &line, width))
            }
            None => String::new(),
        };
    }
    let mut head = format!(
        "By call (API-level trace; {} process{} traced",
        t.started.len(),
        if t.started.len() == 1 { "" } else { "es" }
    );
    if t.dropped > 0 || t.not_stored > 0 {
        head.push_str(&format!(
            "; {} events dropped, {} not stored: the figures below are low",
            t.dropped, t.not_stored
        ));
    }
    if t.foreign > 0 {
        head.push_str(&format!(
            "; {} events from processes outside the job refused",
            t.foreign
        ));
    }
    head.push(')');
    let mut out = format!("\n{}", wrap::paragraph("", &head, width));
    if let Some(why) = ze_off {
        let line = format!("Level Zero not traced: {why}");
        out.push_str(&wrap::paragraph("  ", &line, width));
    }
    if t.skipped_peer_residency > 0 {
        let line = format!(
            "{} peer residency call{} answered by gpuledger's interposer without reaching the driver (skip-peer-residency)",
            t.skipped_peer_residency,
            if t.skipped_peer_residency == 1 { "" } else { "s" }
        );
        out.push_str(&wrap::paragraph("  ", &line, width));
    }
    for (pid, why) in &t.off {
        let line = format!("pid {pid}: tracing off: {why}");
        out.push_str(&wrap::paragraph("  ", &line, width));
    }
    if t.rows.is_empty() {
        out.push_str("  no memory calls traced\n");
        return out;
    }
    let headers = [
        ("PID", Align::Right),
        ("API", Align::Wrap),
        ("DEVICE", Align::Left),
        ("CALLS", Align::Right),
        ("LIVE AT PEAK", Align::Right),
        ("LARGEST CALL", Align::Right),
        ("LIVE AT END", Align::Right),
        ("FAILED", Align::Fold),
    ];
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            let failed: Vec<String> = r.failed.iter().map(|(e, n)| format!("{n} × {e}")).collect();
            vec![
                r.pid.to_string(),
                r.api.name().to_string(),
                r.device.map_or("host".into(), |d| d.to_string()),
                r.calls.to_string(),
                human_bytes(r.peak_live),
                human_bytes(r.largest),
                human_bytes(r.live_at_end),
                if failed.is_empty() {
                    "-".into()
                } else {
                    failed.join(", ")
                },
            ]
        })
        .collect();
    out.push_str(&render_fit("  ", &headers, &rows, width));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::CallRow;
    use gpuledger_trace_wire::{Api, Platform};

    fn row(api: Api, device: Option<u32>, failed: Vec<(String, u64)>) -> CallRow {
        CallRow {
            pid: 42,
            platform: Platform::Cuda,
            api,
            device,
            calls: 3,
            peak_live: 2 << 30,
            live_at_end: 0,
            largest: 2 << 30,
            large_allocs: (0, 0),
            pow2_allocs: (0, 0),
            failed,
            out_of_memory: 0,
            first_out_of_memory: None,
            live: Vec::new(),
        }
    }

    #[test]
    fn shows_kind_device_peak_and_failures() {
        let t = CallTable {
            state: "on: /x/libgpuledger_tracer.so".into(),
            rows: vec![
                row(Api::Registered, None, vec![]),
                row(
                    Api::Vmm,
                    Some(0),
                    vec![("CUDA_ERROR_NOT_PERMITTED (800)".into(), 1)],
                ),
            ],
            started: vec![42],
            ..Default::default()
        };
        let s = render_calls(&t, wrap::DEFAULT_WIDTH);
        assert!(s.contains("1 process traced"), "{s}");
        let reg = s.lines().find(|l| l.contains("registered")).unwrap();
        assert!(reg.contains("host") && reg.contains("2.0 GiB"), "{reg}");
        // At 80 columns the failures leave the table for a line under their row.
        let vmm = s.split("vmm").nth(1).unwrap().lines().nth(1).unwrap();
        assert_eq!(vmm, "    FAILED 1 × CUDA_ERROR_NOT_PERMITTED (800)", "{s}");
        assert!(s.lines().all(|l| l.chars().count() <= 80), "{s}");
    }

    #[test]
    fn off_and_drops_are_said() {
        let off = CallTable {
            state: "off: --no-trace".into(),
            ..Default::default()
        };
        assert_eq!(
            render_calls(&off, wrap::DEFAULT_WIDTH),
            "\nBy call: not traced (--no-trace)\n"
        );
        let dropped = CallTable {
            state: "on: lib".into(),
            started: vec![1],
            dropped: 7,
            ..Default::default()
        };
        assert!(render_calls(&dropped, wrap::DEFAULT_WIDTH).contains("7 events dropped"));
        let skipped = CallTable {
            state: "on: lib".into(),
            started: vec![1],
            skipped_peer_residency: 2,
            ..Default::default()
        };
        let s = render_calls(&skipped, wrap::DEFAULT_WIDTH);
        assert!(
            s.contains("2 peer residency calls answered by gpuledger's interposer"),
            "{s}"
        );
        assert!(s.lines().all(|l| l.chars().count() <= 80), "{s}");
        let no_cuda = CallTable {
            state: "on: lib".into(),
            ..Default::default()
        };
        assert_eq!(render_calls(&no_cuda, wrap::DEFAULT_WIDTH), "");
    }
}
