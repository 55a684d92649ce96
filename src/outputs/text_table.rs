//! Aligned plain-text columns.

use super::safe_text::display_safe;
use crate::findings::Severity;
use anstyle::{AnsiColor, Style};
use std::borrow::Cow;

/// Whether text output is coloured (`--color`, `NO_COLOR`, `CLICOLOR_FORCE`, decided once by the
/// binary). Colour only wraps text that is already padded, so columns line up either way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Paint {
    /// Emit ANSI colour sequences.
    pub color: bool,
}

impl Paint {
    /// No colour.
    pub const PLAIN: Paint = Paint { color: false };

    /// `text` in the colour of `severity`: critical red, warning yellow, info dim blue.
    pub fn severity(self, severity: Severity, text: &str) -> String {
        let style = match severity {
            Severity::Critical => AnsiColor::Red.on_default().bold(),
            Severity::Warning => AnsiColor::Yellow.on_default().bold(),
            Severity::Info => AnsiColor::Blue.on_default().dimmed(),
        };
        self.styled(style, text)
    }

    /// `text` in bold (section headings).
    pub fn heading(self, text: &str) -> String {
        self.styled(Style::new().bold(), text)
    }

    fn styled(self, style: Style, text: &str) -> String {
        if self.color {
            format!("{style}{text}{style:#}")
        } else {
            text.to_string()
        }
    }
}

/// A severity as the text outputs print it: upper case, padded to 8 columns, then coloured.
pub fn severity_label(paint: Paint, severity: Severity) -> String {
    paint.severity(
        severity,
        &format!("{:<8}", severity.as_str().to_uppercase()),
    )
}

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Pad on the right.
    Left,
    /// Pad on the left (numbers).
    Right,
}

/// Renders rows under headers with two spaces between columns and the given indent. Cells are
/// passed through [`display_safe`]: they hold names read from the machine.
pub fn render(indent: &str, headers: &[(&str, Align)], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<Cow<str>>> = rows
        .iter()
        .map(|r| r.iter().map(|c| display_safe(c)).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|(h, _)| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::from(indent);
        for (i, cell) in cells.iter().enumerate() {
            let w = widths[i];
            let pad = w.saturating_sub(cell.chars().count());
            if i > 0 {
                s.push_str("  ");
            }
            match headers[i].1 {
                Align::Left => {
                    s.push_str(cell);
                    s.push_str(&" ".repeat(pad));
                }
                Align::Right => {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(cell);
                }
            }
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    let mut out = line(headers.iter().map(|(h, _)| *h).collect());
    for row in &rows {
        out.push_str(&line(row.iter().map(|c| c.as_ref()).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severities_are_coloured_only_when_asked() {
        assert_eq!(severity_label(Paint::PLAIN, Severity::Info), "INFO    ");
        let red = severity_label(Paint { color: true }, Severity::Critical);
        assert_eq!(red, "\u{1b}[1m\u{1b}[31mCRITICAL\u{1b}[0m");
        let yellow = severity_label(Paint { color: true }, Severity::Warning);
        assert!(yellow.contains("\u{1b}[33mWARNING "), "{yellow:?}");
    }

    #[test]
    fn aligns() {
        let out = render(
            " ",
            &[("A", Align::Left), ("NUM", Align::Right)],
            &[
                vec!["long".into(), "1".into()],
                vec!["x".into(), "1234".into()],
            ],
        );
        assert_eq!(out, " A      NUM\n long     1\n x     1234\n");
    }

    #[test]
    fn cells_cannot_break_the_table() {
        let out = render(
            "",
            &[("COMM", Align::Left), ("N", Align::Right)],
            &[vec!["\u{1b}[2Jx\ny".into(), "1".into()]],
        );
        assert_eq!(out, "COMM       N\n\\e[2Jx\\ny  1\n");
    }
}
