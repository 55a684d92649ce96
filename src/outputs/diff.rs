//! `diff` as text: the bad-vs-good table the library computed, long cells written out in full
//! below it, then the warning or the verdict.

use super::safe_text::{display_safe, safe};
use super::text_table::{render_fit, Align};
use super::wrap;
use crate::timeline::diff::{change, Diff, Value};
use serde::Serialize;

/// The schema name of `diff --json`.
pub const SCHEMA: &str = "gpuledger.diff/1";

/// `diff --json`: the diff under a `schema` field, as every JSON document gpuledger prints.
pub fn render_json(d: &Diff) -> String {
    #[derive(Serialize)]
    struct Doc<'a> {
        schema: &'static str,
        #[serde(flatten)]
        diff: &'a Diff,
    }
    let doc = Doc {
        schema: SCHEMA,
        diff: d,
    };
    serde_json::to_string_pretty(&doc).expect("plain data serialises") + "\n"
}

/// Widest table cell, in characters, however wide the terminal.
const MAX_CELL: usize = 48;

/// Narrowest a cut cell gets, in characters.
const MIN_CELL: usize = 11;

/// How wide the A and B cells may be for the row names and changes to fit `width` beside them.
fn cell_width(d: &Diff, width: usize) -> usize {
    let what = d.rows.iter().map(|r| safe(&r.what).chars().count()).max();
    let changes = d
        .rows
        .iter()
        .map(|r| safe(&change(&r.a, &r.b)).chars().count());
    let change_w = changes.max().unwrap_or(0).max("B - A".len());
    let fixed = 2 + what.unwrap_or(0) + change_w + 6;
    (width.saturating_sub(fixed) / 2).clamp(MIN_CELL, MAX_CELL)
}

/// The diff as text in 80 columns: the table, long cells in full below it, then the warning or
/// verdict.
pub fn render_diff(d: &Diff, a_name: &str, b_name: &str) -> String {
    render_diff_fit(d, a_name, b_name, wrap::DEFAULT_WIDTH)
}

/// [`render_diff`] fitted to `width` columns: cells too long for it are cut in the table and
/// written out in full below it; row names and changes wrap when that is not enough.
pub fn render_diff_fit(d: &Diff, a_name: &str, b_name: &str, width: usize) -> String {
    let max_cell = cell_width(d, width);
    let mut full = String::new();
    let rows: Vec<Vec<String>> = d
        .rows
        .iter()
        .map(|r| {
            let mut cell = |v: &Value, run: &str| {
                let text = display_safe(&v.show()).into_owned();
                if text.chars().count() <= max_cell {
                    return text;
                }
                let line = format!("{}, {run}: {text}", display_safe(&r.what));
                full.push_str(&wrap::paragraph("", &line, width));
                let cut: String = text.chars().take(max_cell - 1).collect();
                format!("{cut}…")
            };
            let (a, b) = (cell(&r.a, "A"), cell(&r.b, "B"));
            vec![safe(&r.what), a, b, safe(&change(&r.a, &r.b))]
        })
        .collect();
    let headers = [
        ("", Align::Wrap),
        ("A", Align::Right),
        ("B", Align::Right),
        ("B - A", Align::Wrap),
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
    out.push_str(&super::calls_compare::render_call_diff(&d.calls));
    // The "different jobs" warning quotes both recorded commands: escaped like every cell.
    for line in d.warning.iter().chain(&d.verdict) {
        out.push_str(&wrap::paragraph("", &display_safe(line), width));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::Registrations;

    #[test]
    fn runs_of_different_jobs_show_the_warning_and_no_verdict() {
        let w = "warning: A and B ran different jobs (2 ranks vs 4): compare the table, there is \
                 no verdict";
        let d = Diff {
            rows: Vec::new(),
            registrations: [Registrations::None, Registrations::None],
            peer_mirrors: [Vec::new(), Vec::new()],
            warning: Some(w.into()),
            verdict: None,
            throughput: Vec::new(),
            calls: Vec::new(),
        };
        let text = render_diff(&d, "a", "b");
        let flowed = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flowed.contains(w) && !text.contains("bookkeeping"),
            "{text}"
        );
    }
}
