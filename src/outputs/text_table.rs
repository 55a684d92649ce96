//! Aligned plain-text columns.

use super::safe_text::display_safe;
use super::wrap;
use crate::findings::Severity;
use anstyle::{AnsiColor, Style};
use std::borrow::Cow;

/// How text output is drawn, decided once by the binary: whether it is coloured (`--color`,
/// `NO_COLOR`, `CLICOLOR_FORCE`) and how wide it may be (`COLUMNS`, the terminal's columns, or
/// [`wrap::UNBOUNDED`] when stdout is a pipe or a file). Colour only wraps text that is already
/// padded, so columns line up either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paint {
    /// Emit ANSI colour sequences.
    pub color: bool,
    /// Columns the lines fit in where words and tables allow.
    pub width: usize,
}

impl Paint {
    /// No colour, 80 columns.
    pub const PLAIN: Paint = Paint {
        color: false,
        width: wrap::DEFAULT_WIDTH,
    };

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

/// Column alignment, and what a column does when the table is wider than the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Pad on the right.
    Left,
    /// Pad on the left (numbers).
    Right,
    /// Pad on the right; when the table is too wide its cells wrap onto more lines.
    Wrap,
    /// Pad on the right; when the table is too wide the column leaves it and each row's value is
    /// written under the row as `HEADER value`.
    Fold,
}

/// Renders rows under headers with two spaces between columns and the given indent, however
/// wide. Cells are passed through [`display_safe`]: they hold names read from the machine.
pub fn render(indent: &str, headers: &[(&str, Align)], rows: &[Vec<String>]) -> String {
    render_fit(indent, headers, rows, usize::MAX)
}

/// Widest the columns would be on one line each: the header or the widest cell.
fn natural_widths(headers: &[(&str, Align)], rows: &[Vec<Cow<str>>]) -> Vec<usize> {
    let mut widths: Vec<usize> = headers.iter().map(|(h, _)| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    widths
}

/// The line length of columns this wide.
fn total(indent: &str, widths: &[usize]) -> usize {
    indent.chars().count() + widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1)
}

/// Narrows [`Align::Wrap`] columns, widest first, until the table fits `width` or each is as
/// narrow as its longest word (and at least a few columns).
fn narrow(
    indent: &str,
    headers: &[(&str, Align)],
    widths: &mut [usize],
    floors: &[usize],
    width: usize,
) {
    while total(indent, widths) > width {
        let widest = (0..widths.len())
            .filter(|&i| headers[i].1 == Align::Wrap && widths[i] > floors[i])
            .max_by_key(|&i| widths[i]);
        match widest {
            Some(i) => widths[i] -= 1,
            None => return,
        }
    }
}

/// [`render`] fitted to `width` columns where it can be: when the table is wider,
/// [`Align::Fold`] columns move under their rows and [`Align::Wrap`] cells wrap.
pub fn render_fit(
    indent: &str,
    headers: &[(&str, Align)],
    rows: &[Vec<String>],
    width: usize,
) -> String {
    let rows: Vec<Vec<Cow<str>>> = rows
        .iter()
        .map(|r| r.iter().map(|c| display_safe(c)).collect())
        .collect();
    let natural = natural_widths(headers, &rows);
    let fold = total(indent, &natural) > width;
    let keep: Vec<usize> = (0..headers.len())
        .filter(|&i| !(fold && headers[i].1 == Align::Fold))
        .collect();
    let kept: Vec<(&str, Align)> = keep.iter().map(|&i| headers[i]).collect();
    let mut widths: Vec<usize> = keep.iter().map(|&i| natural[i]).collect();
    let floors: Vec<usize> = keep
        .iter()
        .map(|&i| {
            let words = rows
                .iter()
                .filter_map(|r| r.get(i))
                .flat_map(|c| c.split(' '));
            let longest = words.map(|w| w.chars().count()).max().unwrap_or(0);
            let header = headers[i]
                .0
                .split(' ')
                .map(|w| w.chars().count())
                .max()
                .unwrap_or(0);
            longest.max(header).min(MIN_WRAP)
        })
        .collect();
    narrow(indent, &kept, &mut widths, &floors, width);
    let mut out = String::new();
    let header_cells: Vec<Cow<str>> = kept.iter().map(|(h, _)| Cow::Borrowed(*h)).collect();
    push_row(&mut out, indent, &kept, &widths, &header_cells);
    for row in &rows {
        let cells: Vec<Cow<str>> = keep
            .iter()
            .map(|&i| row.get(i).cloned().unwrap_or_default())
            .collect();
        push_row(&mut out, indent, &kept, &widths, &cells);
        if fold {
            push_folded(&mut out, indent, headers, row, width);
        }
    }
    out
}

/// Narrowest a wrapped column gets unless its words are shorter.
const MIN_WRAP: usize = 12;

/// One row, its wrapped cells continued on the following lines.
fn push_row(
    out: &mut String,
    indent: &str,
    headers: &[(&str, Align)],
    widths: &[usize],
    cells: &[Cow<str>],
) {
    let wrapped: Vec<Vec<String>> = cells
        .iter()
        .zip(widths)
        .map(|(c, &w)| {
            if c.chars().count() <= w {
                vec![c.to_string()]
            } else {
                wrap::lines(c, w)
            }
        })
        .collect();
    let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
    for line in 0..height {
        let mut s = String::from(indent);
        for (i, cell) in wrapped.iter().enumerate() {
            let text = cell.get(line).map_or("", String::as_str);
            let pad = widths[i].saturating_sub(text.chars().count());
            if i > 0 {
                s.push_str("  ");
            }
            if headers[i].1 == Align::Right {
                s.push_str(&" ".repeat(pad));
                s.push_str(text);
            } else {
                s.push_str(text);
                s.push_str(&" ".repeat(pad));
            }
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
        out.push_str(&s);
    }
}

/// The folded columns of one row, under it: `HEADER value; HEADER value` on one line where it
/// fits, else one wrapped line each.
fn push_folded(
    out: &mut String,
    indent: &str,
    headers: &[(&str, Align)],
    row: &[Cow<str>],
    width: usize,
) {
    let parts: Vec<String> = headers
        .iter()
        .zip(row)
        .filter(|((_, a), v)| *a == Align::Fold && !v.is_empty() && v.as_ref() != "-")
        .map(|((h, _), v)| format!("{h} {v}"))
        .collect();
    if parts.is_empty() {
        return;
    }
    let first = format!("{indent}  ");
    let cols = first.chars().count();
    let joined = parts.join("; ");
    if cols + joined.chars().count() <= width {
        out.push_str(&first);
        out.push_str(&joined);
        out.push('\n');
        return;
    }
    for p in parts {
        out.push_str(&wrap::hanging(&first, cols, cols + 2, &p, width));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severities_are_coloured_only_when_asked() {
        assert_eq!(severity_label(Paint::PLAIN, Severity::Info), "INFO    ");
        let red = severity_label(
            Paint {
                color: true,
                ..Paint::PLAIN
            },
            Severity::Critical,
        );
        assert_eq!(red, "\u{1b}[1m\u{1b}[31mCRITICAL\u{1b}[0m");
        let yellow = severity_label(
            Paint {
                color: true,
                ..Paint::PLAIN
            },
            Severity::Warning,
        );
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
    fn a_table_too_wide_folds_its_fold_columns_under_each_row_and_wraps() {
        let headers = [
            ("ID", Align::Left),
            ("NAME", Align::Wrap),
            ("PATH", Align::Fold),
        ];
        let rows = vec![vec![
            "a".to_string(),
            "one two three four five six".to_string(),
            "/x/y".to_string(),
        ]];
        assert_eq!(
            render_fit("", &headers, &rows, 80),
            "ID  NAME                         PATH\na   one two three four five six  /x/y\n"
        );
        let narrow = render_fit("", &headers, &rows, 18);
        assert_eq!(
            narrow,
            "ID  NAME\na   one two three\n    four five six\n  PATH /x/y\n"
        );
        assert!(narrow.lines().all(|l| l.chars().count() <= 18), "{narrow}");
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
