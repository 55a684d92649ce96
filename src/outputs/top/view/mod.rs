//! Drawing one frame of `top`: the panes scroll as the [`Model`] says and count what they hide.

use super::model::{Model, Pane};
use super::rows::{finding_lines, process_rows};
use super::State;
use crate::ledger::MemClass;
use crate::outputs::safe_text::display_safe;
use crate::outputs::table::driver_held_line;
use crate::sources::drm_devices::DeviceInfo;
use crate::units::human_bytes;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Gauge, Paragraph, Row, Table, Wrap};
use ratatui::Frame;
use std::collections::BTreeMap;

mod help;
mod history;

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 / whole as f64).clamp(0.0, 1.0)
    }
}

/// Cells of a device's VRAM bar.
const BAR: usize = 32;

/// One device: its VRAM held by processes drawn against the capacity the driver, NVML or dmem
/// states. Without a capacity there is no bar: one scaled to anything else would look full.
fn device_line<'a>(d: &DeviceInfo, held: u64, dmem: &BTreeMap<String, u64>) -> Line<'a> {
    let head = Span::raw(format!(
        "{:<14} {:<6} ",
        display_safe(&d.id),
        display_safe(d.driver.as_deref().unwrap_or("-"))
    ));
    match d.local_capacity(dmem) {
        Some(cap) => {
            let filled = (ratio(held, cap) * BAR as f64).round() as usize;
            Line::from(vec![
                head,
                Span::styled("█".repeat(filled), Style::default().fg(Color::Cyan)),
                Span::raw("░".repeat(BAR - filled)),
                Span::raw(format!(
                    " VRAM held {} of {}",
                    human_bytes(held),
                    human_bytes(cap)
                )),
            ])
        }
        None => Line::from(vec![
            head,
            Span::styled(
                format!("{:<BAR$}", "no capacity"),
                Style::default().fg(Color::DarkGray),
            ),
            Span::raw(format!(" VRAM held {}", human_bytes(held))),
        ]),
    }
}

/// Rows a line takes when wrapped at word boundaries to `width` columns (greedy, as the
/// paragraph wraps; a word longer than a row is cut).
fn wrapped_rows(line: &Line, width: usize) -> usize {
    let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
    let width = width.max(1);
    let mut rows = 1;
    let mut used = 0;
    for word in text.split_whitespace() {
        let w = word.chars().count();
        let need = if used == 0 { w } else { used + 1 + w };
        if need <= width {
            used = need;
        } else if w <= width {
            rows += 1;
            used = w;
        } else {
            rows += (used > 0) as usize + (w - 1) / width;
            used = (w - 1) % width + 1;
        }
    }
    rows
}

/// A pane's frame: its title, the focus drawn in colour, and on the bottom border the rows it
/// hides above and below (never hidden silently).
fn pane_block(m: &Model, pane: Pane, title: String) -> Block<'static> {
    let focused = m.focus == pane;
    let style = if focused {
        Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD)
    } else {
        Style::default()
    };
    Block::default()
        .borders(Borders::ALL)
        .border_style(style)
        .title(Span::styled(title, style))
}

/// `+3 more above · +57 more below`, for the bottom border; empty when nothing is hidden.
fn hidden(above: usize, below: usize) -> Option<Line<'static>> {
    let mut parts = Vec::new();
    if above > 0 {
        parts.push(format!("+{above} more above"));
    }
    if below > 0 {
        parts.push(format!("+{below} more below"));
    }
    (!parts.is_empty()).then(|| {
        Line::styled(
            format!(" {} ", parts.join(" · ")),
            Style::default().add_modifier(Modifier::BOLD),
        )
        .right_aligned()
    })
}

/// Renders `block` with the hidden-row counts of `pane` on its bottom border.
fn frame_pane(f: &mut Frame, area: Rect, m: &Model, pane: Pane, block: Block<'static>) {
    let s = m.scroll(pane);
    let block = match hidden(s.above(), s.below()) {
        Some(line) => block.title_bottom(line),
        None => block,
    };
    f.render_widget(block, area);
}

/// Draws the devices pane; returns the device at its top (the one the history follows).
fn devices_pane(f: &mut Frame, area: Rect, s: &State, m: &mut Model) -> Option<String> {
    let l = &s.ledger;
    let block = pane_block(m, Pane::Devices, format!(" devices ({}) ", l.devices.len()));
    let inner = block.inner(area);
    let page = (inner.height as usize).min(l.devices.len());
    m.fit(Pane::Devices, l.devices.len(), page);
    frame_pane(f, area, m, Pane::Devices, block);
    if l.devices.is_empty() {
        f.render_widget(Paragraph::new("no GPU device"), inner);
        return None;
    }
    let local_of = |dev: &str| -> u64 {
        l.processes
            .iter()
            .map(|p| p.resident(dev, MemClass::Device))
            .fold(0, u64::saturating_add)
    };
    let lines: Vec<Line> = l
        .devices
        .iter()
        .skip(m.scroll(Pane::Devices).offset)
        .take(page)
        .map(|d| device_line(d, local_of(&d.id), &l.dmem_capacity))
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
    let top = l.devices.get(m.scroll(Pane::Devices).offset);
    top.map(|d| d.id.clone())
}

/// Table width from which the COMMAND column is shown.
const COMMAND_FROM: u16 = 96;

/// Draws the processes pane; returns the pid at its top (the one the history follows).
fn processes_pane(f: &mut Frame, area: Rect, s: &State, m: &mut Model) -> Option<u32> {
    let (rows, shown) = process_rows(&s.ledger, m);
    let total = s
        .ledger
        .processes
        .iter()
        .filter(|p| !p.usage.is_empty())
        .count();
    let count = if m.filter.is_empty() {
        format!("{total}")
    } else {
        format!("{shown} of {total} match \"{}\"", display_safe(&m.filter))
    };
    let shape = if m.grouped {
        "per process"
    } else {
        "per process × device"
    };
    let title = format!(" processes {count} (sorted by {}, {shape}) ", m.sort.name());
    let block = pane_block(m, Pane::Processes, title);
    let inner = block.inner(area);
    let page = (inner.height as usize).saturating_sub(1).min(rows.len());
    m.fit(Pane::Processes, rows.len(), page);
    frame_pane(f, area, m, Pane::Processes, block);
    let offset = m.scroll(Pane::Processes).offset;
    let top = rows.get(offset).map(|r| r.pid);
    let shown = rows.iter().skip(offset).take(page).map(|r| {
        Row::new(vec![
            r.pid.to_string(),
            r.rank.map(|x| x.to_string()).unwrap_or_else(|| "-".into()),
            r.comm.clone(),
            r.device.clone(),
            human_bytes(r.local),
            human_bytes(r.host),
            r.busy.clone(),
            r.command.clone(),
        ])
    });
    // The command line only where it has room to say something (not at 80 columns).
    let command = if inner.width >= COMMAND_FROM {
        Constraint::Fill(1)
    } else {
        Constraint::Length(0)
    };
    let table = Table::new(
        shown,
        [
            Constraint::Length(7),
            Constraint::Length(5),
            Constraint::Length(15),
            Constraint::Length(if m.grouped { 19 } else { 14 }),
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(8),
            command,
        ],
    )
    .header(
        Row::new([
            "PID",
            "RANK",
            "COMM",
            "DEVICE (*home)",
            "LOCAL",
            "HOST",
            "BUSY",
            "COMMAND",
        ])
        .style(Style::default().add_modifier(Modifier::BOLD)),
    );
    f.render_widget(table, inner);
    top
}

/// The findings from the scroll offset on, each in rows of its own, as many as fit; the first
/// is drawn even when cut (an empty pane would hide the worst one).
fn findings_pane(
    f: &mut Frame,
    area: Rect,
    lines: Vec<Line<'static>>,
    count: usize,
    m: &mut Model,
) {
    let title = if lines.len() < count {
        format!(" findings {count} (folded by kind; v lists each) ")
    } else {
        format!(" findings {count} ")
    };
    let block = pane_block(m, Pane::Findings, title);
    let inner = block.inner(area);
    let offset = m.scroll(Pane::Findings).offset.min(lines.len());
    let mut y = inner.y;
    let bottom = inner.y + inner.height;
    let mut drawn = Vec::new();
    for (i, line) in lines.into_iter().enumerate().skip(offset) {
        let need = wrapped_rows(&line, inner.width as usize) as u16;
        let room = bottom.saturating_sub(y);
        if room == 0 || (need > room && i > offset) {
            break;
        }
        let height = need.min(room);
        drawn.push((Rect { y, height, ..inner }, line));
        y += height;
    }
    let len = m.scroll(Pane::Findings).len;
    m.fit(Pane::Findings, len, drawn.len());
    frame_pane(f, area, m, Pane::Findings, block);
    if len == 0 {
        f.render_widget(Paragraph::new("no findings"), inner);
    }
    for (rect, line) in drawn {
        f.render_widget(Paragraph::new(line).wrap(Wrap { trim: true }), rect);
    }
}

/// Host memory as a bar: boxed on tall terminals, one row on short ones.
fn host_gauge(f: &mut Frame, area: Rect, s: &State) {
    let h = &s.ledger.host;
    let total = h.mem_total.unwrap_or(0);
    let avail = h.mem_available.unwrap_or(0);
    let boxed = area.height >= 3;
    let used = format!(
        "used {} / {}",
        human_bytes(total.saturating_sub(avail)),
        human_bytes(total)
    );
    let held = h.driver_held();
    let short_held = held.map_or("-".into(), |d| human_bytes(d.bytes));
    let prefix = if boxed { "" } else { "host memory: " };
    // The longest that fits: the driver-held breakdown goes first, then the prefix.
    let width = area.width.saturating_sub(if boxed { 2 } else { 0 }) as usize;
    let label = [
        format!(
            "{prefix}{used}   available {}   {}",
            human_bytes(avail),
            driver_held_line(held)
        ),
        format!(
            "{prefix}{used}   available {}   driver-held {short_held}",
            human_bytes(avail)
        ),
        format!(
            "{used}  available {}  driver-held {short_held}",
            human_bytes(avail)
        ),
    ]
    .into_iter()
    .find(|l| l.chars().count() <= width)
    .unwrap_or_else(|| format!("{used}  driver-held {short_held}"));
    let low = (avail as f64) < total as f64 * 0.1;
    let gauge = Gauge::default()
        .gauge_style(Style::default().fg(if low { Color::Red } else { Color::Green }))
        .ratio(ratio(total.saturating_sub(avail), total))
        .label(label);
    let gauge = if boxed {
        gauge.block(
            Block::default()
                .borders(Borders::ALL)
                .title(" host memory "),
        )
    } else {
        gauge
    };
    f.render_widget(gauge, area);
}

/// The history sparklines ([`history::lines`]): boxed with their legend on tall terminals, bare
/// rows on short ones.
fn history_pane(f: &mut Frame, area: Rect, s: &State, device: Option<&str>, pid: Option<u32>) {
    let boxed = area.height >= 5;
    let block = Block::default().borders(Borders::ALL).title(
        " history: top row of devices and processes; host = host-class, local = device-local ",
    );
    let inner = if boxed { block.inner(area) } else { area };
    let text: Vec<Line> = history::lines(&s.history, device, pid, inner.width as usize)
        .into_iter()
        .map(Line::raw)
        .collect();
    let p = Paragraph::new(text).style(Style::default().fg(Color::Cyan));
    if boxed {
        f.render_widget(p.block(block), area);
    } else {
        f.render_widget(p, area);
    }
}

/// The last row: the filter being typed or kept, else the main keys.
fn key_line(m: &Model) -> Line<'static> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    if m.editing {
        return Line::from(vec![
            Span::styled(format!(" filter: {}▏", display_safe(&m.filter)), bold),
            Span::raw("   Enter keeps it, Esc clears it"),
        ]);
    }
    let mut spans = Vec::new();
    if !m.filter.is_empty() {
        spans.push(Span::styled(
            format!(" filter: {} ", display_safe(&m.filter)),
            bold,
        ));
        spans.push(Span::raw("(Esc clears) "));
    }
    spans.push(Span::raw(
        " q quit  ? help  Tab pane  ↑↓ PgUp PgDn Home End  / filter  g group  s sort",
    ));
    Line::from(spans)
}

/// Heights of the panes above the key line.
struct Heights {
    host: u16,
    devices: u16,
    findings: u16,
    history: u16,
}

/// Shares `height` rows: the host box and the boxed sparklines only on tall terminals (bare
/// sparkline rows from 20 rows), devices and findings as many rows as they need up to a share
/// each, the processes the rest.
fn heights(height: u16, devices: usize, finding_rows: usize) -> Heights {
    let tall = height >= 34;
    let (host, history) = match height {
        34.. => (3, 5),
        20.. => (1, 3),
        _ => (1, 0),
    };
    let avail = height.saturating_sub(host + 1 + history);
    let cap = |n: usize, share: u16| (n.max(1) as u16).min(share.max(2)) + 2;
    Heights {
        host,
        devices: cap(devices, avail / if tall { 5 } else { 6 }),
        findings: cap(finding_rows, avail / 4),
        history,
    }
}

/// Draws the frame and tells `m` what each pane showed.
pub fn draw(f: &mut Frame, s: &State, m: &mut Model) {
    let lines = finding_lines(&s.findings, m.each);
    m.fit(Pane::Findings, lines.len(), m.scroll(Pane::Findings).page);
    let width = f.area().width.saturating_sub(2) as usize;
    // Each line takes a row at least: more lines than rows never change the share.
    let finding_rows = lines
        .iter()
        .take(f.area().height as usize)
        .map(|l| wrapped_rows(l, width))
        .sum();
    let h = heights(f.area().height, s.ledger.devices.len(), finding_rows);
    let areas = Layout::vertical([
        Constraint::Length(h.host),
        Constraint::Length(h.devices),
        Constraint::Min(3),
        Constraint::Length(h.findings),
        Constraint::Length(h.history),
        Constraint::Length(1),
    ])
    .split(f.area());
    host_gauge(f, areas[0], s);
    let device = devices_pane(f, areas[1], s, m);
    let pid = processes_pane(f, areas[2], s, m);
    findings_pane(f, areas[3], lines, s.findings.len(), m);
    if h.history > 0 {
        history_pane(f, areas[4], s, device.as_deref(), pid);
    }
    f.render_widget(Paragraph::new(key_line(m)), areas[5]);
    if m.help {
        let area = help::area(f.area());
        f.render_widget(Clear, area);
        f.render_widget(help::widget(), area);
    }
}

#[cfg(test)]
mod tests;
