//! The rows `top`'s panes show: processes in the snapshot's order (the ledger's [`SortKey`]),
//! filtered and optionally one per process; findings folded into groups as the snapshot does.

use super::model::Model;
use crate::findings::group::groups;
use crate::findings::{Finding, Severity};
use crate::ledger::engines::busiest_label;
use crate::ledger::{Ledger, MemClass, ProcessRow};
use crate::outputs::safe_text::{display_safe, safe};
use crate::units::human_bytes;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// One row of the process table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcRow {
    /// Pid.
    pub pid: u32,
    /// Rank, when the process has one.
    pub rank: Option<u32>,
    /// Name, escaped for the terminal.
    pub comm: String,
    /// The device, `*` marking the home device; grouped: the home (or first) device and how many
    /// others.
    pub device: String,
    /// Device-local resident bytes.
    pub local: u64,
    /// Host-class resident bytes.
    pub host: u64,
    /// Busiest engine class since the last sample (`ccs 42%`), `-` where none is known.
    pub busy: String,
    /// Command line, escaped for the terminal.
    pub command: String,
}

/// Whether `p` matches the filter text: in its name, pid or command line, ignoring case.
fn matches(p: &ProcessRow, filter: &str) -> bool {
    if filter.is_empty() {
        return true;
    }
    let want = filter.to_lowercase();
    p.comm.to_lowercase().contains(&want)
        || p.pid.to_string().contains(&want)
        || p.cmdline.join(" ").to_lowercase().contains(&want)
}

fn device_cell(p: &ProcessRow, dev: &str) -> String {
    let home = p.home_device.as_deref() == Some(dev);
    format!("{}{}", display_safe(dev), if home { " *" } else { "" })
}

/// The table's rows for `m`'s filter, sort and grouping, and how many processes they show.
pub fn process_rows(l: &Ledger, m: &Model) -> (Vec<ProcRow>, usize) {
    let mut procs: Vec<ProcessRow> = l
        .processes
        .iter()
        .filter(|p| !p.usage.is_empty() && matches(p, &m.filter))
        .cloned()
        .collect();
    m.sort.sort(&mut procs);
    let mut rows = Vec::new();
    for p in &procs {
        let row = |device: String, on: Option<&str>, local: u64, host: u64| ProcRow {
            pid: p.pid,
            rank: p.rank,
            comm: safe(&p.comm),
            device,
            local,
            host,
            busy: safe(&busiest_label(&p.engines, on)),
            command: safe(&p.cmdline.join(" ")),
        };
        let devices = p.devices();
        if m.grouped {
            let sum = |class| {
                devices
                    .iter()
                    .map(|d| p.resident(d, class))
                    .fold(0, u64::saturating_add)
            };
            let first = p
                .home_device
                .as_deref()
                .filter(|h| devices.contains(h))
                .or_else(|| devices.first().copied())
                .unwrap_or("-");
            let mut cell = device_cell(p, first);
            if devices.len() > 1 {
                cell.push_str(&format!(" +{}", devices.len() - 1));
            }
            rows.push(row(cell, None, sum(MemClass::Device), sum(MemClass::Host)));
        } else {
            for d in devices {
                rows.push(row(
                    device_cell(p, d),
                    Some(d),
                    p.resident(d, MemClass::Device),
                    p.resident(d, MemClass::Host),
                ));
            }
        }
    }
    (rows, procs.len())
}

fn severity_style(s: Severity) -> Style {
    let color = match s {
        Severity::Critical => Color::Red,
        Severity::Warning => Color::Yellow,
        Severity::Info => Color::Gray,
    };
    Style::default().fg(color).add_modifier(Modifier::BOLD)
}

fn head(s: Severity, kind: &str) -> Span<'static> {
    Span::styled(
        format!("{:<8} {kind}: ", s.as_str().to_uppercase()),
        severity_style(s),
    )
}

/// One line per finding, or per group of many findings of one kind and severity (as the
/// snapshot folds them) unless `each`, in the library's order: most severe first.
pub fn finding_lines(findings: &[Finding], each: bool) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for g in groups(findings) {
        if g.folded() && !each {
            let (pids, peers) = g.shape();
            let (median, total) = g.bytes();
            let shape = match (pids, peers) {
                (0, _) => String::new(),
                (p, 0) => format!(", {p} processes"),
                (p, q) => format!(", {p} processes × {q} peers"),
            };
            out.push(Line::from(vec![
                head(g.severity, g.kind.as_str()),
                Span::raw(format!(
                    "{} findings{shape}, {} each (median), {} in all; v lists each",
                    g.findings.len(),
                    human_bytes(median),
                    human_bytes(total)
                )),
            ]));
            continue;
        }
        for x in g.findings {
            out.push(Line::from(vec![
                head(x.severity, x.kind.as_str()),
                Span::raw(safe(&x.message)),
            ]));
        }
    }
    out
}
