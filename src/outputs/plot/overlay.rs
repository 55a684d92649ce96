//! The small multiples: one chart per rank × device with A and B overlaid, in one grid per memory
//! class, every chart of a grid on the same axes.

use super::chart::{chart, Line, Scale};
use super::page::{esc, Section};
use super::series::{host_line, line, GIB};
use super::Run;
use crate::ledger::MemClass;
use crate::timeline::ranks::{DevicePair, RankPair, Role};
use crate::units::human_bytes;
use std::fmt::Write;

/// A chart's caption: who, the device's role and its slot in each run.
fn caption(pair: &RankPair, dev: &DevicePair, runs: usize) -> String {
    let role = match dev.role {
        Role::Home => "home".to_string(),
        Role::Peer(i) => format!("peer {}", i + 1),
    };
    let slots = match &dev.slots {
        [Some(a), Some(b)] if a == b => a.clone(),
        [Some(a), None] if runs == 1 => a.clone(),
        [a, b] => format!(
            "A {} · B {}",
            a.as_deref().unwrap_or("none"),
            b.as_deref().unwrap_or("none")
        ),
    };
    let pids: Vec<String> = pair
        .sides
        .iter()
        .zip(["A", "B"])
        .filter_map(|(s, r)| Some(format!("{r} pid {}", s.as_ref()?.pid)))
        .collect();
    format!("{} · {role} {slots} ({})", pair.who, pids.join(", "))
}

/// The lines of one rank × device × class, one per run that held any of it.
fn lines_of(runs: &[Run], pair: &RankPair, dev: &DevicePair, class: MemClass) -> Vec<Line> {
    runs.iter()
        .enumerate()
        .filter_map(|(i, run)| {
            let pid = pair.sides.get(i)?.as_ref()?.pid;
            let slot = dev.slots.get(i)?.as_deref()?;
            line(i, run.rec, &run.summary, (pid, slot), class)
        })
        .collect()
}

/// Charts whose lines all stay under this share of the grid's scale are left out: on a shared
/// scale they are flat lines at zero (a rank's few MiB of device-local memory on each peer card),
/// and with 8 ranks they would be 56 of the 64 charts.
const FAINT_SHARE: f64 = 0.01;

/// The grid of one memory class: charts sharing one scale, and a note on what was left out.
pub fn class_section(runs: &[Run], pairs: &[RankPair], class: MemClass) -> Section {
    let (id, name, what) = match class {
        MemClass::Device => ("device-local", "Device-local memory (VRAM)", "device-local"),
        _ => (
            "host-class",
            "Host-class memory (GTT / system) by device",
            "host-class",
        ),
    };
    let charts: Vec<(String, Vec<Line>)> = pairs
        .iter()
        .flat_map(|p| p.devices.iter().map(move |d| (p, d)))
        .map(|(p, d)| (caption(p, d, runs.len()), lines_of(runs, p, d, class)))
        .collect();
    let scale = Scale::fitting(charts.iter().flat_map(|(_, l)| l), "GiB");
    let floor = scale.y_max * FAINT_SHARE;
    let (drawn, faint): (Vec<_>, Vec<_>) = charts
        .into_iter()
        .partition(|(_, l)| l.iter().flat_map(|l| &l.points).any(|p| p.1 >= floor));
    let mut body = format!(
        "<p class=\"meta\">Resident {what} bytes per process and device; every chart on one scale \
(0 to {:.1} GiB) so heights compare.",
        scale.y_max
    );
    body.push_str("</p>\n");
    if !faint.is_empty() {
        let names: Vec<String> = faint.iter().map(|(title, _)| esc(title)).collect();
        let _ = writeln!(
            body,
            "<details><summary>{} rank × device pairs held less than {} of {what} memory in \
every run and are not drawn</summary><p class=\"meta\">{}</p></details>",
            faint.len(),
            human_bytes((floor * GIB) as u64),
            names.join("; ")
        );
    }
    body.push_str("<div class=\"grid\">\n");
    for (title, lines) in &drawn {
        let _ = writeln!(
            body,
            "<figure><figcaption>{}</figcaption>{}</figure>",
            esc(title),
            chart(title, lines, scale)
        );
    }
    body.push_str("</div>\n");
    Section {
        id,
        title: name.into(),
        body,
    }
}

/// MemAvailable and driver-held host memory, A and B overlaid, on one scale.
pub fn host_section(runs: &[Run]) -> Section {
    let charts: Vec<(&str, Vec<Line>)> =
        [("MemAvailable", false), ("driver-held host memory", true)]
            .into_iter()
            .map(|(title, held)| {
                let lines = runs
                    .iter()
                    .enumerate()
                    .map(|(i, r)| host_line(i, r.rec, held))
                    .collect();
                (title, lines)
            })
            .collect();
    let scale = Scale::fitting(charts.iter().flat_map(|(_, l)| l), "GiB");
    let mut body = String::from("<div class=\"grid\">\n");
    for (title, lines) in &charts {
        let _ = writeln!(
            body,
            "<figure><figcaption>{title}</figcaption>{}</figure>",
            chart(title, lines, scale)
        );
    }
    body.push_str("</div>\n");
    Section {
        id: "host",
        title: "Host memory".into(),
        body,
    }
}
