//! The `?` overlay: every key of `top`.

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

/// The keys and what they do.
const KEYS: [(&str, &str); 13] = [
    ("↑ ↓", "scroll the focused pane one row"),
    ("PgUp PgDn", "scroll one page"),
    ("Home End", "first / last rows"),
    (
        "Tab S-Tab",
        "next / previous pane: devices, processes, findings",
    ),
    (
        "",
        "(the history follows the top row of devices and processes)",
    ),
    ("/", "filter processes by name, pid or command line"),
    ("", "(Enter keeps the filter, Esc clears it)"),
    ("Esc", "clear the filter"),
    ("g", "one row per process / per process and device"),
    ("s", "sort: rank, host-class, device-local, pid"),
    (
        "v",
        "list every finding / fold many of one kind and severity",
    ),
    ("?", "this help (any key closes it)"),
    ("q Ctrl-C", "quit"),
];

/// Width of the overlay's text.
const WIDTH: u16 = 66;

/// A box centred on `screen`, as large as the text or the screen allows.
pub fn area(screen: Rect) -> Rect {
    let width = (WIDTH + 2).min(screen.width);
    let height = (KEYS.len() as u16 + 4).min(screen.height);
    Rect {
        x: screen.x + (screen.width - width) / 2,
        y: screen.y + (screen.height - height) / 2,
        width,
        height,
    }
}

/// The overlay.
pub fn widget() -> Paragraph<'static> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut lines: Vec<Line> = KEYS
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(format!(" {k:<10} "), bold),
                Span::raw(*what),
            ])
        })
        .collect();
    lines.push(Line::from(""));
    lines.push(Line::from(
        " * marks a process's home device; LOCAL = VRAM, HOST = GTT/system",
    ));
    Paragraph::new(lines).block(
        Block::default()
            .borders(Borders::ALL)
            .title(" keys (gpuledger top) ")
            .style(Style::default()),
    )
}
