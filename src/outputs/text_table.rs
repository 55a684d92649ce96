//! Aligned plain-text columns.

use super::safe_text::display_safe;
use std::borrow::Cow;

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
