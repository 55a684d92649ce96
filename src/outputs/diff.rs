//! `diff` as text: the bad-vs-good table the library computed, long cells written out in full
//! below it, then the warning or the verdict.

use super::safe_text::{display_safe, safe};
use super::text_table::{render, Align};
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

/// Widest table cell, in characters.
const MAX_CELL: usize = 48;

/// The diff as text: the table, long cells in full below it, then the warning or verdict.
pub fn render_diff(d: &Diff, a_name: &str, b_name: &str) -> String {
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
                full.push_str(&format!("{}, {run}: {text}\n", display_safe(&r.what)));
                let cut: String = text.chars().take(MAX_CELL - 1).collect();
                format!("{cut}…")
            };
            let (a, b) = (cell(&r.a, "A"), cell(&r.b, "B"));
            vec![safe(&r.what), a, b, safe(&change(&r.a, &r.b))]
        })
        .collect();
    let headers = [
        ("", Align::Left),
        ("A", Align::Right),
        ("B", Align::Right),
        ("B - A", Align::Right),
    ];
    let mut out = format!(
        "A = {}\nB = {}\n\n{}\n{full}",
        display_safe(a_name),
        display_safe(b_name),
        render("  ", &headers, &rows)
    );
    if !full.is_empty() {
        out.push('\n');
    }
    out.push_str(&super::calls_compare::render_call_diff(&d.calls));
    // The "different jobs" warning quotes both recorded commands: escaped like every cell.
    for line in d.warning.iter().chain(&d.verdict) {
        out.push_str(&display_safe(line));
        out.push('\n');
    }
    out
}
