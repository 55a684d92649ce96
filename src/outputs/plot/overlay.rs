//! The small multiples: one chart per rank × device with A and B overlaid, in one grid per memory
//! class, every chart of a grid on the same axes.

use super::chart::{chart, Line, Scale};
use super::page::{esc, Section};
use super::series::{host_line, line};
use super::Run;
use crate::ledger::MemClass;
use crate::timeline::ranks::{DevicePair, RankPair, Role};
use std::fmt::Write;

/// A chart's caption: who, the device's role and its slot in each run.
fn caption(pair: &RankPair, dev: &DevicePair) -> String {
    let role = match dev.role {
        Role::Home => "home".to_string(),
        Role::Peer(i) => format!("peer {}", i + 1),
    };
    let slots = match &dev.slots {
        [Some(a), Some(b)] if a == b => a.clone(),
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

/// The grid of one memory class: charts sharing one scale, and a note on what was left out.
pub fn class_section(runs: &[Run], pairs: &[RankPair], class: MemClass) -> Section {
    let (id, name, what) = match class {
        MemClass::Device => ("device-local", "Device-local memory (VRAM)", "device-local"),
        _ => ("host-class", "Host-class memory (GTT / system) by device", "host-class"),
    };
    let charts: Vec<(String, Vec<Line>)> = pairs
        .iter()
        .flat_map(|p| p.devices.iter().map(move |d| (p, d)))
        .map(|(p, d)| (caption(p, d), lines_of(runs, p, d, class)))
        .collect();
    let (drawn, empty): (Vec<_>, Vec<_>) = charts.into_iter().partition(|(_, l)| !l.is_empty());
    let scale = Scale::fitting(drawn.iter().flat_map(|(_, l)| l), "GiB");
    let mut body = format!(
        "<p class=\"meta\">Resident {what} bytes per process and device; every chart on one scale \
(0 to {:.1} GiB) so heights compare.",
        scale.y_max
    );
    if !empty.is_empty() {
        let _ = write!(
            body,
            " {} rank × device pairs held no {what} memory in any run and are not drawn.",
            empty.len()
        );
    }
    body.push_str("</p>\n<div class=\"grid\">\n");
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
    let charts: Vec<(&str, Vec<Line>)> = [("MemAvailable", false), ("driver-held host memory", true)]
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
