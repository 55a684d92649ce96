//! `diff` as text: the bad-vs-good table the library computed, long cells written out in full
//! below it, then the warning or the verdict.

use super::safe_text::{display_safe, safe};
use super::text_table::{render_fit, Align};
use super::wrap;
use crate::timeline::diff::{change, Diff, Value};

/// Widest table cell, in characters.
const MAX_CELL: usize = 48;

/// The diff as text in 80 columns: the table, long cells in full below it, then the warning or
/// verdict.
pub fn render_diff(d: &Diff, a_name: &str, b_name: &str) -> String {
    render_diff_fit(d, a_name, b_name, wrap::DEFAULT_WIDTH)
}

/// [`render_diff`] fitted to `width` columns: the row names and long cells wrap.
pub fn render_diff_fit(d: &Diff, a_name: &str, b_name: &str, width: usize) -> String {
    // Long cells (a runtime error line) are cut in the table and written out in full below it.
    let mut full = String::new();
    let rows: Vec<Vec<String>> = d
        .rows
        .iter()
        .map(|r| {
            let mut cell = |v: &Value, run: &str| {
                let text = display_safe(&v.show()).into_owned();
                if text.chars().count() <= MAX_CELL {
                    return text;
                }
                let line = format!("{}, {run}: {text}", display_safe(&r.what));
                full.push_str(&wrap::paragraph("", &line, width));
                let cut: String = text.chars().take(MAX_CELL - 1).collect();
                format!("{cut}…")
            };
            let (a, b) = (cell(&r.a, "A"), cell(&r.b, "B"));
            vec![safe(&r.what), a, b, safe(&change(&r.a, &r.b))]
        })
        .collect();
    let headers = [
        ("", Align::Left),
        ("A", Align::Wrap),
        ("B", Align::Wrap),
        ("B - A", Align::Right),
    ];
    let mut out = wrap::hanging("A = ", 4, 4, &display_safe(a_name), width);
    out.push_str(&wrap::hanging("B = ", 4, 4, &display_safe(b_name), width));
    out.push('\n');
    out.push_str(&render_fit("  ", &headers, &rows, width));
    out.push('\n');
    out.push_str(&full);
    if !full.is_empty() {
        out.push('\n');
    }
    // The "different jobs" warning quotes both recorded commands: escaped like every cell.
    for line in d.warning.iter().chain(&d.verdict) {
        out.push_str(&wrap::paragraph("", &display_safe(line), width));
    }
    out
}
